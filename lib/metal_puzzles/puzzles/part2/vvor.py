"""Puzzle II.8: VVOR — outer products of indexed vectors, reduced into indexed outputs.

VVOR(a (Na,G,M), a_idx (T,), b (Nb,G,C), b_idx (T,), o_idx (T,), n) -> o (n,G,M,C):
for every pair t, o[o_idx[t], g, m, c] += a[a_idx[t], g, m] * b[b_idx[t], g, c].
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import indices, scalar, values
from ..catalogue.entry import Entry

TG = (4, 4, 2)


def vvor_spec(a, a_idx, b, b_idx, o_idx, n):
    # Pair t: the outer product of a[a_idx[t], g, :] (M values) and b[b_idx[t], g, :] (C values),
    # an M x C matrix per group, added into o[o_idx[t], g].
    products = a[a_idx][:, :, :, None] * b[b_idx][:, :, None, :]
    o = mx.zeros((int(n), a.shape[1], a.shape[2], b.shape[2]), dtype=a.dtype)
    return o.at[o_idx].add(products)


def grid_for(t: int, g: int, m: int, c: int) -> tuple[int, int, int]:
    """Thread (c, m, t * G + g): one thread per element of one pair's outer product."""
    return (c, m, t * g)


# (Na, Nb, n, T, G, M, C, what). As in the visible test: a thread per element and pair, one
# threadgroup across C and across M.
_SHAPES = (
    (1, 1, 1, 1, 1, 1, 1, "a single thread"),
    (3, 4, 5, 11, 2, 3, 4, "repeated indices"),
    (5, 3, 2, 16, 3, 4, 2, "sixteen pairs into two outputs"),
    (2, 6, 9, 7, 1, 4, 3, "some outputs receive nothing"),
)


def hidden(rng: np.random.Generator) -> list[Case]:
    cases = []
    for na, nb, n, t, g, m, c, what in _SHAPES:
        inputs = (values(rng, (na, g, m)), indices(rng, t, na), values(rng, (nb, g, c)), indices(rng, t, nb),
                  indices(rng, t, n), scalar(n))
        grid = grid_for(t, g, m, c)
        cases.append(Case(inputs, (n, g, m, c), grid, TG, f"hidden test: T={t}, G={g}, M={m}, C={c}, {what}"))
    return cases


VISIBLE = Case(
    (np.arange(8, dtype=np.float32).reshape(2, 2, 2), np.array([1, 0, 1], np.int32),
     (np.arange(18) % 4).astype(np.float32).reshape(3, 2, 3), np.array([2, 2, 0], np.int32),
     np.array([0, 1, 0], np.int32), scalar(2)),
    (2, 2, 2, 3), grid_for(3, 2, 2, 3), (3, 2, 4))

SETUP = """\
T, G, M, C = 3, 2, 2, 3
a = mx.arange(2 * G * M, dtype=mx.float32).reshape(2, G, M)  # Na = 2
b = mx.arange(3 * G * C, dtype=mx.float32).reshape(3, G, C) % 4  # Nb = 3
a_idx = mx.array([1, 0, 1], dtype=mx.int32)
b_idx = mx.array([2, 2, 0], dtype=mx.int32)
o_idx = mx.array([0, 1, 0], dtype=mx.int32)
n = mx.array(2, dtype=mx.int32)
output_shape = (2, G, M, C)"""

PUZZLE = Puzzle(
    id="vvor",
    number="II.8",
    title="VVOR",
    kernel_name="vvor",
    input_names=("a", "a_idx", "b", "b_idx", "o_idx", "n"),
    output_names=("o",),
    description="""\
**VVOR** (vector-vector outer product, reduce) is MVMR's partner. For every pair `t` and group
`g`, take the vector `a[a_idx[t], g, :]` (length `M`) and the vector `b[b_idx[t], g, :]` (length
`C`), form their outer product, an `M x C` matrix, and add it into `o[o_idx[t], g]`:

```
o[o_idx[t], g, m, c] += a[a_idx[t], g, m] * b[b_idx[t], g, c]
```

`o` has shape `(n, G, M, C)`, starts at zero, and receives many pairs per output point: atomics
again (`atomic_outputs=True`, `init_value=0`). It is what training needs: the gradient of MVMR
with respect to its weights is a VVOR (II.10 wires this up).

One thread per element of one pair's outer product: `thread_position_in_grid` is
`(c, m, t * G + g)`, with exactly one thread for each.
Sizes: `a_shape` is `(Na, G, M)`, `b_shape` is `(Nb, G, C)`.

Budget: 5 global reads per thread (three indices, one value of `a`, one of `b`), 1 atomic, no
plain writes.""",
    spec=vvor_spec,
    spec_source=inspect.getsource(vvor_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template="""\
uint c = thread_position_in_grid.x;
uint m = thread_position_in_grid.y;
uint z = thread_position_in_grid.z;
// FILL ME IN (roughly 9 lines)
""",
    budget=Budget(global_reads=5, global_writes=0, atomics=1),
    # A thread per (c, m, t * G + g).
    work=lambda case: (case.output_shape[3], case.output_shape[2], len(case.inputs[1]) * case.output_shape[1]),
    init_value=0.0,
    atomic_outputs=True,
)


ENTRY = Entry(PUZZLE, setup=SETUP)
