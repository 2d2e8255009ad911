"""Part V of the book: the kernels of a language model on Apple silicon (the norm, rotary
embeddings, the 4-bit quantized product, sampling: what mlx-lm runs for every token). Each spec is
MLX's own operation. As in the other parts, this module knows where each reference solution
lives, the notebook lines that build each visible test, and the name of each notebook test
function."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..checking import Puzzle
from . import t01_rms_norm, t02_rope, t03_quantized_matvec, t04_decode_attention, t05_argmax
from .solutions import solution_file

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable  # novermin (type checking only)

#: The part's number in ``Puzzle.part`` (the notebook builder titles it); 1 to 6 are Part I,
#: Part II, the bonus, Part III, the debugging part and Part IV.
LANGUAGE_MODEL_PART = 7

PART_V: list[Puzzle] = [
    t01_rms_norm.PUZZLE,
    t02_rope.TRADITIONAL,
    t02_rope.HALVES,
    t03_quantized_matvec.PUZZLE,
    t04_decode_attention.PUZZLE,
    t05_argmax.PUZZLE,
]

SOLUTION_FILES: dict[str, str] = {
    "rms_norm": "V_01_rms_norm.metal",
    "rope_traditional": "V_02a_rope_traditional.metal",
    "rope": "V_02b_rope.metal",
    "quantized_matvec": "V_03_quantized_matvec.metal",
    "decode_attention": "V_04_decode_attention.metal",
    "argmax": "V_05_argmax.metal",
}

NOTEBOOK_SETUP: dict[str, str] = {
    "rms_norm": t01_rms_norm.SETUP,
    "rope_traditional": t02_rope.SETUP,
    "rope": t02_rope.SETUP,
    "quantized_matvec": t03_quantized_matvec.SETUP,
    "decode_attention": t04_decode_attention.SETUP,
    "argmax": t05_argmax.SETUP,
}

KERNEL_FUNCTIONS: dict[str, str] = {p.id: f"{p.id}_test" for p in PART_V}


def solution_path(puzzle: Puzzle) -> Traversable:
    """Where the reference solution of a Part V puzzle lives (KeyError for other puzzles)."""
    return solution_file(SOLUTION_FILES[puzzle.id])


def solution_source(puzzle: Puzzle) -> str:
    """The reference solution's kernel body."""
    return solution_path(puzzle).read_text(encoding="utf-8")
