"""V.10: the gated MLP of a Llama-style layer (SwiGLU), ``silu(x @ W_gate.T) * (x @ W_up.T)``, fused in
one kernel over two 4-bit matrices in V.3's format (``mx.quantize``, groups of 64). V.3's plan with
two matrices and a block of tokens: one SIMD-group per block of ``ROWS`` rows of both matrices and
``TOKENS`` tokens; each lane reads the values of ``x`` its words multiply once, for both products and
every row, and each word of both matrices once for every token of the block; ``simd_sum``, then
lane 0 applies silu and the product. The down projection that follows is V.3's kernel.

The products run in float whatever the activations' type: the hidden tests pose ``x`` of a few units
with outliers of a few hundred (massive activations), in float32 and in half, where a sum kept in half
is off past the error model, and gate pre-activations beyond +-100, where ``exp`` overflows float32.
"""

import inspect

import mlx.core as mx

# mlx.nn's silu itself (mlx.nn.silu is this function): mypy finds no silu in mlx.nn, only in the
# module that defines it. The book's spec cell imports mlx.nn as nn (SPEC_SOURCE).
import mlx.nn.layers.activations as nn
import numpy as np

from ...checking import Budget, Case, ErrorModel, Puzzle
from ...checking.inputs import ceil_div
from ..catalogue.entry import Entry
from ..composition.closed_form import gated_mlp_condition
from .quantized_matvec import BITS, GROUP, PER_WORD

ROWS = 4  # rows of each matrix per SIMD-group, as V.3
TOKENS = 4  # tokens (rows of x) per SIMD-group: L = 1 decodes, a prompt is prefilled 4 tokens a block
LONGEST = 1024  # the longest row (K) in any test; the budget is stated with it
WORDS_PER_LANE = ceil_div(LONGEST // PER_WORD, 32)
#: Reads of one word's share: 8 values of x for each token, then for each row both matrices' word,
#: scale and bias.
READS_PER_WORD = TOKENS * PER_WORD + 6 * ROWS

HEADER = f"""\
constant uint GROUP = {GROUP};     // values sharing one scale and one bias
constant uint PER_WORD = {PER_WORD};   // 4-bit values packed in one uint32
constant uint ROWS = {ROWS};       // rows of each matrix per SIMD-group
constant uint TOKENS = {TOKENS};     // tokens (rows of x) per SIMD-group
"""


def gated_mlp_spec(x, gate_q, gate_scales, gate_biases, up_q, up_scales, up_biases):
    # out[l, n] = silu(x[l] . W_gate[n]) * (x[l] . W_up[n]), each W (N, K) as mx.quantize(W,
    # group_size=64, bits=4) stores it. MLX's quantized product takes float32 (or half): the checker's
    # float64 reference computes the two products in float32, silu and the product in float64.
    def product(w_q, scales, biases):
        x32, s32, b32 = (a.astype(mx.float32) for a in (x, scales, biases))
        return mx.quantized_matmul(x32, w_q, s32, b32, transpose=True, group_size=64, bits=4).astype(x.dtype)

    return nn.silu(product(gate_q, gate_scales, gate_biases)) * product(up_q, up_scales, up_biases)


SPEC_SOURCE = "import mlx.nn as nn\n\n\n" + inspect.getsource(gated_mlp_spec).strip()


def _case(x: np.ndarray, gate: tuple[np.ndarray, ...], up: tuple[np.ndarray, ...], label: str,
          output_dtype: str | None = None) -> Case:
    length, n = x.shape[0], gate[0].shape[0]
    return Case((x, *gate, *up), (length, n), (32, ceil_div(n, ROWS), ceil_div(length, TOKENS)), (32, 1, 1), label,
                output_dtype=output_dtype)


def quantize(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``mx.quantize(w, group_size=64, bits=4)`` as NumPy arrays: words (uint32), and scales and biases
    in w's dtype (half for half weights, as MLX gives them)."""
    w_q, scales, biases = mx.quantize(mx.array(w), group_size=GROUP, bits=BITS)
    return np.asarray(w_q), np.asarray(scales), np.asarray(biases)


#: Activations of a model's residual stream after its norm: a few units, and in a few fixed channels
#: outliers of a few hundred ("massive activations"; the half test of V.1 poses them too).
ACTIVATION_SCALE = 1.5
OUTLIERS = (50.0, 300.0)
OUTLIER_CHANNELS = 4
#: (L, K, N) of the test in half.
HALF_SHAPE = (4, 256, 32)
#: Gate weights at the outlier channel in the test that drives silu past exp's range: +-0.5 times an
#: activation of OUTLIERS[1] / 2 or more puts pre-activations beyond +-(100 - noise), where exp(g)
#: (or exp(-g)) is infinite in float32 (above 88.7).
LOUD_WEIGHT = 0.5


def _activations(rng: np.random.Generator, length: int, k: int) -> np.ndarray:
    x = rng.normal(0.0, ACTIVATION_SCALE, size=(length, k))
    channels = rng.choice(k, size=OUTLIER_CHANNELS, replace=False)  # the same channels in every token
    signs = rng.choice([-1.0, 1.0], size=(length, OUTLIER_CHANNELS))
    x[:, channels] = rng.uniform(*OUTLIERS, size=(length, OUTLIER_CHANNELS)) * signs
    return x


def _weights(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    # A trained layer's weights are about its initial scale, 1 / sqrt(K): pre-activations of a few units.
    return rng.normal(0.0, 1.0 / np.sqrt(k), size=(n, k))


def _random_case(rng: np.random.Generator, length: int, k: int, n: int, label: str,
                 dtype: type[np.floating] = np.float32) -> Case:
    x = _activations(rng, length, k).astype(dtype)
    gate, up = (quantize(_weights(rng, n, k).astype(dtype)) for _ in range(2))
    return _case(x, gate, up, label, output_dtype=None if dtype is np.float32 else np.dtype(dtype).name)


def _loud_case(rng: np.random.Generator, length: int, k: int, n: int) -> Case:
    """Gate pre-activations beyond +-100: one massive activation of 200 to 300 in every token meets gate
    weights of +-LOUD_WEIGHT there, + in even rows, - in odd ones."""
    x = _activations(rng, length, k)
    channel = int(np.argmax(np.abs(x[0])))
    x[:, channel] = rng.uniform(OUTLIERS[1] * 2 / 3, OUTLIERS[1], size=length)
    w_gate = _weights(rng, n, k)
    w_gate[:, channel] = LOUD_WEIGHT * np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    gate, up = quantize(w_gate.astype(np.float32)), quantize(_weights(rng, n, k).astype(np.float32))
    return _case(x.astype(np.float32), gate, up,
                 f"hidden test: {length} tokens of {k}, {n} rows, gate pre-activations beyond +-100")


def hidden(rng: np.random.Generator) -> list[Case]:
    cases = [_random_case(rng, length, k, n, f"hidden test: {length} tokens of {k}, {n} rows, {what}")
             for length, k, n, what in ((1, 512, 8, "one token (decode)"),
                                        (TOKENS, LONGEST, 8, "four words a lane"),
                                        (2, 256, 5, "a partial last block of rows"),
                                        (7, GROUP, 3, "fewer words than lanes, a partial last block of tokens"),
                                        (9, 512, 12, "three blocks of rows and of tokens"))]
    cases.append(_loud_case(rng, 3, 256, 6))
    # In half, as a model in half runs it: x, the scales and biases (mx.quantize of half weights) and
    # out are half. Rows of 256: a lane adds 8 products a row, and float32's bound for the sums (K
    # roundings) is tight enough that what half loses after an outlier's product shows on every seed.
    cases.append(_random_case(rng, HALF_SHAPE[0], HALF_SHAPE[1], HALF_SHAPE[2],
                              f"hidden test: {HALF_SHAPE[0]} tokens of {HALF_SHAPE[1]} in half, {HALF_SHAPE[2]} rows, "
                              f"activations with outliers of up to {OUTLIERS[1]:g}", dtype=np.float16))
    return cases


def _visible() -> Case:
    length, k, n = 5, 128, 6
    cols, rows = np.arange(k)[None, :], np.arange(n)[:, None]
    w_gate = (((3 * cols + 5 * rows) % 16 - 8) / 16 * (1 + cols // GROUP)).astype(np.float32)
    w_up = (((5 * cols + 3 * rows) % 16 - 7) / 16).astype(np.float32)
    x = ((np.arange(length * k) % 9 - 4) / 4).astype(np.float32).reshape(length, k)
    return _case(x, quantize(w_gate), quantize(w_up), "visible test")


VISIBLE = _visible()

SETUP = """\
cols, rows = mx.arange(128)[None, :], mx.arange(6)[:, None]
w_gate = ((3 * cols + 5 * rows) % 16 - 8) / 16 * (1 + cols // 64)  # (N, K) = (6, 128)
w_up = ((5 * cols + 3 * rows) % 16 - 7) / 16
gate_q, gate_scales, gate_biases = mx.quantize(w_gate, group_size=64, bits=4)  # (6, 16), (6, 2), (6, 2)
up_q, up_scales, up_biases = mx.quantize(w_up, group_size=64, bits=4)
x = ((mx.arange(640) % 9 - 4) / 4).reshape(5, 128)  # L = 5 tokens of K = 128
output_shape = (5, 6)"""

TEMPLATE = """\
uint lane = thread_index_in_simdgroup;
uint row0 = threadgroup_position_in_grid.y * ROWS;  // this SIMD-group's rows: row0 .. row0 + ROWS - 1
uint tok0 = threadgroup_position_in_grid.z * TOKENS;  // and its tokens: tok0 .. tok0 + TOKENS - 1
uint L = x_shape[0];
uint K = x_shape[1];
uint N = gate_q_shape[0];
uint WORDS = gate_q_shape[1];  // uint32 words per row: K / 8
uint GROUPS = gate_scales_shape[1];  // groups per row: K / 64
// FILL ME IN (roughly 40 lines): for each of your words, read its 8 values of x for each token of
// the block once; for each row, unpack both matrices' words and accumulate both products of every
// token in float; then simd_sum, and lane 0 writes silu(gate) * up.
"""

PUZZLE = Puzzle(
    id="gated_mlp",
    number="V.10",
    title="Gated MLP",
    kernel_name="gated_mlp",
    input_names=("x", "gate_q", "gate_scales", "gate_biases", "up_q", "up_scales", "up_biases"),
    header=HEADER,
    description=f"""\
After attention, every layer of a Llama-style model runs its **MLP**, and it is gated (SwiGLU): two
matrices of shape `(N, K)` (`N`, the hidden width, is about three times the model's width `K`)
project each token's `x` (a row of `(L, K)`), one product goes through **silu** and gates the other:

```
out[l, n] = silu(x[l] . W_gate[n]) * (x[l] . W_up[n]),      silu(g) = g * sigmoid(g) = g / (1 + exp(-g))
```

then a third matrix, `W_down` `(K, N)`, brings `out` back to width `K`. Both matrices here are 4-bit,
in V.3's format: `gate_q`, `gate_scales`, `gate_biases` are `mx.quantize(W_gate, group_size=64,
bits=4)` (and `up_*` the same of `W_up`); value `k` of a row is bits `4 * (k % 8)` to
`4 * (k % 8) + 3` of word `k / 8`, and `w = scale * q + bias` with its group's `k / 64` scale and
bias. The down projection is a 4-bit product with one matrix: V.3's kernel (once per token).

Fusing the two products in one kernel halves the reads of `x`: each value of `x` multiplies a
weight of both matrices. `L` is 1 when the model decodes a token and the prompt's length when it
**prefills**; then each weight multiplies every token, and reading a word once for a block of
tokens divides the weight traffic (most of the traffic) by the block's size. The launch has one SIMD-group
(a threadgroup of 32 threads) per block of `ROWS = {ROWS}` rows of both matrices and `TOKENS = {TOKENS}`
tokens: the grid is `(32, ceil(N / {ROWS}), ceil(L / {TOKENS}))`, `threadgroup_position_in_grid.z` the
block of tokens. In the visible test `N = 6` and `L = 5`: the second block of rows has rows 4 and 5,
the second block of tokens token 4 alone. As in V.3, lane `lane` takes the words `lane, lane + 32,
...` of every row (`K` is 64 to {LONGEST}), and for each of its words:

1. reads the 8 values of `x` the word multiplies, for each token of the block (below `L`),
   **once**, into registers, `float xs[TOKENS][PER_WORD]`: both products and all `ROWS` rows use them;
2. for each row of the block (below `N`), reads the row's word of **both** matrices and their
   group's scales and biases once, unpacks each `q`, dequantizes the two weights, and adds
   `xs[t][i] * w` to the gate's and the up's sum of every token `t`: `float` accumulators
   `gate[TOKENS][ROWS]`, `up[TOKENS][ROWS]`;

then `simd_sum` adds the 32 lanes' sums, and lane 0 writes `silu(gate) * up` for each token and row.

**silu far from 0.** A gate pre-activation `g` of +-100 is no stranger to a model with massive
activations, and one hidden test poses `g` beyond +-100. `exp(x)` is infinite in float32 above
88.7: `g * exp(g) / (1 + exp(g))` is `inf / inf`, NaN, at `g = 100`. Write `g / (1 + exp(-g))`:
at `g = 100`, `exp(-100)` is 0 (or nearly) and the result `100`; at `g = -100`, `exp(100)` is
infinite and `-100 / inf` is `-0`, a hair from the true value `-100 * e^-100 = -3.7e-42`. MLX's
`nn.silu` gives `-0` and `100` there too.

**Half precision.** Models run in half (or bfloat16): one hidden test is in `half`: `x`, `out`
and the scales and biases (`mx.quantize` of half weights gives them in half) are `half`. Read each
value into a `float` and **accumulate in `float`**, as MLX's quantized kernels do on the GPU; store
`half` only at the end (`out[...] = ...` converts). A sum kept in `half` fails: half has 11
significant bits, so once a lane's sum holds an outlier's product (an activation of a few hundred
times a weight of a few hundredths: units to tens), every product added after it is rounded to
half's spacing there, 1/128 between 8 and 16, 1/64 up to 32. The check allows float32's rounding of
the sums (`K` roundings of 2^-24 of the products' magnitudes, times how much silu and the product
amplify them) and one rounding of the output to `half` (2^-10 of it); on the test in `half`, rows of
{HALF_SHAPE[1]}, a sum kept in `half` is off by 2 to 13 times that.

**Hidden tests** pose activations of a few units (normal, deviation {ACTIVATION_SCALE:g}) with
{OUTLIER_CHANNELS} outlier channels of {OUTLIERS[0]:g} to {OUTLIERS[1]:g} in every token, weights of a trained layer's scale
(deviation `1 / sqrt(K)`) quantized by `mx.quantize`, `K` from 64 to {LONGEST} and `L` from 1 to 9;
one test drives the gate past +-100 (an activation of 200 to 300 meets gate weights of
+-{LOUD_WEIGHT:g}), one is in `half`.

**Budget**: at most {WORDS_PER_LANE * READS_PER_WORD} global reads per thread (at most {WORDS_PER_LANE} words a lane in each
row: 8 values of `x` for each of {TOKENS} tokens, and a word, a scale and a bias of both matrices for each
of the {ROWS} rows) and {TOKENS * ROWS} writes; at most {PER_WORD} memory segments per SIMD-group load. Reading
`x` again for the second product costs {WORDS_PER_LANE * (2 * TOKENS * PER_WORD + 6 * ROWS)} reads, reading the words again for
each token {WORDS_PER_LANE * TOKENS * (PER_WORD + 6 * ROWS)}.""",
    spec=gated_mlp_spec,
    spec_source=SPEC_SOURCE,
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_reads=WORDS_PER_LANE * READS_PER_WORD, global_writes=TOKENS * ROWS,
                  max_load_segments=PER_WORD),
    work=lambda case: (32, ceil_div(case.output_shape[1], ROWS), ceil_div(case.output_shape[0], TOKENS)),
    atol=1e-6,
    rtol=1e-5,
    error_model=ErrorModel.CONDITIONED,
    condition=gated_mlp_condition,  # MLX cannot vmap its quantized product: autodiff went a row at a time
)


ENTRY = Entry(PUZZLE, setup=SETUP)
