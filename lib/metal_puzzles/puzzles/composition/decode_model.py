"""Part V's finale: one decode step of a tiny Llama-style transformer, run on Part V's kernels and
checked against the same model written with MLX operations (the entry is ``puzzles.part5.decode_step``).

The model (``TinyModel.from_seed``): two layers, model width 128, four query heads sharing two
key/value heads of 32 dimensions (two query heads a key/value head), an MLP of width 256 with SiLU gating, a vocabulary of 96; every
matrix quantized with ``mx.quantize`` (groups of 64, 4 bits). For a prompt, each token runs
through the model in turn (filling each layer's KV cache), and the last one's logits give the
next token. A long prompt's first tokens may be *prefilled*: run through MLX's own model at
once (``prefill``), as mlx-lm does before it decodes, so that the kernels decode at positions in
the thousands. Attention sees a sliding window of the last ``WINDOW`` tokens (as Mistral's does).

The model poses the magnitudes real models reach, where naive numerics fail: embeddings of about
0.02 (as Llama's), so the first norm's mean square is about 4e-4 and its EPS counts; one sharp
query head a layer, whose scores reach the hundreds, where an attention that never subtracts its
maximum overflows; positions past 2048, where a position rounded to half is off.

``decode_with_kernels`` runs every norm, rotation, quantized product, attention and the final
argmax with the given kernels (``DecodeKernels``: MetalKernels or notebook test functions) and,
at each stage, compares the kernel's output with its puzzle's spec on the same input, within that
puzzle's error model (``checking.tolerance``), so a failing kernel is named with its layer, token
and how far off it is. ``decode_outcome`` also compares the logits and the next token with
``decode_with_mlx``, a model that never calls a kernel.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mlx.core as mx
import numpy as np

from ...checking import Case, CaseStatus, Outcome, Puzzle, progress
from ...checking.launch import KernelLike
from ...checking.tolerance import compare_with_spec
from ...checking.verdict import classify
from ...msl import SanitizerError
from ..catalogue.solution_files import solution_file
from ..part5 import argmax, decode_attention, quantized_matvec, rms_norm, rope
from ..part5.rms_norm import EPS
from . import launchers

LAYERS = 2
WIDTH = 128
HEADS = 4
KV_HEADS = 2
HEAD_DIM = 32
HIDDEN = 256
VOCAB = 96
GROUP = 64
BITS = 4
#: The weights' seed: the same model for every learner and check, chosen so that each prompt's next
#: token wins by far more than the logits' allowed error (tests/puzzles/part5/test_decode_step.py).
SEED = 62
#: The embeddings' standard deviation: Llama's are about 0.02, so the first norm of a layer sees a
#: mean square near 4e-4, where RMSNorm's EPS (1e-5) moves every output by some percent.
EMBEDDING_STD = 0.02
#: Query head 0 of every layer is sharp: its query weights this many times larger, its scores
#: in the hundreds (as real attention's reach), where exp(s) overflows float32 (above 88.7).
SHARP_HEAD_SCALE = 100.0


@dataclass(frozen=True)
class Prompt:
    """A prompt the check decodes: its tokens, of which the first ``prefilled`` run through MLX's
    own model at once (``prefill``) and the rest through the kernels, one decode step a token."""

    tokens: tuple[int, ...]
    prefilled: int = 0

    @classmethod
    def of(cls, prompt: Prompt | Sequence[int]) -> Prompt:
        return prompt if isinstance(prompt, Prompt) else cls(tuple(int(t) for t in prompt))

    @property
    def decoded(self) -> int:
        """Tokens decoded on the kernels."""
        return len(self.tokens) - self.prefilled

    def describe(self) -> str:
        if not self.prefilled:
            return f"prompt {list(self.tokens)}"
        last = (f"the last (position {self.prefilled})" if self.decoded == 1 else
                f"the last {self.decoded} (positions {self.prefilled} to {len(self.tokens) - 1})")
        return f"a prompt of {len(self.tokens)} tokens, the first {self.prefilled} prefilled, {last} decoded"


#: Attention sees the last WINDOW tokens (the token itself included), as Mistral's sliding window
#: and mlx-lm's rotating KV cache (``max_kv_size``) keep a window: positions keep counting while
#: the cache stays short, so a decode step at position 2099 costs the simulator (and the grader's
#: step budget per launch) no more than one at position 255.
WINDOW = 256
#: The long prompt's length: its last tokens are decoded at positions 2098 and 2099, past 2048 (where
#: a position rounded to half is off by one), over a full window of cache.
LONG_PROMPT = 2100
#: Prompts the check decodes (token ids): two short ones and one of ten decoded token by token from
#: the start, and a long one whose first tokens are prefilled and whose last is decoded deep into
#: the context. Kept to a few seconds on the simulator (benchmarks/bench_decode_step.py).
PROMPTS: tuple[Prompt, ...] = (
    Prompt((5, 17, 42)), Prompt((60, 0, 31, 31, 9)),
    Prompt(tuple(int(t) for t in np.random.default_rng(10).integers(0, 96, size=10))),
    Prompt(tuple(int(t) for t in np.random.default_rng(LONG_PROMPT).integers(0, 96, size=LONG_PROMPT)),
           LONG_PROMPT - 2))
#: The same for the logits of the whole step against the model written with MLX operations.
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

    def matvec(self, x: mx.array) -> mx.array:
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

        def matrix(rows: int, cols: int, sharp_rows: int = 0) -> Quantized:
            w = rng.standard_normal((rows, cols)) / np.sqrt(cols)
            w[:sharp_rows] *= SHARP_HEAD_SCALE
            return Quantized.of(w.astype(np.float32))

        def norm() -> mx.array:
            return mx.array((1 + 0.1 * rng.standard_normal(WIDTH)).astype(np.float32))

        layers = tuple(Layer(norm(), matrix(HEADS * HEAD_DIM, WIDTH, HEAD_DIM), matrix(KV_HEADS * HEAD_DIM, WIDTH),
                             matrix(KV_HEADS * HEAD_DIM, WIDTH), matrix(WIDTH, HEADS * HEAD_DIM), norm(),
                             matrix(HIDDEN, WIDTH), matrix(HIDDEN, WIDTH), matrix(WIDTH, HIDDEN))
                       for _ in range(LAYERS))
        embedding = mx.array((EMBEDDING_STD * rng.standard_normal((VOCAB, WIDTH))).astype(np.float32))
        return cls(embedding, layers, norm(), matrix(VOCAB, WIDTH))


@dataclass(frozen=True)
class DecodeKernels:
    """The kernels a decode step runs (MetalKernels, or notebook test functions returning one),
    named as their puzzles' kernels, and the options every launch takes (``max_steps``...)."""

    rms_norm: KernelLike
    rope: KernelLike  # the halves layout (traditional=False), as Llama's weights expect
    quantized_matvec: KernelLike
    decode_attention: KernelLike
    argmax: KernelLike
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def reference(cls) -> DecodeKernels:
        return cls.wire({name: STAGE_PUZZLES[name].kernel(solution_file(SOLUTIONS[name]).read_text(encoding="utf-8"))
                         for name in STAGE_ORDER})

    @classmethod
    def wire(cls, kernels: Mapping[str, KernelLike], **options: Any) -> DecodeKernels:
        """The reference wiring: the kernels by their puzzles' kernel names (how the grader hands
        over the ones it read from a notebook), which are this class's field names."""
        return cls(rms_norm=kernels["rms_norm"], rope=kernels["rope"], quantized_matvec=kernels["quantized_matvec"],
                   decode_attention=kernels["decode_attention"], argmax=kernels["argmax"], options=options)


#: The puzzle of each stage's kernel, by kernel name (the fields of ``DecodeKernels``).
STAGE_PUZZLES: dict[str, Puzzle] = {p.kernel_name: p for p in (
    rms_norm.PUZZLE, rope.HALVES, quantized_matvec.PUZZLE, decode_attention.PUZZLE, argmax.PUZZLE)}
STAGE_ORDER = tuple(STAGE_PUZZLES)
#: Their reference solutions (the catalogue's entries name the same files; the catalogue itself
#: lists this module's finale, so it is not imported here).
SOLUTIONS = {"rms_norm": rms_norm.ENTRY.solution, "rope": rope.HALVES_ENTRY.solution,
             "quantized_matvec": quantized_matvec.ENTRY.solution,
             "decode_attention": decode_attention.ENTRY.solution, "argmax": argmax.ENTRY.solution}


def stage_name(kernel_name: str) -> str:
    """'your RMSNorm kernel (V.1)': a stage as the learner knows it."""
    p = STAGE_PUZZLES[kernel_name]
    return f"your {p.title} kernel ({p.number})"


# ----------------------------------------------------------------------------- the two ways to run a stage
class MlxOps:
    """Every stage as MLX's own operation."""

    def rms_norm(self, x: mx.array, w: mx.array, where: str) -> mx.array:
        return mx.fast.rms_norm(x[None], w, EPS)[0]

    def rope(self, x: mx.array, offset: int, where: str) -> mx.array:
        return mx.fast.rope(x[:, None, :], HEAD_DIM, traditional=False, base=10000.0, scale=1.0,
                            offset=offset)[:, 0, :]

    def matvec(self, m: Quantized, x: mx.array, where: str) -> mx.array:
        return m.matvec(x)

    def attention(self, q: mx.array, k: mx.array, v: mx.array, where: str) -> mx.array:
        out = mx.fast.scaled_dot_product_attention(q[None, :, None, :], k[None], v[None], scale=HEAD_DIM**-0.5)
        return out.reshape(q.shape)

    def argmax(self, logits: mx.array, where: str) -> mx.array:
        return mx.argmax(logits)


@dataclass(frozen=True)
class StageMismatch:
    """A stage whose kernel output is not its puzzle's spec on the same input, within the
    puzzle's error model."""

    kernel: str  # the kernel's name (a field of DecodeKernels)
    where: str  # layer, what, token
    wrong: int  # values beyond the error allowed
    size: int
    error: float  # largest |kernel - spec| over the finite values
    scale: float  # largest |spec|
    #: Values the kernel wrote as NaN or infinity where the spec's are finite (an exp that
    #: overflowed, a division by zero).
    nonfinite: int = 0

    def sentence(self) -> str:
        how = (f"{self.nonfinite} of them NaN or infinite where the spec's are finite" if self.nonfinite else
               f"the largest off by {self.error:.3g}")
        return (f"{stage_name(self.kernel)} is off at {self.where}: {self.wrong} of {self.size} values beyond the "
                f"error its puzzle allows, {how} (the values reach {self.scale:.3g})")


class StageFailed(Exception):
    """A stage's kernel did not compile or run (or the sanitizer stopped it): which, and where."""

    def __init__(self, kernel: str, where: str, cause: BaseException) -> None:
        super().__init__(f"{stage_name(kernel)} at {where}: {cause}")
        self.kernel, self.where, self.cause = kernel, where, cause


@dataclass
class KernelOps(MlxOps):
    """Every stage with a kernel, each output compared with its puzzle's spec on the same input."""

    kernels: DecodeKernels
    mismatches: list[StageMismatch] = field(default_factory=list)

    def _stage(self, kernel: str, where: str, run: Callable[..., mx.array], *inputs: mx.array) -> mx.array:
        progress.now_at(f"{stage_name(kernel)} '{kernel}' at {where}")  # what a time limit's verdict names
        try:
            got = run(getattr(self.kernels, kernel), *inputs, **self.kernels.options)
            mx.eval(got)
        except Exception as exc:  # the learner's kernel may fail in any way: say which stage
            raise StageFailed(kernel, where, exc) from exc
        p = STAGE_PUZZLES[kernel]
        arrays = tuple(np.asarray(x) for x in inputs)
        want = compare_with_spec(p.spec, arrays, tuple(got.shape), p.error_model, p.atol, p.rtol, p.allowance)
        yours = np.asarray(got)
        wrong = want.mismatch(yours)
        if wrong.any():
            with np.errstate(invalid="ignore"):
                error = np.abs(yours.astype(np.float64) - want.expected)
            nonfinite = wrong & ~np.isfinite(yours) & np.isfinite(want.expected)
            finite_error = np.where(wrong & np.isfinite(error), error, 0.0)
            self.mismatches.append(StageMismatch(kernel, where, int(wrong.sum()), wrong.size,
                                                 float(np.max(finite_error, initial=0.0)),
                                                 float(np.max(np.abs(want.expected), initial=0.0)), int(nonfinite.sum())))
        return got

    def rms_norm(self, x: mx.array, w: mx.array, where: str) -> mx.array:
        return self._stage("rms_norm", where, launchers.run_rms_norm, x[None], w)[0]

    def rope(self, x: mx.array, offset: int, where: str) -> mx.array:
        return self._stage("rope", where, launchers.run_rope, x[:, None, :], mx.array(offset, dtype=mx.int32))[:, 0, :]

    def matvec(self, m: Quantized, x: mx.array, where: str) -> mx.array:
        return self._stage("quantized_matvec", where, launchers.run_quantized_matvec, x, m.w_q, m.scales, m.biases)

    def attention(self, q: mx.array, k: mx.array, v: mx.array, where: str) -> mx.array:
        return self._stage("decode_attention", where, launchers.run_decode_attention, q, k, v)

    def argmax(self, logits: mx.array, where: str) -> mx.array:
        return self._stage("argmax", where, launchers.run_argmax, logits[None])[0]


# ----------------------------------------------------------------------------- the model
#: One layer's cache: keys and values, each (KV_HEADS, tokens so far, HEAD_DIM); None before the first.
Cache = list[mx.array | None]


def prefill(model: TinyModel, tokens: Sequence[int]) -> list[Cache]:
    """Every layer's cache after ``tokens`` (its last WINDOW keys and values), computed at once with
    MLX's operations (causal attention over the window), as mlx-lm's prefill does before it decodes."""
    if not tokens:
        return [[None, None] for _ in model.layers]
    # Every check decodes the same prompts on the same model: the prefill is computed once.
    key = (hashlib.blake2b(np.asarray(model.embedding).tobytes(), digest_size=16).digest(), tuple(tokens))
    if key not in _PREFILLED:
        if len(_PREFILLED) >= 4:
            _PREFILLED.pop(next(iter(_PREFILLED)))
        _PREFILLED[key] = _prefill(model, tuple(tokens))
    return [[mx.array(k), mx.array(v)] for k, v in _PREFILLED[key]]


_PREFILLED: dict[tuple[bytes, tuple[int, ...]], tuple[tuple[np.ndarray, np.ndarray], ...]] = {}


def _prefill(model: TinyModel, tokens: tuple[int, ...]) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    n = len(tokens)
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    window = mx.array((j <= i) & (i - j < WINDOW))  # causal, the last WINDOW tokens
    h = model.embedding[mx.array(tokens)]
    caches = []
    for layer in model.layers:
        x = mx.fast.rms_norm(h, layer.attention_norm, EPS)
        q = layer.wq.matvec(x).reshape(n, HEADS, HEAD_DIM).transpose(1, 0, 2)
        k = layer.wk.matvec(x).reshape(n, KV_HEADS, HEAD_DIM).transpose(1, 0, 2)
        v = layer.wv.matvec(x).reshape(n, KV_HEADS, HEAD_DIM).transpose(1, 0, 2)
        q, k = (mx.fast.rope(a, HEAD_DIM, traditional=False, base=10000.0, scale=1.0, offset=0) for a in (q, k))
        a = mx.fast.scaled_dot_product_attention(q[None], k[None], v[None], scale=HEAD_DIM**-0.5, mask=window)
        h = h + layer.wo.matvec(a[0].transpose(1, 0, 2).reshape(n, HEADS * HEAD_DIM))
        x = mx.fast.rms_norm(h, layer.mlp_norm, EPS)
        gate, up = layer.gate.matvec(x), layer.up.matvec(x)
        h = h + layer.down.matvec(gate * mx.sigmoid(gate) * up)
        caches.append((np.asarray(k[:, -WINDOW:]), np.asarray(v[:, -WINDOW:])))
    return tuple(caches)


def _decode(model: TinyModel, prompt: Prompt | Sequence[int], ops: MlxOps) -> tuple[mx.array, int]:
    """The prompt's first tokens prefilled, then every other token through the model in turn on
    ``ops``; the last one's logits and the next token."""
    prompt = Prompt.of(prompt)
    caches = prefill(model, prompt.tokens[:prompt.prefilled])
    logits = None
    for position in range(prompt.prefilled, len(prompt.tokens)):
        h = model.embedding[prompt.tokens[position]]
        for n, (layer, cache) in enumerate(zip(model.layers, caches, strict=True)):
            at = f"layer {n}, token {position}"
            x = ops.rms_norm(h, layer.attention_norm, f"{at} (attention norm)")
            q = ops.matvec(layer.wq, x, f"{at} (queries)").reshape(HEADS, HEAD_DIM)
            k = ops.matvec(layer.wk, x, f"{at} (keys)").reshape(KV_HEADS, HEAD_DIM)
            v = ops.matvec(layer.wv, x, f"{at} (values)").reshape(KV_HEADS, HEAD_DIM)
            q = ops.rope(q, position, f"{at} (queries)")
            k = ops.rope(k, position, f"{at} (keys)")
            for slot, new in enumerate((k, v)):
                old = cache[slot]
                grown = new[:, None, :] if old is None else mx.concatenate([old, new[:, None, :]], axis=1)
                cache[slot] = grown[:, -WINDOW:]
            keys, values = cache
            assert keys is not None and values is not None
            a = ops.attention(q, keys, values, at)
            h = h + ops.matvec(layer.wo, a.reshape(-1), f"{at} (attention output)")
            x = ops.rms_norm(h, layer.mlp_norm, f"{at} (MLP norm)")
            gate = ops.matvec(layer.gate, x, f"{at} (MLP gate)")
            up = ops.matvec(layer.up, x, f"{at} (MLP up)")
            h = h + ops.matvec(layer.down, gate * mx.sigmoid(gate) * up, f"{at} (MLP down)")
        at = f"token {position}"
        logits = ops.matvec(model.head, ops.rms_norm(h, model.final_norm, f"{at} (final norm)"), f"{at} (logits)")
    assert logits is not None, "a prompt has at least one token decoded"
    # argmax gives an integer array; MLX's stub types item() as any scalar (complex too).
    return logits, int(ops.argmax(logits, f"token {len(prompt.tokens) - 1} (next token)").item())  # type: ignore[arg-type]


def decode_with_mlx(model: TinyModel, prompt: Prompt | Sequence[int]) -> tuple[mx.array, int]:
    """The step written with MLX operations alone: the reference."""
    return _decode(model, prompt, MlxOps())


def decode_with_kernels(model: TinyModel, prompt: Prompt | Sequence[int], kernels: DecodeKernels
                        ) -> tuple[mx.array, int, list[StageMismatch]]:
    """The step on the kernels, and every stage where a kernel's output is not MLX's."""
    ops = KernelOps(kernels)
    logits, token = _decode(model, prompt, ops)
    return logits, token, ops.mismatches


def prompt_case(prompt: Prompt | Sequence[int], label: str) -> Case:
    """A prompt as a test of the finale: its tokens and how many are prefilled, and the logits as
    the output."""
    prompt = Prompt.of(prompt)
    return Case((np.asarray(prompt.tokens, dtype=np.int32), np.asarray(prompt.prefilled, dtype=np.int32)),
                (VOCAB,), (1, 1, 1), (1, 1, 1), label)


def case_prompt(case: Case) -> Prompt:
    """The prompt a finale's test decodes."""
    prefilled = int(case.inputs[1]) if len(case.inputs) > 1 else 0
    return Prompt(tuple(int(t) for t in case.inputs[0]), prefilled)


def decode_outcome(model: TinyModel, case: Case, kernels: DecodeKernels) -> Outcome:
    """One prompt decoded on the kernels and with MLX: the same next token, logits within
    ``LOGITS_RTOL`` of their largest magnitude, and every stage within its puzzle's error model.
    A failure names the first failing stage (kernel, layer, token, how far off)."""
    prompt = case_prompt(case)
    want_logits, want = decode_with_mlx(model, prompt)
    expected = np.asarray(want_logits, dtype=np.float64)
    try:
        got_logits, got, mismatches = decode_with_kernels(model, prompt, kernels)
    except StageFailed as failed:
        status, message, findings = classify(failed.cause)
        outcome = Outcome(case, status, error=message, findings=findings,
                          quantity=f"{stage_name(failed.kernel)} at {failed.where}")
        if isinstance(failed.cause, SanitizerError) and failed.cause.result is not None:
            outcome.stopped = failed.cause.result.stopped  # a kernel that did not finish: not run again
        return outcome
    yours = np.asarray(got_logits, dtype=np.float64)
    off = float(np.max(np.abs(yours - expected)))
    scale = float(np.max(np.abs(expected)))
    ok = got == want and off <= LOGITS_RTOL * scale and not mismatches
    token = f"next token {got}" + ("" if got == want else f", MLX's model's {want}")
    if ok:
        return Outcome(case, CaseStatus.PASS, quantity=f"{token}, logits within {off:.2g} of MLX's")
    why = (mismatches[0].sentence() if mismatches else
           f"every kernel is within its puzzle's error model, but the logits end {off:.3g} from MLX's (allowed: "
           f"{LOGITS_RTOL * scale:.3g}): the errors add up")
    return Outcome(case, CaseStatus.WRONG, quantity=f"{token}, logits up to {off:.3g} from MLX's", error=" " + why)
