"""Part V's texts as claims the cost model is tested against, as tests/puzzles/part3/test_part3_lessons.py does
for Part III (issue 32: every claim a text makes about cost backed by the model).

Claims tested in tests/puzzles/part5/test_part5.py already: V.3's words in one segment and `x` in eight (a run of
two words a lane: sixteen), one barrier for each row reduction (V.1, V.4, V.5), V.4 reading each key
and value once per query head, V.1 reading each element of `x` once; the budgets (V.5's logits read
once, V.3's reads of `x` once per block) by each reference passing and each named mistake failing.
Here: what V.3's text says of the 4-bit format and of what the model counts, and what Part V's
introduction says of the quantized product's share of a model's time and memory, on the finale's
own model.
"""

from __future__ import annotations

import collections
import dataclasses

import mlx.core as mx
import numpy as np
import pytest

from metal_puzzles.msl import RunResult, simulate
from metal_puzzles.msl.observe.roofline import Bound
from metal_puzzles.puzzles import get_puzzle, part5, solution_source
from metal_puzzles.puzzles.composition.decode_model import (
    DecodeKernels,
    KernelOps,
    Prompt,
    TinyModel,
    generate,
)

QMV = get_puzzle("quantized_matvec")
#: A matrix of a model's shape (the finale's MLP is 128 x 64; mlx-lm's are thousands wide).
ROWS, COLS = 64, 512

#: The same product on float32 weights, the plan of V.3 with whole segments: lane `lane` takes
#: columns lane, lane + 32, ... of every row of its block, so each load of `w` or `x` is one segment.
FLOAT_MATVEC = """\
uint lane = thread_index_in_simdgroup;
uint row0 = threadgroup_position_in_grid.y * ROWS;
uint N = w_shape[0];
uint K = w_shape[1];
float sums[ROWS] = {0.0f, 0.0f, 0.0f, 0.0f};
for (uint k = lane; k < K; k += 32) {
    float xk = x[k];
    for (uint r = 0; r < ROWS; r++) {
        if (row0 + r < N) {
            sums[r] += xk * w[(row0 + r) * K + k];
        }
    }
}
for (uint r = 0; r < ROWS; r++) {
    float total = simd_sum(sums[r]);
    if (lane == 0 && row0 + r < N) {
        out[row0 + r] = total;
    }
}
"""


@dataclasses.dataclass(frozen=True)
class Products:
    quantized: RunResult
    float32: RunResult
    x: np.ndarray
    w: np.ndarray


@pytest.fixture(scope="module")
def products() -> Products:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    x = rng.standard_normal(COLS).astype(np.float32)
    w_q, scales, biases = (np.asarray(a) for a in mx.quantize(mx.array(w), group_size=64, bits=4))
    launch = {"output_shapes": [(ROWS,)], "output_dtypes": ["float32"], "grid": (32, ROWS // 4, 1),
              "threadgroup": (32, 1, 1), "cost": True}
    quantized = simulate(QMV.kernel_name, list(QMV.input_names), ["out"], solution_source(QMV), QMV.header,
                         inputs=[x, w_q, scales, biases], **launch)
    float32 = simulate("matvec", ["x", "w"], ["out"], FLOAT_MATVEC, "constant uint ROWS = 4;\n", inputs=[x, w],
                       **launch)
    for run, want in ((quantized, np.asarray(mx.dequantize(mx.array(w_q), mx.array(scales), mx.array(biases),
                                                           group_size=64, bits=4)) @ x), (float32, w @ x)):
        np.testing.assert_allclose(run.outputs[0], want, rtol=1e-4, atol=1e-3)  # both compute the product
    return Products(quantized, float32, x, w)


def _text(puzzle) -> str:
    return " ".join(puzzle.description.split())


def _line_of(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.split("\n"), start=1) if text in line)


def _moved(run: RunResult, source: str, text: str) -> int:
    line = _line_of(source, text)
    return sum(c.loads.bytes_moved for (_, n), c in run.cost.lines.items() if n == line)


def _requested(run: RunResult, source: str, text: str) -> int:
    line = _line_of(source, text)
    return sum(c.loads.bytes_requested for (_, n), c in run.cost.lines.items() if n == line)


# ----------------------------------------------------------------------------- V.3
def test_v3_a_4_bit_weight_with_float32_scales_costs_5_bits_5_32_of_float32(products):
    """'a weight costs 4 + 2 * 32 / 64 = 5 bits here ... the matrix is 5/32 of its float32 size':
    the distinct bytes each product reads, less x's, are its weights'."""
    assert "the matrix is 5/32 of its `float32` size" in _text(QMV)
    x_bytes = products.x.nbytes
    quantized_weights = products.quantized.cost.unique_bytes_read - x_bytes
    float_weights = products.float32.cost.unique_bytes_read - x_bytes
    assert float_weights == products.w.nbytes == ROWS * COLS * 4
    assert quantized_weights == ROWS * COLS * 5 // 8  # 5 bits a weight
    assert quantized_weights * 32 == float_weights * 5


def test_v3_each_word_is_read_once(products):
    """'What no cache could save is the weights: each word is read once.'"""
    source = solution_source(QMV)
    assert _requested(products.quantized, source, "uint packed = w_q[") == ROWS * COLS // 2  # 8 values a uint32


def test_v3_the_model_counts_no_cache_so_x_moves_more_than_the_weights(products):
    """'for each word a lane takes, 64 segments of x against 3 a row (the word, the scale, the
    bias), 12 for a block of 4 rows': every block loads all of x, each load over 8 segments."""
    assert "64 segments of `x` against 3 a row (the word, the scale, the bias), 12 for a block" in _text(QMV)
    run, source = products.quantized, solution_source(QMV)
    segment = 128
    blocks, words_per_lane = ROWS // 4, COLS // 8 // 32
    x_moved = _moved(run, source, "xs[i] = x[")
    weights_moved = sum(_moved(run, source, text) for text in ("uint packed = w_q[", "float scale = scales[",
                                                               "float bias = biases["))
    assert x_moved == blocks * words_per_lane * 64 * segment
    assert weights_moved == blocks * words_per_lane * 12 * segment
    assert x_moved == 8 * _requested(run, source, "xs[i] = x[")  # what a cache would have kept: x again
    assert run.cost.estimate.kernel_bound == Bound.MEMORY


def test_v3_a_float32_product_reading_whole_segments_is_timed_faster_though_it_reads_32_5_the_bytes(products):
    """'A float32 product whose lanes read w and x a whole segment at a time moves less, and the
    model times it faster than this kernel, though it reads 32/5 times the weight bytes.'"""
    assert "the model times it faster than this kernel, though it reads 32/5 times the weight bytes" in _text(QMV)
    q, f = products.quantized.cost, products.float32.cost
    assert f.kernel.loads.bytes_moved < q.kernel.loads.bytes_moved
    assert f.estimate.kernel_seconds < q.estimate.kernel_seconds
    assert f.figures().load_segments.value == 1  # every load of the float product: one segment


# ----------------------------------------------------------------------------- Part V's introduction
class _Priced(KernelOps):
    """The finale's stages on the reference kernels, each launch's cost profile added up by kernel."""

    def __init__(self, kernels: DecodeKernels) -> None:
        super().__init__(kernels)
        self.seconds: collections.Counter[str] = collections.Counter()
        self.bytes_read: collections.Counter[str] = collections.Counter()

    def _stage(self, kernel, where, run, *inputs):
        got = super()._stage(kernel, where, run, *inputs)
        cost = getattr(self.kernels, kernel).kernel.last_run.cost
        self.seconds[kernel] += cost.estimate.kernel_seconds
        self.bytes_read[kernel] += cost.unique_bytes_read
        return got


def test_the_quantized_product_is_most_of_a_decode_steps_time_and_of_what_it_reads():
    """Part V's introduction: 'the product of a vector with a 4-bit quantized weight matrix (most of
    a model's time on a Mac, and most of its memory)', priced on the finale's model: a short prompt
    prefilled and two tokens decoded on the reference kernels, every launch's modelled kernel time
    and distinct bytes read; the 4-bit products are V.3's kernel and the gated MLP's (gate and up)."""
    assert "(most of a model's time on a Mac, and most of its memory)" in " ".join(part5.INTRO.split())
    ops = _Priced(dataclasses.replace(DecodeKernels.reference(), options={"cost": True}))
    generate(TinyModel.from_seed(), Prompt((5, 17, 42), generate=3), ops)
    assert ops.mismatches == []
    assert set(ops.seconds) == {"rms_norm", "rope", "quantized_matvec", "kv_cache_append", "prefill_attention",
                                "gated_mlp", "decode_attention", "sampling"}
    products = ("quantized_matvec", "gated_mlp")
    assert sum(ops.seconds[k] for k in products) > 0.8 * sum(ops.seconds.values())
    assert sum(ops.bytes_read[k] for k in products) > 0.8 * sum(ops.bytes_read.values())
