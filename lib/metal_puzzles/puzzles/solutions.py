"""Where each puzzle's reference solution lives (the repository's solutions/ folder)."""

from __future__ import annotations

from pathlib import Path

from .base import Puzzle

#: The repository's solutions/ folder (beside lib/); present in a checkout and an editable install.
SOLUTIONS_DIR = Path(__file__).resolve().parents[3] / "solutions"


def solution_file(name: str) -> Path:
    """A file of the solutions folder, with a clear error where it is not installed."""
    path = SOLUTIONS_DIR / name
    if not path.exists():
        raise FileNotFoundError(
            f"reference solution {name} not found in {SOLUTIONS_DIR}: the solutions live in the repository's "
            "solutions/ folder, which only a checkout (pip install -e .) provides")
    return path


def solution_source(puzzle: Puzzle) -> str:
    """The reference solution's kernel body for any puzzle of the book."""
    from . import part1

    if any(p is puzzle for p in part1.PART_I):
        return part1.solution_source(puzzle)
    from . import part2

    return part2.solution_source(puzzle)
