"""Part I of the book: the fundamentals (the original fourteen puzzles).

Besides the ordered list, this module knows where each puzzle's reference solution lives and
how the notebook sets up its visible test (the lines that build the inputs, and the name of the
function returning the kernel), so the notebook builder and the tests read one table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..checking import Puzzle
from . import (
    p02_zip,
    p03_guard,
    p04_map_2d,
    p05_broadcast,
    p06_threadgroups,
    p07_threadgroups_2d,
    p08_threadgroup_memory,
    p09_pooling,
    p10_dot_product,
    p11_conv,
    p12_prefix_sum,
    p13_axis_sum,
    p14_matmul,
)
from .p01_map import PUZZLE as MAP
from .solutions import solution_file

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable  # novermin (type checking only)

PART_I: list[Puzzle] = [
    MAP,
    p02_zip.PUZZLE,
    p03_guard.PUZZLE,
    p04_map_2d.PUZZLE,
    p05_broadcast.PUZZLE,
    p06_threadgroups.PUZZLE,
    p07_threadgroups_2d.PUZZLE,
    p08_threadgroup_memory.PUZZLE,
    p09_pooling.PUZZLE,
    p10_dot_product.PUZZLE,
    p11_conv.SIMPLE,
    p11_conv.FULL,
    p12_prefix_sum.SIMPLE,
    p12_prefix_sum.FULL,
    p13_axis_sum.PUZZLE,
    p14_matmul.SIMPLE,
    p14_matmul.FULL,
]

# Reference solutions (kernel bodies) in the top-level solutions/ folder, installed as package data
# of metal_puzzles.solutions. Puzzles that share a kernel share a file: one kernel has to pass both
# entries.
SOLUTION_FILES: dict[str, str] = {
    "map": "01_map.metal",
    "zip": "02_zip.metal",
    "guard": "03_guard.metal",
    "map_2d": "04_map_2d.metal",
    "broadcast": "05_broadcast.metal",
    "threadgroups": "06_threadgroups.metal",
    "threadgroups_2d": "07_threadgroups_2d.metal",
    "threadgroup_memory": "08_threadgroup_memory.metal",
    "pooling": "09_pooling.metal",
    "dot_product": "10_dot_product.metal",
    "conv_simple": "11_conv.metal",
    "conv_full": "11_conv.metal",
    "prefix_sum_simple": "12_prefix_sum.metal",
    "prefix_sum_full": "12_prefix_sum.metal",
    "axis_sum": "13_axis_sum.metal",
    "matmul_simple": "14_matmul.metal",
    "matmul_full": "14_matmul.metal",
}


_MAP_SETUP = """\
SIZE = 4
a = mx.arange(SIZE)
output_shape = (SIZE,)"""

# Notebook lines that build the visible test's inputs (named as the puzzle's input_names) and
# `output_shape`, in the original notebook's words.
NOTEBOOK_SETUP: dict[str, str] = {
    "map": _MAP_SETUP,
    "zip": p02_zip.SETUP,
    "guard": p03_guard.SETUP,
    "map_2d": p04_map_2d.SETUP,
    "broadcast": p05_broadcast.SETUP,
    "threadgroups": p06_threadgroups.SETUP,
    "threadgroups_2d": p07_threadgroups_2d.SETUP,
    "threadgroup_memory": p08_threadgroup_memory.SETUP,
    "pooling": p09_pooling.SETUP,
    "dot_product": p10_dot_product.SETUP,
    "conv_simple": p11_conv.SETUP_SIMPLE,
    "conv_full": p11_conv.SETUP_FULL,
    "prefix_sum_simple": p12_prefix_sum.SETUP_SIMPLE,
    "prefix_sum_full": p12_prefix_sum.SETUP_FULL,
    "axis_sum": p13_axis_sum.SETUP,
    "matmul_simple": p14_matmul.SETUP_SIMPLE,
    "matmul_full": p14_matmul.SETUP_FULL,
}

# The notebook function that returns each puzzle's MetalKernel. Entries sharing a kernel share
# the function, defined once in the first entry's cell.
KERNEL_FUNCTIONS: dict[str, str] = {
    "map": "map_test",
    "zip": "zip_test",
    "guard": "guard_test",
    "map_2d": "map_2d_test",
    "broadcast": "broadcast_test",
    "threadgroups": "threadgroups_test",
    "threadgroups_2d": "threadgroups_2d_test",
    "threadgroup_memory": "threadgroup_memory_test",
    "pooling": "pooling_test",
    "dot_product": "dot_product_test",
    "conv_simple": "conv_test",
    "conv_full": "conv_test",
    "prefix_sum_simple": "prefix_sum_test",
    "prefix_sum_full": "prefix_sum_test",
    "axis_sum": "axis_sum_test",
    "matmul_simple": "matmul_test",
    "matmul_full": "matmul_test",
}


def solution_path(puzzle: Puzzle) -> Traversable:
    """Where the reference solution of a Part I puzzle lives (KeyError for other puzzles)."""
    return solution_file(SOLUTION_FILES[puzzle.id])


def solution_source(puzzle: Puzzle) -> str:
    """The reference solution's kernel body; it replaces the puzzle's template as ``source``."""
    return solution_path(puzzle).read_text(encoding="utf-8")
