"""What a run reports besides its outputs: findings (what a GPU would hide).

Findings are made by the executor where they happen (out-of-bounds accesses, division by zero,
barrier divergence, the step budget) and by the sanitizer (races, uninitialised reads, outputs
never written). How they reach the caller depends on the sanitize mode (``modes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...compat import StrEnum
from ..lang.errors import Pos


class FindingKind(StrEnum):
    """What a finding is about. Each kind has its one entry in ``registry.FINDING_KINDS``
    (its wording, its fix, how diagrams mark it); a test fails while one lacks it."""

    OUT_OF_BOUNDS = "out-of-bounds"
    MISALIGNED = "misaligned-access"
    RACE = "race"
    BARRIER_DIVERGENCE = "barrier-divergence"
    SIMDGROUP_DIVERGENCE = "simdgroup-divergence"  # a SIMD-group matrix operation not run by all 32 threads
    UNINITIALIZED_READ = "uninitialized-read"
    UNWRITTEN_OUTPUT = "unwritten-output"
    DIVISION_BY_ZERO = "division-by-zero"
    STEP_BUDGET = "step-budget"


class Severity(StrEnum):
    """How much a finding matters. Errors are what a GPU would get wrong; notes are true by the
    letter of the language but harmless in practice (two threads storing the same value): notes
    are shown, never raised, and never fail a check or a grade."""

    ERROR = "error"
    NOTE = "note"


class RaceKind(StrEnum):
    """The order of the two conflicting accesses of a race (the second one is reported)."""

    READ_AFTER_WRITE = "read-after-write"
    WRITE_AFTER_READ = "write-after-read"
    WRITE_AFTER_WRITE = "write-after-write"


@dataclass(frozen=True)
class FindingKey:
    """What makes two findings one: a run reports each key once (``Ctx.report``), whichever part
    of the simulator (the executor, the sanitizer) finds it and however often it happens."""

    kind: FindingKind
    pos: Pos | None
    buffer: str | None
    severity: Severity


@dataclass
class Finding:
    """Something a GPU would hide and the simulator reports."""

    kind: FindingKind
    message: str
    pos: Pos | None
    threads: list[dict] = field(default_factory=list)  # [{'grid': (x,y,z), 'group': ..., 'local': ...}]
    buffer: str | None = None
    index: int | None = None
    #: Races: the order of the two accesses, and the earlier access's position and thread.
    race: RaceKind | None = None
    other_pos: Pos | None = None
    other_thread: dict | None = None
    #: Unwritten outputs: how many elements were never written.
    count: int | None = None
    #: The barrier phase of the first thread's threadgroup when it happened (None: not one thread's doing).
    phase: int | None = None
    severity: Severity = Severity.ERROR
    #: The index in the run's step-through record of the statement that made it (its line and
    #: loop iteration; None when the run kept no record). Findings made after the kernel ended
    #: (outputs never written) have the record's end step.
    step: int | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == Severity.ERROR

    @property
    def extra(self) -> dict[str, Any]:
        """The kind-specific details, by name."""
        if self.race is not None:
            return {"race": self.race, "other_pos": self.other_pos, "other_thread": self.other_thread}
        return {"count": self.count} if self.count is not None else {}

    def __str__(self) -> str:
        where = f"{self.pos}: " if self.pos is not None else ""
        note = " (note)" if self.severity == Severity.NOTE else ""
        return f"{where}{self.kind}{note}: {self.message}"
