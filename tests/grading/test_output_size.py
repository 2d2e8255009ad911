"""Second red team, output size: a notebook of kernels with huge identifiers made a 20 MiB
results.json record and journal line. Every record is bounded whatever a submission holds."""

from __future__ import annotations

import json

from metal_puzzles.grading.output import BYTES_PER_STUDENT
from metal_puzzles.grading.record_size import MAX_ISSUES, bound_issues
from metal_puzzles.puzzles import PUZZLES, get_puzzle, solution_source

from .conftest import KERNEL_PUZZLES, grade, kernel_cell, write_nb

NAME = "x" * 40_000  # the source stays under the grader's 128 KiB a kernel
#: What one student may cost in results.json and the journal: the whole book failing, with findings.
MAX_RECORD_BYTES = 256 * 1024


def test_huge_identifiers_make_bounded_records(capsys, tmp_path) -> None:
    kernels = sorted({p.kernel_name for p in KERNEL_PUZZLES})[:13]
    cells = [kernel_cell(k, f"float {NAME} = 1.0f;\nout[0] = {NAME} + {NAME}q;\n") for k in kernels]
    d = tmp_path / "class"
    d.mkdir()
    write_nb(d / "huge.ipynb", cells)
    g = grade(capsys, [d], tmp_path / "out", "--seed", "1")
    assert g.status == 0, g.stderr
    record = g.student("huge")
    assert len(json.dumps(record)) < MAX_RECORD_BYTES
    journal_lines = (g.out / "journal.jsonl").read_bytes().splitlines()
    assert max(len(line) for line in journal_lines) < MAX_RECORD_BYTES
    assert len(g.report("huge").encode()) < MAX_RECORD_BYTES
    # Still says what is wrong, and where.
    failing = [s for s in record["puzzles"].values() if s["status"] == "compile-error"]
    assert failing and all("error: " in s["tests"][0]["error"] for s in failing), [s["tests"][0]["error"][:80] for s in failing]
    assert all("more characters" in s["tests"][0]["error"] for s in failing)


def test_notebook_issues_are_bounded() -> None:
    issues = [f"issue {n}: " + "y" * 10_000 for n in range(500)]
    kept = bound_issues(issues)
    assert len(kept) == MAX_ISSUES + 1 and kept[-1] == f"... and {500 - MAX_ISSUES} more issues with this notebook"
    assert all(len(i) < 600 for i in kept)


def test_a_notebook_of_characters_outside_ascii_makes_a_record_within_what_the_grader_reserves(
        capsys, tmp_path) -> None:
    """Issue 27 §6b: a 2.1 MiB notebook made a 5.3 MiB journal line although the grader reserves
    1 MiB a student: summaries were cut by characters, and an emoji is 12 bytes of ASCII JSON."""
    kernels = sorted({p.kernel_name for p in KERNEL_PUZZLES})
    # About 2.1 MiB whatever the number of kernel puzzles: each emoji is 12 bytes of ASCII JSON
    # ("\\ud83d\\ude00"), twice in each kernel's cell.
    name = "\U0001F600" * int(2.15 * 2**20 / (2 * 12 * len(kernels)))
    d = tmp_path / "class"
    d.mkdir()
    cells = [kernel_cell(k, f"float x = 1.0f; // {name}\nout[0] = x + {name};\n") for k in kernels]
    write_nb(d / "emoji.ipynb", cells)
    write_nb(d / "bob.ipynb", [kernel_cell("map", solution_source(get_puzzle("map")))])
    assert 2.0 < (d / "emoji.ipynb").stat().st_size / 2**20 < 2.3
    g = grade(capsys, [d], tmp_path / "out", "--seed", "1")
    assert g.status == 0, g.stderr
    record = g.student("emoji")
    journal_line = max((g.out / "journal.jsonl").read_bytes().splitlines(), key=len)
    written = [len(json.dumps(record, ensure_ascii=False, indent=1).encode()), len(journal_line),
               len(g.report("emoji").encode())]
    assert max(written) <= MAX_RECORD_BYTES and sum(written) <= BYTES_PER_STUDENT, written
    # Still graded and still saying what is wrong.
    assert len(record["puzzles"]) == len(PUZZLES)
    assert {s["status"] for s in record["puzzles"].values()} >= {"compile-error"}
    assert all("error" in s["report"] for s in record["puzzles"].values() if s["status"] == "compile-error")
    assert g.student("bob")["puzzles"]["map"]["passed"]
