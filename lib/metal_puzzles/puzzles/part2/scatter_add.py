"""Puzzle II.3: Scatter-Add — out[idx[t], :] += x[t, :], with atomics."""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.contract import input_extent
from ...checking.inputs import indices, padded, scalar, values
from ..catalogue.entry import Entry

TG = (4, 4, 1)


def scatter_add_spec(x, idx, n):
    out = mx.zeros((int(n), x.shape[1]), dtype=x.dtype)
    return out.at[idx].add(x)


def _grid(count: int, channels: int) -> tuple[int, int, int]:
    # As in the visible test: at most one threadgroup of channels, the grid padded on both sides.
    return (padded(channels, TG[0]), padded(count, TG[1]), 1)


def _case(rng: np.random.Generator, count: int, channels: int, rows: int, what: str) -> Case:
    x = values(rng, (count, channels))
    idx = indices(rng, count, rows)
    label = f"hidden test: {count} rows of {channels} scattered into {rows}, {what}"
    return Case((x, idx, scalar(rows)), (rows, channels), _grid(count, channels), TG, label)


def hidden(rng: np.random.Generator) -> list[Case]:
    cases = [_case(rng, 1, 1, 1, "a single row"),
             _case(rng, 13, 4, 4, "many repeats"),
             _case(rng, 30, 3, 40, "most rows receive nothing"),
             _case(rng, 24, 2, 6, "many repeats")]
    # Every thread hits the same row: the worst case for contention.
    x = values(rng, (9, 2))
    cases.append(Case((x, np.zeros(9, dtype=np.int32), scalar(3)), (3, 2), _grid(9, 2), TG,
                      "hidden test: 9 rows all added into row 0"))
    return cases


VISIBLE = Case(
    (np.arange(18, dtype=np.float32).reshape(6, 3), np.array([2, 0, 2, 1, 0, 2], dtype=np.int32), scalar(4)),
    (4, 3), (4, 8, 1), TG)

SETUP = """\
x = mx.arange(18, dtype=mx.float32).reshape(6, 3)
idx = mx.array([2, 0, 2, 1, 0, 2], dtype=mx.int32)
n = mx.array(4, dtype=mx.int32)  # rows of the output
output_shape = (4, 3)"""

PUZZLE = Puzzle(
    id="scatter_add",
    number="II.3",
    title="Scatter-Add",
    kernel_name="scatter_add",
    input_names=("x", "idx", "n"),
    description="""\
The opposite of a gather: row `t` of `x` is **added** into row `idx[t]` of `out`. `x` has shape
`(T, C)`, `idx` has `T` entries in `[0, n)`, and `out` has shape `(n, C)`. Rows of `out` that no
`t` points at stay zero: this puzzle launches with `init_value=0`, so `out` starts as zeros. (`n`
arrives as a scalar input, `const constant int& n`; the kernel itself may not need it.)

Thread `(c, t)` adds one value. But `idx` has repeats: in the visible test, rows 0, 2 and 5 of `x`
all go into row 2 of `out`, so three threads add into each element of that row. A plain `out[r] += v` is a read, an add and a write: two threads can both read
the old value, and one of the two additions is lost. On a GPU that happens silently and only
sometimes; here the sanitizer reports the race.

The fix is an **atomic** read-modify-write: the kernel is created with `atomic_outputs=True`, so
`out` is a `device atomic<float>*`, and each thread calls
`atomic_fetch_add_explicit(&out[k], v, memory_order_relaxed)`. Atomics on one address are done
one after another by the memory system, so none is lost; `memory_order_relaxed` says nothing else
needs ordering. (An atomic output cannot be read or written with `[]` at all.)

As in the gather, the grid may be padded: `x_shape[1]` is `C`, `idx_shape[0]` is `T`.

Budget: each thread reads 2 elements and does 1 atomic operation; no plain writes.""",
    spec=scatter_add_spec,
    spec_source=inspect.getsource(scatter_add_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template="""\
uint c = thread_position_in_grid.x;
uint t = thread_position_in_grid.y;
// FILL ME IN (roughly 4 lines)
""",
    budget=Budget(global_reads=2, global_writes=0, atomics=1),
    work=input_extent(0),
    init_value=0.0,
    atomic_outputs=True,
)


ENTRY = Entry(PUZZLE, setup=SETUP)
