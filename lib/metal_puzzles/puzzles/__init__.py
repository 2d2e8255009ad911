"""The puzzle catalogue: every puzzle of the book, in order, and each one's reference solution.

The notebook, ``MetalProblem.check()``, the grader and the tests all read these lists. A new
puzzle is a module of its own named by its id, in its part's package (``part5/rms_norm.py``: its
text, spec, tests, template, ending with its ``Entry``, see ``catalogue.entry``), one line in its
part's list (``part5/__init__.py``), and its reference solution named by its id in the part's
folder of solutions/ (``solutions/part5/rms_norm.metal``).
"""

from __future__ import annotations

from ..checking import Budget, Case, GradPuzzle, Puzzle
from ..host.kernel import MetalKernel
from .catalogue.entry import Entry, Part
from .debugging import PART_DEBUG
from .part1 import PART_I
from .part2 import BONUS, PART_II, autodiff
from .part3 import PART_III
from .part4 import PART_IV
from .part5 import PART_V

#: The parts in reading order. The debugging part follows the fundamentals: its bugs need only
#: what Part I teaches.
PARTS: list[Part] = [PART_I, PART_DEBUG, PART_II, BONUS, PART_III, PART_IV, PART_V]
ENTRIES: list[Entry] = [e for part in PARTS for e in part.entries]
PUZZLES: list[Puzzle] = [e.puzzle for e in ENTRIES]

_ENTRY_BY_ID: dict[str, Entry] = {e.puzzle.id: e for e in ENTRIES}
_PART_BY_ID: dict[str, Part] = {e.puzzle.id: part for part in PARTS for e in part.entries}
if len(_ENTRY_BY_ID) != len(ENTRIES):
    raise ValueError("two entries of the catalogue share a puzzle id")
if [part.number for part in PARTS] != list(range(1, len(PARTS) + 1)):
    raise ValueError("the parts' numbers are not their places in the reading order")


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


def entry_of(puzzle: Puzzle) -> Entry:
    """The catalogue's entry for this puzzle (KeyError for a puzzle not in the catalogue)."""
    entry = _ENTRY_BY_ID.get(puzzle.id)
    if entry is None or entry.puzzle is not puzzle:
        raise KeyError(f"puzzle {puzzle.id!r} is not in the catalogue")
    return entry


def part_of(puzzle: Puzzle) -> Part:
    """The part of the book whose list holds this puzzle."""
    entry_of(puzzle)  # a puzzle outside the catalogue is a KeyError that says so
    return _PART_BY_ID[puzzle.id]


def solution_source(puzzle: Puzzle) -> str:
    """The reference solution of any puzzle of the book: a kernel body, or for a finale entry
    the whole notebook cell."""
    return entry_of(puzzle).solution_source()


def solution_header(puzzle: Puzzle) -> str:
    """The header the reference solution runs with (the puzzle's own, except where the answer
    is a header constant, as in the occupancy puzzle)."""
    return entry_of(puzzle).solution_header()


def solution_kernel(puzzle: Puzzle) -> MetalKernel:
    """The puzzle's kernel with its reference solution as the body (and header)."""
    return entry_of(puzzle).solution_kernel()


def find_grad_puzzle(name: str) -> GradPuzzle:
    """The finale entry with this title or id."""
    found = find_puzzle(name)
    if not isinstance(found, GradPuzzle):
        raise KeyError(f"no finale puzzle named {name!r}; known: {', '.join(p.title for p in autodiff.FINALE)}")
    return found


__all__ = ["PARTS", "ENTRIES", "PUZZLES", "Entry", "Part", "Puzzle", "Case", "Budget", "GradPuzzle", "find_puzzle",
           "get_puzzle", "find_grad_puzzle", "entry_of", "part_of", "solution_source", "solution_header",
           "solution_kernel"]
