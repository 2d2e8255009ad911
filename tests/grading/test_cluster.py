"""Grading on a Dask cluster (``--cluster``): the same grades as on one machine, byte for byte, a
lost worker's tasks run again, and without Dask a clear error (and no Dask import at all
without ``--cluster``)."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from metal_puzzles.grading.cluster import ClusterError, ClusterSpec, DaskRunner, run_in_sandbox
from metal_puzzles.grading.grade import grade_submissions
from metal_puzzles.grading.limits import Limits
from metal_puzzles.grading.tasks import CheckTask
from metal_puzzles.puzzles import get_puzzle

from .conftest import MAP_OK, SEED, ZIP_WRONG, grade, grade_quietly, kernel_cell, solution, write_nb

KERNELS = ("map", "zip", "guard", "map_2d", "broadcast")
ENDLESS = "uint i = thread_position_in_grid.x;\nwhile (true) { i++; }\nout[0] = i;\n"


def cell(pid: str, source: str) -> str:
    return kernel_cell(get_puzzle(pid).kernel_name, source)


def small_class(d: Path) -> None:
    """Solved, template, partly solved and hostile notebooks (an endless loop, broken JSON)."""
    d.mkdir()
    write_nb(d / "solved.ipynb", [cell(k, solution(k)) for k in KERNELS])
    write_nb(d / "template.ipynb", [cell(k, get_puzzle(k).template) for k in KERNELS])
    write_nb(d / "partial.ipynb", [kernel_cell("map", MAP_OK), kernel_cell("zip", ZIP_WRONG),
                                   kernel_cell("guard", solution("guard"))])
    write_nb(d / "hostile.ipynb", [kernel_cell("map", ENDLESS), kernel_cell("zip", "}}} not a kernel {{{")])
    (d / "broken.ipynb").write_bytes(b'{"cells": [' * 50 + b"\xff")


def without_timings(results: dict) -> dict:
    """results.json without its one timing field (the run's ``seconds``): everything else must match."""
    return {k: v for k, v in results.items() if k != "seconds"}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    d = tmp_path_factory.mktemp("course")
    small_class(d / "class")
    local = grade_quietly(tmp_path_factory, [d / "class"], d / "local", "--seed", SEED)
    assert local.status == 0, local.stderr
    return d, local


def test_a_class_graded_on_a_local_cluster_equals_the_local_run(course, tmp_path_factory):
    d, local = course
    dask = grade_quietly(tmp_path_factory, [d / "class"], d / "dask", "--seed", SEED, "--cluster", "local:2")
    assert dask.status == 0, dask.stderr
    assert (dask.out / "grades.csv").read_bytes() == (local.out / "grades.csv").read_bytes()
    assert without_timings(dask.results()) == without_timings(local.results())
    # Byte for byte once the timing is out: the same text, not just equal values.
    strip = [line for line in (local.out / "results.json").read_text().splitlines() if '"seconds"' not in line]
    assert [line for line in (dask.out / "results.json").read_text().splitlines()
            if '"seconds"' not in line] == strip
    for report in (local.out / "reports").iterdir():
        assert (dask.out / "reports" / report.name).read_bytes() == report.read_bytes()
    assert "Dask LocalCluster of 2" in json.loads((dask.out / "cost.json").read_text())["runner"]
    rows = local.rows()
    assert rows["solved"]["total"] == "5" and rows["template"]["total"] == "0"
    assert local.student("hostile")["puzzles"]["map"]["status"] == "findings"  # the step budget stopped it


def kill_worker_once(tasks, limits, retries, marker: str):
    """A Dask task that kills its own worker process the first time it gets the zip check."""
    if any(isinstance(t, CheckTask) and "zip" in t.puzzles for t in tasks) and not os.path.exists(marker):
        Path(marker).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return run_in_sandbox(tasks, limits, retries)


def test_a_lost_worker_is_replaced_and_the_grades_are_the_same(course, tmp_path):
    d, local = course
    marker = tmp_path / "killed"
    runner = DaskRunner(ClusterSpec(workers=2), Limits(),
                        call=functools.partial(kill_worker_once, marker=str(marker)))
    run = grade_submissions([d / "class"], seed=int(SEED), progress=False, runner=runner)
    assert marker.exists()  # a worker did die holding a task
    assert run.complete
    expected = {s["id"]: s["puzzles"] for s in local.results()["students"]}
    for st in run.students:
        assert st.puzzles == expected[st.id], st.id


def test_bad_cluster_specs_are_usage_errors(tmp_path, capsys):
    write_nb(tmp_path / "a.ipynb", [kernel_cell("map", MAP_OK)])
    for spec in ("local:0", "local:two", "scheduler"):
        g = grade(capsys, [tmp_path / "a.ipynb"], tmp_path / f"out-{spec.replace(':', '-')}", "--cluster", spec)
        assert g.status == 2 and "--cluster" in g.stderr, (spec, g.stderr)
    with pytest.raises(ClusterError):
        ClusterSpec.parse("local:-1", 2)
    assert ClusterSpec.parse("tcp://10.0.0.1:8786", 2) == ClusterSpec(address="tcp://10.0.0.1:8786")
    assert ClusterSpec.parse("local", 3) == ClusterSpec(workers=3)


def test_an_unreachable_scheduler_stops_the_run_with_its_address(tmp_path, capsys):
    write_nb(tmp_path / "a.ipynb", [kernel_cell("map", MAP_OK)])
    g = grade(capsys, [tmp_path / "a.ipynb"], tmp_path / "out", "--cluster", "tcp://127.0.0.1:9")
    assert g.status == 3 and "tcp://127.0.0.1:9" in g.stderr
    assert "unencrypted and unauthenticated" in g.stderr  # what a tcp:// cluster needs is said


def test_without_dask_cluster_says_what_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if it were not installed
    write_nb(tmp_path / "a.ipynb", [kernel_cell("map", MAP_OK)])
    g = grade(capsys, [tmp_path / "a.ipynb"], tmp_path / "out", "--cluster", "local:2")
    assert g.status == 2
    assert "pip install 'metal-puzzles[cluster]'" in g.stderr


def test_grading_without_cluster_never_imports_dask(tmp_path):
    write_nb(tmp_path / "a.ipynb", [kernel_cell("map", MAP_OK)])
    code = ("import sys\nfrom metal_puzzles.cli import main\n"
            f"status = main(['grade', {str(tmp_path / 'a.ipynb')!r}, '--out', {str(tmp_path / 'out')!r}, "
            "'--quiet', '--workers', '1'])\n"
            "assert status == 0, status\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_resume_on_the_cluster_carries_on_the_journalled_run(course, tmp_path, capsys):
    """Half the class graded on the cluster, the rest added and --resume'd there: the grades are
    the local run's, and the first half came from the journal."""
    d, local = course
    part = tmp_path / "class"
    part.mkdir()
    for name in ("solved.ipynb", "hostile.ipynb"):
        shutil.copy(d / "class" / name, part / name)
    first = grade(capsys, [part], tmp_path / "out", "--seed", SEED, "--cluster", "local:2")
    assert first.status == 0, first.stderr
    for nb in (d / "class").iterdir():
        shutil.copy(nb, part / nb.name)
    again = grade(capsys, [part], tmp_path / "out", "--resume", "--cluster", "local:2")
    assert again.status == 0, again.stderr
    assert "2 taken from the journal" in again.stdout
    assert (again.out / "grades.csv").read_bytes() == (local.out / "grades.csv").read_bytes()
    assert json.loads((again.out / "cost.json").read_text())["graded"] == 3


def test_a_local_cluster_refuses_a_client_without_the_runs_credentials():
    """Second red team: ``--cluster local:N`` listens on 127.0.0.1; any local user's client could
    run code on its workers. Every connection must present the run's temporary certificate."""
    import distributed

    runner = DaskRunner(ClusterSpec(workers=1), Limits())
    try:
        address = runner.cluster.scheduler_address
        assert address.startswith("tls://127.0.0.1:")
        plain = "tcp://" + address.removeprefix("tls://")
        # No TLS at all; TLS with a certificate of the attacker's own (not signed by the run's CA).
        for attempt, security in ((plain, None), (address, distributed.Security.temporary())):
            with pytest.raises((OSError, TimeoutError)):
                distributed.Client(attempt, security=security, timeout=3)
        workers = runner.client.scheduler_info()["workers"]
        assert workers and all(w.startswith("tls://") for w in workers)
        assert runner.client.submit(sum, [1, 2]).result() == 3  # the run's own client works
    finally:
        runner.close()


def kill_worker_while_its_sandbox_is_busy(tasks, limits, retries, marker: str):
    """A Dask task that kills its own worker process (SIGKILL, as the OOM killer or an operator
    would) the moment its sandbox starts the zip check: the sandbox is left holding a task."""
    from metal_puzzles.grading import cluster
    from metal_puzzles.grading.pool import EventKind, ProcessPoolRunner

    def on_event(e) -> None:
        if (e.kind is EventKind.STARTED and isinstance(e.task, CheckTask) and "zip" in e.task.puzzles
                and not os.path.exists(marker)):
            Path(marker).write_text(f"{os.getpid()} {e.pid}")
            os.kill(os.getpid(), signal.SIGKILL)

    if getattr(cluster._SANDBOXES, "pool", None) is None:
        cluster._SANDBOXES.pool = ProcessPoolRunner(limits, workers=1, retries=retries, on_event=on_event)
    return run_in_sandbox(tasks, limits, retries)


def test_a_worker_killed_while_its_sandbox_is_busy_loses_nothing(course, tmp_path, capfd):
    """Issue 27 §4b: the lost worker's tasks run again elsewhere (grades equal the local run's),
    its orphaned sandbox goes away, and nothing is printed as a traceback."""
    d, local = course
    marker = tmp_path / "killed"
    runner = DaskRunner(ClusterSpec(workers=2), Limits(),
                        call=functools.partial(kill_worker_while_its_sandbox_is_busy, marker=str(marker)))
    run = grade_submissions([d / "class"], seed=int(SEED), progress=False, runner=runner)
    assert marker.exists()  # a worker did die while its sandbox held a task
    assert run.complete
    expected = {s["id"]: s["puzzles"] for s in local.results()["students"]}
    for st in run.students:
        assert st.puzzles == expected[st.id], st.id
    _, sandbox = map(int, marker.read_text().split())
    wait_gone(sandbox)
    assert "Traceback" not in capfd.readouterr().err


def wait_gone(pid: int) -> None:
    """Wait until process ``pid`` has exited (it is not our child: poll its /proc entry)."""
    while True:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
        except FileNotFoundError:
            return
        os.sched_yield()


def test_a_result_lost_with_its_worker_is_awaited_not_counted_a_fault():
    """A read whose worker died after computing it, before the grader fetched it: Dask computes it
    again elsewhere, and the grader waits for that result (seen in a full run under load: the
    future was no longer 'finished' when collected, and the student's grading came out a grader
    fault, 'NoneType: None', though every task ran)."""
    pytest.importorskip("distributed")
    from metal_puzzles.grading.task_backend import Outcome, TaskOutcome
    from metal_puzzles.grading.tasks import ReadTask

    task = ReadTask("read-1", 1, "/nowhere.ipynb", 0, 0, 1 << 20, ("map",))
    done = [TaskOutcome(task, Outcome.DONE, value="kernels")]

    class RecomputedFuture:  # as distributed.Future is while its key is computed again
        key = "metal-puzzles-read-1"
        status = "pending"
        released = False

        def result(self):
            return done

        def exception(self):
            return None

        def release(self):
            self.released = True

    runner = DaskRunner.__new__(DaskRunner)  # no cluster: only the collection of one future
    runner._tasks = {RecomputedFuture.key: [task]}
    future = RecomputedFuture()
    assert runner._collect(future) == done and future.released
