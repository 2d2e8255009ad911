"""Puzzle 8: Threadgroup Memory — stage data in memory shared by a threadgroup."""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import randfloat
from ...checking.wording import plural
from ..catalogue.entry import Entry

HEADER = """\
constant uint THREADGROUP_MEM_SIZE = 4;
"""


def threadgroup_memory_spec(a):
    return a + 10


def hidden(rng: np.random.Generator) -> list[Case]:
    # Threadgroups stay at 4 threads: the header fixes the shared array at 4 elements. As in the
    # visible test, every thread has an element and every threadgroup is whole; the last two tests
    # pose more (spare threads, a partial threadgroup), and their failures are notes.
    cases = []
    for n, grid in ((12, 12), (4, 4), (20, 20), (10, 12), (6, 6)):
        a = randfloat(rng, (n,))
        label = f"hidden test: {plural(n, 'random value')}, {plural(grid, 'thread')} in groups of 4"
        cases.append(Case((a,), (n,), (grid, 1, 1), (4, 1, 1), label))
    return cases


SETUP = """\
SIZE = 8
a = mx.ones(SIZE)
output_shape = (SIZE,)"""

PUZZLE = Puzzle(
    id="threadgroup_memory",
    number="8",
    title="Threadgroup Memory",
    kernel_name="threadgroup_memory",
    input_names=("a",),
    description="""\
Add 10 to every element of `a` and store it in `out`, going through **threadgroup memory**. This
puzzle does not need it; it is here to show the moves every later puzzle makes.

A variable declared `threadgroup` in the kernel body exists once per threadgroup, and every
thread of the group sees the same copy. It is small (its size must be a compile-time constant,
here `THREADGROUP_MEM_SIZE` from the `header`, the text placed before the kernel) and much faster
than the `device` memory holding `a` and `out`. The pattern:

1. each thread copies its element from device memory into the shared array;
2. `threadgroup_barrier(mem_flags::mem_threadgroup)`: every thread of the group waits here until
   all of them arrive, so after it all the writes of step 1 are visible to everybody;
3. threads read from the shared array.

Without the barrier a thread may read a slot before its neighbour has written it, a *data race*
that the sanitizer reports as `race`. The barrier has its own rule: **every** thread of the
group must reach it (threads that have already returned are excused). A barrier inside an
`if` that some threads skip is *barrier divergence*, which can hang a real GPU; that is why the
template puts the barrier after the guarded copy, not inside it. Keep it that way in the puzzles
to come.

Budget: each thread reads 1 element of `a` and writes 1 of `out` (global memory), and writes 1
and reads 1 element of the shared array.""",
    spec=threadgroup_memory_spec,
    spec_source=inspect.getsource(threadgroup_memory_spec).strip(),
    visible=Case((np.ones(8, dtype=np.float32),), (8,), (8, 1, 1), (4, 1, 1)),
    hidden=hidden,
    header=HEADER,
    template="""\
threadgroup float shared[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;

if (i < a_shape[0]) {
    shared[local_i] = a[i];
}
// Outside the if: every thread of the threadgroup must reach the barrier.
threadgroup_barrier(mem_flags::mem_threadgroup);

// FILL ME IN (roughly 1-3 lines)
""",
    budget=Budget(global_reads=1, global_writes=1, shared_reads=1, shared_writes=1),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
