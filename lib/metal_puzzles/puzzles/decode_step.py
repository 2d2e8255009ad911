"""The start of Part V's finale: one decode step of a tiny Llama-style transformer, run on Part V's
kernels and checked against the same model written with MLX operations.

The model (``TinyModel.from_seed``): two layers, model width 64, two query heads sharing one
key/value head of 32 dimensions, an MLP of width 128 with SiLU gating, a vocabulary of 96; every
matrix quantized with ``mx.quantize`` (groups of 64, 4 bits). For a prompt, each token runs
through the model in turn (filling each layer's KV cache), and the last one's logits give the
next token.

``decode_with_kernels`` runs every norm, rotation, quantized product, attention and the final
argmax with the given kernels (``DecodeKernels``: MetalKernels or notebook test functions) and,
at each stage, compares the kernel's output with MLX's own operation on the same input, so a
failing kernel is named with its layer, token and how far off it is. ``check_decode_step`` also
compares the logits and the next token with ``decode_with_mlx``, a model that never calls a kernel.

Not in the book yet: the notebook cell, the grader's wiring and the book's text are to come.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import mlx.core as mx
import numpy as np

from ..checking.launch import KernelLike
from . import launchers
from .t01_rms_norm import EPS

LAYERS = 2
WIDTH = 64
HEADS = 2
KV_HEADS = 1
HEAD_DIM = 32
HIDDEN = 128
VOCAB = 96
GROUP = 64
BITS = 4
#: Prompts the check decodes (token ids), each at most 8 long: decoding is one step per token.
PROMPTS: tuple[tuple[int, ...], ...] = ((5, 17, 42), (1, 2, 3, 4, 5, 6), (60, 0, 31, 31, 9))
#: How far a stage's output may be from MLX's operation on the same input, relative to its
#: largest magnitude (float32 rounding, summed over at most a few hundred terms, is far below it).
STAGE_RTOL = 1e-4
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
    def from_seed(cls, seed: int = 0) -> TinyModel:
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
    """The kernels a decode step runs (MetalKernels, or notebook test functions returning one)."""

    rms_norm: KernelLike
    rope: KernelLike  # the halves layout (traditional=False), as Llama's weights expect
    quantized_matvec: KernelLike
    decode_attention: KernelLike
    argmax: KernelLike

    @classmethod
    def reference(cls) -> DecodeKernels:
        from . import get_puzzle, solution_kernel
        return cls(*(solution_kernel(get_puzzle(pid))
                     for pid in ("rms_norm", "rope", "quantized_matvec", "decode_attention", "argmax")))


# ----------------------------------------------------------------------------- the two ways to run a stage
class MlxOps:
    """Every stage as MLX's own operation."""

    def rms_norm(self, x, w, where):
        return mx.fast.rms_norm(x[None], w, EPS)[0]

    def rope(self, x, offset, where):
        return mx.fast.rope(x[:, None, :], HEAD_DIM, traditional=False, base=10000.0, scale=1.0,
                            offset=offset)[:, 0, :]

    def matvec(self, m: Quantized, x, where):
        return m.matvec(x)

    def attention(self, q, k, v, where):
        out = mx.fast.scaled_dot_product_attention(q[None, :, None, :], k[None], v[None], scale=HEAD_DIM**-0.5)
        return out.reshape(q.shape)

    def argmax(self, logits, where):
        return mx.argmax(logits)


@dataclass
class StageMismatch:
    """The first stage whose kernel output is not MLX's on the same input."""

    stage: str  # the kernel
    where: str  # layer, what, token
    error: float  # largest |kernel - MLX|
    scale: float  # largest |MLX|

    def sentence(self) -> str:
        return (f"the {self.stage} kernel is off at {self.where}: largest difference {self.error:.3g} from MLX's "
                f"operation on the same input (whose values reach {self.scale:.3g})")


@dataclass
class KernelOps(MlxOps):
    """Every stage with a kernel, each output compared with MLX's on the same input."""

    kernels: DecodeKernels
    mismatches: list[StageMismatch] = field(default_factory=list)

    def _compare(self, stage: str, where: str, got: mx.array, want: mx.array) -> mx.array:
        g, w = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
        scale = float(np.max(np.abs(w))) if w.size else 0.0
        error = float(np.max(np.abs(g - w))) if g.shape == w.shape else float("inf")
        if not error <= STAGE_RTOL * max(scale, 1.0):
            self.mismatches.append(StageMismatch(stage, where, error, scale))
        return got

    def rms_norm(self, x, w, where):
        got = launchers.run_rms_norm(self.kernels.rms_norm, x[None], w)[0]
        return self._compare("RMSNorm", where, got, super().rms_norm(x, w, where))

    def rope(self, x, offset, where):
        got = launchers.run_rope(self.kernels.rope, x[:, None, :], offset)[:, 0, :]
        return self._compare("rotary", where, got, super().rope(x, offset, where))

    def matvec(self, m, x, where):
        got = launchers.run_quantized_matvec(self.kernels.quantized_matvec, x, m.w_q, m.scales, m.biases)
        return self._compare("quantized product", where, got, super().matvec(m, x, where))

    def attention(self, q, k, v, where):
        got = launchers.run_decode_attention(self.kernels.decode_attention, q, k, v)
        return self._compare("attention", where, got, super().attention(q, k, v, where))

    def argmax(self, logits, where):
        got = launchers.run_argmax(self.kernels.argmax, logits[None])[0]
        return self._compare("argmax", where, got, super().argmax(logits, where))


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
    return logits, int(ops.argmax(logits, f"token {len(prompt) - 1} (next token)").item())


def decode_with_mlx(model: TinyModel, prompt: Sequence[int]) -> tuple[mx.array, int]:
    """The step written with MLX operations alone: the reference."""
    return _decode(model, prompt, MlxOps())


def decode_with_kernels(model: TinyModel, prompt: Sequence[int], kernels: DecodeKernels
                        ) -> tuple[mx.array, int, list[StageMismatch]]:
    """The step on the kernels, and every stage where a kernel's output is not MLX's."""
    ops = KernelOps(kernels)
    logits, token = _decode(model, prompt, ops)
    return logits, token, ops.mismatches


@dataclass(frozen=True)
class DecodeVerdict:
    passed: bool
    lines: tuple[str, ...]

    def report(self) -> str:
        return "\n".join(self.lines)


def check_decode_step(kernels: DecodeKernels, prompts: Sequence[Sequence[int]] = PROMPTS, seed: int = 0,
                      on_prompt: Callable[[int], None] | None = None) -> DecodeVerdict:
    """Decode each prompt on the kernels and with MLX: the same next token and logits within
    ``LOGITS_RTOL`` of their largest magnitude; a failing prompt names its first failing stage."""
    model = TinyModel.from_seed(seed)
    lines, passed = [], True
    for n, prompt in enumerate(prompts):
        if on_prompt is not None:
            on_prompt(n)
        want_logits, want = decode_with_mlx(model, prompt)
        try:
            got_logits, got, mismatches = decode_with_kernels(model, prompt, kernels)
        except Exception as exc:  # a kernel that does not compile or run: say which prompt
            passed = False
            lines.append(f"prompt {list(prompt)}: the kernels did not run: {exc}")
            continue
        w = np.asarray(want_logits, dtype=np.float64)
        off = float(np.max(np.abs(np.asarray(got_logits, dtype=np.float64) - w)))
        ok = got == want and off <= LOGITS_RTOL * float(np.max(np.abs(w)))
        passed &= ok
        head = (f"prompt {list(prompt)}: next token {got}" + ("" if got == want else f" (MLX's model: {want})")
                + f", logits within {off:.2g} of MLX's")
        lines.append(head if ok else head + "; " + (mismatches[0].sentence() if mismatches
                                                    else "no single stage is off: the errors add up"))
    lines.insert(0, "Passed: the decode step runs on your kernels." if passed else
                 "Failed: the decode step on your kernels differs from MLX's model.")
    return DecodeVerdict(passed, tuple(lines))
