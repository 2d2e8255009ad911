"""How grading tasks get run: the interface between the grading logic and a backend.

The grading logic (``grade.py``) submits tasks and consumes outcomes as they finish; it knows
nothing of processes. A backend (``pool.ProcessPoolRunner``: worker processes on this machine)
runs each task under the limits and guarantees:

- every submitted task yields exactly one ``TaskOutcome``;
- a task that exceeds its time or memory limit yields ``Outcome.LIMIT`` (the submission's fault);
- a task whose worker dies for any other reason is retried on a fresh worker, and yields
  ``Outcome.GRADER_FAULT`` only if every attempt failed (the grader's fault, never scored);
- a worker's start-up is not counted against any task's time limit;
- an outcome carries the task's ``TaskCost`` when its worker reported one.

Another backend (a cluster) implements the same protocol with the same guarantees.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from .tasks import Task


class Outcome(str, Enum):
    DONE = "done"  # the task ran; ``value`` is its result
    LIMIT = "limit"  # the submission exceeded a limit (time, memory); ``reason`` says which
    GRADER_FAULT = "grader-fault"  # the grader failed on every attempt; ``reason`` says how


@dataclass(frozen=True)
class TaskCost:
    """What running a task took in its worker (for the run's cost report, never for grades)."""

    seconds: float = 0.0  # wall time
    cpu_seconds: float = 0.0  # the worker's CPU time: what it costs on a core of its own
    compiles: int = 0  # kernel instances compiled
    cache_hits: int = 0  # compilations the worker's compile cache saved


@dataclass(frozen=True)
class TaskOutcome:
    task: Task
    outcome: Outcome
    value: Any = None
    reason: str = ""
    attempts: int = 1
    cost: TaskCost | None = None  # None when the worker did not report it (stopped at the time limit, died)


class RunnerStopped(Exception):
    """The backend cannot go on at all (e.g. no worker process can start)."""


class TaskRunner(Protocol):
    def submit(self, task: Task) -> None:
        """Queue a task; allowed while ``outcomes`` is being iterated."""

    def outcomes(self) -> Iterator[TaskOutcome]:
        """Outcomes as tasks finish, until every submitted task has one."""

    def close(self) -> None:
        """Stop every worker; idempotent."""
