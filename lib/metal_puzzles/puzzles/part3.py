"""Part III of the book: performance. Each template leaves the heart of the kernel to the learner
and describes the slow, correct way in its comments; the budgets are stated in the cost model's terms: memory segments per
SIMD-group access, bank conflicts, SIMD efficiency, barriers, occupancy, reads per element.

As in ``part1`` and ``part2``, this module also knows where each reference solution lives (and,
for the occupancy puzzle, whose answer is a header constant, the solution's header), the
notebook lines that build each visible test, and the name of each notebook test function.
"""

from __future__ import annotations

from pathlib import Path

from ..checking import Puzzle
from . import (
    r01_tiled_transpose,
    r03_simd_reduction,
    r04_uniform_branches,
    r05_occupancy,
    r06_fused_softmax,
    r07_simdgroup_matmul,
)
from .solutions import solution_file

PART_III: list[Puzzle] = [
    r01_tiled_transpose.TILED,
    r01_tiled_transpose.PADDED,
    r03_simd_reduction.PUZZLE,
    r04_uniform_branches.PUZZLE,
    r05_occupancy.PUZZLE,
    r06_fused_softmax.PUZZLE,
    r07_simdgroup_matmul.PUZZLE,
]

SOLUTION_FILES: dict[str, str] = {
    "tiled_transpose": "III_01_tiled_transpose.metal",
    "padded_transpose": "III_02_padded_transpose.metal",
    "block_sum": "III_03_block_sum.metal",
    "uniform_branches": "III_04_uniform_branches.metal",
    "lookup_occupancy": "III_05_lookup_occupancy.metal",
    "fused_softmax": "III_06_fused_softmax.metal",
    "simdgroup_matmul": "III_07_simdgroup_matmul.metal",
}

#: Solutions whose header differs from the puzzle's (the occupancy puzzle's answer is its TG).
SOLUTION_HEADERS: dict[str, str] = {
    "lookup_occupancy": "III_05_lookup_occupancy.header.metal",
}

NOTEBOOK_SETUP: dict[str, str] = {
    "tiled_transpose": r01_tiled_transpose.SETUP,
    "padded_transpose": r01_tiled_transpose.SETUP,
    "block_sum": r03_simd_reduction.SETUP,
    "uniform_branches": r04_uniform_branches.SETUP,
    "lookup_occupancy": r05_occupancy.SETUP,
    "fused_softmax": r06_fused_softmax.SETUP,
    "simdgroup_matmul": r07_simdgroup_matmul.SETUP,
}

KERNEL_FUNCTIONS: dict[str, str] = {p.id: f"{p.id}_test" for p in PART_III}


def solution_path(puzzle: Puzzle) -> Path:
    """Where the reference solution of a Part III puzzle lives (KeyError for other puzzles)."""
    return solution_file(SOLUTION_FILES[puzzle.id])


def solution_source(puzzle: Puzzle) -> str:
    """The reference solution's kernel body."""
    return solution_path(puzzle).read_text()


def solution_header(puzzle: Puzzle) -> str:
    """The header the reference solution runs with: the puzzle's own, unless its answer is in it."""
    name = SOLUTION_HEADERS.get(puzzle.id)
    return solution_file(name).read_text() if name else puzzle.header
