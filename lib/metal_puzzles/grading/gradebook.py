"""The gradebook an LMS imports: one row a student (the id, the roster's name where it gives one),
the total, and its maximum where the LMS expects it, made from results.json alone (so it can be
exported again, for another LMS, without grading again: ``metal-puzzles gradebook``).

A student whose grading did not complete (a grader fault) gets an empty total: an upload then
leaves their grade in the LMS as it was, instead of posting a partial one.
"""

from __future__ import annotations

import csv
import io

from ..msl.lang.pycompat import StrEnum
from .safe_text import csv_cell

GRADEBOOK_NAME = "gradebook.csv"
#: The column (the LMS's assignment or grade item) the total goes in.
ASSIGNMENT = "Metal Puzzles"


class LMS(StrEnum):
    CANVAS = "canvas"  # Canvas's own export: identity columns, then a "Points Possible" row
    MOODLE = "moodle"  # Moodle's CSV import: a user field to match on; the maximum is the grade item's
    PLAIN = "plain"  # any other: id, name, total and its maximum on every row


def _num(x: object) -> str:
    return "" if x is None else f"{float(x):g}"  # type: ignore[arg-type]


def gradebook_csv(results: dict, lms: LMS) -> str:
    """The gradebook of a run's results.json (a dict) in the shape ``lms`` imports."""
    maximum = sum(float(p.get("max_points") or 0) for p in results.get("puzzles", []))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")  # as spreadsheets and LMS exports write CSV
    if lms is LMS.CANVAS:
        w.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", ASSIGNMENT])
        w.writerow(["    Points Possible", "", "", "", "", _num(maximum)])
    elif lms is LMS.MOODLE:
        w.writerow(["ID number", "Full name", ASSIGNMENT])
    else:
        w.writerow(["id", "name", "total", "max_total", "status"])
    for st in results.get("students", []):
        sid, name = csv_cell(str(st.get("id", ""))), csv_cell(str(st.get("name") or ""))
        complete = st.get("status") == "complete"
        total = _num(st.get("total")) if complete else ""
        if lms is LMS.CANVAS:
            w.writerow([name or sid, "", sid, "", "", total])
        elif lms is LMS.MOODLE:
            w.writerow([sid, name, total])
        else:
            w.writerow([sid, name, total, _num(st.get("max_total", maximum)), st.get("status", "")])
    return buf.getvalue()
