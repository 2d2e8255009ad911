"""What a puzzle is: its text, its spec in MLX ops, its tests, budgets and template.

The catalogue in this package is the single source of truth read by the notebook, by
``MetalProblem.check()``, by the grader and by the tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

COUNTER_LABELS = {
    "global_reads": "global reads",
    "global_writes": "global writes",
    "shared_reads": "shared reads",
    "shared_writes": "shared writes",
    "atomics": "atomic operations",
}


@dataclass(frozen=True)
class Budget:
    """Maximum per-thread counts a solution may use (None: no limit)."""

    global_reads: int | None = None
    global_writes: int | None = None
    shared_reads: int | None = None
    shared_writes: int | None = None
    atomics: int | None = None

    def limits(self) -> dict[str, int]:
        return {k: v for k, v in vars(self).items() if v is not None}

    def exceeded(self, counts_max: dict[str, int]) -> list[str]:
        """Learner-facing sentences for every counter over budget."""
        out = []
        for key, limit in self.limits().items():
            used = counts_max.get(key, 0)
            if used > limit:
                out.append(f"uses {used} {COUNTER_LABELS[key]} per thread; this puzzle needs at most {limit}")
        return out


@dataclass(frozen=True)
class Case:
    """One launch of a puzzle's kernel: inputs, output shape, grid and threadgroup."""

    inputs: tuple[np.ndarray, ...]
    output_shape: tuple[int, ...]
    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int] = (1, 1, 1)
    label: str = "visible test"


@dataclass(frozen=True)
class Puzzle:
    id: str  # short identifier, e.g. 'map'
    number: str  # position in the book, e.g. '1' or 'II.3'
    title: str  # also the name given to MetalProblem in the notebook
    kernel_name: str  # the name= of the template's MetalKernel (how the grader finds it)
    input_names: tuple[str, ...]
    description: str  # Markdown
    spec: Callable  # MLX ops computing the expected output from the inputs
    visible: Case
    hidden: Callable[[np.random.Generator], Sequence[Case]]
    template: str  # the kernel body handed to the learner, with '// FILL ME IN'
    header: str = ""
    budget: Budget = field(default_factory=Budget)
    output_names: tuple[str, ...] = ("out",)
    output_dtype: str = "float32"
    part: int = 1
    # Extra text for the notebook, shown after the puzzle (tips, what to watch for).
    spec_source: str = ""  # the spec's Python source as shown to the learner
    atol: float = 1e-4
    rtol: float = 1e-5
    #: Launch options the puzzle's kernel needs (scatter-adds: init_value=0, atomic_outputs=True).
    init_value: float | None = None
    atomic_outputs: bool = False

    def cases(self, seed: int = 0) -> list[Case]:
        """The visible test followed by the hidden tests (deterministic for a seed)."""
        rng = np.random.default_rng(seed)
        return [self.visible, *self.hidden(rng)]


def arange(n: int, dtype=np.int32) -> np.ndarray:
    return np.arange(n, dtype=dtype)


def randint(rng: np.random.Generator, shape, low: int = -20, high: int = 20, dtype=np.int32) -> np.ndarray:
    return rng.integers(low, high, size=shape).astype(dtype)


def randfloat(rng: np.random.Generator, shape, low: float = -4.0, high: float = 4.0) -> np.ndarray:
    # Values on a coarse grid keep float32 sums exact, so results do not depend on summation order.
    return (rng.integers(int(low * 4), int(high * 4), size=shape) / 4.0).astype(np.float32)
