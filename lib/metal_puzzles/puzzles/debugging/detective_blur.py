"""D.2: Blur, a detective puzzle: an edge test written as ``i - 1 >= 0`` on an unsigned index is
always true, so thread 0 reads ``a[i - 1]`` with the index wrapped around to 4294967295."""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import values
from ..catalogue.entry import Entry

TG = 4


def detective_blur_spec(a):
    # Each element plus its two neighbours; positions outside a count as 0.
    padded = mx.pad(a, 1)
    return padded[:-2] + padded[1:-1] + padded[2:]


def _case(a: np.ndarray, label: str) -> Case:
    n = a.shape[0]
    return Case((a,), (n,), (n, 1, 1), (TG, 1, 1), label)


def hidden(rng: np.random.Generator) -> list[Case]:
    # As in the visible test: one thread per element, several whole threadgroups of 4.
    return [_case(values(rng, (n,)), f"hidden test: {n} random values") for n in (8, 16, 20, 28)]


SETUP = """\
SIZE = 12
a = mx.arange(SIZE, dtype=mx.float32)
output_shape = (SIZE,)"""

TEMPLATE = """\
uint i = thread_position_in_grid.x;
uint n = a_shape[0];
if (i < n) {
    float left = 0;
    if (i - 1 >= 0) {
        left = a[i - 1];
    }
    float right = 0;
    if (i + 1 < n) {
        right = a[i + 1];
    }
    out[i] = left + a[i] + right;
}
"""

PUZZLE = Puzzle(
    id="detective_blur",
    number="D.2",
    title="Detective: Blur",
    kernel_name="detective_blur",
    input_names=("a",),
    description="""\
Blur `a`: `out[i]` is `a[i - 1] + a[i] + a[i + 1]`, where a position outside `a` counts as 0.
The author thought of both edges: each neighbour is read only after a test that it exists.

The visible test's output is right, and yet the sanitizer objects.

**The method.**

1. Run the cell. The diagram draws dashed cells past the end of an array for indices a
   thread reached outside it. Read the finding: which thread, which line, which index?
2. Compare that index with the sizes in this problem (12 elements, 12 threads). A number that
   is nowhere near any of them did not come from counting; it came from arithmetic that went
   somewhere arithmetic on paper does not go.
3. Open `problem.explore()`, click the finding and look at the thread's variables at that
   line: the value of `i`, and the type each variable was declared with. Then reread the test
   that was meant to keep this thread away from that line, and evaluate it yourself, in that
   type, for that thread.

Fix the test (not the read), run the cell and `check()`.

Budget: each thread reads at most 3 elements of global memory and writes at most 1.""",
    spec=detective_blur_spec,
    spec_source=inspect.getsource(detective_blur_spec).strip(),
    visible=_case(np.arange(12, dtype=np.float32), "visible test"),
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_reads=3, global_writes=1),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
