"""No repeated work: identical kernel checks are run once per run and their result shared, and
the run's cost report says what was asked for, what ran and what was shared."""

from __future__ import annotations

import json

from .conftest import MAP_OK, SEED, ZIP_WRONG, grade, kernel_cell, solution, write_nb


def test_identical_submissions_are_checked_once_and_share_the_result(tmp_path, capsys):
    d = tmp_path / "class"
    d.mkdir()
    copied = [kernel_cell("map", MAP_OK), kernel_cell("zip", ZIP_WRONG), kernel_cell("guard", solution("guard"))]
    write_nb(d / "alice.ipynb", copied)
    write_nb(d / "carol.ipynb", copied)  # a copy of alice's notebook (another file)
    write_nb(d / "bob.ipynb", [kernel_cell("map", MAP_OK), kernel_cell("zip", solution("zip"))])
    g = grade(capsys, [d], tmp_path / "out", "--seed", SEED)
    assert g.status == 0, g.stderr

    cost = json.loads((g.out / "cost.json").read_text())
    assert cost["students"] == cost["graded"] == 3 and cost["notebooks_read"] == 3
    # Asked for: alice 3 + carol 3 + bob 2; distinct: map, the wrong zip, guard, the right zip.
    assert cost["kernel_checks"] == 8
    assert cost["unique_kernels"] == 4
    assert cost["runs"] == 4 and cost["shared"] == 4
    assert cost["compiles"] > 0 and cost["wall_seconds"] > 0
    assert set(cost["seconds_per_puzzle"]) == {"map", "zip", "guard"}
    assert "kernel checks, 4 unique, 4 run, 4 shared" in g.stdout

    alice, carol, bob = g.student("alice"), g.student("carol"), g.student("bob")
    assert alice["puzzles"] == carol["puzzles"]  # every test, finding and report, byte for byte
    assert alice["puzzles"]["map"] == bob["puzzles"]["map"]
    assert alice["puzzles"]["zip"]["status"] == "wrong" and bob["puzzles"]["zip"]["status"] == "passed"
    rows = g.rows()
    assert [rows[s]["total"] for s in ("alice", "carol", "bob")] == ["2", "2", "2"]


def test_a_shared_result_is_what_the_student_gets_alone(tmp_path, capsys):
    """Sharing changes nothing in a grade: carol graded alone gets what she got beside alice."""
    cells = [kernel_cell("map", MAP_OK), kernel_cell("zip", ZIP_WRONG)]
    (tmp_path / "both").mkdir()
    (tmp_path / "alone").mkdir()
    for name in ("alice", "carol"):
        write_nb(tmp_path / "both" / f"{name}.ipynb", cells)
    write_nb(tmp_path / "alone" / "carol.ipynb", cells)
    both = grade(capsys, [tmp_path / "both"], tmp_path / "out-both", "--seed", SEED)
    alone = grade(capsys, [tmp_path / "alone"], tmp_path / "out-alone", "--seed", SEED)
    assert json.loads((both.out / "cost.json").read_text())["shared"] == 2
    assert json.loads((alone.out / "cost.json").read_text())["shared"] == 0
    assert both.student("carol")["puzzles"] == alone.student("carol")["puzzles"]
