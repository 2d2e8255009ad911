"""III.5: Occupancy. Every threadgroup copies a 16 KiB lookup table into threadgroup memory; a
GPU core shares its threadgroup memory among the threadgroups it runs, so the table caps how
many threadgroups, and with small threadgroups how few threads, a core keeps in flight. The
learner chooses the threadgroup size (the header's TG, which the tests launch with)."""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import values
from ..catalogue.entry import Entry

TABLE = 4096
TEMPLATE_TG = 64

HEADER = f"""\
constant uint TABLE = {TABLE};
// Threads per threadgroup: every test launches threadgroups of TG threads. Choose it.
constant uint TG = {TEMPLATE_TG};
"""


def lookup_spec(idx, table):
    return table[idx]


def _case(rng: np.random.Generator, n: int, label: str) -> Case:
    idx = rng.integers(0, TABLE, size=n).astype(np.int32)
    table = values(rng, (TABLE,))
    # The threadgroup width here is a placeholder: the tests run with the header's TG.
    return Case((idx, table), (n,), (n, 1, 1), (TEMPLATE_TG, 1, 1), label)


def hidden(rng: np.random.Generator) -> list[Case]:
    return [_case(rng, n, f"hidden test: {n} lookups, {what}") for n, what in
            ((4096, "whole threadgroups"), (3000, "a partial last threadgroup"), (1500, "two threadgroups"))]


VISIBLE = Case(((np.arange(2048) * 7 % TABLE).astype(np.int32), (np.arange(TABLE) % 9).astype(np.float32)),
               (2048,), (2048, 1, 1), (TEMPLATE_TG, 1, 1), "visible test")

SETUP = f"""\
idx = (mx.arange(2048) * 7 % {TABLE}).astype(mx.int32)
table = (mx.arange({TABLE}) % 9).astype(mx.float32)
output_shape = (2048,)"""

TEMPLATE = """\
threadgroup float lut[TABLE];  // 16 KiB of threadgroup memory per threadgroup
uint i = thread_position_in_grid.x;
uint t = thread_position_in_threadgroup.x;
uint threads = threads_per_threadgroup.x;  // TG, or fewer in a partial last threadgroup
// FILL ME IN (roughly 4 lines): the threadgroup copies table into lut, each thread every
// threads-th entry, and waits for the copy. Then choose TG in the header (see the budget).
out[i] = lut[idx[i]];
"""

PUZZLE = Puzzle(
    id="lookup_occupancy",
    number="III.5",
    title="Occupancy: Choose the Threadgroup Size",
    kernel_name="lookup_table",
    input_names=("idx", "table"),
    header=HEADER,
    threadgroup_constant="TG",
    description=f"""\
`out[i] = table[idx[i]]` for a table of `TABLE = {TABLE}` floats. Every threadgroup first copies
the whole table into threadgroup memory (16 KiB), waits at a barrier, then each thread looks its
element up. Write the copy (a few lines); then comes the real choice, **the threadgroup size**:
the header's `TG`, which every test launches with (the notebook's `threadgroup=` is overridden
by it).

A GPU core hides the latency of device memory by switching between many SIMD-groups: while some
wait for data, others compute. How many it holds at once, its **occupancy**, is limited by its
threads (96 SIMD-groups on the model's Apple M1 core) and by its threadgroup memory (about 60 KiB,
shared by the threadgroups it runs). With 16 KiB per threadgroup, only 3 threadgroups fit on a
core; with `TG = 64` that is 6 SIMD-groups of 96. The table's cost is per threadgroup, so larger
threadgroups share it among more threads. Find the `TG` that fills the core (the cost table shows
the occupancy and what limits it).

Mind the partial last threadgroup: it has fewer than `TG` threads, so the copy should stride by
`threads_per_threadgroup.x` (the template's `threads`), not by `TG`.

**Budget**: occupancy at least 100% on the model's GPU core. (Registers also limit occupancy on a
real GPU; the simulator cannot know how many the compiler uses, so the model leaves them out.)""",
    spec=lookup_spec,
    spec_source=inspect.getsource(lookup_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_writes=1, min_occupancy=1.0),
)


# The answer is the header constant TG: the reference solution brings its own header.
ENTRY = Entry(PUZZLE, setup=SETUP, solution_has_header=True)
