"""V.8: temperature and top-p (nucleus) sampling, then the draw, one threadgroup a row:
the softmax of the logits divided by the temperature (its maximum subtracted first: logits reach
the hundreds), a bitonic sort of the probabilities in threadgroup memory (largest first, equal
probabilities in index order), a block scan for the mass ranked above each token, the nucleus
(the tokens whose mass above is below ``top_p``) and the inverse CDF of the nucleus at the
uniform number ``u`` the host passes. Deterministic given ``u``; the spec is written from MLX's
operations (``mx.softmax``, a stable ``mx.argsort``, ``mx.cumsum``).

The error model: the output is a token index, compared exactly, with the spec evaluated in
float32 as MLX runs it. A kernel sums in another order than ``mx.cumsum``, so a draw or a top-p
cut that falls within a few roundings of a cumulative sum could go either way: the random tests
are drawn away from every such edge (``_decided``), and the two edges the text names, equal
probabilities and a cut exactly on a cumulative sum, are posed with probabilities that float32
holds exactly (quarters), where every order of summation agrees.
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, ErrorModel, Puzzle
from ...checking.inputs import randfloat
from ..catalogue.entry import Entry

TG = 64  # two SIMD-groups a row
NV = 256  # the sort's length: vocabularies are at most NV long, padded to it
PER_THREAD = NV // TG
SORT_STEPS = sum(range(1, NV.bit_length()))  # a bitonic sort of NV = 2^8 elements: 8 * 9 / 2 steps
BARRIERS = SORT_STEPS + 4  # the maximum, the probabilities written, the scan, the nucleus's mass
#: How far (relative, in probability) a random test's cut and draw may move without changing its token.
MARGIN = 1e-4

HEADER = f"""\
constant uint TG = {TG};
constant uint SIMD_GROUPS = TG / 32;
constant uint NV = {NV};  // the sort's length: vocabularies are at most {NV}, padded
constant uint PER_THREAD = NV / TG;
"""


def sample_spec(logits, u, temperature, top_p):
    # One token per row, drawn from the top-p nucleus of softmax(logits / temperature) at u.
    probs = mx.softmax(logits / temperature, axis=-1)
    order = mx.argsort(-logits, axis=-1)  # largest first; MLX's sort is stable: ties in index order
    p = mx.take_along_axis(probs, order, axis=-1)
    above = mx.cumsum(p, axis=-1, inclusive=False)  # the mass ranked above each token
    nucleus = mx.where(above < top_p, p, 0.0)  # the tokens until top_p is reached
    cdf = mx.cumsum(nucleus, axis=-1)
    pick = (cdf <= u[:, None] * cdf[:, -1:]).sum(axis=-1)  # the inverse CDF at u
    return mx.take_along_axis(order, pick[:, None], axis=-1)[:, 0]


SPEC_SOURCE = inspect.getsource(sample_spec).strip()


def _case(logits: np.ndarray, u: np.ndarray, temperature: float, top_p: float, label: str) -> Case:
    rows = logits.shape[0]
    return Case((logits, u.astype(np.float32), np.asarray(temperature, dtype=np.float32),
                 np.asarray(top_p, dtype=np.float32)), (rows,), (TG, rows, 1), (TG, 1, 1), label)


def _decided(logits: np.ndarray, u: float, temperature: float, top_p: float) -> bool:
    """Whether the row's draw (in float64) stays the same token when the top-p cut and the draw's
    target move by MARGIN either way: then any float32 order of summation draws the spec's token."""
    s = logits.astype(np.float64) / temperature
    p = np.exp(s - s.max())
    p = np.sort(p / p.sum())[::-1]
    above = np.cumsum(p) - p

    def drawn(cut: float, share: float) -> int:
        cdf = np.cumsum(np.where(above < cut, p, 0.0))
        return int(np.sum(cdf <= share * cdf[-1]))

    token = drawn(top_p, u)
    return all(drawn(cut, share) == token for cut in (top_p - MARGIN, top_p + MARGIN)
               for share in (u * (1 - MARGIN), u * (1 + MARGIN)))


def _draw(rng: np.random.Generator, rows: int, n: int, centre: float, spread: float, temperature: float,
          top_p: float) -> tuple[np.ndarray, np.ndarray]:
    """Logits around ``centre`` on a grid of quarters, and u, redrawn until every row is decided."""
    logits = np.empty((rows, n), np.float32)
    u = np.empty(rows, np.float32)
    for r in range(rows):
        while True:
            logits[r] = centre + randfloat(rng, n, -spread, spread)
            u[r] = np.float32(rng.uniform(0.001, 0.99))
            if _decided(logits[r], float(u[r]), temperature, top_p):
                break
    return logits, u


def _ties(rng: np.random.Generator, rows: int, n: int, ties: int, top: float) -> np.ndarray:
    """Rows with ``ties`` equal largest logits at ``top`` and the rest at least 150 lower: each of
    the tied tokens has probability exactly 1 / ties in float32 (the others' exp underflows to 0)."""
    logits = top - 150.0 - randfloat(rng, (rows, n), 0, 64)
    for r in range(rows):
        logits[r, rng.choice(n, size=ties, replace=False)] = top
    return logits.astype(np.float32)


def hidden(rng: np.random.Generator) -> list[Case]:
    cases = []
    for rows, n, centre, spread, temperature, top_p, what in (
            (3, NV, 300.0, 8.0, 0.7, 0.9, "the longest rows, logits near 300"),
            (2, 37, 150.0, 4.0, 1.3, 0.95, "rows shorter than the threadgroup"),
            (2, 200, -350.0, 6.0, 0.8, 1.0, "negative logits, top_p = 1: the whole softmax"),
            (2, 130, 200.0, 16.0, 0.5, 0.3, "a peaked softmax and a small nucleus")):
        logits, u = _draw(rng, rows, n, centre, spread, temperature, top_p)
        cases.append(_case(logits, u, temperature, top_p, f"hidden test: {rows} rows of {n}, {what}"))
    # Four equal largest logits, 0.25 each exactly; top_p = 0.75 lies exactly on the cumulative sum
    # of three: the nucleus is the first three tied tokens in index order, the fourth is out.
    ties = _ties(rng, 3, 100, 4, 400.0)
    u = np.array([0.1, 0.5, 0.9], np.float32)  # draws 1/3 of the way apart: the first, second, third
    cases.append(_case(ties, u, 0.9, 0.75, "hidden test: 3 rows of 100 with four tied largest logits, "
                                            "top_p exactly on a cumulative sum"))
    return cases


def _visible() -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(48)
    logits = np.empty((2, 24), np.float32)
    logits[0] = 100.0 + (k[:24] * 7 % 12)  # 100 to 111: after the four tied 300s, nothing
    logits[0, [3, 7, 11, 19]] = 300.0  # four equal largest logits: 0.25 each
    logits[1] = 200.0 + (k[24:] * 5 % 16) / 4 - 2  # 198 to 201.75: a spread softmax
    return logits, np.array([0.75, 0.3], np.float32)


_LOGITS, _U = _visible()
VISIBLE = _case(_LOGITS, _U, 0.5, 0.5, "visible test")

SETUP = """\
k = mx.arange(48)
row0 = 100.0 + (k[:24] * 7 % 12)
row0 = mx.where((k[:24] == 3) | (k[:24] == 7) | (k[:24] == 11) | (k[:24] == 19), 300.0, row0)
row1 = 200.0 + (k[24:] * 5 % 16) / 4 - 2
logits = mx.stack([row0, row1]).astype(mx.float32)  # (R, V): row 0 has four tied largest logits
u = mx.array([0.75, 0.3], dtype=mx.float32)  # the host's uniform number, one a row
temperature = mx.array(0.5, dtype=mx.float32)
top_p = mx.array(0.5, dtype=mx.float32)
output_shape = (2,)"""

TEMPLATE = """\
threadgroup float probs[NV];
threadgroup uint ids[NV];
threadgroup float maxes[SIMD_GROUPS];
threadgroup float sums[SIMD_GROUPS];
threadgroup float nucleus[SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint V = logits_shape[1];
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
// FILL ME IN (roughly 70 lines): your logits / temperature and the row's maximum; exp(s - max)
// with its token into probs and ids (padding sorts last); the bitonic sort; the scan of your
// PER_THREAD sorted probabilities; the nucleus's mass; the token whose interval holds u's share.
"""

PUZZLE = Puzzle(
    id="sampling",
    number="V.8",
    title="Top-p Sampling",
    kernel_name="sampling",
    input_names=("logits", "u", "temperature", "top_p"),
    output_dtype="uint32",
    header=HEADER,
    description=f"""\
Greedy decoding (V.5) always writes the likeliest token; chat models **sample** instead, as
mlx-lm's sampler does with a temperature and top-p. For each row of `logits` (shape `(R, V)`,
`V` up to {NV}):

1. **temperature**: `s = logits / temperature`, and `p = softmax(s)`. A temperature below 1
   sharpens the distribution, above 1 flattens it. Logits reach the hundreds (these tests pose
   -356 to 400): `exp(300)` is infinite in float32, so subtract the row's maximum first, as
   every softmax must (without it the total is infinite, every comparison with `inf - inf`,
   NaN, is false, and no thread draws a token: the sanitizer reports the output unwritten);
2. **top-p (nucleus)**: rank the tokens by probability, largest first, **equal probabilities in
   index order** (MLX's `argsort` is stable). A token is in the nucleus when the mass ranked
   above it is **below** `top_p`: the nucleus is the fewest leading tokens whose mass reaches
   `top_p`. In the visible test row 0 has four tied logits of 300, each of probability exactly
   `1/4`, and `top_p = 0.5`: tokens 3 and 7 are in (mass above: 0 and 0.25); token 11 is out,
   its mass above is exactly 0.5, not below;
3. **the draw**: the host passes a uniform number `u[r]` in `[0, 1)`. Going down the ranking,
   the nucleus's cumulative probability `cdf` rises to its total `P`; the token drawn is the
   first whose `cdf` exceeds `u * P` (the inverse CDF). Row 0 with `u = 0.75` draws token 7:
   `0.75 * 0.5 = 0.375` lies in token 7's interval `[0.25, 0.5)`.

The kernel is deterministic given `u`, so the test can hold it to MLX's answer.

One threadgroup of `TG = {TG}` threads per row (grid `({TG}, R, 1)`):

1. thread `j` reads its logits `j, j + {TG}, ...` once, divides by `temperature`, and the row's
   maximum comes from `simd_max` and the `maxes` slots behind a barrier; it writes `exp(s - max)`
   to `probs[k]` and `k` to `ids[k]` (`probs = -1` past the row: padding sorts last);
2. a **bitonic sort** of the `NV = {NV}` pairs, largest probability first, ties by the smaller
   token: for `size = 2, 4, ..., NV` and `stride = size / 2, ..., 1`, thread `j` compares and
   perhaps swaps pairs `t = j, j + {TG}` (of `NV / 2`): `a = 2 * stride * (t / stride) + t %
   stride`, `b = a + stride`, with `a` first where `(a & size) == 0` and `b` first elsewhere; a
   barrier after each of the {SORT_STEPS} steps;
3. thread `j` owns sorted positions `{PER_THREAD} j` to `{PER_THREAD} j + {PER_THREAD - 1}`: a running sum over
   them, `simd_prefix_exclusive_sum` and the SIMD-groups' totals in `sums` (one barrier) give the
   mass above each position and the row's total `S` (probabilities are `exp(s - max) / S`, so
   compare with `top_p * S` and never divide);
4. the nucleus's mass `P`: `simd_sum` of your positions in it, the `nucleus` slots, one barrier;
5. the position whose interval `[above, above + p)` holds `u[r] * P` writes `out[r] = ids[...]`.

**Budget**: each logit read once ({PER_THREAD} reads), plus `temperature`, `top_p` and `u[r]` once
each: {PER_THREAD + 3} global reads per thread, one write, and {BARRIERS} barriers per threadgroup
({SORT_STEPS} for the sort, one each for the maximum, the probabilities written, the scan and the
nucleus's mass).""",
    spec=sample_spec,
    spec_source=SPEC_SOURCE,
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_reads=PER_THREAD + 3, global_writes=1, max_barriers=BARRIERS),
    work=lambda case: (TG, case.output_shape[0]),
    atol=0.0,
    rtol=0.0,
    error_model=ErrorModel.FIXED,
)


ENTRY = Entry(PUZZLE, setup=SETUP)
