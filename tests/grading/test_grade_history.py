"""Issue 37, section 2: changes.csv, the course's history of regrades, misses nothing, however a
run was started (the class's folder typed another way), stopped (Ctrl-C during --force, an
unwritable changes.csv) and resumed, and whatever an instructor did to the file (a hand edit, a
link put in its place)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from metal_puzzles.grading.history import BASELINE_NAME
from metal_puzzles.grading.journal import Journal

from .conftest import SEED, grade, kernel_cell, solution, write_nb

WRONG_MAP = "uint i = thread_position_in_grid.x;\nout[i] = a[i];\n"


def changes_of(out: Path) -> list[dict[str, str]]:
    with open(out / "changes.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def cls(tmp_path) -> Path:
    """Two students; alice fixes her map kernel after the first grading (``fix``)."""
    d = tmp_path / "class"
    d.mkdir()
    write_nb(d / "alice.ipynb", [kernel_cell("map", WRONG_MAP)])
    write_nb(d / "bob.ipynb", [kernel_cell("map", solution("map"))])
    return d


def fix(cls: Path) -> None:
    write_nb(cls / "alice.ipynb", [kernel_cell("map", solution("map"))])


def alices_fix_is_on_record(out: Path) -> None:
    rows = [(r["student"], r["puzzle"], r["old_points"], r["new_points"]) for r in changes_of(out)]
    assert rows == [("alice", "map", "0", "1")]


def test_a_class_regraded_by_another_spelling_of_its_path_is_on_record(cls, tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "out"
    assert grade(capsys, [cls.resolve()], out, "--seed", SEED).status == 0
    fix(cls)
    monkeypatch.chdir(tmp_path)
    g = grade(capsys, [Path("./class/")], out, "--force", "--seed", SEED)
    assert g.status == 0, g.stderr
    alices_fix_is_on_record(out)
    assert "## Changed since the last grading" in g.report("alice")


def test_ctrl_c_during_force_then_resume_is_on_record(cls, tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "out"
    assert grade(capsys, [cls], out, "--seed", SEED).status == 0
    fix(cls)
    append = Journal.append

    def append_then_interrupt(journal: Journal, record: dict) -> None:  # Ctrl-C once one student is durable
        append(journal, record)
        raise KeyboardInterrupt

    before = (out / "results.json").read_bytes()
    monkeypatch.setattr(Journal, "append", append_then_interrupt)
    g = grade(capsys, [cls], out, "--force", "--seed", SEED)
    assert g.status == 130 and "--resume" in g.stderr
    assert (out / "results.json").read_bytes() == before  # --force removes nothing before replacing it
    assert (out / BASELINE_NAME).exists()  # the results the stopped run compares with, kept for its --resume
    monkeypatch.setattr(Journal, "append", append)
    g = grade(capsys, [cls], out, "--resume")
    assert g.status == 0, g.stderr
    alices_fix_is_on_record(out)
    assert not (out / BASELINE_NAME).exists()  # the history is up to date: nothing to record twice
    assert grade(capsys, [cls], out, "--resume").status == 0
    alices_fix_is_on_record(out)


def test_an_unwritable_changes_csv_is_named_and_written_once_fixed(cls, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert grade(capsys, [cls], out, "--seed", SEED).status == 0
    fix(cls)
    (out / "changes.csv").mkdir()  # what no write can replace
    g = grade(capsys, [cls], out, "--force", "--seed", SEED)
    assert g.status == 2 and f"{out / 'changes.csv'}" in g.stderr and "not a regular file" in g.stderr
    (out / "changes.csv").rmdir()
    g = grade(capsys, [cls], out, "--force", "--seed", SEED)
    assert g.status == 0, g.stderr
    alices_fix_is_on_record(out)


def test_changes_csv_failing_at_the_end_is_written_by_the_resume_it_advises(cls, tmp_path, capsys, monkeypatch) -> None:
    from metal_puzzles.grading import history

    out = tmp_path / "out"
    assert grade(capsys, [cls], out, "--seed", SEED).status == 0
    fix(cls)
    write = history.atomic_write

    def full_disk(path: Path, data: bytes) -> None:
        if path.name == "changes.csv":
            raise OSError(28, "No space left on device")
        write(path, data)

    monkeypatch.setattr(history, "atomic_write", full_disk)
    g = grade(capsys, [cls], out, "--force", "--seed", SEED)
    assert g.status == 3 and f"cannot write {out / 'changes.csv'}" in g.stderr and "--resume" in g.stderr
    assert (out / "results.json").exists()  # the new grades are out: only their history is missing
    monkeypatch.setattr(history, "atomic_write", write)
    assert grade(capsys, [cls], out, "--resume").status == 0
    alices_fix_is_on_record(out)


def test_a_hand_edit_without_a_final_newline_keeps_each_change_a_row(cls, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert grade(capsys, [cls], out, "--seed", SEED).status == 0
    header = "when,student,file,puzzle,old_status,old_points,new_status,new_points,why"
    old = header + "\r\n2026-01-01T00:00:00Z,carol,carol.ipynb,map,wrong,0,passed,1,regraded by hand"
    (out / "changes.csv").write_bytes(old.encode("utf-8"))
    fix(cls)
    assert grade(capsys, [cls], out, "--force", "--seed", SEED).status == 0
    rows = changes_of(out)
    assert all(len(r) == 9 and None not in r for r in rows)
    assert [(r["student"], r["why"]) for r in rows][0] == ("carol", "regraded by hand")
    assert [(r["student"], r["puzzle"], r["new_points"]) for r in rows[1:]] == [("alice", "map", "1")]
    assert (out / "changes.csv").read_bytes().startswith(old.encode("utf-8"))  # the hand edit kept as it was


def test_changes_csv_as_a_link_never_sends_a_write_outside_out(cls, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert grade(capsys, [cls], out, "--seed", SEED).status == 0
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("not the grader's\n", encoding="utf-8")
    (out / "changes.csv").symlink_to(outside)
    fix(cls)
    g = grade(capsys, [cls], out, "--force", "--seed", SEED)
    assert g.status == 2 and "is a symbolic link" in g.stderr and str(out / "changes.csv") in g.stderr
    assert outside.read_text(encoding="utf-8") == "not the grader's\n"
    (out / "changes.csv").unlink()
    assert grade(capsys, [cls], out, "--force", "--seed", SEED).status == 0
    alices_fix_is_on_record(out)
    assert outside.read_text(encoding="utf-8") == "not the grader's\n"
