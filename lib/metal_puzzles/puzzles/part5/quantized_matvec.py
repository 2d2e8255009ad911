"""V.3: a 4-bit quantized matrix-vector product in ``mx.quantize``'s format, the product a language
model spends most of its time on when it writes one token: every weight is read once, so a 4-bit
weight costs an eighth of a float's memory traffic. One SIMD-group per block of rows, as MLX's
``qmv`` kernel: each lane unpacks its words, accumulates in float, then ``simd_sum``.

The tests' values lie on grids (``x`` in quarters, scales and biases in quarters), so float32
computes every sum exactly in any order (exact sums); MLX's quantized product runs in float32 only,
so the spec casts the checker's float64 reference inputs back to float32 (exactly, on those grids).
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, ErrorModel, Puzzle
from ...checking.inputs import ceil_div, randfloat, values
from ..catalogue.entry import Entry

GROUP = 64  # values sharing one scale and one bias
BITS = 4
PER_WORD = 32 // BITS  # values packed in one uint32
ROWS = 4  # rows of w per SIMD-group (one threadgroup of 32 threads)
LONGEST = 512  # the longest row (K) in any test; the budget is stated with it
WORDS_PER_LANE = ceil_div(LONGEST // PER_WORD, 32)

HEADER = f"""\
constant uint GROUP = {GROUP};     // values sharing one scale and one bias
constant uint PER_WORD = {PER_WORD};   // 4-bit values packed in one uint32
constant uint ROWS = {ROWS};       // rows of w per SIMD-group
"""


def quantized_matvec_spec(x, w_q, scales, biases):
    # out[n] = sum over k of x[k] * w[n, k], with w given by mx.quantize(w, group_size=64, bits=4).
    # (The checker's reference runs in float64; MLX's quantized product takes float32 only.)
    x, scales, biases = (a.astype(mx.float32) for a in (x, scales, biases))
    return mx.quantized_matmul(x, w_q, scales, biases, transpose=True, group_size=64, bits=4)


def pack_4bit(q: np.ndarray) -> np.ndarray:
    """(N, K) integers 0..15 as mx.quantize stores them: 8 a uint32, the first in the lowest 4 bits."""
    n, k = q.shape
    nibbles = q.astype(np.uint32).reshape(n, k // PER_WORD, PER_WORD)
    shifts = (BITS * np.arange(PER_WORD)).astype(np.uint32)
    return np.bitwise_or.reduce(nibbles << shifts, axis=2).astype(np.uint32)


def _case(x: np.ndarray, w_q: np.ndarray, scales: np.ndarray, biases: np.ndarray, label: str) -> Case:
    n = w_q.shape[0]
    return Case((x, w_q, scales, biases), (n,), (32, ceil_div(n, ROWS), 1), (32, 1, 1), label)


def hidden(rng: np.random.Generator) -> list[Case]:
    cases = []
    for k, n, what in ((LONGEST, 8, "two words per lane"), (256, 5, "a partial last block"),
                       (GROUP, 3, "fewer words than lanes"), (128, 10, "three blocks")):
        q = rng.integers(0, 16, size=(n, k))
        scales = randfloat(rng, (n, k // GROUP), -1.0, 1.0)
        biases = randfloat(rng, (n, k // GROUP), -2.0, 2.0)
        cases.append(_case(values(rng, (k,)), pack_4bit(q), scales, biases, f"hidden test: {n} rows of {k}, {what}"))
    return cases


def _visible() -> Case:
    w = ((np.arange(640) * 3 % 16 - 8) / 4).reshape(5, 128)
    w = (w * (1 + np.arange(5) % 3)[:, None] * (1 + np.arange(128) // GROUP)).astype(np.float32)
    w_q, scales, biases = (np.asarray(a) for a in mx.quantize(mx.array(w), group_size=GROUP, bits=BITS))
    x = ((np.arange(128) % 5 - 2) / 2).astype(np.float32)
    return _case(x, w_q, scales, biases, "visible test")


VISIBLE = _visible()

SETUP = """\
w = ((mx.arange(640) * 3 % 16 - 8) / 4).reshape(5, 128)  # the weights, (N, K) = (5, 128)
w = w * (1 + mx.arange(5) % 3)[:, None] * (1 + mx.arange(128) // 64)
w_q, scales, biases = mx.quantize(w, group_size=64, bits=4)  # (5, 16) uint32, (5, 2), (5, 2)
x = (mx.arange(128) % 5 - 2) / 2
output_shape = (5,)"""

TEMPLATE = """\
uint lane = thread_index_in_simdgroup;
uint row0 = threadgroup_position_in_grid.y * ROWS;  // this SIMD-group's rows: row0 .. row0 + ROWS - 1
uint N = w_q_shape[0];
uint WORDS = w_q_shape[1];  // uint32 words per row: K / 8
uint GROUPS = scales_shape[1];  // groups per row: K / 64
// FILL ME IN (roughly 25 lines): for each of your words, read its 8 values of x once, then for
// each row of the block unpack the word, dequantize and accumulate; simd_sum; lane 0 writes.
"""

PUZZLE = Puzzle(
    id="quantized_matvec",
    number="V.3",
    title="4-bit Quantized Matrix-Vector Product",
    kernel_name="quantized_matvec",
    input_names=("x", "w_q", "scales", "biases"),
    header=HEADER,
    description=f"""\
For every token it writes, a language model multiplies a vector `x` by each of its weight
matrices: `out[n] = x[0] * w[n, 0] + ... + x[K-1] * w[n, K-1]`. Every weight is used once, so the
time goes into reading the weights, and a model on a Mac stores them in **4 bits** each:
`mx.quantize(w, group_size=64, bits=4)` returns three arrays. Run the setup cell and look at them.

- `scales` and `biases` have shape `(N, K/64)`: each row is cut into **groups** of 64 values, and
  each group has one scale and one bias. In the visible test row 0's are `0.25, 0.5` and `-2, -4`.
- `w_q` has shape `(N, K/8)` and type `uint32`: each value became a 4-bit integer `q` from 0 to 15
  with `w = scale * q + bias` (row 0's first values are `-2, -1.25, -0.5, ...`, so
  `q = 0, 3, 6, ...`), and eight of them share one 32-bit word. `hex(w_q[0, 0].item())` is
  `0x52fc9630`: read it **from the right**, one hexadecimal digit (4 bits) a value: `0, 3, 6, 9,
  c, f, 2, 5`, the first eight `q` of row 0. Value `k` of a row is in word `k / 8`, at bits
  `4 * (k % 8)` to `4 * (k % 8) + 3`: `(word >> (4 * i)) & 0xF` is value `i` of a word.
  `mx.dequantize` undoes it all.

With a scale and a bias for every 64 values, a weight costs 4 + 2 * 32 / 64 = **5 bits** here,
where they are `float32`: the matrix is 5/32 of its `float32` size (models store scales and biases
in 16 bits: 4.5 bits a weight).

The spec is `mx.quantized_matmul`, which computes the product without ever writing `w` out in
floats; so does your kernel. The launch has one SIMD-group (a threadgroup of 32 threads) per
**block of `ROWS = {ROWS}` rows**: the grid is `(32, ceil(N / {ROWS}), 1)`, and the visible test's
second block has only row 4. Lane `lane` takes the words `lane, lane + 32, ...` of every
row of its block (`K` is 64 to {LONGEST}; a word holds values `8 * word` to `8 * word + 7` of its row,
all in group `word / 8`). For each of its words, a lane:

1. reads the 8 values of `x` the word multiplies **once**, into registers, and uses them for all
   `ROWS` rows (that is why a SIMD-group takes a block of rows: `x` is read once per block);
2. for each row of the block (below `N`), reads the word and its group's scale and bias, unpacks
   the eight `q`, and accumulates `x[k] * (scale * q + bias)` in a `float` per row;

then `simd_sum` adds the 32 lanes' sums of each row, and lane 0 writes them. This is the plan of
MLX's `qmv` kernel (which also factors out the scale: `scale * sum(x * q) + bias * sum(x)`; either
way is fine).

Why lanes take words `lane, lane + 32, ...` and not a run of neighbouring words each: then the
32 lanes of a SIMD-group read 32 neighbouring words of a row, one 128-byte memory segment (Part
III), and their reads of `x`, 8 floats a lane, span 8 segments. Give each lane a run of two words
and the same reads of `x` span 16.

Part III's cost model keeps no cache: it counts the segments of every load. Every block reads all
of `x`, and each of those loads spans 8 segments, so on its table `x` moves more than the weights
do: for each word a lane takes, 64 segments of `x` against 3 a row (the word, the scale, the bias),
12 for a block of 4 rows. A `float32` product whose lanes read `w` and `x` a whole segment at a
time moves less, and the model times it faster than this kernel, though it reads 32/5 times the
weight bytes. What no cache could save is the weights: each word is read once.

**Hidden tests** pose `x` in `[-4, 4)` and scales in `[-1, 1)`, biases in `[-2, 2)`, all on a grid
of quarters, with 4-bit values 0 to 15: every product and partial sum is then a multiple of
1/16 well within float32's 24 bits, so float32 computes the product exactly in any order (MLX's
factored form `scale * (x . q) + bias * sum(x)` included), and the check allows only a floor of
1e-4, while a nibble read from the wrong end or a wrong group is off by a quarter or more.

**Budget**: at most {WORDS_PER_LANE * (PER_WORD + 3 * ROWS)} global reads per thread (at most
{WORDS_PER_LANE} words a lane in each row: 8 values of `x` each, and a word, a scale and a bias for
each of the {ROWS} rows) and {ROWS} writes; at most {PER_WORD} memory segments per SIMD-group load.
Reading `x` again for every row costs {WORDS_PER_LANE * ROWS * (PER_WORD + 3)} reads.""",
    spec=quantized_matvec_spec,
    spec_source=inspect.getsource(quantized_matvec_spec).strip(),
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_reads=WORDS_PER_LANE * (PER_WORD + 3 * ROWS), global_writes=ROWS,
                  max_load_segments=PER_WORD),
    work=lambda case: (32, ceil_div(case.output_shape[0], ROWS)),
    atol=1e-4,
    rtol=1e-5,
    error_model=ErrorModel.EXACT_SUMS,
)


ENTRY = Entry(PUZZLE, setup=SETUP)
