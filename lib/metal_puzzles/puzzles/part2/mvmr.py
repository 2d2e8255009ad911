"""Puzzle II.7: MVMR, the forward kernel of a sparse convolution.

MVMR(a (Na,G,C,M), a_idx (T,), b (Nb,G,C), b_idx (T,), o_idx (T,), n) -> o (n,G,M):
for every pair t, o[o_idx[t], g, m] += sum_c b[b_idx[t], g, c] * a[a_idx[t], g, c, m].

II.7a: one thread per (t, g, m), atomics. II.7b: one threadgroup per (t, g) whose M threads
share b's row through threadgroup memory, so the row is read from global memory once per group
instead of once per thread.
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import ceil_div, indices, scalar, values
from ..catalogue.entry import Entry

MAX_C = 32  # threadgroup memory for one row of b (II.7b)
SIMPLE_TG = (4, 2, 2)

FAST_HEADER = """\
constant uint MAX_C = 32;
"""


def mvmr_spec(a, a_idx, b, b_idx, o_idx, n):
    # Pair t: the row b[b_idx[t], g, :] times the matrix a[a_idx[t], g, :, :], for every group g,
    # added into row o_idx[t] of the output. Repeated o_idx entries add up.
    products = mx.einsum("tgc,tgcm->tgm", b[b_idx], a[a_idx])
    o = mx.zeros((int(n), a.shape[1], a.shape[3]), dtype=a.dtype)
    return o.at[o_idx].add(products)


def mvmr_inputs(rng: np.random.Generator, na: int, nb: int, n: int, t: int, g: int, c: int, m: int,
                same_output: bool = False) -> tuple[np.ndarray, ...]:
    a = values(rng, (na, g, c, m))
    b = values(rng, (nb, g, c))
    o_idx = np.zeros(t, np.int32) if same_output else indices(rng, t, n)
    return a, indices(rng, t, na), b, indices(rng, t, nb), o_idx, scalar(n)


def fast_grid(t: int, g: int, m: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """II.7b's launch: threadgroup (0, g, t) of M threads computes o's row block for (t, g)."""
    return (m, g, t), (m, 1, 1)


def _shape_text(t: int, g: int, c: int, m: int) -> str:
    return f"T={t}, G={g}, C={c}, M={m}"


# (Na, Nb, n, T, G, C, M, what). As in the visible test: a thread per (m, g, t), one threadgroup
# across M and across G, whole threadgroups along T.
_SIMPLE_SHAPES = (
    (1, 1, 1, 1, 1, 1, 1, "a single thread"),
    (3, 5, 4, 18, 2, 5, 3, "repeated indices"),
    (4, 6, 10, 30, 2, 4, 4, "some output rows receive nothing"),
    (2, 2, 2, 12, 1, 16, 4, "long rows"),
)


def hidden_simple(rng: np.random.Generator) -> list[Case]:
    cases = []
    for na, nb, n, t, g, c, m, what in _SIMPLE_SHAPES:
        inputs = mvmr_inputs(rng, na, nb, n, t, g, c, m)
        cases.append(Case(inputs, (n, g, m), (m, g, t), SIMPLE_TG, f"hidden test: {_shape_text(t, g, c, m)}, {what}"))
    inputs = mvmr_inputs(rng, 3, 3, 2, 10, 2, 3, 2, same_output=True)
    cases.append(Case(inputs, (2, 2, 2), (2, 2, 10), SIMPLE_TG,
                      "hidden test: T=10, G=2, C=3, M=2, every pair adds into output row 0"))
    return cases


# (Na, Nb, n, T, G, C, M, what): C both below and above M, and up to MAX_C.
_FAST_SHAPES = (
    (1, 1, 1, 1, 1, 1, 1, "a single thread"),
    (4, 6, 5, 13, 2, 16, 8, "two b values per thread"),
    (3, 3, 7, 10, 1, 5, 12, "more threads than channels"),
    (2, 5, 4, 20, 2, MAX_C, 4, "C = 32: eight b values per thread"),
    (5, 4, 3, 9, 3, 7, 7, "repeated indices"),
)


def _fast_reads(c: int, m: int) -> int:
    # three indices, a column of a (C values), this thread's share of b's row
    return 3 + c + ceil_div(c, m)


def hidden_fast(rng: np.random.Generator) -> list[Case]:
    cases = []
    for na, nb, n, t, g, c, m, what in _FAST_SHAPES:
        grid, tg = fast_grid(t, g, m)
        cases.append(Case(mvmr_inputs(rng, na, nb, n, t, g, c, m), (n, g, m), grid, tg,
                          f"hidden test: {_shape_text(t, g, c, m)}, {what}"))
    return cases


FAST_READS = max(_fast_reads(s[5], s[6]) for s in (*_FAST_SHAPES, (0, 0, 0, 0, 0, 6, 4, "")))


def _visible(g: int, c: int, m: int, na: int, nb: int, a_idx, b_idx, o_idx, n: int):
    a = (np.arange(na * g * c * m) % 4).astype(np.float32).reshape(na, g, c, m)
    b = (np.arange(nb * g * c) % 3 + 1).astype(np.float32).reshape(nb, g, c)
    ids = [np.array(v, np.int32) for v in (a_idx, b_idx, o_idx)]
    return a, ids[0], b, ids[1], ids[2], scalar(n)


SIMPLE_VISIBLE = Case(_visible(2, 2, 3, 2, 3, [1, 0, 1, 1], [2, 0, 2, 1], [0, 2, 0, 2], 4),
                      (4, 2, 3), (3, 2, 4), (3, 2, 2))

FAST_VISIBLE = Case(_visible(2, 6, 4, 2, 2, [1, 0, 1], [0, 1, 1], [1, 1, 0], 3),
                    (3, 2, 4), *fast_grid(3, 2, 4))

SETUP_SIMPLE = """\
T, G, C, M = 4, 2, 2, 3
a = mx.arange(2 * G * C * M, dtype=mx.float32).reshape(2, G, C, M) % 4  # Na = 2 matrices per group
b = mx.arange(3 * G * C, dtype=mx.float32).reshape(3, G, C) % 3 + 1     # Nb = 3 rows per group
a_idx = mx.array([1, 0, 1, 1], dtype=mx.int32)
b_idx = mx.array([2, 0, 2, 1], dtype=mx.int32)
o_idx = mx.array([0, 2, 0, 2], dtype=mx.int32)
n = mx.array(4, dtype=mx.int32)
output_shape = (4, G, M)"""

SETUP_FAST = """\
T, G, C, M = 3, 2, 6, 4
a = mx.arange(2 * G * C * M, dtype=mx.float32).reshape(2, G, C, M) % 4
b = mx.arange(2 * G * C, dtype=mx.float32).reshape(2, G, C) % 3 + 1
a_idx = mx.array([1, 0, 1], dtype=mx.int32)
b_idx = mx.array([0, 1, 1], dtype=mx.int32)
o_idx = mx.array([1, 1, 0], dtype=mx.int32)
n = mx.array(3, dtype=mx.int32)
output_shape = (3, G, M)"""

_INTRO = """\
This is the heart of a sparse convolution. The input features live in `b`: `Nb` points, each
with `G` groups of `C` channels. The weights live in `a`: `Na` kernel offsets, each a `C x M`
matrix per group. A precomputed list of `T` **pairs** says what to multiply: pair `t` takes the
features of point `b_idx[t]`, multiplies them by the weights of offset `a_idx[t]`, and adds the
result into output point `o_idx[t]`:

```
o[o_idx[t], g, m] += sum over c of  b[b_idx[t], g, c] * a[a_idx[t], g, c, m]
```

for every group `g` and output channel `m`. `o` has shape `(n, G, M)` and starts at zero
(`init_value=0`); one output point usually receives many pairs, so `o_idx` has repeats and the
additions need atomics (`atomic_outputs=True`, as in II.3). Sizes: `a_shape` is
`(Na, G, C, M)`, `b_shape` is `(Nb, G, C)`, `a_idx_shape[0]` is `T`. Element `(p, g, c, m)` of
`a` is `a[((p * G + g) * C + c) * M + m]`.
"""

def pair_work(case: Case) -> tuple[int, int, int]:
    """A thread per (m, g, t): the output's M and G, and the T pairs."""
    _, g, m = case.output_shape
    return (m, g, len(case.inputs[1]))


SIMPLE = Puzzle(
    id="mvmr_simple",
    number="II.7a",
    title="MVMR (Simple)",
    kernel_name="mvmr_simple",
    input_names=("a", "a_idx", "b", "b_idx", "o_idx", "n"),
    output_names=("o",),
    description=_INTRO + """
**MVMR** (matrix-vector multiply, reduce) first in its plainest form: one thread per
`(t, g, m)`. `thread_position_in_grid` is `(m, g, t)`. The thread computes one dot product over
`c` and adds it into `o` with one atomic. The grid has exactly one thread per `(m, g, t)`.

Budget: 1 atomic operation and no plain writes per thread.""",
    spec=mvmr_spec,
    spec_source=inspect.getsource(mvmr_spec).strip(),
    visible=SIMPLE_VISIBLE,
    hidden=hidden_simple,
    template="""\
uint m = thread_position_in_grid.x;
uint g = thread_position_in_grid.y;
uint t = thread_position_in_grid.z;
// FILL ME IN (roughly 12 lines)
""",
    budget=Budget(global_writes=0, atomics=1),
    work=pair_work,
    init_value=0.0,
    atomic_outputs=True,
)

FAST = Puzzle(
    id="mvmr_fast",
    number="II.7b",
    title="MVMR (Fast)",
    kernel_name="mvmr",
    input_names=SIMPLE.input_names,
    output_names=("o",),
    header=FAST_HEADER,
    description=_INTRO + f"""
In II.7a, the `M` threads working on the same `(t, g)` all read the same row
`b[b_idx[t], g, :]`: every one of its `C` values is fetched `M` times. Now one threadgroup of `M`
threads owns each `(t, g)`: the grid is `(M, G, T)` with threadgroups of `(M, 1, 1)`, so
`threadgroup_position_in_grid` is `(0, g, t)` and the thread's `m` is its position in the group.

The group first copies the row into threadgroup memory **together** (thread `m` copies entries
`m, m + M, m + 2M, ...`, so it works when `C` is smaller or larger than `M`), waits at a barrier,
and then every thread reads the row from threadgroup memory while it walks down its own column
`a[a_idx[t], g, :, m]`. Neighbouring threads read neighbouring addresses of `a`, which a GPU
fetches together. `C` is at most `MAX_C = {MAX_C}` (header).

Budget: at most `3 + C + ceil(C / M)` global reads per thread (the three indices, `C` values of
`a`, its share of `b`'s row), which is {FAST_READS} in the largest test (`C = {MAX_C}`, `M = 4`),
where II.7a's way reads `3 + 2C = {3 + 2 * MAX_C}`; 1 atomic; no plain writes.""",
    spec=mvmr_spec,
    spec_source=SIMPLE.spec_source,
    visible=FAST_VISIBLE,
    hidden=hidden_fast,
    template="""\
threadgroup float b_row[MAX_C];
uint m = thread_position_in_threadgroup.x;
uint g = threadgroup_position_in_grid.y;
uint t = threadgroup_position_in_grid.z;
// FILL ME IN (roughly 14 lines)
""",
    budget=Budget(global_reads=FAST_READS, global_writes=0, atomics=1),
    work=pair_work,
    init_value=0.0,
    atomic_outputs=True,
)


SIMPLE_ENTRY = Entry(SIMPLE, setup=SETUP_SIMPLE)
FAST_ENTRY = Entry(FAST, setup=SETUP_FAST)
