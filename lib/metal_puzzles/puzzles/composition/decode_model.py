"""Part V's finale: a tiny Llama-style transformer prefills a prompt, then decodes and samples a few
tokens, on Part V's kernels, checked against the same model written with MLX operations (the entry
is ``puzzles.part5.decode_step``).

The model (``TinyModel.from_seed``): two layers, model width 128, four query heads sharing two
key/value heads of 32 dimensions (two query heads a key/value head), an MLP of width 256 with SiLU
gating, a vocabulary of 96; every matrix quantized with ``mx.quantize`` (groups of 64, 4 bits).

A prompt (``Prompt``) is generated as mlx-lm generates: its tokens are *prefilled* in one pass (every
layer runs on all of them at once, attention causal over the cache), each layer's keys and values
appended to its preallocated cache (MLX's layout, ``(2, 1, KV, T_max, D)``: keys then values); the
last token's logits give the first new token, drawn by top-p sampling at a uniform number from a
fixed seed; each new token is then *decoded* (one token through every layer, attention over the
whole cache) and the next one sampled. A prompt may follow a conversation already in the cache
(``cached`` tokens, prefilled at once with MLX's model before the check, as mlx-lm's prompt cache
keeps them), so that the prompt is prefilled at an offset in the thousands.

The model poses the magnitudes real models reach, where naive numerics fail: embeddings of about
0.02 (as Llama's), so the first norm's mean square is about 4e-4 and its EPS counts; one sharp
query head a layer, whose scores reach the hundreds, where an attention that never subtracts its
maximum overflows; positions past 2048, where a position rounded to half is off; a loud gate row in
layer 0's MLP, whose pre-activations pass 100 (massive activations), where exp overflows; two
tokens with the same head row, whose logits tie bit for bit; and a cool prompt, sampled at a low
temperature (logits / T past 100, where a softmax that never subtracts its maximum overflows) whose
first draw is between the two tied tokens alone, each of probability exactly 1/2, with top-p
exactly 1/2: there V.8's rules for ties and for the cut decide the token, and a sampler that breaks
either draws the other.

``generate`` runs the model on ``MlxOps`` (MLX's own operations: the reference) or on
``KernelOps`` (the kernels, ``DecodeKernels``), which compares every kernel's output with its
puzzle's spec on the same input, within that puzzle's error model (``checking.tolerance``): a
failing kernel is named with the phase (prefill or decode), the layer, the first token it is off
at and how far off. ``generate_outcome`` also compares each sampled token and its logits with
the reference model's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import mlx.core as mx
import numpy as np

from ...checking import Case, CaseStatus, Outcome, Puzzle, progress
from ...checking.launch import KernelLike
from ...checking.tolerance import Condition, ErrorModel, compare_conditioned, compare_with_spec
from ...checking.verdict import classify
from ...msl import SanitizerError
from ..catalogue.solution_files import solution_file
from ..part5 import (
    decode_attention,
    gated_mlp,
    kv_cache_append,
    prefill_attention,
    quantized_matvec,
    rms_norm,
    rope,
    sampling,
)
from ..part5.rms_norm import EPS
from . import launchers
from .closed_form import (
    attention_condition,
    decode_attention_condition,
    gated_mlp_condition,
    rms_norm_condition,
)

LAYERS = 2
WIDTH = 128
HEADS = 4
KV_HEADS = 2
HEAD_DIM = 32
HIDDEN = 256
VOCAB = 96
GROUP = 64
BITS = 4
#: The weights' seed: the same model for every learner and check, chosen so that each sampled
#: token is decided by far more than the logits' allowed error (tests/puzzles/part5/test_decode_step.py).
SEED = 62
#: The embeddings' standard deviation: Llama's are about 0.02, so the first norm of a layer sees a
#: mean square near 4e-4, where RMSNorm's EPS (1e-5) moves every output by some percent.
EMBEDDING_STD = 0.02
#: Query head 0 of every layer is sharp: its query weights this many times larger, its scores
#: in the hundreds (as real attention's reach), where exp(s) overflows float32 (above 88.7).
SHARP_HEAD_SCALE = 100.0
#: Gate row 0 of layer 0's MLP is loud: its weights this many times larger, so that its
#: pre-activations pass 100 on some tokens of every prompt, as the early-layer MLP products behind a
#: real model's massive activations do (V.10's hidden tests pose the same magnitudes: activations of
#: 50 to 300, pre-activations past +-100). There exp(g) overflows float32 (above 88.7): silu written
#: as g exp(g) / (1 + exp(g)) is inf / inf. Layer 0 only: the product it adds to the residual stream
#: (a massive activation) keeps the logits' rounding within a few 1e-5 of MLX's; in both layers
#: it would make the later layer's inputs, and so the logits' error, larger by an order.
LOUD_GATE_SCALE = 50.0
#: Two tokens whose head rows are the same, so that their logits tie bit for bit at every step (any
#: kernel computes two equal rows' products alike): a vocabulary's duplicated tokens (and the
#: untrained reserved ones, as in Llama 3's) hold identical rows. The second is given the first's
#: row; the first is the token the cool prompt's prefill prefers (COOL below), the second its
#: runner-up, so that the two stand together far above the rest.
TIED_TOKENS = (57, 74)
#: mlx-lm's KVCache grows its preallocated buffers by this many positions: T_max is the tokens a
#: prompt's generation writes, rounded up to it.
CACHE_STEP = 256
#: The fewest tokens a prompt prefills on the kernels (the issue's realistic length).
PROMPT_LENGTH = 32


class Phase(str, Enum):
    """Which pass of generation a stage runs in."""

    PREFILL = "prefill"
    DECODE = "decode"


@dataclass(frozen=True)
class Prompt:
    """A prompt the check generates from: ``tokens`` is the whole context, of which the first
    ``cached`` are already in the cache (a conversation so far, prefilled with MLX's model before
    the check) and the rest are the prompt, prefilled on the kernels; then ``generate`` tokens are
    sampled (temperature, top-p, a uniform number each from ``seed``), all but the last decoded."""

    tokens: tuple[int, ...]
    cached: int = 0
    generate: int = 4
    seed: int = 0
    temperature: float = 0.8
    top_p: float = 0.9

    @property
    def prompt(self) -> tuple[int, ...]:
        """The tokens prefilled on the kernels."""
        return self.tokens[self.cached:]

    @property
    def t_max(self) -> int:
        """The cache's preallocated positions: every token written, rounded up to ``CACHE_STEP``."""
        written = len(self.tokens) + self.generate - 1
        return -(-written // CACHE_STEP) * CACHE_STEP

    def uniforms(self) -> np.ndarray:
        """The sampler's uniform numbers, one a sampled token, from the prompt's seed."""
        return np.random.default_rng(self.seed).random(self.generate).astype(np.float32)

    def describe(self) -> str:
        start, end = self.cached, len(self.tokens)
        where = ("" if not self.cached else
                 f" after {self.cached} tokens of conversation already in the cache")
        return (f"a prompt of {end - start} tokens prefilled at positions {start} to {end - 1}{where}, then "
                f"{self.generate} tokens sampled (temperature {self.temperature:g}, top-p {self.top_p:g}) and "
                f"decoded at positions {end} to {end + self.generate - 2}")


def _tokens(seed: int, n: int) -> tuple[int, ...]:
    return tuple(int(t) for t in np.random.default_rng(seed).integers(0, VOCAB, size=n))


#: Where the long conversation's prompt starts: past 2048, where a position rounded to half is off
#: by one (2049 is not a half), with a cache of thousands of keys behind it.
LONG_OFFSET = 2064
#: The cool prompt: sampled at a temperature as low as models are run for answers that must be right
#: (mlx-lm's default is 0, greedy). This model's logits are of a few units where a trained model's
#: reach tens, so 0.04 here divides them as 0.2 does a real model's: logits / T near 100, where exp
#: overflows float32 unless the maximum is subtracted. Its prefill's two likeliest tokens are
#: TIED_TOKENS, tied bit for bit and more than 45 units of logits / T above every other token, whose
#: probabilities vanish beside theirs in float32: each of the two has probability exactly 1/2. A
#: top-p of exactly 1/2 then lies exactly on the cumulative sum after the first: the nucleus is the
#: first of the two by index alone (ties in index order, the mass above below top-p: V.8's rules),
#: and the draw's u (0.80) falls in the second's interval when either rule is broken. Its later
#: draws are decided by far more than the logits' error (tests/puzzles/part5/test_decode_step.py).
COOL = Prompt(_tokens(1979, PROMPT_LENGTH), seed=146, temperature=0.04, top_p=0.5)
#: Prompts the check generates from: a prompt of 32 tokens from the start of the cache, one of 32
#: after a conversation of LONG_OFFSET tokens, sampled cooler and with a narrower nucleus, and the
#: cool one. The uniform numbers' seeds are chosen so that each draw is decided by far more than the
#: reference kernels' logits error, or (the cool prompt's tie) by V.8's rules alone
#: (tests/puzzles/part5/test_decode_step.py). Kept to seconds on the simulator
#: (benchmarks/bench_decode_step.py).
PROMPTS: tuple[Prompt, ...] = (
    Prompt(_tokens(32, PROMPT_LENGTH), seed=34, temperature=0.8, top_p=0.9),
    Prompt(_tokens(LONG_OFFSET, LONG_OFFSET + PROMPT_LENGTH), cached=LONG_OFFSET, seed=3, temperature=0.7,
           top_p=0.3),
    COOL)
#: How far a step's logits may end from the reference model's, relative to their largest value.
LOGITS_RTOL = 1e-3


@dataclass(frozen=True)
class Quantized:
    """A matrix as ``mx.quantize`` stores it."""

    w_q: mx.array
    scales: mx.array
    biases: mx.array

    @classmethod
    def of(cls, w: np.ndarray) -> Quantized:
        return cls(*mx.quantize(mx.array(w), group_size=GROUP, bits=BITS))

    def matmul(self, x: mx.array) -> mx.array:
        """x @ W.T for rows x (..., K)."""
        return mx.quantized_matmul(x, self.w_q, self.scales, self.biases, transpose=True, group_size=GROUP,
                                   bits=BITS)


@dataclass(frozen=True)
class Layer:
    attention_norm: mx.array
    wq: Quantized
    wk: Quantized
    wv: Quantized
    wo: Quantized
    mlp_norm: mx.array
    gate: Quantized
    up: Quantized
    down: Quantized


@dataclass(frozen=True)
class TinyModel:
    embedding: mx.array  # (VOCAB, WIDTH)
    layers: tuple[Layer, ...]
    final_norm: mx.array
    head: Quantized  # (VOCAB, WIDTH)

    @classmethod
    def from_seed(cls, seed: int = SEED) -> TinyModel:
        """Random weights, scaled so that activations stay of order one through both layers."""
        rng = np.random.default_rng(seed)

        def matrix(rows: int, cols: int, loud_rows: int = 0, loudness: float = 1.0) -> Quantized:
            w = rng.standard_normal((rows, cols)) / np.sqrt(cols)
            w[:loud_rows] *= loudness  # after the draw: every other weight is the seed's, loud or not
            return Quantized.of(w.astype(np.float32))

        def head() -> Quantized:
            w = rng.standard_normal((VOCAB, WIDTH)) / np.sqrt(WIDTH)
            kept, duplicate = TIED_TOKENS
            w[duplicate] = w[kept]  # the same quantized row: the same logit, bit for bit, on any kernel
            return Quantized.of(w.astype(np.float32))

        def norm() -> mx.array:
            return mx.array((1 + 0.1 * rng.standard_normal(WIDTH)).astype(np.float32))

        layers = tuple(Layer(norm(), matrix(HEADS * HEAD_DIM, WIDTH, HEAD_DIM, SHARP_HEAD_SCALE),
                             matrix(KV_HEADS * HEAD_DIM, WIDTH), matrix(KV_HEADS * HEAD_DIM, WIDTH),
                             matrix(WIDTH, HEADS * HEAD_DIM), norm(), matrix(HIDDEN, WIDTH, 1, LOUD_GATE_SCALE if n == 0 else 1.0),
                             matrix(HIDDEN, WIDTH), matrix(WIDTH, HIDDEN))
                       for n in range(LAYERS))
        embedding = mx.array((EMBEDDING_STD * rng.standard_normal((VOCAB, WIDTH))).astype(np.float32))
        return cls(embedding, layers, norm(), head())


@dataclass(frozen=True)
class DecodeKernels:
    """The kernels generation runs (MetalKernels, or notebook test functions returning one), named
    as their puzzles' kernels, and the options every launch takes (``max_steps``...)."""

    rms_norm: KernelLike
    rope: KernelLike  # the halves layout (traditional=False), as Llama's weights expect
    quantized_matvec: KernelLike
    kv_cache_append: KernelLike
    prefill_attention: KernelLike
    gated_mlp: KernelLike
    decode_attention: KernelLike
    sampling: KernelLike
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def reference(cls) -> DecodeKernels:
        return cls.wire({name: STAGE_PUZZLES[name].kernel(solution_file(SOLUTIONS[name]).read_text(encoding="utf-8"))
                         for name in STAGE_ORDER})

    @classmethod
    def wire(cls, kernels: Mapping[str, KernelLike], **options: Any) -> DecodeKernels:
        """The reference wiring: the kernels by their puzzles' kernel names (how the grader hands
        over the ones it read from a notebook), which are this class's field names."""
        return cls(**{name: kernels[name] for name in STAGE_ORDER}, options=options)


#: The puzzle of each stage's kernel, by kernel name (the fields of ``DecodeKernels``), in the
#: order a layer first runs them.
STAGE_PUZZLES: dict[str, Puzzle] = {p.kernel_name: p for p in (
    rms_norm.PUZZLE, rope.HALVES, quantized_matvec.PUZZLE, kv_cache_append.PUZZLE,
    prefill_attention.PUZZLE, gated_mlp.PUZZLE, decode_attention.PUZZLE, sampling.PUZZLE)}
STAGE_ORDER = tuple(STAGE_PUZZLES)
#: Their reference solutions (the catalogue's entries name the same files; the catalogue itself
#: lists this module's finale, so it is not imported here).
SOLUTIONS = {"rms_norm": rms_norm.ENTRY.solution, "rope": rope.HALVES_ENTRY.solution,
             "quantized_matvec": quantized_matvec.ENTRY.solution,
             "kv_cache_append": kv_cache_append.ENTRY.solution,
             "prefill_attention": prefill_attention.ENTRY.solution, "gated_mlp": gated_mlp.ENTRY.solution,
             "decode_attention": decode_attention.ENTRY.solution, "sampling": sampling.ENTRY.solution}


def stage_name(kernel_name: str) -> str:
    """'your RMSNorm kernel (V.1)': a stage as the learner knows it."""
    p = STAGE_PUZZLES[kernel_name]
    return f"your {p.title} kernel ({p.number})"


@dataclass(frozen=True)
class Where:
    """Where in generation a stage runs: its phase, layer (None past the layers), the positions of
    the tokens it works on, and what it computes there ('queries', 'MLP norm'...)."""

    phase: Phase
    layer: int | None
    positions: range
    what: str = ""

    def at(self, position: int | None = None) -> str:
        """'the prefill, layer 0, token 2070 (keys)': at one of its tokens, or (None) at all of them."""
        layer = "" if self.layer is None else f", layer {self.layer}"
        if position is not None or len(self.positions) == 1:
            tokens = f"token {self.positions[0] if position is None else position}"
        else:
            tokens = f"tokens {self.positions[0]} to {self.positions[-1]}"
        what = f" ({self.what})" if self.what else ""
        return f"the {self.phase.value}{layer}, {tokens}{what}"

    def about(self, what: str) -> Where:
        return Where(self.phase, self.layer, self.positions, what)


# ----------------------------------------------------------------------------- the two ways to run a stage
def _causal_mask(length: int, keys: int) -> mx.array:
    """Query i (at position keys - length + i) sees keys 0 to keys - length + i: MLX's explicit
    boolean mask where the queries are the last ``length`` of ``keys`` (mask="causal" when equal)."""
    return mx.arange(keys)[None, :] <= (keys - length + mx.arange(length))[:, None]


class MlxOps:
    """Every stage as MLX's own operation: the reference model."""

    def rms_norm(self, x: mx.array, w: mx.array, where: Where) -> mx.array:
        return mx.fast.rms_norm(x, w, EPS)

    def rope(self, x: mx.array, offset: int, where: Where) -> mx.array:
        return mx.fast.rope(x, HEAD_DIM, traditional=False, base=10000.0, scale=1.0, offset=offset)

    def matmul(self, m: Quantized, x: mx.array, where: Where) -> mx.array:
        return m.matmul(x)

    def append(self, cache: mx.array, k: mx.array, v: mx.array, offset: int, where: Where) -> mx.array:
        cache = mx.array(cache)  # a copy: the caller's cache stays as it was
        cache[0, 0, :, offset:offset + k.shape[1], :] = k  # MLX's slice update, as mlx-lm's KVCache
        cache[1, 0, :, offset:offset + v.shape[1], :] = v
        return cache

    def prefill_attention(self, q: mx.array, k: mx.array, v: mx.array, where: Where) -> mx.array:
        mask = _causal_mask(q.shape[1], k.shape[1])
        return mx.fast.scaled_dot_product_attention(q[None], k[None], v[None], scale=HEAD_DIM**-0.5, mask=mask)[0]

    def gated_mlp(self, x: mx.array, layer: Layer, where: Where) -> mx.array:
        gate = layer.gate.matmul(x)
        return gate * mx.sigmoid(gate) * layer.up.matmul(x)

    def decode_attention(self, q: mx.array, k: mx.array, v: mx.array, where: Where) -> mx.array:
        out = mx.fast.scaled_dot_product_attention(q[None, :, None, :], k[None], v[None], scale=HEAD_DIM**-0.5)
        return out.reshape(q.shape)

    def sample(self, logits: mx.array, u: float, temperature: float, top_p: float, where: Where) -> int:
        token = sampling.sample_spec(logits[None], mx.array([u], dtype=mx.float32),
                                         mx.array(temperature, dtype=mx.float32), mx.array(top_p, dtype=mx.float32))
        return int(np.asarray(token)[0])


#: Each stage's output axis that runs over the tokens (None: one token, as decode attention's).
TOKEN_AXIS = {"rms_norm": 0, "rope": 1, "quantized_matvec": None, "kv_cache_append": 3, "prefill_attention": 1,
              "gated_mlp": 0, "decode_attention": None, "sampling": None}


#: The stages whose conditioned error model the finale computes in closed form (closed_form): a
#: prefill's thousands of outputs, and attention over thousands of cached keys, whose Jacobians by
#: autodiff would take minutes.
CLOSED_FORM: dict[str, Condition] = {"rms_norm": rms_norm_condition, "prefill_attention": attention_condition,
                                     "gated_mlp": gated_mlp_condition, "decode_attention": decode_attention_condition}


@dataclass(frozen=True)
class StageMismatch:
    """A stage whose kernel output is not its puzzle's spec on the same input, within the
    puzzle's error model."""

    kernel: str  # the kernel's name (a field of DecodeKernels)
    where: str  # phase, layer, the first token off, what
    wrong: int  # values beyond the error allowed
    size: int
    error: float  # largest |kernel - spec| over the finite values
    scale: float  # largest |spec|
    #: Values the kernel wrote as NaN or infinity where the spec's are finite (an exp that
    #: overflowed, a division by zero).
    nonfinite: int = 0
    #: The stage's puzzle's own diagnosis of the output, where it has one (``Puzzle.diagnose``:
    #: which query of a prefill attended to which key).
    cause: str | None = None

    def sentence(self) -> str:
        how = (f"{self.nonfinite} of them NaN or infinite where the spec's are finite" if self.nonfinite else
               f"the largest off by {self.error:.3g}")
        cause = f". {self.cause}" if self.cause else ""
        return (f"{stage_name(self.kernel)} is off in {self.where}: {self.wrong} of {self.size} values beyond the "
                f"error its puzzle allows, {how} (the values reach {self.scale:.3g}){cause}")


class StageFailed(Exception):
    """A stage's kernel did not compile or run (or the sanitizer stopped it): which, and where."""

    def __init__(self, kernel: str, where: str, cause: BaseException) -> None:
        super().__init__(f"{stage_name(kernel)} in {where}: {cause}")
        self.kernel, self.where, self.cause = kernel, where, cause


class _FirstMismatch(Exception):
    """Generation stops at the first stage off: the verdict names it, and a wrong kernel's check
    does not run the rest of the model for nothing."""


@dataclass
class KernelOps(MlxOps):
    """Every stage with a kernel, each output compared with its puzzle's spec on the same input."""

    kernels: DecodeKernels
    mismatches: list[StageMismatch] = field(default_factory=list)

    def _stage(self, kernel: str, where: Where, run: Callable[..., mx.array], *inputs: mx.array) -> mx.array:
        progress.now_at(f"{stage_name(kernel)} '{kernel}' in {where.at()}")  # what a time limit's verdict names
        try:
            got = run(getattr(self.kernels, kernel), *inputs, **_launch_options(self.kernels.options, kernel, inputs))
            mx.eval(got)
        except Exception as exc:  # the learner's kernel may fail in any way: say which stage
            raise StageFailed(kernel, where.at(), exc) from exc
        p = STAGE_PUZZLES[kernel]
        arrays = tuple(np.asarray(x) for x in inputs)
        condition = CLOSED_FORM.get(kernel)
        if condition is not None and p.error_model is ErrorModel.CONDITIONED and p.allowance is None:
            want = compare_conditioned(p.spec, arrays, tuple(got.shape), p.atol, p.rtol, condition)
        else:
            want = compare_with_spec(p.spec, arrays, tuple(got.shape), p.error_model, p.atol, p.rtol, p.allowance)
        yours = np.asarray(got)
        wrong = want.mismatch(yours)
        if wrong.any():
            with np.errstate(invalid="ignore"):
                error = np.abs(yours.astype(np.float64) - want.expected)
            nonfinite = wrong & ~np.isfinite(yours) & np.isfinite(want.expected)
            finite_error = np.where(wrong & np.isfinite(error), error, 0.0)
            cause = None if p.diagnose is None else p.diagnose(
                Case(arrays, tuple(got.shape), (1, 1, 1), (1, 1, 1), where.at()), yours)
            self.mismatches.append(StageMismatch(kernel, where.at(_first_position(wrong, kernel, where)),
                                                 int(wrong.sum()), wrong.size, float(np.max(finite_error, initial=0.0)),
                                                 float(np.max(np.abs(want.expected), initial=0.0)),
                                                 int(nonfinite.sum()), cause))
            raise _FirstMismatch
        return got

    def rms_norm(self, x: mx.array, w: mx.array, where: Where) -> mx.array:
        return self._stage("rms_norm", where, launchers.run_rms_norm, x, w)

    def rope(self, x: mx.array, offset: int, where: Where) -> mx.array:
        return self._stage("rope", where, launchers.run_rope, x, mx.array(offset, dtype=mx.int32))

    def matmul(self, m: Quantized, x: mx.array, where: Where) -> mx.array:
        # V.3's kernel multiplies one vector: a prefill launches it once a token, as a decode step does.
        rows = [self._stage("quantized_matvec", _row(where, n), launchers.run_quantized_matvec, row, m.w_q, m.scales,
                            m.biases) for n, row in enumerate(x)]
        return mx.stack(rows)

    def append(self, cache: mx.array, k: mx.array, v: mx.array, offset: int, where: Where) -> mx.array:
        # The kernel's output is a fresh buffer of zeros but for the step's slots (a GPU kernel would
        # write into the cache itself): added to the cache, whose slots from the offset on are zeros.
        step = self._stage("kv_cache_append", where, launchers.run_kv_cache_append, k[None], v[None],
                           mx.array(offset, dtype=mx.int32), mx.array(cache.shape[3], dtype=mx.int32))
        return cache + step

    def prefill_attention(self, q: mx.array, k: mx.array, v: mx.array, where: Where) -> mx.array:
        return self._stage("prefill_attention", where, launchers.run_prefill_attention, q, k, v)

    def gated_mlp(self, x: mx.array, layer: Layer, where: Where) -> mx.array:
        g, u = layer.gate, layer.up
        return self._stage("gated_mlp", where, launchers.run_gated_mlp, x, g.w_q, g.scales, g.biases, u.w_q, u.scales,
                           u.biases)

    def decode_attention(self, q: mx.array, k: mx.array, v: mx.array, where: Where) -> mx.array:
        return self._stage("decode_attention", where, launchers.run_decode_attention, q, k, v)

    def sample(self, logits: mx.array, u: float, temperature: float, top_p: float, where: Where) -> int:
        token = self._stage("sampling", where, launchers.run_sampling, logits[None], mx.array([u], dtype=mx.float32),
                            mx.array(temperature, dtype=mx.float32), mx.array(top_p, dtype=mx.float32))
        return int(np.asarray(token)[0])


#: The attention stages: their loops run over the cache's keys, thousands of them here.
OVER_THE_CACHE = ("prefill_attention", "decode_attention")


def _launch_options(options: Mapping[str, Any], kernel: str, inputs: Sequence[mx.array]) -> Mapping[str, Any]:
    """A launch's options: an attention over T keys gets the step budget (``max_steps``, the grader's
    guard against endless loops, sized for its puzzles' tests) once for every CACHE_STEP keys, as
    its loops are longer by as much; every other launch gets it as given."""
    budget = options.get("max_steps")
    if kernel not in OVER_THE_CACHE or budget is None:
        return options
    return {**options, "max_steps": int(budget) * -(-inputs[1].shape[1] // CACHE_STEP)}


def _row(where: Where, n: int) -> Where:
    """The stage of one token's row of a product."""
    return Where(where.phase, where.layer, range(where.positions[n], where.positions[n] + 1), where.what)


def _first_position(wrong: np.ndarray, kernel: str, where: Where) -> int | None:
    """The position of the first token whose output is off, when the stage's output has a token axis."""
    axis = TOKEN_AXIS[kernel]
    if axis is None or len(where.positions) == 1:
        return None
    per_token = wrong.any(axis=tuple(a for a in range(wrong.ndim) if a != axis))
    first = int(np.argmax(per_token))
    if kernel == "kv_cache_append":  # its token axis is the cache's positions, not the step's tokens
        return first
    return where.positions[first]


# ----------------------------------------------------------------------------- the model
def _layer(ops: MlxOps, layer: Layer, h: mx.array, cache: mx.array, offset: int, where: Where
           ) -> tuple[mx.array, mx.array]:
    """One layer on the hidden states ``h`` (L, WIDTH) of the tokens at ``offset`` on: the new
    hidden states and the layer's cache with their keys and values appended."""
    length = h.shape[0]
    x = ops.rms_norm(h, layer.attention_norm, where.about("attention norm"))
    q = ops.matmul(layer.wq, x, where.about("queries")).reshape(length, HEADS, HEAD_DIM).transpose(1, 0, 2)
    k = ops.matmul(layer.wk, x, where.about("keys")).reshape(length, KV_HEADS, HEAD_DIM).transpose(1, 0, 2)
    v = ops.matmul(layer.wv, x, where.about("values")).reshape(length, KV_HEADS, HEAD_DIM).transpose(1, 0, 2)
    q = ops.rope(q, offset, where.about("queries"))
    k = ops.rope(k, offset, where.about("keys"))
    cache = ops.append(cache, k, v, offset, where.about("cache"))
    keys, values = cache[0, 0, :, :offset + length], cache[1, 0, :, :offset + length]
    if where.phase is Phase.PREFILL:
        a = ops.prefill_attention(q, keys, values, where.about("attention"))
    else:
        a = ops.decode_attention(q[:, 0, :], keys, values, where.about("attention"))[:, None, :]
    h = h + ops.matmul(layer.wo, a.transpose(1, 0, 2).reshape(length, HEADS * HEAD_DIM), where.about("attention output"))
    x = ops.rms_norm(h, layer.mlp_norm, where.about("MLP norm"))
    h = h + ops.matmul(layer.down, ops.gated_mlp(x, layer, where.about("MLP")), where.about("MLP down"))
    return h, cache


def forward(model: TinyModel, tokens: Sequence[int], offset: int, caches: list[mx.array], ops: MlxOps,
            phase: Phase) -> mx.array:
    """The tokens at positions ``offset`` on through every layer (``caches`` updated in place of the
    list), and the last one's logits."""
    positions = range(offset, offset + len(tokens))
    h = model.embedding[mx.array(list(tokens))]
    for n, layer in enumerate(model.layers):
        h, caches[n] = _layer(ops, layer, h, caches[n], offset, Where(phase, n, positions))
    last = Where(phase, None, positions[-1:])
    x = ops.rms_norm(h[-1:], model.final_norm, last.about("final norm"))
    return ops.matmul(model.head, x, last.about("logits"))[0]


@dataclass
class Generation:
    """What a prompt gave: each sampled token and the logits it was drawn from."""

    tokens: list[int] = field(default_factory=list)
    logits: list[np.ndarray] = field(default_factory=list)


def conversation_caches(model: TinyModel, prompt: Prompt) -> list[mx.array]:
    """Every layer's preallocated cache ``(2, 1, KV, T_max, D)`` holding the prompt's ``cached``
    tokens (computed at once with MLX's operations), zeros after them."""
    caches = [mx.zeros((2, 1, KV_HEADS, prompt.t_max, HEAD_DIM), dtype=mx.float32) for _ in model.layers]
    if not prompt.cached:
        return caches
    # Every check generates from the same prompts on the same model: the conversation is computed once.
    key = (hashlib.blake2b(np.asarray(model.embedding).tobytes(), digest_size=16).digest(),
           prompt.tokens[:prompt.cached])
    if key not in _CONVERSATIONS:
        if len(_CONVERSATIONS) >= 4:
            _CONVERSATIONS.pop(next(iter(_CONVERSATIONS)))
        conversation = [mx.zeros((2, 1, KV_HEADS, prompt.cached, HEAD_DIM), dtype=mx.float32) for _ in model.layers]
        forward(model, prompt.tokens[:prompt.cached], 0, conversation, MlxOps(), Phase.PREFILL)
        _CONVERSATIONS[key] = tuple(np.asarray(c) for c in conversation)
    for n, kept in enumerate(_CONVERSATIONS[key]):
        caches[n][:, :, :, :prompt.cached] = mx.array(kept)
    return caches


_CONVERSATIONS: dict[tuple[bytes, tuple[int, ...]], tuple[np.ndarray, ...]] = {}


def generate(model: TinyModel, prompt: Prompt, ops: MlxOps, expected: Sequence[int] = ()) -> Generation:
    """The prompt prefilled, then each token sampled and (all but the last) decoded, on ``ops``.
    Stops after a sampled token that is not ``expected``'s (the reference's) at its place: past it
    the two would decode different tokens."""
    caches = conversation_caches(model, prompt)
    out = Generation()
    logits = forward(model, prompt.prompt, prompt.cached, caches, ops, Phase.PREFILL)
    phase = Phase.PREFILL
    for n, u in enumerate(prompt.uniforms()):
        position = len(prompt.tokens) + n  # where the sampled token goes
        if n:
            logits = forward(model, out.tokens[-1:], position - 1, caches, ops, Phase.DECODE)
            phase = Phase.DECODE
        token = ops.sample(logits, float(u), prompt.temperature, prompt.top_p,
                           Where(phase, None, range(position - 1, position), "sampling"))
        out.tokens.append(token)
        out.logits.append(np.asarray(logits, dtype=np.float64))
        if n < len(expected) and token != expected[n]:
            break
    return out


def generate_with_mlx(model: TinyModel, prompt: Prompt) -> Generation:
    """Generation with MLX operations alone: the reference, on MLX's CPU stream wherever MLX's
    default device is a GPU, so that every machine generates the same reference. (On the H200, MLX's
    CUDA back end ran this model's float32 operations 6e-4 to 1e-2 from its CPU's at the logits,
    past the finale's own allowance of 1e-3 of the largest: the kernels were judged against the
    GPU's error rather than their own.)"""
    with mx.stream(mx.cpu):
        return generate(model, prompt, MlxOps())


def generate_with_kernels(model: TinyModel, prompt: Prompt, kernels: DecodeKernels, expected: Sequence[int] = ()
                          ) -> tuple[Generation, list[StageMismatch]]:
    """Generation on the kernels, and the first stage (if any) where a kernel's output is not its
    puzzle's spec on the same input."""
    ops = KernelOps(kernels)
    try:
        got = generate(model, prompt, ops, expected)
    except _FirstMismatch:
        got = Generation()
    return got, ops.mismatches


def prompt_case(prompt: Prompt, label: str) -> Case:
    """A prompt as a test of the finale: its inputs say all of ``Prompt``; its output is the
    sampled tokens."""
    return Case((np.asarray(prompt.tokens, dtype=np.int32), np.asarray(prompt.cached, dtype=np.int32),
                 np.asarray(prompt.generate, dtype=np.int32), np.asarray(prompt.seed, dtype=np.int32),
                 np.asarray(prompt.temperature, dtype=np.float32), np.asarray(prompt.top_p, dtype=np.float32)),
                (prompt.generate,), (1, 1, 1), (1, 1, 1), label)


def case_prompt(case: Case) -> Prompt:
    """The prompt a finale's test generates from."""
    tokens, cached, count, seed, temperature, top_p = case.inputs
    return Prompt(tuple(int(t) for t in tokens), int(cached), int(count), int(seed), float(temperature),
                  float(top_p))


def generate_outcome(model: TinyModel, case: Case, kernels: DecodeKernels) -> Outcome:
    """One prompt generated on the kernels and with MLX: the same sampled tokens, each step's logits
    within ``LOGITS_RTOL`` of their largest magnitude, and every stage within its puzzle's error
    model. A failure names the first failing stage (kernel, phase, layer, token, how far off)."""
    prompt = case_prompt(case)
    want = generate_with_mlx(model, prompt)
    try:
        got, mismatches = generate_with_kernels(model, prompt, kernels, want.tokens)
    except StageFailed as failed:
        status, message, findings = classify(failed.cause)
        outcome = Outcome(case, status, error=message, findings=findings,
                          quantity=f"{stage_name(failed.kernel)} in {failed.where}")
        if isinstance(failed.cause, SanitizerError) and failed.cause.result is not None:
            outcome.stopped = failed.cause.result.stopped  # a kernel that did not finish: not run again
        return outcome
    if mismatches:
        return Outcome(case, CaseStatus.WRONG, quantity=f"stopped after {len(got.tokens)} of {prompt.generate} tokens",
                       error=" " + mismatches[0].sentence())
    for n, (token, logits) in enumerate(zip(got.tokens, got.logits, strict=True)):
        position = len(prompt.tokens) + n
        phase = Phase.PREFILL if n == 0 else Phase.DECODE
        expected = want.logits[n]
        off = float(np.max(np.abs(logits - expected)))
        allowed = LOGITS_RTOL * float(np.max(np.abs(expected)))
        if token != want.tokens[n] or off > allowed:
            sampled = f"token {position} sampled as {token}" + (
                "" if token == want.tokens[n] else f", MLX's model's {want.tokens[n]}")
            return Outcome(case, CaseStatus.WRONG, quantity=f"{sampled}, logits up to {off:.3g} from MLX's",
                           error=f" every kernel is within its puzzle's error model, but after the {phase.value} the "
                                 f"logits end {off:.3g} from MLX's (allowed: {allowed:.3g}): the errors add up")
    worst = max(float(np.max(np.abs(g - w))) for g, w in zip(got.logits, want.logits, strict=True))
    return Outcome(case, CaseStatus.PASS, quantity=f"tokens {got.tokens}, logits within {worst:.2g} of MLX's")
