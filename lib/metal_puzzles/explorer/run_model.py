"""The model behind the kernel explorer: what a thread read and wrote in a barrier phase,
what a thread's variables hold at each step, and the run's findings with where each one
happened (a click on one jumps there). Pure Python + NumPy, so it is tested without a browser;
``widgets.py`` only lays it out.

It shows what each thread attempted: an access outside its memory is listed at the index the
thread computed (``ElementAccess.in_bounds`` False), never at a stand-in. Steps are numbered as
the run's step-through record numbers them: step k is the moment before the k-th statement ran,
and the last step (``last_step``) is the end, after the kernel's last statement. A finding
carries the number of the statement that made it, so it lands on its line *and* loop iteration;
``memory_at`` and ``filtered_result(..., step=k)`` give the memory as it stood at a step."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from ..diagrams.marks import FindingSite, finding_sites
from ..msl import RunResult
from ..msl.counting.access_kind import AccessKind
from ..msl.lang.lane_values import hex_word
from ..msl.lang.types import AddressSpace
from ..msl.observe.cost import conflict_ways, segments_touched
from ..msl.observe.trace import AccessEvent, BarrierEvent, ElementAccess, Recorder, flatten_events


@dataclass(frozen=True)
class Jump:
    """Where the explorer goes to show a finding: a thread (threadgroup and index in it), a
    barrier phase (None: all phases) and a step of the step-through at the finding's line."""

    group: int
    thread: int
    phase: int | None
    step: int | None
    line: int | None


@dataclass(frozen=True)
class Skipped:
    """Why a thread that touched no memory did nothing: the first step at which it sat out
    (inactive), and the line of the statement that left it out (the guard it failed)."""

    step: int
    guard_line: int | None


class ExplorerModel:
    def __init__(self, result: RunResult) -> None:
        if result.trace is None:
            raise ValueError("the run has no trace; launch it with trace=True to explore it")
        self.result = result
        self.trace: Recorder = result.trace  # what every view is built from
        lanes = result.lanes
        self.n_groups = lanes.n_groups
        self._lanes_by_group = [np.flatnonzero(lanes.group == g) for g in range(lanes.n_groups)]
        events = [e for e in self.trace.accesses() if e.space != AddressSpace.THREAD]
        phases = sorted({int(p) for e in events for p in np.unique(e.phase)})
        self.phases = phases or [0]
        self.sites = finding_sites(result)
        self._by_number = {s.number: s for s in self.sites}
        self._lane_events: dict[int, tuple[list[AccessEvent], list[AccessEvent]]] = {}

    # ------------------------------------------------------------------ threads
    def threads_in_group(self, group: int) -> int:
        return int(self._lanes_by_group[group].size)

    def lane(self, group: int, thread: int) -> int:
        """Lane id of the thread-th thread (by index in threadgroup) of a threadgroup."""
        lanes = self._lanes_by_group[group]
        return int(lanes[min(max(thread, 0), lanes.size - 1)])

    def label(self, lane: int) -> str:
        """The thread's name as every text of the explorer, the diagrams and the findings write it:
        grid position first, then its place in its threadgroup ("thread 7 = 3 of threadgroup 1";
        see ``Lanes.label``)."""
        return self.result.lanes.label(lane)

    def thread_index(self, lane: int) -> tuple[int, int]:
        """(threadgroup, index in it) of a lane: the values of the explorer's two sliders."""
        group = int(self.result.lanes.group[lane])
        return group, int(np.searchsorted(self._lanes_by_group[group], lane))

    # --------------------------------------------------------------- accesses
    def _events_of(self, lane: int) -> tuple[list[AccessEvent], list[AccessEvent]]:
        """The trace's events (in bounds, out of bounds) that one thread took part in, cached: the
        explorer asks about one thread many times while stepping."""
        cached = self._lane_events.get(lane)
        if cached is None:
            trace = self.trace
            in_bounds = [e for e in trace.accesses() if e.space != AddressSpace.THREAD and (e.lanes == lane).any()]
            strays = [e for e in trace.strays if (e.lanes == lane).any()]
            cached = self._lane_events[lane] = (in_bounds, strays)
        return cached

    def accesses(self, lane: int, phase: int | None = None, step: int | None = None) -> list[ElementAccess]:
        """What one thread attempted to read and write, in execution order, optionally in one
        barrier phase or before step ``step``. Accesses outside their memory are listed at the
        index the thread computed, with ``in_bounds`` False (they did not happen)."""
        in_bounds, strays = self._events_of(lane)
        if step is not None:
            in_bounds = [e for e in in_bounds if e.step < step]
            strays = [e for e in strays if e.step < step]
        out = flatten_events(in_bounds, None, lane, phase, in_bounds=True)
        if strays:
            out += flatten_events(strays, None, lane, phase, in_bounds=False)
            out.sort(key=lambda a: a.seq)
        return out

    def threads_touching(self, buffer: str, index: int, group: int | None = None, phase: int | None = None,
                         step: int | None = None) -> list[int]:
        """The lanes that accessed element ``index`` of ``buffer`` (out-of-bounds accesses at the
        index they computed included), optionally before step ``step`` or in one barrier phase:
        what a click on a cell of the diagram selects. Threadgroup memory is one copy per
        threadgroup: ``group`` picks whose (device memory ignores it)."""
        trace = self.trace
        found: set[int] = set()
        for e in [*trace.accesses(buffer=buffer), *(x for x in trace.strays if x.buffer == buffer)]:
            if step is not None and e.step >= step:
                continue
            sel = e.index == index
            if phase is not None:
                sel &= e.phase == phase
            if group is not None and e.space == AddressSpace.THREADGROUP:
                sel &= np.asarray(e.group) == group
            found.update(int(k) for k in np.unique(e.lanes[sel]))
        return sorted(found)

    def skipped(self, lane: int) -> Skipped | None:
        """For a thread that touched no memory (a guard's spare thread, say): where it sat out,
        and the guard that left it out. None for a thread that accessed memory (out of bounds
        included) or when the run kept no step-through record."""
        in_bounds, strays = self._events_of(lane)
        steps = self.result.steps or []
        if in_bounds or strays or not steps:
            return None
        for k, s in enumerate(steps):
            if not s.active[lane]:
                guard = next((steps[j].line for j in range(k - 1, -1, -1) if steps[j].active[lane]), None)
                return Skipped(k, guard)
        return None

    def counts(self, lane: int) -> dict[str, int]:
        linear = int(self.result.lanes.grid_linear[lane])
        return self.result.counts.of_thread(linear)

    def counts_max(self) -> dict[str, int]:
        return self.result.counts.max()

    def filtered_result(self, lane: int, phase: int | None = None, step: int | None = None) -> RunResult:
        """A copy of the run whose trace keeps only this thread's accesses (to draw them alone),
        in one barrier phase or all of them. The writes of its threadgroup to threadgroup memory
        up to that phase stay too, without their arrows: they make the snapshots the thread's
        reads come from, so a later phase still shows that memory and the arrows out of it.
        Its out-of-bounds accesses are this thread's, at the indices it computed; findings are
        the whole run's.

        With ``step``, the run as it stood at that step of the step-through (before its
        statement; the last step is the end): only the accesses made before it, and the outputs
        holding what they held then (``memory_at``)."""
        group = int(self.result.lanes.group[lane])
        keep: list[AccessEvent | BarrierEvent] = []
        for e in self.trace.events:
            if isinstance(e, BarrierEvent):
                keep.append(e)
                continue
            if step is not None and e.step >= step:
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
        strays = []
        for e in self.trace.strays:
            if step is not None and e.step >= step:
                continue
            mine = e.lanes == lane
            if phase is not None:
                mine &= e.phase == phase
            if mine.any():
                strays.append(_select(e, np.flatnonzero(mine), False))
        trace = copy.copy(self.trace)
        trace.events = keep
        trace.strays = strays
        out = copy.copy(self.result)
        out.trace = trace
        if step is not None:
            memory = self.memory_at(step)
            out.outputs = [memory[name].reshape(np.shape(final))
                           for name, final in zip(out.output_names, out.outputs, strict=False)]
        return out

    def memory_at(self, step: int, group: int | None = None) -> dict[str, np.ndarray]:
        """Every output and threadgroup array as it stood at step ``step`` (before that step's
        statement; at ``last_step``, as the kernel left it), flat, one object per element: the
        output's contents, None for threadgroup memory never written, "?" where an atomic
        update was the last change (the trace keeps its operand, not its result). Threadgroup
        arrays are those of ``group`` (default: the first threadgroup).

        Built from the trace's writes onto the outputs' contents before the run; an element no
        statement changes from ``step`` on already holds its final value."""
        result = self.result
        if not result.initial_outputs and result.output_names:
            raise ValueError("the run kept no step-through record (launch it with steps=True): its "
                             "memory at a step cannot be rebuilt")
        group = 0 if group is None else group
        state: dict[str, np.ndarray] = {}
        final: dict[str, np.ndarray] = {}
        changed_later: dict[str, np.ndarray] = {}
        for name, before, after in zip(result.output_names, result.initial_outputs, result.outputs, strict=False):
            state[name] = np.asarray(before).reshape(-1).astype(object)
            final[name] = np.asarray(after).reshape(-1).astype(object)
            changed_later[name] = np.zeros(state[name].size, dtype=bool)
        for name, shape in result.threadgroup_shapes.items():
            state[name] = np.full(int(np.prod(shape)) if len(shape) else 1, None, dtype=object)
        for e in self.trace.accesses():
            if e.kind == AccessKind.READ or e.buffer not in state:
                continue
            idx = e.index
            if e.space == AddressSpace.THREADGROUP:
                idx = idx[np.asarray(e.group) == group]
                if e.step >= step:
                    continue
            elif e.step >= step:
                changed_later[e.buffer][idx] = True
                continue
            if e.kind == AccessKind.WRITE and e.values is not None:
                values = e.values if e.space != AddressSpace.THREADGROUP else e.values[np.asarray(e.group) == group]
                state[e.buffer][idx] = list(values.tolist())
            else:
                state[e.buffer][idx] = "?"
        for name, later in changed_later.items():
            settled = ~later  # nothing changes it from here on: it holds its final value
            state[name][settled] = final[name][settled]
        return state

    # --------------------------------------------------------------- findings
    def findings(self) -> list[FindingSite]:
        """The run's findings, located (numbered as the diagram numbers them)."""
        return self.sites

    def jump(self, number: int) -> Jump:
        """Where to go to see finding ``number``: its thread, its phase, and its step (the line
        and loop iteration where it happened)."""
        site = self._site(number)
        step = self.finding_step(number)
        if site.lane is None:
            return Jump(0, 0, None, step, site.line)
        group = site.group if site.group is not None else 0
        thread = int(np.searchsorted(self._lanes_by_group[group], site.lane))
        phase = site.phase if site.phase in self.phases else None
        return Jump(group, thread, phase, step, site.line)

    def finding_step(self, number: int) -> int | None:
        """The step of finding ``number``: the statement (line and loop iteration) that made it,
        as the run recorded it; the end step for what is found after the kernel ended (outputs
        never written). None when the step-through record does not reach it."""
        site = self._site(number)
        step = site.finding.step
        if step is not None and step < self.n_steps:
            steps = self.result.steps or []
            if steps[step].line != site.line and step + 1 < len(steps) and steps[step + 1].line == site.line:
                # A loop's condition, increment or initialiser runs before the loop records its
                # step (with the lanes that go on): the finding is that step's, where the loop's
                # variables hold the values the condition saw.
                return step + 1
            return step
        if step is None and site.lane is not None:  # a run recorded before findings carried steps
            return self.step_at(site.line, site.lane)
        return None

    def _site(self, number: int) -> FindingSite:
        site = self._by_number.get(number)
        if site is None:
            raise ValueError(f"no finding {number}: the run has {len(self.sites)} (numbered from 1)")
        return site

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
        for e in self.trace.accesses():
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
                size = cost.item_sizes.get(e.buffer)
                if size is None:
                    continue
                value = segments_touched(elements, size, memory.segment_bytes)
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
        """Steps in the record, the end step included: the explorer shows step k as "k+1 / n_steps"."""
        return len(self.result.steps or [])

    @property
    def last_step(self) -> int | None:
        """The index of the last step (None: no record). When the kernel ran to its end, it is the
        end step, which shows what the last statement left; step forward stops there."""
        return self.n_steps - 1 if self.n_steps else None

    def source_lines(self) -> list[str]:
        return self.result.source.split("\n")

    def lines_run(self, lane: int) -> set[int]:
        """The source lines the thread ran (was active at) in the step-through record."""
        return {s.line for s in self.result.steps or [] if s.line is not None and s.active[lane]}

    def statement_lines(self) -> set[int]:
        """The source lines some thread ran: the lines a thread may or may not run."""
        return {s.line for s in self.result.steps or [] if s.line is not None and s.active.any()}

    def step(self, index: int, lane: int) -> dict:
        """Before step ``index``: the current line (None at the end step), whether the thread is
        active, its variables, and whether this is the end (after the last statement) or the
        last step of the record."""
        steps = self.result.steps or []
        if not steps:
            return {"line": None, "active": False, "variables": {}, "end": False, "last": True}
        index = min(max(index, 0), len(steps) - 1)
        s = steps[index]
        variables = {name: _fmt(v[lane]) for name, v in s.values.items()}
        return {"line": s.line, "active": bool(s.active[lane]), "variables": variables, "end": s.end,
                "last": index == len(steps) - 1}


def _select(e: AccessEvent, idx: np.ndarray, arrows: bool) -> AccessEvent:
    """Some of an event's accesses; without ``arrows`` their provenance is dropped."""
    sources = None if e.sources is None or not arrows else [e.sources[i] for i in idx]
    return AccessEvent(e.kind, e.buffer, e.space, e.lanes[idx], e.index[idx], e.group[idx], e.phase[idx], e.line,
                       e.file, e.seq, sources, None if e.values is None else e.values[idx], e.step)


def _fmt(v) -> str:
    a = np.asarray(v)
    if a.dtype == object:
        return str(a.item() if a.ndim == 0 else a.tolist())
    if a.ndim == 0:
        word = hex_word(a[()])  # a 32-bit word of packed bits reads in hex (V.3's eight 4-bit values)
        if word is not None:
            return word
        x = a.item()
        if isinstance(x, float):
            return f"{x:g}"
        return str(x)
    return "[" + ", ".join(_fmt(x) for x in a) + "]"
