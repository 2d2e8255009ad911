"""The puzzle catalogue: every puzzle of the book, in order.

The notebook, ``MetalProblem.check()``, the grader and the tests all read this one list.
"""

from __future__ import annotations

from .base import Budget, Case, Puzzle
from .part1 import PART_I
from .part2 import PART_II

PUZZLES: list[Puzzle] = [*PART_I, *PART_II]


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


__all__ = ["PUZZLES", "Puzzle", "Case", "Budget", "find_puzzle", "get_puzzle"]
