"""What each kind of finding is, in one place: how a diagram's one-line summary and a verdict's
verb word it, the fix its reports give whatever the cause, and how diagrams mark it.

``FINDING_KINDS`` has one entry per ``FindingKind``; a new kind is added here (and reported
where it happens, see finding.py), and ``tests/msl/findings/test_finding_kinds.py`` fails while any kind
lacks its entry. The marks are plain data (which element is ringed, how its threads are
marked): ``marks.py`` and ``draw.py`` read them, and the simulator imports no drawing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...compat import StrEnum
from ..thread_grid import SIMD_WIDTH
from .finding import Finding, FindingKind, RaceKind


class ElementMark(StrEnum):
    """How a diagram marks the memory a finding is about."""

    RING = "ring"  # a ring on the element at the finding's index, when that element is drawn
    UNWRITTEN = "unwritten"  # a ring on every element of the output that no thread wrote
    GHOST = "ghost"  # an arrow from the array to dashed cells past its end, labelled with the index asked for


class ThreadMark(StrEnum):
    """How a diagram marks the threads of a finding among its threadgroup's swatches."""

    RINGED = "ringed"  # the finding's thread (and a race's other thread) ringed
    RINGED_ALL = "ringed-all"  # every thread the finding names ringed
    STRUCK = "struck"  # every thread the finding names struck through: they never reach the place
    NONE = "none"  # no thread (the whole launch's doing)


@dataclass(frozen=True)
class SiteWords:
    """What a summary says of a finding's threads, in the names diagrams use (``marks.py`` finds them)."""

    who: str  # the finding's thread, or "a thread" when the launch has no such thread
    located: bool  # whether the finding's thread is one of the launch's
    them: str  # a race: the thread of the earlier access, or "other threads"
    apart: bool  # a race: its two threads are in different threadgroups
    access: str  # out of bounds: what the thread did ("reads", "writes"; "accesses" when unknown)
    named: tuple[str, ...]  # every thread the finding names, by name (barrier divergence: those that miss it)


@dataclass(frozen=True)
class KindEntry:
    """Everything about one kind of finding that is the same for all its findings."""

    kind: FindingKind
    #: The one line a diagram and the explorer show for a finding ('race on out[3]: ...').
    summary: Callable[[Finding, SiteWords], str]
    #: What the kernel would do, after 'it would' in a verdict ('write out[4] from two threads').
    verb: Callable[[Finding], str]
    #: The advice every report of this kind ends with, or None where the report's advice depends
    #: on the cause or on who reads it and comes from ``advice.py`` (races, uninitialised reads...).
    fix: str | None
    element: ElementMark
    threads: ThreadMark
    #: Whether the summary adds how many other threads did the same ('(and 3 other threads)').
    counts_others: bool = False


def _element(f: Finding) -> str:
    return f"{f.buffer}[{f.index}]" if f.buffer is not None and f.index is not None else "an element"


def _at(f: Finding) -> str:
    return f" at line {f.pos.line}" if f.pos is not None else ""


def _phase(f: Finding) -> str:
    return f" in phase {f.phase}" if f.phase is not None else ""


def _elements(count: int | None) -> str:
    return f"{count} element{'s' if count != 1 else ''}"


#: A race's two accesses, as the summary words them: (this thread's, the other thread's).
_RACE_VERBS: dict[RaceKind | None, tuple[str, str]] = {RaceKind.READ_AFTER_WRITE: ("reads", "writes"), RaceKind.WRITE_AFTER_READ: ("writes", "reads"),
               RaceKind.WRITE_AFTER_WRITE: ("writes", "writes")}


def _race_summary(f: Finding, w: SiteWords) -> str:
    mine, theirs = _RACE_VERBS.get(f.race, ("touches", "touches"))
    why = "from another threadgroup, which no barrier can order" if w.apart else "with no barrier between"
    line = f.pos.line if f.pos is not None else None
    other_line = f.other_pos.line if f.other_pos is not None else None
    return (f"race on {_element(f)}{'' if w.apart else _phase(f)}: {w.who} {mine} it (line {line}) while {w.them} "
            f"{theirs} it (line {other_line}), {why}")


def _barrier_summary(f: Finding, w: SiteWords) -> str:
    more = " (and others)" if len(f.threads) >= 8 else ""
    reach = "reaches" if len(f.threads) == 1 else "reach"
    return f"barrier divergence{_at(f)}{_phase(f)}: {', '.join(w.named)}{more} never {reach} the barrier"


FINDING_KINDS: dict[FindingKind, KindEntry] = {e.kind: e for e in (
    KindEntry(
        FindingKind.OUT_OF_BOUNDS,
        summary=lambda f, w: f"out of bounds: {w.who} {w.access} {_element(f)}{_at(f)}",
        verb=lambda f: f"access {_element(f)}, out of bounds",
        fix=None,  # a wrapped unsigned index, a loop bound: advice.py explains the index
        element=ElementMark.GHOST, threads=ThreadMark.RINGED_ALL, counts_others=True),
    KindEntry(
        FindingKind.MISALIGNED,
        summary=lambda f, w: f"misaligned access: {w.who} accesses {f.buffer} at a misaligned address{_at(f)}",
        verb=lambda f: f"access {f.buffer} at a misaligned address",
        fix=("let the cast land only on byte offsets that are a multiple of that alignment, or read the bytes one "
             "by one through the byte pointer and combine them (b[0] | b[1] << 8 | ...)"),
        element=ElementMark.RING, threads=ThreadMark.RINGED),
    KindEntry(
        FindingKind.RACE,
        summary=_race_summary,
        verb=lambda f: (f"write {_element(f)} from two threads" if f.race == RaceKind.WRITE_AFTER_WRITE
                        else f"race on {_element(f)}"),
        fix=None,  # where the barrier goes, atomics by host API and reader: advice.py
        element=ElementMark.RING, threads=ThreadMark.RINGED),
    KindEntry(
        FindingKind.BARRIER_DIVERGENCE,
        summary=_barrier_summary,
        verb=lambda f: "let some threads of a threadgroup skip a barrier",
        fix=None,  # a branch or a loop whose iterations differ by thread: advice.barrier_divergence_fix
        element=ElementMark.RING, threads=ThreadMark.STRUCK),
    KindEntry(
        FindingKind.SIMDGROUP_DIVERGENCE,
        summary=lambda f, w: (f"SIMD-group divergence{_at(f)}: the SIMD-group of {w.who} runs a SIMD-group matrix "
                              f"operation without all {SIMD_WIDTH} of its threads"),
        verb=lambda f: f"run a SIMD-group matrix operation without all {SIMD_WIDTH} threads of a SIMD-group",
        fix="keep them out of branches that split a SIMD-group",
        element=ElementMark.RING, threads=ThreadMark.RINGED),
    KindEntry(
        FindingKind.UNINITIALIZED_READ,
        summary=lambda f, w: f"uninitialised read: {w.who} reads {_element(f)}{_at(f)} before any thread wrote it",
        verb=lambda f: f"read {_element(f)} before any thread wrote it",
        fix=None,  # by where the memory lives and who launches: advice.uninitialized_fix
        element=ElementMark.RING, threads=ThreadMark.RINGED, counts_others=True),
    KindEntry(
        FindingKind.UNWRITTEN_OUTPUT,
        summary=lambda f, w: f"{_elements(f.count)} of {f.buffer} never written, from {_element(f)} on",
        verb=lambda f: f"leave {_elements(f.count)} of {f.buffer} unwritten",
        fix="Make sure some thread writes every element",
        element=ElementMark.UNWRITTEN, threads=ThreadMark.NONE),
    KindEntry(
        FindingKind.DIVISION_BY_ZERO,
        summary=lambda f, w: f"division by zero: {w.who}{_at(f)}",
        verb=lambda f: "divide by zero",
        fix=("test the divisor before dividing ('d != 0 ? x / d : v', with v what a thread whose divisor is zero "
             "should get), or make sure no thread's divisor can be zero"),
        element=ElementMark.RING, threads=ThreadMark.RINGED),
    KindEntry(
        FindingKind.STEP_BUDGET,
        summary=lambda f, w: f"{w.who} never leaves the loop{_at(f)}" if w.located else
        f"the kernel did not finish{_at(f)}",
        verb=lambda f: "not finish",
        fix=None,  # by who reads it: advice.step_budget_advice
        element=ElementMark.RING, threads=ThreadMark.RINGED),
)}


def kind_entry(kind: FindingKind) -> KindEntry:
    """The registry's entry for ``kind``."""
    return FINDING_KINDS[FindingKind(kind)]


__all__ = ["FINDING_KINDS", "KindEntry", "SiteWords", "ElementMark", "ThreadMark", "kind_entry"]
