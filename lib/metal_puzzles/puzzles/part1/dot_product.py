"""Puzzle 10: Dot Product — many threads, one number."""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.contract import input_extent
from ...checking.inputs import randfloat
from ...checking.wording import plural
from ..catalogue.entry import Entry

HEADER = """\
constant uint THREADGROUP_MEM_SIZE = 8;
"""


def dot_product_spec(a, b):
    return a @ b


def hidden(rng: np.random.Generator) -> list[Case]:
    # As in the visible test, one full threadgroup of 8 threads, a thread per pair: other values
    # only (a smaller grid would shrink the threadgroup below the shared array's 8 slots). The last
    # two tests have spare threads, which the visible test does not pose, so their failures are notes.
    cases = []
    for n, grid in ((8, 8), (8, 8), (5, 8), (3, 4)):
        a, b = randfloat(rng, (n,)), randfloat(rng, (n,))
        label = f"hidden test: {plural(n, 'random pair')}, one threadgroup of {grid}"
        cases.append(Case((a, b), (1,), (grid, 1, 1), (grid, 1, 1), label))
    return cases


SETUP = """\
SIZE = 8
a = mx.arange(SIZE, dtype=mx.float32)
b = mx.arange(SIZE, dtype=mx.float32)
output_shape = (1,)"""

PUZZLE = Puzzle(
    id="dot_product",
    number="10",
    title="Dot Product",
    kernel_name="dot_product",
    input_names=("a", "b"),
    description="""\
Compute the dot product of `a` and `b`, the sum of `a[i] * b[i]` over all positions, and store
it in `out[0]`. The grid is one threadgroup with a thread per position (or a few more).

The products are independent, so each thread can compute one. Adding them up is different: many
threads writing `out[0]` at once is a race (and the sanitizer will say so). Instead, let each
thread leave its product in the shared array, wait at the barrier, and then let **one** thread
add up the shared array and write the result.

Watch for the slots the adding thread reads: a slot nobody wrote is reported as a read of
uninitialised memory. (With more threads than pairs, which the visible test does not pose but a
note after the verdict tries, the spare threads would have to fill their slots with zeros.)

Budget: each thread reads at most 2 elements of global memory and writes at most 1. How many
times threads read the shared array does not matter here; the Prefix Sum puzzle deals with that.""",
    spec=dot_product_spec,
    spec_source=inspect.getsource(dot_product_spec).strip(),
    visible=Case((np.arange(8, dtype=np.float32), np.arange(8, dtype=np.float32)), (1,), (8, 1, 1), (8, 1, 1)),
    hidden=hidden,
    header=HEADER,
    template="""\
threadgroup float shared[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
// FILL ME IN (roughly 11 lines)
""",
    budget=Budget(global_reads=2, global_writes=1),
    work=input_extent(0),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
