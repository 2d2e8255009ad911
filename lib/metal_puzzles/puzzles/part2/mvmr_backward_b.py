"""Puzzle II.9: MVMR Backward (db) — the gradient of MVMR with respect to its input features.

db = MVMR(a transposed to (Na,G,M,C), a_idx, do, o_idx, b_idx, Nb): in a kernel, for every pair t,
db[b_idx[t], g, c] += sum_m do[o_idx[t], g, m] * a[a_idx[t], g, c, m], reading a where it lies.
"""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import indices, scalar, values
from ..catalogue.entry import Entry
from .mvmr import mvmr_spec

TG = (4, 2, 2)


def mvmr_backward_b_spec(a, a_idx, dout, o_idx, b_idx, nb):
    # An MVMR with each matrix of a transposed (Na, G, M, C), reading dout where the forward read b,
    # and the roles of o_idx and b_idx swapped.
    return mvmr_spec(a.transpose(0, 1, 3, 2), a_idx, dout, o_idx, b_idx, nb)


def grid_for(t: int, g: int, c: int) -> tuple[int, int, int]:
    """Thread (c, g, t) computes one entry of one pair's contribution to db."""
    return (c, g, t)


# (Na, Nb, n, T, G, C, M, what). As in the visible test: a thread per (c, g, t), one threadgroup
# across C and across G, whole threadgroups along T.
_SHAPES = (
    (1, 1, 1, 1, 1, 1, 1, "a single thread"),
    (3, 4, 6, 18, 2, 3, 5, "repeated indices"),
    (4, 9, 3, 24, 2, 4, 4, "some rows of db receive nothing"),
    (2, 2, 2, 10, 1, 4, 16, "long rows of a"),
)


def hidden(rng: np.random.Generator) -> list[Case]:
    cases = []
    for na, nb, n, t, g, c, m, what in _SHAPES:
        inputs = (values(rng, (na, g, c, m)), indices(rng, t, na), values(rng, (n, g, m)), indices(rng, t, n),
                  indices(rng, t, nb), scalar(nb))
        grid = grid_for(t, g, c)
        cases.append(Case(inputs, (nb, g, c), grid, TG, f"hidden test: T={t}, G={g}, C={c}, M={m}, {what}"))
    return cases


VISIBLE = Case(
    ((np.arange(24) % 4).astype(np.float32).reshape(2, 2, 2, 3), np.array([1, 0, 1, 1], np.int32),
     (np.arange(24) % 5).astype(np.float32).reshape(4, 2, 3), np.array([0, 2, 0, 2], np.int32),
     np.array([2, 0, 2, 1], np.int32), scalar(3)),
    (3, 2, 2), grid_for(4, 2, 2), (2, 2, 2))

SETUP = """\
T, G, C, M = 4, 2, 2, 3
a = mx.arange(2 * G * C * M, dtype=mx.float32).reshape(2, G, C, M) % 4
a_idx = mx.array([1, 0, 1, 1], dtype=mx.int32)
dout = mx.arange(4 * G * M, dtype=mx.float32).reshape(4, G, M) % 5  # the gradient of o (n = 4)
o_idx = mx.array([0, 2, 0, 2], dtype=mx.int32)
b_idx = mx.array([2, 0, 2, 1], dtype=mx.int32)
nb = mx.array(3, dtype=mx.int32)  # rows of b, hence of db
output_shape = (3, G, C)"""

PUZZLE = Puzzle(
    id="mvmr_backward_b",
    number="II.9",
    title="MVMR Backward (db)",
    kernel_name="mvmr_backward_b",
    input_names=("a", "a_idx", "dout", "o_idx", "b_idx", "nb"),
    output_names=("db",),
    description="""\
To train through MVMR we need the gradient of the loss with respect to `b`, given `dout`, its
gradient with respect to `o` (shape `(n, G, M)`). Pair `t` added `b[b_idx[t], g, c] *
a[a_idx[t], g, c, m]` into `o[o_idx[t], g, m]`; so `b[b_idx[t], g, c]` collects
`a[a_idx[t], g, c, m] * dout[o_idx[t], g, m]`, summed over `m`, from every pair that used it:

```
db[b_idx[t], g, c] += sum over m of  dout[o_idx[t], g, m] * a[a_idx[t], g, c, m]
```

Look closely: this is an MVMR again, with each `C x M` matrix of `a` **transposed** to `M x C`,
`dout` in the place of `b`, and the roles of `o_idx` and `b_idx` **swapped** (the spec says
exactly that). You could transpose `a` in memory and reuse II.7's kernel; here, read `a` where
it lies instead: for a fixed `(t, g, c)` the `M` values `a[a_idx[t], g, c, :]` sit next to each
other.

One thread per `(c, g, t)` (`thread_position_in_grid`), atomics into `db` (shape `(nb, G, C)`,
starting at zero), exactly one thread for each. Sizes: `a_shape` is `(Na, G, C, M)`, `dout_shape[0]`
is `n`, `a_idx_shape[0]` is `T`.

Budget: 1 atomic operation and no plain writes per thread.""",
    spec=mvmr_backward_b_spec,
    spec_source=inspect.getsource(mvmr_spec).strip() + "\n\n\n" + inspect.getsource(mvmr_backward_b_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template="""\
uint c = thread_position_in_grid.x;
uint g = thread_position_in_grid.y;
uint t = thread_position_in_grid.z;
// FILL ME IN (roughly 12 lines)
""",
    budget=Budget(global_writes=0, atomics=1),
    # A thread per (c, g, t).
    work=lambda case: (case.output_shape[2], case.output_shape[1], len(case.inputs[1])),
    init_value=0.0,
    atomic_outputs=True,
)


ENTRY = Entry(PUZZLE, setup=SETUP)
