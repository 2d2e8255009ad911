"""Where each puzzle's reference solution lives: package data of ``metal_puzzles.solutions``.

That package is the repository's top-level solutions/ folder, installed as part of metal_puzzles
(setup.py maps it), so the same files are found through ``importlib.resources`` in a checkout
installed editable and in an install from a wheel, an sdist or a git URL.
"""

from __future__ import annotations

import sys
from importlib.resources import files
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Traversable moved to importlib.resources.abc in Python 3.11
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable  # novermin (type checking only)
    else:
        from importlib.abc import Traversable

#: The package whose data files are the reference solutions.
SOLUTIONS_PACKAGE = "metal_puzzles.solutions"


def solutions_dir() -> Traversable:
    """The installed solutions folder (a clear error where the package is not installed)."""
    try:
        return files(SOLUTIONS_PACKAGE)
    except ModuleNotFoundError as exc:
        raise FileNotFoundError(
            f"the reference solutions (package {SOLUTIONS_PACKAGE}) are not installed: install "
            "metal-puzzles (pip install metal-puzzles, or pip install -e . in a checkout) instead of "
            "putting lib/ on the path") from exc


def solution_file(name: str) -> Traversable:
    """A file of the solutions folder, with a clear error where it is missing."""
    folder = solutions_dir()
    path = folder / name
    if not path.is_file():
        raise FileNotFoundError(f"reference solution {name} not found in {folder}: the installed "
                                "metal-puzzles is incomplete; reinstall it")
    return path
