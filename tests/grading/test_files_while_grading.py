"""Second red team, ids and files: a notebook replaced by a copy while the class is graded is
graded as it is; one whose content changed is not scored and --resume grades it again; and an
``--out`` among the submissions is refused, so --force can never remove a student's files."""

from __future__ import annotations

import os

from metal_puzzles.grading.grade import collect_notebooks, grade_submissions
from metal_puzzles.grading.journal import Journal, RunSettings
from metal_puzzles.grading.limits import Limits

from .conftest import MAP_OK, grade, kernel_cell, write_nb

LIMITS = Limits(wall_seconds=30)


def _replace(path, data: bytes) -> None:
    """What an editor or a sync tool does: a new file renamed over the old one (a new inode)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def test_a_notebook_replaced_by_a_copy_while_grading_is_graded(tmp_path) -> None:
    nb = write_nb(tmp_path / "alice.ipynb", [kernel_cell("map", MAP_OK)])
    collected = collect_notebooks([tmp_path])
    inode = nb.stat().st_ino
    _replace(nb, nb.read_bytes())
    assert nb.stat().st_ino != inode
    run = grade_submissions([tmp_path], limits=LIMITS, workers=1, seed=1, progress=False, collected=collected)
    st = run.students[0]
    assert st.puzzles["map"]["status"] == "passed" and st.complete and st.notebook_issues == []


def test_a_notebook_changed_while_grading_is_graded_again_on_resume(tmp_path) -> None:
    d = tmp_path / "class"
    d.mkdir()
    nb = write_nb(d / "alice.ipynb", [kernel_cell("map", MAP_OK)])
    out = tmp_path / "out"
    out.mkdir()
    journal = Journal.create(out, RunSettings(1, LIMITS.max_steps, "test"))
    collected = collect_notebooks([d])
    _replace(nb, nb.read_bytes().replace(b"MetalKernel", b"MetalKernel "))  # other content
    run = grade_submissions([d], limits=LIMITS, workers=1, progress=False, collected=collected, journal=journal)
    st = run.students[0]
    assert not st.complete and st.puzzles["map"]["points"] is None  # not scored: neither 0 nor kept
    assert "changed while the class was graded" in st.puzzles["map"]["reason"]
    again = grade_submissions([d], limits=LIMITS, workers=1, progress=False, journal=Journal.resume(out))
    assert again.reused == 0 and again.students[0].complete
    assert again.students[0].puzzles["map"]["status"] == "passed"


def test_out_inside_the_submissions_is_refused_and_nothing_is_removed(capsys, tmp_path) -> None:
    d = tmp_path / "class"
    (d / "alice" / "reports").mkdir(parents=True)
    write_nb(d / "alice" / "puzzles.ipynb", [])
    (d / "alice" / "reports" / "my_notes.txt").write_text("mine")
    (d / "alice" / "grades.csv").write_text("my own grades")
    g = grade(capsys, [d], d / "alice", "--force")
    assert g.status == 2 and "inside the submissions folder" in g.stderr
    assert (d / "alice" / "reports" / "my_notes.txt").read_text() == "mine"
    assert (d / "alice" / "grades.csv").read_text() == "my own grades"


def test_a_submission_inside_outs_result_names_is_refused(capsys, tmp_path) -> None:
    out = tmp_path / "out"
    (out / "reports").mkdir(parents=True)
    nb = write_nb(out / "reports" / "bob.ipynb", [])
    g = grade(capsys, [nb], out, "--force")
    assert g.status == 2 and "lies in what --out" in g.stderr and nb.exists()
