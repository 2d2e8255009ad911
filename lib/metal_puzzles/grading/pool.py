"""Worker processes on this machine that run grading tasks under limits (a ``TaskRunner``).

Each worker is a fresh interpreter (spawn) with an address-space limit (``RLIMIT_AS``). It
imports and warms up everything first and says when it is ready; only then does it get a task,
so start-up never counts against a task's time.

A task's time limit counts the CPU time the worker spends on it: before starting a task the
worker lowers its own ``RLIMIT_CPU`` to what it has used so far plus the limit, and the
operating system ends it with SIGXCPU when the task uses more (the submission's fault). Wall
time the task did not use is the machine's (a suspended laptop, a swapping machine): a task
still running ``Limits.stalled_after`` wall seconds after it started is stopped and retried like
a task whose worker died. Where ``RLIMIT_CPU`` is missing, the wall-time limit is the task's.

A worker that dies otherwise (a signal we did not send, a crash, a broken pipe) is the grader's
fault: the task is retried on a fresh worker, and reported as a grader fault only if every
attempt fails. A worker that dies between tasks is just replaced.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from multiprocessing.connection import Connection, wait
from typing import Any

from ..checking import progress
from ..msl import compile_cache_stats
from .limits import Limits
from .task_backend import Outcome, RunnerStopped, TaskCost, TaskOutcome
from .tasks import SubmissionLimit, Task, run_task, warm_up

#: How often the parent looks at the workers when nothing arrives (seconds).
_POLL_SECONDS = 0.2
#: How long a worker whose pipe broke is given to exit, so that its exit status can say how it died.
_EXIT_GRACE_SECONDS = 2.0


def _now() -> float:
    """The parent's clock for workers' states and tasks' wall time (a seam for tests)."""
    return time.monotonic()


class _Message(str, Enum):
    READY = "ready"
    STARTED = "started"
    DONE = "done"
    LIMIT = "limit"
    FAULT = "fault"


def _exit_with_parent(lifeline: Connection) -> None:
    """End this worker when its parent is gone. The parent holds the other end of ``lifeline``
    and never writes to it: the read returns only when the parent's end is closed, which the
    operating system does however the parent ended (SIGKILL included). Without this, a worker
    whose parent was killed (a Dask worker lost with its sandbox busy) would finish its task
    alone and die of a broken pipe, a traceback on the terminal."""

    def watch() -> None:
        try:
            lifeline.recv()
        except (EOFError, OSError):
            pass
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _worker_main(conn: Connection, limits: Limits, lifeline: Connection | None = None,
                 whereabouts: Any = None) -> None:
    # Ctrl-C is the parent's to handle: it stops the workers itself, and a worker dying of it
    # first would look like a grader fault.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if lifeline is not None:
        _exit_with_parent(lifeline)
    _limit_memory(limits.memory_bytes)
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a task stopped by SIGXCPU leaves no core file
    except (ImportError, ValueError, OSError):
        pass
    warm_up(limits)
    # What a check may allocate: what the first check finds free. Later checks get as much above
    # what the worker then holds, so that kernels earlier students left in its compile caches
    # (bounded by msl.api's budget) never count against a later student's memory.
    baseline = _address_space()
    headroom = limits.memory_bytes - baseline if baseline is not None else None
    if baseline is not None and headroom is not None and headroom < _MIN_HEADROOM_BYTES:
        # Warm-up fitted in memory the process already had, but no check would: every student
        # would be failed for the grader's own setting. A worker that cannot work does not start.
        raise MemoryError(f"after warming up the worker holds {baseline / 2**20:.0f} MiB of its "
                          f"{limits.memory_bytes / 2**20:.0f} MiB limit, leaving no room for a check")
    if whereabouts is not None:  # where a check is, for the verdict of one stopped at its time limit
        progress.watch(lambda where: _note(whereabouts, where))
    conn.send((_Message.READY, os.getpid()))
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        if headroom is not None:
            _limit_memory(max(limits.memory_bytes, (_address_space() or 0) + headroom))
        if whereabouts is not None:
            _note(whereabouts, "")  # nothing from an earlier task is this one's
        cpu_limited = _limit_cpu(task.time_limit(limits))
        conn.send((_Message.STARTED, task.task_id, cpu_limited))
        compiles, hits = compile_cache_stats()
        start, cpu = time.perf_counter(), time.process_time()
        try:
            message = (_Message.DONE, task.task_id, run_task(task, limits))
        except SubmissionLimit as exc:
            message = (_Message.LIMIT, task.task_id, str(exc))
        except Exception as exc:  # a bug in the grader or the simulator: the grader's fault
            message = (_Message.FAULT, task.task_id, f"{type(exc).__name__}: {exc}")
        now_compiles, now_hits = compile_cache_stats()
        cost = TaskCost(time.perf_counter() - start, time.process_time() - cpu, now_compiles - compiles,
                        now_hits - hits)
        try:
            try:
                conn.send((*message, cost))
            except MemoryError:
                conn.send((_Message.LIMIT, task.task_id, "its result was too large to send back", cost))
        except (BrokenPipeError, ConnectionResetError):  # the parent is gone: nobody to tell
            return


#: Bytes of the place a check last reported (``checking.progress``) a worker shares with the pool.
_WHEREABOUTS_BYTES = 512


def _note(whereabouts: Any, where: str) -> None:
    """Write ``where`` into the shared buffer: memory the pool can read after the worker is killed."""
    whereabouts.value = where.encode("utf-8", errors="backslashreplace")[:_WHEREABOUTS_BYTES - 1]


#: The least memory a worker must have free after warming up to take a check at all.
_MIN_HEADROOM_BYTES = 16 * 2**20


def _limit_cpu(seconds: float) -> bool:
    """Let this process use ``seconds`` more CPU time (rounded up to a whole second, the limit's
    unit); past that the operating system sends SIGXCPU, which ends it. False where it cannot."""
    try:
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        soft = math.ceil(time.process_time() + seconds)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        return True
    except (ImportError, ValueError, OSError):
        return False


def _limit_memory(nbytes: int) -> None:
    """Limit this process's address space (``RLIMIT_AS``) to ``nbytes``; only the soft limit,
    so that it can be raised for a later task (a submission never runs Python that could)."""
    try:
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            nbytes = min(nbytes, hard)
        resource.setrlimit(resource.RLIMIT_AS, (nbytes, hard))
    except (ImportError, ValueError, OSError):  # not on this platform; the time limit still applies
        pass


def _address_space() -> int | None:
    """Bytes of address space this process holds now (what ``RLIMIT_AS`` counts); None where
    the system does not say (no /proc)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


#: The signal the operating system ends a process with at its CPU-time limit (None on Windows).
_SIGXCPU = getattr(signal, "SIGXCPU", None)


class _State(Enum):
    STARTING = "starting"
    IDLE = "idle"
    BUSY = "busy"


class EventKind(str, Enum):
    STARTED = "started"  # a worker started a task
    FINISHED = "finished"  # a worker finished a task and is idle


@dataclass(frozen=True)
class PoolEvent:
    """What a worker just did, for observers (progress, tests that inject faults)."""

    kind: EventKind
    pid: int
    task: Task


@dataclass
class _Queued:
    """A task waiting for a worker: which attempt is next, and how many workers died after
    receiving it but before starting it (a worker killed between tasks, say)."""

    task: Task
    attempt: int = 1
    handoffs: int = 0


#: Workers that may die holding a task they never started before that counts as a grader fault.
_MAX_HANDOFFS = 3


class _Worker:
    def __init__(self, ctx, limits: Limits) -> None:
        self.conn, child = ctx.Pipe()
        watched, self._lifeline = ctx.Pipe(duplex=False)  # see _exit_with_parent
        self.whereabouts = ctx.Array("c", _WHEREABOUTS_BYTES, lock=False)  # see checking.progress
        self.proc = ctx.Process(target=_worker_main, args=(child, limits, watched, self.whereabouts), daemon=True)
        self.proc.start()
        child.close()
        watched.close()
        self.state = _State.STARTING
        self.since = _now()  # when it entered its state
        self.job: _Queued | None = None
        self.clock: float | None = None  # when the worker started the task
        self.cpu_limited = False  # whether the operating system limits the task's CPU time

    @property
    def task(self) -> Task | None:
        return self.job.task if self.job is not None else None

    @property
    def running(self) -> _Queued:
        """The job of a worker that has one (busy with it, or reporting on it)."""
        assert self.job is not None
        return self.job

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(timeout=5)
        self.conn.close()
        self._lifeline.close()

    def stopped_in(self) -> str:
        """' in <where the check last reported>', for a task stopped at its limit; '' if it said nothing."""
        where = self.whereabouts.value.decode("utf-8", errors="replace")
        return f" in {where}" if where else ""

    def how_it_died(self) -> str:
        code = self.proc.exitcode
        if code is not None and code < 0:
            try:
                return f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with status {code}"


class ProcessPoolRunner:
    """Run tasks in ``workers`` processes on this machine (see the module's docstring)."""

    def __init__(self, limits: Limits, workers: int | None = None, *, retries: int = 2,
                 on_event: Callable[[PoolEvent], None] | None = None, max_start_failures: int = 3) -> None:
        self.limits = limits
        self.size = max(1, workers or os.cpu_count() or 1)
        self.retries = retries
        self.on_event = on_event
        self.max_start_failures = max_start_failures
        self._ctx = mp.get_context("spawn")
        self._pool: list[_Worker] = []
        self._queue: deque[_Queued] = deque()
        self._outstanding = 0
        self._start_failures = 0
        self._stopped: str | None = None  # why no worker can start, once that is clear

    # ------------------------------------------------------------ TaskRunner
    def submit(self, task: Task) -> None:
        self._queue.append(_Queued(task))
        self._outstanding += 1

    def outcomes(self) -> Iterator[TaskOutcome]:
        while self._outstanding:
            self._grow()
            self._dispatch()
            for outcome in self._poll():
                self._outstanding -= 1
                yield outcome
            if self._stopped is not None:  # after handing over what did finish
                raise RunnerStopped(self._stopped)

    def close(self) -> None:
        for w in self._pool:
            try:
                w.conn.send(None)
            except (OSError, ValueError):
                pass
        for w in self._pool:
            w.proc.join(timeout=2)
            w.kill()
        self._pool = []

    def __enter__(self) -> ProcessPoolRunner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------ internals
    def _grow(self) -> None:
        want = min(self.size, self._outstanding)
        while len(self._pool) < want:
            self._pool.append(_Worker(self._ctx, self.limits))

    def _dispatch(self) -> None:
        for w in self._pool:
            if w.state is not _State.IDLE or not self._queue:
                continue
            job = self._queue.popleft()
            try:
                w.conn.send(job.task)
            except (OSError, ValueError):  # it died between tasks: the task never reached it
                self._queue.appendleft(job)
                continue  # _poll sees the death and replaces it
            w.state, w.job, w.clock = _State.BUSY, job, None
            w.since = _now()

    def _poll(self) -> list[TaskOutcome]:
        wait([w.conn for w in self._pool] + [w.proc.sentinel for w in self._pool], timeout=_POLL_SECONDS)
        out: list[TaskOutcome] = []
        for i, w in enumerate(self._pool):
            broken = self._drain(w, out)
            now = _now()
            if broken or not w.proc.is_alive():
                self._drain(w, out)  # a message sent just before dying still counts
                out.extend(self._died(w))
                self._pool[i] = _Worker(self._ctx, self.limits)
            elif w.state is _State.BUSY and w.clock is not None and now - w.clock > self._wall_allowance(w):
                w.kill()
                job = w.running
                limit = job.task.time_limit(self.limits)
                if w.cpu_limited:  # it had CPU time left: the machine held it up, not the kernel
                    out.extend(self._retry(job, "the grading machine was suspended or too busy to finish it",
                                           f"no result after {self._wall_allowance(w):g} s of wall time, although "
                                           f"it may use only {limit:g} s of CPU time"))
                else:
                    out.append(TaskOutcome(job.task, Outcome.LIMIT, reason=f"ran longer than {limit:g} s and was "
                                           f"stopped{w.stopped_in()}", attempts=job.attempt))
                self._pool[i] = _Worker(self._ctx, self.limits)
            elif w.state is not _State.IDLE and w.clock is None and now - w.since > self.limits.startup_seconds:
                w.kill()  # stuck starting up, or never started its task: treat as dead
                out.extend(self._died(w))
                self._pool[i] = _Worker(self._ctx, self.limits)
        return out

    def _drain(self, w: _Worker, out: list[TaskOutcome]) -> bool:
        """Handle every message waiting from ``w``; True if its pipe is broken."""
        try:
            while w.conn.poll():
                self._handle(w, w.conn.recv(), out)
        except (EOFError, OSError, ValueError):
            return True
        return False

    def _handle(self, w: _Worker, message: tuple, out: list[TaskOutcome]) -> None:
        kind = message[0]
        if kind == _Message.READY:
            w.state, w.since = _State.IDLE, _now()
            self._start_failures = 0
            return
        if w.task is None or message[1] != w.task.task_id:
            return  # not about its current task (cannot happen with one task at a time)
        if kind == _Message.STARTED:
            w.clock, w.cpu_limited = _now(), bool(message[2])
            self._event(EventKind.STARTED, w, w.task)
            return
        job = w.running
        task, attempt, cost = job.task, job.attempt, message[3]
        if kind == _Message.DONE:
            out.append(TaskOutcome(task, Outcome.DONE, value=message[2], attempts=attempt, cost=cost))
        elif kind == _Message.LIMIT:
            out.append(TaskOutcome(task, Outcome.LIMIT, reason=message[2], attempts=attempt, cost=cost))
        elif attempt <= self.retries:  # an exception in the grader: never the student's; try again
            job.attempt += 1
            self._queue.appendleft(job)
        else:
            out.append(TaskOutcome(task, Outcome.GRADER_FAULT, attempts=attempt, cost=cost,
                                   reason=f"the grader failed on each of {attempt} attempts: {message[2]}"))
        w.state, w.job, w.clock, w.since = _State.IDLE, None, None, _now()
        self._event(EventKind.FINISHED, w, task)

    def _died(self, w: _Worker) -> list[TaskOutcome]:
        if w.proc.is_alive():  # its pipe broke a moment before its exit status is there to read
            w.proc.join(timeout=_EXIT_GRACE_SECONDS)
        how = w.how_it_died() if not w.proc.is_alive() else "stopped answering"
        state, job, started = w.state, w.job, w.clock is not None
        w.kill()
        if state is _State.STARTING:
            self._start_failures += 1
            if self._start_failures >= self.max_start_failures:
                self._stopped = (f"grading worker processes cannot start ({how}); is the memory limit "
                                 f"({self.limits.memory_bytes // 2**20} MiB) too low?")
            return []
        if state is _State.IDLE or job is None:
            return []  # died between tasks: nothing was lost
        if not started:  # it died before starting the task: no attempt was made
            job.handoffs += 1
            if job.handoffs <= _MAX_HANDOFFS:
                self._queue.appendleft(job)
                return []
            return [TaskOutcome(job.task, Outcome.GRADER_FAULT, attempts=job.attempt - 1,
                                reason=f"{job.handoffs} grading workers died before starting it (last: {how})")]
        if _SIGXCPU is not None and w.proc.exitcode == -_SIGXCPU:  # the operating system's CPU-time limit
            limit = job.task.time_limit(self.limits)
            return [TaskOutcome(job.task, Outcome.LIMIT, attempts=job.attempt,
                                reason=f"ran for more than {limit:g} s of CPU time and was stopped{w.stopped_in()}")]
        return self._retry(job, "the grading worker died", how)

    def _retry(self, job: _Queued, failed: str, last: str) -> list[TaskOutcome]:
        """Queue ``job`` again after an attempt ``failed`` for a reason that is not the
        submission's, or, when no attempt is left, its grader fault."""
        if job.attempt <= self.retries:
            job.attempt += 1
            self._queue.appendleft(job)
            return []
        return [TaskOutcome(job.task, Outcome.GRADER_FAULT, attempts=job.attempt,
                            reason=f"{failed} on each of {job.attempt} attempts (last: {last})")]

    def _wall_allowance(self, w: _Worker) -> float:
        limit = w.running.task.time_limit(self.limits)
        return self.limits.stalled_after(limit) if w.cpu_limited else limit

    def _event(self, kind: EventKind, w: _Worker, task: Task) -> None:
        if self.on_event is not None:
            self.on_event(PoolEvent(kind, w.proc.pid or 0, task))
