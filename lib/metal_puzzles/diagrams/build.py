"""A run diagram's model built from a traced run: for one threadgroup its arrays (inputs,
threadgroup memory after each barrier phase, outputs), its threads' legend, its arrows and its
findings' marks; and the diagram's header. Where things go is ``layout``'s job."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from ..msl import FindingKind, RunResult
from ..msl.counting.access_kind import AccessKind
from ..msl.findings.registry import ElementMark, ThreadMark, kind_entry
from ..msl.lang.types import AddressSpace
from ..msl.observe.trace import BarrierEvent, ElementAccess
from .data_flow import group_accesses, shared_snapshots, trace_arrows
from .marks import FINDING_RED, FindingSite, Place, drawn_place, marks_legend, stray_accesses
from .scene import ArrayView, Ghost, Header, Panel, PanelMarks, Ring, make_view, views_by_key
from .style import (
    INK,
    MAX_GHOSTS,
    MAX_NOTES,
    MAX_SECTION_W,
    MUTED,
    READ_FILL,
    SHARED_WRITE_FILL,
    text_width,
    thread_color,
    tint,
    wrap_to_width,
)


# ----------------------------------------------------------------------------- one panel
def _lanes_of(result, group: int) -> np.ndarray:
    return np.flatnonzero(np.asarray(result.lanes.group) == group)


def _lane_colors(result, group: int) -> dict[int, str]:
    idx = result.lanes.index_in_group
    return {int(l): thread_color(int(idx[l])) for l in _lanes_of(result, group)}


def _fill_for(writers: set[int], colors: dict[int, str]) -> str:
    """A cell written by one thread takes that thread's tint; by several, a neutral grey."""
    if len(writers) == 1:
        return tint(colors.get(next(iter(writers)), MUTED))
    return SHARED_WRITE_FILL


def _input_views(result, accesses: list[ElementAccess]) -> list[ArrayView]:
    read = defaultdict(set)
    for a in accesses:
        if a.kind == AccessKind.READ and a.space in ("device", "constant"):
            read[a.buffer].add(a.index)
    views = []
    for name, arr in zip(result.input_names, result.inputs, strict=False):
        arr = np.asarray(arr)
        shape = arr.shape
        note = f"input {'scalar' if arr.ndim == 0 else _shape_text(shape)}"
        fills = {i: READ_FILL for i in read.get(name, ())}
        views.append(make_view(("in", name), name, note, shape, arr, fills, touched=read.get(name, set())))
    return views


def _shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _output_views(result, accesses: list[ElementAccess], colors: dict[int, str],
                  unwritten: dict[str, set[int]]) -> list[ArrayView]:
    writers: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    for a in accesses:
        if a.kind != AccessKind.READ and a.space == AddressSpace.DEVICE:
            writers[a.buffer][a.index].add(a.lane)
    views = []
    for name, arr in zip(result.output_names, result.outputs, strict=False):
        arr = np.asarray(arr)
        w = writers.get(name, {})
        fills = {i: _fill_for(lanes, colors) for i, lanes in w.items()}
        note = f"output {_shape_text(arr.shape)}"
        view = make_view(("out", name), name, note, arr.shape, arr, fills, touched=set(w))
        for i in unwritten.get(name, ()):
            if i < view.drawn:  # no thread wrote it: its "value" is whatever the memory held
                view.texts[i] = ""
        views.append(view)
    return views


def unwritten_elements(result: RunResult, sites: Sequence[FindingSite]) -> dict[str, set[int]]:
    """The elements of each output that the sanitizer found no thread of the launch wrote."""
    names = {s.buffer for s in sites if s.kind == FindingKind.UNWRITTEN_OUTPUT and s.buffer is not None}
    if not names or result.trace is None:
        return {}
    written: dict[str, set[int]] = {name: set() for name in names}
    for a in result.trace.element_accesses():
        if a.buffer in written and a.kind != AccessKind.READ and a.space == AddressSpace.DEVICE:
            written[a.buffer].add(a.index)
    sizes = {name: int(np.asarray(arr).size) for name, arr in zip(result.output_names, result.outputs, strict=False)}
    return {name: set(range(sizes.get(name, 0))) - done for name, done in written.items()}


def _shared_names(result, accesses: list[ElementAccess]) -> list[str]:
    """Threadgroup arrays in the order this group first wrote them."""
    names: list[str] = []
    for a in accesses:
        if a.space == AddressSpace.THREADGROUP and a.kind != AccessKind.READ and a.buffer not in names:
            names.append(a.buffer)
    return names


def _shared_sections(result, accesses: list[ElementAccess], colors: dict[int, str]) -> tuple[list[list[ArrayView]], dict]:
    """One section per barrier phase in which threadgroup memory was written, with a snapshot of
    each array written in that phase; also {name: [phases with a snapshot]}."""
    by_phase: dict[int, list[ArrayView]] = defaultdict(list)
    phases: dict[str, list[int]] = {}
    for name in _shared_names(result, accesses):
        shape = result.threadgroup_shapes.get(name)
        snaps = shared_snapshots(accesses, name)
        if shape is None:
            shape = (max(max(s.values) for s in snaps) + 1,)
        phases[name] = [s.phase for s in snaps]
        for s in snaps:
            fills = {i: _fill_for(lanes, colors) for i, lanes in s.writers.items()}
            view = make_view(("tg", name, s.phase), name, f"after phase {s.phase}", shape, s.values, fills)
            by_phase[s.phase].append(view)
    return [by_phase[p] for p in sorted(by_phase)], phases


def _panel_title(result, group: int) -> str:
    # The threadgroup named as the findings and the explorer name it (Lanes.group_label).
    n = len(_lanes_of(result, group))
    return f"{result.lanes.group_label(group)}  ·  {n} thread{'s' if n != 1 else ''}"


def _legend(result, group: int) -> list[tuple[str, str]]:
    dims = _dims(result.grid)
    lanes = result.lanes
    members = sorted(_lanes_of(result, group), key=lambda l: int(lanes.index_in_group[l]))
    return [(_pos_text(lanes.pos[l], dims), thread_color(int(lanes.index_in_group[l]))) for l in members]


def build_panel(result: RunResult, group: int, sites: Sequence[FindingSite] = (), first_group: int = 0) -> Panel:
    """Threadgroup ``group``'s panel, with its marks for the findings ``sites`` (those of the
    whole launch go to the panel of ``first_group``); not laid out yet."""
    accesses = group_accesses(result, group)
    colors = _lane_colors(result, group)
    shared, phases = _shared_sections(result, accesses, colors)
    unwritten = unwritten_elements(result, sites)
    sections = [_input_views(result, accesses), *shared, _output_views(result, accesses, colors, unwritten)]
    panel = Panel(group, _panel_title(result, group), _legend(result, group), sections,
                  trace_arrows(accesses, colors, result, phases),
                  legend_lanes=sorted(_lanes_of(result, group), key=lambda l: int(result.lanes.index_in_group[l])))
    panel.marks = _panel_marks(result, group, sites, panel, phases, colors, first_group, unwritten)
    return panel


# ----------------------------------------------------------------------------- findings: the marks layer
def _shown_in(site: FindingSite, group: int, first_group: int) -> bool:
    """A finding shows in the panels of its threads' threadgroups; one of the whole launch (an
    output never written) in the first panel."""
    return group in site.groups if site.groups else group == first_group


def _snapshot_for(phases: dict[str, list[int]], name: str, phase: int | None) -> tuple | None:
    """The view of a threadgroup array as a thread saw it in ``phase``: its latest snapshot up to
    that phase (or the first one)."""
    snaps = phases.get(name)
    if not snaps:
        return None
    seen = [q for q in snaps if phase is None or q <= phase]
    return ("tg", name, seen[-1] if seen else snaps[0])


def _view_key(place: Place, name: str, phase: int | None, phases: dict[str, list[int]]) -> tuple | None:
    if place == Place.THREADGROUP:
        return _snapshot_for(phases, name, phase)
    if place in (Place.INPUT, Place.OUTPUT):
        return (place.value, name)
    return None


def _panel_marks(result, group: int, sites: Sequence[FindingSite], panel: Panel, phases: dict[str, list[int]],
                 colors: dict[int, str], first_group: int, unwritten: dict[str, set[int]]) -> PanelMarks:
    views = views_by_key(panel)
    mine = [s for s in sites if _shown_in(s, group, first_group)]
    rings: list[Ring] = []
    swatches: dict[int, tuple[int, bool]] = {}
    members = set(panel.legend_lanes)
    for site in mine:
        key = None if site.buffer is None else _view_key(site.place, site.buffer, site.phase, phases)
        view = views.get(key) if key is not None else None
        if site.buffer is not None and key is not None and view is not None:
            rings += _rings(site, site.buffer, key, view, unwritten)
        thread_mark = kind_entry(site.kind).threads
        struck = thread_mark == ThreadMark.STRUCK
        involved = list(site.lanes) if thread_mark in (ThreadMark.STRUCK, ThreadMark.RINGED_ALL) else \
            [lane for lane in (site.lane, site.other_lane) if lane is not None]
        for lane in involved:
            if lane in members and lane not in swatches:
                swatches[lane] = (site.number, struck)
    _add_ghosts(result, group, mine, views, phases, colors)
    notes = [s.label for s in mine[:MAX_NOTES]]
    if len(mine) > MAX_NOTES:
        notes.append(f"... and {len(mine) - MAX_NOTES} more findings (check() lists them)")
    return PanelMarks(rings, swatches, notes)


def _rings(site: FindingSite, buffer: str, key: tuple, view: ArrayView,
           unwritten: dict[str, set[int]]) -> list[Ring]:
    """The rings of a finding on its array ``view``: on the element it names, or on every element
    of an output no thread wrote (the first one numbered)."""
    if kind_entry(site.kind).element == ElementMark.UNWRITTEN:
        missing = sorted(i for i in unwritten.get(buffer, ()) if i < view.drawn)
        return [Ring(key, i, site.number, badged=k == 0) for k, i in enumerate(missing)]
    if site.index is not None and 0 <= site.index < view.drawn:
        return [Ring(key, site.index, site.number)]
    return []


def _add_ghosts(result, group: int, sites: Sequence[FindingSite], views: dict[tuple, ArrayView],
                phases: dict[str, list[int]], colors: dict[int, str]) -> None:
    """Out-of-bounds accesses of this threadgroup's threads, as cells past the end of their arrays."""
    numbers = {(s.buffer, s.line): s.number for s in sites if kind_entry(s.kind).element == ElementMark.GHOST}
    by_view: dict[tuple, dict[int, tuple[set[int], int]]] = defaultdict(dict)
    for a in stray_accesses(result, group):
        key = _view_key(drawn_place(a, result), a.buffer, a.phase, phases)
        if key is None or key not in views:
            continue
        lanes, number = by_view[key].get(a.index, (set(), numbers.get((a.buffer, a.line), 0)))
        lanes.add(a.lane)
        by_view[key][a.index] = (lanes, number)
    for key, cells in by_view.items():
        view = views[key]
        ordered = sorted(cells)
        previous = view.size - 1
        for index in ordered[:MAX_GHOSTS]:
            lanes, number = cells[index]
            color = colors.get(next(iter(lanes)), FINDING_RED) if len(lanes) == 1 else FINDING_RED
            view.ghosts.append(Ghost(index, color, number, gap_before=index != previous + 1))
            previous = index
        view.ghosts_hidden = max(0, len(ordered) - MAX_GHOSTS)


# ----------------------------------------------------------------------------- launch sizes as text
def _pos_text(p: Sequence[int], dims: int) -> str:
    return ",".join(str(int(x)) for x in p[:dims])


def _dims(size3: Sequence[int]) -> int:
    """How many dimensions of a launch size matter (trailing 1s dropped)."""
    return 3 if size3[2] > 1 else 2 if size3[1] > 1 else 1


# ----------------------------------------------------------------------------- the header
def build_header(result: RunResult, title: str | None, groups: Sequence[int], n_groups: int,
            sites: Sequence[FindingSite] = (), wrap_w: float = MAX_SECTION_W) -> Header:
    """The diagram's title, launch facts and what its arrows and marks mean; the explanations
    wrap at ``wrap_w`` so that they never make a diagram wider than its panels."""
    shown = len(groups)
    title = title or result.kernel_name or "kernel"
    dims = _dims(result.grid)
    grid = "(" + ", ".join(str(int(x)) for x in result.grid[:max(dims, 1)]) + ")"
    tg = "(" + ", ".join(str(int(x)) for x in result.threadgroup[:max(dims, 1)]) + ")"
    facts = f"grid {grid}  ·  threadgroup {tg}  ·  {n_groups} threadgroup{'s' if n_groups != 1 else ''}"
    if shown < n_groups:
        facts += f"  ·  showing {shown} of {n_groups} threadgroups"
    lines = [(title, 20.0, INK), (facts, 12.0, INK)]
    if result.trace is None:
        lines.append(("no trace was recorded: arrays only", 11.0, MUTED))
    else:
        lines += [(part, 11.0, MUTED) for part in wrap_to_width(
            "an arrow runs from each element a value was computed from to the element it was "
            "written to, in the colour of the thread that wrote it", 11.0, wrap_w)]
        if any(isinstance(e, BarrierEvent) for e in result.trace.events):
            lines += [(part, 11.0, MUTED) for part in wrap_to_width(
                "phase n: what the threads did between their n-th and (n+1)-th threadgroup_barrier", 11.0, wrap_w)]
    if sites:
        unseen = [s for s in sites if s.groups and not s.groups & set(groups)]
        legend = marks_legend(list(sites)) + (f" ({len(unseen)} in threadgroups not shown)" if unseen else "")
        lines += [(part, 11.0, FINDING_RED) for part in wrap_to_width(legend, 11.0, wrap_w)]
    width = max(text_width(s, size) for s, size, _ in lines)
    height = math.fsum(size + 8 for _, size, _ in lines) + 10
    return Header(lines, width, height)

