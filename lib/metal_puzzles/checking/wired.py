"""Finale entries: the learner's Python wires the kernels of earlier puzzles into something larger
(a differentiable function in Part II, a model's decode step in Part V), and the check judges what
the wiring computes.

The grader never runs a submission's Python, so :func:`check_kernel_sources` takes the learner's
*kernels* (read statically from the notebook), wires them the reference way (``WiredPuzzle.wire``)
and runs the entry's own check (``WiredPuzzle.check_wired``) on the result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..host.kernel import MetalKernel
from ..msl import ArgumentError
from .puzzle import Puzzle
from .verdict import CaseStatus, CheckResult, Outcome, Subject


@dataclass(frozen=True)
class WiredPuzzle(Puzzle):
    """A finale entry: the learner writes Python wiring kernels from ``kernel_puzzles``, not a kernel.

    ``wire(kernels, **launch_options)`` builds, from such kernels by kernel name, what the
    learner's cell builds (the reference way); ``check_wired`` checks it. The template is Python
    code for a notebook cell.
    """

    kernel_puzzles: tuple[Puzzle, ...] = ()
    wire: Callable[..., Any] | None = None

    @property
    def kernels(self) -> tuple[str, ...]:
        """The kernel names the entry wires together (how the grader finds them)."""
        return tuple(p.kernel_name for p in self.kernel_puzzles)

    @property
    def subject(self) -> Subject:
        """What the verdict judges (its report's wording)."""
        raise NotImplementedError(f"{type(self).__name__} does not say what its verdict judges")

    def check_wired(self, wired: Any, seed: int = 0) -> CheckResult:
        """The verdict on what the wiring built (the learner's, or ``wire``'s from their kernels)."""
        raise NotImplementedError(f"{type(self).__name__} does not say how to check its wiring")


def check_kernel_sources(puzzle: WiredPuzzle, kernels: Mapping[str, Any], *, seed: int = 0,
                         max_steps: int | None = None) -> CheckResult:
    """Grade a finale entry without running learner Python: wire the learner's kernels the
    reference way and run the entry's check.

    ``kernels`` maps each name in ``puzzle.kernels`` to the kernel as read from the notebook:
    a mapping or an object with ``source`` and optionally ``header``, ``input_names``,
    ``output_names`` (the grader's ``ExtractedKernel`` has them).
    """
    missing = [name for name in puzzle.kernels if name not in kernels]
    if missing:
        return _not_wired(puzzle, CaseStatus.RUNTIME_ERROR, "missing kernel(s): " + ", ".join(missing))
    made: dict[str, MetalKernel] = {}
    for owner in puzzle.kernel_puzzles:
        k = kernels[owner.kernel_name]
        fields = k if isinstance(k, Mapping) else vars(k)
        source = fields.get("source")
        if not isinstance(source, str):  # e.g. an ExtractedKernel the grader could not read
            return _not_wired(puzzle, CaseStatus.RUNTIME_ERROR, f"kernel '{owner.kernel_name}' has no source")
        try:
            made[owner.kernel_name] = owner.kernel(source, fields.get("header") or None,
                                                   input_names=fields.get("input_names"),
                                                   output_names=fields.get("output_names"))
        except ArgumentError as exc:  # names MLX could not declare: the kernel cannot be made
            return _not_wired(puzzle, CaseStatus.COMPILE_ERROR, str(exc))
    assert puzzle.wire is not None, f"finale entry {puzzle.id!r} has no reference wiring"
    return puzzle.check_wired(puzzle.wire(made, sanitize="error", max_steps=max_steps), seed)


def _not_wired(puzzle: WiredPuzzle, status: CaseStatus, error: str) -> CheckResult:
    """The verdict when the learner's kernels cannot be wired at all: one failed visible test."""
    return CheckResult(puzzle.title, [Outcome(puzzle.visible, status, error=error)], subject=puzzle.subject)
