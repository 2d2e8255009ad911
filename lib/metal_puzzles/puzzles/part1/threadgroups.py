"""Puzzle 6: Threadgroups — the grid is cut into groups of threads."""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import arange, randint
from ...checking.wording import plural
from ..catalogue.entry import Entry


def threadgroups_spec(a):
    return a + 10


def hidden(rng: np.random.Generator) -> list[Case]:
    # As in the visible test (the original notebook's launch), whole threadgroups and some threads
    # with no element. The last two tests end in a partial threadgroup, which the visible test does
    # not pose: their failures are notes that teach (threads_per_threadgroup is smaller there).
    cases = []
    for n, grid, group in ((5, 8, 4), (13, 16, 8), (9, 10, 4), (21, 22, 8)):
        a = randint(rng, (n,))
        label = f"hidden test: {plural(n, 'random value')}, {plural(grid, 'thread')} in groups of {group}"
        cases.append(Case((a,), (n,), (grid, 1, 1), (group, 1, 1), label))
    return cases


SETUP = """\
SIZE = 9
a = mx.arange(SIZE)
output_shape = (SIZE,)"""

PUZZLE = Puzzle(
    id="threadgroups",
    number="6",
    title="Threadgroups",
    kernel_name="threadgroups",
    input_names=("a",),
    description="""\
Add 10 to every element of `a` and store it in `out`. The grid still has more threads than
elements (12 for 9), and it is now cut into **threadgroups** of 4 threads.

A GPU runs a grid as a set of threadgroups. Threads of one group run on the same compute unit and
can share fast memory and wait for one another (the next puzzles use that); threads of different
groups cannot. Inside a kernel, a thread knows:

- `threadgroup_position_in_grid`: which group it belongs to,
- `thread_position_in_threadgroup`: its place inside that group,
- `dispatch_threads_per_threadgroup`: the group size the launch asked for (the `threadgroup=`
  argument).

Together they give the thread's position in the whole grid, which is also what
`thread_position_in_grid` reports directly. A caution for later puzzles: there is also
`threads_per_threadgroup`, the size of *this* group. When a grid is not a multiple of the group
size (10 threads in groups of 4, say), the last group is **partial** and `threads_per_threadgroup`
is 2 there, not 4: multiplying the group index by it gives the wrong position, and threads of
the last group land on elements of the group before. `check()` notes it when your kernel would
break on such a grid.

Budget: each thread with an element reads 1 and writes 1 element of global memory.""",
    spec=threadgroups_spec,
    spec_source=inspect.getsource(threadgroups_spec).strip(),
    visible=Case((arange(9),), (9,), (12, 1, 1), (4, 1, 1)),
    hidden=hidden,
    template="""\
uint group = threadgroup_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
uint i = group * dispatch_threads_per_threadgroup.x + local_i;
// FILL ME IN (roughly 1-3 lines)
""",
    budget=Budget(global_reads=1, global_writes=1, shared_reads=0, shared_writes=0),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
