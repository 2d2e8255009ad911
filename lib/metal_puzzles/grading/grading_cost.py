"""What a grading run cost: how much work was asked for, how much was done, and where the time
went. Written to ``cost.json`` beside ``results.json`` and summed up in one console line; it
never affects a grade (``results.json`` holds no timings but its own ``seconds``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field

from .task_backend import TaskOutcome
from .tasks import ReadTask

COST_NAME = "cost.json"


@dataclass
class RunCost:
    """Counts and times of one run.

    ``kernel_checks`` is how many kernel checks the students' notebooks asked for (one per kernel
    and per finale entry of each notebook read); ``unique_kernels`` how many distinct ones there
    were (same puzzles, source, header, names and seed); ``runs`` how many attempts workers made
    at them (retries of a dead worker's task included) and ``shared`` how many checks took the
    result of an identical one instead of running. Compilations and compile-cache hits are the
    workers' own counts. Worker seconds are wall time in tasks; worker CPU seconds what the tasks
    cost on cores of their own (on a busy machine, the wall time is longer). Seconds per puzzle
    are worker wall time; a kernel checked for several puzzles
    (those that share a kernel) has its time split evenly between them.
    """

    runner: str = ""
    students: int = 0
    graded: int = 0  # students graded in this run (the rest came from the journal)
    puzzles: int = 0
    notebooks_read: int = 0
    kernel_checks: int = 0
    unique_kernels: int = 0
    runs: int = 0
    shared: int = 0
    compiles: int = 0
    compile_cache_hits: int = 0
    wall_seconds: float = 0.0
    worker_seconds: float = 0.0
    worker_cpu_seconds: float = 0.0
    read_seconds: float = 0.0
    seconds_per_puzzle: dict[str, float] = field(default_factory=dict)

    def record(self, o: TaskOutcome) -> None:
        """Count a finished task (one attempt per retry it took)."""
        is_read = isinstance(o.task, ReadTask)
        if is_read:
            self.notebooks_read += 1
        else:
            self.runs += o.attempts
        if o.cost is None:
            return
        self.compiles += o.cost.compiles
        self.compile_cache_hits += o.cost.cache_hits
        self.worker_seconds += o.cost.seconds
        self.worker_cpu_seconds += o.cost.cpu_seconds
        if isinstance(o.task, ReadTask):
            self.read_seconds += o.cost.seconds
            return
        share = o.cost.seconds / len(o.task.puzzles)
        per = defaultdict(float, self.seconds_per_puzzle)
        for pid in o.task.puzzles:
            per[pid] += share
        self.seconds_per_puzzle = dict(per)

    def summary(self) -> str:
        """One line for the console."""
        return (f"cost: {self.graded} notebook(s) graded on {self.runner}; {self.kernel_checks} kernel checks, "
                f"{self.unique_kernels} unique, {self.runs} run, {self.shared} shared; {self.compiles} "
                f"compilations, {self.compile_cache_hits} cache hits; {self.wall_seconds:.1f} s wall, "
                f"{self.worker_seconds:.1f} s in workers ({self.worker_cpu_seconds:.1f} s CPU)")

    def to_json(self) -> str:
        record = asdict(self)
        for key in ("wall_seconds", "worker_seconds", "worker_cpu_seconds", "read_seconds"):
            record[key] = round(record[key], 3)
        record["seconds_per_puzzle"] = {k: round(v, 3) for k, v in sorted(self.seconds_per_puzzle.items(),
                                                                           key=lambda kv: -kv[1])}
        return json.dumps(record, indent=1, ensure_ascii=True)
