"""Issue 28, an instructor's course end to end: reports a teacher can send as they are (no hidden
test's values, untouched puzzles "not attempted", short), a gradebook an LMS imports, the class at
a glance, and every change of a grade on record."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from metal_puzzles.cli import main
from metal_puzzles.puzzles import PUZZLES, get_puzzle

from .conftest import SEED, Graded, grade_quietly, kernel_cell, solution, write_nb

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
    assert "28364" not in section  # the spec's whole 8x8 matrix is not printed
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
