"""Grading on a Dask cluster: a ``TaskRunner`` (see ``task_backend.py``) whose tasks run on the workers
of a ``distributed`` scheduler, a ``LocalCluster`` started here (``--cluster local[:N]``) or an
existing one (``--cluster tcp://HOST:PORT``).

The grading logic, the journal, ``--resume`` and the outputs are the ones of a local run: only
where tasks run changes. The guarantees are the local pool's, because each Dask worker runs its
tasks *in a local pool*: a ``pool.ProcessPoolRunner`` of one sandboxed process per worker thread,
kept for the worker's life. Why a pool hosted by the worker rather than a fresh sandboxed process
per Dask task:

- the sandbox is the same code as on one machine (address-space limit, CPU-time limit counted
  from the task's start, a child that dies retried on a fresh one), so the limits and the grades
  are the same by construction;
- a sandboxed process starts in seconds (NumPy, MLX, the simulator's warm-up), longer than most
  checks take; a pool that outlives the task pays that once per worker thread, and keeps the
  simulator's compile cache warm across the tasks that worker runs;
- a kernel never runs in the Dask worker process itself, so nothing a submission does can take a
  Dask worker down; a worker that is lost anyway (killed, its machine gone) is the scheduler's to
  handle: it runs the worker's tasks again elsewhere, and gives up on a task only after it killed
  ``distributed.scheduler.allowed-failures`` workers (``KilledWorker``: a grader fault here). Its
  sandbox, left holding a task, ends with it (``pool._exit_with_parent``), silently.

Notebooks are read here and sent to the workers as bytes (a remote worker cannot open our
files); at most a few reads are in flight at once, so the class is never all in memory. A
student's kernel checks go to Dask in batches of up to ``BATCH`` (each check still runs and is
limited on its own in the sandbox): a check takes tens of milliseconds, and a Dask task per check
would spend about as much again in scheduling and messages.

Dask is an optional extra: this module imports it only when a ``DaskRunner`` is made.
"""

from __future__ import annotations

import multiprocessing
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from ..version import __version__
from .limits import Limits
from .pool import ProcessPoolRunner
from .task_backend import Outcome, RunnerStopped, TaskOutcome
from .tasks import NotebookChanged, ReadTask, SubmissionLimit, Task, read_notebook_bytes

INSTALL_HINT = "pip install 'metal-puzzles[cluster]' (it adds dask[distributed] and cryptography)"
#: Reads in flight per Dask worker thread: enough to keep workers busy, few enough to bound memory.
READS_PER_THREAD = 2
#: Kernel checks per Dask task: large enough to make Dask's cost per task small beside the checks,
#: small enough that a student's 30 checks still spread over several workers.
BATCH = 8


class ClusterError(Exception):
    """``--cluster`` cannot be used as given (Dask missing, a malformed address)."""


@dataclass(frozen=True)
class ClusterSpec:
    """Where to run: ``workers`` processes of a LocalCluster, or the scheduler at ``address``."""

    address: str | None = None
    workers: int | None = None

    @property
    def local(self) -> bool:
        return self.address is None

    def describe(self) -> str:
        if self.local:
            return f"a Dask LocalCluster of {self.workers} worker process(es)"
        return f"the Dask cluster at {self.address}"

    @classmethod
    def parse(cls, text: str, default_workers: int) -> ClusterSpec:
        """``local``, ``local:N`` or a scheduler address (``tcp://HOST:PORT``, ``tls://...``)."""
        if text == "local":
            return cls(workers=max(1, default_workers))
        if text.startswith("local:"):
            n = text.removeprefix("local:")
            if not n.isdigit() or int(n) < 1:
                raise ClusterError(f"--cluster {text}: the number of workers after 'local:' must be a positive "
                                   "integer (e.g. local:4)")
            return cls(workers=int(n))
        scheme, sep, rest = text.partition("://")
        if not sep or not scheme or not rest:
            raise ClusterError(f"--cluster {text}: expected 'local', 'local:N' or a scheduler address such as "
                               "tcp://HOST:PORT")
        return cls(address=text)


def _temporary_credentials(distributed):
    """Mutual TLS for a LocalCluster: a key and a self-signed certificate made for this run, held
    in memory and handed to the workers it starts. Its scheduler and workers listen on
    127.0.0.1, where any local user could connect and run code in them (and so in the grader's
    name); with these, a connection without the run's certificate is refused. The dashboard is
    off for the same reason."""
    try:
        return distributed.Security.temporary()
    except ImportError:
        raise ClusterError(f"--cluster local needs the cryptography package for its TLS credentials: "
                           f"{INSTALL_HINT}") from None


def _distributed():
    try:
        import distributed
    except ImportError:
        raise ClusterError(f"--cluster needs Dask's distributed scheduler, which is not installed: "
                           f"{INSTALL_HINT}") from None
    return distributed


# ---------------------------------------------------------------------------- on a worker
#: One sandbox pool per worker thread (a thread runs one task at a time).
_SANDBOXES = threading.local()


def run_in_sandbox(tasks: list[Task], limits: Limits, retries: int) -> list[TaskOutcome]:
    """Run grading tasks, one after the other, in this worker thread's sandboxed process (started
    on first use): one outcome each, as the local pool gives them."""
    pool = getattr(_SANDBOXES, "pool", None)
    if pool is None or pool.limits != limits or pool.retries != retries:
        if pool is not None:
            pool.close()
        pool = _SANDBOXES.pool = ProcessPoolRunner(limits, workers=1, retries=retries)
    for task in tasks:
        pool.submit(task)
    return list(pool.outcomes())  # RunnerStopped (no sandbox can start) goes back to the client


def _worker_facts() -> dict:
    """What the client checks about each worker before grading on it."""
    return {"version": __version__, "daemon": bool(multiprocessing.current_process().daemon)}


# ---------------------------------------------------------------------------- on the client
class DaskRunner:
    """Run grading tasks on a Dask cluster (see the module's docstring).

    ``call`` is what each Dask task runs (``run_in_sandbox``; tests wrap it to kill a worker).
    Raises ``ClusterError`` if Dask is missing, ``RunnerStopped`` if the cluster cannot be used.
    """

    def __init__(self, spec: ClusterSpec, limits: Limits, *, retries: int = 2,
                 call: Callable[[list[Task], Limits, int], list[TaskOutcome]] = run_in_sandbox) -> None:
        distributed = _distributed()
        import dask

        self.spec = spec
        self.limits = limits
        self.retries = retries
        self.call = call
        self.cluster = None
        try:
            if spec.local:
                # Workers must be allowed children (their sandboxes). Their statistical profiler is
                # off: it samples every 10 ms, CPU the checks need on a small machine.
                with dask.config.set({"distributed.worker.daemon": False,
                                      "distributed.worker.profile.enabled": False}):
                    self.cluster = distributed.LocalCluster(
                        n_workers=spec.workers, threads_per_worker=1, processes=True, dashboard_address=None,
                        silence_logs=50, protocol="tls://", security=_temporary_credentials(distributed))
                self.client = distributed.Client(self.cluster)  # the cluster's credentials
            else:
                self.client = distributed.Client(spec.address, timeout=30)
        except (OSError, TimeoutError) as exc:
            self.close()
            raise RunnerStopped(f"cannot reach {spec.describe()}: {exc}") from None
        except RuntimeError as exc:  # a LocalCluster's worker lost while it starts ("Nanny failed to start")
            self.close()
            raise RunnerStopped(f"cannot start {spec.describe()}: {exc}") from None
        try:
            self._check_workers()
        except BaseException:
            self.close()
            raise
        self._done = distributed.as_completed()
        self._tasks: dict[str, list[Task]] = {}  # Dask key -> its tasks
        self._reads: deque[ReadTask] = deque()  # reads not sent yet
        self._batch: list[Task] = []  # kernel checks not sent yet
        self._ready: deque[TaskOutcome] = deque()  # outcomes known here (a file that cannot be read)
        self._reads_out = 0
        self._outstanding = 0

    def _check_workers(self) -> None:
        try:
            self.client.wait_for_workers(1, timeout=self.limits.startup_seconds)
        except TimeoutError:
            raise RunnerStopped(f"no worker joined {self.spec.describe()} within "
                                f"{self.limits.startup_seconds:g} s") from None
        for address, facts in self.client.run(_worker_facts).items():
            if facts["version"] != __version__:
                raise RunnerStopped(f"the Dask worker {address} has metal-puzzles {facts['version']} and this "
                                    f"grader {__version__}: install the same version on every worker")
            if facts["daemon"]:
                raise RunnerStopped(f"the Dask worker {address} is a daemonic process, which cannot start the "
                                    "grader's sandboxed processes: start the workers with "
                                    "DASK_DISTRIBUTED__WORKER__DAEMON=False")

    @property
    def threads(self) -> int:
        return max(1, sum(self.client.nthreads().values()))

    # ------------------------------------------------------------ TaskRunner
    def submit(self, task: Task) -> None:
        self._outstanding += 1
        if isinstance(task, ReadTask):
            self._reads.append(task)  # read and sent when there is room (``_top_up``)
        else:
            self._batch.append(task)
            if len(self._batch) >= BATCH:
                self._flush()

    def outcomes(self) -> Iterator[TaskOutcome]:
        while self._outstanding:
            self._flush()
            self._top_up()
            if not self._ready:
                self._ready.extend(self._collect(next(self._done)))
            outcome = self._ready.popleft()
            if isinstance(outcome.task, ReadTask):
                self._reads_out -= 1
            self._outstanding -= 1
            yield outcome

    def close(self) -> None:
        for thing in (getattr(self, "client", None), self.cluster):
            if thing is not None:
                try:
                    thing.close()
                except Exception:  # closing is best effort: the run's results are already in hand
                    pass
        self.cluster = None
        self.client = None

    def __enter__(self) -> DaskRunner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------ internals
    def _flush(self) -> None:
        if self._batch:
            self._send(self._batch, priority=1)  # students already read finish first
            self._batch = []

    def _send(self, tasks: list[Task], priority: int) -> None:
        key = f"metal-puzzles-{tasks[0].task_id}-{uuid.uuid4().hex}"
        future = self.client.submit(self.call, tasks, self.limits, self.retries, key=key, pure=False,
                                    priority=priority)
        self._tasks[key] = tasks
        self._done.add(future)

    def _top_up(self) -> None:
        while self._reads and self._reads_out < READS_PER_THREAD * self.threads:
            task = self._reads.popleft()
            self._reads_out += 1
            try:
                data = read_notebook_bytes(task)
            except SubmissionLimit as exc:  # as the worker would have said it
                self._ready.append(TaskOutcome(task, Outcome.LIMIT, reason=str(exc)))
                continue
            except NotebookChanged as exc:  # not graded now; --resume grades it again
                self._ready.append(TaskOutcome(task, Outcome.GRADER_FAULT, reason=str(exc)))
                continue
            self._send([replace(task, data=data)], priority=0)

    def _collect(self, future) -> list[TaskOutcome]:
        tasks = self._tasks.pop(future.key)
        # result(), not the status as it stands: a result computed on a worker that died before it
        # was fetched is computed again elsewhere (the status is then no longer "finished"), and
        # result() waits for it; asking exception() instead gave None, counted a grader fault.
        try:
            return future.result()
        except Exception as error:  # the task's own exception, raised here
            exc = error
        finally:
            future.release()
        if isinstance(exc, RunnerStopped):
            raise RunnerStopped(f"on {self.spec.describe()}: {exc}")
        if type(exc).__name__ == "KilledWorker":
            return [TaskOutcome(task, Outcome.GRADER_FAULT, attempts=0,
                                reason="the Dask workers running it died on every attempt") for task in tasks]
        return [TaskOutcome(task, Outcome.GRADER_FAULT, reason=f"the grader failed: {type(exc).__name__}: {exc}")
                for task in tasks]
