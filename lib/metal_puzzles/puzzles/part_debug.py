"""The debugging part of the book, between Part I and Part II: detective puzzles.

Each puzzle hands the learner a finished kernel that is wrong in one way a GPU hides (a race
across loop iterations, an index that wraps around, a barrier only some threads reach, an
uninitialised threadgroup read, positions computed from ``threads_per_threadgroup`` in a partial
last threadgroup). The template is that buggy kernel; the learner finds the bug with ``show()``
and ``problem.explore()``, fixes it, and ``check()`` judges the fix like any other puzzle.

As in ``part1``, this module also knows where each reference solution lives, the notebook lines
that build each visible test, and the name of each notebook test function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..checking import Puzzle
from . import d01_block_sum, d02_blur, d03_neighbour_sum, d04_block_max, d05_squares
from .solutions import solution_file

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable  # novermin (type checking only)

#: The part's number in ``Puzzle.part`` (the notebook builder titles it); parts 1 to 4 are
#: Part I, Part II, the bonus and Part III.
DEBUG_PART = 5

PART_DEBUG: list[Puzzle] = [
    d01_block_sum.PUZZLE,
    d02_blur.PUZZLE,
    d03_neighbour_sum.PUZZLE,
    d04_block_max.PUZZLE,
    d05_squares.PUZZLE,
]

SOLUTION_FILES: dict[str, str] = {
    "detective_block_sum": "D_01_block_sum.metal",
    "detective_blur": "D_02_blur.metal",
    "detective_neighbour_sum": "D_03_neighbour_sum.metal",
    "detective_block_max": "D_04_block_max.metal",
    "detective_squares": "D_05_squares.metal",
}

NOTEBOOK_SETUP: dict[str, str] = {
    "detective_block_sum": d01_block_sum.SETUP,
    "detective_blur": d02_blur.SETUP,
    "detective_neighbour_sum": d03_neighbour_sum.SETUP,
    "detective_block_max": d04_block_max.SETUP,
    "detective_squares": d05_squares.SETUP,
}

KERNEL_FUNCTIONS: dict[str, str] = {p.id: f"{p.id}_test" for p in PART_DEBUG}


def solution_path(puzzle: Puzzle) -> Traversable:
    """Where the reference solution of a detective puzzle lives (KeyError for other puzzles)."""
    return solution_file(SOLUTION_FILES[puzzle.id])


def solution_source(puzzle: Puzzle) -> str:
    """The reference solution's kernel body: the template with its bug fixed."""
    return solution_path(puzzle).read_text(encoding="utf-8")
