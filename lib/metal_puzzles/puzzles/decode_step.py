"""Part V's finale: one decode step of a tiny Llama-style transformer, run on Part V's kernels and
checked against the same model written with MLX operations (the entry is ``t08_decode_step``).

The model (``TinyModel.from_seed``): two layers, model width 128, four query heads sharing two
key/value heads of 32 dimensions (two query heads a key/value head), an MLP of width 256 with SiLU gating, a vocabulary of 96; every
matrix quantized with ``mx.quantize`` (groups of 64, 4 bits). For a prompt, each token runs
through the model in turn (filling each layer's KV cache), and the last one's logits give the
next token.

``decode_with_kernels`` runs every norm, rotation, quantized product, attention and the final
argmax with the given kernels (``DecodeKernels``: MetalKernels or notebook test functions) and,
at each stage, compares the kernel's output with its puzzle's spec on the same input, within that
puzzle's error model (``checking.tolerance``), so a failing kernel is named with its layer, token
and how far off it is. ``decode_outcome`` also compares the logits and the next token with
``decode_with_mlx``, a model that never calls a kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mlx.core as mx
import numpy as np

from ..checking import Case, CaseStatus, Outcome, Puzzle, progress
from ..checking.launch import KernelLike
from ..checking.tolerance import compare_with_spec
from ..checking.verdict import classify
from ..msl import SanitizerError
from . import (
    launchers,
    t01_rms_norm,
    t02_rope,
    t03_quantized_matvec,
    t04_decode_attention,
    t05_argmax,
)
from .solutions import solution_file
from .t01_rms_norm import EPS

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
#: token wins by far more than the logits' allowed error (tests/test_decode_step.py).
SEED = 33
#: Prompts the check decodes (token ids), each at most 8 long: decoding is one step per token.
PROMPTS: tuple[tuple[int, ...], ...] = ((5, 17, 42), (1, 2, 3, 4, 5, 6), (60, 0, 31, 31, 9))
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

        def matrix(rows: int, cols: int) -> Quantized:
            return Quantized.of((rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32))

        def norm() -> mx.array:
            return mx.array((1 + 0.1 * rng.standard_normal(WIDTH)).astype(np.float32))

        layers = tuple(Layer(norm(), matrix(HEADS * HEAD_DIM, WIDTH), matrix(KV_HEADS * HEAD_DIM, WIDTH),
                             matrix(KV_HEADS * HEAD_DIM, WIDTH), matrix(WIDTH, HEADS * HEAD_DIM), norm(),
                             matrix(HIDDEN, WIDTH), matrix(HIDDEN, WIDTH), matrix(WIDTH, HIDDEN))
                       for _ in range(LAYERS))
        embedding = mx.array(rng.standard_normal((VOCAB, WIDTH)).astype(np.float32))
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
    t01_rms_norm.PUZZLE, t02_rope.HALVES, t03_quantized_matvec.PUZZLE, t04_decode_attention.PUZZLE, t05_argmax.PUZZLE)}
STAGE_ORDER = tuple(STAGE_PUZZLES)
#: Their reference solutions (the catalogue's entries name the same files; the catalogue itself
#: lists this module's finale, so it is not imported here).
SOLUTIONS = {"rms_norm": t01_rms_norm.ENTRY.solution, "rope": t02_rope.HALVES_ENTRY.solution,
             "quantized_matvec": t03_quantized_matvec.ENTRY.solution,
             "decode_attention": t04_decode_attention.ENTRY.solution, "argmax": t05_argmax.ENTRY.solution}


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
    error: float  # largest |kernel - spec|
    scale: float  # largest |spec|

    def sentence(self) -> str:
        return (f"{stage_name(self.kernel)} is off at {self.where}: {self.wrong} of {self.size} values beyond the "
                f"error its puzzle allows, the largest off by {self.error:.3g} (the values reach {self.scale:.3g})")


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
        want = compare_with_spec(p.spec, arrays, tuple(got.shape), p.error_model, p.atol, p.rtol)
        yours = np.asarray(got)
        wrong = want.mismatch(yours)
        if wrong.any():
            error = np.abs(yours.astype(np.float64) - want.expected)
            self.mismatches.append(StageMismatch(kernel, where, int(wrong.sum()), wrong.size,
                                                 float(np.nanmax(np.where(wrong, error, 0.0))),
                                                 float(np.max(np.abs(want.expected), initial=0.0))))
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
def _decode(model: TinyModel, prompt: Sequence[int], ops: MlxOps) -> tuple[mx.array, int]:
    """Every token of the prompt through the model in turn; the last one's logits and the next token."""
    caches: list[tuple[list[mx.array], list[mx.array]]] = [([], []) for _ in model.layers]
    logits = None
    for position, token in enumerate(prompt):
        h = model.embedding[token]
        for n, (layer, (keys, values)) in enumerate(zip(model.layers, caches, strict=True)):
            at = f"layer {n}, token {position}"
            x = ops.rms_norm(h, layer.attention_norm, f"{at} (attention norm)")
            q = ops.matvec(layer.wq, x, f"{at} (queries)").reshape(HEADS, HEAD_DIM)
            k = ops.matvec(layer.wk, x, f"{at} (keys)").reshape(KV_HEADS, HEAD_DIM)
            v = ops.matvec(layer.wv, x, f"{at} (values)").reshape(KV_HEADS, HEAD_DIM)
            q = ops.rope(q, position, f"{at} (queries)")
            keys.append(ops.rope(k, position, f"{at} (keys)"))
            values.append(v)
            a = ops.attention(q, mx.stack(keys, axis=1), mx.stack(values, axis=1), at)
            h = h + ops.matvec(layer.wo, a.reshape(-1), f"{at} (attention output)")
            x = ops.rms_norm(h, layer.mlp_norm, f"{at} (MLP norm)")
            gate = ops.matvec(layer.gate, x, f"{at} (MLP gate)")
            up = ops.matvec(layer.up, x, f"{at} (MLP up)")
            h = h + ops.matvec(layer.down, gate * mx.sigmoid(gate) * up, f"{at} (MLP down)")
        at = f"token {position}"
        logits = ops.matvec(model.head, ops.rms_norm(h, model.final_norm, f"{at} (final norm)"), f"{at} (logits)")
    assert logits is not None, "a prompt has at least one token"
    # argmax gives an integer array; MLX's stub types item() as any scalar (complex too).
    return logits, int(ops.argmax(logits, f"token {len(prompt) - 1} (next token)").item())  # type: ignore[arg-type]


def decode_with_mlx(model: TinyModel, prompt: Sequence[int]) -> tuple[mx.array, int]:
    """The step written with MLX operations alone: the reference."""
    return _decode(model, prompt, MlxOps())


def decode_with_kernels(model: TinyModel, prompt: Sequence[int], kernels: DecodeKernels
                        ) -> tuple[mx.array, int, list[StageMismatch]]:
    """The step on the kernels, and every stage where a kernel's output is not MLX's."""
    ops = KernelOps(kernels)
    logits, token = _decode(model, prompt, ops)
    return logits, token, ops.mismatches


def prompt_case(prompt: Sequence[int], label: str) -> Case:
    """A prompt as a test of the finale: its tokens, and the logits as the output."""
    return Case((np.asarray(prompt, dtype=np.int32),), (VOCAB,), (1, 1, 1), (1, 1, 1), label)


def decode_outcome(model: TinyModel, case: Case, kernels: DecodeKernels) -> Outcome:
    """One prompt decoded on the kernels and with MLX: the same next token, logits within
    ``LOGITS_RTOL`` of their largest magnitude, and every stage within its puzzle's error model.
    A failure names the first failing stage (kernel, layer, token, how far off)."""
    prompt = [int(t) for t in case.inputs[0]]
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
