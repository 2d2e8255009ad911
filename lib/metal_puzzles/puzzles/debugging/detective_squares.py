"""D.5: Squares, a detective puzzle: each thread's position is computed with
``threads_per_threadgroup``, which is smaller in the partial last threadgroup, so that group's
threads land on the elements of the group before and the last elements are never written."""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import values
from ..catalogue.entry import Entry

TG = 4


def detective_squares_spec(a):
    return a * a


def _case(a: np.ndarray, label: str) -> Case:
    n = a.shape[0]
    return Case((a,), (n,), (n, 1, 1), (TG, 1, 1), label)


def hidden(rng: np.random.Generator) -> list[Case]:
    # As in the visible test: one thread per element, several threadgroups of 4, the last one
    # partial (a size that is not a multiple of 4).
    return [_case(values(rng, (n,)), f"hidden test: {n} random values, threadgroups of {TG}")
            for n in (7, 13, 22, 31)]


SETUP = """\
SIZE = 10
a = mx.arange(SIZE, dtype=mx.float32)
output_shape = (SIZE,)"""

TEMPLATE = """\
uint group = threadgroup_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
uint i = group * threads_per_threadgroup.x + local_i;
if (i < a_shape[0]) {
    float x = a[i];
    out[i] = x * x;
}
"""

PUZZLE = Puzzle(
    id="detective_squares",
    number="D.5",
    title="Detective: Squares",
    kernel_name="detective_squares",
    input_names=("a",),
    description="""\
Square every element of `a`. The grid has exactly one thread per element (10), cut into
threadgroups of 4, so the last threadgroup is **partial**: it has 2 threads. Each thread works
out its position from its threadgroup and its place in it, and the guard keeps every thread
inside `a`.

The author tested it on 8 elements, where it is right. On 10, `check()` fails.

**The method.**

1. Run the cell and read the findings: the elements nobody wrote, and the note about an
   element written twice. In the diagram, find the threads that wrote it twice: which
   threadgroup does each belong to, and which elements did the last threadgroup's threads
   reach for?
2. Open `problem.explore()`, choose the first thread of the last threadgroup and, on the line
   that computes `i`, look at the value of every variable the line uses. Do the same for the
   first thread of an earlier threadgroup. Which value differs that you expected to be the same?
3. Puzzle 6 warned about one of the built-in values this kernel reads. Reread that warning,
   then pick a value that is the same in every threadgroup of the launch (or one that needs no
   arithmetic at all).

Fix the kernel, run the cell and `check()`.

Budget: each thread reads at most 1 element of global memory and writes at most 1.""",
    spec=detective_squares_spec,
    spec_source=inspect.getsource(detective_squares_spec).strip(),
    visible=_case(np.arange(10, dtype=np.float32), "visible test"),
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_reads=1, global_writes=1),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
