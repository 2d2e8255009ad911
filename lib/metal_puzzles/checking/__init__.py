"""Checking a kernel against a puzzle: what a puzzle is (``puzzle``), how its kernel is launched
on a test (``run``) or as an MLX operation (``launch``), and the verdicts learners and graders
read (``verdict``); finale entries, which wire earlier puzzles' kernels, in ``wired`` (Part II's, gradients, in ``gradients``); test inputs in ``inputs``.

One mechanism serves ``MetalProblem.check()``, ``show()`` and ``explore()``, the book's images,
``metal-puzzles check`` and the grader.
"""

from .case import Case
from .case_runner import PUZZLE_MAX_STEPS, check_source, run_case, run_cases, run_one
from .gradients import GradPuzzle, grad_outcomes, run_grad_checks
from .launch import as_kernel, launch
from .puzzle import COST_LABELS, Budget, LaunchOptions, Puzzle
from .tolerance import Comparison, ErrorModel, compare_with_spec
from .verdict import (
    CaseStatus,
    CheckResult,
    Outcome,
    PuzzleStatus,
    Subject,
    describe_outcome,
    finding_text,
)
from .wired import WiredPuzzle, check_kernel_sources

__all__ = [
    "Puzzle", "Case", "Budget", "LaunchOptions", "COST_LABELS", "GradPuzzle", "WiredPuzzle",
    "run_case", "run_cases", "run_one", "check_source", "ErrorModel", "Comparison", "compare_with_spec", "check_kernel_sources",
    "run_grad_checks", "grad_outcomes", "launch", "as_kernel", "PUZZLE_MAX_STEPS",
    "CheckResult", "Outcome", "CaseStatus", "PuzzleStatus", "Subject", "describe_outcome",
    "finding_text",
]
