"""Where each puzzle's reference solution lives (the repository's solutions/ folder)."""

from __future__ import annotations

from .base import Puzzle


def solution_source(puzzle: Puzzle) -> str:
    """The reference solution's kernel body for any puzzle of the book."""
    from . import part1

    if any(p is puzzle for p in part1.PART_I):
        return part1.solution_source(puzzle)
    from . import part2

    return part2.solution_source(puzzle)
