"""The limits every grading task runs under."""

from __future__ import annotations

from dataclasses import dataclass

#: Memory per worker process (address space). Grading every reference solution needs about
#: 330 MiB of address space (NumPy, MLX and the simulator); the rest is room for a kernel's data
#: and for parsing a notebook (benchmarks/bench_hostile.py reads a 78 MB one within this). Two
#: workers and the parent stay under 2 GB.
DEFAULT_MEMORY_MIB = 768


@dataclass(frozen=True)
class Limits:
    """A task's time limit (``wall_seconds`` for a check, ``read_seconds`` for a read) counts the
    CPU time its worker spends on it: what the kernel did. Wall time it did not use (a laptop
    suspended, a swapping or overloaded machine) is not the student's: a task still running after
    ``stalled_after`` wall seconds is stopped as the machine's fault and tried again."""

    wall_seconds: float = 60.0  # per kernel checked (all its tests together), CPU seconds; see time_limit
    memory_bytes: int = DEFAULT_MEMORY_MIB * 2**20  # per worker process (RLIMIT_AS)
    max_steps: int = 20_000  # simulator steps per launch
    read_seconds: float = 30.0  # per notebook read and parsed
    startup_seconds: float = 120.0  # for a worker to start (imports, warm-up); not a task's time
    #: Wall time allowed a task, as a multiple of its CPU limit plus a grace: a machine shared by
    #: several workers gives each a fraction of a core, so wall time runs ahead of CPU time.
    stall_factor: float = 3.0
    stall_grace_seconds: float = 30.0

    def stalled_after(self, cpu_limit: float) -> float:
        """Wall seconds after which a task limited to ``cpu_limit`` CPU seconds is deemed stalled
        by the machine rather than slow by itself."""
        return self.stall_factor * cpu_limit + self.stall_grace_seconds


def unenforced_limits() -> list[str]:
    """The limits this system cannot enforce, in words the grader prints before it grades.

    The memory limit is an address-space limit set with ``setrlimit``, which only POSIX systems
    have (the ``resource`` module); elsewhere (Windows) a kernel's memory is not bounded, while
    the time limit falls back to wall time, which the parent process enforces."""
    try:
        import resource  # noqa: F401
    except ImportError:
        return ["the memory limit is not enforced on this system, and the time limit counts wall "
                "time instead of CPU time: both need setrlimit (Python's `resource` module, on Linux "
                "and macOS). Grade a class on Linux or macOS"]
    return []
