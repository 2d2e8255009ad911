"""Blame only what the kernel did (issue 27 §4): a student's time limit counts the CPU time of
their check; wall time the check did not use (a suspended laptop, a swapping machine) is the
machine's fault, retried, and a grader fault if it persists.

The machine's pauses are made real (every worker is stopped with SIGSTOP and waited for until
the kernel says it is stopped) but the wall time they last is not waited for: the pool's clock is
moved on instead, so the tests take no longer than the grading."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest

from metal_puzzles.grading import pool as pool_module
from metal_puzzles.grading.limits import Limits
from metal_puzzles.grading.pool import EventKind, PoolEvent
from metal_puzzles.grading.task_backend import Outcome
from metal_puzzles.grading.tasks import CheckTask

from .conftest import MAP_OK, SEED, Graded, clean_students, grade, same_as_clean

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states in /proc")


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def stop(pids: list[int]) -> None:
    """SIGSTOP each process and wait until the kernel reports it stopped (state T)."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    for pid in pids:
        while _state(pid) not in ("T", "t"):
            os.sched_yield()


class PausedMachine:
    """A pool clock that can be moved on, and a way to stop every worker of the pools of the next
    run and let them go again once the pool has looked at them with the clock moved on."""

    def __init__(self, monkeypatch) -> None:
        self.offset = 0.0
        self.pools: list[pool_module.ProcessPoolRunner] = []
        self.paused: list[int] = []
        real_now, real_wait, real_pool = pool_module._now, pool_module.wait, pool_module.ProcessPoolRunner
        monkeypatch.setattr(pool_module, "_now", lambda: real_now() + self.offset)

        def wait_then_resume(*args, **kwargs):
            # The pool's first look after the pause has happened (it follows the event that
            # paused): resume the workers, as a laptop wakes up.
            for pid in self.paused:
                with contextlib.suppress(ProcessLookupError):  # the pool killed it meanwhile
                    os.kill(pid, signal.SIGCONT)
            self.paused = []
            return real_wait(*args, **kwargs)

        monkeypatch.setattr(pool_module, "wait", wait_then_resume)
        self.hooks: list = []

        def make(limits, workers=None, **kwargs):
            runner = real_pool(limits, workers, on_event=self._event, **kwargs)
            self.pools.append(runner)
            return runner

        monkeypatch.setattr(pool_module, "ProcessPoolRunner", make)

    def _event(self, event: PoolEvent) -> None:
        for hook in self.hooks:
            hook(self, event)

    def pause_all(self, seconds: float, *, resume: bool = True) -> None:
        pids = [w.proc.pid for p in self.pools for w in p._pool if w.proc.pid is not None]
        stop(pids)
        self.offset += seconds
        if resume:
            self.paused = pids

    def has_not_answered(self, pid: int) -> bool:
        """Whether the worker ``pid`` (stopped) has sent nothing since the task's start: then it
        was stopped in the middle of the task, not after it."""
        (w,) = [w for p in self.pools for w in p._pool if w.proc.pid == pid]
        return not w.conn.poll()


@pytest.fixture
def cls(tmp_path) -> Path:
    d = tmp_path / "class"
    d.mkdir()
    clean_students(d)
    return d


def test_workers_suspended_longer_than_the_time_limit_do_not_cost_a_correct_kernel(
        cls, tmp_path, capsys, monkeypatch, clean_run: Graded) -> None:
    """--timeout 6, every worker stopped for 9 s while checking, then resumed: the checks had
    used almost no CPU time, so they go on and every grade is the clean run's."""
    machine = PausedMachine(monkeypatch)
    pauses = []

    def pause_once(m: PausedMachine, e: PoolEvent) -> None:
        if e.kind is EventKind.STARTED and isinstance(e.task, CheckTask) and not pauses:
            m.pause_all(9.0)
            if m.has_not_answered(e.pid):  # else it had finished already: pause on a later check
                pauses.append(e.task.task_id)
            else:
                m.offset -= 9.0

    machine.hooks.append(pause_once)
    g = grade(capsys, [cls], tmp_path / "out", "--seed", SEED, "--timeout", "6")
    assert pauses and machine.offset == 9.0
    assert g.status == 0, g.stderr
    assert "ran longer" not in json_text(g) and "CPU time" not in json_text(g)
    same_as_clean(g, clean_run)


def json_text(g: Graded) -> str:
    return (g.out / "results.json").read_text()


def _task(n: int = 1) -> CheckTask:
    return CheckTask(f"{n}:kernel:map", n, ("map",), MAP_OK, None, None, None, 0)


#: A check that takes about a second of CPU time (an endless loop stopped by a step budget of a
#: million), so that a worker stopped when it says it started is stopped in the middle of it.
SLOW = CheckTask("1:kernel:map", 1, ("map",), "uint i = 0;\nwhile (true) { i++; }\n", None, None, None, 0)
SLOW_LIMITS = Limits(wall_seconds=5, max_steps=10**6)


def test_a_check_stalled_once_by_the_machine_is_retried(monkeypatch) -> None:
    machine = PausedMachine(monkeypatch)
    starts: list[PoolEvent] = []

    def stall_first_start(m: PausedMachine, e: PoolEvent) -> None:
        if e.kind is EventKind.STARTED:
            starts.append(e)
            if len(starts) == 1:  # stopped for good: the pool must give up on this worker
                m.pause_all(10_000.0, resume=False)
                assert m.has_not_answered(e.pid)

    machine.hooks.append(stall_first_start)
    with pool_module.ProcessPoolRunner(SLOW_LIMITS, workers=1) as runner:
        runner.submit(SLOW)
        (outcome,) = list(runner.outcomes())
    assert outcome.outcome is Outcome.DONE and outcome.attempts == 2
    assert outcome.value["map"]["status"] == "findings"  # the step budget's finding: it ran to its end
    assert len(starts) == 2 and starts[0].pid != starts[1].pid


def test_a_check_the_machine_stalls_on_every_attempt_is_a_grader_fault_not_a_limit(monkeypatch) -> None:
    machine = PausedMachine(monkeypatch)

    def stall(m: PausedMachine, e: PoolEvent) -> None:
        if e.kind is EventKind.STARTED:
            m.pause_all(10_000.0, resume=False)
            assert m.has_not_answered(e.pid)

    machine.hooks.append(stall)
    with pool_module.ProcessPoolRunner(SLOW_LIMITS, workers=1) as runner:
        runner.submit(SLOW)
        (outcome,) = list(runner.outcomes())
    assert outcome.outcome is Outcome.GRADER_FAULT and outcome.attempts == 3
    assert "CPU time" in outcome.reason and "machine" in outcome.reason


def test_the_time_limit_counts_the_checks_cpu_time(tmp_path) -> None:
    """An endless kernel is stopped by its CPU time (the operating system's limit), a LIMIT
    that says so; the worker that ran it is replaced and the next check runs normally."""
    endless = "uint i = 0;\nwhile (true) { i++; }\n"
    with pool_module.ProcessPoolRunner(Limits(wall_seconds=1, max_steps=10**9), workers=1) as runner:
        runner.submit(CheckTask("1:kernel:map", 1, ("map",), endless, None, None, None, 0))
        runner.submit(_task(2))
        outcomes = {o.task.student: o for o in runner.outcomes()}
    assert outcomes[1].outcome is Outcome.LIMIT
    assert outcomes[1].reason == "ran for more than 1 s of CPU time and was stopped"
    assert outcomes[2].outcome is Outcome.DONE and outcomes[2].value["map"]["passed"]
