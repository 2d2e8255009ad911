"""III.6: Fused Softmax. The three-pass softmax reads each row from device memory three times
(for the maximum, for the sum of exponentials, for the output); the fused one reads it once
into registers and writes it once."""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, ErrorModel, Puzzle
from ...checking.inputs import ceil_div, values
from ..catalogue.entry import Entry

TG = 256
LONGEST = 1024
PER_THREAD = ceil_div(LONGEST, TG)

HEADER = f"""\
constant uint TG = {TG};
constant uint SIMD_GROUPS = TG / 32;
constant uint PER_THREAD = {PER_THREAD};  // rows are at most {LONGEST} long: TG * PER_THREAD
"""


def softmax_spec(x):
    return mx.softmax(x, axis=1)


def _case(x: np.ndarray, label: str) -> Case:
    rows = x.shape[0]
    return Case((x,), x.shape, (TG, rows, 1), (TG, 1, 1), label)


#: The logits the loud hidden tests pose: a model's logits reach the hundreds, where exp(x)
#: overflows float32 (above 88.7) or underflows to 0 (below -103); softmax(x + c) = softmax(x), so
#: only a kernel that subtracts the row's maximum gets them right.
LOUD_LOGITS = (300.0, -200.0)


def hidden(rng: np.random.Generator) -> list[Case]:
    cases = [_case(values(rng, (r, n)), f"hidden test: {r} rows of {n}, {what}") for r, n, what in
             ((3, LONGEST, "four values per thread"), (2, 700, "a partial last round"),
              (4, TG, "one value per thread"), (1, 37, "shorter than two SIMD-groups"))]
    # Values of [-4, 4) on a grid of quarters around each offset: float32 holds them exactly.
    return cases + [_case(values(rng, (2, n)) + np.float32(offset), f"hidden test: 2 rows of {n}, logits near {offset:g}")
                    for n, offset in zip((LONGEST, 300), LOUD_LOGITS, strict=True)]


VISIBLE = _case(((np.arange(600) % 11) / 4).astype(np.float32).reshape(2, 300), "visible test")

SETUP = """\
x = ((mx.arange(600) % 11) / 4).astype(mx.float32).reshape(2, 300)
output_shape = (2, 300)"""

# Passes 1 and 2 of the three-pass softmax: fast reductions, but each pass reads the row again.
TEMPLATE = """\
threadgroup float partial[SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
// Passes 1 and 2 below each read the row from device memory; pass 3 is yours to write.
// FILL ME IN: read your elements once into a thread array (float v[PER_THREAD]) and use it
// in all three passes (roughly 10 lines to add or change).

// Pass 1: the row's maximum.
float m = -INFINITY;
for (uint k = j; k < N; k += TG) {
    m = max(m, x[r * N + k]);
}
m = simd_max(m);
if (lane == 0) {
    partial[sg] = m;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
m = partial[0];
for (uint s = 1; s < SIMD_GROUPS; s++) {
    m = max(m, partial[s]);
}
threadgroup_barrier(mem_flags::mem_threadgroup);

// Pass 2: the sum of exp(x - max).
float sum = 0.0f;
for (uint k = j; k < N; k += TG) {
    sum += exp(x[r * N + k] - m);
}
sum = simd_sum(sum);
if (lane == 0) {
    partial[sg] = sum;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
sum = 0.0f;
for (uint s = 0; s < SIMD_GROUPS; s++) {
    sum += partial[s];
}

// Pass 3: the output, out[r * N + k] = exp(x[r * N + k] - m) / sum for your elements.
"""

PUZZLE = Puzzle(
    id="fused_softmax",
    number="III.6",
    title="Fused Softmax",
    kernel_name="fused_softmax",
    input_names=("x",),
    header=HEADER,
    description=f"""\
Softmax of every row of `x` (shape `(R, N)`, `N` at most {LONGEST}): `out[r, k] = exp(x[r, k] - m) / s`
with `m` the row's maximum and `s` the sum of `exp(x[r, k] - m)` over the row. One threadgroup of
`TG = {TG}` threads per row; thread `j` owns elements `j, j + {TG}, ...` of its row.

The template has the first two passes, and its reductions are the fast kind (`simd_max`,
`simd_sum`, one slot per SIMD-group). Add the third (`exp(x - m) / s` for your elements) and the
kernel is correct, but each of the three passes reads the row from device memory again: three
reads per element. Softmax does two floating-point operations per byte it
reads; it is bound by memory traffic, so three reads take about three times as long as one.

Fuse the passes: read your elements of the row **once** into a thread array
`float v[PER_THREAD]` (registers, free in the score table), and take the maximum, the sum and
the output from it. One read and one write per element: what MLX's own softmax kernel does.

**Hidden tests** pose values in `[-4, 4)` and, as a model's logits do, rows in the hundreds
(near {LOUD_LOGITS[0]:g} and near {LOUD_LOGITS[1]:g}): `exp(x)` overflows float32 above 88.7 and
rounds to 0 below -103, so keep subtracting the row's maximum (`softmax(x - m)` is `softmax(x)`).

**Budget**: each element of `x` read at most once (the cost model's *reads per element*), at
most {PER_THREAD} reads and {PER_THREAD} writes of device memory per thread.""",
    spec=softmax_spec,
    spec_source=inspect.getsource(softmax_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_reads=PER_THREAD, global_writes=PER_THREAD, max_reads_per_element=1.0),
    rtol=1e-5,
    atol=1e-7,
    error_model=ErrorModel.CONDITIONED,
)


ENTRY = Entry(PUZZLE, setup=SETUP)
