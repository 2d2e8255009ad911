"""Puzzle 7: Threadgroups 2D — a 2D grid cut into 2D groups."""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import randfloat
from ..catalogue.entry import Entry


def threadgroups_2d_spec(a):
    return a + 10


def hidden(rng: np.random.Generator) -> list[Case]:
    # Square matrices in whole threadgroups, as in the visible test; then two tests that pose more
    # (a matrix that is not square, partial threadgroups), whose failures are notes.
    cases = []
    for shape, grid, group in (((7, 7), (9, 9, 1), (3, 3, 1)), ((4, 4), (6, 6, 1), (3, 3, 1)),
                               ((9, 9), (12, 12, 1), (4, 4, 1)), ((4, 6), (8, 5, 1), (3, 3, 1)),
                               ((10, 3), (4, 12, 1), (2, 4, 1))):
        a = randfloat(rng, shape)
        label = f"hidden test: {shape[0]}x{shape[1]} random matrix, grid {grid[0]}x{grid[1]} in {group[0]}x{group[1]} groups"
        cases.append(Case((a,), shape, grid, group, label))
    return cases


SETUP = """\
SIZE = 5
a = mx.ones((SIZE, SIZE))
output_shape = (SIZE, SIZE)"""

PUZZLE = Puzzle(
    id="threadgroups_2d",
    number="7",
    title="Threadgroups 2D",
    kernel_name="threadgroups_2D",
    input_names=("a",),
    description="""\
The same map (add 10 to every element of `a`), now in two dimensions: a 2D grid cut into 2D
threadgroups, each smaller than the matrix in both directions, and the grid larger than the matrix.

Every thread attribute from the last puzzle is a `uint3` with an `x`, `y` and `z` part, and the
arithmetic works the same way in each direction. The template computes the column from the `x`
parts; work out the row from the `y` parts. As in Map 2D, `x` picks the column and `y` the row of
the row-major matrix. The visible matrix is square; with `a_shape[0]` for the number of rows and
`a_shape[1]` for the number of columns the kernel works for any shape (a note after the verdict
says whether yours would).

Budget: each thread with an element reads 1 and writes 1 element of global memory.""",
    spec=threadgroups_2d_spec,
    spec_source=inspect.getsource(threadgroups_2d_spec).strip(),
    visible=Case((np.ones((5, 5), dtype=np.float32),), (5, 5), (6, 6, 1), (3, 3, 1)),
    hidden=hidden,
    template="""\
uint3 group = threadgroup_position_in_grid;
uint3 local_pos = thread_position_in_threadgroup;
uint3 group_size = dispatch_threads_per_threadgroup;
uint col = group.x * group_size.x + local_pos.x;
// FILL ME IN (roughly 5 lines)
""",
    budget=Budget(global_reads=1, global_writes=1, shared_reads=0, shared_writes=0),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
