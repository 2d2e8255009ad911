"""D.1: Block Sum, a detective puzzle: a tree reduction whose loop lacks the barrier between
its rounds, so a round reads what another thread is still writing (a race across iterations)."""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.contract import input_extent
from ...checking.inputs import values
from ..catalogue.entry import Entry

TG = 8

HEADER = """\
constant uint TG = 8;
"""


def detective_block_sum_spec(a):
    # The sum of each block of 8 elements.
    return a.reshape(-1, 8).sum(axis=1)


def _case(a: np.ndarray, label: str) -> Case:
    n = a.shape[0]
    return Case((a,), (n // TG,), (n, 1, 1), (TG, 1, 1), label)


def hidden(rng: np.random.Generator) -> list[Case]:
    # As in the visible test: whole threadgroups of 8, one thread per element, several groups.
    return [_case(values(rng, (n,)), f"hidden test: {n} random values, {n // TG} blocks")
            for n in (16, 48, 64, 24)]


SETUP = """\
a = mx.arange(32, dtype=mx.float32)
output_shape = (4,)"""

TEMPLATE = """\
threadgroup float shared[TG];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
shared[local_i] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint s = TG / 2; s > 0; s /= 2) {
    if (local_i < s) {
        shared[local_i] += shared[local_i + s];
    }
}
if (local_i == 0) {
    out[threadgroup_position_in_grid.x] = shared[0];
}
"""

PUZZLE = Puzzle(
    id="detective_block_sum",
    number="D.1",
    title="Detective: Block Sum",
    kernel_name="detective_block_sum",
    input_names=("a",),
    description="""\
Each threadgroup of 8 threads adds up its 8 elements of `a` and writes the sum to
`out[g]`, where `g` is the threadgroup's position. The kernel below does it as a tree: every
thread copies its element into `shared`, then in rounds of halving width (`s` = 4, 2, 1) the
threads below `s` add the element `s` places to their right.

On the visible test the printed sums are right. `check()` fails it all the same.

**The method.**

1. Run the cell and read the finding under the diagram, word by word: its kind, its line, the
   element, the thread that reads and the thread that wrote. Note that both accesses are on
   the *same* line: one thread was at that line in one round, the other in another.
2. Open `problem.explore()` and click the finding. Write down the value of `s` at the read.
   Then choose the writing thread and step through it: at which `s` did it write that element?
3. Between those two moments, what guarantees that the writer had finished before the reader
   looked? Find the line of the kernel that is supposed to give that guarantee, and ask how
   many times it runs.

Fix the kernel with as small a change as you can, run the cell (the ring disappears) and
`check()`.

Budget: each thread reads at most 1 element of global memory and writes at most 1.""",
    spec=detective_block_sum_spec,
    spec_source=inspect.getsource(detective_block_sum_spec).strip(),
    visible=_case(np.arange(32, dtype=np.float32), "visible test"),
    hidden=hidden,
    header=HEADER,
    template=TEMPLATE,
    budget=Budget(global_reads=1, global_writes=1),
    work=input_extent(0),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
