"""Launchers: each starts one Part II or Part V puzzle's kernel with that puzzle's grid convention, on
MLX arrays, and returns the output as an ``mx.array``. The finale's templates, ``metal_puzzles.ops``
and the grader's gradient wiring share them.

``kernel`` is a ``MetalKernel`` or a notebook test function returning one (``mvmr_fast_test``);
``options`` reach the kernel call (``sanitize``, ``max_steps``, ``backend``).
"""

from __future__ import annotations

from typing import Any

import mlx.core as mx
import numpy as np

from ...checking import as_kernel, launch
from ...checking.pipeline import run_pipeline
from ...msl import SanitizeMode
from ..part2.segment_sum_large import TG as LARGE_TG
from ..part5.argmax import TG as ARGMAX_TG
from ..part5.decode_attention import TG as ATTENTION_TG
from ..part5.gated_mlp import ROWS as MLP_ROWS
from ..part5.gated_mlp import TOKENS as MLP_TOKENS
from ..part5.kv_cache_append import TG as KV_APPEND_TG
from ..part5.prefill_attention import check_shapes as check_prefill_shapes
from ..part5.prefill_attention import launch_shape as prefill_launch_shape
from ..part5.quantized_matvec import ROWS as QMV_ROWS
from ..part5.radix_pass import PIPELINE as RADIX_PIPELINE
from ..part5.radix_pass import pass_case
from ..part5.rms_norm import TG as RMS_TG
from ..part5.sampling import TG as SAMPLING_TG
from ..part5.topk import TG as TOPK_TG
from ..part5.topk import K as TOPK_K


def _n(value: Any) -> int:
    """A count given as a Python number or a 0-d MLX array."""
    item = value.item() if isinstance(value, mx.array) else value
    if isinstance(item, complex):
        raise TypeError(f"a count must be a real number, got {item!r}")
    return int(item)


def _count(value: Any) -> mx.array:
    """A count as a kernel's 0-d int32 input."""
    return mx.array(_n(value), dtype=mx.int32)


def run_mvmr(kernel: Any, a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array,
             n: Any, **options: Any) -> mx.array:
    """MVMR with II.7b's kernel: one threadgroup of M threads per (t, g)."""
    _, g, _, m = a.shape
    t = a_idx.shape[0]
    return launch(kernel, [a, a_idx, b, b_idx, o_idx, _count(n)], (_n(n), g, m), (m, g, t), (m, 1, 1),
                  init_value=0.0, **options)


def run_mvmr_simple(kernel: Any, a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array,
                    n: Any, **options: Any) -> mx.array:
    """MVMR with II.7a's kernel: one thread per (t, g, m)."""
    _, g, _, m = a.shape
    t = a_idx.shape[0]
    return launch(kernel, [a, a_idx, b, b_idx, o_idx, _count(n)], (_n(n), g, m), (m, g, t),
                  (min(m, 64), 1, 1), init_value=0.0, **options)


def run_vvor(kernel: Any, a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array,
             n: Any, **options: Any) -> mx.array:
    """VVOR with II.8's kernel: thread (c, m, t * G + g)."""
    _, g, m = a.shape
    c = b.shape[2]
    t = a_idx.shape[0]
    return launch(kernel, [a, a_idx, b, b_idx, o_idx, _count(n)], (_n(n), g, m, c), (c, m, t * g),
                  (min(c, 16), min(m, 16), 1), init_value=0.0, **options)


def run_mvmr_backward_b(kernel: Any, a: mx.array, a_idx: mx.array, dout: mx.array, o_idx: mx.array,
                        b_idx: mx.array, nb: Any, **options: Any) -> mx.array:
    """db with II.9's kernel: thread (c, g, t)."""
    _, g, c, _ = a.shape
    t = a_idx.shape[0]
    return launch(kernel, [a, a_idx, dout, o_idx, b_idx, _count(nb)], (_n(nb), g, c), (c, g, t),
                  (min(c, 64), 1, 1), init_value=0.0, **options)


def run_segment_sum(kernel: Any, x: mx.array, lengths: mx.array, offsets: mx.array, **options: Any) -> mx.array:
    """Segment sum with II.4's kernel: thread (c, k)."""
    k, c = lengths.shape[0], x.shape[1]
    return launch(kernel, [x, lengths, offsets], (k, c), (c, k, 1), (min(c, 16), min(k, 16), 1), **options)


def run_segment_sum_large(kernel: Any, x: mx.array, lengths: mx.array, offsets: mx.array,
                          **options: Any) -> mx.array:
    """Segment sum with II.5's kernel: threadgroup (0, c, k) of TG threads."""
    k, c = lengths.shape[0], x.shape[1]
    return launch(kernel, [x, lengths, offsets], (k, c), (LARGE_TG, c, k), (LARGE_TG, 1, 1), **options)


def run_segment_sum_backward(kernel: Any, dy: mx.array, lengths: mx.array, offsets: mx.array, rows: int,
                             **options: Any) -> mx.array:
    """dx with II.6's kernel: thread (c, t), exactly ``rows`` rows of threads."""
    c = dy.shape[1]
    return launch(kernel, [dy, lengths, offsets], (rows, c), (c, rows, 1), (min(c, 16), min(max(rows, 1), 16), 1),
                  **options)


# ----------------------------------------------------------------------------- Part V
def run_rms_norm(kernel: Any, x: mx.array, w: mx.array, **options: Any) -> mx.array:
    """RMSNorm with V.1's kernel: one threadgroup per row."""
    rows = x.shape[0]
    return launch(kernel, [x, w], x.shape, (RMS_TG, rows, 1), (RMS_TG, 1, 1), **options)


def run_rope(kernel: Any, x: mx.array, offset: Any, **options: Any) -> mx.array:
    """Rotary embeddings with V.2's kernels (either layout): one thread per pair, a threadgroup per
    position of a head (the kernels read thread_position_in_grid only)."""
    heads, length, d = x.shape
    return launch(kernel, [x, _count(offset)], x.shape, (d // 2, length, heads), (d // 2, 1, 1), **options)


def run_quantized_matvec(kernel: Any, x: mx.array, w_q: mx.array, scales: mx.array, biases: mx.array,
                         **options: Any) -> mx.array:
    """The 4-bit product with V.3's kernel: one SIMD-group per block of rows."""
    n = w_q.shape[0]
    return launch(kernel, [x, w_q, scales, biases], (n,), (32, -(-n // QMV_ROWS), 1), (32, 1, 1), **options)


def run_decode_attention(kernel: Any, q: mx.array, k: mx.array, v: mx.array, **options: Any) -> mx.array:
    """Attention of one token over a KV cache with V.4's kernel: one threadgroup per query head."""
    heads = q.shape[0]
    return launch(kernel, [q, k, v], q.shape, (ATTENTION_TG, heads, 1), (ATTENTION_TG, 1, 1), **options)


def run_prefill_attention(kernel: Any, q: mx.array, k: mx.array, v: mx.array, **options: Any) -> mx.array:
    """Attention of a prompt's L queries (H, L, D) over a cache (KV, T, D) that already holds their keys
    as its last L rows, with V.9's kernel: one threadgroup per (query tile, head), the causal mask at
    the cache offset T - L. The output has q's shape and dtype."""
    q, k, v = (x if isinstance(x, mx.array) else mx.array(x) for x in (q, k, v))
    check_prefill_shapes(q.shape, k.shape, v.shape)
    heads, queries, _ = q.shape
    grid, threadgroup = prefill_launch_shape(heads, queries)
    return launch(kernel, [q, k, v], q.shape, grid, threadgroup, output_dtype=q.dtype, **options)


def run_argmax(kernel: Any, x: mx.array, **options: Any) -> mx.array:
    """Argmax with V.5's kernel: one threadgroup per row; uint32 indices."""
    rows = x.shape[0]
    return launch(kernel, [x], (rows,), (ARGMAX_TG, rows, 1), (ARGMAX_TG, 1, 1), output_dtype=mx.uint32, **options)


def run_kv_cache_append(kernel: Any, k: mx.array, v: mx.array, offset: Any, t_max: Any, **options: Any) -> mx.array:
    """The KV-cache append with its puzzle's kernel: one thread per element of the step's keys
    ``(B, KV, L, D)``; the output ``(2, B, KV, t_max, D)`` holds keys then values, zeros (a fresh
    buffer) wherever the step writes nothing."""
    b, kv, _, d = k.shape
    return launch(kernel, [k, v, _count(offset), _count(t_max)], (2, b, kv, _n(t_max), d), (k.size, 1, 1),
                  (KV_APPEND_TG, 1, 1), init_value=0.0, **options)


def run_sampling(kernel: Any, logits: mx.array, u: mx.array, temperature: Any, top_p: Any,
                 **options: Any) -> mx.array:
    """Top-p sampling with its puzzle's kernel: one threadgroup per row of ``logits`` ``(R, V)``, the
    row's uniform number ``u[r]``; uint32 tokens."""
    rows = logits.shape[0]
    return launch(kernel, [logits, u, mx.array(temperature, dtype=mx.float32), mx.array(top_p, dtype=mx.float32)],
                  (rows,), (SAMPLING_TG, rows, 1), (SAMPLING_TG, 1, 1), output_dtype=mx.uint32, **options)


def run_topk(kernel: Any, x: mx.array, **options: Any) -> mx.array:
    """Top-k with V.6's kernel: one threadgroup per row; uint32 indices, K a row."""
    rows = x.shape[0]
    return launch(kernel, [x], (rows, TOPK_K), (TOPK_TG, rows, 1), (TOPK_TG, 1, 1), output_dtype=mx.uint32,
                  **options)


def run_gated_mlp(kernel: Any, x: mx.array, gate_q: mx.array, gate_scales: mx.array, gate_biases: mx.array,
                  up_q: mx.array, up_scales: mx.array, up_biases: mx.array, **options: Any) -> mx.array:
    """silu(x @ W_gate.T) * (x @ W_up.T) with V.10's kernel: one SIMD-group per block of rows of both
    matrices and block of tokens; x (L, K) of any L (1 decodes, a prompt prefills), out (L, N) in
    x's dtype."""
    x = x if isinstance(x, mx.array) else mx.array(x)
    length, n = x.shape[0], gate_q.shape[0]
    return launch(kernel, [x, gate_q, gate_scales, gate_biases, up_q, up_scales, up_biases], (length, n),
                  (32, -(-n // MLP_ROWS), -(-length // MLP_TOKENS)), (32, 1, 1), output_dtype=x.dtype, **options)


def run_radix_pass(kernel: Any, keys: mx.array, shift: int, **options: Any) -> mx.array:
    """One radix sort pass with V.11's shader: its histogram, scan and scatter kernels in turn, as the
    puzzle's host runs them; the keys ordered by the digit at ``shift``, stably. A finding in any
    stage raises (``sanitize``, as for every launcher); ``max_steps`` bounds each stage."""
    if keys.size == 0:
        return mx.zeros((0,), dtype=mx.uint32)
    case = pass_case(np.asarray(keys), int(shift), "radix pass")
    run = run_pipeline(RADIX_PIPELINE, as_kernel(kernel, [keys]), case, "uint32", max_steps=options.get("max_steps"),
                       sanitize=SanitizeMode(options.get("sanitize", SanitizeMode.ERROR)))
    if run.stopped is not None:
        raise RuntimeError(f"the radix pass's '{run.kernel_name}' kernel did not finish ({run.stopped})")
    return mx.array(run.outputs[0])
