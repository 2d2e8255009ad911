"""The class list an instructor gives ``--mapping``: which notebook is whose, and (when the file
names its columns) each student's name.

Two shapes are read:

- a roster exported from a spreadsheet whose header names its columns, in any order: a notebook
  column (``File``, ``Notebook``, ...), an id column (``ID``, ``Student ID``, ``SIS User ID``,
  ``Email``, ...) and optionally a name column (``Name``, ``Full name``, ...);
- otherwise ``notebook file, student id`` rows, read by ``ids.load_mapping``.

Canvas's own gradebook export (README: Importing grades), with a notebook column added, is such a
roster, with three identities: ``ID`` (Canvas's user number), ``SIS User ID`` and ``SIS Login ID``.
Each is kept (``Roster.lms``) and written back in its own column of the gradebook; the student's
id is the first the row gives of SIS User ID, SIS Login ID, ID. Its non-student rows (the
``Points Possible`` row, a ``Muted`` or ``Manual Posting`` row) are skipped as Canvas skips them,
and so is a student whose notebook cell is empty (the export lists the whole class).

``mapping_mismatch`` catches a mapping that matches no submission at all (columns swapped, a
third column first) before a class is graded under file-name ids.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .gradebook import CANVAS_BLANK_CELL, LmsId
from .ids import MAX_ID_CHARS, MappingError, load_mapping, mapping_rows
from .safe_text import printable
from .submissions import Submission

#: Header cells (compared case-insensitively, spaces and underscores alike) naming each column.
FILE_COLUMNS = frozenset({"file", "filename", "file name", "notebook", "path", "submission"})
ID_COLUMNS = frozenset({"id", "student id", "studentid", "sid", "sis user id", "sis login id", "login", "username",
                        "user name", "email", "email address", "id number", "student number", "matriculation"})
NAME_COLUMNS = frozenset({"name", "full name", "student", "student name", "display name"})
#: Canvas's identity columns (header cells as ``_key`` writes them); in Canvas's export (a header
#: starting Student, ID, with a SIS column) "ID" is Canvas's user number, not the institution's id.
CANVAS_COLUMNS = {"sis user id": LmsId.SIS_USER_ID, "sis login id": LmsId.SIS_LOGIN_ID, "id": LmsId.CANVAS_ID,
                  "section": LmsId.SECTION}
#: Which identity a Canvas roster's student id is, in order of preference.
CANVAS_ID_ORDER = (LmsId.SIS_USER_ID, LmsId.SIS_LOGIN_ID, LmsId.CANVAS_ID)


@dataclass(frozen=True)
class Roster:
    mapping: dict[str, str] = field(default_factory=dict)  # notebook file -> student id
    names: dict[str, str] = field(default_factory=dict)  # student id -> name, where the roster gives one
    #: student id -> the LMS identities the roster gives (Canvas's ID, SIS User ID, ...), by ``LmsId``
    lms: dict[str, dict[str, str]] = field(default_factory=dict)


def _nfc(text: str) -> str:
    """Names compared in Unicode's composed form: a roster typed on Windows (NFC) must match a
    file saved by macOS (NFD)."""
    return unicodedata.normalize("NFC", text)


def _key(cell: str) -> str:
    return " ".join(cell.replace("_", " ").strip().lower().split())


def load_roster(path: str | Path | None) -> Roster:
    """The mapping and names of a roster file (see the module's note). Raises ``MappingError``."""
    if path is None:
        return Roster()
    rows = _rows(path)
    header = [_key(c) for c in rows[0][1]] if rows else []
    columns = _named_columns(header)
    if columns is None:
        return Roster(load_mapping(path))
    file_col, id_col, name_col = columns
    canvas = {CANVAS_COLUMNS[cell]: i for i, cell in enumerate(header) if cell in CANVAS_COLUMNS}
    if header[:2] != ["student", "id"] or not ({LmsId.SIS_USER_ID, LmsId.SIS_LOGIN_ID} & set(canvas)):
        # Not Canvas's export (it starts Student, ID and has SIS columns): an "ID" is the
        # institution's id, as in any roster, and never goes in Canvas's user-number column.
        canvas = {}
    mapping: dict[str, str] = {}
    names: dict[str, str] = {}
    lms: dict[str, dict[str, str]] = {}
    for line, row in rows[1:]:
        cells = [c.strip() for c in row]
        if not any(cells) or (canvas and _canvas_non_student(cells)):
            continue
        if canvas and (file_col >= len(cells) or not cells[file_col]):
            continue  # Canvas's export lists the whole class: a student with no notebook to map
        ids = {col: _nfc(cells[i]) for col, i in canvas.items() if i < len(cells) and cells[i]}
        sid_col = next((canvas[col] for col in CANVAS_ID_ORDER if col in ids), id_col) if canvas else id_col
        if len(cells) <= max(file_col, sid_col) or not cells[file_col] or not cells[sid_col]:
            raise MappingError(f"{printable(path)}, line {line}: expected a notebook file in column "
                               f"{file_col + 1} and a student id in column {id_col + 1}, got {printable(row, limit=200)}")
        canvas_id = ids.get(LmsId.CANVAS_ID, "0")
        if not (canvas_id.isascii() and canvas_id.isdigit()):  # Canvas reads its leading digits (gradebook.py, C8)
            raise MappingError(f"{printable(path)}, line {line}: the ID column of a Canvas export holds Canvas's user "
                               f"numbers, got {printable(ids[LmsId.CANVAS_ID], limit=100)!r}")
        name, sid = _nfc(cells[file_col]), _nfc(cells[sid_col])
        if len(sid) > MAX_ID_CHARS:
            raise MappingError(f"{printable(path)}, line {line}: the student id is {len(sid)} characters long; "
                               f"at most {MAX_ID_CHARS} are allowed")
        if name in mapping and mapping[name] != sid:
            raise MappingError(f"{printable(path)}, line {line}: {printable(name, limit=200)} is mapped twice")
        mapping[name] = sid
        if name_col is not None and name_col < len(cells) and cells[name_col]:
            names[sid] = _nfc(cells[name_col])[:MAX_ID_CHARS]
        if ids:
            lms[sid] = {col.value: value[:MAX_ID_CHARS] for col, value in ids.items()}
    if not mapping:
        raise MappingError(f"the roster {printable(path)} holds no rows under its header")
    return Roster(mapping, names, lms)


def _canvas_non_student(cells: list[str]) -> bool:
    """Canvas's own rows of a gradebook export that are no student (its importer's rules C4 and
    C5, ``gradebook.py``): the maximum row, and a row of blanks, "Muted" and "Manual Posting"."""
    return "Points Possible" in cells[0] or all(CANVAS_BLANK_CELL.match(c) for c in cells)


def _rows(path: str | Path) -> list[tuple[int, list[str]]]:
    return mapping_rows(path)


def _named_columns(header: list[str]) -> tuple[int, int, int | None] | None:
    """(file, id, name) column numbers when the header names a file and an id column, else None."""
    def first(names: frozenset[str]) -> int | None:
        return next((i for i, cell in enumerate(header) if cell in names), None)

    file_col, id_col = first(FILE_COLUMNS), first(ID_COLUMNS)
    if file_col is None or id_col is None:
        return None
    name_col = first(NAME_COLUMNS - {header[id_col]})
    return file_col, id_col, name_col


def mapping_mismatch(mapping: dict[str, str], submissions: list[Submission]) -> str | None:
    """Why a mapping cannot be this class's, when none of its entries names a submission (every
    student would be graded under a file-name id), or None."""
    if not mapping or not submissions:
        return None
    keys = {_nfc(k) for sub in submissions for k in (sub.relative, Path(sub.path).name, sub.path)}
    if any(_nfc(name) in keys for name in mapping):
        return None
    ids_named = [sid for sid in mapping.values() if _nfc(sid) in keys or sid.lower().endswith(".ipynb")]
    if ids_named:
        return (f"no row of the mapping names a submission, and its second column holds notebook names "
                f"({printable(ids_named[0], limit=100)!r}): the columns look swapped. Put the notebook file first "
                "and the student id second, or give the file a header naming its columns (File, ID, Name)")
    example = next(iter(mapping))
    return (f"no row of the mapping names a submission (the first row maps {printable(example, limit=100)!r}); "
            "the first column must be the notebook's file name (as in the submissions folder, e.g. "
            f"{printable(PurePosixPath(submissions[0].relative).name, limit=100)!r}) and the second the student id, "
            "or give the file a header naming its columns (File, ID, Name)")
