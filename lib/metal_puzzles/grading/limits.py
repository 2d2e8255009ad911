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
    wall_seconds: float = 60.0  # per kernel checked (all its tests together); see each task's time_limit
    memory_bytes: int = DEFAULT_MEMORY_MIB * 2**20  # per worker process (RLIMIT_AS)
    max_steps: int = 20_000  # simulator steps per launch
    read_seconds: float = 30.0  # per notebook read and parsed
    startup_seconds: float = 120.0  # for a worker to start (imports, warm-up); not a task's time


def unenforced_limits() -> list[str]:
    """The limits this system cannot enforce, in words the grader prints before it grades.

    The memory limit is an address-space limit set with ``setrlimit``, which only POSIX systems
    have (the ``resource`` module); elsewhere (Windows) a kernel's memory is not bounded, while
    the time limit, enforced by the parent process, still is."""
    try:
        import resource  # noqa: F401
    except ImportError:
        return ["the memory limit is not enforced on this system: it needs setrlimit (Python's "
                "`resource` module, on Linux and macOS); time limits still apply. Grade a class on "
                "Linux or macOS"]
    return []
