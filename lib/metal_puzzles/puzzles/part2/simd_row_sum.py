"""Bonus B.1: SIMD Row Sum — reduce a row with simd_sum and one threadgroup slot per SIMD-group.

The pattern every MLX reduction kernel uses: each SIMD-group of 32 threads reduces in registers
with ``simd_sum``, lane 0 of each SIMD-group leaves its partial in threadgroup memory, and after
one barrier the partials are added. Two levels, one barrier, no tree of barriers.
"""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import ceil_div, values
from ..catalogue.entry import Entry

TG = 64  # two SIMD-groups of 32
LONGEST = 300  # the longest row in any test; the read budget is stated with it

HEADER = """\
constant uint TG = 64;
constant uint SIMD_GROUPS = TG / 32;
"""


def simd_row_sum_spec(x):
    return x.sum(axis=1)


def row_grid(rows: int) -> tuple[int, int, int]:
    """Threadgroup (0, r) of TG threads owns row r."""
    return (TG, rows, 1)


def _case(rng: np.random.Generator, rows: int, length: int, what: str) -> Case:
    label = f"hidden test: {rows} rows of {length}, {what}"
    return Case((values(rng, (rows, length)),), (rows,), row_grid(rows), (TG, 1, 1), label)


def hidden(rng: np.random.Generator) -> list[Case]:
    return [_case(rng, 3, LONGEST, "several values per thread"), _case(rng, 2, 7, "shorter than a SIMD-group"),
            _case(rng, 4, 64, "one value per thread"), _case(rng, 2, 33, "one value past the first SIMD-group")]


VISIBLE = Case(((np.arange(200) % 7).astype(np.float32).reshape(2, 100),), (2,), row_grid(2), (TG, 1, 1))

SETUP = """\
x = (mx.arange(200) % 7).astype(mx.float32).reshape(2, 100)
output_shape = (2,)"""

READS = ceil_div(LONGEST, TG)

PUZZLE = Puzzle(
    id="simd_row_sum",
    number="B.1",
    title="SIMD Row Sum",
    kernel_name="simd_row_sum",
    input_names=("x",),
    header=HEADER,
    description=f"""\
Sum each row of `x` (shape `(R, N)`): `out[r]` is the sum of row `r`. One threadgroup of
`TG = 64` threads per row: the grid is `(64, R, 1)` and `threadgroup_position_in_grid.y` is the
row. Thread `j` first adds up `x[r, j], x[r, j + 64], ...` (the row may be shorter than 64, or
much longer).

Then the 64 partial sums must become one. Part I did it with a tree in threadgroup memory: six
rounds, six barriers. GPUs have a faster tool. The threads of a threadgroup run in
**SIMD-groups** of 32 (`simdgroup_index_in_threadgroup` says which, `thread_index_in_simdgroup`
is the lane), and `simd_sum(v)` adds `v` across the 32 lanes of the caller's SIMD-group and gives
every lane the result, without memory and without a barrier. So:

1. `simd_sum` your partial sum;
2. lane 0 of each SIMD-group writes the result into `partial[simdgroup_index_in_threadgroup]`
   (`threadgroup float partial[SIMD_GROUPS];`, two slots);
3. one barrier; then thread 0 adds the `SIMD_GROUPS` slots and writes `out[r]`.

This is how MLX's reduction and normalisation kernels combine a threadgroup's values.

Budget: at most {READS} global reads per thread (rows are up to {LONGEST} long: `ceil({LONGEST} / 64)`),
1 global write, 1 threadgroup-memory write and at most 2 threadgroup-memory reads (the score
table calls threadgroup memory "shared"). With a tree, thread 0 writes threadgroup memory 7 times.""",
    spec=simd_row_sum_spec,
    spec_source=inspect.getsource(simd_row_sum_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template="""\
threadgroup float partial[SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
// FILL ME IN (roughly 12 lines)
""",
    budget=Budget(global_reads=READS, global_writes=1, shared_reads=2, shared_writes=1),
    # A threadgroup of TG threads per row.
    work=lambda case: (TG, case.output_shape[0]),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
