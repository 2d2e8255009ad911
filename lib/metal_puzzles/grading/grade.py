"""Grading a class: find the submissions, read each in a worker, check each kernel, journal each
student as they finish, and score.

This module is the grading logic only. Running tasks is a ``TaskRunner``'s job (``pool.py``
here), writing files is ``output.py``'s, the journal is ``journal.py``'s.
"""

from __future__ import annotations

import functools
import secrets
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict
from pathlib import Path

from tqdm import tqdm

from ..checking import WiredPuzzle
from ..checking.wording import REPORT_WIDTH
from ..puzzles import PUZZLES
from ..version import __version__
from . import pool
from .extract import NotebookKernels
from .grading_cost import RunCost
from .ids import assign_ids, load_mapping
from .journal import Journal, RunSettings
from .limits import Limits
from .output import OutputError, write_outputs
from .points import PointsConfig
from .record_size import bound_issues, bound_record
from .results import GradeRun, Student, StudentStatus, UncheckedStatus
from .safe_text import report_file_name
from .submissions import DEFAULT_MAX_NOTEBOOK_BYTES, Submission, collect_submissions
from .task_backend import Outcome, TaskOutcome, TaskRunner
from .tasks import CheckTask, ReadTask, WiredTask, content_key

__all__ = ["GradeRun", "Student", "UncheckedStatus", "StudentStatus", "grade_submissions", "write_outputs",
           "collect_notebooks", "load_mapping", "new_seed"]


def new_seed() -> int:
    """A fresh seed for the hidden tests: unpredictable, so the hidden values cannot be rebuilt
    from the installed package before the run."""
    return secrets.randbelow(2**31)


# ---------------------------------------------------------------------------- finding students
def collect_notebooks(paths: Sequence[str | Path], max_bytes: int = DEFAULT_MAX_NOTEBOOK_BYTES
                      ) -> tuple[list[Submission], list[str]]:
    """The submissions named on the command line, or found (recursively) in named directories."""
    return collect_submissions(paths, max_bytes)


def students_of(submissions: list[Submission], mapping: dict[str, str]) -> tuple[list[Student], list[str]]:
    """A student per submission, each with a unique id (``ids.assign_ids``), and problems with
    the mapping."""
    assigned, problems = assign_ids(submissions, mapping)
    width = max(3, len(str(len(submissions))))
    students = [Student(seq, a.id, sub, list(a.issues), report=report_file_name(seq, a.id, width))
                for seq, (sub, a) in enumerate(zip(submissions, assigned, strict=True), start=1)]
    return students, problems


# ---------------------------------------------------------------------------- tasks
def _not_graded(status: UncheckedStatus, reason: str) -> dict:
    said = "Not attempted" if status is UncheckedStatus.NOT_ATTEMPTED else "Not graded"
    return {"status": status.value, "passed": False, "correct": False, "reason": reason,
            "report": f"{said}: {reason}.", "tests": []}


def kernel_tasks(st: Student, nb: NotebookKernels, seed: int,
                 report_width: int | None = REPORT_WIDTH, only: frozenset[str] | None = None
                 ) -> list[CheckTask | WiredTask]:
    """One task per kernel (the puzzles that share a kernel are checked together) and one per
    finale entry; puzzles without a kernel to grade are marked missing here. ``report_width``:
    where the reports' prose is broken (None: one line a paragraph). ``only``: the puzzles to
    check (``check --puzzle``); the others are marked not checked, and no task runs for them."""
    tasks: list[CheckTask | WiredTask] = []
    by_kernel: dict[str, list[str]] = {}
    for p in PUZZLES:
        if only is not None and p.id not in only:
            st.puzzles[p.id] = _not_graded(UncheckedStatus.NOT_CHECKED, "check was asked about another puzzle")
            continue
        if isinstance(p, WiredPuzzle):
            task = _wired_task(st, nb, p, seed, report_width)
            if task is not None:
                tasks.append(task)
            continue
        by_kernel.setdefault(p.kernel_name, []).append(p.id)
    for kname, pids in by_kernel.items():
        k = nb.kernels.get(kname)
        if k is None or k.source is None:
            reason = (f"no MetalKernel named '{kname}' was found" if k is None
                      else k.problem or "its source could not be read")
            for pid in pids:
                st.puzzles[pid] = _not_graded(UncheckedStatus.MISSING, reason)
            continue
        if is_template(kname, k.source, k.header):
            for pid in pids:
                st.puzzles[pid] = _not_graded(UncheckedStatus.NOT_ATTEMPTED, NOT_ATTEMPTED_REASON)
            continue
        tasks.append(CheckTask(f"{st.seq}:kernel:{kname}", st.seq, tuple(pids), k.source, k.header or None,
                               k.input_names, k.output_names, seed, report_width))
    return tasks


NOT_ATTEMPTED_REASON = "the kernel is the book's template, unchanged"


def _normalised(source: str) -> str:
    return " ".join(source.split())


@functools.cache
def _templates() -> dict[str, frozenset[tuple[str, str]]]:
    """Each kernel's templates, body and header (puzzles sharing a kernel may hand out different
    ones), whitespace normalised: a learner's editor may re-indent or strip trailing spaces."""
    found: dict[str, set[tuple[str, str]]] = {}
    for p in PUZZLES:
        if not isinstance(p, WiredPuzzle):
            found.setdefault(p.kernel_name, set()).add((_normalised(p.template), _normalised(p.header)))
    return {name: frozenset(t) for name, t in found.items()}


def is_template(kernel_name: str, source: str, header: str | None = None) -> bool:
    """Whether ``source`` is the book's template for ``kernel_name``, up to whitespace, with the
    template's header or none: a learner whose answer is in the header (a constant chosen) attempted it."""
    body, head = _normalised(source), _normalised(header or "")
    return any(body == b and head in ("", h) for b, h in _templates().get(kernel_name, frozenset()))


def _wired_task(st: Student, nb: NotebookKernels, puzzle: WiredPuzzle, seed: int,
                report_width: int | None) -> WiredTask | None:
    """A finale entry is the learner's Python wiring kernels together (into mx.custom_function in
    Part II, into a model's decode step in Part V); the grader never runs that Python. It takes the
    learner's kernels from the notebook, wires them the reference way and runs the entry's check
    (``WiredPuzzle.check_wired``). An entry whose kernels are all the book's templates is not
    attempted; one whose kernel is missing says which."""
    wired = [nb.kernels.get(name) for name in puzzle.kernels]
    if all(k is not None and k.source is not None and is_template(name, k.source, k.header)
           for name, k in zip(puzzle.kernels, wired, strict=True)):
        st.puzzles[puzzle.id] = _not_graded(UncheckedStatus.NOT_ATTEMPTED, "the kernels it wires are the book's "
                                            "templates, unchanged")
        return None
    kernels = {}
    for name in puzzle.kernels:
        k = nb.kernels.get(name)
        if k is None or k.source is None:
            st.puzzles[puzzle.id] = _not_graded(UncheckedStatus.MISSING, f"it wires kernel '{name}', which " +
                                                ("was not found" if k is None else f"could not be read: {k.problem}"))
            return None
        kernels[name] = {"source": k.source, "header": k.header or None, "input_names": k.input_names,
                         "output_names": k.output_names}
    return WiredTask(f"{st.seq}:wired:{puzzle.id}", st.seq, puzzle.id, kernels, seed, report_width)


def _kernel_names(only: frozenset[str] | None = None) -> tuple[str, ...]:
    """The kernels a notebook is read for: those of every puzzle, or of the puzzles ``only``."""
    names: set[str] = set()
    for p in PUZZLES:
        if only is None or p.id in only:
            names.update(p.kernels if isinstance(p, WiredPuzzle) else (p.kernel_name,))
    return tuple(sorted(names))


# ---------------------------------------------------------------------------- the run
class _ClassGrading:
    """The state of one run: which students wait for which tasks, and what to do with outcomes.

    Identical kernel checks are run once: students converge on the same answers (and copy them),
    and a check's result depends only on its content (``tasks.content_key``) and the run's
    settings. The first student's task runs; a later student with the same content waits for it,
    or takes its result at once if it has finished. Grader faults are not shared with students
    who come later: their check is run again.
    """

    def __init__(self, students: list[Student], seed: int, journal: Journal | None,
                 on_student: Callable[[Student], None] | None, cost: RunCost,
                 report_width: int | None = REPORT_WIDTH, only: frozenset[str] | None = None) -> None:
        self.by_seq = {st.seq: st for st in students}
        self.only = only  # the puzzles to check (check --puzzle); None: every one
        self.seed = seed
        self.report_width = report_width
        self.journal = journal
        self.on_student = on_student
        self.cost = cost
        self.waiting: dict[int, int] = {}  # student seq -> tasks not finished
        self.running: dict[str, list[int]] = {}  # content key -> students waiting for that check
        self.finished: dict[str, TaskOutcome] = {}  # content key -> its outcome, to share

    def start(self, runner: TaskRunner, students: list[Student], max_bytes: int) -> None:
        names = _kernel_names(self.only)
        for st in students:
            sub = st.submission
            if sub.problem is not None:  # not readable
                st.notebook_issues.append(sub.problem)
                self._all(st, UncheckedStatus.MISSING, "the notebook was not read")
                self.finish(st)
                continue
            runner.submit(ReadTask(f"{st.seq}:read", st.seq, sub.real, sub.device, sub.inode, max_bytes, names,
                                   sha256=sub.sha256))
            self.waiting[st.seq] = 1

    def handle(self, runner: TaskRunner, o: TaskOutcome) -> None:
        self.cost.record(o)
        if isinstance(o.task, ReadTask):
            st = self.by_seq[o.task.student]
            self._read(runner, st, o)
            self._done_one(st)
            return
        key = content_key(o.task)
        if o.outcome is not Outcome.GRADER_FAULT:
            self.finished[key] = o
        for seq in self.running.pop(key, [o.task.student]):
            st = self.by_seq[seq]
            self._checked(st, o)
            self._done_one(st)

    def _done_one(self, st: Student) -> None:
        self.waiting[st.seq] -= 1
        if self.waiting[st.seq] == 0:
            self.finish(st)

    def _check(self, runner: TaskRunner, st: Student, task: CheckTask | WiredTask) -> None:
        """Have ``task`` checked for ``st``, or share an identical check's result."""
        self.cost.kernel_checks += 1
        key = content_key(task)
        done = self.finished.get(key)
        if done is not None:
            self.cost.shared += 1
            self._checked(st, done)
            return
        self.waiting[st.seq] += 1
        if key in self.running:
            self.cost.shared += 1
            self.running[key].append(st.seq)
            return
        self.cost.unique_kernels += 1
        self.running[key] = [st.seq]
        runner.submit(task)

    def _read(self, runner: TaskRunner, st: Student, o: TaskOutcome) -> None:
        if o.outcome is Outcome.GRADER_FAULT:
            self._all(st, UncheckedStatus.GRADER_FAULT, o.reason)
            return
        if o.outcome is Outcome.LIMIT:
            st.notebook_issues.append(f"the notebook could not be read: reading it {o.reason}")
            self._all(st, UncheckedStatus.MISSING, "the notebook could not be read")
            return
        nb = o.value
        st.notebook_issues.extend(bound_issues(nb.issues))
        if not nb.readable:
            self._all(st, UncheckedStatus.MISSING, "the notebook could not be read")
            return
        for task in kernel_tasks(st, nb, self.seed, self.report_width, self.only):
            self._check(runner, st, task)

    def _checked(self, st: Student, o: TaskOutcome) -> None:
        assert not isinstance(o.task, ReadTask), "a read task's outcome goes to _read"
        if o.outcome is Outcome.DONE:
            # Copies: a shared result is scored per student (``score`` writes into it).
            st.puzzles.update({pid: dict(summary) for pid, summary in o.value.items()})
            return
        status = UncheckedStatus.ERROR if o.outcome is Outcome.LIMIT else UncheckedStatus.GRADER_FAULT
        reason = f"the kernel {o.reason}" if o.outcome is Outcome.LIMIT else o.reason
        for pid in o.task.puzzles:
            st.puzzles[pid] = _not_graded(status, reason)

    def _all(self, st: Student, status: UncheckedStatus, reason: str) -> None:
        for p in PUZZLES:
            st.puzzles.setdefault(p.id, _not_graded(status, reason))

    def finish(self, st: Student) -> None:
        self._all(st, UncheckedStatus.MISSING, "not graded")  # defensive: every puzzle gets a row
        bound_record(st.puzzles, st.notebook_issues)  # before it is journalled, written or reported
        if self.journal is not None:
            record = {"file": st.submission.key, "sha256": st.submission.sha256, "complete": st.complete,
                      "issues": st.notebook_issues, "puzzles": st.puzzles}
            try:
                self.journal.append(record)
            except OSError as exc:
                raise OutputError(f"cannot write the journal {self.journal.path}: {exc.strerror or exc}") from None
        if self.on_student is not None:
            self.on_student(st)


def _reuse(st: Student, journal: Journal | None) -> bool:
    """Take a student's result from the journal of an interrupted run, if their file is unchanged
    and their grading completed (grader faults are tried again)."""
    record = journal.records.get(st.submission.key) if journal is not None else None
    if record is None or not st.submission.readable or record.get("sha256") != st.submission.sha256:
        return False
    if not record.get("complete") or not isinstance(record.get("puzzles"), dict):
        return False
    st.notebook_issues = list(record.get("issues") or [])
    st.puzzles = {pid: dict(s) for pid, s in record["puzzles"].items()}
    return True


def score(st: Student, config: PointsConfig) -> None:
    for p in PUZZLES:
        s = st.puzzles[p.id]
        # A grader fault is not the student's failure: no points either way until regraded.
        s["points"] = None if s.get("status") == UncheckedStatus.GRADER_FAULT else config.score(p.id, s)
        s["max_points"] = config.max_points(p.id)


def grade_submissions(paths: Sequence[str | Path], *, config: PointsConfig | None = None,
                      mapping: dict[str, str] | None = None, limits: Limits | None = None,
                      workers: int | None = None, seed: int | None = None, progress: bool = True,
                      max_notebook_bytes: int = DEFAULT_MAX_NOTEBOOK_BYTES, journal: Journal | None = None,
                      runner: TaskRunner | None = None,
                      collected: tuple[list[Submission], list[str]] | None = None,
                      runner_name: str | None = None, names: dict[str, str] | None = None,
                      lms_ids: dict[str, dict[str, str]] | None = None, report_width: int | None = REPORT_WIDTH,
                      only: Collection[str] | None = None) -> GradeRun:
    """Grade every notebook under ``paths``.

    ``seed`` picks the hidden tests (random when None; a resumed ``journal``'s own otherwise).
    With a ``journal``, each student is recorded as they finish, and students it already holds
    (unchanged, complete) are not graded again. ``runner`` defaults to worker processes here.
    Raises ``OutputError`` if the journal cannot be written, ``RunnerStopped`` if no worker can
    run; whatever was journalled stays. ``collected`` is what ``collect_notebooks`` returned for
    ``paths``, when the caller has it already; ``runner_name`` says what ``runner`` is in the cost
    report; ``names`` gives students' names by id (a roster's), ``lms_ids`` their LMS identities.
    ``report_width``: where reports' prose is broken, as the written outputs keep it; None
    (``check``): one line a paragraph, which the console folds to its own width
    (``console.print_check``). ``only``: the ids of the
    puzzles to check (``check --puzzle``): no other puzzle's kernel is read or run, and each other
    puzzle is marked not checked.
    """
    start = time.monotonic()
    config = config or PointsConfig()
    limits = limits or Limits()
    if journal is not None:
        seed = journal.settings.seed
    elif seed is None:
        seed = new_seed()
    submissions, problems = collected if collected is not None else collect_notebooks(paths, max_notebook_bytes)
    students, id_problems = students_of(submissions, mapping or {})
    for st in students:  # ``names``: student id -> name, from a roster
        st.name = (names or {}).get(st.id, "")
        st.lms = dict((lms_ids or {}).get(st.id, {}))
    problems = problems + id_problems
    todo = [st for st in students if not _reuse(st, journal)]
    bar = _progress_bar(len(todo)) if progress and todo else None
    if runner is None:
        runner = pool.ProcessPoolRunner(limits, workers)
        runner_name = f"{runner.size} local worker process(es)"
    cost = RunCost(runner=runner_name or type(runner).__name__, students=len(students), graded=len(todo),
                   puzzles=len(PUZZLES))
    grading = _ClassGrading(students, seed, journal, (lambda st: bar.update(1)) if bar else None, cost,
                            report_width, None if only is None else frozenset(only))
    try:
        grading.start(runner, todo, max_notebook_bytes)
        for outcome in runner.outcomes():
            grading.handle(runner, outcome)
    finally:
        runner.close()
        if bar is not None:
            bar.close()
    for st in students:
        score(st, config)
    settings = asdict(RunSettings(seed, limits.max_steps, _version()))
    settings.update(timeout_seconds=limits.wall_seconds, read_timeout_seconds=limits.read_seconds,
                    memory_mib=limits.memory_bytes // 2**20, max_notebook_mib=max_notebook_bytes / 2**20)
    cost.wall_seconds = time.monotonic() - start
    return GradeRun(students, config, seed, settings, problems, cost.wall_seconds,
                    reused=len(students) - len(todo), cost=cost)


def _version() -> str:
    return __version__


def _progress_bar(total: int):
    return tqdm(total=total, desc="grading notebooks", unit="notebook", leave=False)
