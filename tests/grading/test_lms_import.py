"""Issue 37, section 1: an LMS import of gradebook.csv is exactly the class's grades, whatever the
students named their notebooks. The gradebook is read back here as Canvas's and Moodle's
importers read it (``canvas_import`` and ``moodle_import`` follow their public source, rule by
rule as gradebook.py's note numbers them), not as Python's csv module would."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from metal_puzzles.cli import main
from metal_puzzles.grading.gradebook import ASSIGNMENT, LMS, gradebook_csv, lms_gradebook
from metal_puzzles.grading.ids import MappingError
from metal_puzzles.grading.roster import load_roster

from .conftest import SEED, grade, kernel_cell, solution, write_nb


# ---------------------------------------------------------------------------- Canvas, as it reads
@dataclass(frozen=True)
class CanvasUser:
    canvas_id: int
    name: str  # "Ann Smith"
    sortable_name: str  # "Smith, Ann"
    sis_user_id: str = ""
    sis_login_id: str = ""


@dataclass
class CanvasImport:
    points_possible: str | None = None
    grades: dict[int, str | None] = field(default_factory=dict)  # canvas id -> the grade posted
    unmatched: list[list[str | None]] = field(default_factory=list)  # rows Canvas found no student for


_NON_ASSIGNMENT = ("Current Score", "Current Points", "Current Grade", "Final Score", "Final Points", "Final Grade",
                   "Override Score", "Override Grade", "Override Status")


def _ruby_to_i(s: str) -> int:
    m = re.match(r"\s*([+-]?\d+)", s)
    return int(m.group(1)) if m else 0


def _canvas_cell(raw: str | None) -> str | None:
    """Canvas's CSV converters: ``decimal_comma_to_period`` on anything number-like (C7)."""
    if raw is None or not re.match(r"^-?[0-9.,]+%?$", raw):
        return raw
    parts = re.split(r"[,.]", raw)
    while parts and parts[-1] == "":
        parts.pop()
    last = parts.pop() if parts else ""
    return last if not parts else "".join(parts) + "." + last


def _ruby_rows(line: str, sep: str) -> list[str | None]:
    """One line as Ruby's CSV reads it (an empty cell is nil: blank either way, as Canvas reads it)."""
    return [c or None for c in next(csv.reader([line], delimiter=sep, strict=True))]


def canvas_import(text: str, users: list[CanvasUser]) -> CanvasImport:
    lines = [ln for ln in text.split("\r\n") if ln]  # no cell of ours spans lines (printable escapes them)
    counts = {}
    for sep in (";", ","):  # C1: semicolon_delimited?
        per_line = []
        for ln in lines[:3]:
            try:
                per_line.append(len(next(csv.reader([ln], delimiter=sep, strict=True))))
            except csv.Error:
                per_line.append(-1)
        counts[sep] = per_line[0] if len(set(per_line)) == 1 and per_line[0] > 0 else 0
    sep = ";" if counts[";"] > counts[","] else ","
    header = next(csv.reader([lines[0]], delimiter=sep))
    assert "Student" in header[0] and "ID" in header[1] and "Section" in header[4], header  # C2
    assert re.search("SIS\\s+User\\s+ID", header[2]) and re.search("SIS\\s+Login\\s+ID", header[3])
    assignments = [i for i, h in enumerate(header[5:], start=5) if not any(n in h for n in _NON_ASSIGNMENT)]  # C3
    assert len(assignments) == 1
    col = assignments[0]
    result = CanvasImport()
    for ln in lines[1:]:
        if re.fullmatch(r"[;, ]+", ln):  # C6: skip_lines
            continue
        row = [_canvas_cell(c) for c in _ruby_rows(ln, sep)]
        if row[0] is not None and "Points Possible" in row[0]:  # C4
            result.points_possible = row[col]
            continue
        if all(re.match(r"^\s*(Muted|Manual Posting.*)?\s*$", c, re.I) for c in row if c is not None):  # C5
            continue
        student = None  # C8: process_student
        if row[1] and row[1].strip():
            student = next((u for u in users if u.canvas_id == _ruby_to_i(row[1])), None)
        if student is None and row[2] and row[2].strip():
            student = next((u for u in users if u.sis_user_id == row[2]), None)
        if student is None and row[3] and row[3].strip():
            student = next((u for u in users if u.sis_login_id == row[3]), None)
        if student is None:
            student = next((u for u in users if row[0] in (u.name, u.sortable_name)), None)
        grade_cell = row[col].strip() if row[col] is not None else None
        if student is None:
            result.unmatched.append(row)
        else:
            result.grades[student.canvas_id] = grade_cell  # C9: a blank one is posted, as a grade removed
    if result.points_possible is not None and re.search(r"read\s+only", result.points_possible):  # C10
        result.grades.clear()
    return result


# ---------------------------------------------------------------------------- Moodle, as it reads
class MoodleRefused(Exception):
    pass


def _php_fgetcsv(text: str) -> list[list[str]]:
    """Rows as PHP's fgetcsv(',', '"') reads them: with its default escape, a backslash in a
    quoted cell keeps the next character, a quote too, from closing the cell (M1)."""
    rows, i, n = [], 0, len(text)
    while i < n:
        row = []
        while True:
            buf = []
            if i < n and text[i] == '"':
                i += 1
                while i < n:
                    if text[i] == "\\" and i + 1 < n:
                        buf += text[i:i + 2]
                        i += 2
                    elif text[i] == '"' and i + 1 < n and text[i + 1] == '"':
                        buf.append('"')
                        i += 2
                    elif text[i] == '"':
                        i += 1
                        break
                    else:
                        buf.append(text[i])
                        i += 1
            while i < n and text[i] not in ",\n":
                buf.append(text[i])
                i += 1
            row.append("".join(buf))
            if i < n and text[i] == ",":
                i += 1
                continue
            i += 1
            break
        rows.append(row)
    return rows


def moodle_import(text: str, idnumbers: dict[str, str]) -> dict[str, float | None]:
    """user -> grade, as Moodle's CSV grade import with "ID number" mapped to the users' ID
    number field and the assignment column to a grade item. Raises ``MoodleRefused``."""
    content = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").strip(" \t\n\r\0\x0b")
    rows = [r for r in _php_fgetcsv(content) if r != [""]]
    header = [h.strip() for h in rows[0]]
    if any(len(r) != len(header) for r in rows):  # M2
        raise MoodleRefused("csvweirdcolumns")
    assert "Last downloaded from this course" not in header  # M6
    id_col, grade_col = header.index("ID number"), header.index(ASSIGNMENT)
    grades: dict[str, float | None] = {}
    student = None  # not reset per row: load_data.php's $this->studentid
    for row in rows[1:]:
        if len(row) <= 1:  # M7
            continue
        cells = [c.strip(" \t\n\r\0\x0b") for c in row]  # M3
        if cells[id_col] not in ("", "0"):  # M4: PHP's empty()
            if cells[id_col] not in idnumbers:
                raise MoodleRefused(f"no user with ID number {cells[id_col]!r}")
            student = idnumbers[cells[id_col]]
        if student is None:
            raise MoodleRefused("usermappingerrorusernotfound")
        value = cells[grade_col]
        grades[student] = None if value in ("", "-") else float(value)  # M5
    return grades


# ---------------------------------------------------------------------------- gradebooks by hand
def results_of(*students: tuple[str, float], names: dict[str, str] | None = None, lms: dict | None = None,
               maximum: float = 56) -> dict:
    return {"puzzles": [{"id": "all", "max_points": maximum}],
            "students": [{"id": sid, "name": (names or {}).get(sid, ""), "lms": (lms or {}).get(sid, {}),
                          "total": total, "max_total": maximum, "status": "complete"} for sid, total in students]}


def results_file_of(*students: tuple[str, float]) -> dict:
    """``results_of`` with every field the grader writes and reads back (``results_file``): what
    the gradebook command is given."""
    record = results_of(*students)
    record.update(seed=0, settings={})
    for st in record["students"]:
        st.update(file=f"{st['id']}.ipynb", puzzles={"all": {"status": "passed", "points": st["total"]}})
    return record


ANN = CanvasUser(101, "Ann Smith", "Smith, Ann", sis_user_id="S1")
BOB = CanvasUser(102, "Bob Jones", "Jones, Bob", sis_user_id="S2")


def test_a_student_named_like_a_classmate_does_not_take_their_grade() -> None:
    # C8: Bob's notebook is "Smith, Ann.ipynb" (no roster): Canvas finds no SIS id "Smith, Ann" and
    # falls back to names; Ann's grade must not become Bob's.
    book = gradebook_csv(results_of(("S1", 50), ("Smith, Ann", 3)), LMS.CANVAS)
    imported = canvas_import(book, [ANN, BOB])
    assert imported.grades == {101: "50"}
    assert [r[2] for r in imported.unmatched] == ["Smith, Ann"]


def test_a_name_holding_points_possible_is_not_the_maximum_row() -> None:
    # C4: a name of the roster's (a Canvas display name is the user's to choose) holding the words.
    book = gradebook_csv(results_of(("S1", 50), ("S2", 33), names={"S2": "Bob (Points Possible)"}), LMS.CANVAS)
    imported = canvas_import(book, [ANN, BOB])
    assert imported.points_possible == "56" and imported.grades == {101: "50", 102: "33"}


@pytest.mark.parametrize("sid", ["Muted", "manual posting", "  Muted ", ";;", ", ,"])
def test_an_id_canvas_skips_rows_by_is_a_student_row(sid) -> None:
    # C5, C6: a row of blanks, Muted and Manual Posting (or of ; , and spaces) is skipped; every
    # student row carries a number, so none is.
    user = CanvasUser(103, "Cy", "Cy", sis_user_id=sid.strip())
    imported = canvas_import(gradebook_csv(results_of(("S1", 50), (sid.strip(), 12)), LMS.CANVAS), [ANN, user])
    assert imported.grades == {101: "50", 103: "12"}


def test_an_id_with_semicolons_leaves_the_separator_a_comma() -> None:
    # C1: the separator is guessed from the first three lines.
    users = [CanvasUser(104, "D", "D", sis_user_id="a;b;c;d;e;f;g"), ANN]
    imported = canvas_import(gradebook_csv(results_of(("a;b;c;d;e;f;g", 7), ("S1", 50)), LMS.CANVAS), users)
    assert imported.points_possible == "56" and imported.grades == {104: "7", 101: "50"}


@pytest.mark.parametrize(("sid", "read_as"), [("1,5", "1.5"), ("1.2.3", "12.3"), ("7.", "7"), ("-5", None),
                                              ("=HYPERLINK(1)", None), ("@x", None)])
def test_an_id_canvas_or_a_spreadsheet_would_read_changed_is_left_out_and_named(sid, read_as) -> None:
    # C7 (Canvas reads commas in number-like cells as decimal points) and formulas: an identity
    # cannot carry the spreadsheet's ' escape either (Canvas would look for the quote too).
    users = [CanvasUser(105, "E", "E", sis_user_id=sid), ANN]
    if read_as is not None:
        users.append(CanvasUser(106, "F", "F", sis_user_id=read_as))  # whom the changed id would name
    book = lms_gradebook(results_of((sid, 9), ("S1", 50)), LMS.CANVAS)
    imported = canvas_import(book.text, users)
    assert imported.grades == {101: "50"} and not imported.unmatched
    [why] = book.left_out
    assert why.startswith(repr(sid)) and ("Canvas reads it as the number" in why or "formula" in why)


def test_a_number_canvas_reads_unchanged_is_written() -> None:
    users = [CanvasUser(107, "G", "G", sis_user_id="2024.001"), CanvasUser(108, "H", "H", sis_user_id="12345")]
    imported = canvas_import(gradebook_csv(results_of(("2024.001", 9), ("12345", 8)), LMS.CANVAS), users)
    assert imported.grades == {107: "9", 108: "8"}


def test_the_assignment_column_is_one_canvas_matches_by_title() -> None:
    # C3: not a column Canvas drops (Current Score, ...), no "(id)" suffix naming another assignment.
    assert not any(n in ASSIGNMENT for n in _NON_ASSIGNMENT) and not re.search(r"\(\d+\)$", ASSIGNMENT)


def test_an_id_column_beside_sis_columns_in_another_order_is_not_canvas_user_number(tmp_path) -> None:
    # Only Canvas's export (Student, ID, ... as Canvas writes it) has Canvas's user numbers under
    # "ID": elsewhere a number there is the institution's, and Canvas would match it to user 102.
    (tmp_path / "roster.csv").write_text("File,ID,SIS User ID,Name\nann.ipynb,102,S1,Ann Smith\n", encoding="utf-8")
    roster = load_roster(tmp_path / "roster.csv")
    assert roster.mapping == {"ann.ipynb": "102"} and roster.lms == {}
    results = results_of(("102", 7))
    imported = canvas_import(gradebook_csv(results, LMS.CANVAS), [ANN, BOB])
    assert imported.grades == {} and len(imported.unmatched) == 1  # SIS "102" is no one's: not Bob's grade


def test_a_roster_canvas_id_that_is_no_user_number_is_refused(tmp_path) -> None:
    # C8: Canvas reads the ID cell's leading digits ("12abc" is user 12).
    (tmp_path / "roster.csv").write_text("Student,ID,SIS User ID,SIS Login ID,Section,File\n"
                                         "Ann Smith,12abc,S1,ann,A,ann.ipynb\n", encoding="utf-8")
    with pytest.raises(MappingError, match=r"line 2: the ID column of a Canvas export holds Canvas's user numbers"):
        load_roster(tmp_path / "roster.csv")
    (tmp_path / "roster.csv").write_text("Student,ID,SIS User ID,SIS Login ID,Section,File\n"
                                         "Ann Smith,\uff11\uff12,S1,ann,A,ann.ipynb\n", encoding="utf-8")
    with pytest.raises(MappingError, match=r"line 2: the ID column"):  # digits Python knows, Ruby's to_i not
        load_roster(tmp_path / "roster.csv")


@pytest.mark.parametrize("sid", ["0"])
def test_an_id_moodle_reads_as_empty_does_not_give_its_grade_to_the_row_above(sid) -> None:
    # M4: "0" sets no user; the grade would go to the student of the row before.
    book = lms_gradebook(results_of(("A1", 50), (sid, 3)), LMS.MOODLE)
    assert moodle_import(book.text, {"A1": "ann", "0": "zed"}) == {"ann": 50.0}
    assert book.left_out and "Moodle reads it as empty" in book.left_out[0]


@pytest.mark.parametrize("sid", ["x,\\", 'q"\\', "a\\,b"])
def test_an_id_whose_backslash_php_reads_as_an_escape_is_left_out(sid) -> None:
    # M1: in a quoted cell PHP's fgetcsv takes a backslash for an escape: the cell would run on
    # into the next rows (or the file be refused).
    book = lms_gradebook(results_of(("A1", 50), (sid, 3), ("B2", 40)), LMS.MOODLE)
    assert moodle_import(book.text, {"A1": "ann", "B2": "bob"}) == {"ann": 50.0, "bob": 40.0}
    assert len(book.left_out) == 1 and "backslash" in book.left_out[0]


def test_an_id_with_spaces_moodle_trims_is_left_out() -> None:
    # M3: a hand-edited results.json may hold one; Moodle would match "A1".
    book = lms_gradebook(results_of(("A1", 50), (" A1 ", 3)), LMS.MOODLE)
    assert moodle_import(book.text, {"A1": "ann"}) == {"ann": 50.0}
    assert "trims" in book.left_out[0]


def test_a_name_with_a_backslash_and_a_comma_does_not_break_moodles_rows() -> None:
    book = lms_gradebook(results_of(("A1", 50), ("B2", 40), names={"A1": "Smith, Ann\\"}), LMS.MOODLE)
    assert moodle_import(book.text, {"A1": "ann", "B2": "bob"}) == {"ann": 50.0, "bob": 40.0}
    assert not book.left_out


# ---------------------------------------------------------------------------- through `grade`
def raw_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8")  # line ends as written: the importers see them


MAP_ONLY = [kernel_cell("map", solution("map"))]
MAP_AND_ZIP = [kernel_cell("map", solution("map")), kernel_cell("zip", solution("zip"))]


def test_a_notebook_named_points_possible_neither_leaves_the_import_nor_sets_the_maximum(tmp_path, capsys) -> None:
    cls = tmp_path / "class"
    cls.mkdir()
    write_nb(cls / "S1.ipynb", MAP_AND_ZIP)
    write_nb(cls / "Points Possible.ipynb", MAP_ONLY)
    write_nb(cls / "'Points Possible.ipynb", MAP_ONLY)  # the ' escape stopped nothing either
    g = grade(capsys, [cls], tmp_path / "out", "--seed", SEED)
    assert g.status == 0, g.stderr
    maximum = g.results()["students"][0]["max_total"]
    users = [ANN, CanvasUser(109, "P", "P", sis_user_id="Points Possible"),
             CanvasUser(110, "Q", "Q", sis_user_id="'Points Possible")]
    imported = canvas_import(raw_text(g.out / "gradebook.csv"), users)
    assert float(imported.points_possible) == maximum
    assert imported.grades == {101: "2", 109: "1", 110: "1"}


CANVAS_EXPORT = (
    '"Student","ID","SIS User ID","SIS Login ID","Section","Lab 1 (4410)","Current Score","Final Score","File"\r\n'
    '"    Points Possible",,,,,"10","","",\r\n'
    '"Smith, Ann",101,S1,ann@uni.edu,"CS 101 A",10,"100","100",ann.ipynb\r\n'
    '"Jones, Bob",102,,bob@uni.edu,"CS 101 A",5,"50","50",bob.ipynb\r\n'
    '"Diaz, Cy",103,,,"CS 101 B",,"","",cy.ipynb\r\n'
    '"Student, Test",104,,,"CS 101 A",,"","",\r\n'
)


@pytest.mark.parametrize("canvas_rows", [True, False], ids=["as-exported", "without-canvas-rows"])
def test_a_canvas_export_as_roster_round_trips_every_id_to_its_column(tmp_path, capsys, canvas_rows) -> None:
    cls = tmp_path / "class"
    cls.mkdir()
    for name, cells in (("ann", MAP_AND_ZIP), ("bob", MAP_ONLY), ("cy", [])):
        write_nb(cls / f"{name}.ipynb", cells)
    export = CANVAS_EXPORT
    if not canvas_rows:  # the Points Possible row and the Test Student deleted by hand
        export = "".join(ln for ln in export.splitlines(keepends=True) if "Points Possible" not in ln and "Test" not in ln)
    (tmp_path / "export.csv").write_bytes(("\ufeff" + export).encode("utf-8"))
    g = grade(capsys, [cls], tmp_path / "out", "--seed", SEED, "--mapping", str(tmp_path / "export.csv"))
    assert g.status == 0, g.stderr
    # The student's id is their SIS user id, else their login, else Canvas's number.
    assert set(g.rows()) == {"S1", "bob@uni.edu", "103"}
    rows = list(csv.reader(io.StringIO(raw_text(g.out / "gradebook.csv"))))
    assert rows[2:] == [["Smith, Ann", "101", "S1", "ann@uni.edu", "CS 101 A", "2"],
                        ["Jones, Bob", "102", "", "bob@uni.edu", "CS 101 A", "1"],
                        ["Diaz, Cy", "103", "", "", "CS 101 B", "0"]]
    users = [CanvasUser(101, "Ann Smith", "Smith, Ann", "S1", "ann@uni.edu"),
             CanvasUser(102, "Bob Jones", "Jones, Bob", "", "bob@uni.edu"), CanvasUser(103, "Cy Diaz", "Diaz, Cy")]
    imported = canvas_import(raw_text(g.out / "gradebook.csv"), users)
    assert imported.grades == {101: "2", 102: "1", 103: "0"} and not imported.unmatched
    # And again from results.json alone, for Moodle: the grader's id in "ID number".
    assert main(["gradebook", str(g.out), "--lms", "moodle", "--to", str(tmp_path / "moodle.csv")]) == 0
    assert moodle_import(raw_text(tmp_path / "moodle.csv"),
                         {"S1": "ann", "bob@uni.edu": "bob", "103": "cy"}) == {"ann": 2.0, "bob": 1.0, "cy": 0.0}


def test_a_left_out_student_is_named_on_stderr(tmp_path, capsys) -> None:
    cls = tmp_path / "class"
    cls.mkdir()
    write_nb(cls / "S1.ipynb", MAP_ONLY)
    write_nb(cls / "-1.ipynb", MAP_ONLY)
    g = grade(capsys, [cls], tmp_path / "out", "--seed", SEED)
    assert g.status == 0, g.stderr
    assert "1 student(s) left out of" in g.stderr and "'-1': its sis_user_id '-1' cannot be written" in g.stderr
    assert [r[2] for r in csv.reader(io.StringIO(raw_text(g.out / "gradebook.csv")))][2:] == ["S1"]


# ---------------------------------------------------------------------------- a roster's open quote
def test_a_roster_with_an_unterminated_quote_is_refused_with_its_line(tmp_path) -> None:
    (tmp_path / "roster.csv").write_text('File,ID,Name\nalice.ipynb,a1,"Alice\nbob.ipynb,b2,Bob\n', encoding="utf-8")
    with pytest.raises(MappingError, match=r"roster.csv, line 2: .*a quote left open"):
        load_roster(tmp_path / "roster.csv")


def test_a_quote_closed_rows_later_is_refused_too(tmp_path) -> None:
    (tmp_path / "roster.csv").write_text('File,ID,Name\nalice.ipynb,a1,"Alice\nbob.ipynb,b2,Bob"\ncy.ipynb,c3,Cy\n',
                                         encoding="utf-8")
    with pytest.raises(MappingError, match=r"roster.csv, line 2: a quoted cell runs on to line 3"):
        load_roster(tmp_path / "roster.csv")


def test_a_quoted_name_with_a_comma_is_still_read(tmp_path) -> None:
    (tmp_path / "roster.csv").write_text('File,ID,Name\n\nalice.ipynb,a1,"Martin, Alice"\n', encoding="utf-8")
    assert load_roster(tmp_path / "roster.csv").names == {"a1": "Martin, Alice"}


def test_the_refusal_stops_grade_before_grading(tmp_path, capsys) -> None:
    cls = tmp_path / "class"
    cls.mkdir()
    write_nb(cls / "alice.ipynb", MAP_ONLY)
    (tmp_path / "roster.csv").write_text('File,ID,Name\nalice.ipynb,a1,"Alice\n', encoding="utf-8")
    g = grade(capsys, [cls], tmp_path / "out", "--mapping", str(tmp_path / "roster.csv"))
    assert g.status == 2 and "line 2" in g.stderr and not Path(tmp_path / "out" / "grades.csv").exists()


def test_the_gradebook_command_names_whom_it_leaves_out(tmp_path, capsys) -> None:
    import json

    (tmp_path / "results.json").write_text(json.dumps(results_file_of(("A1", 50), ("0", 3))), encoding="utf-8")
    assert main(["gradebook", str(tmp_path), "--lms", "moodle", "--to", str(tmp_path / "moodle.csv")]) == 0
    err = capsys.readouterr().err
    assert "1 student(s) left out of" in err and "'0': its id cannot be written: Moodle reads it as empty" in err
    assert moodle_import(raw_text(tmp_path / "moodle.csv"), {"A1": "ann"}) == {"ann": 50.0}


HOSTILE = ["Points Possible", "    Points Possible", "Muted", "Manual Posting", "0", "1,5", "7.", "-3", "=1+1", "@a",
           "+1", "a;b;c", ", ,", ";;", 'q"uote', "back\\slash", "x,\\", "Smith, Ann", " pad ", "read only", "12abc",
           "EX", "-", "", "Student", "ID"]


def left_out_ids(book, sids: list[str]) -> set[str]:
    named = {why.split(": ")[0] for why in book.left_out}
    assert len(named) == len(book.left_out)
    return {sid for sid in sids if repr(sid) in named}


def test_a_class_of_two_thousand_hostile_names_imports_exactly_its_grades() -> None:
    # Every fragment above with a serial number before or after it (or alone): whatever the
    # students named, each either lands on exactly its own user with exactly its total, or is
    # left out of the file and named; the maximum is the class's.
    sids = list(dict.fromkeys([f for f in HOSTILE if f] + [f"{f}{n}" for n in range(40) for f in HOSTILE]
                              + [f"{n}{f}" for n in range(40) for f in HOSTILE]))
    assert len(sids) > 2000
    results = results_of(*[(sid, float(i % 57)) for i, sid in enumerate(sids)])
    canvas = lms_gradebook(results, LMS.CANVAS)
    users = [CanvasUser(1000 + i, f"User {i}", f"{i}, User", sis_user_id=sid) for i, sid in enumerate(sids)]
    imported = canvas_import(canvas.text, users)
    assert imported.points_possible == "56" and not imported.unmatched
    left = left_out_ids(canvas, sids)
    assert imported.grades == {1000 + i: f"{i % 57:g}" for i, sid in enumerate(sids) if sid not in left}
    assert len(left) < len(sids) // 4  # refusals stay the odd case
    moodle = lms_gradebook(results, LMS.MOODLE)
    left = left_out_ids(moodle, sids)
    grades = moodle_import(moodle.text, {sid: f"u{i}" for i, sid in enumerate(sids)})
    assert grades == {f"u{i}": float(i % 57) for i, sid in enumerate(sids) if sid not in left}
