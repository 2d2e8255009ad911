"""The model behind the kernel explorer: what to highlight for a thread and a barrier phase,
what a thread's variables hold at each step, and the run's findings with where each one
happened (a click on one jumps there). Pure Python + NumPy, so it is tested without a browser;
``widgets.py`` only lays it out."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from .marks import FindingSite, finding_sites
from .msl import RunResult
from .msl.lang.types import AddressSpace
from .msl.observe.cost import conflict_ways, segments_touched
from .msl.observe.trace import AccessEvent, BarrierEvent, ElementAccess
from .msl.run.memory import AccessKind


@dataclass(frozen=True)
class Jump:
    """Where the explorer goes to show a finding: a thread (threadgroup and index in it), a
    barrier phase (None: all phases) and a step of the step-through at the finding's line."""

    group: int
    thread: int
    phase: int | None
    step: int | None
    line: int | None


class ExplorerModel:
    def __init__(self, result: RunResult) -> None:
        if result.trace is None:
            raise ValueError("the run has no trace; launch it with trace=True to explore it")
        self.result = result
        lanes = result.lanes
        self.n_groups = lanes.n_groups
        self._lanes_by_group = [np.flatnonzero(lanes.group == g) for g in range(lanes.n_groups)]
        events = [e for e in result.trace.accesses() if e.space != AddressSpace.THREAD]
        phases = sorted({int(p) for e in events for p in np.unique(e.phase)})
        self.phases = phases or [0]
        self.sites = finding_sites(result)

    # ------------------------------------------------------------------ threads
    def threads_in_group(self, group: int) -> int:
        return int(self._lanes_by_group[group].size)

    def lane(self, group: int, thread: int) -> int:
        """Lane id of the thread-th thread (by index in threadgroup) of a threadgroup."""
        lanes = self._lanes_by_group[group]
        return int(lanes[min(max(thread, 0), lanes.size - 1)])

    def describe(self, lane: int) -> str:
        return self.result.lanes.name(lane)

    # --------------------------------------------------------------- accesses
    def accesses(self, lane: int, phase: int | None = None) -> list[ElementAccess]:
        """What one thread read and wrote, in execution order, optionally in one barrier phase."""
        return self.result.trace.element_accesses(lane=lane, phase=phase)

    def highlighted(self, lane: int, phase: int | None = None) -> dict[str, set[tuple[str, int]]]:
        """The (buffer, index) cells to highlight: read, written, atomically updated."""
        out: dict[str, set[tuple[str, int]]] = {"read": set(), "write": set(), "atomic": set()}
        for a in self.accesses(lane, phase):
            out[a.kind].add((a.buffer, a.index))
        return out

    def counts(self, lane: int) -> dict[str, int]:
        linear = int(self.result.lanes.grid_linear[lane])
        return self.result.counts.of_thread(linear)

    def counts_max(self) -> dict[str, int]:
        return self.result.counts.max()

    def filtered_result(self, lane: int, phase: int | None = None) -> RunResult:
        """A copy of the run whose trace keeps only this thread's accesses (to draw them alone),
        in one barrier phase or all of them. The writes of its threadgroup to threadgroup memory
        up to that phase stay too, without their arrows: they make the snapshots the thread's
        reads come from, so a later phase still shows that memory and the arrows out of it.
        Findings and out-of-bounds accesses are the whole run's."""
        group = int(self.result.lanes.group[lane])
        keep = []
        for e in self.result.trace.events:
            if isinstance(e, BarrierEvent):
                keep.append(e)
                continue
            mine = e.lanes == lane
            if phase is not None:
                mine &= e.phase == phase
            context = np.zeros_like(mine)
            if e.space == AddressSpace.THREADGROUP and e.kind != AccessKind.READ:
                context = (np.asarray(e.group) == group) & ~mine
                if phase is not None:
                    context &= e.phase <= phase
            for sel, arrows in ((context, False), (mine, True)):
                if sel.any():
                    keep.append(_select(e, np.flatnonzero(sel), arrows))
        trace = copy.copy(self.result.trace)
        trace.events = keep
        out = copy.copy(self.result)
        out.trace = trace
        return out

    # --------------------------------------------------------------- findings
    def findings(self) -> list[FindingSite]:
        """The run's findings, located (numbered as the diagram numbers them)."""
        return self.sites

    def jump(self, number: int) -> Jump:
        """Where to go to see finding ``number``: its thread, its phase and its line."""
        site = next(s for s in self.sites if s.number == number)
        if site.lane is None:
            return Jump(0, 0, None, None, site.line)
        group = site.group if site.group is not None else 0
        thread = int(np.searchsorted(self._lanes_by_group[group], site.lane))
        phase = site.phase if site.phase in self.phases else None
        return Jump(group, thread, phase, self.step_at(site.line, site.lane), site.line)

    def step_at(self, line: int | None, lane: int) -> int | None:
        """The first step at ``line`` in which ``lane`` is active (None: there is none)."""
        for k, s in enumerate(self.result.steps or []):
            if s.line == line and s.active[lane]:
                return k
        return None

    def finding_lines(self) -> set[int]:
        """Lines of the kernel's source where a finding happened."""
        return {s.line for s in self.sites if s.line is not None and s.finding.pos is not None
                and s.finding.pos.file == "source"}

    # ------------------------------------------------------------------ cost
    @property
    def has_cost(self) -> bool:
        """Whether the run carries a cost profile (launched with cost=...)."""
        return self.result.cost is not None

    def cost_lines(self) -> list[dict]:
        """The cost model's figures per source line: SIMD efficiency, segments per SIMD-group
        load and store (average and worst), the worst bank conflict, barriers."""
        cost = self.result.cost
        if cost is None:
            return []
        rows = []
        for (file, line), c in cost.lines.items():
            if file != "source":
                continue
            rows.append({
                "line": line,
                "code": cost.source_lines[line - 1].strip() if 0 < line <= len(cost.source_lines) else "",
                "simd_efficiency": c.simd_efficiency if c.simd_issues else None,
                "load_segments": (c.loads.segments_per_request, c.loads.max_segments) if c.loads.requests else None,
                "store_segments": (c.stores.segments_per_request, c.stores.max_segments) if c.stores.requests else None,
                "bank_ways": c.threadgroup.max_ways if c.threadgroup.requests else None,
                "barriers": c.barriers,
            })
        return rows

    def simd_group_costs(self, lane: int) -> list[dict]:
        """What the SIMD-group of one thread paid at each place it touched memory (its worst
        execution there): segments for device memory, the n-way conflict for threadgroup memory."""
        cost = self.result.cost
        if cost is None:
            return []
        lanes = self.result.lanes
        sg = int(lanes.simd_global[lane])
        memory = cost.gpu.memory
        worst: dict[tuple, dict] = {}
        for e in self.result.trace.accesses():
            if e.space in (AddressSpace.THREAD, AddressSpace.CONSTANT) or e.file != "source":
                continue
            sel = lanes.simd_global[e.lanes] == sg
            if not sel.any():
                continue
            who, elements = e.lanes[sel], e.index[sel]
            if e.space == AddressSpace.THREADGROUP:
                base, item = cost.threadgroup_layout.get(e.buffer, (0, 4))
                per_lane = len(elements) // max(np.unique(who).size, 1)
                value = conflict_ways((base + elements * item) // memory.bank_width, lanes.simd_lane[who],
                                      per_lane * item, memory)
                what = "bank conflict (ways)"
            else:
                item = cost.item_sizes.get(e.buffer)
                if item is None:
                    continue
                value = segments_touched(elements, item, memory.segment_bytes)
                what = "segments"
            key = (e.line, e.buffer, str(e.kind))
            row = {"line": e.line, "buffer": e.buffer, "kind": str(e.kind), "what": what, "value": value,
                   "active_lanes": int(np.unique(who).size)}
            if key not in worst or value > worst[key]["value"]:
                worst[key] = row
        return [worst[k] for k in sorted(worst)]

    # ------------------------------------------------------------------ steps
    @property
    def n_steps(self) -> int:
        return len(self.result.steps or [])

    def source_lines(self) -> list[str]:
        return self.result.source.split("\n")

    def step(self, index: int, lane: int) -> dict:
        """The current line, whether the thread is active, and its variables, before step ``index``."""
        steps = self.result.steps or []
        if not steps:
            return {"line": None, "active": False, "variables": {}}
        s = steps[min(max(index, 0), len(steps) - 1)]
        variables = {name: _fmt(v[lane]) for name, v in s.values.items()}
        return {"line": s.line, "active": bool(s.active[lane]), "variables": variables}


def _select(e: AccessEvent, idx: np.ndarray, arrows: bool) -> AccessEvent:
    """Some of an event's accesses; without ``arrows`` their provenance is dropped."""
    sources = None if e.sources is None or not arrows else [e.sources[i] for i in idx]
    return AccessEvent(e.kind, e.buffer, e.space, e.lanes[idx], e.index[idx], e.group[idx], e.phase[idx], e.line,
                       e.file, e.seq, sources, None if e.values is None else e.values[idx])


def _fmt(v) -> str:
    a = np.asarray(v)
    if a.dtype == object:
        return str(a.item() if a.ndim == 0 else a.tolist())
    if a.ndim == 0:
        x = a.item()
        if isinstance(x, float):
            return f"{x:g}"
        return str(x)
    return "[" + ", ".join(_fmt(x) for x in a) + "]"
