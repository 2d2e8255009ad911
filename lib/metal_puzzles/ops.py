"""Ready-made operations on the book's reference kernels: Part II's sparse operations and Part V's
language-model kernels, differentiable where a gradient means something.

``mvmr``, ``vvor`` and ``segment_sum`` are ``mx.custom_function``\\ s: their forward passes and
their vjps launch the kernels in ``solutions/`` through :func:`metal_puzzles.metal_kernel`, so they
run on the simulator everywhere and on the GPU when the Metal backend is selected
(``METAL_PUZZLES_BACKEND=metal`` on a Mac). ``mx.grad`` and ``mx.vjp`` work through them.

Definitions (float32 values, integer indices, ``T`` pairs):

- ``mvmr(a (Na,G,C,M), a_idx, b (Nb,G,C), b_idx, o_idx, n) -> (n,G,M)``:
  ``o[o_idx[t], g, m] += sum_c b[b_idx[t], g, c] * a[a_idx[t], g, c, m]``;
- ``vvor(a (Na,G,M), a_idx, b (Nb,G,C), b_idx, o_idx, n) -> (n,G,M,C)``:
  ``o[o_idx[t], g, m, c] += a[a_idx[t], g, m] * b[b_idx[t], g, c]``;
- ``segment_sum(x (N,C), lengths (K,)) -> (K,C)``: sums of consecutive segments of rows;
- ``rms_norm(x (R,N), w (N,))``, ``rope(x (H,L,D), offset, traditional)``,
  ``quantized_matvec(x (K,), w_q, scales, biases)`` (``mx.quantize``'s 4-bit format, groups of 64),
  ``decode_attention(q (H,D), k (KV,T,D), v (KV,T,D))`` and ``argmax(x (R,V))``: what
  ``mx.fast.rms_norm`` (eps 1e-5), ``mx.fast.rope`` (base 10000, scale 1, all of D rotated),
  ``mx.quantized_matmul``, ``mx.fast.scaled_dot_product_attention`` (scale D**-0.5, grouped
  query heads) and ``mx.argmax(x, axis=1)`` compute; ``topk(x (R,V))``: the indices of each row's
  8 largest values, largest first, ties in index order (``mx.argsort(-x, axis=1)[:, :8]``);
  ``radix_sort_pass(keys (N,), shift)``: the uint32 keys ordered by the digit ``(key >> shift) & 15``,
  equal digits in their order (V.11's three kernels in turn), and ``radix_sort(keys)``: eight such
  passes, lowest digit first, which sort the keys (``mx.sort``).

Gradients of Part V's operations: ``rms_norm`` with respect to ``x`` and ``w``, ``rope`` with
respect to ``x`` (its vjp is V.2's kernel again: a rotation's transpose is the rotation by minus the
angle, which is the kernel run on ``x`` with the second of each pair negated, then negated back)
and ``quantized_matvec`` with respect to ``x``, ``scales`` and ``biases`` (the packed integers
``w_q`` get zeros, as index arrays do: MLX's own ``quantized_matmul`` has no gradient for them
either). The vjps of ``rms_norm`` and ``quantized_matvec`` are MLX operations: the book has no
kernel for them. ``decode_attention`` has none (a decode step is inference: training runs attention
over whole sequences, another kernel), nor have ``argmax`` and ``topk`` (their outputs are indices,
piecewise constant in ``x``: the gradient is zero where it exists) or the radix sort (integer keys).

Arguments are validated before any kernel runs; a ValueError names the argument, its shape and
what was expected. Indices are checked against their ranges (which reads them, so these
functions are not meant for ``mx.compile``).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import mlx.core as mx
import numpy as np

from .host.kernel import MetalKernel
from .puzzles import get_puzzle, solution_kernel
from .puzzles.composition import launchers, wiring
from .puzzles.part2.mvmr import MAX_C
from .puzzles.part2.segment_sum_large import TG as LARGE_TG
from .puzzles.part5.argmax import LONGEST as ARGMAX_LONGEST
from .puzzles.part5.decode_attention import LONGEST as ATTENTION_LONGEST
from .puzzles.part5.decode_attention import MAX_D as ATTENTION_MAX_D
from .puzzles.part5.quantized_matvec import BITS, GROUP, PER_WORD
from .puzzles.part5.radix_pass import RADIX
from .puzzles.part5.rms_norm import EPS as RMS_EPS
from .puzzles.part5.rms_norm import LONGEST as RMS_LONGEST
from .puzzles.part5.topk import LONGEST as TOPK_LONGEST
from .puzzles.part5.topk import K as TOPK_K

__all__ = ["mvmr", "vvor", "segment_sum", "rms_norm", "rope", "quantized_matvec", "decode_attention", "argmax",
           "topk", "radix_sort_pass", "radix_sort"]

#: Segments at least this long on average go to the threadgroup-per-segment kernel (II.5).
LONG_SEGMENT = 4 * LARGE_TG
#: A threadgroup holds at most this many threads.
MAX_THREADGROUP = 1024


# ----------------------------------------------------------------------------- kernels
@cache
def _kernel(puzzle_id: str) -> MetalKernel:
    """The reference solution of a Part II or Part V kernel puzzle, as a ``MetalKernel``."""
    return solution_kernel(get_puzzle(puzzle_id))


def _mvmr_raw(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array, n: int) -> mx.array:
    """MVMR without gradients: II.7b's kernel when a row of b fits its threadgroup memory."""
    _, _, c, m = a.shape
    if c <= MAX_C and m <= MAX_THREADGROUP:
        return launchers.run_mvmr(_kernel("mvmr_fast"), a, a_idx, b, b_idx, o_idx, n)
    return launchers.run_mvmr_simple(_kernel("mvmr_simple"), a, a_idx, b, b_idx, o_idx, n)


def _vvor_raw(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array, n: int) -> mx.array:
    return launchers.run_vvor(_kernel("vvor"), a, a_idx, b, b_idx, o_idx, n)


def _mvmr_db(a: mx.array, a_idx: mx.array, dout: mx.array, o_idx: mx.array, b_idx: mx.array, nb: int) -> mx.array:
    return launchers.run_mvmr_backward_b(_kernel("mvmr_backward_b"), a, a_idx, dout, o_idx, b_idx, nb)


def _segment_forward(x: mx.array, lengths: mx.array, offsets: mx.array) -> mx.array:
    k, c = lengths.shape[0], x.shape[1]
    if x.shape[0] == 0 or k == 0 or c == 0:
        return mx.zeros((k, c), dtype=mx.float32)
    if x.shape[0] >= LONG_SEGMENT * k:  # long segments: a threadgroup per output (II.5)
        return launchers.run_segment_sum_large(_kernel("segment_sum_large"), x, lengths, offsets)
    return launchers.run_segment_sum(_kernel("segment_sum"), x, lengths, offsets)


def _segment_backward(dy: mx.array, lengths: mx.array, offsets: mx.array, rows: int) -> mx.array:
    return launchers.run_segment_sum_backward(_kernel("segment_sum_backward"), dy, lengths, offsets, rows)


_mvmr = wiring.build_mvmr(_mvmr_raw, _vvor_raw, _mvmr_db)
_segment_sum = wiring.build_segment_sum(_segment_forward, _segment_backward)


def _vvor_vjp(primals: tuple[Any, ...], cotangent: mx.array) -> tuple[Any, ...]:
    a, a_idx, b, b_idx, o_idx, n = primals
    # da[a_idx[t], g, m] += sum_c do[o_idx[t], g, m, c] * b[b_idx[t], g, c]: an MVMR reading do's
    # (M, C) blocks as (C, M) matrices.
    grad_a = _mvmr_raw(cotangent.transpose(0, 1, 3, 2), o_idx, b, b_idx, a_idx, a.shape[0])
    # db[b_idx[t], g, c] += sum_m do[o_idx[t], g, m, c] * a[a_idx[t], g, m]: an MVMR with do's
    # blocks as they are and a in the place of b.
    grad_b = _mvmr_raw(cotangent, o_idx, a, a_idx, b_idx, b.shape[0])
    return grad_a, mx.zeros_like(a_idx), grad_b, mx.zeros_like(b_idx), mx.zeros_like(o_idx), None


_vvor = wiring.differentiable(_vvor_raw, _vvor_vjp)


# ----------------------------------------------------------------------------- validation
def _array(op: str, name: str, x: Any) -> mx.array:
    if isinstance(x, mx.array):
        return x
    if isinstance(x, np.ndarray):
        return mx.array(x)
    raise TypeError(f"{op}: {name} must be an mx.array, got {type(x).__name__}")


def _values(op: str, name: str, x: Any, ndim: int, layout: str) -> mx.array:
    x = _array(op, name, x)
    if x.ndim != ndim:
        raise ValueError(f"{op}: {name} must have {ndim} dimensions {layout}, got shape {tuple(x.shape)}")
    if x.dtype != mx.float32:
        raise ValueError(f"{op}: {name} must be float32, got {x.dtype} (shape {tuple(x.shape)})")
    return x


def _count(op: str, name: str, n: Any) -> int:
    if isinstance(n, mx.array) and n.ndim == 0 and mx.issubdtype(n.dtype, mx.integer):
        n = n.item()
    if isinstance(n, np.integer):
        n = int(n)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"{op}: {name} must be a non-negative integer, got {n!r}")
    return n


def _indices(op: str, name: str, idx: Any, pairs: int | None, upper: int, upper_name: str) -> mx.array:
    """A 1-D integer index array with ``pairs`` entries, each in [0, upper), as int32."""
    idx = _array(op, name, idx)
    if idx.ndim != 1 or not mx.issubdtype(idx.dtype, mx.integer):
        raise ValueError(f"{op}: {name} must be a 1-D integer array, got shape {tuple(idx.shape)} and dtype {idx.dtype}")
    if pairs is not None and idx.shape[0] != pairs:
        raise ValueError(f"{op}: {name} has shape {tuple(idx.shape)} but a_idx has {pairs} entries; "
                         "every index array needs one entry per pair")
    values = np.asarray(idx)
    bad = np.flatnonzero((values < 0) | (values >= upper))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{op}: {name} holds {int(values[i])} at position {i}, outside [0, {upper_name}) = "
                         f"[0, {upper})")
    return idx.astype(mx.int32)


def _check_pairs(op: str, a_idx: Any, b_idx: Any, o_idx: Any, na: int, nb: int, n: int):
    a_idx = _indices(op, "a_idx", a_idx, None, na, "Na")
    t = a_idx.shape[0]
    return a_idx, _indices(op, "b_idx", b_idx, t, nb, "Nb"), _indices(op, "o_idx", o_idx, t, n, "n")


# ----------------------------------------------------------------------------- public functions
def mvmr(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array, n: int) -> mx.array:
    """Sparse matrix-vector products, reduced: ``o[o_idx[t]] += b[b_idx[t]] @ a[a_idx[t]]`` per group.

    ``a`` (Na, G, C, M) float32, ``b`` (Nb, G, C) float32, three int index arrays of T entries,
    ``n`` output rows. Returns (n, G, M). Differentiable with respect to ``a`` and ``b``.
    """
    a = _values("mvmr", "a", a, 4, "(Na, G, C, M)")
    b = _values("mvmr", "b", b, 3, "(Nb, G, C)")
    na, g, c, m = a.shape
    if tuple(b.shape[1:]) != (g, c):
        raise ValueError(f"mvmr: b has shape {tuple(b.shape)} but a has shape {tuple(a.shape)}: "
                         f"b must be (Nb, G={g}, C={c})")
    n = _count("mvmr", "n", n)
    a_idx, b_idx, o_idx = _check_pairs("mvmr", a_idx, b_idx, o_idx, na, b.shape[0], n)
    return _mvmr(a, a_idx, b, b_idx, o_idx, n)


def vvor(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array, n: int) -> mx.array:
    """Sparse outer products, reduced: ``o[o_idx[t], g] += outer(a[a_idx[t], g], b[b_idx[t], g])``.

    ``a`` (Na, G, M) float32, ``b`` (Nb, G, C) float32, three int index arrays of T entries,
    ``n`` output rows. Returns (n, G, M, C). Differentiable with respect to ``a`` and ``b``.
    """
    a = _values("vvor", "a", a, 3, "(Na, G, M)")
    b = _values("vvor", "b", b, 3, "(Nb, G, C)")
    if b.shape[1] != a.shape[1]:
        raise ValueError(f"vvor: b has shape {tuple(b.shape)} but a has shape {tuple(a.shape)}: "
                         f"b must be (Nb, G={a.shape[1]}, C)")
    n = _count("vvor", "n", n)
    a_idx, b_idx, o_idx = _check_pairs("vvor", a_idx, b_idx, o_idx, a.shape[0], b.shape[0], n)
    return _vvor(a, a_idx, b, b_idx, o_idx, n)


def segment_sum(x: mx.array, lengths: mx.array) -> mx.array:
    """Sums of consecutive segments of rows: ``y[k]`` is the sum of the ``lengths[k]`` rows of ``x``
    after those of segments ``0..k-1``; empty segments give zero rows.

    ``x`` (N, C) float32, ``lengths`` (K,) non-negative integers adding up to N. Returns (K, C).
    Differentiable with respect to ``x``.
    """
    x = _values("segment_sum", "x", x, 2, "(N, C)")
    lengths = _array("segment_sum", "lengths", lengths)
    if lengths.ndim != 1 or not mx.issubdtype(lengths.dtype, mx.integer):
        raise ValueError(f"segment_sum: lengths must be a 1-D integer array, got shape {tuple(lengths.shape)} "
                         f"and dtype {lengths.dtype}")
    lens = np.asarray(lengths).astype(np.int64)
    if (lens < 0).any():
        i = int(np.flatnonzero(lens < 0)[0])
        raise ValueError(f"segment_sum: lengths holds {int(lens[i])} at position {i}; lengths cannot be negative")
    if int(lens.sum()) != x.shape[0]:
        raise ValueError(f"segment_sum: lengths add up to {int(lens.sum())} but x has {x.shape[0]} rows "
                         f"(shape {tuple(x.shape)})")
    return _segment_sum(x, lengths.astype(mx.int32))


# ----------------------------------------------------------------------------- Part V
def _row_length(op: str, x: mx.array, longest: int) -> None:
    if not 0 < x.shape[1] <= longest:
        raise ValueError(f"{op}: rows of x must hold 1 to {longest} values (the kernel's threads each keep a "
                         f"fixed number of them), got shape {tuple(x.shape)}")


def _rms_norm_vjp(primals: tuple[Any, ...], cotangent: mx.array) -> tuple[Any, ...]:
    x, w = primals
    # y = x * r * w with r = (mean(x^2) + eps)^(-1/2) per row, and dr/dx_j = -r^3 x_j / N:
    # dx = r * g - x * r^3 * mean(g * x) with g = dy * w;  dw = sum over rows of dy * x * r.
    r = mx.rsqrt(mx.mean(x * x, axis=1, keepdims=True) + RMS_EPS)
    g = cotangent * w
    grad_x = r * g - x * (r * r * r) * mx.mean(g * x, axis=1, keepdims=True)
    grad_w = mx.sum(cotangent * x * r, axis=0)
    return grad_x, grad_w


_rms_norm = wiring.differentiable(lambda x, w: launchers.run_rms_norm(_kernel("rms_norm"), x, w), _rms_norm_vjp)


def _pair_seconds_negated(x: mx.array, traditional: bool) -> mx.array:
    """``x`` with the second value of each rotated pair negated: x[2i+1] (interleaved pairs) or
    x[i + D/2] (halves)."""
    d = x.shape[-1]
    second = (mx.arange(d) % 2 == 1) if traditional else (mx.arange(d) >= d // 2)
    return mx.where(second, -x, x)


def _rope_op(traditional: bool):
    """Rotary embeddings in one layout as an ``mx.custom_function`` differentiable in ``x``."""
    puzzle_id = "rope_traditional" if traditional else "rope"

    def rope_op(x: mx.array, offset: int) -> mx.array:
        return launchers.run_rope(_kernel(puzzle_id), x, offset)

    def rope_op_vjp(primals: tuple[Any, ...], cotangent: mx.array) -> tuple[Any, ...]:
        x, offset = primals
        # Each pair turns by R(theta); its vjp turns the cotangent's pair by R(theta)^T = R(-theta),
        # and R(-theta) = S R(theta) S with S negating the pair's second value.
        turned = launchers.run_rope(_kernel(puzzle_id), _pair_seconds_negated(cotangent, traditional), offset)
        return _pair_seconds_negated(turned, traditional), None

    return wiring.differentiable(rope_op, rope_op_vjp)


_ROPE = {traditional: _rope_op(traditional) for traditional in (True, False)}


def _quantized_matvec_forward(x: mx.array, w_q: mx.array, scales: mx.array, biases: mx.array) -> mx.array:
    return launchers.run_quantized_matvec(_kernel("quantized_matvec"), x, w_q, scales, biases)


def _quantized_matvec_vjp(primals: tuple[Any, ...], cotangent: mx.array) -> tuple[Any, ...]:
    x, w_q, scales, biases = primals
    # out[n] = sum_k x[k] (scale[n, g(k)] q[n, k] + bias[n, g(k)]): dx = dy @ W (the dequantized
    # matrix); a group's scale meets sum over the group of x q, its bias sum over the group of x.
    grad_x = mx.quantized_matmul(cotangent[None], w_q, scales, biases, transpose=False, group_size=GROUP,
                                 bits=BITS)[0]
    n, k = w_q.shape[0], x.shape[0]
    q = mx.dequantize(w_q, mx.ones_like(scales), mx.zeros_like(biases), group_size=GROUP, bits=BITS)
    xq = (q * x).reshape(n, k // GROUP, GROUP).sum(axis=2)
    grad_scales = cotangent[:, None] * xq
    grad_biases = cotangent[:, None] * x.reshape(k // GROUP, GROUP).sum(axis=1)
    return grad_x, mx.zeros_like(w_q), grad_scales, grad_biases


_quantized_matvec = wiring.differentiable(_quantized_matvec_forward, _quantized_matvec_vjp)


def rms_norm(x: mx.array, w: mx.array) -> mx.array:
    """``mx.fast.rms_norm(x, w, 1e-5)`` with V.1's kernel: ``x`` (R, N) float32, N at most 256, ``w`` (N,).
    Differentiable with respect to ``x`` and ``w``."""
    x = _values("rms_norm", "x", x, 2, "(R, N)")
    w = _values("rms_norm", "w", w, 1, "(N,)")
    _row_length("rms_norm", x, RMS_LONGEST)
    if w.shape[0] != x.shape[1]:
        raise ValueError(f"rms_norm: w has shape {tuple(w.shape)} but x has shape {tuple(x.shape)}: "
                         f"w must be ({x.shape[1]},)")
    return _rms_norm(x, w)


def rope(x: mx.array, offset: int, traditional: bool = False) -> mx.array:
    """``mx.fast.rope(x, D, traditional=traditional, base=10000, scale=1, offset=offset)`` with V.2's
    kernels: ``x`` (H, L, D) float32 with D even, the first row at position ``offset``.
    Differentiable with respect to ``x``."""
    x = _values("rope", "x", x, 3, "(H, L, D)")
    if x.shape[2] % 2 or x.shape[2] // 2 > MAX_THREADGROUP:
        raise ValueError(f"rope: the head dimension D must be even and at most {2 * MAX_THREADGROUP}, "
                         f"got shape {tuple(x.shape)}")
    offset = _count("rope", "offset", offset)
    return _ROPE[bool(traditional)](x, offset)


def quantized_matvec(x: mx.array, w_q: mx.array, scales: mx.array, biases: mx.array) -> mx.array:
    """``mx.quantized_matmul(x, w_q, scales, biases, transpose=True, group_size=64, bits=4)`` with V.3's
    kernel: ``x`` (K,) float32, ``w_q`` (N, K/8) uint32, ``scales`` and ``biases`` (N, K/64) float32.
    Differentiable with respect to ``x``, ``scales`` and ``biases``."""
    x = _values("quantized_matvec", "x", x, 1, "(K,)")
    w_q = _array("quantized_matvec", "w_q", w_q)
    k = x.shape[0]
    if k % GROUP:
        raise ValueError(f"quantized_matvec: x has {k} values; K must be a multiple of the group size {GROUP}")
    if w_q.ndim != 2 or w_q.dtype != mx.uint32 or w_q.shape[1] != k // PER_WORD:
        raise ValueError(f"quantized_matvec: w_q must be uint32 of shape (N, {k // PER_WORD}) (K/8 words a row, "
                         f"as mx.quantize makes it), got shape {tuple(w_q.shape)} and dtype {w_q.dtype}")
    groups = (w_q.shape[0], k // GROUP)
    scales = _values("quantized_matvec", "scales", scales, 2, "(N, K/64)")
    biases = _values("quantized_matvec", "biases", biases, 2, "(N, K/64)")
    for name, a in (("scales", scales), ("biases", biases)):
        if tuple(a.shape) != groups:
            raise ValueError(f"quantized_matvec: {name} must have shape {groups} (one per group of {GROUP}), "
                             f"got {tuple(a.shape)}")
    return _quantized_matvec(x, w_q, scales, biases)


def decode_attention(q: mx.array, k: mx.array, v: mx.array) -> mx.array:
    """Attention of one new token over a KV cache with V.4's kernel: ``q`` (H, D), ``k`` and ``v``
    (KV, T, D) float32, H a multiple of KV (query head h reads KV head h // (H / KV)), D at most 64,
    T 1 to 32; scores scaled by D**-0.5. Returns (H, D)."""
    q = _values("decode_attention", "q", q, 2, "(H, D)")
    k = _values("decode_attention", "k", k, 3, "(KV, T, D)")
    v = _values("decode_attention", "v", v, 3, "(KV, T, D)")
    heads, d = q.shape
    if tuple(v.shape) != tuple(k.shape) or k.shape[2] != d:
        raise ValueError(f"decode_attention: k and v must both be (KV, T, {d}), got {tuple(k.shape)} and "
                         f"{tuple(v.shape)}")
    if heads % k.shape[0]:
        raise ValueError(f"decode_attention: the {heads} query heads must be a multiple of the {k.shape[0]} KV heads")
    if not 0 < d <= ATTENTION_MAX_D or not 0 < k.shape[1] <= ATTENTION_LONGEST:
        raise ValueError(f"decode_attention: D must be 1 to {ATTENTION_MAX_D} and T 1 to {ATTENTION_LONGEST} "
                         f"(the kernel's registers and budget), got q {tuple(q.shape)} and k {tuple(k.shape)}")
    return launchers.run_decode_attention(_kernel("decode_attention"), q, k, v)


def argmax(x: mx.array) -> mx.array:
    """``mx.argmax(x, axis=1)`` with V.5's kernel: ``x`` (R, V) float32, V at most 512; uint32 indices,
    the first where a row's largest value repeats."""
    x = _values("argmax", "x", x, 2, "(R, V)")
    _row_length("argmax", x, ARGMAX_LONGEST)
    return launchers.run_argmax(_kernel("argmax"), x)


def topk(x: mx.array) -> mx.array:
    """The indices of each row's 8 largest values with V.6's kernel, largest first, ties in index
    order (``mx.argsort(-x, axis=1)[:, :8]``; ``mx.topk`` gives the values, in no promised order):
    ``x`` (R, V) float32 of finite values, V from 8 to 256; uint32 indices of shape (R, 8)."""
    x = _values("topk", "x", x, 2, "(R, V)")
    if not TOPK_K <= x.shape[1] <= TOPK_LONGEST:
        raise ValueError(f"topk: rows of x must hold {TOPK_K} to {TOPK_LONGEST} values (the {TOPK_K} it returns, and "
                         f"what the kernel's threads keep), got shape {tuple(x.shape)}")
    if not bool(mx.isfinite(x).all()):
        raise ValueError("topk: x must hold finite values (the kernel's 'no value' is -INFINITY)")
    return launchers.run_topk(_kernel("topk"), x)


#: The most keys a radix pass takes: its scatter ranks each key by a loop over the keys before it.
RADIX_LONGEST = 4096
#: Bits of a digit: one pass orders the keys by 4 of their 32 bits.
DIGIT_BITS = RADIX.bit_length() - 1


def _keys(op: str, keys: Any) -> mx.array:
    keys = _array(op, "keys", keys)
    if keys.ndim != 1 or keys.dtype != mx.uint32:
        raise ValueError(f"{op}: keys must be a 1-D uint32 array, got shape {tuple(keys.shape)} and dtype {keys.dtype}")
    if keys.shape[0] > RADIX_LONGEST:
        raise ValueError(f"{op}: keys holds {keys.shape[0]} values; at most {RADIX_LONGEST} (the scatter ranks each key "
                         "by a loop over the keys before it)")
    return keys


def radix_sort_pass(keys: mx.array, shift: int) -> mx.array:
    """One pass of a radix sort with V.11's shader: ``keys`` (N,) uint32, N at most 4096, ordered by
    the digit ``(key >> shift) & 15``, keys of equal digits in their order; ``shift`` 0 to 28."""
    keys = _keys("radix_sort_pass", keys)
    shift = _count("radix_sort_pass", "shift", shift)
    if shift > 32 - DIGIT_BITS:
        raise ValueError(f"radix_sort_pass: shift must be 0 to {32 - DIGIT_BITS} (a digit is {DIGIT_BITS} of the "
                         f"key's 32 bits), got {shift}")
    return launchers.run_radix_pass(_kernel("radix_pass"), keys, shift)


def radix_sort(keys: mx.array) -> mx.array:
    """``mx.sort(keys)`` for uint32 keys (N at most 4096) by eight radix passes, the lowest digit
    first: each pass is stable, so the order the earlier digits set survives among equal digits."""
    keys = _keys("radix_sort", keys)
    for shift in range(0, 32, DIGIT_BITS):
        keys = launchers.run_radix_pass(_kernel("radix_pass"), keys, shift)
    return keys
