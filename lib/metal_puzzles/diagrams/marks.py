"""Where a run's findings happened, in the terms its diagram and the explorer use.

A finding names threads by position, memory by buffer name and element, and a source line;
a diagram shows threadgroups, arrays drawn as inputs, outputs and threadgroup-memory snapshots
per barrier phase, and threads as coloured swatches. ``finding_sites`` translates one into the
other: for every finding its number, threadgroup, threads (as lanes), barrier phase, line and
element, and a one-line summary. ``stray_accesses`` lists the accesses that left their memory
(the run record keeps them apart, since they never happened), with the index each thread
asked for.

Pure data computed from the run record: ``draw`` paints it as a layer of marks over a
diagram, ``explorer.model`` lists it and jumps to it. Another overlay (say, costs) can be
computed the same way beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from metal_puzzles.compat import StrEnum

from ..msl import Finding, FindingKind, RunResult
from ..msl.findings.registry import ElementMark, SiteWords, ThreadMark, kind_entry
from ..msl.lang.types import AddressSpace
from ..msl.observe.trace import ElementAccess

#: The colour of findings in diagrams and in the explorer.
FINDING_RED = "#d1242f"

#: Circled numbers for the first findings; later ones are written "(21)".
_CIRCLED = "①②③④⑤⑥⑦⑧⑨⑩⑪⑫⑬⑭⑮⑯⑰⑱⑲⑳"



class Place(StrEnum):
    """Where a diagram draws an element of a buffer."""

    INPUT = "in"
    OUTPUT = "out"
    THREADGROUP = "tg"
    NOWHERE = "none"  # thread-private memory and variables are not drawn


def marks_legend(sites: list[FindingSite]) -> str:
    """What the marks of these findings mean, in one line (the diagram's header, and show())."""
    entries = [kind_entry(s.kind) for s in sites]
    elements = {e.element for e in entries}
    thread_marks = {e.threads for e in entries}
    parts = []
    if any(s.place != Place.NOWHERE and e.element != ElementMark.GHOST for s, e in zip(sites, entries, strict=True)):
        parts.append("a ring marks the element involved")
    if ElementMark.GHOST in elements:
        parts.append("an arrow leaves an array for dashed cells labelled with the indices accessed out of bounds")
    if thread_marks & {ThreadMark.RINGED, ThreadMark.RINGED_ALL}:
        parts.append("a ringed swatch marks a thread involved")
    if ThreadMark.STRUCK in thread_marks:
        parts.append("a struck swatch marks a thread that never reaches the barrier")
    count = f"{len(sites)} finding{'s' if len(sites) != 1 else ''}"
    return f"red marks show {count} of the sanitizer, numbered as listed under each threadgroup: " + "; ".join(parts)


def badge(number: int) -> str:
    """A finding's number as the diagram and the explorer write it."""
    return _CIRCLED[number - 1] if 1 <= number <= len(_CIRCLED) else f"({number})"


@dataclass(frozen=True)
class FindingSite:
    """One finding, located in the run's geometry."""

    number: int  # 1-based, in the order of the run's findings
    finding: Finding
    lane: int | None  # the thread the finding is about (None: the whole launch)
    group: int | None  # its threadgroup (linear index)
    other_lane: int | None  # races: the thread of the earlier access
    phase: int | None  # barrier phase of the thread's threadgroup when it happened
    line: int | None
    other_line: int | None  # races: the line of the earlier access
    place: Place
    buffer: str | None
    index: int | None  # element (threadgroup memory: within the threadgroup's copy)
    lanes: tuple[int, ...]  # every thread the finding names (barrier divergence: those that miss it)
    summary: str
    other_group: int | None = None  # races: the threadgroup of the earlier access

    @property
    def kind(self) -> FindingKind:
        return self.finding.kind

    @property
    def groups(self) -> set[int]:
        """The threadgroups whose panels show this finding."""
        return {g for g in (self.group, self.other_group) if g is not None}

    @property
    def label(self) -> str:
        return f"{badge(self.number)} {self.summary}"


def place_of(result: RunResult, buffer: str | None) -> Place:
    if buffer is None:
        return Place.NOWHERE
    if buffer in result.output_names:
        return Place.OUTPUT
    if buffer in result.input_names:
        return Place.INPUT
    if buffer in result.threadgroup_shapes:
        return Place.THREADGROUP
    return Place.NOWHERE


class _Threads:
    """Threads named by position (as findings do) to lanes, and lanes to the names diagrams use."""

    def __init__(self, result: RunResult) -> None:
        self.lanes = result.lanes

    @cached_property
    def by_grid(self) -> dict[tuple[int, ...], int]:
        """Lane of every grid position (built only when a finding names a thread)."""
        return {tuple(p): k for k, p in enumerate(self.lanes.pos.tolist())}  # Python ints, at once

    def lane(self, thread: dict | None) -> int | None:
        return None if thread is None else self.by_grid.get(tuple(thread["grid"]))

    def name(self, lane: int) -> str:
        return self.lanes.label(lane)


def finding_sites(result: RunResult) -> list[FindingSite]:
    """Every finding of the run, located."""
    threads = _Threads(result)
    strays = stray_accesses(result)
    sites = []
    for number, f in enumerate(result.findings, start=1):
        lanes = tuple(lane for lane in (threads.lane(t) for t in f.threads) if lane is not None)
        lane = lanes[0] if lanes else None
        other = threads.lane(f.other_thread)
        group = None if lane is None else int(result.lanes.group[lane])
        other_group = None if other is None else int(result.lanes.group[other])
        line = f.pos.line if f.pos is not None else None
        other_line = f.other_pos.line if f.other_pos is not None else None
        summary = _summary(f, threads, lane, other, strays)
        if len(lanes) > 1 and kind_entry(f.kind).counts_others:
            others = len(lanes) - 1
            summary += (f" (and {others}{'+' if len(f.threads) >= 8 else ''} other "
                        f"thread{'' if others == 1 and len(f.threads) < 8 else 's'})")
        sites.append(FindingSite(number, f, lane, group, other, f.phase, line, other_line,
                                 place_of(result, f.buffer), f.buffer, f.index, lanes, summary, other_group))
    return sites


def _summary(f: Finding, threads: _Threads, lane, other, strays: list[ElementAccess]) -> str:
    """The finding's one line, worded by its kind's entry from the names this diagram uses."""
    apart = other is not None and lane is not None and int(threads.lanes.group[other]) != int(threads.lanes.group[lane])
    access = next((a.kind.verb for a in strays if a.lane == lane and f.pos is not None and a.line == f.pos.line
                   and a.buffer == f.buffer), "accesses")
    named = tuple(threads.name(k) for k in (threads.lane(t) for t in f.threads) if k is not None)
    words = SiteWords(who=threads.name(lane) if lane is not None else "a thread", located=lane is not None,
                      them=threads.name(other) if other is not None else "other threads", apart=apart,
                      access=access, named=named)
    return kind_entry(f.kind).summary(f, words)


def stray_accesses(result: RunResult, group: int | None = None) -> list[ElementAccess]:
    """Accesses that fell outside their memory, thread by thread (none without a trace)."""
    if result.trace is None:
        return []
    return result.trace.out_of_bounds_accesses(group=group)


def drawn_place(access: ElementAccess, result: RunResult) -> Place:
    """Where a diagram draws the array an (out-of-bounds) access went to."""
    if access.space == AddressSpace.THREADGROUP:
        return Place.THREADGROUP
    return place_of(result, access.buffer)


__all__ = ["FindingSite", "Place", "finding_sites", "stray_accesses", "place_of", "drawn_place", "badge",
           "marks_legend", "FINDING_RED"]
