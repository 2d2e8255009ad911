"""Issue 28, an instructor's course end to end: reports a teacher can send as they are (no hidden
test's values, untouched puzzles "not attempted", short), a gradebook an LMS imports, the class at
a glance, and every change of a grade on record."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from metal_puzzles.cli import main
from metal_puzzles.puzzles import PUZZLES, get_puzzle

from .conftest import SEED, Graded, grade, grade_quietly, kernel_cell, solution, write_nb

BOOK = Path(__file__).resolve().parents[2] / "lib" / "metal_puzzles" / "notebooks" / "puzzles.ipynb"
#: Right on the visible test (4 values), wrong on every hidden test of another size.
VISIBLE_ONLY = "uint i = thread_position_in_grid.x;\nout[i] = (a_shape[0] == 4) ? a[i] + 10 : a[i];\n"
#: Writes every element of the 8x8 visible output, all zeros: wrong at 64 positions.
MATMUL_ZEROS = ("uint col = thread_position_in_grid.x;\nuint row = thread_position_in_grid.y;\nuint n = a_shape[0];\n"
                "if (row < n && col < n) { out[row * n + col] = 0; }\n")


def partial_cells() -> list[str]:
    return [kernel_cell("map", VISIBLE_ONLY), kernel_cell("zip", solution("zip")),
            kernel_cell("guard", get_puzzle("guard").template),
            kernel_cell("matmul", MATMUL_ZEROS),
            kernel_cell(get_puzzle("detective_block_sum").kernel_name, get_puzzle("detective_block_sum").template)]


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Graded:
    d = tmp_path_factory.mktemp("course")
    (d / "class").mkdir()
    shutil.copy(BOOK, d / "class" / "untouched.ipynb")
    write_nb(d / "class" / "partial.ipynb", partial_cells())
    return grade_quietly(tmp_path_factory, [d / "class"], d / "out", "--seed", SEED)


# ---------------------------------------------------------------------------- 1. reports to send
def test_the_books_template_is_not_attempted_everywhere(course: Graded) -> None:
    assert course.status == 0, course.stderr
    untouched = course.student("untouched")
    assert {s["status"] for s in untouched["puzzles"].values()} == {"not-attempted"}
    assert all(s["points"] == 0 for s in untouched["puzzles"].values())
    row = course.rows()["untouched"]
    assert row["not_attempted"] == str(len(PUZZLES)) and row["passed"] == "0"
    report = course.report("untouched")
    assert report.count("| not attempted |") == len(PUZZLES)
    assert "what to fix" not in report and "sanitizer findings" not in report
    assert len(report.encode()) < 8_000  # was 58,683 bytes: a diff per untouched puzzle
    assert "Notebook: untouched\\.ipynb" in report  # as submitted, not the instructor's folders
    assert str(course.out.parent) not in report.replace("\\", "")


def test_a_detective_template_is_not_attempted_not_a_race(course: Graded) -> None:
    partial = course.student("partial")["puzzles"]
    assert partial["detective_block_sum"]["status"] == "not-attempted"
    assert partial["guard"]["status"] == "not-attempted"
    assert partial["zip"]["status"] == "passed"
    assert course.rows()["partial"]["not_attempted"] == "2"


def test_a_report_never_prints_a_hidden_tests_values(course: Graded) -> None:
    full = course.student("partial")["puzzles"]["map"]
    assert full["status"] == "wrong" and "Spec :" in full["report"]  # the instructor's detail stays
    report = course.report("partial")
    section = report.split("## 1. Map: what to fix", 1)[1].split("## ", 1)[0]
    assert "Spec" not in section and "Yours" not in section
    assert "stay hidden" in section and "wrong output at 1 position" in section


def test_a_report_shows_the_first_differing_positions_and_counts_the_rest(course: Graded) -> None:
    report = course.report("partial")
    section = report.split("Matmul (Full): what to fix", 1)[1].split("## ", 1)[0]
    assert "Differs at (first 8 of 64)" in section
    # The spec's whole 8x8 matrix is not printed: its first rows that differ, and a count of the rest.
    assert "Spec  row 3: [" in section and "Spec  row 4: [" not in section
    assert "(and 4 more rows that differ)" in section
    assert len(report.encode()) < 10_000


def test_check_can_be_asked_about_one_puzzle(course: Graded, capsys) -> None:
    nb = course.out.parent / "class" / "partial.ipynb"
    status = main(["check", str(nb), "--puzzle", "matmul_full", "--workers", "1", "--seed", SEED])
    out = capsys.readouterr().out
    assert status == 1
    assert "Matmul (Full)" in out and "Differs at (first 8 of 64)" in out
    assert "Zip" not in out and "Map" not in out


def test_check_of_an_untouched_book_is_short(course: Graded, capsys) -> None:
    nb = course.out.parent / "class" / "untouched.ipynb"
    assert main(["check", str(nb), "--workers", "2", "--seed", SEED]) == 1  # nothing attempted is no pass
    out = capsys.readouterr().out
    assert out.count("not attempted") == len(PUZZLES)
    assert len(out.encode()) < 12_000  # was 60 KB


def test_check_refuses_a_puzzle_it_does_not_know(tmp_path, capsys) -> None:
    nb = write_nb(tmp_path / "me.ipynb", [kernel_cell("map", solution("map"))])
    assert main(["check", str(nb), "--puzzle", "mapp"]) == 2
    assert "'mapp' is not a puzzle of the book (did you mean 'map'?)" in capsys.readouterr().err


# ---------------------------------------------------------------------------- 2. a gradebook an LMS takes
ROSTER = "\ufeffName,ID,File\r\nAlice Martin,a001,partial.ipynb\r\nBruno Ortiz,b002,untouched.ipynb\r\n"


@pytest.fixture(scope="module")
def rostered(tmp_path_factory, course: Graded) -> Graded:
    d = tmp_path_factory.mktemp("rostered")
    (d / "roster.csv").write_bytes(ROSTER.encode("utf-8"))
    return grade_quietly(tmp_path_factory, [course.out.parent / "class"], d / "out", "--seed", SEED,
                         "--mapping", str(d / "roster.csv"))


def read_csv(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_a_roster_with_names_gives_ids_and_names(rostered: Graded) -> None:
    assert rostered.status == 0, rostered.stderr
    assert set(rostered.rows()) == {"a001", "b002"}
    assert rostered.student("a001")["name"] == "Alice Martin"
    assert "not among the submissions" not in rostered.stderr


def test_the_canvas_gradebook_has_a_points_possible_row(rostered: Graded) -> None:
    rows = read_csv(rostered.out / "gradebook.csv")
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Metal Puzzles"]
    assert rows[1] == ["    Points Possible", "", "", "", "", str(len(PUZZLES))]
    by_id = {r[2]: r for r in rows[2:]}
    assert by_id["a001"][0] == "Alice Martin" and by_id["a001"][5] == str(rostered.student("a001")["total"]).rstrip(
        "0").rstrip(".")
    assert by_id["b002"] == ["Bruno Ortiz", "", "b002", "", "", "0"]
    assert len(rows) == 4  # one column of grades, not 47 assignments


def test_gradebooks_for_moodle_and_a_plain_sheet_on_request(rostered: Graded, capsys) -> None:
    out = rostered.out
    assert main(["gradebook", str(out), "--lms", "moodle", "--to", str(out.parent / "moodle.csv")]) == 0
    rows = read_csv(out.parent / "moodle.csv")
    assert rows[0] == ["ID number", "Full name", "Metal Puzzles"]
    assert ["b002", "Bruno Ortiz", "0"] in rows and len(rows) == 3  # Moodle has no points-possible row
    assert main(["gradebook", str(out), "--lms", "plain", "--to", str(out.parent / "plain.csv")]) == 0
    rows = read_csv(out.parent / "plain.csv")
    assert rows[0] == ["id", "name", "total", "max_total", "status"]
    assert ["b002", "Bruno Ortiz", "0", str(len(PUZZLES)), "complete"] in rows


def test_an_incomplete_student_is_left_out_of_an_lms_import(tmp_path) -> None:
    from metal_puzzles.grading.gradebook import LMS, gradebook_csv, lms_gradebook

    results = {"puzzles": [{"id": "map", "max_points": 3}],
               "students": [{"id": "a", "name": "", "total": 1, "max_total": 3, "status": "incomplete"}]}
    # An upload must not post a grade not yet complete, and a blank cell is no "leave it": Canvas
    # posts it as the grade removed, Moodle as no grade (gradebook.py, rules C9 and M5).
    for lms in (LMS.CANVAS, LMS.MOODLE):
        book = lms_gradebook(results, lms)
        assert "a" not in [r[0] for r in csv.reader(book.text.splitlines())][1:]
        assert book.left_out == ["'a': grading did not complete (its grade in the LMS stays as it was)"]
    rows = list(csv.reader(gradebook_csv(results, LMS.PLAIN).splitlines()))
    assert rows[1] == ["a", "", "", "3", "incomplete"]  # a sheet for people says why


# ---------------------------------------------------------------------------- 5. smaller
@pytest.mark.parametrize(("mapping", "said"), [
    ("a001,partial.ipynb\nb002,untouched.ipynb\n", "the columns look swapped"),
    ("Alice Martin,a001,partial.ipynb\nBruno Ortiz,b002,untouched.ipynb\n", "the first column must be the notebook"),
])
def test_a_mapping_that_matches_no_submission_is_refused(course: Graded, tmp_path, capsys, mapping, said) -> None:
    (tmp_path / "ids.csv").write_text(mapping, encoding="utf-8")
    g = grade(capsys, [course.out.parent / "class"], tmp_path / "out", "--mapping", str(tmp_path / "ids.csv"))
    assert g.status == 2 and said in g.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_a_header_naming_swapped_columns_is_read_by_name(course: Graded, tmp_path, capsys) -> None:
    (tmp_path / "ids.csv").write_text("id;file\na001;partial.ipynb\nb002;untouched.ipynb\n", encoding="utf-8")
    g = grade(capsys, [course.out.parent / "class"], tmp_path / "out", "--mapping", str(tmp_path / "ids.csv"),
              "--seed", SEED)
    assert g.status == 0 and set(g.rows()) == {"a001", "b002"}


# ---------------------------------------------------------------------------- 4. every change on record
def changes_of(out: Path) -> list[dict[str, str]]:
    with open(out / "changes.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def own_class(course: Graded, tmp_path) -> Path:
    shutil.copytree(course.out.parent / "class", tmp_path / "class")
    return tmp_path / "class"


def test_a_changed_notebook_regraded_on_resume_is_on_record(own_class: Path, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert grade(capsys, [own_class], out, "--seed", SEED).status == 0
    assert not (out / "changes.csv").exists()  # a first grading changes nothing
    cells = partial_cells()
    cells[0] = kernel_cell("map", solution("map"))  # a late fix of puzzle 1
    write_nb(own_class / "partial.ipynb", cells)
    g = grade(capsys, [own_class], out, "--resume")
    assert g.status == 0 and "1 taken from the journal" in g.stdout
    assert "1 grade change(s) recorded in" in g.stdout
    [row] = changes_of(out)
    assert (row["student"], row["puzzle"], row["old_status"], row["old_points"], row["new_status"],
            row["new_points"]) == ("partial", "map", "wrong", "0", "passed", "1")
    assert row["why"].startswith("the notebook changed (sha256 ") and row["when"].endswith("Z")
    assert row["file"].endswith("partial.ipynb")
    report = g.report("partial")  # the student reads it too
    assert "## Changed since the last grading" in report
    assert "- 1. Map: wrong output, 0 -> passed, 1 points (the notebook changed" in report
    assert "Changed since" not in g.report("untouched")


def test_a_new_seed_and_points_file_are_on_record(own_class: Path, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert grade(capsys, [own_class], out, "--seed", SEED).status == 0
    (tmp_path / "points.toml").write_text("[points]\nzip = 3\n", encoding="utf-8")
    g = grade(capsys, [own_class], out, "--force", "--seed", "8", "--points", str(tmp_path / "points.toml"))
    assert g.status == 0
    rows = changes_of(out)
    assert [(r["student"], r["puzzle"], r["old_points"], r["new_points"]) for r in rows] == [("partial", "zip", "1", "3")]
    assert "new hidden-test seed (7 -> 8)" in rows[0]["why"] and "new points file (zip: 1 -> 3 points)" in rows[0]["why"]
    # The log outlives --force: a third grading adds to it.
    assert grade(capsys, [own_class], out, "--force", "--seed", SEED).status == 0
    assert [(r["puzzle"], r["old_points"], r["new_points"]) for r in changes_of(out)] == [("zip", "1", "3"),
                                                                                          ("zip", "3", "1")]


def test_a_resume_in_a_copied_folder_says_why_it_regrades(own_class: Path, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert grade(capsys, [own_class], out, "--seed", SEED).status == 0
    shutil.copytree(own_class, tmp_path / "copy")
    g = grade(capsys, [tmp_path / "copy"], out, "--resume")
    assert g.status == 0 and "0 taken from the journal" in g.stdout
    assert "none of the 2 notebooks in the journal is at the path graded now" in g.stderr
    assert "moved or copied" in g.stderr


# ---------------------------------------------------------------------------- 3. the class at a glance
def test_a_class_summary_is_written_from_results_json_alone(course: Graded) -> None:
    from metal_puzzles.grading.summary import class_summary_md, class_summary_svg

    results = course.results()
    text = (course.out / "summary.md").read_text(encoding="utf-8")
    assert text == class_summary_md(results)
    assert (course.out / "summary.svg").read_text(encoding="utf-8") == class_summary_svg(results)
    # Per puzzle: passed, failed and not attempted apart; the most common failure.
    assert "| 1 | Map | 0 of 2 (0%) | 0 | 1 | 1 | 0 | wrong output (1) |" in text
    assert "| 2 | Zip | 1 of 2 (50%) | 0 | 0 | 1 | 0 |" in text
    assert "| D.1 | Detective: Block Sum | 0 of 2 (0%) | 0 | 0 | 2 | 0 |" in text
    assert "| 14b | Matmul (Full) | 0 of 2 (0%) | 0 | 1 | 1 | 0 | wrong output (1) |" in text
    # The distribution of totals.
    assert "## Totals" in text and f"median 0.5 of {len(PUZZLES)}" in text


def test_the_class_summary_picture_is_an_svg_of_every_puzzle(course: Graded) -> None:
    import xml.etree.ElementTree as ET

    root = ET.parse(course.out / "summary.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert all(f"{p.number}. {p.title}" in texts for p in PUZZLES)
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert "Map: 1 failed" in titles and "Zip: 1 passed" in titles and "Detective: Block Sum: 2 not attempted" in titles


def test_the_most_common_finding_is_named_with_its_line() -> None:
    from metal_puzzles.grading.summary import puzzle_rows

    race = {"status": "findings", "points": 0, "tests": [{"status": "findings", "beyond_contract": [],
                                                          "findings": [{"kind": "race", "line": 9}]}]}
    other = {"status": "compile-error", "points": 0, "tests": [{"status": "compile-error", "beyond_contract": [],
                                                               "error": "line 2:5: error: use of undeclared identifier 'x'\n"}]}
    results = {"puzzles": [{"id": "map", "max_points": 1}],
               "students": [{"puzzles": {"map": race}}, {"puzzles": {"map": race}}, {"puzzles": {"map": other}}]}
    [row] = puzzle_rows(results)
    assert row.failed == 3 and row.most_common == ("race at line 9", 2)


def test_a_points_file_with_two_mistakes_reports_both(tmp_path, capsys) -> None:
    nb = write_nb(tmp_path / "me.ipynb", [kernel_cell("map", solution("map"))])
    (tmp_path / "points.toml").write_text("[points]\nmapp = 2\nzip = -1\n[partial]\nover_budget = 2\n", encoding="utf-8")
    status = main(["grade", str(nb), "--out", str(tmp_path / "out"), "--points", str(tmp_path / "points.toml")])
    err = capsys.readouterr().err
    assert status == 2 and "3 mistakes" in err
    assert "'mapp' is not a puzzle of the book (did you mean 'map'?)" in err
    assert "[points] zip must be a finite number of at least 0, got -1" in err
    assert "over_budget must be between 0 and 1, got 2" in err


def test_the_puzzles_command_lists_the_ids_a_points_file_takes(tmp_path, capsys) -> None:
    (tmp_path / "points.toml").write_text("[points]\nmatmul_full = 2\n", encoding="utf-8")
    assert main(["puzzles", "--points", str(tmp_path / "points.toml")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == [p.id for p in PUZZLES]
    assert lines[-1].split() == ["total", str(len(PUZZLES) + 1)]
    matmul = next(line for line in lines if line.startswith("matmul_full "))
    assert matmul.split()[1:4] == ["14b", "2", "Matmul"]


def test_a_resume_by_another_version_says_so_in_plain_words(tmp_path, capsys) -> None:
    from metal_puzzles.grading.journal import Journal, RunSettings

    nb = write_nb(tmp_path / "me.ipynb", [kernel_cell("map", solution("map"))])
    out = tmp_path / "out"
    out.mkdir()
    Journal.create(out, RunSettings(7, 20_000, "0.0.1"))
    status = main(["grade", str(nb), "--out", str(out), "--resume", "--quiet"])
    err = capsys.readouterr().err
    assert status == 2 and "RunSettings(" not in err
    assert "the journalled run used metal-puzzles version 0.0.1 (this one: " in err
    assert "--seed" not in err.split(";")[0]  # only what differs


def test_every_output_follows_the_umask(tmp_path, capsys) -> None:
    import os
    import stat

    nb = write_nb(tmp_path / "me.ipynb", [kernel_cell("map", solution("map"))])
    old = os.umask(0o027)  # group (the TAs) may read, others nothing
    try:
        g = grade(capsys, [nb], tmp_path / "out", "--seed", SEED)
        write_nb(nb, [kernel_cell("map", VISIBLE_ONLY)])
        assert grade(capsys, [nb], tmp_path / "out", "--resume").status == 0  # and a changes.csv
    finally:
        os.umask(old)
    assert g.status == 0
    found = {p.relative_to(g.out).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in g.out.rglob("*")}
    assert {"grades.csv", "results.json", "journal.jsonl", "reports", "changes.csv", "gradebook.csv",
            "summary.svg"} <= set(found)
    assert {name: mode for name, mode in found.items() if mode != (0o750 if (g.out / name).is_dir() else 0o640)} == {}


def test_a_template_under_a_header_of_the_learners_own_is_graded(tmp_path, capsys) -> None:
    p = get_puzzle("matmul_full")
    nb = write_nb(tmp_path / "me.ipynb", [kernel_cell("matmul", p.template, "constant uint THREADGROUP_MEM_SIZE = 4;\n")])
    g = grade(capsys, [nb], tmp_path / "out", "--seed", SEED)
    assert g.student("me")["puzzles"]["matmul_full"]["status"] not in ("not-attempted", "missing")
    same = write_nb(tmp_path / "same.ipynb", [kernel_cell("matmul", "  " + p.template.replace("\n", "\n\n"), p.header)])
    g = grade(capsys, [same], tmp_path / "out2", "--seed", SEED)
    assert g.student("same")["puzzles"]["matmul_full"]["status"] == "not-attempted"  # whitespace aside, the template


def test_a_roster_typed_in_nfc_names_a_file_saved_in_nfd(tmp_path, capsys) -> None:
    import unicodedata

    from metal_puzzles.grading.roster import load_roster, mapping_mismatch
    from metal_puzzles.grading.submissions import collect_submissions

    nfd = unicodedata.normalize("NFD", "José García.ipynb")
    write_nb(tmp_path / nfd, [kernel_cell("map", solution("map"))])
    (tmp_path / "roster.csv").write_text("Name;ID;File\nJosé García;j003;José García.ipynb\n", encoding="utf-8")
    roster = load_roster(tmp_path / "roster.csv")
    files, _ = collect_submissions([tmp_path / nfd], 2**20)
    assert mapping_mismatch(roster.mapping, files) is None  # refused as matching nothing, were names compared raw
    assert roster.names == {"j003": "José García"}
