"""Where each puzzle's reference solution lives: package data of ``metal_puzzles.solutions``.

That package is the repository's top-level solutions/ folder, installed as part of metal_puzzles
(setup.py maps it), so the same files are found through ``importlib.resources`` in a checkout
installed editable and in an install from a wheel, an sdist or a git URL. It has a folder per part
of the book, named as the part's package (``solutions/part5/``, ``solutions/debugging/``), and in it
each puzzle's solution named by the puzzle's id (``rms_norm.metal``); ids are unique in the book,
so a file name finds its file.
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
    """The file of this name in the solutions folder of one of the book's parts, with a clear error
    where it is missing (or, which the tests rule out, in two parts)."""
    folder = solutions_dir()
    found = [part / name for part in folder.iterdir() if part.is_dir() and (part / name).is_file()]
    if not found:
        raise FileNotFoundError(f"reference solution {name} not found in {folder}: the installed "
                                "metal-puzzles is incomplete; reinstall it")
    if len(found) > 1:
        raise FileExistsError(f"reference solution {name} is in more than one part's folder of {folder}")
    return found[0]
