"""The condition of the finale's stages in closed form, for the conditioned error model
(``checking.tolerance.compare_conditioned``): the same sum_i |d out / d x_i| |x_i| the checker
otherwise builds from the whole Jacobian by autodiff, a vector-Jacobian product an output element,
which for the finale's prefill (thousands of outputs: 32 tokens of every head or row) and its
attention over thousands of cached keys would take minutes.

Attention (``attention_condition``). tests/puzzles/part5/test_decode_step.py holds the two equal on small cases, but for the count of partials:
MLX's autodiff of attention flushes a weight below float32's range (exp(-100)) to zero and counts
no partial for it, where this counts every weight float64 holds, so its allowance is, if anything,
a little larger.

For query row ``q`` (one head, one token) over its visible keys ``k_j`` and values ``v_j``, with
``p = softmax(scale * q . k_j)`` and ``out = sum_j p_j v_j``:

- d out_d / d v_jd = p_j;
- d out_d / d q_e = scale * sum_j p_j (v_jd - out_d) k_je;
- d out_d / d k_je = scale * p_j (v_jd - out_d) q_e.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from ..part5.rms_norm import EPS


def attention_condition(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For queries ``q`` (H, L, D), the last L positions of the cache ``k``, ``v`` (KV, T, D),
    causal (query i sees keys 0 to T - L + i), query head h on key/value head h // (H / KV), scale
    1 / sqrt(D): the condition and the count of nonzero partial derivatives, each (H, L, D)."""
    heads, length, d = q.shape
    kv, t, _ = k.shape
    group = heads // kv
    scale = d**-0.5
    kh, vh = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)  # (H, T, D): each query head's
    visible = np.arange(t)[None, :] <= (t - length + np.arange(length))[:, None]  # (L, T)
    s = np.where(visible, scale * np.einsum("hld,htd->hlt", q, kh), -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)  # (H, L, T)
    out = np.einsum("hlt,htd->hld", p, vh)
    # Values: sum_j p_j |v_jd|, and one partial for each key with p_j > 0.
    condition = np.einsum("hlt,htd->hld", p, np.abs(vh))
    weighted = p > 0
    depends_on = np.broadcast_to(weighted.sum(axis=-1)[..., None], q.shape).astype(np.float64)
    # Keys: scale * sum_j p_j |v_jd - out_d| * sum_e |q_e| |k_je|.
    qk = np.einsum("hle,hte->hlt", np.abs(q), np.abs(kh))
    dev = np.abs(vh[:, None, :, :] - out[:, :, None, :])  # (H, L, T, D)
    condition += scale * np.einsum("hlt,hltd->hld", p * qk, dev)
    # Partials are counted where they exist, not where they happen to vanish (a key whose value is
    # exactly the output's, a test's inputs on a grid): autodiff, rounding, finds those nonzero, and
    # a kernel's sums round there all the same.
    nonzero_q = (q != 0).sum(axis=-1)[..., None]  # (H, L, 1)
    depends_on += weighted.sum(axis=-1)[..., None] * nonzero_q
    # The query: scale * sum_e |sum_j p_j (v_jd - out_d) k_je| |q_e|.
    dq = scale * np.einsum("hlt,hltd,hte->hlde", p, vh[:, None, :, :] - out[:, :, None, :], kh)
    condition += np.einsum("hlde,hle->hld", np.abs(dq), np.abs(q))
    # q_e's partial exists where some weighted key has k_je != 0.
    reached = np.einsum("hlt,hte->hle", weighted.astype(np.float64), (kh != 0).astype(np.float64)) > 0
    depends_on += reached.sum(axis=-1)[:, :, None]
    return condition, depends_on


def decode_attention_condition(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same for V.4's one new token: ``q`` (H, D) over the whole cache; each (H, D)."""
    condition, depends_on = attention_condition(q[:, None, :], k, v)
    return condition[:, 0, :], depends_on[:, 0, :]


def rms_norm_condition(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """V.1's ``x * w / sqrt(mean(x^2) + EPS)`` over rows ``x`` (R, N): d out_i / d x_j = w_i (delta_ij / r
    - x_i x_j / (N r^3)) and d out_i / d w_i = x_i / r; each (R, N)."""
    n = x.shape[-1]
    r = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS)  # (R, 1)
    diagonal = np.abs(w / r - w * x * x / (n * r**3)) * np.abs(x)
    others = np.abs(w * x) / (n * r**3) * (np.sum(x * x, axis=-1, keepdims=True) - x * x)
    condition = diagonal + others + np.abs(x / r) * np.abs(w)
    # Every x of the row and w_i: counted whether or not a partial happens to be zero (a bound).
    return condition, np.full(x.shape, n + 1, dtype=np.float64)


def gated_mlp_condition(x: np.ndarray, gate_q: np.ndarray, gate_scales: np.ndarray, gate_biases: np.ndarray,
                        up_q: np.ndarray, up_scales: np.ndarray, up_biases: np.ndarray,
                        group: int = 64, bits: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """V.10's ``silu(x Wg^T) * (x Wu^T)`` over 4-bit weights (W = scale * q + bias by groups), rows
    ``x`` (L, K): the partials by x, and by each group's scale and bias of the two matrices; (L, N)."""
    def unpack(w_q: np.ndarray) -> np.ndarray:
        shifts = np.arange(0, 32, bits, dtype=np.uint32)
        return ((w_q[..., None] >> shifts) & (2**bits - 1)).reshape(w_q.shape[0], -1).astype(np.float64)

    qg, qu = unpack(gate_q), unpack(up_q)  # (N, K)
    wg = np.repeat(gate_scales, group, axis=1) * qg + np.repeat(gate_biases, group, axis=1)
    wu = np.repeat(up_scales, group, axis=1) * qu + np.repeat(up_biases, group, axis=1)
    g, u = x @ wg.T, x @ wu.T  # (L, N)
    sig = 1.0 / (1.0 + np.exp(-g))
    silu, dsilu = g * sig, sig * (1.0 + g * (1.0 - sig))
    by_gate, by_up = dsilu * u, silu  # d out / d g, d out / d u
    # x: sum_k |by_gate wg_nk + by_up wu_nk| |x_k|.
    dx = by_gate[:, :, None] * wg[None] + by_up[:, :, None] * wu[None]  # (L, N, K)
    condition = np.einsum("lnk,lk->ln", np.abs(dx), np.abs(x))
    # Partials counted where they exist, not where they vanish on a test's grid (a sum over a group
    # that cancels exactly, weights of zero): every x_k, and every group's scale and bias of both
    # matrices, enters each output's two sums of K terms.
    groups = x.shape[1] // group
    depends_on = np.full(condition.shape, x.shape[1] + 4 * groups, dtype=np.float64)
    # Each group's scale (sum of x_k q_nk over the group) and bias (sum of x_k), both matrices.
    xs = x.reshape(x.shape[0], 1, -1, group)  # (L, 1, G, group)
    for d_out, q, scales, biases in ((by_gate, qg, gate_scales, gate_biases), (by_up, qu, up_scales, up_biases)):
        d_scale = d_out[:, :, None] * (xs * q.reshape(1, q.shape[0], -1, group)).sum(axis=-1)  # (L, N, G)
        d_bias = d_out[:, :, None] * xs.sum(axis=-1)
        condition += np.einsum("lng,ng->ln", np.abs(d_scale), np.abs(scales)) \
            + np.einsum("lng,ng->ln", np.abs(d_bias), np.abs(biases))
    return condition, depends_on


def dequantized(w_q: mx.array, scales: mx.array, biases: mx.array) -> np.ndarray:
    """A 4-bit matrix as floats (for tests of the closed forms)."""
    return np.asarray(mx.dequantize(w_q, scales, biases, group_size=64, bits=4), dtype=np.float64)
