"""Bonus B.2 and B.3: Layer Norm, forward and backward, one threadgroup per row.

The structure of MLX's layer-norm kernels: every reduction over a row is a SIMD-group sum
followed by a sum over the SIMD-groups' partials in threadgroup memory, and every thread gets
the row's totals (a broadcast reduction), because every thread needs them for its own elements.
The backward spec is MLX's own autodiff of the forward spec.
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, ErrorModel, Puzzle
from ...checking.inputs import ceil_div, values
from ..catalogue.entry import Entry
from .simd_row_sum import TG, row_grid

EPS = 1e-5
LONGEST = 256  # the longest row in any test; the budgets are stated with it
PER_THREAD = ceil_div(LONGEST, TG)  # elements of a row one thread owns, at most

HEADER = """\
constant uint TG = 64;
constant uint SIMD_GROUPS = TG / 32;
constant float EPS = 1e-5f;
"""


def layer_norm_spec(x, w, b):
    # Normalise every row to mean 0 and variance 1, then scale by w and shift by b.
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) * mx.rsqrt(var + EPS) * w + b


def layer_norm_backward_spec(x, w, g):
    # The gradient of layer_norm_spec with respect to x for the cotangent g, by MLX's autodiff
    # (b shifts the output and does not change it).
    b = mx.zeros_like(w)
    _, (gx,) = mx.vjp(lambda x: layer_norm_spec(x, w, b), [x], [g])
    return gx


SPEC_SOURCE = "EPS = 1e-5\n\n\n" + inspect.getsource(layer_norm_spec).strip()
BACKWARD_SPEC_SOURCE = SPEC_SOURCE + "\n\n\n" + inspect.getsource(layer_norm_backward_spec).strip()

# (rows, length, offset added to x, what)
_SHAPES = ((3, LONGEST, 0.0, "four values per thread"), (2, 5, 0.0, "shorter than a SIMD-group"),
           (4, 64, 0.0, "one value per thread"),
           (2, 100, 10000.0, "values near 10000: subtract the mean before squaring"))


def _inputs(rng: np.random.Generator, rows: int, length: int, offset: float, backward: bool):
    x = values(rng, (rows, length)) + np.float32(offset)
    w = values(rng, (length,))
    last = values(rng, (rows, length)) if backward else values(rng, (length,))
    return x, w, last


def _hidden(backward: bool):
    def hidden(rng: np.random.Generator) -> list[Case]:
        return [Case(_inputs(rng, rows, n, offset, backward), (rows, n), row_grid(rows), (TG, 1, 1),
                     f"hidden test: {rows} rows of {n}, {what}") for rows, n, offset, what in _SHAPES]
    return hidden


_X = (np.arange(80) % 6).astype(np.float32).reshape(2, 40)
_W = (1 + np.arange(40) % 3).astype(np.float32)
FORWARD_VISIBLE = Case((_X, _W, (np.arange(40) % 4 / 4).astype(np.float32)), (2, 40), row_grid(2), (TG, 1, 1))
BACKWARD_VISIBLE = Case((_X, _W, (np.arange(80) % 5 - 2).astype(np.float32).reshape(2, 40)), (2, 40), row_grid(2),
                        (TG, 1, 1))

SETUP_FORWARD = """\
x = (mx.arange(80) % 6).astype(mx.float32).reshape(2, 40)
w = (1 + mx.arange(40) % 3).astype(mx.float32)
b = (mx.arange(40) % 4 / 4).astype(mx.float32)
output_shape = (2, 40)"""

SETUP_BACKWARD = """\
x = (mx.arange(80) % 6).astype(mx.float32).reshape(2, 40)
w = (1 + mx.arange(40) % 3).astype(mx.float32)
g = (mx.arange(80) % 5 - 2).astype(mx.float32).reshape(2, 40)  # the gradient of the output
output_shape = (2, 40)"""

_LAYOUT = """\
One threadgroup of `TG = 64` threads (two SIMD-groups) per row: the grid is `(64, R, 1)`,
`threadgroup_position_in_grid.y` is the row `r`, and thread `j` owns the row's elements
`j, j + 64, ...` (`x_shape[1]` is the row length `N`; rows in the tests are 5 to 256 long)."""

def row_work(case: Case) -> tuple[int, int]:
    """A threadgroup of TG threads per row."""
    return (TG, case.output_shape[0])


FORWARD = Puzzle(
    id="layer_norm",
    number="B.2",
    title="Layer Norm",
    kernel_name="layer_norm",
    input_names=("x", "w", "b"),
    header=HEADER,
    description=f"""\
**Layer normalisation** rescales every row of `x` (shape `(R, N)`) to mean 0 and variance 1, then
applies a per-column scale `w` and shift `b` (both of length `N`):

```
out[r, i] = (x[r, i] - mean_r) / sqrt(var_r + EPS) * w[i] + b[i]
```

where `mean_r` and `var_r` are the mean and the (biased) variance of row `r`, and `EPS = 1e-5`.

{_LAYOUT}

Every thread needs the row's mean before it can compute its outputs, so a reduction here must end
with the total in **every** thread: after `simd_sum` and the barrier, let each thread add up all
`SIMD_GROUPS` slots itself (that is two threadgroup reads, and no second barrier). Do it twice:
once for the mean, then once more for the sum of `(x - mean)^2`. Use a separate array of slots
for each reduction, or a barrier before reusing one: a slot overwritten while another thread is
still reading it is a race. Two passes are not a luxury: with values near 10000, the shortcut
`mean(x^2) - mean^2` loses almost every digit of the variance in float32 (one hidden test checks).
`rsqrt(v)` is `1 / sqrt(v)`. This is the plan of MLX's own layer-norm kernels.

**Hidden tests** pose values in `[-4, 4)` on a grid of quarters and one test of rows near 10000
(the same values plus 10000): float32 keeps them exactly, but their squares are near 1e8, where
float32's spacing is 8, so `mean(x^2) - mean^2` has lost the variance (about 5) entirely, while
`mean((x - mean)^2)` keeps it. The error allowed grows with how far the rows are from 0 (the
problem's condition), so a two-pass kernel passes every seed.

Budget: at most {5 * PER_THREAD} global reads per thread (each of a thread's at most {PER_THREAD}
elements read 5 times: `x` in three passes, `w` and `b` once) and {PER_THREAD} writes.""",
    spec=layer_norm_spec,
    spec_source=SPEC_SOURCE,
    visible=FORWARD_VISIBLE,
    hidden=_hidden(backward=False),
    template="""\
threadgroup float sums[SIMD_GROUPS];
threadgroup float squares[SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
// FILL ME IN (roughly 25 lines)
""",
    budget=Budget(global_reads=5 * PER_THREAD, global_writes=PER_THREAD),
    work=row_work,
    atol=1e-5,
    rtol=1e-5,
    error_model=ErrorModel.CONDITIONED,
)

BACKWARD = Puzzle(
    id="layer_norm_backward",
    number="B.3",
    title="Layer Norm Backward",
    kernel_name="layer_norm_backward",
    input_names=("x", "w", "g"),
    output_names=("gx",),
    header=HEADER,
    description=f"""\
The gradient of layer norm with respect to `x`, given `g`, the gradient of the loss with respect
to the output (shape `(R, N)`). With `xhat = (x - mean) * rstd`, `rstd = 1 / sqrt(var + EPS)`
and `wg = w * g` (element by element), every row obeys

```
gx = rstd * (wg - mean(wg) - xhat * mean(wg * xhat))
```

The two means are over the row. (The derivation: `out` depends on `x` directly and through the
row's mean and variance; the last two terms are those paths.) The spec obtains the same numbers
from MLX's autodiff of the forward spec.

{_LAYOUT}

Four reductions per row: the mean, the variance (as in B.2), then `sum(wg)` and `sum(wg * xhat)`,
which can share one barrier: reduce both with `simd_sum`, and give them separate slots. Then every
thread writes its elements of `gx`.

**Hidden tests** pose the forward's rows (values in `[-4, 4)`, and rows near 10000 where only a
two-pass variance keeps its digits) with cotangents `g` in `[-4, 4)`.

Budget: at most {8 * PER_THREAD} global reads per thread ({PER_THREAD} elements: `x` read four
times, `w` and `g` twice) and {PER_THREAD} writes.""",
    spec=layer_norm_backward_spec,
    spec_source=BACKWARD_SPEC_SOURCE,
    visible=BACKWARD_VISIBLE,
    hidden=_hidden(backward=True),
    template="""\
threadgroup float sums[SIMD_GROUPS];
threadgroup float squares[SIMD_GROUPS];
threadgroup float grad_sums[2][SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
// FILL ME IN (roughly 35 lines)
""",
    budget=Budget(global_reads=8 * PER_THREAD, global_writes=PER_THREAD),
    work=row_work,
    atol=1e-5,
    rtol=1e-5,
    error_model=ErrorModel.CONDITIONED,
)


FORWARD_ENTRY = Entry(FORWARD, setup=SETUP_FORWARD)
BACKWARD_ENTRY = Entry(BACKWARD, setup=SETUP_BACKWARD)
