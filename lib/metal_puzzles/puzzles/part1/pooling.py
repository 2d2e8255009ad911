"""Puzzle 9: Pooling — each output sums a window of three inputs."""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import arange, randint
from ...checking.wording import plural
from ..catalogue.entry import Entry

HEADER = """\
constant uint THREADGROUP_MEM_SIZE = 8;
"""


def pooling_spec(a):
    # Two zeros in front make every window three long: out[i] = a[i-2] + a[i-1] + a[i].
    padded = mx.concatenate([mx.zeros((2,), dtype=a.dtype), a])
    return padded[2:] + padded[1:-1] + padded[:-2]


def hidden(rng: np.random.Generator) -> list[Case]:
    # The whole array fits in one threadgroup of at most 8 threads (the shared array's size), with
    # a thread per element as in the visible test; the last two tests have spare threads, which the
    # visible test does not pose, so their failures are notes.
    cases = []
    for n, grid in ((8, 8), (7, 7), (3, 3), (5, 8), (2, 4)):
        a = randint(rng, (n,))
        label = f"hidden test: {plural(n, 'random value')}, one threadgroup of {grid}"
        cases.append(Case((a,), (n,), (grid, 1, 1), (grid, 1, 1), label))
    return cases


SETUP = """\
SIZE = 8
a = mx.arange(SIZE)
output_shape = (SIZE,)"""

PUZZLE = Puzzle(
    id="pooling",
    number="9",
    title="Pooling",
    kernel_name="pooling",
    input_names=("a",),
    description="""\
Store in `out[i]` the sum of the last three elements of `a` up to and including position `i`:
`a[i-2] + a[i-1] + a[i]`, where positions before the start count as nothing (so `out[0] = a[0]`
and `out[1] = a[0] + a[1]`). The grid is a single threadgroup with one thread per position, or a
few more.

Every element of `a` is needed by three threads. Reading it from device memory three times is
what the budget forbids: have each thread copy one element into the shared array, wait at the
barrier, and then add up its window from the shared copy.

Watch for the first two threads, whose windows reach before the start of the array. And should a
grid ever have more threads than `a` has elements (the visible test does not; a note after the
verdict says how your kernel would fare), those threads must still reach the barrier.

Budget: each thread reads 1 element of `a` and writes 1 element of `out` (global memory); shared
memory reads are free here.""",
    spec=pooling_spec,
    spec_source=inspect.getsource(pooling_spec).strip(),
    visible=Case((arange(8),), (8,), (8, 1, 1), (8, 1, 1)),
    hidden=hidden,
    header=HEADER,
    template="""\
threadgroup float shared[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
// FILL ME IN (roughly 11 lines)
""",
    budget=Budget(global_reads=1, global_writes=1),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
