"""Puzzle 13: Axis Sum — block sums along the rows of a batch, one grid row per batch row."""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.contract import input_extent
from ...checking.inputs import randint
from ..catalogue.entry import Entry

HEADER = """\
constant uint THREADGROUP_MEM_SIZE = 8;
"""

THREADGROUP_MEM_SIZE = 8


def axis_sum_spec(a):
    # Pad each row to whole blocks of THREADGROUP_MEM_SIZE and sum each block.
    batch, size = a.shape
    blocks = (size + THREADGROUP_MEM_SIZE - 1) // THREADGROUP_MEM_SIZE
    pad = mx.zeros((batch, blocks * THREADGROUP_MEM_SIZE - size), dtype=a.dtype)
    padded = mx.concatenate([a, pad], axis=1)
    return padded.reshape(batch, blocks, THREADGROUP_MEM_SIZE).sum(axis=2)


def hidden(rng: np.random.Generator) -> list[Case]:
    # As in the visible test, every row fits in one threadgroup of 8. The last two tests pose more:
    # rows longer than a threadgroup (several sums per row), whose failures are notes.
    cases = []
    for batch, size, grid_x in ((3, 5, 8), (6, 8, 8), (2, 3, 8), (2, 16, 16), (5, 13, 16)):
        blocks = (size + THREADGROUP_MEM_SIZE - 1) // THREADGROUP_MEM_SIZE
        label = f"hidden test: {batch}x{size} random values, grid {grid_x}x{batch} in groups of 8x1"
        cases.append(Case((randint(rng, (batch, size)),), (batch, blocks), (grid_x, batch, 1), (8, 1, 1), label))
    return cases


SETUP = """\
BATCH = 4
SIZE = 6
a = mx.arange(BATCH * SIZE).reshape((BATCH, SIZE))
output_shape = (BATCH, 1)"""

PUZZLE = Puzzle(
    id="axis_sum",
    number="13",
    title="Axis Sum",
    kernel_name="axis_sum",
    input_names=("a",),
    description="""\
`a` is a batch of rows, shape `(batch, size)`. Sum each row in blocks of 8 as in Prefix Sum:
`out[r, g]` is the sum of `a[r, 8g]` to `a[r, 8g+7]`, so `out` has shape
`(batch, ceil(size / 8))`. In the visible test every row fits in one block and `out` is a
column of row sums.

The grid is two dimensional: `x` runs along a row in threadgroups of 8 threads, and `y` picks
the row, with threadgroups one row tall, so every threadgroup works on one block of one row.
`a` and `out` are stored row after row; `a_shape[1]` is the row length.

Watch for the threads past the end of a row. Longer rows, with several blocks and several
threadgroups along `x`, are a step beyond what the visible test poses; a note after the verdict
says whether your kernel would handle them (put block `g`'s sum at `out[r, g]`).

Budget: each thread reads 1 element of `a` and writes at most 1 element of `out`.""",
    spec=axis_sum_spec,
    spec_source="THREADGROUP_MEM_SIZE = 8\n\n\n" + inspect.getsource(axis_sum_spec).strip(),
    visible=Case((np.arange(24, dtype=np.int32).reshape(4, 6),), (4, 1), (8, 4, 1), (8, 1, 1)),
    hidden=hidden,
    header=HEADER,
    template="""\
threadgroup float cache[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
uint batch = thread_position_in_grid.y;
// FILL ME IN (roughly 16 lines)
""",
    budget=Budget(global_reads=1, global_writes=1),
    work=input_extent(0),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
