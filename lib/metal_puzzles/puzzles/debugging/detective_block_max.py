"""D.4: Block Max, a detective puzzle: the spare threads of the last threadgroup leave their
slots of threadgroup memory unwritten, and the thread that takes the maximum reads them
(an uninitialised threadgroup read)."""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.contract import input_extent
from ...checking.inputs import ceil_div, padded, randfloat
from ..catalogue.entry import Entry

TG = 8

HEADER = """\
constant uint TG = 8;
"""


def detective_block_max_spec(a):
    # The largest element of each block of 8 (the last block may be shorter).
    n = a.shape[0]
    blocks = -(-n // 8)
    filled = mx.pad(a, (0, blocks * 8 - n), constant_values=-float("inf"))
    return filled.reshape(blocks, 8).max(axis=1)


def _case(a: np.ndarray, label: str) -> Case:
    n = a.shape[0]
    return Case((a,), (ceil_div(n, TG),), (padded(n, TG), 1, 1), (TG, 1, 1), label)


def hidden(rng: np.random.Generator) -> list[Case]:
    # As in the visible test: whole threadgroups of 8 and spare threads in the last one. Values
    # of both signs, and one test of negative values only (as the visible test), where a spare
    # slot filled with 0 would win the maximum.
    cases = [_case(randfloat(rng, (n,)), f"hidden test: {n} random values, {padded(n, TG)} threads")
             for n in (21, 5, 30)]
    cases.append(_case(randfloat(rng, (43,), -9.0, -1.0), "hidden test: 43 negative values, 48 threads"))
    return cases


SETUP = """\
a = (mx.arange(13) - 20).astype(mx.float32)
output_shape = (2,)"""

TEMPLATE = """\
threadgroup float shared[TG];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
if (i < a_shape[0]) {
    shared[local_i] = a[i];
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (local_i == 0) {
    float best = shared[0];
    for (uint k = 1; k < TG; k++) {
        best = max(best, shared[k]);
    }
    out[threadgroup_position_in_grid.x] = best;
}
"""

PUZZLE = Puzzle(
    id="detective_block_max",
    number="D.4",
    title="Detective: Block Max",
    kernel_name="detective_block_max",
    input_names=("a",),
    description="""\
Each threadgroup of 8 threads writes the largest of its elements of `a` to `out[g]`. The
elements are 13 values from -20 to -8, the grid has 16 threads, so the second group holds five
elements and three spare threads. Every thread copies its element into `shared`, all wait at
the barrier, and thread 0 of the group scans the 8 slots.

This time the visible output is wrong, and the sanitizer says more than the output does.

**The method.**

1. Run the cell. In the diagram, look at threadgroup 1's shared memory as it stood after the
   barrier: which slots hold a value and which are empty? The finding rings the slot it names.
2. Open `problem.explore()`, click the finding: it lands on thread 0's read. Then choose, one
   by one, the threads of that group whose slots are empty, and see what they did (an idle
   thread says so, and why).
3. Ask what the scan needs to find in a slot that no element belongs to, so that the maximum
   comes out as if the slot were not there. The values are all negative on purpose: the
   obvious filler is not the right one.

Fix the kernel, run the cell and `check()`.

Budget: each thread reads at most 1 element of global memory and writes at most 1.""",
    spec=detective_block_max_spec,
    spec_source=inspect.getsource(detective_block_max_spec).strip(),
    visible=_case((np.arange(13) - 20).astype(np.float32), "visible test"),
    hidden=hidden,
    header=HEADER,
    template=TEMPLATE,
    budget=Budget(global_reads=1, global_writes=1),
    work=input_extent(0),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
