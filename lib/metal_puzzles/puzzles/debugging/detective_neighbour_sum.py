"""D.3: Neighbour Sum, a detective puzzle: the barrier sits inside the guard ``if (i < n)``, so
the spare threads of the last threadgroup never reach it (barrier divergence)."""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import padded, values
from ..catalogue.entry import Entry

TG = 4

HEADER = """\
constant uint TG = 4;
"""


def detective_neighbour_sum_spec(a):
    # Each element plus the next one; past the end counts as 0.
    return a + mx.concatenate([a[1:], mx.zeros((1,), dtype=a.dtype)])


def _case(a: np.ndarray, label: str) -> Case:
    n = a.shape[0]
    return Case((a,), (n,), (padded(n, TG), 1, 1), (TG, 1, 1), label)


def hidden(rng: np.random.Generator) -> list[Case]:
    # As in the visible test: whole threadgroups of 4, several of them, and spare threads at the
    # end of the grid (a size that is not a multiple of 4).
    return [_case(values(rng, (n,)), f"hidden test: {n} random values, {padded(n, TG)} threads")
            for n in (13, 7, 18, 29)]


SETUP = """\
SIZE = 10
a = mx.arange(SIZE, dtype=mx.float32)
output_shape = (SIZE,)"""

TEMPLATE = """\
threadgroup float tile[TG + 1];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
uint n = a_shape[0];
tile[local_i] = i < n ? a[i] : 0.0f;
if (local_i == TG - 1) {
    tile[TG] = i + 1 < n ? a[i + 1] : 0.0f;
}
if (i < n) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = tile[local_i] + tile[local_i + 1];
}
"""

PUZZLE = Puzzle(
    id="detective_neighbour_sum",
    number="D.3",
    title="Detective: Neighbour Sum",
    kernel_name="detective_neighbour_sum",
    input_names=("a",),
    description="""\
`out[i]` is `a[i] + a[i + 1]`, where the element past the end counts as 0. The kernel stages
`a` in a tile of threadgroup memory one slot longer than the threadgroup, so that the last
thread of each group finds its neighbour there too: every thread loads its own element (0 when
it has none), the last thread of the group also loads the element after the group, and after
the barrier every thread with an element adds two slots. The grid has more threads than
elements (12 for 10), and the spare threads do no harm: they load zeros.

The output is right. The sanitizer disagrees.

**The method.**

1. Run the cell. In the diagram, the threads the finding involves have ringed swatches, and
   a thread that misses a barrier is struck through. Read the finding: which threadgroup,
   which barrier line, which thread waits and which thread never arrives?
2. Open `problem.explore()`, click the finding, then choose the thread that never arrives and
   step through it from its first line. Which lines does it run, and at which line does its
   path part from the waiting thread's?
3. A barrier is a meeting: it is only safe when every thread of the threadgroup that is still
   running comes to it. Ask which threads need to *be* at that meeting, and which only need
   to *act* after it.

Fix the kernel, run the cell and `check()`.

Budget: each thread reads at most 2 elements of global memory and writes at most 1.""",
    spec=detective_neighbour_sum_spec,
    spec_source=inspect.getsource(detective_neighbour_sum_spec).strip(),
    visible=_case(np.arange(10, dtype=np.float32), "visible test"),
    hidden=hidden,
    header=HEADER,
    template=TEMPLATE,
    budget=Budget(global_reads=2, global_writes=1),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
