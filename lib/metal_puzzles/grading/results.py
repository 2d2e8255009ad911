"""What a grading run found: each student's puzzles, issues and total, and the run as a whole.

Plain data, importing nothing of the grader: ``grade`` fills it in, ``report`` turns it into
text, ``output`` writes that text, ``console`` and ``gradescope`` show it. The arrows go one way
(grade -> output -> report -> results), checked by an import-linter contract in pyproject.toml.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..compat import StrEnum
from ..puzzles import PUZZLES
from .grading_cost import RunCost
from .points import PointsConfig
from .submissions import Submission


class UncheckedStatus(StrEnum):
    """What the grader says of a puzzle it did not check, or whose check gave no verdict. A
    checked puzzle's status is its verdict, ``checking.PuzzleStatus`` (passed, wrong, ...); the
    grader's status column holds one or the other, and no value is both."""

    MISSING = "missing"  # no kernel to grade (the notebook's fault)
    #: The kernel is the book's template, unchanged: not checked (a template fails by design, and
    #: its findings or a detective's race would read as a wrong attempt).
    NOT_ATTEMPTED = "not-attempted"
    ERROR = "error"  # stopped at a limit: time or memory (the kernel's fault)
    GRADER_FAULT = "grader-fault"  # the grader failed; not scored, not the student's fault
    #: ``check --puzzle`` asked about another puzzle: this one was not looked at (never written
    #: to a class's results: ``grade`` checks every puzzle).
    NOT_CHECKED = "not-checked"


class StudentStatus(StrEnum):
    COMPLETE = "complete"
    INCOMPLETE = "incomplete"  # some puzzle had a grader fault


@dataclass
class Student:
    seq: int
    id: str
    submission: Submission
    id_issues: list[str] = field(default_factory=list)  # about the id (duplicates)
    notebook_issues: list[str] = field(default_factory=list)  # about the file and its content
    puzzles: dict[str, dict] = field(default_factory=dict)  # puzzle id -> summary (+ points)
    report: str = ""  # the report's file name
    #: The file changed while it was graded: its result is not kept by --resume (graded again).
    unsettled: bool = False
    name: str = ""  # the student's name, where the roster (--mapping) gives one
    #: The LMS identities the roster gives (``gradebook.LmsId`` -> value): each goes back in its column.
    lms: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return self.submission.path

    @property
    def issues(self) -> list[str]:
        return self.id_issues + self.notebook_issues

    @property
    def complete(self) -> bool:
        return not self.unsettled and not any(s.get("status") == UncheckedStatus.GRADER_FAULT
                                              for s in self.puzzles.values())

    @property
    def status(self) -> str:
        return (StudentStatus.COMPLETE if self.complete else StudentStatus.INCOMPLETE).value

    @property
    def total(self) -> float:
        return round(sum(p.get("points") or 0.0 for p in self.puzzles.values()), 4)


@dataclass
class GradeRun:
    students: list[Student]
    config: PointsConfig
    seed: int
    settings: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # about the command's arguments
    seconds: float = 0.0
    reused: int = 0  # students whose results came from the journal of an earlier run
    cost: RunCost = field(default_factory=RunCost)

    @property
    def max_total(self) -> float:
        return sum(self.config.max_points(p.id) for p in PUZZLES)

    @property
    def complete(self) -> bool:
        return all(st.complete for st in self.students)
