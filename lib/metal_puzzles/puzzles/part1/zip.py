"""Puzzle 2: Zip — combine two arrays element by element."""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import arange, randint
from ...checking.wording import plural
from ..catalogue.entry import Entry


def zip_spec(a, b):
    return a + b


def hidden(rng: np.random.Generator) -> list[Case]:
    cases = []
    # One threadgroup with a thread per position, as in the visible test.
    for n, group in ((1, 1), (6, 6), (29, 32)):
        a, b = randint(rng, (n,)), randint(rng, (n,))
        label = f"hidden test: {plural(n, 'random pair')}, threadgroups of {group}"
        cases.append(Case((a, b), (n,), (n, 1, 1), (group, 1, 1), label))
    return cases


SETUP = """\
SIZE = 4
a = mx.arange(SIZE)
b = mx.arange(SIZE)
output_shape = (SIZE,)"""

PUZZLE = Puzzle(
    id="zip",
    number="2",
    title="Zip",
    kernel_name="zip",
    input_names=("a", "b"),
    description="""\
Write a kernel that adds `a` and `b` position by position and stores each sum in `out`:
`out[i] = a[i] + b[i]`.

As in Map, the grid has one thread per position and `thread_position_in_grid.x` tells a thread
which position is its own. The second name in `input_names` becomes a second buffer parameter of
the generated kernel, so the body can read `b` just like `a`.

Budget: each thread reads 2 elements of global memory (one of `a`, one of `b`) and writes 1.""",
    spec=zip_spec,
    spec_source=inspect.getsource(zip_spec).strip(),
    visible=Case((arange(4), arange(4)), (4,), (4, 1, 1), (4, 1, 1)),
    hidden=hidden,
    template="""\
uint local_i = thread_position_in_grid.x;
// FILL ME IN (roughly 1 line)
""",
    budget=Budget(global_reads=2, global_writes=1, shared_reads=0, shared_writes=0),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
