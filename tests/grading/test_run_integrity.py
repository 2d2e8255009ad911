"""The run itself under attack or accident: workers killed (mid-task, between tasks, on every
attempt), limits hit, a full disk, an unusable or used ``--out``, an interrupted or crashed run
and ``--resume``, and the hidden tests' seed.

Every run grades the well-behaved students of ``conftest.clean_students`` with the clean run's
seed, so each can check that their grades are exactly the clean run's."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from metal_puzzles.grading import journal as journal_module
from metal_puzzles.grading import output as output_module
from metal_puzzles.grading import pool as pool_module
from metal_puzzles.grading.pool import EventKind, PoolEvent
from metal_puzzles.grading.tasks import CheckTask

from .conftest import (
    MAP_OK,
    SEED,
    Graded,
    clean_students,
    grade,
    kernel_cell,
    same_as_clean,
    solution,
    write_nb,
)


@pytest.fixture
def cls(tmp_path) -> Path:
    d = tmp_path / "class"
    d.mkdir()
    clean_students(d)
    return d


def inject(monkeypatch, hook) -> list[PoolEvent]:
    """Make every worker pool of the next run call ``hook(event)``; returns the events seen."""
    seen: list[PoolEvent] = []
    real = pool_module.ProcessPoolRunner

    def observed(event: PoolEvent) -> None:
        seen.append(event)
        hook(event)

    monkeypatch.setattr(pool_module, "ProcessPoolRunner",
                        lambda limits, workers=None: real(limits, workers, on_event=observed))
    return seen


def is_bobs_zip(event: PoolEvent) -> bool:
    return isinstance(event.task, CheckTask) and event.task.puzzles == ("zip",) and event.task.task_id.startswith("3:")


def test_worker_killed_mid_task_is_retried(cls, tmp_path, capsys, monkeypatch, clean_run: Graded) -> None:
    killed = []

    def kill_once(e: PoolEvent) -> None:
        if e.kind is EventKind.STARTED and is_bobs_zip(e) and not killed:
            killed.append(e.pid)
            os.kill(e.pid, signal.SIGKILL)

    inject(monkeypatch, kill_once)
    g = grade(capsys, [cls], tmp_path / "out", "--seed", SEED)
    assert killed
    assert g.status == 0, g.stderr
    same_as_clean(g, clean_run)


def test_worker_killed_on_every_attempt_is_a_grader_fault(cls, tmp_path, capsys, monkeypatch,
                                                          clean_run: Graded) -> None:
    attempts = []

    def kill_always(e: PoolEvent) -> None:
        if e.kind is EventKind.STARTED and is_bobs_zip(e):
            attempts.append(e.pid)
            os.kill(e.pid, signal.SIGKILL)

    inject(monkeypatch, kill_always)
    g = grade(capsys, [cls], tmp_path / "out", "--seed", SEED)
    assert len(attempts) == 3  # the first try and two retries, each on a fresh worker
    assert g.status == 1 and "grading did not complete" in g.stderr
    bob = g.rows()["bob"]
    assert (bob["zip"], bob["map"], bob["total"], bob["status"]) == ("", "1", "1", "incomplete")
    zip_ = g.student("bob")["puzzles"]["zip"]
    assert zip_["status"] == "grader-fault" and zip_["points"] is None
    assert "died on each of 3 attempts (last: killed by signal SIGKILL)" in zip_["reason"]
    assert g.results()["complete"] is False
    assert "Grading did not complete" in g.report("bob")
    same_as_clean(g, clean_run, ids=("alice", "alice_link"))

    # Resuming tries again what the grader failed, and only that.
    monkeypatch.undo()
    again = grade(capsys, [cls], tmp_path / "out", "--resume")
    assert again.status == 0, again.stderr
    assert "2 taken from the journal" in again.stdout
    same_as_clean(again, clean_run)


def test_worker_killed_between_tasks_is_replaced(cls, tmp_path, capsys, monkeypatch, clean_run: Graded) -> None:
    killed = []

    def kill_idle(e: PoolEvent) -> None:
        if e.kind is EventKind.FINISHED and len(killed) < 3:
            killed.append(e.pid)
            os.kill(e.pid, signal.SIGKILL)

    inject(monkeypatch, kill_idle)
    g = grade(capsys, [cls], tmp_path / "out", "--seed", SEED)
    assert len(killed) == 3
    assert g.status == 0, g.stderr
    same_as_clean(g, clean_run)


def test_time_limit_is_the_kernels_and_the_run_goes_on(cls, tmp_path, capsys, clean_run: Graded) -> None:
    """With the step budget out of the way, an endless loop meets the time limit (its CPU time)."""
    write_nb(cls / "endless.ipynb", [kernel_cell("map", "uint i = 0;\nwhile (true) { i++; }\n")])
    g = grade(capsys, [cls], tmp_path / "out", "--seed", SEED, "--timeout", "2", "--max-steps", "1000000000")
    assert g.status == 0
    m = g.student("endless")["puzzles"]["map"]
    assert m["status"] == "error" and m["points"] == 0
    assert m["reason"] == "the kernel ran for more than 2 s of CPU time and was stopped"
    same_as_clean(g, clean_run)


def test_memory_limit_is_the_notebooks_and_the_run_goes_on(cls, tmp_path, capsys, clean_run: Graded) -> None:
    """Parsing a notebook that needs more memory than a worker has is that student's problem."""
    with open(cls / "huge_list.ipynb", "w") as f:  # 40 MB of JSON, some 400 MB as Python objects
        f.write('{"nbformat": 4, "cells": [], "metadata": {"x": [' + "1.5," * 10_000_000 + "1]}}")
    g = grade(capsys, [cls], tmp_path / "out", "--seed", SEED, "--memory", "640")
    assert g.status == 0, g.stderr
    issues = g.student("huge_list")["issues"]
    assert issues == ["not a notebook: reading its JSON needs more memory than a grading worker has (--memory)"]
    same_as_clean(g, clean_run)


def test_workers_that_cannot_start_stop_the_run_clearly(cls, tmp_path, capsys) -> None:
    g = grade(capsys, [cls], tmp_path / "out", "--memory", "64")
    assert g.status == 3
    assert "worker processes cannot start" in g.stderr and "64 MiB" in g.stderr
    assert "--resume" in g.stderr and "Traceback" not in g.stderr


def _journal(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]


def test_full_disk_while_journalling_stops_cleanly_and_resumes(cls, tmp_path, capsys, monkeypatch,
                                                               clean_run: Graded) -> None:
    """Simulated by making the journal's write fail with ENOSPC after its first student."""
    real = journal_module.Journal.append
    calls = []

    def append(self, record):
        calls.append(record["file"])
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(self, record)

    monkeypatch.setattr(journal_module.Journal, "append", append)
    out = tmp_path / "out"
    g = grade(capsys, [cls], out, "--seed", SEED)
    assert g.status == 3
    assert "No space left on device" in g.stderr and "--resume" in g.stderr and "Traceback" not in g.stderr
    lines = _journal(out)
    assert [e["type"] for e in lines] == ["run", "student"] and lines[0]["seed"] == int(SEED)
    assert not (out / "grades.csv").exists()

    monkeypatch.undo()
    # The folder spelled another way is the same class.
    again = grade(capsys, [cls / ".." / cls.name], out, "--resume")
    assert again.status == 0, again.stderr
    assert "1 taken from the journal" in again.stdout
    same_as_clean(again, clean_run)


def test_full_disk_while_writing_results_keeps_the_previous_files(cls, tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "out"
    assert grade(capsys, [cls], out, "--seed", SEED).status == 0
    before = {name: (out / name).read_bytes() for name in ("grades.csv", "results.json")}
    real = os.replace

    def replace(src, dst):  # the disk filled up while grades.csv was written
        if Path(dst).name == "grades.csv":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(src, dst)

    monkeypatch.setattr(output_module.os, "replace", replace)
    g = grade(capsys, [cls], out, "--resume")
    assert g.status == 3 and "No space left on device" in g.stderr
    assert (out / "grades.csv").read_bytes() == before["grades.csv"]  # the old file, whole
    assert json.loads((out / "results.json").read_text())["seed"] == int(SEED)
    assert not [p for p in os.listdir(out) if p.startswith(".")]  # no temporary files left


def test_really_full_disk_on_a_small_tmpfs(cls, tmp_path, capsys, monkeypatch, clean_run: Graded) -> None:
    """Where this machine lets us mount a tmpfs: a disk too small is refused before grading; a
    disk that fills up during the run (a file written by a fault hook) stops it cleanly, and
    ``--resume`` finishes once there is space again."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(mnt)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs privileges); the simulated full-disk tests cover this")
    try:
        (mnt / "ballast").write_bytes(b"x" * 8 * 2**20)
        g = grade(capsys, [cls], mnt / "out", "--seed", SEED)
        assert g.status == 2 and "MiB free" in g.stderr  # refused before grading
        (mnt / "ballast").unlink()

        def fill_disk(e: PoolEvent) -> None:
            if e.kind is EventKind.FINISHED and not (mnt / "ballast").exists():
                with open(mnt / "ballast", "wb") as f, contextlib.suppress(OSError):
                    while True:
                        f.write(b"x" * 2**16)

        inject(monkeypatch, fill_disk)
        g = grade(capsys, [cls], mnt / "out", "--seed", SEED)
        assert g.status == 3 and "No space left on device" in g.stderr, g.stderr
        assert [e["type"] for e in _journal(mnt / "out")][0] == "run"  # well-formed, whatever it kept
        monkeypatch.undo()
        (mnt / "ballast").unlink()
        g = grade(capsys, [cls], mnt / "out", "--resume")
        assert g.status == 0, g.stderr
        same_as_clean(g, clean_run)
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_out_naming_a_file_is_refused_before_grading(cls, tmp_path, capsys) -> None:
    target = tmp_path / "grades.txt"
    target.write_text("precious")
    g = grade(capsys, [cls], target)
    assert g.status == 2 and "is a file, not a directory" in g.stderr
    assert target.read_text() == "precious"


def test_used_out_is_refused_unless_resumed_or_replaced(cls, tmp_path, capsys, clean_run: Graded) -> None:
    out = tmp_path / "out"
    assert grade(capsys, [cls], out, "--seed", SEED).status == 0
    first_csv = (out / "grades.csv").read_bytes()
    g = grade(capsys, [cls], out, "--seed", SEED)
    assert g.status == 2 and "--resume" in g.stderr and "--force" in g.stderr
    assert (out / "grades.csv").read_bytes() == first_csv
    # --force replaces the whole set: a report of a student no longer in the class goes too.
    (out / "reports" / "009-gone.md").write_text("stale")
    (cls / "bob.ipynb").unlink()
    g = grade(capsys, [cls], out, "--seed", SEED, "--force")
    assert g.status == 0
    assert sorted(os.listdir(out / "reports")) == ["001-alice.md", "002-alice_link.md"]
    assert set(g.rows()) == {"alice", "alice_link"}
    same_as_clean(g, clean_run, ids=("alice", "alice_link"))


def test_resume_refuses_other_settings(cls, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert grade(capsys, [cls], out, "--seed", SEED).status == 0
    g = grade(capsys, [cls], out, "--resume", "--seed", "8")
    assert g.status == 2 and "same settings" in g.stderr


def test_seed_is_random_per_run_recorded_and_reproducible(tmp_path, capsys) -> None:
    d = tmp_path / "class"
    d.mkdir()
    write_nb(d / "alice.ipynb", [kernel_cell("map", MAP_OK), kernel_cell("zip", "uint i = thread_position_in_grid.x;\n"
                                                                      "out[i] = a[i] + b[i] + (i > 2 ? 1 : 0);\n")])
    runs = [grade(capsys, [d], tmp_path / f"out{k}") for k in range(2)]
    seeds = [r.results()["seed"] for r in runs]
    assert seeds[0] != seeds[1]
    assert [_journal(r.out)[0]["seed"] for r in runs] == seeds
    assert f"hidden-test seed {seeds[0]}" in runs[0].stdout
    again = grade(capsys, [d], tmp_path / "again", "--seed", str(seeds[0]))
    assert again.student("alice")["puzzles"] == runs[0].student("alice")["puzzles"]


#: Runs ``metal-puzzles grade`` with a signal sent to itself the moment its journal holds a given
#: number of students: the interruption lands at a known point of the run (after that student's
#: record is durable), however fast or slow the machine, instead of racing the run from outside.
#: It sets the Ctrl-C handler it relies on: a process started with SIGINT ignored (``nohup ... &``,
#: some CI runners and batch systems) inherits that, and Python then installs no handler at all.
_SIGNAL_AFTER_STUDENTS = """\
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from metal_puzzles import cli
from metal_puzzles.grading.journal import Journal

how, after, argv = signal.Signals[sys.argv[1]], int(sys.argv[2]), sys.argv[3:]
append = Journal.append

def append_then_signal(journal, record):
    append(journal, record)
    if len(journal.records) == after:
        os.kill(os.getpid(), how)

Journal.append = append_then_signal
sys.exit(cli.main(argv))
"""


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["interrupted", "crashed"])
def test_interrupted_run_keeps_what_it_finished_and_resumes(cls, tmp_path, capsys, how, clean_run: Graded) -> None:
    endless = "uint i = thread_position_in_grid.x;\nwhile (i < 10) { i = i * 1; }\nout[i] = 1;\n"
    for k in range(6):
        write_nb(cls / f"extra{k}.ipynb", [kernel_cell("map", endless), kernel_cell("zip", solution("zip"))])
    out = tmp_path / "out"
    args = ["grade", str(cls), "--out", str(out), "--quiet", "--workers", "1", "--seed", SEED]
    # Started as a background job is: SIGINT ignored by inheritance, whatever started this suite.
    proc = subprocess.run([sys.executable, "-c", _SIGNAL_AFTER_STUDENTS, how.name, "2", *args],
                          capture_output=True, text=True, timeout=600, preexec_fn=_ignore_sigint)
    if how == signal.SIGINT:  # Ctrl-C: stops the run, says how to carry on, exits 130
        assert proc.returncode == 130, proc.stderr
        assert "--resume" in proc.stderr and "Traceback" not in proc.stderr
    else:
        assert proc.returncode == -signal.SIGKILL
    kept = _journal(out)[1:]
    assert len(kept) == 2 and not (out / "grades.csv").exists()

    g = grade(capsys, [cls], out, "--resume")
    assert g.status == 0, g.stderr
    assert f"{len(kept)} taken from the journal" in g.stdout
    assert len(g.rows()) == 9
    same_as_clean(g, clean_run)
    assert all(g.rows()[f"extra{k}"]["total"] == "1" for k in range(6))


def test_an_internal_error_is_a_grader_fault_retried_and_unscored(tmp_path) -> None:
    """A bug of the grader's (here: a puzzle id the catalogue does not know) raised inside a
    worker is never the student's: it is tried again on each attempt and then reported as a
    grader fault, not scored."""
    from metal_puzzles.grading.limits import Limits
    from metal_puzzles.grading.task_backend import Outcome

    task = CheckTask("1:x", 1, ("no_such_puzzle",), MAP_OK, None, None, None, 0)
    starts: list[PoolEvent] = []
    with pool_module.ProcessPoolRunner(Limits(), workers=1, on_event=starts.append) as runner:
        runner.submit(task)
        (outcome,) = list(runner.outcomes())
    assert outcome.outcome is Outcome.GRADER_FAULT and outcome.attempts == 3
    assert "KeyError" in outcome.reason and "3 attempts" in outcome.reason
    assert sum(e.kind is EventKind.STARTED for e in starts) == 3


def test_checking_lets_a_simulator_bug_escape_instead_of_blaming_the_kernel(monkeypatch) -> None:
    from metal_puzzles.checking import check_source
    from metal_puzzles.host.kernel import SimulatedKernel
    from metal_puzzles.puzzles import get_puzzle

    def broken(*args, **kwargs):
        raise AttributeError("'NoneType' object has no attribute 'ty'")

    monkeypatch.setattr(SimulatedKernel, "run", broken)
    with pytest.raises(AttributeError):
        check_source(get_puzzle("map"), MAP_OK)
