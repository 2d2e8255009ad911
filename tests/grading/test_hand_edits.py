"""Issue 37, section 3: hand edits and odd files never cost a class run. The files the grader wrote
(results.json, the journal) are read back as untrusted: a hand edit is a located error naming the
file, the field and what is expected, before any grading; an output is never removed before its
replacement is written; a FIFO or a device where the grader reads is refused, never opened as data;
a journal left empty by a run stopped as it started is a run to start again."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from metal_puzzles import cli
from metal_puzzles.cli import main

from .conftest import SEED, Graded, grade, grade_quietly, kernel_cell, solution, write_nb

OUTPUTS = ("results.json", "grades.csv", "gradebook.csv", "summary.md", "journal.jsonl")


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Graded:
    """Two students, one with a puzzle passed and one failed: a run whose results.json to edit."""
    d = tmp_path_factory.mktemp("hand")
    (d / "class").mkdir()
    write_nb(d / "class" / "alice.ipynb", [kernel_cell("map", solution("map")), kernel_cell("zip", solution("zip"))])
    write_nb(d / "class" / "bob.ipynb", [kernel_cell("map", "uint i = thread_position_in_grid.x;\nout[i] = a[i];\n")])
    return grade_quietly(tmp_path_factory, [d / "class"], d / "out", "--seed", SEED)


def copy_of(graded: Graded, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(graded.out, out)
    return out


def edit(out: Path, change: Callable[[dict], None]) -> None:
    record = json.loads((out / "results.json").read_text(encoding="utf-8"))
    change(record)
    (out / "results.json").write_text(json.dumps(record, indent=1), encoding="utf-8")


def contents(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in OUTPUTS}


def _set(path: str, value: object) -> Callable[[dict], None]:
    """A change setting the field at ``path`` (keys and list indices, dot-separated) to ``value``;
    the value ``DELETE`` removes the field."""
    *parents, last = [int(k) if k.isdigit() else k for k in path.split(".")]

    def change(record: dict) -> None:
        at: object = record
        for key in parents:
            at = at[key]  # type: ignore[index]
        if value is DELETE:
            del at[last]  # type: ignore[attr-defined]
        else:
            at[last] = value  # type: ignore[index]
    return change


DELETE = object()


def regraded_by_hand(record: dict) -> None:
    """What an instructor types: a grade and why, in the points field."""
    record["students"][0]["puzzles"]["map"]["points"] = "1 (regraded by hand)"


# ---------------------------------------------------------------------------- grade --force over a hand edit
def test_a_force_over_hand_edited_points_is_refused_before_grading(graded: Graded, tmp_path, capsys) -> None:
    """Was: the whole class graded, then a ValueError traceback from the record of changes, with
    results.json, grades.csv and gradebook.csv already removed by --force."""
    out = copy_of(graded, tmp_path)
    edit(out, regraded_by_hand)
    before = contents(out)
    g = grade(capsys, [graded.out.parent / "class"], out, "--force", "--seed", SEED)
    assert g.status == 2
    assert ("results.json: students[0].puzzles.map.points: expected a finite number or null, got "
            "\"1 (regraded by hand)\" (student \"alice\")") in g.stderr
    assert "nothing was graded" in g.stderr and "wrote" not in g.stdout
    assert contents(out) == before  # every output as it was, the hand edit included


def test_a_force_that_stops_midway_leaves_every_previous_output(graded: Graded, tmp_path, capsys, monkeypatch
                                                                 ) -> None:
    """--force replaces the results: it never removes them before their replacements exist."""
    out = copy_of(graded, tmp_path)
    before = {name: data for name, data in contents(out).items() if name != "journal.jsonl"}  # a new run's journal

    def interrupted(*args, **kwargs):
        assert (out / "results.json").read_bytes() == before["results.json"]  # still there while grading
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "grade_submissions", interrupted)
    g = grade(capsys, [graded.out.parent / "class"], out, "--force", "--seed", SEED)
    assert g.status == 130
    assert {name: data for name, data in contents(out).items() if name in before} == before
    assert sorted(os.listdir(out / "reports")) == sorted(os.listdir(graded.out / "reports"))


def test_a_force_over_valid_results_replaces_them(graded: Graded, tmp_path, capsys) -> None:
    out = copy_of(graded, tmp_path)
    (out / "reports" / "009-gone.md").write_text("a student no longer in the class")
    g = grade(capsys, [graded.out.parent / "class"], out, "--force", "--seed", SEED)
    assert g.status == 0, g.stderr
    assert g.results()["students"] == graded.results()["students"]
    assert "009-gone.md" not in os.listdir(out / "reports")


# ---------------------------------------------------------------------------- gradebook over hand edits
@pytest.mark.parametrize("change, says", [
    (regraded_by_hand, "students[0].puzzles.map.points: expected a finite number or null, got "
                       "\"1 (regraded by hand)\" (student \"alice\")"),
    (_set("students.1.total", DELETE), "students[1].total: missing; expected a finite number"),
    (_set("students.0.total", "3"), "students[0].total: expected a finite number, got \"3\""),
    (_set("students.1", ["bob", 0]), "students[1]: expected an object, got [\"bob\", 0]"),
    (_set("students", {"alice": 1}), "students: expected a list"),
    (_set("students.0.puzzles.zip", [1, 0]), "students[0].puzzles.zip: expected an object"),
    (_set("students.0.name", {"first": "Alice"}), "students[0].name: expected a string or null"),
    (_set("students.0.status", "done"), "students[0].status: expected 'complete' or 'incomplete', got \"done\""),
    (_set("puzzles.0.max_points", None), "puzzles[0].max_points: expected a finite number, got null"),
    (_set("students.0.puzzles.map.points", 0.5), "students[0].total (student \"alice\"): 2 is not the sum of the "
                                                 "student's puzzles' points (1.5)"),
    (_set("students.0.puzzles.map.tests.0.findings", 3), "students[0].puzzles.map.tests[0].findings: expected a list"),
    (_set("seed", -1), "seed: expected a whole number of at least 0"),
    # The roster's LMS identities, which the Canvas and Moodle gradebooks write (was: a number there was
    # dropped without a word and the student's row written under the grader's id instead).
    (_set("students.0.lms", {"ID": 101}), "students[0].lms.ID: expected a string, got 101 (student \"alice\")"),
    (_set("students.0.lms", ["101"]), "students[0].lms: expected an object, got [\"101\"]"),
])
def test_gradebook_over_a_hand_edit_names_the_field(graded: Graded, tmp_path, capsys, change, says) -> None:
    out = copy_of(graded, tmp_path)
    edit(out, change)
    for lms in ("canvas", "moodle", "plain"):
        assert main(["gradebook", str(out), "--lms", lms]) == 2
        captured = capsys.readouterr()
        assert f"{out / 'results.json'}: {says}" in captured.err, captured.err
        assert captured.out == ""


@pytest.mark.parametrize("damage, says", [
    (lambda text: text[: len(text) // 2], "not JSON"),  # cut short
    (lambda text: "", "line 1, column 1: not JSON"),
    (lambda text: "[" + text + "]", "the file: expected an object"),  # a list where an object is
    (lambda text: re.sub(r'"points": [0-9.]+', '"points": NaN', text, count=1),
     "students[0].puzzles.map.points: expected a finite number or null, got NaN"),
    (lambda text: "[" * 100_000, "nested too deeply to be a results.json"),  # nested past the parser's recursion
])
def test_gradebook_over_a_damaged_file_says_where(graded: Graded, tmp_path, capsys, damage, says) -> None:
    out = copy_of(graded, tmp_path)
    path = out / "results.json"
    path.write_text(damage(path.read_text(encoding="utf-8")), encoding="utf-8")
    assert main(["gradebook", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and says in err, err


def test_gradebook_keeps_keys_it_does_not_know(graded: Graded, tmp_path, capsys) -> None:
    """An instructor's own notes beside the grader's fields change nothing."""
    out = copy_of(graded, tmp_path)
    assert main(["gradebook", str(out)]) == 0
    plain = capsys.readouterr().out
    edit(out, lambda r: (r.update(note="regraded on 3 March"), r["students"][0].update(ta="Sam")))
    assert main(["gradebook", str(out)]) == 0
    assert capsys.readouterr().out == plain


def test_a_plain_run_over_a_hand_edit_is_told_to_resume_or_force(graded: Graded, tmp_path, capsys) -> None:
    out = copy_of(graded, tmp_path)
    edit(out, regraded_by_hand)
    g = grade(capsys, [graded.out.parent / "class"], out, "--seed", SEED)
    assert g.status == 2 and "already holds the results of a run" in g.stderr


def test_gradebook_of_a_folder_without_results(tmp_path, capsys) -> None:
    assert main(["gradebook", str(tmp_path)]) == 2
    assert "results.json: no such file" in capsys.readouterr().err


# ---------------------------------------------------------------------------- odd files where the grader reads
def run_cli(*args: str) -> subprocess.CompletedProcess:
    """The command in a process of its own: a regression that blocks on a FIFO fails on the
    timeout (a guard, not a measure: it waits for the command to end) instead of hanging the suite."""
    return subprocess.run([sys.executable, "-m", "metal_puzzles.cli", *args], capture_output=True, text=True,
                          timeout=120)


def plant(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


needs_special_files = pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"),
                                         reason="FIFOs and /dev/zero are POSIX's")


@needs_special_files
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_an_out_inside_the_submissions_holding_a_special_results_json_is_refused_first(tmp_path, kind) -> None:
    """Was: the run hung on the FIFO, or died of MemoryError reading /dev/zero, before its own
    "--out inside the submissions" refusal."""
    d = tmp_path / "class"
    (d / "alice").mkdir(parents=True)
    write_nb(d / "alice" / "puzzles.ipynb", [])
    plant(d / "alice" / "results.json", kind)
    done = run_cli("grade", str(d), "--out", str(d / "alice"), "--quiet", "--force")
    assert done.returncode == 2 and "inside the submissions folder" in done.stderr, done.stderr
    assert os.path.lexists(d / "alice" / "results.json")


@needs_special_files
@pytest.mark.parametrize("kind, said", [("fifo", "a FIFO (named pipe)"), ("dev-zero", "a symbolic link to a device")])
def test_a_special_file_named_results_json_in_out_is_never_opened(tmp_path, kind, said) -> None:
    nb = write_nb(tmp_path / "alice.ipynb", [])
    out = tmp_path / "out"
    out.mkdir()
    plant(out / "results.json", kind)
    done = run_cli("grade", str(nb), "--out", str(out), "--quiet", "--force")
    assert done.returncode == 2 and f"results.json is {said}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "wrote" not in done.stdout
    done = run_cli("gradebook", str(out))
    assert done.returncode == 2 and f"results.json is {said}" in done.stderr, done.stderr


@needs_special_files
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_special_file_named_journal_is_never_opened_on_resume(tmp_path, kind) -> None:
    nb = write_nb(tmp_path / "alice.ipynb", [])
    out = tmp_path / "out"
    out.mkdir()
    plant(out / "journal.jsonl", kind)
    done = run_cli("grade", str(nb), "--out", str(out), "--quiet", "--resume")
    assert done.returncode == 2 and "nothing to resume" in done.stderr, done.stderr
    done = run_cli("grade", str(nb), "--out", str(out), "--quiet", "--force")
    if kind == "fifo":  # refused before grading: a rename could not put the new journal in its place
        assert done.returncode == 2 and "journal.jsonl is a FIFO (named pipe)" in done.stderr, done.stderr
    else:  # a link is replaced by the new journal, never followed
        assert done.returncode == 0, done.stderr
        assert (out / "journal.jsonl").is_file() and not (out / "journal.jsonl").is_symlink()


@needs_special_files
def test_a_fifo_named_changes_csv_is_refused_before_grading(graded: Graded, tmp_path) -> None:
    """Was: the class graded, then the run blocked for ever opening the FIFO to add its changes."""
    out = copy_of(graded, tmp_path)

    def bob_passed(record: dict) -> None:  # a valid hand edit: the regrade then changes bob's grade
        bob = record["students"][1]
        bob["puzzles"]["map"].update(status="passed", points=1)
        bob["total"] += 1

    edit(out, bob_passed)
    before = (out / "results.json").read_bytes()
    os.mkfifo(out / "changes.csv")
    done = run_cli("grade", str(graded.out.parent / "class"), "--out", str(out), "--quiet", "--force", "--seed", SEED)
    assert done.returncode == 2 and "changes.csv is a FIFO (named pipe)" in done.stderr, done.stderr
    assert (out / "results.json").read_bytes() == before


def test_reading_a_special_journal_is_refused_by_name(tmp_path) -> None:
    from metal_puzzles.grading.journal import Journal, JournalError

    if not hasattr(os, "mkfifo"):
        pytest.skip("FIFOs are POSIX's")
    os.mkfifo(tmp_path / "journal.jsonl")
    with pytest.raises(JournalError, match=r"journal\.jsonl is a FIFO \(named pipe\), not a file the grader wrote"):
        Journal.resume(tmp_path)


# ---------------------------------------------------------------------------- a journal of a run that never started
@pytest.mark.parametrize("journal, said", [(b"", "is empty"), (b'{"type": "run", "se', "is only its run record, cut short")])
def test_resuming_a_run_that_never_started_grades_from_the_beginning(tmp_path, capsys, journal, said) -> None:
    """Was: "does not start with a run record; it is not a grading journal"."""
    nb = write_nb(tmp_path / "alice.ipynb", [kernel_cell("map", solution("map"))])
    out = tmp_path / "out"
    out.mkdir()
    (out / "journal.jsonl").write_bytes(journal)
    g = grade(capsys, [nb], out, "--resume", "--seed", SEED)
    assert g.status == 0, g.stderr
    assert f"journal.jsonl {said}: the run it journals stopped before grading anyone; grading every notebook " \
           f"from the beginning (hidden-test seed {SEED})" in g.stderr
    assert g.student("alice")["puzzles"]["map"]["status"] == "passed"
    lines = (out / "journal.jsonl").read_text().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["run", "student"]


def test_a_journal_that_is_not_one_is_still_refused(tmp_path, capsys) -> None:
    nb = write_nb(tmp_path / "alice.ipynb", [])
    out = tmp_path / "out"
    out.mkdir()
    (out / "journal.jsonl").write_bytes(b"my notes")  # no whole line, and not a run record's beginning
    g = grade(capsys, [nb], out, "--resume")
    assert g.status == 2 and "not a grading journal" in g.stderr
    assert (out / "journal.jsonl").read_bytes() == b"my notes"


def test_a_file_past_the_bound_is_not_read(tmp_path) -> None:
    from metal_puzzles.grading.own_files import OwnFileError, read_own_file

    path = tmp_path / "results.json"
    with open(path, "wb") as f:
        f.truncate(2**30)  # a sparse gigabyte: nothing to read, but a MemoryError if it were
    with pytest.raises(OwnFileError, match=r"results\.json is 1024\.0 MiB, more than the grader reads back"):
        read_own_file(path, max_bytes=2**20)
    path.write_bytes(b"{}")
    assert read_own_file(path, max_bytes=2**20) == b"{}"
