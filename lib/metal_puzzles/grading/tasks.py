"""The units of grading work, and how a worker runs one.

Three kinds of task, all plain picklable data, so any backend (worker processes here, a cluster
later) can run them: reading a notebook (``ReadTask``), checking one kernel against the puzzles
that use it (``CheckTask``), and checking a finale entry from the kernels it wires
(``WiredTask``). ``run_task`` runs one in the current process and returns its value; a failure
that is the submission's (a kernel out of memory) raises ``SubmissionLimit``; anything else that
escapes is the grader's fault.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from ..checking import CheckResult, WiredPuzzle, check_kernel_sources, check_source
from ..checking.wording import REPORT_WIDTH
from ..puzzles import get_puzzle, solution_source
from .extract import NotebookKernels, extract_from_bytes
from .limits import Limits
from .record_size import bound_summary
from .submissions import open_regular, read_bounded

#: Findings kept per test and characters kept per report: a kernel with a finding on every
#: thread must not make a result (and the gradebook) as large as its launch.
MAX_FINDINGS_PER_TEST = 10
MAX_REPORT_CHARS = 20_000


class SubmissionLimit(Exception):
    """The submission exceeded a limit (memory, nesting) while its task ran: its own failure."""


class NotebookChanged(Exception):
    """The notebook's content is not what the run found: it is not graded now (neither the
    student's failure nor a result to keep), and --resume grades it again."""


@dataclass(frozen=True)
class ReadTask:
    """Read one notebook file and extract the kernels named ``kernel_names``."""

    task_id: str
    student: int
    path: str  # the resolved path, checked by ``submissions.examine``
    device: int
    inode: int
    max_bytes: int
    kernel_names: tuple[str, ...]
    #: The file's bytes, read by the caller (a cluster's workers cannot open our files); None: read here.
    data: bytes | None = None
    #: The content's hash when the run found it: what is read must be that content.
    sha256: str = ""

    def time_limit(self, limits: Limits) -> float:
        return limits.read_seconds


@dataclass(frozen=True)
class CheckTask:
    """Check one kernel against every puzzle that uses it (visible and hidden tests)."""

    task_id: str
    student: int
    puzzles: tuple[str, ...]
    source: str
    header: str | None
    input_names: list[str] | None
    output_names: list[str] | None
    seed: int
    #: Where the report's prose is broken (``CheckResult.report``); None: one line a paragraph,
    #: for ``check``, which prints it folded to the terminal's width.
    report_width: int | None = REPORT_WIDTH

    def time_limit(self, limits: Limits) -> float:
        return limits.wall_seconds


@dataclass(frozen=True)
class WiredTask:
    """Check a finale entry: the learner's kernels wired the reference way, then the entry's own
    check (values and gradients in Part II, a decode step's prompts in Part V)."""

    task_id: str
    student: int
    puzzle: str
    kernels: dict[str, dict[str, Any]] = field(default_factory=dict)
    seed: int = 0
    report_width: int | None = REPORT_WIDTH  # as CheckTask's

    @property
    def puzzles(self) -> tuple[str, ...]:
        return (self.puzzle,)

    def time_limit(self, limits: Limits) -> float:
        return limits.wall_seconds


Task = ReadTask | CheckTask | WiredTask

#: Fields that say whose task it is, not what it computes.
_IDENTITY_FIELDS = ("task_id", "student")


def content_key(task: CheckTask | WiredTask) -> str:
    """What a kernel task's result depends on (besides the run's limits, the same for every task
    of a run): its puzzles, sources, headers, names and seed. Two tasks with the same key give the
    same result, so a run checks each key once and shares the result."""
    fields = {k: v for k, v in asdict(task).items() if k not in _IDENTITY_FIELDS}
    text = json.dumps([type(task).__name__, fields], sort_keys=True, ensure_ascii=True, default=list)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def run_task(task: Task, limits: Limits) -> Any:
    """Run one task here. ReadTask -> NotebookKernels; the others -> {puzzle id: summary}."""
    try:
        if isinstance(task, ReadTask):
            return _read(task)
        if isinstance(task, CheckTask):
            return _check(task, limits)
        if isinstance(task, WiredTask):
            return _wired(task, limits)
    except MemoryError:
        raise SubmissionLimit(f"used more memory than allowed ({limits.memory_bytes // 2**20} MiB)") from None
    except RecursionError:
        raise SubmissionLimit("is nested too deeply to handle") from None
    raise TypeError(f"not a grading task: {type(task).__name__}")


def read_notebook_bytes(task: ReadTask) -> bytes:
    """The notebook's bytes, from the very file ``submissions.examine`` checked, at most
    ``max_bytes``; raises ``SubmissionLimit`` if it cannot be read."""
    try:
        fd = open_regular(task.path, task.device, task.inode, task.max_bytes, same_file=not task.sha256)
        try:
            data = read_bounded(fd, task.max_bytes)
        finally:
            os.close(fd)
    except OSError as exc:
        raise SubmissionLimit(f"failed: {exc.strerror or exc}") from None
    # The same content under a new inode (a copy put back) is the same submission.
    if task.sha256 and hashlib.sha256(data).hexdigest() != task.sha256:
        raise NotebookChanged("the notebook changed while the class was graded; run the same command with "
                              "--resume to grade it as it is now")
    return data


def _read(task: ReadTask) -> NotebookKernels:
    raw = task.data if task.data is not None else read_notebook_bytes(task)
    return extract_from_bytes(raw, task.path, task.kernel_names)


def _check(task: CheckTask, limits: Limits) -> dict[str, dict]:
    out = {}
    for pid in task.puzzles:
        result = check_source(get_puzzle(pid), task.source, task.header, input_names=task.input_names,
                              output_names=task.output_names, seed=task.seed, max_steps=limits.max_steps)
        out[pid] = summarize(result, task.report_width)
    return out


def _wired(task: WiredTask, limits: Limits) -> dict[str, dict]:
    puzzle = get_puzzle(task.puzzle)
    if not isinstance(puzzle, WiredPuzzle):
        raise TypeError(f"a wired task names {task.puzzle!r}, which is not a finale entry")
    result = check_kernel_sources(puzzle, task.kernels, seed=task.seed,
                                  max_steps=limits.max_steps)
    return {task.puzzle: summarize(result, task.report_width)}


def summarize(result: CheckResult, report_width: int | None = REPORT_WIDTH) -> dict:
    """A JSON-ready record of a check (a kernel puzzle's or a finale entry's): status, every test,
    finding and count, the notes of tests beyond the visible test's structure, bounded in size;
    its report's prose broken at ``report_width`` (None: one line a paragraph)."""
    tests = []
    for o in result.outcomes:
        findings = list(o.findings)
        tests.append({
            "label": o.case.label,
            "grid": list(o.case.grid),
            "threadgroup": list(o.case.threadgroup),
            "status": o.status,
            "error": _clip(o.error) if o.error else o.error,
            # A run that did not finish has no counts worth judging (issue 22).
            "counts_max": None if o.stopped is not None else o.counts_max,
            "mismatches": None if o.mismatch is None else int(o.mismatch.sum()),
            # Conditions this test poses beyond the visible test's: its failure is a note, not a failure.
            "beyond_contract": list(o.case.beyond),
            "findings_total": len(findings),
            "findings": [{
                "kind": f.kind, "severity": f.severity, "message": _clip(f.message),
                "line": f.pos.line if f.pos else None, "file": f.pos.file if f.pos else None,
                "threads": [{k: list(v) for k, v in t.items()} for t in f.threads[:2]],
                "buffer": f.buffer, "index": f.index,
            } for f in findings[:MAX_FINDINGS_PER_TEST]],
        })
    summary = {
        "status": result.status,
        "passed": result.passed,
        "correct": result.correct,
        "within_budget": result.within_budget,
        "over_budget": result.over_budget,
        "counts_max": result.counts_max,
        "budget": result.budget.limits(),
        "tests": tests,
        "notes": [_clip(n) for n in result.notes],
        # What the sanitizer notes (benign races): never counted, but shown by show() and check().
        "sanitizer_notes": [_clip(n) for n in result.sanitizer_notes],
        "report": _clip(result.report(report_width)),
    }
    return bound_summary(summary)


def _clip(text: str) -> str:
    if len(text) <= MAX_REPORT_CHARS:
        return text
    return text[:MAX_REPORT_CHARS] + f"\n... ({len(text) - MAX_REPORT_CHARS} more characters not shown)"


def warm_up(limits: Limits) -> None:
    """Import and exercise everything a task uses, so that a task's time limit measures the task
    and not the worker's start (importing NumPy and MLX, compiling the simulator's prelude)."""
    # One code cell, so that reading it imports IPython's input transformation here, not in a task.
    extract_from_bytes(b'{"cells": [{"cell_type": "code", "source": "x = 1"}]}', "<warm-up>")
    puzzle = get_puzzle("map")
    _check(CheckTask("warm-up", -1, (puzzle.id,), solution_source(puzzle), puzzle.header, None, None, 0), limits)
