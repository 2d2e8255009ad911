"""What a puzzle is: its text, its spec in MLX ops, its tests, budget and template, and how to
make and launch its kernel. The catalogue (``metal_puzzles.puzzles``) is a list of these."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..kernel import MetalKernel
from .contract import WorkExtent, mark_beyond

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
    #: How this hidden test goes beyond the structure of the visible test, in words (see
    #: ``contract``); empty when it keeps it. Such a test's failure is a note, not a failed verdict.
    beyond: tuple[str, ...] = ()


@dataclass(frozen=True)
class LaunchOptions:
    """How a puzzle's kernel is launched besides the case: its output dtype and, for kernels that
    accumulate (scatter-adds), the value outputs start from."""

    output_dtype: str = "float32"
    init_value: float | None = None


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
    spec_source: str = ""  # the spec's Python source as shown to the learner
    atol: float = 1e-4
    rtol: float = 1e-5
    #: Launch options the puzzle's kernel needs (scatter-adds: init_value=0, atomic_outputs=True).
    init_value: float | None = None
    atomic_outputs: bool = False
    #: Work items along each grid dimension of a test, x first, when they are not the output's
    #: elements (a reduction's input, pairs of a sparse product): what "more threads than
    #: elements" compares with (see ``contract``).
    work: WorkExtent | None = None

    def cases(self, seed: int = 0, visible: Case | None = None) -> list[Case]:
        """The visible test (by default the puzzle's own) followed by the hidden tests, each marked
        with the ways it goes beyond the visible test's structure (deterministic for a seed)."""
        rng = np.random.default_rng(seed)
        visible = self.visible if visible is None else visible
        return [visible, *mark_beyond(visible, self.hidden(rng), self.input_names, self.work)]

    @property
    def launch_options(self) -> LaunchOptions:
        return LaunchOptions(self.output_dtype, self.init_value)

    def kernel(self, source: str, header: str | None = None, *, input_names: Sequence[str] | None = None,
               output_names: Sequence[str] | None = None) -> MetalKernel:
        """This puzzle's kernel with the given body (and header: by default the puzzle's own)."""
        return MetalKernel(self.kernel_name, list(input_names or self.input_names),
                           list(output_names or self.output_names), source,
                           self.header if header is None else header, atomic_outputs=self.atomic_outputs)
