"""Every change of a grade on record: a run that regrades a class compares its results with the
previous results in the same ``--out`` (read before ``--force`` removes them), and appends one
row per puzzle whose points or status changed to ``changes.csv``: when, who, which puzzle, old and
new points and status, and why (the notebook changed, a new seed, a new points file, other
grader settings, a grader fault tried again). The log is kept across ``--force``: it is the
history an instructor answers "why did my grade change?" from.

Both sides are results.json records (dicts), so the comparison needs nothing of the grader.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import astuple, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path

from .results_file import RESULTS_NAME, read_results
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


def previous_results(out: Path) -> dict | None:
    """The results.json already in ``out``, or None where there is none. It is read as untrusted
    (``results_file.read_results``): one edited by hand into something else, or a FIFO in its
    place, raises ``ResultsFileError`` before a run that would compare with it starts."""
    path = out / RESULTS_NAME
    if not os.path.lexists(path):
        return None
    return read_results(path)


def _points(x: object) -> str:
    return "" if x is None else f"{float(x):g}"  # type: ignore[arg-type]


def _max_points(results: dict) -> dict[object, object]:
    return {p.get("id"): p.get("max_points") for p in results.get("puzzles", []) if isinstance(p, dict)}


def grade_changes(previous: dict, current: dict, when: str) -> list[GradeChange]:
    """The puzzles whose points or status differ between two runs' results, with why."""
    old_by_file = {st.get("file"): st for st in previous.get("students", []) if isinstance(st, dict)}
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
    for st in current.get("students", []):
        old = old_by_file.get(st.get("file"))
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


def append_changes(out: Path, changes: list[GradeChange]) -> None:
    """Add ``changes`` to ``out``'s log (a header first when the log is new); synced."""
    if not changes:
        return
    path = out / CHANGES_NAME
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if not path.exists():
        w.writerow([f.name for f in fields(GradeChange)])
    for change in changes:
        w.writerow([csv_cell(v) for v in astuple(change)])
    with open(path, "a", encoding="utf-8", errors="backslashreplace") as f:
        f.write(buf.getvalue())
        f.flush()
        os.fsync(f.fileno())
