"""The puzzle catalogue: every puzzle of the book, in order, and each one's reference solution.

The notebook, ``MetalProblem.check()``, the grader and the tests all read this one list. A new
puzzle is a module of its own (its text, spec, tests, template) listed in its part.
"""

from __future__ import annotations

from ..checking import Budget, Case, GradPuzzle, Puzzle
from ..host.kernel import MetalKernel
from . import finale, part1, part2, part3, part4, part5, part_debug
from .part1 import PART_I
from .part2 import PART_II
from .part3 import PART_III
from .part4 import PART_IV
from .part5 import PART_V
from .part_debug import PART_DEBUG

# The debugging part follows the fundamentals: its bugs need only what Part I teaches.
PUZZLES: list[Puzzle] = [*PART_I, *PART_DEBUG, *PART_II, *PART_III, *PART_IV, *PART_V]


def _key(s: str) -> str:
    return "".join(ch for ch in s.lower() if ch.isalnum())


def find_puzzle(name: str) -> Puzzle | None:
    """The puzzle with this title or id (case, spaces and punctuation ignored), or None."""
    k = _key(name)
    for p in PUZZLES:
        if _key(p.title) == k or _key(p.id) == k:
            return p
    return None


def get_puzzle(name: str) -> Puzzle:
    p = find_puzzle(name)
    if p is None:
        raise KeyError(f"no puzzle named {name!r}; known: {', '.join(q.title for q in PUZZLES)}")
    return p


def _part_of(puzzle: Puzzle):
    for part, puzzles in ((part1, PART_I), (part_debug, PART_DEBUG), (part2, PART_II), (part3, PART_III),
                          (part4, PART_IV), (part5, PART_V)):
        if any(p is puzzle for p in puzzles):
            return part
    raise KeyError(f"puzzle {puzzle.id!r} is not in the catalogue")


def solution_source(puzzle: Puzzle) -> str:
    """The reference solution of any puzzle of the book: a kernel body, or for a finale entry
    the whole notebook cell."""
    return _part_of(puzzle).solution_source(puzzle)


def solution_header(puzzle: Puzzle) -> str:
    """The header the reference solution runs with (the puzzle's own, except where the answer
    is a header constant, as in the occupancy puzzle)."""
    part = _part_of(puzzle)
    return part.solution_header(puzzle) if hasattr(part, "solution_header") else puzzle.header


def solution_kernel(puzzle: Puzzle) -> MetalKernel:
    """The puzzle's kernel with its reference solution as the body (and header)."""
    return puzzle.kernel(solution_source(puzzle), solution_header(puzzle))


def find_grad_puzzle(name: str) -> GradPuzzle:
    """The finale entry with this title or id."""
    found = find_puzzle(name)
    if not isinstance(found, GradPuzzle):
        raise KeyError(f"no finale puzzle named {name!r}; known: {', '.join(p.title for p in finale.FINALE)}")
    return found


__all__ = ["PUZZLES", "Puzzle", "Case", "Budget", "GradPuzzle", "find_puzzle", "get_puzzle", "find_grad_puzzle",
           "solution_source", "solution_header", "solution_kernel", "finale", "part1", "part2", "part3",
           "part4", "part5", "part_debug"]
