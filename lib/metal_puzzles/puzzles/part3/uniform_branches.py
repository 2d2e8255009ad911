"""III.4: Uniform Branches. Threads that branch on their element's parity run both sides of the
branch in every SIMD-group, half the lanes idle each time; giving even elements to one
SIMD-group and odd ones to the next makes every branch uniform."""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, ErrorModel, Puzzle
from ...checking.inputs import padded, values
from ..catalogue.entry import Entry

#: Rounds of arithmetic per element: enough that the kernel's time is its arithmetic (see the text).
STEPS = 128
GROUP = 64  # two SIMD-groups: the unit the remapping works in

HEADER = f"""\
constant uint STEPS = {STEPS};
"""


def uniform_branches_spec(a):
    # Even positions: STEPS rounds of x * 0.5 + 1; odd positions: STEPS rounds of x * x * 0.25 - 1.
    even, odd = a, a
    for _ in range(128):  # STEPS
        even = even * 0.5 + 1.0
        odd = odd * odd * 0.25 - 1.0
    position = mx.arange(a.shape[0])
    return mx.where(position % 2 == 0, even, odd)


def _case(a: np.ndarray, label: str) -> Case:
    return Case((a,), a.shape, (padded(a.shape[0], GROUP), 1, 1), (GROUP * 2, 1, 1), label)


def hidden(rng: np.random.Generator) -> list[Case]:
    # Partial pairs that keep most of their lanes, as the visible test's does: the budget's SIMD
    # efficiency is each test's own, and a test of a few values would idle most lanes of any kernel.
    return [_case(values(rng, (n,)), f"hidden test: {n} values, {what}") for n, what in
            ((256, "whole SIMD-groups"), (186, "a partial last pair of SIMD-groups"),
             (62, "fewer than two SIMD-groups"))]


# 120 values: the last pair of SIMD-groups has 8 positions past the end, so the guard is posed.
VISIBLE = _case((np.arange(120) % 8 - 4).astype(np.float32) / 2, "visible test")

SETUP = """\
a = (mx.arange(120) % 8 - 4).astype(mx.float32) / 2
output_shape = (120,)"""

TEMPLATE = """\
uint t = thread_position_in_grid.x;
uint n = a_shape[0];
// FILL ME IN (roughly 4 lines): the element i of this thread. With i = t the kernel is correct,
// but every SIMD-group has even and odd elements and runs both loops with half its lanes idle.
// Give the even elements of 64 to one SIMD-group and the odd ones to the next.
uint i = 0;
if (i < n) {
    float x = a[i];
    if (i % 2 == 0) {
        for (uint k = 0; k < STEPS; k++) {
            x = x * 0.5f + 1.0f;
        }
    } else {
        for (uint k = 0; k < STEPS; k++) {
            x = x * x * 0.25f - 1.0f;
        }
    }
    out[i] = x;
}
"""

PUZZLE = Puzzle(
    id="uniform_branches",
    number="III.4",
    title="Uniform Branches",
    kernel_name="uniform_branches",
    input_names=("a",),
    header=HEADER,
    description="""\
Even positions of `a` go through one computation, odd positions through another (the spec). The
template leaves one line to write: the element `i` thread `t` computes. With `i = t` the kernel
is correct, but slow on a GPU: the 32 lanes of a
SIMD-group execute one instruction at a time, so when half of them take the `if` and half the
`else`, the SIMD-group runs the `if` loop with 16 lanes idle, then the `else` loop with the other
16 idle. That is **divergence**: the profile's *SIMD efficiency* (active lanes over the lanes
issued) is about 50%.

Keep one element per thread, but choose which: split the threads into pairs of SIMD-groups (64
threads, `t / 64`); give the first SIMD-group of a pair the 32 even elements of those 64
positions and the second the 32 odd ones (use `t % 32` and `(t / 32) % 2`). Every SIMD-group then
takes one side of the branch. The grid is rounded up to a multiple of 64 threads, so every
position is some thread's, and some threads have none: the visible test's 120 values leave 8
positions of the last 64 past the end. Guard them (`if (i < n)`).

Each element takes `STEPS = 128` rounds of arithmetic, so the kernel's time is its arithmetic,
and divergence doubles it: the cost table's kernel time (the time apart from the fixed launch
overhead) halves when the SIMD efficiency doubles. The lanes now read every other float, two
segments per SIMD-group where neighbours would use one: a small price here, next to the
arithmetic. (It would not be with a few rounds per element: a kernel that does little arithmetic
per byte it moves is bound by memory traffic, and its idle lanes cost it nothing.)

**Budget**: SIMD efficiency at least 80% on every test (the guard idles a few lanes in the last
pair of SIMD-groups), at most 2 segments per SIMD-group load and store, 1 read
and 1 write of device memory per thread.""",
    spec=uniform_branches_spec,
    spec_source=inspect.getsource(uniform_branches_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_reads=1, global_writes=1, min_simd_efficiency=0.8, max_load_segments=2,
                  max_store_segments=2),
    # Sixteen rounds of squaring leave the grid of quarters: the error float32 can promise
    # comes from the recurrence's conditioning, not from exact sums.
    error_model=ErrorModel.CONDITIONED,
)


ENTRY = Entry(PUZZLE, setup=SETUP)
