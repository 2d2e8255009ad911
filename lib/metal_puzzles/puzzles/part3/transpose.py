"""III.1 and III.2: Transpose through a threadgroup tile, then pad the tile.

A transpose reads rows and writes columns, so one of the two is uncoalesced: the 32 lanes of a
SIMD-group write 32 addresses a row apart, 32 memory segments. Staging a 32x32 tile in
threadgroup memory makes both the read and the write row-wise (III.1). The tile's column read
then puts all 32 lanes in one bank of threadgroup memory; one padding float per row spreads
them over all 32 banks (III.2).
"""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import padded, values
from ..catalogue.entry import Entry

TILE = 32

HEADER = """\
constant uint TILE = 32;
"""


def transpose_spec(a):
    return a.T


def launch(rows: int, cols: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """One thread per element of a, the grid rounded up to whole 32x32 tiles."""
    return (padded(cols, TILE), padded(rows, TILE), 1), (TILE, TILE, 1)


def _case(a: np.ndarray, label: str) -> Case:
    grid, tg = launch(*a.shape)
    return Case((a,), (a.shape[1], a.shape[0]), grid, tg, label)


def hidden(rng: np.random.Generator) -> list[Case]:
    shapes = ((64, 64, "two by two tiles"), (40, 72, "partial tiles at the edges"),
              (96, 32, "taller than wide"), (1, 33, "a single row"))
    return [_case(values(rng, (r, c)), f"hidden test: {r}x{c} matrix, {what}") for r, c, what in shapes]


VISIBLE = _case(np.arange(32 * 64, dtype=np.float32).reshape(32, 64), "visible test")

SETUP = """\
a = mx.arange(32 * 64, dtype=mx.float32).reshape(32, 64)
output_shape = (64, 32)"""

TEMPLATE = """\
threadgroup float tile[TILE][TILE];
uint rows = a_shape[0];
uint cols = a_shape[1];
uint tx = thread_position_in_threadgroup.x;
uint ty = thread_position_in_threadgroup.y;
uint bx = threadgroup_position_in_grid.x * TILE;  // this tile's first column of a
uint by = threadgroup_position_in_grid.y * TILE;  // this tile's first row of a
// The obvious transpose is correct, but each SIMD-group's write touches 32 memory segments:
//     if (by + ty < rows && bx + tx < cols) {
//         out[(bx + tx) * rows + by + ty] = a[(by + ty) * cols + bx + tx];
//     }
// FILL ME IN (roughly 8 lines): read a row of the tile, barrier, write a row of out from a
// column of the tile.
"""

_BUDGET_TEXT = """\
**Budget** (the cost model, on an Apple M1): at most 2 memory segments per SIMD-group load and per
SIMD-group store (one when a row of the matrix starts on a 128-byte boundary, two when it does
not), and each thread reads and writes one element of device memory and one of threadgroup
memory."""

TILED = Puzzle(
    id="tiled_transpose",
    number="III.1",
    title="Transpose Through a Tile",
    kernel_name="tiled_transpose",
    input_names=("a",),
    header=HEADER,
    description=f"""\
Write `out = a.T` for a matrix `a` of `rows x cols` floats. One thread per element of `a`, in
threadgroups of 32 x 32 threads: thread `(x, y)` of the grid sits on `a[y, x]`, and the grid is
rounded up to whole tiles (guard the threads past the edges).

From here on the simulator also prices your kernel on a model of an Apple GPU. A GPU reads and
writes device memory in **segments** (128 bytes on Apple GPUs, 32 floats), and the 32 threads of
a **SIMD-group** (32 consecutive threads: here one row of the threadgroup) access memory
together. When the 32 lanes touch 32 consecutive floats, the access costs one segment; when they
touch 32 floats a row apart, it costs 32. The obvious transpose (in the template's comment)
is correct and its reads are coalesced (neighbouring lanes, neighbouring columns of `a`), but its
writes are not: lane `x` writes `out[x][y]`, a row of `out` apart from its neighbour. Try it:
`problem.show()` prints the cost table, segments per SIMD-group load and store, for your kernel
and the budget.

The fix is to go through threadgroup memory: each threadgroup reads its 32 x 32 tile of `a` row
by row into `tile`, waits at a barrier, and writes the transposed tile to `out` row by row,
reading `tile` by columns. Threadgroup memory has no segments, so the column read is cheap
(almost: see the next puzzle). `problem.show(colour_by="segment")` colours each SIMD-group's
accesses by the segment they fall in.

{_BUDGET_TEXT}""",
    spec=transpose_spec,
    spec_source=inspect.getsource(transpose_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_reads=1, global_writes=1, shared_reads=1, shared_writes=1, max_load_segments=2,
                  max_store_segments=2),
)

PADDED = Puzzle(
    id="padded_transpose",
    number="III.2",
    title="Pad the Tile",
    kernel_name="padded_transpose",
    input_names=("a",),
    header=HEADER,
    description=f"""\
The same transpose, with a stricter budget: **no bank conflicts**. Start from your kernel of
III.1 (the template is III.1's again).

Threadgroup memory is split into **banks**: on the model's GPU 32 banks of 4 bytes, float `k` of
threadgroup memory in bank `k % 32`. The 32 lanes of a SIMD-group are served at once when they
address 32 different banks (or share one float: a broadcast); lanes that need different floats
of one bank wait for each other. Reading a column of `tile[32][32]` asks for floats 32 apart:
all 32 lanes in one bank, a **32-way conflict**, 32 passes where one would do.

Declare the tile one float wider, `tile[TILE][TILE + 1]`: the column's floats are then 33 apart,
and `33 * k % 32 = k` puts each lane in its own bank. Nothing else changes.
`problem.show(colour_by="bank")` colours threadgroup memory by bank, so the conflict is seen
before it is fixed. (Apple does not publish its banks; the model assumes 32 of 4 bytes, and the
padding also works with 16 banks.)

{_BUDGET_TEXT} The worst threadgroup-memory access may be a 1-way conflict, that is, none.""",
    spec=transpose_spec,
    spec_source=inspect.getsource(transpose_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_reads=1, global_writes=1, shared_reads=1, shared_writes=1, max_load_segments=2,
                  max_store_segments=2, max_bank_conflict=1),
)


TILED_ENTRY = Entry(TILED, setup=SETUP)
PADDED_ENTRY = Entry(PADDED, setup=SETUP)
