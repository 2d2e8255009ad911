"""Every change of a grade on record: a run that regrades a class compares its results with the
results the history was last brought up to (``history.py`` keeps them until the changes are
written), and adds one row per puzzle whose points or status changed to ``changes.csv``: when,
who, which puzzle, old and new points and status, and why (the notebook changed, a new seed, a new
points file, other grader settings, a grader fault tried again). The log is kept across
``--force``: it is the history an instructor answers "why did my grade change?" from.

Students are matched by who they are, not by the path a command line typed (``./class/`` and the
same folder's absolute path are one class): by id, else by the notebook's file name and content.
Both sides are results.json records (dicts), so the comparison needs nothing of the grader.
"""

from __future__ import annotations

import csv
import io
import ntpath
from dataclasses import astuple, dataclass, fields
from datetime import datetime, timezone

from .safe_text import csv_cell

CHANGES_NAME = "changes.csv"


@dataclass(frozen=True)
class GradeChange:
    when: str  # UTC, ISO 8601
    student: str
    file: str
    puzzle: str
    old_status: str
    old_points: str
    new_status: str
    new_points: str
    why: str


def now_utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _points(x: object) -> str:
    return "" if x is None else f"{float(x):g}"  # type: ignore[arg-type]


def _max_points(results: dict) -> dict[object, object]:
    return {p.get("id"): p.get("max_points") for p in results.get("puzzles", []) if isinstance(p, dict)}


def _file_name(st: dict) -> str:
    # The name below any folder, whichever separator the path was typed with.
    return ntpath.basename(str(st.get("file", "")))


def match_students(previous: list, current: list) -> dict[int, dict]:
    """Each current student's record in ``previous`` (by position in ``current``): the one with
    the same id, else the one unmatched with the same file name and content hash."""
    old = [st for st in previous if isinstance(st, dict)]
    by_id = {str(st.get("id")): st for st in old}
    matched: dict[int, dict] = {}
    for i, st in enumerate(current):
        found = by_id.get(str(st.get("id")))
        if found is not None:
            matched[i] = found
    taken = {id(st) for st in matched.values()}
    by_content: dict[tuple[str, object], list[dict]] = {}
    for st in old:
        if id(st) not in taken:
            by_content.setdefault((_file_name(st), st.get("sha256")), []).append(st)
    for i, st in enumerate(current):
        if i not in matched:
            candidates = by_content.get((_file_name(st), st.get("sha256")), [])
            if candidates:
                matched[i] = candidates.pop(0)
    return matched


def grade_changes(previous: dict, current: dict, when: str) -> list[GradeChange]:
    """The puzzles whose points or status differ between two runs' results, with why."""
    students = list(current.get("students", []))
    old_of = match_students(list(previous.get("students", [])), students)
    old_max, new_max = _max_points(previous), _max_points(current)
    old_settings, new_settings = previous.get("settings") or {}, current.get("settings") or {}
    run_reasons = []
    if previous.get("seed") != current.get("seed"):
        run_reasons.append(f"new hidden-test seed ({previous.get('seed')} -> {current.get('seed')})")
    other = sorted(k for k in ("max_steps", "version") if old_settings.get(k) != new_settings.get(k))
    if other:
        run_reasons.append("other grader settings (" + ", ".join(
            f"{k}: {old_settings.get(k)} -> {new_settings.get(k)}" for k in other) + ")")
    partial_rule = previous.get("rules") != current.get("rules")
    changes = []
    for i, st in enumerate(students):
        old = old_of.get(i)
        if old is None:
            continue  # a new student: nothing changed, it is their first grade
        student_reasons = []
        if old.get("sha256") != st.get("sha256"):
            student_reasons.append(f"the notebook changed (sha256 {str(old.get('sha256'))[:12]} -> "
                                   f"{str(st.get('sha256'))[:12]})")
        for pid, new in (st.get("puzzles") or {}).items():
            before = (old.get("puzzles") or {}).get(pid) or {}
            if (before.get("points"), before.get("status")) == (new.get("points"), new.get("status")):
                continue
            why = student_reasons + run_reasons
            if old_max.get(pid) != new_max.get(pid):
                why.append(f"new points file ({pid}: {_points(old_max.get(pid))} -> {_points(new_max.get(pid))} points)")
            elif partial_rule:
                why.append("new points file (the partial-credit rule changed)")
            if before.get("status") == "grader-fault":
                why.append("a grader fault graded again")
            changes.append(GradeChange(when, str(st.get("id")), str(st.get("file")), pid,
                                       str(before.get("status", "")), _points(before.get("points")),
                                       str(new.get("status", "")), _points(new.get("points")),
                                       "; ".join(why) or "graded again with the same notebook and settings"))
    return changes


def history_bytes(old: bytes, changes: list[GradeChange]) -> bytes:
    """``changes.csv`` with ``changes`` added to its ``old`` content (kept byte for byte: a hand
    edit stays), a header first when the log is new, each change a row of its own even when the
    old content does not end its last line."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if not old.strip():
        old = b""
        w.writerow([f.name for f in fields(GradeChange)])
    elif not old.endswith((b"\n", b"\r")):
        old += b"\n"
    for change in changes:
        w.writerow([csv_cell(v) for v in astuple(change)])
    return old + buf.getvalue().encode("utf-8", errors="backslashreplace")
