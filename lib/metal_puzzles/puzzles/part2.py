"""Part II of the book: toward a sparse-convolution engine.

Scans, gathers and scatters, segment sums and their gradient, MVMR, VVOR and MVMR's backward,
the finale that wires kernels into ``mx.custom_function``, and a short bonus section (part 3 in
the notebook: SIMD-group reductions, layer norm forward and backward). As in ``part1``, this module also
knows where each reference solution lives, the notebook lines that build each visible test,
and the name of each notebook test function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..checking import GradPuzzle, Puzzle
from . import (
    finale,
    q01_scan,
    q02_gather,
    q03_scatter_add,
    q04_segment_sum,
    q05_segment_sum_large,
    q06_segment_sum_backward,
    q07_mvmr,
    q08_vvor,
    q09_mvmr_backward,
    q11_simd_row_sum,
    q12_layer_norm,
)
from .solutions import solution_file

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable  # novermin (type checking only)

PART_II: list[Puzzle] = [
    q01_scan.SCAN,
    q01_scan.OFFSETS,
    q02_gather.PUZZLE,
    q03_scatter_add.PUZZLE,
    q04_segment_sum.PUZZLE,
    q05_segment_sum_large.PUZZLE,
    q06_segment_sum_backward.PUZZLE,
    q07_mvmr.SIMPLE,
    q07_mvmr.FAST,
    q08_vvor.PUZZLE,
    q09_mvmr_backward.PUZZLE,
    finale.MVMR_AUTODIFF,
    finale.SEGMENT_SUM_AUTODIFF,
    # A short bonus section (part 3 in the notebook): SIMD-group reductions and MLX's layer norm.
    q11_simd_row_sum.PUZZLE,
    q12_layer_norm.FORWARD,
    q12_layer_norm.BACKWARD,
]

# Reference solutions in the top-level solutions/ folder (package data of metal_puzzles.solutions):
# kernel bodies (.metal), and for the finale the notebook cell's Python with the blanks filled in
# (.py).
SOLUTION_FILES: dict[str, str] = {
    "block_scan": "II_01a_block_scan.metal",
    "block_offsets": "II_01b_add_block_offsets.metal",
    "gather_rows": "II_02_gather_rows.metal",
    "scatter_add": "II_03_scatter_add.metal",
    "segment_sum": "II_04_segment_sum.metal",
    "segment_sum_large": "II_05_segment_sum_large.metal",
    "segment_sum_backward": "II_06_segment_sum_backward.metal",
    "mvmr_simple": "II_07a_mvmr_simple.metal",
    "mvmr_fast": "II_07b_mvmr.metal",
    "vvor": "II_08_vvor.metal",
    "mvmr_backward_b": "II_09_mvmr_backward_b.metal",
    "mvmr_autodiff": "II_10a_mvmr_autodiff.py",
    "segment_sum_autodiff": "II_10b_segment_sum_autodiff.py",
    "simd_row_sum": "II_B1_simd_row_sum.metal",
    "layer_norm": "II_B2_layer_norm.metal",
    "layer_norm_backward": "II_B3_layer_norm_backward.metal",
}


# Notebook lines that build the visible test's inputs (named as the puzzle's input_names) and
# `output_shape`. The finale entries have none: their cell is their template.
NOTEBOOK_SETUP: dict[str, str] = {
    "block_scan": q01_scan.SETUP_SCAN,
    "block_offsets": q01_scan.SETUP_OFFSETS,
    "gather_rows": q02_gather.SETUP,
    "scatter_add": q03_scatter_add.SETUP,
    "segment_sum": q04_segment_sum.SETUP,
    "segment_sum_large": q05_segment_sum_large.SETUP,
    "segment_sum_backward": q06_segment_sum_backward.SETUP,
    "mvmr_simple": q07_mvmr.SETUP_SIMPLE,
    "mvmr_fast": q07_mvmr.SETUP_FAST,
    "vvor": q08_vvor.SETUP,
    "mvmr_backward_b": q09_mvmr_backward.SETUP,
    "simd_row_sum": q11_simd_row_sum.SETUP,
    "layer_norm": q12_layer_norm.SETUP_FORWARD,
    "layer_norm_backward": q12_layer_norm.SETUP_BACKWARD,
}

# The notebook function returning each kernel puzzle's MetalKernel; the finale templates call
# them by these names.
KERNEL_FUNCTIONS: dict[str, str] = {p.id: f"{p.id}_test" for p in PART_II if not isinstance(p, GradPuzzle)}


def is_grad_puzzle(puzzle: Puzzle) -> bool:
    """True for finale entries: their notebook cell is Python, checked by ``GradProblem``."""
    return isinstance(puzzle, GradPuzzle)


def solution_path(puzzle: Puzzle) -> Traversable:
    """Where the reference solution of a Part II puzzle lives (KeyError for other puzzles)."""
    return solution_file(SOLUTION_FILES[puzzle.id])


def solution_source(puzzle: Puzzle) -> str:
    """The reference solution: a kernel body replacing the template as ``source``, or for a
    finale entry the whole notebook cell."""
    return solution_path(puzzle).read_text(encoding="utf-8")
