"""Puzzle 1: Map — one thread per element."""

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import arange, randint
from ...checking.wording import plural
from ..catalogue.entry import Entry


def spec(a):
    return a + 10


def hidden(rng: np.random.Generator) -> list[Case]:
    # Other sizes and random values: a kernel that hard-codes the visible answer fails here.
    cases = []
    for n in (1, 7, 32):
        a = randint(rng, (n,))
        cases.append(Case((a,), (n,), (n, 1, 1), (min(n, 32), 1, 1), f"hidden test: {plural(n, 'random value')}"))
    return cases


SETUP = """\
SIZE = 4
a = mx.arange(SIZE)
output_shape = (SIZE,)"""

PUZZLE = Puzzle(
    id="map",
    number="1",
    title="Map",
    kernel_name="map",
    input_names=("a",),
    description="""\
Write a kernel that adds 10 to every element of `a` and stores the result in `out`.

The grid has exactly one thread per element. Each thread learns which element is its own from
`thread_position_in_grid.x`, a `uint` that runs from 0 to the grid size minus one. Everything in
`source` is the *body* of the kernel: the signature with `a`, `out` and the thread position is
generated for you (pass `verbose=True` to a kernel call to see it).

Budget: each thread reads 1 element and writes 1 element of global memory.""",
    spec=spec,
    spec_source="def map_spec(a):\n    return a + 10",
    visible=Case((arange(4),), (4,), (4, 1, 1), (4, 1, 1)),
    hidden=hidden,
    template="""\
uint local_i = thread_position_in_grid.x;
// FILL ME IN (roughly 1 line)
""",
    budget=Budget(global_reads=1, global_writes=1, shared_reads=0, shared_writes=0),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
