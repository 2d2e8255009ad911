"""What came from where, read from one threadgroup's trace: its accesses, its threadgroup
arrays as they stood after each barrier phase, and one arrow from every element a thread
wrote back to each element its value was computed from."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from ..msl import RunResult
from ..msl.counting.access_kind import AccessKind
from ..msl.lang.types import AddressSpace
from ..msl.observe.trace import ElementAccess
from .scene import Arrow
from .style import MUTED


# ----------------------------------------------------------------------------- the trace of one group
def group_accesses(result: RunResult, group: int) -> list[ElementAccess]:
    """Every access by the threads of ``group`` in execution order, thread-private ones left out."""
    return [] if result.trace is None else result.trace.element_accesses(group=group)


@dataclass
class Snapshot:
    """A threadgroup array as it stood at the end of one barrier phase."""

    phase: int
    values: dict[int, object]  # element -> value (absent: never written)
    writers: dict[int, set[int]]  # elements written in this phase -> the lanes that wrote them


def shared_snapshots(accesses: Iterable[ElementAccess], name: str) -> list[Snapshot]:
    """Replay the writes to one threadgroup array, phase by phase. Only phases with writes get a
    snapshot. Atomic updates do not record the resulting value, so they show as '?'."""
    by_phase: dict[int, list[ElementAccess]] = defaultdict(list)
    for a in accesses:
        if a.buffer == name and a.space == AddressSpace.THREADGROUP and a.kind != AccessKind.READ:
            by_phase[a.phase].append(a)
    state: dict[int, object] = {}
    snaps = []
    for phase in sorted(by_phase):
        writers: dict[int, set[int]] = defaultdict(set)
        for a in sorted(by_phase[phase], key=lambda x: x.seq):
            state[a.index] = a.value if a.kind == AccessKind.WRITE else "?"
            writers[a.index].add(a.lane)
        snaps.append(Snapshot(phase, dict(state), dict(writers)))
    return snaps


# ----------------------------------------------------------------------------- arrows: what came from where
class _SharedIndex:
    """Lookups over one group's threadgroup accesses: who read which element when, and when
    each element was written."""

    def __init__(self, accesses: list[ElementAccess], phases: dict[str, list[int]]) -> None:
        self.phases = phases
        self.reads: dict[tuple, list[tuple[int, int]]] = defaultdict(list)  # (lane, name, i) -> (seq, phase)
        self.writes: dict[tuple, list[int]] = defaultdict(list)  # (name, i, phase) -> seqs
        for a in accesses:
            if a.space != "threadgroup":
                continue
            if a.kind == AccessKind.READ:
                self.reads[(a.lane, a.buffer, a.index)].append((a.seq, a.phase))
            else:
                self.writes[(a.buffer, a.index, a.phase)].append(a.seq)

    def seen_snapshot(self, lane: int, name: str, index: int, before_seq: int, write_phase: int) -> int | None:
        """The phase of the snapshot holding the value ``lane`` read from ``name[index]`` for a
        write at ``before_seq``: its last such read decides. A read sees writes made earlier in
        its own phase; otherwise the latest snapshot of an earlier phase."""
        seq, phase = before_seq, write_phase
        for s, p in self.reads.get((lane, name, index), ()):
            if s < before_seq:
                seq, phase = s, p
        if any(s < seq for s in self.writes.get((name, index, phase), ())):
            return phase
        earlier = [q for q in self.phases.get(name, []) if q < phase]
        return earlier[-1] if earlier else None


def trace_arrows(accesses: list[ElementAccess], colors: dict[int, str], result: RunResult, phases: dict[str, list[int]]) -> list[Arrow]:
    """One arrow per (thread, written element, element its value came from), deduplicated."""
    inputs, outputs = set(result.input_names), set(result.output_names)
    arrows: dict[tuple, Arrow] = {}
    shared = _SharedIndex(accesses, phases)
    for w in accesses:
        if w.kind == AccessKind.READ:
            continue
        target: tuple[tuple, int]
        source: tuple[tuple, int]
        if w.space == AddressSpace.THREADGROUP:
            target = (("tg", w.buffer, w.phase), w.index)
        elif w.buffer in outputs:
            target = (("out", w.buffer), w.index)
        else:
            continue
        for name, grp, idx in sorted(w.sources, key=str):
            if grp == -1:
                kind = "in" if name in inputs else "out" if name in outputs else None
                if kind is None:
                    continue
                source = ((kind, name), idx)
            else:
                snap = shared.seen_snapshot(w.lane, name, idx, w.seq, w.phase)
                if snap is None:
                    continue
                source = (("tg", name, snap), idx)
            if source == target:
                continue
            key = (w.lane, source, target)
            if key not in arrows:
                arrows[key] = Arrow(w.lane, colors.get(w.lane, MUTED), source, target)
    return list(arrows.values())
