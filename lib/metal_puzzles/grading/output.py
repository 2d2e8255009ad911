"""The output folder: checked before grading starts, written so that nothing is ever half-written.

- ``prepare_out`` refuses an ``--out`` that is a file, cannot be created or written, or lacks the
  space a class needs, before any grading. A folder that already holds a result set is refused
  too, unless the run resumes it (``--resume``) or replaces it (``--force``). A replaced set is
  not removed first: each file stays until its replacement is written (an interrupted or failed
  ``--force`` leaves the previous results whole), and ``reports/`` is swapped as a folder, so no
  stale report stays beside new ones.
- Every file is written to a temporary file in the same folder, synced, and renamed over the old
  one; the reports are written to a fresh folder that replaces ``reports/`` in one rename. A
  failure (a full disk) leaves the previous file in place, and the journal keeps every student.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .changes import GradeChange, grade_changes, now_utc
from .gradebook import GRADEBOOK_NAME, LMS, lms_gradebook
from .grading_cost import COST_NAME
from .journal import JOURNAL_NAME
from .own_files import atomic_write, dir_mode
from .report import REPORTS_DIR, gradebook_csv, results_json, student_report
from .results import GradeRun
from .results_file import RESULTS_NAME
from .safe_text import printable
from .submissions import describe_kind
from .summary import SUMMARY_MD, SUMMARY_SVG, class_summary_md, class_summary_svg

GRADES_NAME = "grades.csv"
#: The files and folders of one result set (what ``--force`` removes).
RESULT_SET = (GRADES_NAME, RESULTS_NAME, COST_NAME, REPORTS_DIR, JOURNAL_NAME, GRADEBOOK_NAME, SUMMARY_MD,
              SUMMARY_SVG)

#: Space to ask for before grading: a student's journal line, record and report together take
#: up to a few hundred KiB when every kernel fails with findings (benchmarks/bench_hostile.py).
BYTES_PER_STUDENT = 2**20
BYTES_BASE = 16 * 2**20


class OutputError(Exception):
    """The output folder cannot be used or written; the message says what to do."""


def _explain(exc: OSError) -> str:
    return exc.strerror or str(exc)


def check_apart(out: Path, submissions: list[str], files: list[str]) -> None:
    """Refuse an ``--out`` inside a submissions folder (results written among, and ``--force``
    removing, a student's own files: their ``reports/`` folder, say), or one whose result-set
    names hold a submission. Raises ``OutputError``."""
    target = os.path.realpath(out)
    for sub in submissions:
        if os.path.isdir(sub):
            root = os.path.realpath(sub)
            if target == root or _within(target, root):
                raise OutputError(f"--out {printable(out)} is inside the submissions folder {printable(sub)}: grading would write among "
                                  "(and --force remove) the students' files; choose a folder outside it")
    owned = [os.path.join(target, name) for name in RESULT_SET]
    for f in files:
        real = os.path.realpath(f)
        if any(real == o or _within(real, o) for o in owned):
            raise OutputError(f"the submission {printable(f)} lies in what --out {printable(out)} uses for its results; "
                              "choose another "
                              "--out")


def _within(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False


def prepare_out(out: Path, *, students: int, resume: bool = False, force: bool = False) -> None:
    if out.exists() and not out.is_dir():
        raise OutputError(f"--out {out} is a file, not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the output directory {out}: {_explain(exc)}") from None
    used = [name for name in RESULT_SET if os.path.lexists(out / name)]
    if resume:
        if not (out / JOURNAL_NAME).is_file():
            raise OutputError(f"nothing to resume in {out}: it has no {JOURNAL_NAME}")
    elif used and not force:
        raise OutputError(f"{out} already holds the results of a run ({', '.join(used)}); pass --resume to "
                          "carry on with that run, or --force to replace its results")
    try:
        fd, probe = tempfile.mkstemp(dir=out, prefix=".write-test-")
        try:
            os.write(fd, b"x")
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise OutputError(f"cannot write in {out}: {_explain(exc)}") from None
    needed = BYTES_BASE + BYTES_PER_STUDENT * students
    free = shutil.disk_usage(out).free
    if free < needed:
        raise OutputError(f"only {free / 2**20:.0f} MiB free in {out}; grading {students} notebook(s) needs "
                          f"about {needed / 2**20:.0f} MiB")
    # What the run will replace must be replaceable, or it would fail (or block on a FIFO) after grading.
    # changes.csv, kept across --force and read to be added to, is ``history.check_history``'s.
    for name in used:
        problem = _unreplaceable(out / name, folder=name == REPORTS_DIR)
        if problem is not None:
            raise OutputError(f"{printable(out / name)} is {problem}, not what the grader wrote there; remove it, or "
                              "choose another --out")


def _unreplaceable(path: Path, *, folder: bool) -> str | None:
    """What ``path`` is, if a rename cannot put the grader's new file (or folder) in its place."""
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):  # a rename replaces the link itself, never what it points to
        return None
    if stat.S_ISDIR(mode):
        return None if folder else "a folder"
    if stat.S_ISREG(mode):
        return "a file" if folder else None
    return describe_kind(mode)


def _text(s: str) -> bytes:
    # Callers pass text made printable; backslashreplace is the last guard against a lone surrogate.
    return s.encode("utf-8", errors="backslashreplace")


@dataclass(frozen=True)
class Written:
    changes: list[GradeChange]  # for changes.csv (``history.record_changes`` writes it)
    left_out_of_gradebook: list[str]  # students gradebook.csv leaves out, and why


def write_outputs(run: GradeRun, out: Path, lms: LMS = LMS.CANVAS, previous: dict | None = None) -> Written:
    """Write the reports, results.json, cost.json, grades.csv and the LMS's gradebook.csv of
    ``run`` (each replaced all at once; the gradebook is made from results.json alone). The
    changes are every grade that differs from ``previous`` (``history.keep_baseline``); the
    reports name them."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        results = results_json(run)
        record = json.loads(results)
        changes = grade_changes(previous, record, now_utc()) if previous is not None else []
        _write_reports(run, out, changes)
        atomic_write(out / RESULTS_NAME, _text(results))
        atomic_write(out / COST_NAME, _text(run.cost.to_json()))
        atomic_write(out / GRADES_NAME, _text(gradebook_csv(run)))
        book = lms_gradebook(record, lms)
        atomic_write(out / GRADEBOOK_NAME, _text(book.text))
        atomic_write(out / SUMMARY_MD, _text(class_summary_md(record)))
        atomic_write(out / SUMMARY_SVG, _text(class_summary_svg(record)))
        return Written(changes, book.left_out)
    except OSError as exc:
        raise OutputError(f"cannot write the results in {out}: {_explain(exc)}") from None


def _write_reports(run: GradeRun, out: Path, changes: list[GradeChange]) -> None:
    fresh = Path(tempfile.mkdtemp(dir=out, prefix=".reports-new-"))
    try:
        os.chmod(fresh, dir_mode())  # mkdtemp's folders are 0700
        for st in run.students:
            mine = [c for c in changes if c.file == st.path]
            with open(fresh / st.report, "xb") as f:  # 'x': names are unique by construction
                f.write(_text(student_report(st, run, mine)))
        for written in fresh.iterdir():
            with open(written, "rb") as g:
                os.fsync(g.fileno())
        target = out / REPORTS_DIR
        old = None
        if os.path.lexists(target):
            old = Path(tempfile.mkdtemp(dir=out, prefix=".reports-old-"))
            os.replace(target, old / REPORTS_DIR)
        try:
            os.replace(fresh, target)
        except OSError:
            if old is not None:  # put the previous reports back
                os.replace(old / REPORTS_DIR, target)
                shutil.rmtree(old, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise
