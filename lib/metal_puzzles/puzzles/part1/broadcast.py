"""Puzzle 5: Broadcast — a column plus a row gives a matrix."""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import randint
from ..catalogue.entry import Entry


def broadcast_spec(a, b):
    return a + b


def hidden(rng: np.random.Generator) -> list[Case]:
    # Square outputs, as in the visible test, and two that are not: a condition the visible test
    # does not pose, so their failures are notes.
    cases = []
    for rows, cols, grid in ((3, 3, (4, 4, 1)), (5, 5, (7, 6, 1)), (2, 5, (6, 3, 1)), (7, 4, (5, 8, 1))):
        a, b = randint(rng, (rows, 1)), randint(rng, (1, cols))
        label = f"hidden test: ({rows},1) column + (1,{cols}) row, grid {grid[0]}x{grid[1]}"
        cases.append(Case((a, b), (rows, cols), grid, (grid[0], grid[1], 1), label))
    return cases


SETUP = """\
SIZE = 2
a = mx.arange(SIZE).reshape(SIZE, 1)
b = mx.arange(SIZE).reshape(1, SIZE)
output_shape = (SIZE, SIZE)"""

PUZZLE = Puzzle(
    id="broadcast",
    number="5",
    title="Broadcast",
    kernel_name="broadcast",
    input_names=("a", "b"),
    description="""\
`a` is a column of shape `(rows, 1)` and `b` a row of shape `(1, cols)`. Compute their broadcast
sum, the `(rows, cols)` matrix with `out[row, col] = a[row] + b[col]`, exactly what `a + b` gives
in MLX or NumPy. The grid is larger than the output in both directions.

Use the convention of Map 2D: `x` picks the column, `y` the row, and `out` is stored row after
row. `a_shape` and `b_shape` give the sizes (mention them and they become parameters). The visible
test is square; a kernel that takes the number of rows from `a` and the number of columns from `b`
works for any shape, and a note after the verdict says whether yours would.

Budget: each thread with an output element reads 2 elements of global memory (one of `a`, one
of `b`) and writes 1.""",
    spec=broadcast_spec,
    spec_source=inspect.getsource(broadcast_spec).strip(),
    visible=Case((np.arange(2, dtype=np.int32).reshape(2, 1), np.arange(2, dtype=np.int32).reshape(1, 2)),
                 (2, 2), (3, 3, 1), (3, 3, 1)),
    hidden=hidden,
    template="""\
uint col = thread_position_in_grid.x;
uint row = thread_position_in_grid.y;
// FILL ME IN (roughly 4 lines)
""",
    budget=Budget(global_reads=2, global_writes=1, shared_reads=0, shared_writes=0),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
