"""Second red team, output size: a notebook of kernels with huge identifiers made a 20 MiB
results.json record and journal line. Every record is bounded whatever a submission holds."""

from __future__ import annotations

import json

from metal_puzzles.grading.bounds import MAX_ISSUES, bound_issues

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
