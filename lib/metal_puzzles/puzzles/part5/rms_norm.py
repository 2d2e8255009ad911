"""V.1: RMSNorm, one threadgroup a row: the norm every layer of a Llama-style model starts with.

The structure of MLX's own ``rms_norm`` kernel: each thread reads its elements of the row once into
registers, a SIMD-group sum (``simd_sum``), the SIMD-groups' partials through threadgroup memory
behind one barrier, then every thread scales its own elements. The spec is ``mx.fast.rms_norm``.
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, ErrorModel, Puzzle
from ...checking.inputs import ceil_div, values
from ...checking.puzzle import SIMD_SUM_BARRIERS
from ..catalogue.entry import Entry

TG = 64  # two SIMD-groups a row
LONGEST = 256  # the longest row in any test; the budgets are stated with it
PER_THREAD = ceil_div(LONGEST, TG)  # elements of a row one thread owns, at most
EPS = 1e-5

HEADER = f"""\
constant uint TG = {TG};
constant uint SIMD_GROUPS = TG / 32;
constant uint PER_THREAD = {PER_THREAD};  // rows are at most {LONGEST} long: TG * PER_THREAD
constant float EPS = 1e-5f;
"""


def rms_norm_spec(x, w):
    # Every row divided by its root mean square (plus EPS), then scaled by w.
    return mx.fast.rms_norm(x, w, EPS)


SPEC_SOURCE = "EPS = 1e-5\n\n\n" + inspect.getsource(rms_norm_spec).strip()


def _case(x: np.ndarray, w: np.ndarray, label: str, output_dtype: str | None = None) -> Case:
    rows = x.shape[0]
    return Case((x, w), x.shape, (TG, rows, 1), (TG, 1, 1), label, output_dtype=output_dtype)


#: The large activations of the hidden test in half: each squared is past half's largest value.
HALF_OUTLIERS = (300.0, -1000.0)


def hidden(rng: np.random.Generator) -> list[Case]:
    cases = []
    for rows, n, what in ((3, LONGEST, "four values per thread"), (2, 5, "shorter than a SIMD-group"),
                          (4, TG, "one value per thread"), (3, 100, "a row of zeros and a row of tiny values")):
        x = values(rng, (rows, n))
        if n == 100:
            x[1] = 0.0  # sqrt(mean(0) + EPS): without EPS this row is 0 / 0
            x[2] /= 1024.0  # mean square near EPS: EPS changes every output
        cases.append(_case(x, values(rng, (n,)), f"hidden test: {rows} rows of {n}, {what}"))
    # Half activations, as a model in half feeds them: values of a few units and, in each row, one
    # of the few hundred that real models' residual streams reach ("massive activations"). Its square
    # alone is past half's largest finite value (65504): a sum of squares kept in half is infinite.
    x = values(rng, (2, LONGEST)).astype(np.float16)
    for row, outlier in enumerate(HALF_OUTLIERS):
        x[row, rng.integers(0, LONGEST)] = outlier
    cases.append(_case(x, values(rng, (LONGEST,)).astype(np.float16),
                       f"hidden test: 2 rows of {LONGEST} in half, with activations of {HALF_OUTLIERS[0]:g} and "
                       f"{HALF_OUTLIERS[1]:g}", output_dtype="float16"))
    return cases


# Row 0 on a grid of ones; row 1 small: its mean square (about 1e-3) is where EPS starts to count.
_X = ((np.arange(96) % 7 - 3) / np.repeat([1.0, 64.0], 48)).astype(np.float32).reshape(2, 48)
_W = (1 + np.arange(48) % 3 / 2).astype(np.float32)
VISIBLE = _case(_X, _W, "visible test")

SETUP = """\
x = ((mx.arange(96) % 7 - 3) / mx.repeat(mx.array([1.0, 64.0]), 48)).astype(mx.float32).reshape(2, 48)
w = (1 + mx.arange(48) % 3 / 2).astype(mx.float32)
output_shape = (2, 48)"""

TEMPLATE = """\
threadgroup float partial[SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
// FILL ME IN (roughly 25 lines): read your elements once into float v[PER_THREAD], sum their
// squares, reduce, then write v[q] * rsqrt(mean + EPS) * w[k].
"""

PUZZLE = Puzzle(
    id="rms_norm",
    number="V.1",
    title="RMSNorm",
    kernel_name="rms_norm",
    input_names=("x", "w"),
    header=HEADER,
    description=f"""\
A transformer layer starts by normalising its input. Llama and the models after it use
**RMSNorm**: no mean is subtracted, every row of `x` (shape `(R, N)`) is divided by its root mean
square, then scaled by a learned weight `w` (length `N`):

```
out[r, i] = x[r, i] / sqrt(mean_r + EPS) * w[i],    mean_r = (x[r, 0]^2 + ... + x[r, N-1]^2) / N
```

`EPS = 1e-5` keeps a row of zeros (or of tiny values) from dividing by zero: without it, a row of
zeros gives `0 / 0`, NaN, and a row whose mean square is near `EPS` comes out visibly wrong. The
second row of the visible test is such a row (its values are sixty-fourths, its mean square about
`1e-3`): leave `EPS` out and its outputs are off by half a percent, tens of thousands of times
float32's rounding.

One threadgroup of `TG = {TG}` threads (two SIMD-groups) per row: the grid is `({TG}, R, 1)`,
`threadgroup_position_in_grid.y` is the row `r`, thread `j` owns elements `j, j + {TG}, ...`
(at most `PER_THREAD = {PER_THREAD}` of them; rows are 5 to {LONGEST} long).

This is the reduction of Part II's bonus with what Part III taught:

1. read your elements **once** into a thread array `float v[PER_THREAD]` (registers; an element
   past the end of the row counts as 0) and add up their squares;
2. `simd_sum` adds the 32 lanes' sums of a SIMD-group without any barrier; lane 0 of each
   SIMD-group writes the result to `partial[sg]`;
3. **one** `threadgroup_barrier`, then every thread adds the `SIMD_GROUPS` slots itself (every
   thread needs the total: it scales its own elements);
4. `rsqrt(total / N + EPS)` is `1 / sqrt(...)`; write `v[q] * rsqrt(...) * w[k]`.

MLX's `rms_norm` kernel is this plan, with more elements per thread.

**Hidden tests** pose rows of values in `[-4, 4)`, a row of zeros and a row of tiny values (where
`EPS` counts), and, as models run in half precision, one test in `half`: `x`, `w` and `out` are
`half`, and each row holds one activation of several hundred ({HALF_OUTLIERS[0]:g}, {HALF_OUTLIERS[1]:g}), as real
models' residual streams do. `{HALF_OUTLIERS[0]:g}^2 = {HALF_OUTLIERS[0] ** 2:g}` is already past half's largest finite
value, 65504: a sum of squares kept in `half` is infinite, and every output of the row 0 or NaN.
Read each element into a `float` and add in `float` (the same kernel then works for both types:
`float v = x[i]` converts a `half`); MLX's kernels, too, compute in `float32` and store `half`.

**Budget**: at most {2 * PER_THREAD} global reads per thread (each of your at most {PER_THREAD}
elements of `x` read once, and its weight), {PER_THREAD} writes, and one barrier per threadgroup.""",
    spec=rms_norm_spec,
    spec_source=SPEC_SOURCE,
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_reads=2 * PER_THREAD, global_writes=PER_THREAD, max_barriers=1,
                  barriers_advice=SIMD_SUM_BARRIERS),
    work=lambda case: (TG, case.output_shape[0]),
    atol=1e-6,
    rtol=1e-5,
    error_model=ErrorModel.CONDITIONED,
)


ENTRY = Entry(PUZZLE, setup=SETUP)
