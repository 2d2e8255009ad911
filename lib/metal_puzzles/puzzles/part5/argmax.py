"""V.5: greedy sampling, the argmax of each row of logits, one threadgroup a row: a block
reduction that carries indices, ties broken as ``mx.argmax`` breaks them (the first index).

The output is an index, computed without rounding: the check is exact (tolerance 0).
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, ErrorModel, Puzzle
from ...checking.inputs import ceil_div, values
from ..catalogue.entry import Entry

TG = 128  # four SIMD-groups a row
LONGEST = 512  # the longest row (vocabulary) in any test
PER_THREAD = ceil_div(LONGEST, TG)

HEADER = f"""\
constant uint TG = {TG};
constant uint SIMD_GROUPS = TG / 32;
"""


def argmax_spec(x):
    # The index of every row's largest logit; the first one where several are equal.
    return mx.argmax(x, axis=1)


def _case(x: np.ndarray, label: str) -> Case:
    rows = x.shape[0]
    return Case((x,), (rows,), (TG, rows, 1), (TG, 1, 1), label)


def _tied(rng: np.random.Generator, rows: int, n: int, negative: bool = False) -> np.ndarray:
    """Random logits whose largest value sits at several places of every row: in different
    SIMD-groups and, where the row is long enough, twice among one thread's elements."""
    x = values(rng, (rows, n)) - (8.0 if negative else 0.0)
    for r in range(rows):
        places = rng.choice(n, size=min(n, 3), replace=False)
        first = int(np.min(places))
        x[r, places] = x[r].max() + 0.25
        if first + TG < n:
            x[r, first + TG] = x[r, first]
    return x.astype(np.float32)


def hidden(rng: np.random.Generator) -> list[Case]:
    return [_case(_tied(rng, rows, n, negative), f"hidden test: {rows} rows of {n}, {what}")
            for rows, n, negative, what in ((3, LONGEST, False, "four values per thread"),
                                            (2, 37, False, "shorter than two SIMD-groups"),
                                            (4, TG, False, "one value per thread"),
                                            (2, 300, True, "every logit negative"))]


_K = np.arange(400)
VISIBLE = _case(((_K * 7 % 16) / 4 - (_K >= 200) * 8).astype(np.float32).reshape(2, 200), "visible test")

SETUP = """\
k = mx.arange(400)
x = ((k * 7 % 16) / 4 - (k >= 200) * 8).reshape(2, 200)  # logits; row 1 all negative
output_shape = (2,)"""

TEMPLATE = """\
threadgroup float best_values[SIMD_GROUPS];
threadgroup uint best_indices[SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
// FILL ME IN (roughly 25 lines): your best (value, index), the SIMD-group's, then the row's.
"""

PUZZLE = Puzzle(
    id="argmax",
    number="V.5",
    title="Argmax Sampling",
    kernel_name="argmax",
    input_names=("x",),
    output_dtype="uint32",
    header=HEADER,
    description=f"""\
A language model's last layer gives a **logit** for every token of its vocabulary; greedy
decoding writes the token with the largest. Each row of `x` (shape `(R, V)`, `V` up to {LONGEST})
is one sequence's logits, and `out[r]` (a `uint`) is the index of row `r`'s largest value. When
several are equal, `mx.argmax` returns the **first**: in the visible test, row 0's largest value,
3.75, is at indices 9, 25, 41, ... (every 16th: in one SIMD-group, in several, and twice in
thread 9, at 9 and 137), and the answer is 9. Row 1 is all negative: a running maximum
that starts at 0 finds nothing.

One threadgroup of `TG = {TG}` threads (four SIMD-groups) per row; thread `j` owns elements
`j, j + {TG}, ...` of its row. This is a maximum reduction, carrying the index along:

1. each thread keeps its best `(value, index)`, starting from `-INFINITY`; its elements come in
   increasing order, so replacing only on a strictly larger value keeps the first index;
2. in a SIMD-group, `simd_max(v)` is the group's largest value; the lanes holding it offer their
   index, the others `UINT_MAX`, and `simd_min` of those is the first index of the largest value;
3. lane 0 of each SIMD-group writes the pair to `best_values[sg]` and `best_indices[sg]`;
   after **one** barrier, thread 0 goes through the `SIMD_GROUPS` pairs, keeping the larger
   value and, between equal values, the smaller index, and writes `out[r]`.

Sampling with a temperature draws from the softmax of the logits instead; at temperature 0 it is
this kernel.

**Hidden tests** pose logits in `[-4, 4)` on a grid of quarters, the largest of every row at
three places (in different SIMD-groups, and twice among one thread's elements): ties decide the
answer, and the lowest index must win; one test has every logit below -4, where a running maximum
started at 0 instead of `-INFINITY` (or the first element) finds a maximum that is not there. The
answer is an index: it must be exact.

**Budget**: each logit read once (at most {PER_THREAD} global reads per thread), one write, one
barrier per threadgroup.""",
    spec=argmax_spec,
    spec_source=inspect.getsource(argmax_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_reads=PER_THREAD, global_writes=1, max_barriers=1, max_reads_per_element=1.0,
                  barriers_advice=("find each SIMD-group's largest value with simd_max and its first index with "
                                   "simd_min (no barrier needed), then merge the SIMD-groups' pairs once, behind "
                                   "one barrier")),
    work=lambda case: (TG, case.output_shape[0]),
    atol=0.0,
    rtol=0.0,
    error_model=ErrorModel.EXACT_SUMS,
)


ENTRY = Entry(PUZZLE, setup=SETUP)
