"""Puzzle 14: Matrix Multiply — tiles of both matrices staged in threadgroup memory.

Two entries share one kernel: the simple test fits in a single 3x3 tile, the full one needs
the kernel to walk along the shared dimension tile by tile.
"""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import randfloat
from ..catalogue.entry import Entry

HEADER = """\
constant uint THREADGROUP_MEM_SIZE = 3;
"""

TILE = 3


def matmul_spec(a, b):
    return a @ b


def _case(rng: np.random.Generator, n: int, what: str) -> Case:
    # The grid is a whole number of 3x3 tiles, as in the visible tests.
    side = -(-n // TILE) * TILE
    a, b = randfloat(rng, (n, n)), randfloat(rng, (n, n))
    label = f"hidden test: {what}, {n}x{n} random matrices, grid {side}x{side} in 3x3 groups"
    return Case((a, b), (n, n), (side, side, 1), (TILE, TILE, 1), label)


def hidden_simple(rng: np.random.Generator) -> list[Case]:
    return [_case(rng, 3, "one tile"), _case(rng, 1, "one tile")]


def hidden_full(rng: np.random.Generator) -> list[Case]:
    return [_case(rng, 9, "3x3 tiles"), _case(rng, 7, "partial tiles"), _case(rng, 4, "partial tiles")]


def _visible(n: int, grid: int) -> Case:
    a = np.arange(n * n, dtype=np.float32).reshape(n, n)
    return Case((a, np.ascontiguousarray(a.T)), (n, n), (grid, grid, 1), (TILE, TILE, 1))


SETUP_SIMPLE = """\
SIZE = 2
a = mx.arange(SIZE * SIZE, dtype=mx.float32).reshape(SIZE, SIZE)
b = mx.arange(SIZE * SIZE, dtype=mx.float32).reshape(SIZE, SIZE).T
output_shape = (SIZE, SIZE)"""

SETUP_FULL = """\
SIZE = 8
a = mx.arange(SIZE * SIZE, dtype=mx.float32).reshape(SIZE, SIZE)
b = mx.arange(SIZE * SIZE, dtype=mx.float32).reshape(SIZE, SIZE).T
output_shape = (SIZE, SIZE)"""

TEMPLATE = """\
threadgroup float a_tile[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];
threadgroup float b_tile[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];

uint col = thread_position_in_grid.x;
uint row = thread_position_in_grid.y;
uint local_col = thread_position_in_threadgroup.x;
uint local_row = thread_position_in_threadgroup.y;
uint n = a_shape[0];
// FILL ME IN (roughly 19 lines)
"""

_DESCRIPTION = """\
Multiply the square matrices `a` and `b` and store the product in `out`:
`out[row, col]` is the dot product of row `row` of `a` with column `col` of `b`. All three are
`n x n` and stored row after row. Each thread computes one element of `out` (`x` picks the
column, `y` the row), in 3x3 threadgroups; the grid is a whole number of threadgroups.

Reading a row of `a` and a column of `b` straight from device memory costs `2n` reads per thread,
and each element gets read by `n` different threads. The fast way shares the work: the threads of
a group copy a 3x3 *tile* of `a` and a 3x3 tile of `b` into threadgroup memory, one element of
each per thread, wait at a barrier, and then each thread does its part of the dot product from the
shared tiles.

{focus}

Budget: {budget}"""

_FOCUS_SIMPLE = """\
Here the matrices are at most 3x3, so one tile of each holds the whole matrix: load once,
barrier, multiply, write. Start here."""

_FOCUS_FULL = """\
Here the matrices are larger than a tile. Slide along the shared dimension: for `k0 = 0, 3, 6,
...`, load the tile of `a` covering rows of this group and columns `k0..k0+2`, and the tile of `b`
covering rows `k0..k0+2` and the columns of this group, add the partial dot products, and move
on. Two barriers per step: one after loading (the tiles are complete) and one after using them
(nobody overwrites a tile another thread still reads). Positions past the edge of a matrix load
as zero, and the barriers must be reached by every thread, including those outside `out`."""

SIMPLE = Puzzle(
    id="matmul_simple",
    number="14a",
    title="Matmul (Simple)",
    kernel_name="matmul",
    input_names=("a", "b"),
    description=_DESCRIPTION.format(
        focus=_FOCUS_SIMPLE,
        budget="each thread reads 2 elements of global memory (one of `a`, one of `b`) and writes 1."),
    spec=matmul_spec,
    spec_source=inspect.getsource(matmul_spec).strip(),
    visible=_visible(2, 3),
    hidden=hidden_simple,
    header=HEADER,
    template=TEMPLATE,
    budget=Budget(global_reads=2, global_writes=1),
)

FULL = Puzzle(
    id="matmul_full",
    number="14b",
    title="Matmul (Full)",
    kernel_name="matmul",
    input_names=("a", "b"),
    description=_DESCRIPTION.format(
        focus=_FOCUS_FULL,
        budget="each thread reads at most 6 elements of global memory (two per tile step;\n"
               "8x8 and 9x9 matrices take 3 steps) and writes 1."),
    spec=matmul_spec,
    spec_source=SIMPLE.spec_source,
    visible=_visible(8, 9),
    hidden=hidden_full,
    header=HEADER,
    template=TEMPLATE,
    budget=Budget(global_reads=6, global_writes=1),
)


SIMPLE_ENTRY = Entry(SIMPLE, setup=SETUP_SIMPLE, function="matmul_test")
FULL_ENTRY = Entry(FULL, setup=SETUP_FULL, function="matmul_test", shares_solution_of=SIMPLE.id)
