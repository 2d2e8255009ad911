"""III.7: Matrix Multiply with simdgroup_matrix. Each SIMD-group computes an 8x8 tile of
c = a @ b with the 8x8 matrix operations Apple GPUs have since the A14 and M1: load 8x8 tiles
of a and b, multiply-accumulate, store.
"""

import inspect

import numpy as np

from ...checking import Budget, Case, Puzzle
from ...checking.inputs import values
from ..catalogue.entry import Entry

TILE = 8
LONGEST = 64  # the largest n in any test; the budget is stated with it

HEADER = """\
constant uint TILE = 8;
"""


def matmul_spec(a, b):
    return a @ b


def _case(a: np.ndarray, b: np.ndarray, label: str) -> Case:
    n = a.shape[0]
    # One SIMD-group (a threadgroup of 32 threads) per 8x8 tile of c.
    return Case((a, b), (n, n), (32 * n // TILE, n // TILE, 1), (32, 1, 1), label)


def hidden(rng: np.random.Generator) -> list[Case]:
    return [_case(values(rng, (n, n)), values(rng, (n, n)), f"hidden test: {n}x{n} matrices") for n in (8, 32, LONGEST)]


_A = (np.arange(256) % 5).astype(np.float32).reshape(16, 16)
VISIBLE = _case(_A, (np.arange(256) % 3 - 1).astype(np.float32).reshape(16, 16), "visible test")

SETUP = """\
a = (mx.arange(256) % 5).astype(mx.float32).reshape(16, 16)
b = (mx.arange(256) % 3 - 1).astype(mx.float32).reshape(16, 16)
output_shape = (16, 16)"""

TEMPLATE = """\
uint n = a_shape[0];
uint col0 = threadgroup_position_in_grid.x * TILE;  // this SIMD-group's tile of c
uint row0 = threadgroup_position_in_grid.y * TILE;
// FILL ME IN (roughly 10 lines): simdgroup_float8x8, simdgroup_load,
// simdgroup_multiply_accumulate and simdgroup_store.
"""

#: Correct without matrix operations: each lane computes two of the tile's 64 elements, reading
#: a row of a and a column of b from device memory for each (the tests' slow version).
LANE_BY_LANE = """\
uint n = a_shape[0];
uint col0 = threadgroup_position_in_grid.x * TILE;
uint row0 = threadgroup_position_in_grid.y * TILE;
uint lane = thread_index_in_simdgroup;
for (uint e = lane; e < TILE * TILE; e += 32) {
    uint row = row0 + e / TILE;
    uint col = col0 + e % TILE;
    float acc = 0.0f;
    for (uint k = 0; k < n; k++) {
        acc += a[row * n + k] * b[k * n + col];
    }
    c[row * n + col] = acc;
}
"""

PUZZLE = Puzzle(
    id="simdgroup_matmul",
    number="III.7",
    title="Matrix Multiply with simdgroup_matrix",
    kernel_name="simdgroup_matmul",
    input_names=("a", "b"),
    output_names=("c",),
    header=HEADER,
    description=f"""\
`c = a @ b` for square `n x n` matrices, `n` a multiple of 8 (at most {LONGEST}). One SIMD-group
(a threadgroup of 32 threads) per 8 x 8 tile of `c`: threadgroup `(x, y)` owns rows `8y` to
`8y + 7` and columns `8x` to `8x + 7`.

Computed lane by lane, each lane reading a row of `a` and a column of `b` for each of its two
elements of the tile, every element of `a` and `b` is read `n` times. Apple GPUs (since
the A14 and M1) multiply 8 x 8 matrices held by a whole SIMD-group: `simdgroup_float8x8` is such a
matrix, spread over the 32 lanes' registers. `simdgroup_load(m, p, stride)` loads the 8 x 8 block
starting at `p` from rows `stride` floats apart, `simdgroup_multiply_accumulate(d, x, y, z)` sets
`d = x * y + z`, and `simdgroup_store(m, p, stride)` writes a block back. Walk `k` in steps of 8:
load the 8 x 8 blocks of `a` (rows of your tile, columns `k` to `k + 7`) and of `b` (rows `k` to
`k + 7`, your columns), multiply-accumulate into an accumulator that starts at
`make_filled_simdgroup_matrix<float, 8, 8>(0.0f)`, and store it once at the end.

**Budget**: each element of `a` and `b` read at most `n / 8` times, {LONGEST // TILE} at
`n = {LONGEST}` (the cost model's *reads per element*).""",
    spec=matmul_spec,
    spec_source=inspect.getsource(matmul_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(max_reads_per_element=LONGEST // TILE, reads_advice=(
        "load each 8 x 8 block of a and b once per step of k with simdgroup_load(m, p, n), whose stride n is the "
        "matrix's row length (a smaller stride loads overlapping rows, read again and again), and "
        "multiply-accumulate whole blocks instead of reading a row and a column for each element")),
)


ENTRY = Entry(PUZZLE, setup=SETUP)
