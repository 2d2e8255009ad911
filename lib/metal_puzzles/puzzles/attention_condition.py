"""The condition of scaled-dot-product attention in closed form, for the conditioned error model
(``checking.tolerance.compare_conditioned``): the same sum_i |d out / d x_i| |x_i| the checker
otherwise builds from the whole Jacobian by autodiff, which for the finale's attention over
thousands of cached keys would take minutes (every output depends on every key and value of its
head). tests/test_decode_step.py holds the two equal on small cases, but for the count of partials:
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

import numpy as np


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
    nonzero_q = (q != 0).sum(axis=-1)[..., None]  # (H, L, 1)
    depends_on += np.einsum("hlt,hltd->hld", weighted.astype(np.float64), (dev > 0).astype(np.float64)) * nonzero_q
    # The query: scale * sum_e |sum_j p_j (v_jd - out_d) k_je| |q_e|.
    dq = scale * np.einsum("hlt,hltd,hte->hlde", p, vh[:, None, :, :] - out[:, :, None, :], kh)
    condition += np.einsum("hlde,hle->hld", np.abs(dq), np.abs(q))
    depends_on += (dq != 0).sum(axis=-1)
    return condition, depends_on


def decode_attention_condition(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same for V.4's one new token: ``q`` (H, D) over the whole cache; each (H, D)."""
    condition, depends_on = attention_condition(q[:, None, :], k, v)
    return condition[:, 0, :], depends_on[:, 0, :]
