"""Worker processes that grade kernels with limits on wall time and memory.

A kernel that loops forever, allocates without bound or crashes the interpreter costs only its
own task: the parent kills a worker that runs past the wall-time limit (or dies), records the
task as failed with the reason, and starts a fresh worker for the remaining tasks.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections.abc import Callable, Iterable
from multiprocessing.connection import Connection, wait
from typing import Any

from .limits import Limits
from .tasks import run_task


def _worker_main(conn: Connection, limits: Limits) -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    except (ImportError, ValueError, OSError):  # not on this platform; the wall-time limit still applies
        pass
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        try:
            result = run_task(task, limits)
        except MemoryError:
            result = {"task_id": task["task_id"], "error": "the kernel used more memory than allowed "
                      f"({limits.memory_bytes // 2**20} MiB)"}
        except RecursionError:
            result = {"task_id": task["task_id"], "error": "the kernel is nested too deeply to compile"}
        except Exception as exc:  # a bug in a kernel must never stop the grading run
            result = {"task_id": task["task_id"], "error": f"internal error while grading: {type(exc).__name__}: {exc}"}
        conn.send(result)


class _Worker:
    def __init__(self, ctx, limits: Limits) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, limits), daemon=True)
        self.proc.start()
        child.close()
        self.task: dict | None = None
        self.started = 0.0

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(timeout=5)
        self.conn.close()


def run_tasks(tasks: Iterable[dict], limits: Limits, workers: int | None = None,
              on_result: Callable[[dict], None] | None = None) -> list[dict]:
    """Run every task in worker processes; results come back as dicts with the task's 'task_id'."""
    pending = list(tasks)
    pending.reverse()
    total = len(pending)
    n = max(1, min(workers or os.cpu_count() or 1, total or 1))
    ctx = mp.get_context("spawn")
    pool = [_Worker(ctx, limits) for _ in range(n)]
    results: list[dict] = []

    def finish(result: dict) -> None:
        results.append(result)
        if on_result is not None:
            on_result(result)

    try:
        while len(results) < total:
            for w in pool:
                if w.task is None and pending:
                    w.task = pending.pop()
                    w.started = time.monotonic()
                    w.conn.send(w.task)
            busy = [w for w in pool if w.task is not None]
            ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=0.5)
            now = time.monotonic()
            for i, w in enumerate(pool):
                if w.task is None:
                    continue
                if w.conn in ready:
                    try:
                        finish(w.conn.recv())
                        w.task = None
                        continue
                    except (EOFError, OSError):
                        pass
                died = not w.proc.is_alive()
                late = now - w.started > limits.wall_seconds
                if died or late:
                    reason = (f"the kernel ran longer than {limits.wall_seconds:g} s and was stopped" if late else
                              f"the grading process died (exit code {w.proc.exitcode}): the kernel may have used "
                              "too much memory, or the worker could not start")
                    finish({"task_id": w.task["task_id"], "error": reason})
                    w.kill()
                    pool[i] = _Worker(ctx, limits)
    finally:
        for w in pool:
            try:
                w.conn.send(None)
            except (OSError, BrokenPipeError):
                pass
        for w in pool:
            w.proc.join(timeout=2)
            if w.proc.is_alive():
                w.proc.kill()
    return results


__all__ = ["Limits", "run_tasks", "Any"]
