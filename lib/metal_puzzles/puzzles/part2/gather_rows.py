"""Puzzle II.2: Gather Rows — out[t, :] = x[idx[t], :]."""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import indices, padded, values
from ...checking.wording import plural
from ..catalogue.entry import Entry

TG = (4, 4, 1)


def gather_rows_spec(x, idx):
    return x[idx]


def _case(rng: np.random.Generator, rows: int, channels: int, count: int) -> Case:
    # As in the visible test: at most one threadgroup of channels, the grid padded on both sides.
    x = values(rng, (rows, channels))
    idx = indices(rng, count, rows)
    grid = (padded(channels, TG[0]), padded(count, TG[1]), 1)
    label = f"hidden test: {plural(count, 'random row')} of {rows}x{channels}, repeats and any order"
    return Case((x, idx), (count, channels), grid, TG, label)


def hidden(rng: np.random.Generator) -> list[Case]:
    return [_case(rng, 1, 1, 3), _case(rng, 9, 4, 13), _case(rng, 6, 2, 20), _case(rng, 40, 3, 7)]


VISIBLE = Case(
    (np.arange(15, dtype=np.float32).reshape(5, 3), np.array([3, 0, 3, 1, 4, 0], dtype=np.int32)),
    (6, 3), (4, 8, 1), TG)

SETUP = """\
x = mx.arange(15, dtype=mx.float32).reshape(5, 3)
idx = mx.array([3, 0, 3, 1, 4, 0], dtype=mx.int32)
output_shape = (6, 3)"""

PUZZLE = Puzzle(
    id="gather_rows",
    number="II.2",
    title="Gather Rows",
    kernel_name="gather_rows",
    input_names=("x", "idx"),
    description="""\
A sparse convolution never multiplies a dense image: it works on lists of rows picked out of
feature tables by index arrays. The first tool is the **gather**: row `t` of the output is row
`idx[t]` of `x`.

`x` has shape `(N, C)` (N rows of C channels) and `idx` has `T` entries, in any order and with
repeats; `out` has shape `(T, C)`. Use a 2D grid: `thread_position_in_grid.x` is the channel `c`
and `.y` is the output row `t`.

The grid can be larger than the output (the visible test launches 8 rows of threads for 6 output
rows, and 4 columns for 3 channels). The sizes come from the shapes of the inputs:
`x_shape[1]` is `C` and `idx_shape[0]` is `T`. Buffers are flat, so element `(r, c)` of `x` is
`x[r * C + c]`.

Budget: each thread reads 2 elements (its index and one element of `x`) and writes 1.""",
    spec=gather_rows_spec,
    spec_source=inspect.getsource(gather_rows_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template="""\
uint c = thread_position_in_grid.x;
uint t = thread_position_in_grid.y;
// FILL ME IN (roughly 4 lines)
""",
    budget=Budget(global_reads=2, global_writes=1),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
