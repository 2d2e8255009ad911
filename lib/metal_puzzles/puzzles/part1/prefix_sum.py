"""Puzzle 12: Prefix Sum — a tree reduction in threadgroup memory, one sum per group."""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.contract import input_extent
from ...checking.inputs import arange, randint
from ...checking.wording import plural
from ..catalogue.entry import Entry

HEADER = """\
constant uint THREADGROUP_MEM_SIZE = 8;
"""

THREADGROUP_MEM_SIZE = 8


def prefix_sum_spec(a):
    # Pad to whole blocks of THREADGROUP_MEM_SIZE and sum each block.
    n = a.shape[0]
    blocks = (n + THREADGROUP_MEM_SIZE - 1) // THREADGROUP_MEM_SIZE
    pad = mx.zeros((blocks * THREADGROUP_MEM_SIZE - n,), dtype=a.dtype)
    padded = mx.concatenate([a, pad])
    return padded.reshape(blocks, THREADGROUP_MEM_SIZE).sum(axis=1)


def _case(rng: np.random.Generator, n: int, grid: int, what: str) -> Case:
    blocks = (n + THREADGROUP_MEM_SIZE - 1) // THREADGROUP_MEM_SIZE
    label = f"hidden test: {what}, {plural(n, 'random value')}, {plural(grid, 'thread')} in groups of 8"
    return Case((randint(rng, (n,)),), (blocks,), (grid, 1, 1), (8, 1, 1), label)


def hidden_simple(rng: np.random.Generator) -> list[Case]:
    # As in the visible test, one full group of 8 with a thread per element: other values only (a
    # smaller grid would shrink the group below the 8 slots of cache). The last two tests have spare
    # threads (elements past the end count as zero), whose failures are notes.
    return [_case(rng, 8, 8, "one group"), _case(rng, 8, 8, "one group"),
            _case(rng, 5, 8, "one group, spare threads"), _case(rng, 1, 8, "one group, spare threads")]


def hidden_full(rng: np.random.Generator) -> list[Case]:
    # Whole groups with spare threads, as in the visible test (the original notebook's launch); the
    # last two tests end in a partial group (as small as a single thread), which the visible test
    # does not pose: their failures are notes that teach.
    return [_case(rng, 20, 24, "three groups"), _case(rng, 29, 32, "four groups"),
            _case(rng, 17, 17, "partial last group of 1"), _case(rng, 11, 14, "partial last group of 6")]


SETUP_SIMPLE = """\
SIZE = 8
a = mx.arange(SIZE)
output_shape = (1,)"""

SETUP_FULL = """\
SIZE = 15
a = mx.arange(SIZE)
output_shape = (2,)"""

TEMPLATE = """\
threadgroup float cache[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
// FILL ME IN (roughly 14 lines)
"""

_DESCRIPTION = """\
Sum `a` in blocks of 8: `out[g]` is the sum of `a[8g]` to `a[8g+7]` (elements past the end of
`a` count as zero). Each threadgroup of 8 threads handles one block, so a single group means a
single number.

Do it the way GPUs do, with a **tree reduction** in threadgroup memory (the first half of the
parallel prefix-sum algorithm): every thread copies its element into `cache`; then, in rounds,
`cache[0] += cache[1]`, `cache[2] += cache[3]`, ... (pairs at distance 1), then
`cache[0] += cache[2]`, `cache[4] += cache[6]` (distance 2), then distance 4, until `cache[0]`
holds the block's sum. Each round halves the number of partial sums, so 8 elements take 3
rounds, and a barrier between rounds makes each round see the previous one's results.
{focus}
Budget: each thread reads 1 element of `a` and writes at most 1 element of `out`."""

_FOCUS_SIMPLE = """
Watch for: the barrier inside the loop must be reached by every thread of the group in every
round, so put it outside any `if`.
"""

_FOCUS_FULL = """
Now there are several groups: 16 threads for the 15 elements of the visible test. On grids that
are not a multiple of 8 the last group is partial (with 17 threads, the third group has one
thread; `check()` notes it when your kernel would break there). Use `threads_per_threadgroup.x` (this group's actual size)
to keep the rounds inside the slots that were written, and `threadgroup_position_in_grid.x` to
pick the output position.
"""

BUDGET = Budget(global_reads=1, global_writes=1)

SIMPLE = Puzzle(
    id="prefix_sum_simple",
    number="12a",
    title="Prefix Sum (Simple)",
    kernel_name="prefix_sum",
    input_names=("a",),
    description=_DESCRIPTION.format(focus=_FOCUS_SIMPLE),
    spec=prefix_sum_spec,
    spec_source="THREADGROUP_MEM_SIZE = 8\n\n\n" + inspect.getsource(prefix_sum_spec).strip(),
    visible=Case((arange(8),), (1,), (8, 1, 1), (8, 1, 1)),
    hidden=hidden_simple,
    header=HEADER,
    template=TEMPLATE,
    budget=BUDGET,
    work=input_extent(0),
)

FULL = Puzzle(
    id="prefix_sum_full",
    number="12b",
    title="Prefix Sum (Full)",
    kernel_name="prefix_sum",
    input_names=("a",),
    description=_DESCRIPTION.format(focus=_FOCUS_FULL),
    spec=prefix_sum_spec,
    spec_source=SIMPLE.spec_source,
    visible=Case((arange(15),), (2,), (16, 1, 1), (8, 1, 1)),
    hidden=hidden_full,
    header=HEADER,
    template=TEMPLATE,
    budget=BUDGET,
    work=input_extent(0),
)


SIMPLE_ENTRY = Entry(SIMPLE, setup=SETUP_SIMPLE, function="prefix_sum_test")
FULL_ENTRY = Entry(FULL, setup=SETUP_FULL, function="prefix_sum_test",
                     shares_solution_of=SIMPLE.id)
