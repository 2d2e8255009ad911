"""The run record's trace: which thread read or wrote which element, in which barrier phase,
from which source line. Recorded only when asked (small launches), since it grows with every
access. Accesses outside their memory do not happen; they are kept apart (``out_of_bounds``),
with the index each thread asked for, so that diagrams can draw where they went: the in-bounds
events never hold a stand-in for them. Every event carries the step-through record's number of
the statement that made it (when a record is kept), so the memory at any step can be rebuilt."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..counting.access_kind import AccessKind
from ..executor.codegen.masks import Mask
from ..executor.memory import Memory
from ..executor.runtime import Ctx
from ..lang.errors import Pos
from ..lang.types import AddressSpace
from .provenance import recall, remember, sources_of, track


@dataclass
class AccessEvent:
    """One statement's accesses to one buffer, by all the threads that executed it (vectorised)."""

    kind: AccessKind
    buffer: str
    space: AddressSpace
    lanes: np.ndarray  # lane ids of the threads that accessed
    index: np.ndarray  # element index within the buffer (threadgroup: within the threadgroup's copy)
    group: np.ndarray  # threadgroup (linear) of each access
    phase: np.ndarray  # barrier phase of each access
    line: int
    file: str
    seq: int  # order of the statement in lock-step execution
    # For writes: per access, the memory elements (buffer, threadgroup or -1, index) the value came from.
    sources: list | None = None
    values: np.ndarray | None = None
    #: The step-through record's number of the statement that made it (-1: no record kept).
    step: int = -1


@dataclass(frozen=True)
class ElementAccess:
    """One element access by one thread: an ``AccessEvent`` flattened, as diagrams and the
    explorer read the trace."""

    kind: AccessKind
    buffer: str
    space: AddressSpace
    lane: int
    group: int
    index: int  # within the buffer (threadgroup memory: within the threadgroup's copy)
    phase: int
    line: int
    seq: int  # order of the statement in lock-step execution
    sources: frozenset  # for writes: the elements the value came from
    value: object  # for writes: the value written
    step: int = -1  # the step-through record's number of the statement (-1: no record kept)
    in_bounds: bool = True  # False: outside its memory, so it did not happen (index as the thread computed it)


@dataclass
class BarrierEvent:
    groups: np.ndarray
    line: int
    file: str
    seq: int


class Recorder:
    """Records every access of a launch. With a ``limit`` (the automatic trace of small launches)
    it stops once that many element accesses are recorded and says so in ``truncated``: a
    few threads looping long would otherwise record without end."""

    def __init__(self, provenance: bool = True, limit: int | None = None) -> None:
        self.events: list = []
        #: Accesses outside their memory (the executor skips them): one event per statement.
        self.strays: list[AccessEvent] = []
        self.seq = 0
        self.provenance = provenance
        self.limit = limit
        self.recorded = 0  # element accesses recorded
        self.truncated = False
        # Shared by the events of a loop instead of copied into each (read-only): all lanes each
        # repeated k times, by k; the last lanes' threadgroups; the last phases, until a barrier.
        self._all_repeated: dict[int, np.ndarray] = {}
        self._last_groups: tuple | None = None
        self._last_phases: tuple | None = None

    def track(self, ctx: Ctx, mem: Memory, val: Any, flat: Any, mask: Mask) -> Any:
        """Attach provenance atoms to values just loaded from ``mem``."""
        n = ctx.n
        first = np.broadcast_to(np.asarray(flat), (n,))
        local = first - (mem.lane_base if mem.lane_base is not None else 0)
        groups = ctx.lanes.group if mem.space == AddressSpace.THREADGROUP else None
        active = np.ones(n, dtype=bool) if mask is None else mask
        atoms = [(mem.name, int(groups[i]) if groups is not None else -1, int(local[i])) if active[i] else None
                 for i in range(n)]
        return track(val, atoms)

    def remember(self, ctx: Ctx, mem: Memory, native: Any, val: Any, mask: Mask) -> None:
        """A store into thread-private memory: the elements written remember where the value came
        from (``native``: element indices in the memory's declared elements)."""
        remember(mem, native, val, ctx.all_lanes if mask is None else np.flatnonzero(mask), ctx.n)

    def recall(self, ctx: Ctx, mem: Memory, native: Any, val: Any, mask: Mask) -> Any:
        """A load from thread-private memory: the value, carrying what its elements remember."""
        return recall(mem, native, val, ctx.all_lanes if mask is None else np.flatnonzero(mask), ctx.n)

    def access(self, kind: AccessKind, mem: Memory, mask: Mask, flat: Any, pos: Pos, ctx: Ctx, val: Any) -> None:
        n = ctx.n
        lanes = ctx.all_lanes if mask is None else np.flatnonzero(mask)
        flat = np.asarray(flat)
        if flat.ndim == 0 or flat.shape[0] != n:
            flat = np.broadcast_to(flat, (n,) + flat.shape)
        idx = flat[lanes]
        if mem.lane_base is not None:
            idx = idx - mem.lane_base[lanes][(...,) + (None,) * (idx.ndim - 1)]
        sources = values = None
        if kind != "read" and val is not None:
            sources = sources_of(val, lanes, n) if self.provenance else None
            v = np.asarray(val)
            if v.ndim == 0 or v.shape[0] != n:
                v = np.broadcast_to(v, (n,) + v.shape)
            values = v[lanes].reshape(-1)
        if self.limit is not None and self.recorded + idx.size > self.limit:
            # Stop here: detach from the launch, so nothing more is recorded or tracked.
            self.truncated = True
            ctx.recorder = None
            return
        self.recorded += idx.size
        width = idx.shape[1] if idx.ndim > 1 else 1
        if width > 1:  # vector accesses: one entry per component
            if values is not None and values.size == lanes.size:
                # One scalar a lane covering several elements of byte-sized memory (a float stored
                # into a struct's bytes): each element the write covers shows the value written.
                values = np.repeat(values, width)
            lanes = self._repeated(ctx, width) if lanes is ctx.all_lanes else np.repeat(lanes, width)
            idx = idx.reshape(-1)
            if sources is not None:
                sources = [s for s in sources for _ in range(width)]
        group, phase = self._groups_and_phases(ctx, lanes)
        self.events.append(AccessEvent(kind, mem.name, mem.space, lanes, idx.astype(np.int64), group, phase,
                                       pos.line, pos.file, self.seq, sources, values, _step(ctx)))
        self.seq += 1

    def _repeated(self, ctx: Ctx, width: int) -> np.ndarray:
        lanes = self._all_repeated.get(width)
        if lanes is None:
            lanes = self._all_repeated[width] = np.repeat(ctx.all_lanes, width)
            lanes.flags.writeable = False
        return lanes

    def _groups_and_phases(self, ctx: Ctx, lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The threadgroup of each of ``lanes`` and its barrier phase now, shared with the events
        before while the lanes are the same array and no barrier ran (a barrier changes
        ``ctx.phase`` in place, and counts itself in ``ctx.barrier_count``)."""
        last = self._last_groups
        if last is not None and last[0] is lanes:
            group = last[1]
        else:
            group = ctx.lanes.group[lanes]
            group.flags.writeable = False
            self._last_groups = (lanes, group)
        last = self._last_phases
        if last is not None and last[0] is group and last[1] == ctx.barrier_count:
            return group, last[2]
        phase = ctx.phase[group]
        phase.flags.writeable = False
        self._last_phases = (group, ctx.barrier_count, phase)
        return group, phase

    def out_of_bounds(self, kind: AccessKind, mem: Memory, lanes_mask: Any, off: Any, pos: Pos, ctx: Ctx) -> None:
        """Accesses of the lanes in ``lanes_mask`` at offsets ``off`` (within the lane's region of
        ``mem``) that fall outside it."""
        lanes = np.flatnonzero(lanes_mask)
        off = np.asarray(off, dtype=np.int64)
        idx = off[lanes] if off.ndim else np.full(lanes.size, int(off), dtype=np.int64)
        group = ctx.lanes.group[lanes]
        self.strays.append(AccessEvent(kind, mem.name, mem.space, lanes, idx, group, ctx.phase[group].copy(),
                                       pos.line, pos.file, self.seq, step=_step(ctx)))
        self.seq += 1

    def out_of_bounds_accesses(self, *, group: int | None = None, lane: int | None = None,
                               phase: int | None = None) -> list[ElementAccess]:
        """Every access outside its memory, thread by thread (``in_bounds`` False), optionally only
        one threadgroup's, one thread's or one barrier phase's."""
        return flatten_events(self.strays, group, lane, phase, in_bounds=False)

    def barrier(self, ctx: Ctx, mask: Mask, pos: Pos) -> None:
        groups = np.arange(ctx.lanes.n_groups) if mask is None else np.unique(ctx.lanes.group[mask])
        self.events.append(BarrierEvent(groups, pos.line, pos.file, self.seq))
        self.seq += 1

    def accesses(self, kind: str | None = None, buffer: str | None = None) -> list[AccessEvent]:
        return [e for e in self.events if isinstance(e, AccessEvent)
                and (kind is None or e.kind == kind) and (buffer is None or e.buffer == buffer)]

    def element_accesses(self, *, group: int | None = None, lane: int | None = None, phase: int | None = None,
                         thread_private: bool = False, attempted: bool = False) -> list[ElementAccess]:
        """Every element access in execution order, optionally only one threadgroup's, one thread's or
        one barrier phase's. Accesses to thread-private memory are left out unless asked for. With
        ``attempted``, the accesses that fell outside their memory are listed too, in their place
        in execution order, at the index the thread computed (``in_bounds`` False)."""
        events = [e for e in self.accesses() if thread_private or e.space != AddressSpace.THREAD]
        out = flatten_events(events, group, lane, phase, in_bounds=True)
        if attempted and self.strays:
            out += self.out_of_bounds_accesses(group=group, lane=lane, phase=phase)
            out.sort(key=lambda a: a.seq)  # stable: one statement's accesses keep their order
        return out


def _step(ctx: Ctx) -> int:
    """The step-through record's number of the statement running now (-1: no record kept)."""
    current = ctx.current_step()
    return -1 if current is None else current


def flatten_events(events: list[AccessEvent], group: int | None, lane: int | None, phase: int | None,
                   in_bounds: bool) -> list[ElementAccess]:
    """Events as element accesses, thread by thread, optionally filtered. Each event's selected
    fields are converted to Python numbers in one go (not element by element): a traced loop
    makes millions of them."""
    out: list[ElementAccess] = []
    for e in events:
        sel = None
        if lane is not None:  # the common case of the explorer: one thread among many
            sel = np.flatnonzero(e.lanes == lane)
            if sel.size == 0:
                continue
        if group is not None:
            groups = np.asarray(e.group)
            sel = np.flatnonzero(groups == group) if sel is None else sel[groups[sel] == group]
        if phase is not None:
            sel = np.flatnonzero(e.phase == phase) if sel is None else sel[e.phase[sel] == phase]
        if sel is None:
            sel = np.arange(e.lanes.size)
        if sel.size == 0:
            continue
        picked = sel.tolist()
        sources = [e.sources[k] for k in picked] if e.sources is not None else [frozenset()] * len(picked)
        values = list(e.values[sel]) if e.values is not None else [None] * len(picked)
        kind, buffer, space, line, seq, step = e.kind, e.buffer, e.space, e.line, e.seq, e.step
        out.extend(ElementAccess(kind, buffer, space, ln, g, i, ph, line, seq, src, v, step, in_bounds)
                   for ln, g, i, ph, src, v in zip(e.lanes[sel].tolist(), np.asarray(e.group)[sel].tolist(),
                                                   e.index[sel].tolist(), e.phase[sel].tolist(), sources, values,
                                                   strict=True))
    return out
