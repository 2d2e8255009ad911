"""Puzzle 3: Guard — more threads than elements."""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import arange, randint
from ...checking.wording import plural
from ..catalogue.entry import Entry


def guard_spec(a):
    return a + 10


def hidden(rng: np.random.Generator) -> list[Case]:
    # The grid (one threadgroup, as in the visible test) always overshoots the array, by a little
    # or by a lot, so an unguarded thread reads and writes past the end.
    cases = []
    for n, grid, group in ((1, 4, 4), (5, 8, 8), (13, 16, 16), (30, 64, 64)):
        a = randint(rng, (n,))
        label = f"hidden test: {plural(n, 'random value')}, {plural(grid, 'thread')}"
        cases.append(Case((a,), (n,), (grid, 1, 1), (group, 1, 1), label))
    return cases


SETUP = """\
SIZE = 4
a = mx.arange(SIZE)
output_shape = (SIZE,)"""

PUZZLE = Puzzle(
    id="guard",
    number="3",
    title="Guard",
    kernel_name="guard",
    input_names=("a",),
    description="""\
Add 10 to every element of `a` and store the result in `out`, as in Map, but now the grid has
**more threads than elements**.

GPUs launch threads in convenient round numbers, so kernels routinely get a few extra threads.
A thread whose position is past the end of `a` must do nothing: reading `a[8]` of a
4-element array is undefined behaviour, and writing `out[8]` can corrupt another buffer. On a GPU
such an access often goes unnoticed; here the sanitizer reports it as `out-of-bounds`.

How does a thread know the length? Mention `a_shape` in the body and the generated signature gains
a parameter `constant int* a_shape` holding the shape of `a` (likewise `a_strides` and `a_ndim`).
Hidden tests use other lengths, so the length must come from `a_shape`, not from a number you type.

Budget: a thread with an element to work on reads 1 element and writes 1; the others touch nothing.""",
    spec=guard_spec,
    spec_source=inspect.getsource(guard_spec).strip(),
    visible=Case((arange(4),), (4,), (8, 1, 1), (8, 1, 1)),
    hidden=hidden,
    template="""\
uint local_i = thread_position_in_grid.x;
// FILL ME IN (roughly 1-3 lines)
""",
    budget=Budget(global_reads=1, global_writes=1, shared_reads=0, shared_writes=0),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
