"""Puzzle II.1: an inclusive scan, in two kernels.

II.1a scans each threadgroup's block of 8 in threadgroup memory; II.1b turns block scans into
the scan of the whole array by adding, to every block, the total of all blocks before it.
Between the two, the block totals are themselves scanned (for up to 8 blocks, by the II.1a
kernel itself), which is how prefix sums over millions of elements are built on a GPU.
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import padded, values
from ...checking.wording import plural
from ..catalogue.entry import Entry

BLOCK = 8

HEADER = """\
constant uint BLOCK = 8;
"""


def block_scan_spec(a):
    # Pad to whole blocks, take the running sum inside each block, drop the padding.
    n = a.shape[0]
    blocks = (n + BLOCK - 1) // BLOCK
    padding = mx.zeros((blocks * BLOCK - n,), dtype=a.dtype)
    rows = mx.concatenate([a, padding]).reshape(blocks, BLOCK)
    return mx.cumsum(rows, axis=1).reshape(-1)[:n]


def add_block_offsets_spec(a, block_sums):
    # Block b starts where blocks 0..b-1 ended: add block_sums[b - 1] (nothing to block 0).
    n = a.shape[0]
    before = mx.concatenate([mx.zeros((1,), dtype=a.dtype), block_sums[:-1]])
    return a + mx.repeat(before, BLOCK)[:n]


def block_scan_np(x: np.ndarray) -> np.ndarray:
    """NumPy twin of the spec, used to build consistent inputs for II.1b."""
    n = x.shape[0]
    rows = np.zeros(padded(n, BLOCK), dtype=np.float32)
    rows[:n] = x
    return np.cumsum(rows.reshape(-1, BLOCK), axis=1).reshape(-1)[:n].astype(np.float32)


def offsets_inputs(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """II.1b's inputs for an array x: its block scan and the running total of its blocks."""
    scanned = block_scan_np(x)
    ends = scanned[np.minimum(np.arange(BLOCK - 1, padded(len(x), BLOCK), BLOCK), len(x) - 1)]
    return scanned, np.cumsum(ends).astype(np.float32)


def _grid(n: int) -> tuple[int, int, int]:
    # Always whole blocks: every threadgroup is complete, so any scan algorithm (Hillis-Steele or
    # Blelloch) finds all 8 threads of its block; spare threads past the end must stay quiet.
    return (padded(n, BLOCK), 1, 1)


def _label(n: int) -> str:
    grid = _grid(n)[0]
    tail = f", the last {grid - n} of {plural(grid, 'thread')} idle" if grid > n else f" in {grid // BLOCK} whole blocks"
    return f"hidden test: {plural(n, 'random value')}{tail}"


_SIZES = (8, 1, 29, 37, 64, 3)


def hidden_scan(rng: np.random.Generator) -> list[Case]:
    return [Case((values(rng, (n,)),), (n,), _grid(n), (BLOCK, 1, 1), _label(n)) for n in _SIZES]


def hidden_offsets(rng: np.random.Generator) -> list[Case]:
    cases = []
    for n in _SIZES:
        scanned, sums = offsets_inputs(values(rng, (n,)))
        cases.append(Case((scanned, sums), (n,), _grid(n), (BLOCK, 1, 1), _label(n)))
    return cases


_VISIBLE_X = np.arange(13, dtype=np.float32)

SETUP_SCAN = """\
SIZE = 13
a = mx.arange(SIZE, dtype=mx.float32)
output_shape = (SIZE,)"""

SETUP_OFFSETS = """\
SIZE = 13
# The block scan of mx.arange(13) (II.1a's output) and the running total of its two blocks.
a = mx.array([0, 1, 3, 6, 10, 15, 21, 28, 8, 17, 27, 38, 50], dtype=mx.float32)
block_sums = mx.array([28, 78], dtype=mx.float32)
output_shape = (SIZE,)"""

SCAN = Puzzle(
    id="block_scan",
    number="II.1a",
    title="Block Scan",
    kernel_name="block_scan",
    input_names=("a",),
    description="""\
An **inclusive scan** (prefix sum) replaces every element by the sum of itself and everything
before it: `[3, 1, 4, 1]` becomes `[3, 4, 8, 9]`. Scans are everywhere in sparse computing:
turning segment lengths into segment offsets, compacting arrays, allocating output slots.

In this puzzle each threadgroup of `BLOCK = 8` threads scans its own block of 8 elements:
`out[i]` is the sum of `a[j]` for the `j` from the start of `i`'s block up to `i`. (II.1b then
stitches the blocks together.)

Load the block into threadgroup memory, then scan it in `log2(8) = 3` rounds. In the round with
distance `d = 1, 2, 4`, every thread at position `j >= d` adds in the value `d` places to its left
(the **Hillis–Steele** scan). A round must read the values of the *previous* round, so either read
into a register, barrier, write, barrier; or use two buffers and swap them every round.
(The work-efficient **Blelloch** scan, an up-sweep and a down-sweep, also fits the budget.)

Watch for the end of the array. The grid is always a whole number of blocks, so it may have
more threads than elements (the visible test has 16 threads for 13 values), and the number of
elements is `a_shape[0]`. Spare threads must not read `a` or write `out`; let them store 0 in
their slot and take part in every round, so every slot of the block holds a number.

**Hidden tests** pose values in `[-4, 4)` on a grid of quarters, up to 64 of them: every partial
sum is a multiple of 1/4 below 256, exact in float32, so any order of additions (Hillis-Steele,
Blelloch, one thread after another) gives the reference exactly, and the check allows only a
floor of 1e-4; a missed or doubled element is off by a quarter or more.

Budget: each thread reads `a` once and writes `out` once; everything else happens in threadgroup
memory.""",
    spec=block_scan_spec,
    spec_source="BLOCK = 8\n\n\n" + inspect.getsource(block_scan_spec).strip(),
    visible=Case((_VISIBLE_X,), (13,), (16, 1, 1), (BLOCK, 1, 1)),
    hidden=hidden_scan,
    header=HEADER,
    template="""\
threadgroup float cache[BLOCK];
uint i = thread_position_in_grid.x;
uint j = thread_position_in_threadgroup.x;
uint n = a_shape[0];
// FILL ME IN (roughly 10 lines)
""",
    budget=Budget(global_reads=1, global_writes=1),
)

_VIS_SCANNED, _VIS_SUMS = offsets_inputs(_VISIBLE_X)

OFFSETS = Puzzle(
    id="block_offsets",
    number="II.1b",
    title="Scan: Add Block Offsets",
    kernel_name="add_block_offsets",
    input_names=("a", "block_sums"),
    description="""\
II.1a scanned every block of 8 on its own. To scan an array of any length, three launches do it:

1. the **block scan** (II.1a) of the array; the last element of each block is that block's total;
2. a scan of those block totals into `block_sums`, so that `block_sums[b]` is the total of
   blocks `0..b` (for up to 8 blocks, one more launch of the II.1a kernel does this; for more,
   recurse);
3. **this kernel**: every element of block `b > 0` adds `block_sums[b - 1]`, the total of all
   blocks before its own. Block 0 adds nothing.

Here `a` is the output of step 1 and `block_sums` of step 2; `out` must be the inclusive scan of
the original array. In the visible test the original array was `0, 1, ..., 12`, so `out` ends
with `78`. Blocks are 8 elements long (`BLOCK` in the header), one threadgroup each; as before,
the grid is a whole number of blocks and may have a few spare threads at the end (`a_shape[0]`
is the length).

**Hidden tests** pose values in `[-4, 4)` on a grid of quarters, up to 64 of them: every partial
sum is a multiple of 1/4 below 256, exact in float32, so any order of additions (Hillis-Steele,
Blelloch, one thread after another) gives the reference exactly, and the check allows only a
floor of 1e-4; a missed or doubled element is off by a quarter or more.

Budget: each thread reads at most 2 elements (its own, and one entry of `block_sums`) and writes
1.""",
    spec=add_block_offsets_spec,
    spec_source="BLOCK = 8\n\n\n" + inspect.getsource(add_block_offsets_spec).strip(),
    visible=Case((_VIS_SCANNED, _VIS_SUMS), (13,), (16, 1, 1), (BLOCK, 1, 1)),
    hidden=hidden_offsets,
    header=HEADER,
    template="""\
uint i = thread_position_in_grid.x;
uint block = threadgroup_position_in_grid.x;
// FILL ME IN (roughly 3 lines)
""",
    budget=Budget(global_reads=2, global_writes=1),
)


SCAN_ENTRY = Entry(SCAN, setup=SETUP_SCAN)
OFFSETS_ENTRY = Entry(OFFSETS, setup=SETUP_OFFSETS)
