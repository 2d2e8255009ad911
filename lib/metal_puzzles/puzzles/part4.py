"""Part IV of the book: whole shaders (kernel functions with their own signatures, as ``.metal``
files and ``torch.mps.compile_shader`` have them). As in the other parts, this module knows where
each reference solution lives, the notebook lines that build each visible test, and the name of
each notebook test function."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..checking import Puzzle
from . import s01_whole_shaders
from .solutions import solution_file

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable  # novermin (type checking only)

#: The part's number in ``Puzzle.part`` (the notebook builder titles it); 1 to 5 are Part I,
#: Part II, the bonus, Part III and the debugging part.
WHOLE_SHADERS_PART = 6

PART_IV: list[Puzzle] = [
    s01_whole_shaders.MVMR_SHADER,
    s01_whole_shaders.LERP,
]

SOLUTION_FILES: dict[str, str] = {
    "mvmr_shader": "IV_01_mvmr_shader.metal",
    "lerp_shader": "IV_02_lerp.metal",
}

NOTEBOOK_SETUP: dict[str, str] = {
    "mvmr_shader": s01_whole_shaders.MVMR_SETUP,
    "lerp_shader": s01_whole_shaders.LERP_SETUP,
}

KERNEL_FUNCTIONS: dict[str, str] = {p.id: f"{p.id}_test" for p in PART_IV}


def solution_path(puzzle: Puzzle) -> Traversable:
    """Where the reference solution of a Part IV puzzle lives (KeyError for other puzzles)."""
    return solution_file(SOLUTION_FILES[puzzle.id])


def solution_source(puzzle: Puzzle) -> str:
    """The reference solution: a whole shader replacing the template as ``source``."""
    return solution_path(puzzle).read_text(encoding="utf-8")
