"""The state of one kernel launch while it runs: the threads (lanes), their execution masks,
frames and loops, memory accesses with counting and bounds checks, and findings.

All threads of the grid run in lock-step, one statement at a time; a *mask* says which lanes
execute. ``None`` means every lane. Because threadgroups never communicate except through
device memory, running them together is one of the schedules a GPU may choose.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..counting.access_kind import AccessKind
from ..counting.counters import Counter
from ..findings.advice import (
    Audience,
    HostApi,
    barrier_divergence_fix,
    bounds_fix,
    lane_values,
    step_budget_advice,
)
from ..findings.finding import Finding, FindingKey, FindingKind, Severity
from ..findings.modes import SanitizeMode, StopKernel, StopReason
from ..front import ast
from ..lang.errors import KernelRuntimeError, Pos
from ..lang.types import AddressSpace, MemFlags, ScalarType
from ..thread_grid import Lanes
from .memory import Memory, Ptr, SplitPtr, View, rescale, view_of

#: A run stops once it has this many findings: enough to say what is wrong.
MAX_FINDINGS = 200


class Frame:
    """A function activation: which lanes have returned, and the value they returned."""

    __slots__ = ("ret", "ret_val")

    def __init__(self) -> None:
        self.ret: np.ndarray | None = None  # the lanes that have returned (None: none)
        self.ret_val: Any = None  # their value (a location, for a function returning a reference)


class LoopState:
    __slots__ = ("active", "brk", "cont", "entered", "is_switch", "outer", "pos")

    def __init__(self, pos: Pos | None = None, outer: LoopState | None = None, active: Any = None) -> None:
        self.brk: np.ndarray | None = None  # lanes that left by 'break' (None: none yet)
        self.cont: np.ndarray | None = None  # lanes that 'continue'd this iteration
        self.is_switch = False
        self.outer = outer
        self.pos = pos  # where the loop (or switch) starts, for step-budget findings
        self.active = active  # lanes still in the loop (None: all), for step-budget findings
        self.entered = active  # lanes that reached the loop (None: all), for barrier-divergence findings


def _bits_dtype(dt: Any) -> Any:
    return {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dt).itemsize]


class Ctx:
    """Mutable state of one launch."""

    def __init__(self, lanes: Lanes, sanitize: SanitizeMode, max_steps: int, recorder: Any = None,
                 audience: Audience = Audience.CALLER, host: HostApi = HostApi.MLX_BODY) -> None:
        self.lanes = lanes
        self.audience = audience
        self.host = host
        #: Explanations of out-of-bounds indices, by the position of the access (see findings/advice.py).
        self.index_notes: dict[Pos, str] = {}
        self.n = lanes.n
        self.slots: list = []
        self.frame = Frame()
        self.loop: LoopState | None = None
        self.counts = {counter: np.zeros(self.n, dtype=np.int64) for counter in Counter}
        self.sanitize = sanitize
        self.max_steps = max_steps
        self.steps = 0
        self.findings: list[Finding] = []
        self.recorder = recorder
        self.phase = np.zeros(lanes.n_groups, dtype=np.int64)  # barriers passed, per threadgroup
        # Memory phases per threadgroup: barriers that ordered threadgroup / device memory.
        self.tg_phase = np.zeros(lanes.n_groups, dtype=np.int64)
        self.dev_phase = np.zeros(lanes.n_groups, dtype=np.int64)
        # Per SIMD-group, once a simdgroup_barrier ordered that memory: {space: (n_simds,) phases}.
        self.simd_phase: dict[AddressSpace, np.ndarray] = {}
        # The last barrier that left a memory space unordered (for the sanitizer's advice).
        self.unordered_by: dict[AddressSpace, Pos] = {}
        self.memories: dict[str, Memory] = {}
        self.call_depth = 0
        self.attrs: dict[str, object] = {}
        self.buffers: dict[str, Ptr] = {}
        self.scalars: dict[str, object] = {}
        # observe.sanitizer.Sanitizer when findings are checked (a layer above: typed Any, as its hooks
        # are called only for memories it watches, which mypy cannot tell).
        self.sanitizer: Any = None
        self.stepper: Any = None  # observe.stepper.Stepper when a step-through record is asked for
        self.cost: Any = None  # observe.cost.CostRecorder (a layer above) when a cost profile is asked for
        self.local_init: dict = {}  # (id(frame slots), slot) -> lanes whose variable holds a value
        self.root_frame = self.frame
        self._reported: set[FindingKey] = set()  # what report() has recorded, once each
        self.barrier_count = 0  # barriers executed so far (any threadgroup)
        self.sync_epoch = 0  # threadgroup-ordering barriers every threadgroup took
        self.lane_phase: np.ndarray = np.zeros(self.n, dtype=np.int64)  # threadgroup-memory phase of each lane's group
        self.all_lanes = np.arange(self.n)
        self.barrier_hooks: list = []
        #: The kernel's local variables (front.symbols.Var), for findings that quote a thread's values.
        self.variables: list = []
        #: Each memory's address, once a pointer into it is converted to a number.
        self.addresses: dict[int, int] = {}
        #: The kernel's own name for each thread attribute it takes (a whole shader names them:
        #: 'uint tpt [[threads_per_threadgroup]]'); a kernel body uses the attributes' names.
        self.attribute_names: dict[str, str] = {}
        #: The checked kernel body, for hints that depend on how the code computes something.
        self.body: ast.Block | None = None
        #: What explains a wrong output, should there be one (``RunResult.output_hints``), by place.
        self.output_hints: dict[Pos, str] = {}

    def attribute_name(self, attribute: str) -> str | None:
        """What the kernel calls a thread attribute, or None when it does not take it."""
        if attribute in self.attribute_names:
            return self.attribute_names[attribute]
        return attribute if attribute in self.attrs else None

    def address_of(self, p: Ptr, unit: int, m: np.ndarray | None, pos: Pos) -> np.ndarray:
        """The number a pointer converts to (``reinterpret_cast<ulong>(p)``): each memory gets an
        address of its own, 4 GiB apart and so aligned as Metal aligns buffers, in the order the
        run first converts a pointer into it; a thread's place in per-thread or per-threadgroup
        memory and the pointer's offset are added. A null pointer is 0."""
        if isinstance(p, SplitPtr):
            p = p.for_threads(m, pos)
        if p.mem is None:
            return np.asarray(p.off, dtype=np.int64).astype(np.uint64) * np.uint64(unit)
        base = self.addresses.setdefault(id(p.mem), (len(self.addresses) + 1) << 32)
        addr = base + np.asarray(p.off, dtype=np.int64) * unit
        if p.mem.lane_region is not None:
            addr = addr + p.mem.lane_region.astype(np.int64) * p.mem.region_bytes
        return addr.astype(np.uint64)

    # ----------------------------------------------------------------- masks
    def live(self, mask: np.ndarray | None) -> Any:
        """Drop lanes that returned, broke or continued."""
        dead = self.frame.ret
        loop = self.loop
        if loop is not None:
            for extra in (loop.brk, loop.cont):
                if extra is not None:
                    dead = extra if dead is None else (dead | extra)
        if dead is None:
            return mask
        if mask is None:
            return ~dead
        return mask & ~dead

    def full(self) -> Any:
        return np.ones(self.n, dtype=bool)

    def step(self, pos: Pos, cost: int = 1) -> None:
        """Count one step of lock-step work: a statement, a call or a loop iteration.

        Counting every statement and call (not only loop iterations) bounds all work a kernel can
        do, including loop-free blow-ups such as a tree of calls or a chain of templates. A step
        with a long expression costs more than one (``cost``), so no step is unboundedly large.
        """
        self.steps += cost
        if self.steps > self.max_steps:
            self.out_of_steps(pos)

    def out_of_steps(self, pos: Pos) -> None:
        # Point at the innermost loop being run, where there is one: that is what to look at.
        st = self.loop
        while st is not None and (st.is_switch or st.pos is None):
            st = st.outer
        where = st.pos if st is not None and st.pos is not None else pos  # (the loop above left no None)
        counted = ("statements, calls and loop iterations, counted once for all threads in lock-step; a long "
                   "expression counts as several")
        threads = []
        if st is None:
            message = (f"the kernel ran more than {self.max_steps} steps ({counted}); is there runaway recursion? "
                       f"({step_budget_advice(self.audience)})")
        else:
            # Name one thread still looping, and what its variables last held: what to look at.
            looping = np.flatnonzero(st.active) if st.active is not None else self.all_lanes
            lane = int(looping[0]) if looping.size else 0
            threads = [self.lanes.describe(lane)]
            values = lane_values(self.variables, self.slots, lane, self.n)
            others = looping.size - 1
            message = (f"{self.lanes.label(lane)}" + (f" (and {others} other thread{'s' if others != 1 else ''})"
                                                    if others > 0 else "")
                       + f" is still in the loop at line {where.line} after {self.max_steps} steps ({counted})"
                       + (f"; its variables last held {values}" if values else "")
                       + f": is the loop endless? ({step_budget_advice(self.audience)})")
        # Reported in every sanitize mode: the run did not finish, whatever else is looked for.
        self.findings.append(Finding(FindingKind.STEP_BUDGET, message, where, threads, step=self.current_step()))
        raise StopKernel(StopReason.STEP_BUDGET)

    def current_step(self) -> int | None:
        """The index, in the step-through record, of the statement running now (None without a
        record): what puts a finding or an access on its exact line and loop iteration."""
        return None if self.stepper is None else self.stepper.current

    # -------------------------------------------------------------- findings
    def report(self, kind: FindingKind, pos: Pos | None, lanes_mask: Any, message: str, buffer: str | None = None,
               index: int | None = None, first_lane: int | None = None, severity: Severity = Severity.ERROR,
               **details: Any) -> None:
        """Record a finding (once per ``FindingKey``: kind, place, buffer and severity), naming up to 8
        of its threads."""
        if self.sanitize == SanitizeMode.OFF:
            return
        key = FindingKey(kind, pos, buffer, severity)
        if key in self._reported:
            return
        self._reported.add(key)
        threads = []
        phase = None
        if lanes_mask is not None:
            ids = list(np.flatnonzero(lanes_mask)[:8])
            if first_lane is not None:
                ids = [first_lane] + [i for i in ids if i != first_lane][:7]
            threads = [self.lanes.describe(int(i)) for i in ids]
            phase = int(self.lane_phase[ids[0]]) if ids else None
        if kind == FindingKind.OUT_OF_BOUNDS and pos in self.index_notes:
            message = f"{message}: {self.index_notes[pos]}"
        self.findings.append(Finding(kind, message, pos, threads, buffer, index, phase=phase, severity=severity,
                                     step=self.current_step(), **details))
        if len(self.findings) > MAX_FINDINGS:
            raise StopKernel(StopReason.TOO_MANY_FINDINGS)

    def is_reported(self, kind: FindingKind, pos: Pos | None, buffer: str | None,
                    severity: Severity = Severity.ERROR) -> bool:
        """Whether ``report`` already recorded this finding: a reporter whose message is costly to
        build (the sanitizer's) asks first, since a second report of it would be dropped."""
        return FindingKey(kind, pos, buffer, severity) in self._reported

    def report_first(self, kind: FindingKind, pos: Pos | None, lane: int, lanes_mask: Any, message: str, **kw: Any) -> None:
        """Report a finding whose primary thread is ``lane``."""
        self.report(kind, pos, lanes_mask, message, first_lane=int(lane), **kw)

    # ---------------------------------------------------------------- memory
    def count(self, which: Counter, mask: np.ndarray | None, amount: int = 1) -> None:
        arr = self.counts[which]
        if mask is None:
            arr += amount
        elif amount == 1:
            arr += mask
        else:
            arr += mask * amount

    def _check_bounds(self, mem: Memory, off: Any, mask: np.ndarray | None, view: View, count: int, pos: Pos, kind: AccessKind) -> Any:
        """Return (offsets safe to index with, lanes that are out of bounds or None). Offsets
        and ``count`` (the region's length) are in units of the view's scalar."""
        width = view.width
        limit = count - width
        bad = (off < 0) | (off > limit)
        if not np.any(bad):
            return off, None
        active_bad: Any = bad if mask is None else (bad & mask) if np.ndim(bad) else (mask if bad else None)
        if np.ndim(active_bad) == 0:
            active_bad = self.full() if (active_bad and mask is None) else None
        if active_bad is not None and np.any(active_bad):
            lane = int(np.flatnonzero(active_bad)[0])
            idx = int(off[lane] if np.ndim(off) else off)
            if self.recorder is not None:  # the access does not happen, but diagrams show where it went
                native = off if view.unit == mem.unit else (np.asarray(off, dtype=np.int64) * view.unit) // mem.unit
                self.recorder.out_of_bounds(kind, mem, active_bad, native, pos, self)
            copy = " (its threadgroup's copy)" if mem.space == AddressSpace.THREADGROUP else ""
            if view.dtype == mem.data.dtype:
                through = ""
                elements = f"the {count // max(width, 1) if width > 1 else count} elements of '{mem.name}'"
            else:  # a reinterpreting view: the index counts its elements
                through = f" through a '{view}' view"
                elements = f"the {count} '{view}' elements ({mem.nbytes} bytes) of '{mem.name}'"
            # An index whose arithmetic is explained (advice.WrapAroundExplainer) gets that explanation
            # instead, added by report().
            fix = "" if pos in self.index_notes else f": {bounds_fix(mem.name)}"
            self.report(FindingKind.OUT_OF_BOUNDS, pos, active_bad,
                        f"{self.lanes.label(lane)} {kind.verb} {mem.name}[{idx}]{through}, outside {elements}{copy}{fix}",
                        buffer=mem.name, index=idx)
        else:
            active_bad = None
        safe = np.where(bad, 0, off) if np.ndim(off) else (0 if bad else off)
        return safe, active_bad

    def load(self, mem: Memory, off: Any, mask: np.ndarray | None, view: View, pos: Pos) -> Any:
        """Read one value per active lane through ``view`` (a scalar, a vector's components, a
        matrix's columns or a struct's bytes, stored consecutively from ``off``)."""
        data, base, count = mem.typed(view.dtype)
        width = view.width
        if count < width:
            self._check_bounds(mem, off, mask, view, count, pos, AccessKind.READ)
            return view.decode(np.zeros((self.n, width) if width > 1 else self.n, dtype=data.dtype))
        safe, bad = self._check_bounds(mem, off, mask, view, count, pos, AccessKind.READ)
        # The lanes whose read happens: an out-of-bounds lane reads nothing (its index stands in
        # as 0 only to keep the gather vectorised), so neither the cost model, the sanitizer nor
        # the trace may see it at that stand-in; the trace keeps it apart, at the index it asked for.
        done = mask if bad is None else (~bad if mask is None else mask & ~bad)
        first = flat = safe if base is None else base + safe
        if self.cost is not None:
            self.cost.access(AccessKind.READ, mem, first, done, width, view.unit, base, pos)
        if width > 1:
            flat = np.asarray(flat)[..., None] + np.arange(width)
        val = data[flat]
        if bad is not None:
            val = np.where(bad if width == 1 else bad[:, None], np.zeros_like(val), val)
        if not view.identity:
            val = view.decode(val)
        if mem.counted is not None:  # counts say what each thread attempted, out of bounds included
            self.count(mem.counted.reads, mask, view.count)
        if mem.shadow is not None:
            self.sanitizer.on_read(self, mem, flat, view, done, pos)
        if self.recorder is not None:
            native = rescale(flat, view.unit, mem.unit, self.n)
            self.recorder.access(AccessKind.READ, mem, done, native, pos, self, None)
            if self.recorder is not None and self.recorder.provenance:
                if mem.counted is not None:
                    if view.unit != mem.unit:
                        first = (np.asarray(first) * view.unit) // mem.unit
                    val = self.recorder.track(self, mem, val, first, done)
                elif mem.space == AddressSpace.THREAD:  # a value kept in a thread's own array
                    val = self.recorder.recall(self, mem, native, val, done)
        return val

    def store(self, mem: Memory, off: Any, val: Any, mask: np.ndarray | None, view: View, pos: Pos) -> None:
        """Write one value per active lane through ``view`` (see ``load``)."""
        data, base, count = mem.typed(view.dtype)
        width = view.width
        safe, bad = self._check_bounds(mem, off, mask, view, count, pos, AccessKind.WRITE)
        attempted = mask  # the counts include the writes that fell outside the buffer
        if bad is not None:
            mask = ~bad if mask is None else (mask & ~bad)
        flat = safe if base is None else base + safe
        if self.cost is not None:
            self.cost.access(AccessKind.WRITE, mem, flat, mask, width, view.unit, base, pos)
        if width > 1:
            flat = np.asarray(flat)[..., None] + np.arange(width)
        raw = val if view.identity else view.encode(val)
        if mem.shadow is not None:
            # Before the write: a race between two writes of the same value is told apart by the bits.
            self.sanitizer.on_write(self, mem, flat, view, mask, pos, raw)
        if mask is None:
            if np.ndim(flat) == (1 if width > 1 else 0) and np.ndim(raw) > (1 if width > 1 else 0):
                # Every lane writes one element: the last lane wins (a race the sanitizer reports).
                data[flat] = raw[-1]
            else:
                data[flat] = raw
        else:
            if np.ndim(flat) == (1 if width > 1 else 0):
                flat = np.broadcast_to(flat, (self.n,) + np.shape(flat))
            if np.ndim(raw) <= (1 if width > 1 else 0):
                data[flat[mask]] = raw
            else:
                data[flat[mask]] = raw[mask]
        if mem.counted is not None:
            self.count(mem.counted.writes, attempted, view.count)
        if self.recorder is not None:
            native = rescale(flat, view.unit, mem.unit, self.n)
            self.recorder.access(AccessKind.WRITE, mem, mask, native, pos, self, val)
            if self.recorder is not None and self.recorder.provenance and mem.space == AddressSpace.THREAD:
                self.recorder.remember(self, mem, native, val, mask)

    # ------------------------------------------------------------- barriers
    def barrier(self, mask: np.ndarray | None, pos: Pos, flags: MemFlags) -> None:
        """threadgroup_barrier(flags): in lock-step every live thread is already here; what remains
        is to check that all of them are (barrier divergence) and to open a new phase of the
        memory the flags order (mem_none synchronises execution only)."""
        lanes = self.lanes
        if mask is None:
            groups: slice | np.ndarray = slice(None)
        else:
            exited = self.root_frame.ret
            waiting_for = ~exited if exited is not None else np.ones(self.n, dtype=bool)
            missing = waiting_for & ~mask
            present_groups = np.zeros(lanes.n_groups, dtype=bool)
            present_groups[lanes.group[mask]] = True
            missing &= present_groups[lanes.group]
            if missing.any():
                lane = int(np.flatnonzero(missing)[0])
                g = lanes.group[lane]
                here = np.flatnonzero(mask & (lanes.group == g))
                self.report(FindingKind.BARRIER_DIVERGENCE, pos, missing,
                            f"{lanes.group_label(int(g))} reaches this barrier with only some of its "
                            f"threads: {lanes.label(int(here[0]))} waits here but {lanes.label(lane)} never arrives "
                            f"({barrier_divergence_fix(self._loop_left_by(missing))})")
            groups = np.unique(lanes.group[mask])
        self.phase[groups] += 1
        self.barrier_count += 1
        if flags & MemFlags.THREADGROUP:
            self.tg_phase[groups] += 1
            if isinstance(groups, slice) or len(groups) == lanes.n_groups:
                self.sync_epoch += 1
            self.lane_phase = self.tg_phase[lanes.group]
        else:
            self.unordered_by[AddressSpace.THREADGROUP] = pos
        if flags & MemFlags.DEVICE:
            self.dev_phase[groups] += 1
        else:
            self.unordered_by[AddressSpace.DEVICE] = pos
        for hook in self.barrier_hooks:
            hook(self, mask, pos)
        if self.recorder is not None:
            self.recorder.barrier(self, mask, pos)

    def _loop_left_by(self, missing: Any) -> int | None:
        """The line of the innermost loop around the statement running now that some of the
        ``missing`` threads entered and have left (its condition let them out sooner), or None."""
        st = self.loop
        while st is not None and st.is_switch:
            st = st.outer
        if st is None or st.pos is None:
            return None
        if st.active is None:
            return None  # every thread is in this iteration: a branch kept the missing ones away
        entered = missing if st.entered is None else (missing & st.entered)
        return st.pos.line if np.any(entered & ~st.active) else None

    def simd_barrier(self, mask: np.ndarray | None, pos: Pos, flags: MemFlags) -> None:
        """simdgroup_barrier(flags): orders the flagged memory among the threads of each SIMD-group
        that reaches it (threads of other SIMD-groups stay unordered)."""
        simds = self.lanes.simd_global if mask is None else self.lanes.simd_global[mask]
        simds = np.unique(simds)
        for space, flag in ((AddressSpace.THREADGROUP, MemFlags.THREADGROUP), (AddressSpace.DEVICE, MemFlags.DEVICE)):
            if flags & flag:
                phases = self.simd_phase.get(space)
                if phases is None:
                    phases = self.simd_phase[space] = np.zeros(max(self.lanes.n_simds, 1), dtype=np.int64)
                phases[simds] += 1
            else:
                self.unordered_by[space] = pos

    # --------------------------------------------------------------- atomics
    def _atomic_target(self, p: Ptr, mask: np.ndarray | None, pos: Pos, view: View) -> Any:
        if p.mem is None:
            raise KernelRuntimeError("atomic operation through an uninitialised pointer", pos)
        data, base, count = p.mem.typed(view.dtype)
        safe, bad = self._check_bounds(p.mem, p.off, mask, view, count, pos, AccessKind.ATOMIC)
        self.count(Counter.ATOMICS, mask)  # what each thread attempted, out of bounds included
        if bad is not None:
            mask = ~bad if mask is None else (mask & ~bad)
        flat = safe if base is None else base + safe
        flat = np.broadcast_to(flat, (self.n,))
        lanes = self.all_lanes if mask is None else np.flatnonzero(mask)
        return p.mem, data, flat, lanes, mask

    def atomic(self, p: Ptr, mask: np.ndarray | None, op: str, value: Any, pos: Pos, elem: ScalarType, want_old: bool) -> Any:
        """One atomic read-modify-write per active lane, applied in lane order (one of the orders a
        GPU may pick), returning each lane's old value."""
        view = view_of(elem)
        mem, data, flat, lanes, mask = self._atomic_target(p, mask, pos, view)
        if self.cost is not None:
            self.cost.access(AccessKind.ATOMIC, mem, flat, mask, 1, view.unit, mem.typed(view.dtype)[1], pos)
        old = np.zeros(self.n, dtype=data.dtype)
        if mem.shadow is not None:
            self.sanitizer.on_atomic(self, mem, flat, view, lanes, pos, writes=op != "load",
                                    reads_old=op not in _REPLACING_ATOMICS)
        if op == "load":
            old[lanes] = data[flat[lanes]]
            return old
        vals = np.broadcast_to(np.asarray(value, dtype=data.dtype), (self.n,))
        addr = flat[lanes]
        v = vals[lanes]
        if op == "store" and pos not in self.output_hints:
            self._note_lost_stores(mem, addr, lanes, v, pos)
        if self.recorder is not None:
            self.recorder.access(AccessKind.ATOMIC, mem, mask, rescale(flat, view.unit, mem.unit, self.n), pos, self, value)
        ufunc = _ATOMIC_UFUNCS.get(op)
        if ufunc is not None and not want_old:
            ufunc.at(data, addr, v)  # unbuffered, in lane order
            return old
        old[lanes] = apply_in_lane_order(data, addr, v, ufunc)
        return old

    def _note_lost_stores(self, mem: Memory, addr: Any, lanes: Any, v: Any, pos: Pos) -> None:
        """Several threads atomically storing different values into one element at once: the
        stores are atomic, so nothing races, but only one value survives. Where they meant to
        add, the output is wrong, and this says why."""
        order = np.argsort(addr, kind="stable")
        a, vals, ln = addr[order], v[order], lanes[order]
        repeat = np.flatnonzero(a[1:] == a[:-1])
        differ = repeat[vals[repeat + 1] != vals[repeat]]
        if differ.size == 0:
            return
        k = int(differ[0])
        same = ln[a == a[k]]
        others = same.size - 2
        more = f" and {others} other thread{'s' if others != 1 else ''}" if others > 0 else ""
        self.output_hints[pos] = (
            f"line {pos.line}: {self.lanes.label(int(same[0]))}, {self.lanes.label(int(same[1]))}{more} store "
            f"different values into {mem.name}[{int(a[k])}] with one atomic_store_explicit: a store replaces the "
            "element, so only one of their updates survives and the others are lost. To add every thread's value, "
            "use atomic_fetch_add_explicit")

    def atomic_cas(self, p: Ptr, mask: np.ndarray | None, expected: Any, desired: Any, pos: Pos, elem: ScalarType) -> Any:
        view = view_of(elem)
        mem, data, flat, lanes, mask = self._atomic_target(p, mask, pos, view)
        if mem.shadow is not None:
            self.sanitizer.on_atomic(self, mem, flat, view, lanes, pos, writes=True, reads_old=True)
        if self.cost is not None:
            self.cost.access(AccessKind.ATOMIC, mem, flat, mask, 1, view.unit, mem.typed(view.dtype)[1], pos)
        exp = np.broadcast_to(np.asarray(expected, dtype=data.dtype), (self.n,))
        des = np.broadcast_to(np.asarray(desired, dtype=data.dtype), (self.n,))
        ok = np.zeros(self.n, dtype=bool)
        old = np.array(exp, copy=True)
        # Round r applies the r-th lane (in lane order) of every address: the compare depends on
        # what the lanes before it left, so an address's lanes take one round each.
        for pick in _rounds(flat[lanes]):
            a = flat[lanes[pick]]
            cur = data[a]
            ln = lanes[pick]
            # Compare bit patterns, as the hardware does (so -0.0 != 0.0 and NaN can match).
            same = cur.view(_bits_dtype(cur.dtype)) == exp[ln].view(_bits_dtype(cur.dtype))
            ok[ln] = same
            old[ln] = cur
            data[a[same]] = des[ln[same]]
        if self.recorder is not None:
            self.recorder.access(AccessKind.ATOMIC, mem, mask, rescale(flat, view.unit, mem.unit, self.n), pos, self, desired)
        return ok, old


#: Atomics whose result in memory does not depend on what the element held (a store, an exchange
#: whose old value the kernel may ignore): every other one reads the element first.
_REPLACING_ATOMICS = frozenset({"store", "exchange"})

#: The read-modify-write of each fetch-and-op atomic (exchange and store just replace the value).
_ATOMIC_UFUNCS = {"add": np.add, "sub": np.subtract, "min": np.minimum, "max": np.maximum,
                  "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}

#: At most this many table cells per update when atomics on one address are applied together
#: (see ``apply_in_lane_order``); addresses with more lanes are applied one address at a time.
_TABLE_CELLS_PER_UPDATE = 4


def _groups(addr: np.ndarray) -> Any:
    """The updates grouped by address, lane order kept within each: (order that sorts them,
    start of each address's run in that order, each run's length, each update's rank in its run)."""
    order = np.argsort(addr, kind="stable")
    sorted_addr = addr[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_addr[1:] != sorted_addr[:-1])))
    sizes = np.diff(np.append(starts, addr.size))
    rank = np.arange(addr.size) - np.repeat(starts, sizes)
    return order, starts, sizes, rank


def _rounds(addr: np.ndarray) -> Any:
    """Index arrays into ``addr``, one per round: round r holds the r-th update (in lane order)
    of every address that has one."""
    if addr.size == 0:
        return []
    order, _, _, rank = _groups(addr)
    by_rank = np.argsort(rank, kind="stable")
    bounds = np.flatnonzero(np.diff(rank[by_rank])) + 1
    return np.split(order[by_rank], bounds)


def apply_in_lane_order(data: np.ndarray, addr: np.ndarray, v: np.ndarray, ufunc: Any) -> np.ndarray:
    """Apply one atomic update per lane to ``data[addr]`` (``data[a] = ufunc(data[a], v)``, or
    ``data[a] = v`` for an exchange when ``ufunc`` is None), the lanes of each address one after
    another in lane order, and return the value each lane found (its atomic's result).

    Each address's values form a row of a table that starts with what memory holds; a
    ``ufunc.accumulate`` along the rows is that sequence of updates, each rounded in the element
    type as the update itself rounds it (float additions in float32, one after another), so every
    lane's result and the final value are exactly those of the updates applied one by one.
    """
    if addr.size == 0:
        return np.empty(0, dtype=data.dtype)
    if (addr == addr[0]).all():  # one address (a counter): one row, in lane order already
        a = addr[0]
        line = np.concatenate((data[a:a + 1], np.asarray(v, dtype=data.dtype)))
        if ufunc is not None:
            line = ufunc.accumulate(line, dtype=data.dtype)
        data[a] = line[-1]
        return line[:-1]
    order, starts, sizes, rank = _groups(addr)
    first = addr[order[starts]]
    values = np.asarray(v, dtype=data.dtype)[order]
    row = np.repeat(np.arange(starts.size), sizes)
    # Rows as long as the longest address's run, unless that makes a table much larger than the
    # updates (one hot address among many): then the long runs go one address at a time.
    width = int(sizes.max())
    wide = np.zeros(starts.size, dtype=bool)
    if starts.size * width > _TABLE_CELLS_PER_UPDATE * addr.size + 64:
        width = max(1, _TABLE_CELLS_PER_UPDATE * addr.size // starts.size)
        wide = sizes > width
    narrow = ~wide[row]
    table = np.zeros((starts.size, width + 1), dtype=data.dtype)
    table[:, 0] = data[first]
    table[row[narrow], rank[narrow] + 1] = values[narrow]
    if ufunc is not None:
        table = ufunc.accumulate(table, axis=1, dtype=data.dtype)
    found = np.empty(addr.size, dtype=data.dtype)
    found[narrow] = table[row[narrow], rank[narrow]]
    last = np.where(wide, 0, sizes)
    data[first] = table[np.arange(starts.size), last]
    for g in np.flatnonzero(wide):  # long runs: one row each
        run = slice(starts[g], starts[g] + sizes[g])
        line = np.concatenate(([data[first[g]]], values[run])).astype(data.dtype, copy=False)
        if ufunc is not None:
            line = ufunc.accumulate(line, dtype=data.dtype)
        found[run] = line[:-1]
        data[first[g]] = line[-1]
    old = np.empty(addr.size, dtype=data.dtype)
    old[order] = found
    return old


__all__ = ["Ctx", "Frame", "LoopState", "apply_in_lane_order"]
