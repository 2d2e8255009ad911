"""The gradebook an LMS imports: one row a student (the identities the roster gives, the roster's
name), the total, and its maximum where the LMS expects it, made from results.json alone (so it
can be exported again, for another LMS, without grading again: ``metal-puzzles gradebook``).

An LMS reads structure from cells: which row is the maximum, which rows to skip, whose grade a row
is. Ids from notebook names are the students' own text, so every cell is written knowing how the
LMS's importer reads it. The rules below come from the importers' public source, and each is
applied where the cell is written (tests/grading/test_lms_import.py reads our files back by them):

Canvas (instructure/canvas-lms, ``lib/gradebook_importer.rb``, ``GradebookImporter``, and
``ui/features/gradebook_uploads/jquery/process_gradebook_upload.js``):

- C1 the separator is guessed from the first three lines (``semicolon_delimited?``): the one whose
  cell count is the same on all three and larger wins. Our header has no ``;``, so it is ``,``.
- C2 the header must start ``Student``, ``ID`` and end its student columns with ``Section``
  (``header?``); ``SIS User ID``, ``SIS Login ID`` between them are identity columns.
- C3 every later header cell is an assignment, matched by ``Title (id)``, else by exact title, else
  created; a cell containing ``Current Score``, ``Final Grade``, ... (``NON_ASSIGNMENT_COLUMN_HEADERS``)
  is not an assignment. Our one assignment is ``ASSIGNMENT``, a fixed title.
- C4 any row whose first cell *contains* ``Points Possible`` is the maximum row, not a student
  (``check_for_non_student_row``): the ``Student`` cell holds the roster's name or nothing, never
  an id from a notebook's name, and a name containing those words is left out of the cell.
- C5 a row whose cells are all blank, ``Muted`` or ``Manual Posting...`` is skipped; C6 a line of
  ``;``, ``,`` and spaces only is skipped (``skip_lines``): every student row carries a number.
- C7 every cell that looks like a number (``-?[0-9.,]+%?``) has its commas read as a decimal point
  (``decimal_comma_to_period``: ``1,5`` becomes ``1.5``, ``1.2.3`` becomes ``12.3``): an identity
  Canvas would read changed is not written; the student is left out and named.
- C8 a student is found by the ``ID`` cell's leading digits (``to_i``: ``12abc`` is user 12), else
  by ``SIS User ID``, else by ``SIS Login ID``, else by a name equal to a user's name or sortable
  name (``process_student``): ``ID`` holds only the user number a roster's ``ID`` column gave, and
  the name is never a student's own text (a notebook named like a classmate would take their grade).
- C9 a blank grade is a grade removed (the upload posts it as a change): a student whose grading
  did not complete is left out of the file, so an upload leaves their grade as it was.
- C10 a maximum-row cell matching ``read only`` makes its column read-only (``readonly_assignment?``,
  nothing imported): ours is the maximum, a number.

Moodle (moodle/moodle, ``grade/import/csv/classes/load_data.php``, ``lib/csvlib.class.php``):

- M1 rows are read by PHP's ``fgetcsv`` with ``"`` as enclosure and its default escape ``\\``: in a
  quoted cell a backslash before a quote keeps the cell open, running into the next cells and rows.
  A cell that needs quotes (it holds ``,`` or ``"``) and a backslash is not written.
- M2 every row must have the header's number of cells (``csvweirdcolumns`` refuses the file).
- M3 every cell is ``trim()``-ed (spaces, tabs, line breaks, NUL, vertical tab): an identity with
  those at either end would be matched as another; it is not written.
- M4 an identity cell PHP reads as empty (``""`` or ``"0"``: ``empty()``) sets no user, and the
  row's grade goes to the user of the row before it: a student whose id is ``0`` is left out.
- M5 a blank or ``-`` grade is no grade (the old one cleared): as C9, incomplete students are left out.
- M6 a header ``Last downloaded from this course`` makes the import check export dates: our headers
  are fixed.

Spreadsheets: a cell starting ``=``, ``+``, ``-`` or ``@`` is a formula. A name gets the usual
leading ``'`` (``safe_text.csv_cell``); an identity cannot (the LMS would look for the quote too),
so an identity starting so is not written and the student is left out and named.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

from ..compat import StrEnum
from .safe_text import csv_cell, printable

GRADEBOOK_NAME = "gradebook.csv"
#: The column (the LMS's assignment or grade item) the total goes in.
ASSIGNMENT = "Metal Puzzles"
#: The first cell of Canvas's maximum row, as Canvas's own export writes it.
POINTS_POSSIBLE = "    Points Possible"


class LMS(StrEnum):
    CANVAS = "canvas"  # Canvas's own export: identity columns, then a "Points Possible" row
    MOODLE = "moodle"  # Moodle's CSV import: a user field to match on; the maximum is the grade item's
    PLAIN = "plain"  # any other: id, name, total and its maximum on every row


class LmsId(StrEnum):
    """The identities a roster may give a student besides the grader's id (results.json keeps
    them under a student's ``lms``), each written back in the column it came from."""

    CANVAS_ID = "canvas_id"  # Canvas's "ID": its own user number
    SIS_USER_ID = "sis_user_id"
    SIS_LOGIN_ID = "sis_login_id"
    SECTION = "section"  # not an identity; carried back so a Canvas export round-trips


_LMS_ID_NAMES = frozenset(LmsId)


@dataclass(frozen=True)
class Gradebook:
    text: str
    #: Students not in the file, each with why (an identity the LMS would misread, grading incomplete).
    left_out: list[str] = field(default_factory=list)


def _num(x: object) -> str:
    return "" if x is None else f"{float(x):g}"  # type: ignore[arg-type]


_FORMULA = ("=", "+", "-", "@")
_CANVAS_NUMBER = re.compile(r"^-?[0-9.,]+%?$")
#: A cell Canvas counts as blank in a row it skips (C5).
CANVAS_BLANK_CELL = re.compile(r"^\s*(Muted|Manual Posting.*)?\s*$", re.IGNORECASE)
_PHP_TRIM = " \t\n\r\0\x0b"


def canvas_reads(cell: str) -> str:
    """The text Canvas takes from ``cell`` (C7, its ``decimal_comma_to_period`` converter; Ruby's
    ``split`` drops empty trailing parts)."""
    if not _CANVAS_NUMBER.match(cell):
        return cell
    parts = re.split(r"[,.]", cell)
    while parts and parts[-1] == "":
        parts.pop()
    if not parts:
        return ""
    last = parts.pop()
    return last if not parts else "".join(parts) + "." + last


def _needs_quotes(cell: str) -> bool:
    return any(c in cell for c in ',"\r\n')


def identity_problem(text: str, lms: LMS) -> str | None:
    """Why ``text`` cannot be written as an identity the LMS matches exactly, or None."""
    if text.startswith(_FORMULA):
        return f"it starts with {text[0]!r}, which a spreadsheet runs as a formula"
    if printable(text) != text:
        return "it holds characters that do not print"
    if lms is LMS.CANVAS:
        if canvas_reads(text) != text:  # C7
            return f"Canvas reads it as the number {canvas_reads(text)!r}"
        if not text.strip():  # C8: a blank cell is no identity ("Muted" is one: the row has a number, C5)
            return "Canvas reads it as no identity"
    if lms is LMS.MOODLE:
        if text.strip(_PHP_TRIM) != text:  # M3
            return "Moodle trims spaces at its ends"
        if text in ("", "0"):  # M4
            return "Moodle reads it as empty and would give the grade to the row above"
        if "\\" in text and _needs_quotes(text):  # M1
            return "Moodle's CSV reader takes its backslash for an escape"
    return None


def _name_cell(name: str, lms: LMS) -> str:
    """The roster's name as a cell the LMS reads no structure from: blank where it could be read
    as some (C4; M1), otherwise with a spreadsheet's formula escape."""
    if lms is LMS.CANVAS and "Points Possible" in name:
        return ""
    if lms is LMS.MOODLE and "\\" in name and _needs_quotes(name):
        return ""
    return csv_cell(name)


def _lms_ids(st: dict) -> dict[str, str]:
    ids = st.get("lms")
    if not isinstance(ids, dict):
        return {}
    return {k: v for k, v in ids.items() if k in _LMS_ID_NAMES and isinstance(v, str) and v}


def _canvas_row(st: dict, sid: str, name: str, total: str) -> tuple[list[str] | None, str | None]:
    ids = _lms_ids(st)
    if not ids:  # no roster identity: the grader's id is the SIS user id (README: Importing grades)
        ids = {LmsId.SIS_USER_ID: sid}
    canvas_id = ids.get(LmsId.CANVAS_ID, "")
    if canvas_id and not (canvas_id.isascii() and canvas_id.isdigit()):  # C8: only a user number goes in ID
        return None, f"its Canvas ID {printable(canvas_id, limit=80)!r} is not a Canvas user number"
    for column in (LmsId.SIS_USER_ID, LmsId.SIS_LOGIN_ID):
        value = ids.get(column, "")
        problem = identity_problem(value, LMS.CANVAS) if value else None
        if problem is not None:
            return None, f"its {column.value} {printable(value, limit=80)!r} cannot be written: {problem}"
    section = ids.get(LmsId.SECTION, "")
    return [_name_cell(name, LMS.CANVAS), canvas_id, ids.get(LmsId.SIS_USER_ID, ""), ids.get(LmsId.SIS_LOGIN_ID, ""),
            csv_cell(section), total], None


def lms_gradebook(results: dict, lms: LMS) -> Gradebook:
    """The gradebook of a run's results.json (a dict) in the shape ``lms`` imports, and the
    students it leaves out (module note: each rule)."""
    maximum = sum(float(p.get("max_points") or 0) for p in results.get("puzzles", []))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")  # as spreadsheets and LMS exports write CSV
    left_out: list[str] = []
    if lms is LMS.CANVAS:
        w.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", ASSIGNMENT])
        w.writerow([POINTS_POSSIBLE, "", "", "", "", _num(maximum)])
    elif lms is LMS.MOODLE:
        w.writerow(["ID number", "Full name", ASSIGNMENT])
    else:
        w.writerow(["id", "name", "total", "max_total", "status"])
    for st in results.get("students", []):
        sid, name = printable(str(st.get("id", ""))), printable(str(st.get("name") or ""))
        complete = st.get("status") == "complete"
        total = _num(st.get("total")) if complete else ""
        if lms is LMS.PLAIN:  # a sheet for people: the status says why a total is empty
            w.writerow([csv_cell(sid), csv_cell(name), total, _num(st.get("max_total", maximum)), st.get("status", "")])
            continue
        shown = printable(sid, limit=80)
        if not complete:  # C9, M5
            left_out.append(f"{shown!r}: grading did not complete (its grade in the LMS stays as it was)")
            continue
        if lms is LMS.CANVAS:
            row, why = _canvas_row(st, sid, name, total)
        else:
            problem = identity_problem(sid, LMS.MOODLE)
            row, why = (None, f"its id cannot be written: {problem}") if problem else ([sid, _name_cell(name, lms), total], None)
        if row is None:
            left_out.append(f"{shown!r}: {why}")
        else:
            w.writerow(row)
    return Gradebook(buf.getvalue(), left_out)


def gradebook_csv(results: dict, lms: LMS) -> str:
    """The text of ``lms_gradebook``."""
    return lms_gradebook(results, lms).text
