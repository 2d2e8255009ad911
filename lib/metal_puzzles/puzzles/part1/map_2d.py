"""Puzzle 4: Map 2D — a two-dimensional grid over a square matrix."""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import randint
from ..catalogue.entry import Entry


def map_2d_spec(a):
    return a + 10


def hidden(rng: np.random.Generator) -> list[Case]:
    # One threadgroup, as in the visible test; grids overshoot in both directions, by different
    # amounts, and are not always square.
    cases = []
    for n, grid, group in ((1, (2, 2, 1), (2, 2, 1)), (3, (4, 6, 1), (4, 6, 1)), (6, (8, 8, 1), (8, 8, 1))):
        a = randint(rng, (n, n))
        label = f"hidden test: {n}x{n} random matrix, grid {grid[0]}x{grid[1]}"
        cases.append(Case((a,), (n, n), grid, group, label))
    return cases


SETUP = """\
SIZE = 2
a = mx.arange(SIZE * SIZE).reshape((SIZE, SIZE))
output_shape = (SIZE, SIZE)"""

PUZZLE = Puzzle(
    id="map_2d",
    number="4",
    title="Map 2D",
    kernel_name="map_2D",
    input_names=("a",),
    description="""\
Add 10 to every element of the square matrix `a` and store the result in `out`. The grid is two
dimensional and larger than the matrix in both directions.

`thread_position_in_grid` has an `x` and a `y` part. The convention this book follows (and most
Metal code does) is that `x` runs along a row, so it picks the **column**, and `y` picks the
**row**. Buffers have no rows, though: the kernel sees `a` and `out` as flat arrays holding the
matrix row after row (row-major), so element `(row, col)` of an `n`-column matrix sits at
`row * n + col`. The matrix side is `a_shape[0]`.

Watch for: threads past the last column *or* past the last row. A thread with `col == n` and a
valid row computes an index inside the buffer, but the wrong one: it lands on the next row's
first element.

Budget: each thread with an element reads 1 and writes 1 element of global memory.""",
    spec=map_2d_spec,
    spec_source=inspect.getsource(map_2d_spec).strip(),
    visible=Case((np.arange(4, dtype=np.int32).reshape(2, 2),), (2, 2), (3, 3, 1), (3, 3, 1)),
    hidden=hidden,
    template="""\
uint col = thread_position_in_grid.x;
uint row = thread_position_in_grid.y;
// FILL ME IN (roughly 4 lines)
""",
    budget=Budget(global_reads=1, global_writes=1, shared_reads=0, shared_writes=0),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
