"""Puzzle 11: 1D Convolution — a sliding window over threadgroup boundaries.

Two entries share one kernel: the simple test fits in a single threadgroup, the full one
spans several, so windows near the end of a group reach into the next group's elements.
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import randfloat
from ..catalogue.entry import Entry

HEADER = """\
constant uint THREADGROUP_MAX_CONV_SIZE = 12;
constant uint MAX_CONV = 4;
"""

# The header bounds every test: threadgroups of 8 threads and kernels of at most 4 taps, so
# one group's elements plus the 3 that follow it fit in THREADGROUP_MAX_CONV_SIZE.
GROUP = 8


def conv_spec(a, b):
    # out[i] = sum over j of a[i + j] * b[j], where a counts as zero past its end.
    n, k = a.shape[0], b.shape[0]
    padded = mx.concatenate([a, mx.zeros((k,), dtype=a.dtype)])
    out = mx.zeros((n,), dtype=mx.float32)
    for j in range(k):
        out = out + padded[j : j + n] * b[j]
    return out


def _case(rng: np.random.Generator, n: int, k: int, grid: int, what: str) -> Case:
    a, b = randfloat(rng, (n,)), randfloat(rng, (k,))
    label = f"hidden test: {what}, {n} values and {k} taps, {grid} threads in groups of {GROUP}"
    return Case((a, b), (n,), (grid, 1, 1), (GROUP, 1, 1), label)


def hidden_simple(rng: np.random.Generator) -> list[Case]:
    # One threadgroup; the kernel may be longer than the array.
    return [_case(rng, 8, 4, 8, "one group"), _case(rng, 5, 2, 8, "one group"),
            _case(rng, 3, 4, 8, "one group, more taps than values")]


def hidden_full(rng: np.random.Generator) -> list[Case]:
    # Whole groups with a few spare threads, as in the visible test (the original notebook's
    # launch); the last two tests end in a partial group, which the visible test does not pose:
    # their failures are notes that teach.
    return [_case(rng, 20, 3, 24, "three groups"), _case(rng, 30, 1, 32, "one tap"),
            _case(rng, 13, 4, 13, "partial last group"), _case(rng, 23, 3, 23, "partial last group")]


SETUP_SIMPLE = """\
SIZE = 6
CONV = 3
a = mx.arange(SIZE, dtype=mx.float32)
b = mx.arange(CONV, dtype=mx.float32)
output_shape = (SIZE,)"""

SETUP_FULL = """\
a = mx.arange(15, dtype=mx.float32)
b = mx.arange(4, dtype=mx.float32)
output_shape = (15,)"""

TEMPLATE = """\
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
// FILL ME IN (roughly 24 lines)
"""

_DESCRIPTION = """\
Compute the 1D convolution of `a` with the short kernel `b` and store it in `out`:
`out[i] = a[i] * b[0] + a[i+1] * b[1] + ... + a[i+k-1] * b[k-1]` with `k` the length of `b`,
where elements past the end of `a` count as zero. There is one thread per output position (or a
few more), in threadgroups of 8.

Every element of `a` is used by up to `k` threads and every element of `b` by all of them, so
stage both in threadgroup memory (declare the shared arrays yourself, sized by the header's
constants).

{focus}

Budget: each thread reads at most 2 elements of global memory and writes 1; shared memory
accesses are free. A thread that copies its own element of `a` has one read left, so the extra
loads (the elements of `b`, and the elements of `a` just past the group) must be spread over
different threads."""

_FOCUS_SIMPLE = """\
In this first test the whole array fits in one threadgroup."""

_FOCUS_FULL = """\
Now there are several threadgroups. The windows of a group's last threads reach up to `k - 1`
elements into the *next* group's part of `a`, which no thread of this group copies by itself:
some threads must load that tail too (that is why the shared array has room for
`THREADGROUP_MAX_CONV_SIZE = 8 + MAX_CONV` elements). The grid has 16 threads for 15 elements;
threads past the end still help load. On a grid that is not a multiple of 8 the last group is
partial: `dispatch_threads_per_threadgroup` is the full group size and `threads_per_threadgroup`
the size of this group (`check()` notes it when your kernel would break there), and a slot of the
shared array nobody wrote must not be read."""

BUDGET = Budget(global_reads=2, global_writes=1)

SIMPLE = Puzzle(
    id="conv_simple",
    number="11a",
    title="1D Conv (Simple)",
    kernel_name="1D_conv",
    input_names=("a", "b"),
    description=_DESCRIPTION.format(focus=_FOCUS_SIMPLE),
    spec=conv_spec,
    spec_source=inspect.getsource(conv_spec).strip(),
    visible=Case((np.arange(6, dtype=np.float32), np.arange(3, dtype=np.float32)), (6,), (8, 1, 1), (8, 1, 1)),
    hidden=hidden_simple,
    header=HEADER,
    template=TEMPLATE,
    budget=BUDGET,
)

FULL = Puzzle(
    id="conv_full",
    number="11b",
    title="1D Conv (Full)",
    kernel_name="1D_conv",
    input_names=("a", "b"),
    description=_DESCRIPTION.format(focus=_FOCUS_FULL),
    spec=conv_spec,
    spec_source=SIMPLE.spec_source,
    visible=Case((np.arange(15, dtype=np.float32), np.arange(4, dtype=np.float32)), (15,), (16, 1, 1),
                 (8, 1, 1)),
    hidden=hidden_full,
    header=HEADER,
    template=TEMPLATE,
    budget=BUDGET,
)


SIMPLE_ENTRY = Entry(SIMPLE, setup=SETUP_SIMPLE, function="conv_test")
FULL_ENTRY = Entry(FULL, setup=SETUP_FULL, function="conv_test", shares_solution_of=SIMPLE.id)
