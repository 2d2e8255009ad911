"""metal_puzzles.ops: mvmr, vvor and segment_sum run the reference kernels and differentiate.

Every value and gradient is compared with a float64 NumPy reference written with plain loops
over pairs and with MLX's own autodiff of the dense spec. Inputs are standard-normal float32;
the tolerance is float32's: rtol=1e-5, atol=1e-5 (sums of at most a few dozen products of
magnitude ~1, so rounding stays near 1e-6).
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from metal_puzzles import ops
from metal_puzzles.puzzles.part2.autodiff import segment_sum_dense
from metal_puzzles.puzzles.part2.mvmr import MAX_C, mvmr_spec
from metal_puzzles.puzzles.part2.vvor import vvor_spec

TOL = dict(rtol=1e-5, atol=1e-5)


def close(got, want) -> None:
    got = np.asarray(got)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, **TOL)


def normal(rng: np.random.Generator, *shape: int) -> mx.array:
    return mx.array(rng.standard_normal(shape).astype(np.float32))


def index(rng: np.random.Generator, count: int, upper: int) -> mx.array:
    idx = rng.integers(0, upper, size=count).astype(np.int32)
    idx[-1] = idx[0]  # at least one repeat
    return mx.array(idx)


def f64(x: mx.array) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


# ----------------------------------------------------------------------------- NumPy references
def mvmr_np(a, a_idx, b, b_idx, o_idx, n, w):
    """o, and the vjps for cotangent w: loops over pairs."""
    a, b, w = f64(a), f64(b), f64(w)
    ai, bi, oi = (np.asarray(i) for i in (a_idx, b_idx, o_idx))
    o = np.zeros((n, a.shape[1], a.shape[3]))
    da, db = np.zeros_like(a), np.zeros_like(b)
    for t in range(len(ai)):
        for g in range(a.shape[1]):
            o[oi[t], g] += b[bi[t], g] @ a[ai[t], g]
            da[ai[t], g] += np.outer(b[bi[t], g], w[oi[t], g])
            db[bi[t], g] += a[ai[t], g] @ w[oi[t], g]
    return o, da, db


def vvor_np(a, a_idx, b, b_idx, o_idx, n, w):
    a, b, w = f64(a), f64(b), f64(w)
    ai, bi, oi = (np.asarray(i) for i in (a_idx, b_idx, o_idx))
    o = np.zeros((n, a.shape[1], a.shape[2], b.shape[2]))
    da, db = np.zeros_like(a), np.zeros_like(b)
    for t in range(len(ai)):
        for g in range(a.shape[1]):
            o[oi[t], g] += np.outer(a[ai[t], g], b[bi[t], g])
            da[ai[t], g] += w[oi[t], g] @ b[bi[t], g]
            db[bi[t], g] += a[ai[t], g] @ w[oi[t], g]
    return o, da, db


def segment_sum_np(x, lengths, w):
    x, w = f64(x), f64(w)
    lens = np.asarray(lengths)
    owner = np.repeat(np.arange(len(lens)), lens)
    y = np.zeros((len(lens), x.shape[1]))
    for row, k in enumerate(owner):
        y[k] += x[row]
    return y, w[owner]


def vjp(fn, primals, cotangent):
    out, grads = mx.vjp(fn, primals, [cotangent])
    return out[0], grads


# ----------------------------------------------------------------------------- mvmr
# (Na, Nb, n, T, G, C, M): C above MAX_C takes II.7a's kernel, the others II.7b's.
MVMR_SHAPES = [(4, 6, 5, 37, 3, 5, 7), (2, 3, 9, 13, 1, 17, 1), (3, 5, 4, 21, 2, MAX_C + 8, 6), (1, 1, 1, 1, 1, 1, 1)]


@pytest.mark.parametrize("shape", MVMR_SHAPES)
def test_mvmr_values_and_vjp_match_numpy_and_mlx(shape):
    na, nb, n, t, g, c, m = shape
    rng = np.random.default_rng(sum(shape))
    a, b = normal(rng, na, g, c, m), normal(rng, nb, g, c)
    a_idx, b_idx, o_idx = index(rng, t, na), index(rng, t, nb), index(rng, t, n)
    w = normal(rng, n, g, m)
    o, (da, db) = vjp(lambda a, b: ops.mvmr(a, a_idx, b, b_idx, o_idx, n), [a, b], w)
    o_np, da_np, db_np = mvmr_np(a, a_idx, b, b_idx, o_idx, n, w)
    close(o, o_np), close(da, da_np), close(db, db_np)
    _, (da_mx, db_mx) = vjp(lambda a, b: mvmr_spec(a, a_idx, b, b_idx, o_idx, n), [a, b], w)
    close(da, np.asarray(da_mx)), close(db, np.asarray(db_mx))


def test_mvmr_grad_of_a_nonlinear_loss_matches_mlx():
    rng = np.random.default_rng(1)
    a, b = normal(rng, 3, 2, 6, 5), normal(rng, 7, 2, 6)
    a_idx, b_idx, o_idx = index(rng, 29, 3), index(rng, 29, 7), index(rng, 29, 11)

    def loss(fn):
        return lambda a, b: mx.sin(fn(a, a_idx, b, b_idx, o_idx, 11)).sum()

    value, grads = mx.value_and_grad(loss(ops.mvmr), argnums=(0, 1))(a, b)
    value_mx, grads_mx = mx.value_and_grad(loss(mvmr_spec), argnums=(0, 1))(a, b)
    close(value, np.asarray(value_mx))
    for got, want in zip(grads, grads_mx, strict=True):
        close(got, np.asarray(want))


def test_mvmr_runs_the_kernel_each_size_needs():
    rng = np.random.default_rng(2)
    for c, puzzle_id in ((4, "mvmr_fast"), (MAX_C + 1, "mvmr_simple")):
        kernel = ops._kernel(puzzle_id).kernel
        kernel.last_run = None
        ops.mvmr(normal(rng, 2, 1, c, 3), index(rng, 5, 2), normal(rng, 2, 1, c), index(rng, 5, 2),
                 index(rng, 5, 4), 4)
        assert kernel.last_run is not None and kernel.last_run.counts.max()["atomics"] == 1


def test_mvmr_takes_strided_views():
    rng = np.random.default_rng(3)
    a = normal(rng, 3, 2, 4, 5).transpose(0, 1, 3, 2)  # (3, 2, 5, 4), not row-contiguous
    b = normal(rng, 2, 6, 5)[:, ::3]  # (2, 2, 5), strided
    a_idx, b_idx, o_idx = index(rng, 9, 3), index(rng, 9, 2), index(rng, 9, 4)
    close(ops.mvmr(a, a_idx, b, b_idx, o_idx, 4), mvmr_np(a, a_idx, b, b_idx, o_idx, 4, mx.zeros((4, 2, 4)))[0])


# ----------------------------------------------------------------------------- vvor
@pytest.mark.parametrize("shape", [(4, 6, 5, 37, 3, 7, 5), (2, 3, 9, 13, 1, 1, 17), (1, 1, 1, 1, 1, 1, 1)])
def test_vvor_values_and_vjp_match_numpy_and_mlx(shape):
    na, nb, n, t, g, m, c = shape
    rng = np.random.default_rng(sum(shape) + 100)
    a, b = normal(rng, na, g, m), normal(rng, nb, g, c)
    a_idx, b_idx, o_idx = index(rng, t, na), index(rng, t, nb), index(rng, t, n)
    w = normal(rng, n, g, m, c)
    o, (da, db) = vjp(lambda a, b: ops.vvor(a, a_idx, b, b_idx, o_idx, n), [a, b], w)
    o_np, da_np, db_np = vvor_np(a, a_idx, b, b_idx, o_idx, n, w)
    close(o, o_np), close(da, da_np), close(db, db_np)
    _, (da_mx, db_mx) = vjp(lambda a, b: vvor_spec(a, a_idx, b, b_idx, o_idx, n), [a, b], w)
    close(da, np.asarray(da_mx)), close(db, np.asarray(db_mx))


# ----------------------------------------------------------------------------- segment_sum
SEGMENTS = [
    [3, 0, 5, 1, 0, 2, 7],  # short segments, some empty: II.4's kernel
    [0, 70, 0, 41, 3],  # long segments: II.5's kernel
    [0, 0, 4, 0],
    [1],
]


@pytest.mark.parametrize("lens", SEGMENTS)
def test_segment_sum_values_and_vjp_match_numpy_and_mlx(lens):
    rng = np.random.default_rng(len(lens))
    lengths = mx.array(np.array(lens, np.int32))
    x = normal(rng, sum(lens), 3)
    w = normal(rng, len(lens), 3)
    y, (dx,) = vjp(lambda x: ops.segment_sum(x, lengths), [x], w)
    y_np, dx_np = segment_sum_np(x, lengths, w)
    close(y, y_np), close(dx, dx_np)
    _, (dx_mx,) = vjp(lambda x: segment_sum_dense(x, lengths), [x], w)
    close(dx, np.asarray(dx_mx))


def test_segment_sum_uses_the_threadgroup_kernel_for_long_segments():
    kernel = ops._kernel("segment_sum_large").kernel
    kernel.last_run = None
    ops.segment_sum(mx.ones((120, 2)), mx.array([60, 0, 60], dtype=mx.int32))
    assert kernel.last_run is not None and kernel.last_run.counts.max()["shared_writes"] >= 1


def test_gradients_flow_through_a_chain_of_ops():
    rng = np.random.default_rng(4)
    a, b = normal(rng, 3, 2, 4, 3), normal(rng, 5, 2, 4)
    a_idx, b_idx, o_idx = index(rng, 17, 3), index(rng, 17, 5), index(rng, 17, 6)
    lengths = mx.array([2, 0, 3, 1], dtype=mx.int32)

    def loss(mvmr, seg):
        def f(a, b):
            o = mvmr(a, a_idx, b, b_idx, o_idx, 6).reshape(6, 6)
            return (seg(o, lengths) ** 2).sum()
        return f

    got = mx.grad(loss(ops.mvmr, ops.segment_sum), argnums=(0, 1))(a, b)
    want = mx.grad(loss(mvmr_spec, segment_sum_dense), argnums=(0, 1))(a, b)
    for g, w in zip(got, want, strict=True):
        close(g, np.asarray(w))


# ----------------------------------------------------------------------------- edge cases
def test_empty_inputs_give_zeros():
    none = mx.array(np.zeros(0, np.int32))
    assert np.asarray(ops.mvmr(mx.ones((2, 1, 3, 4)), none, mx.ones((2, 1, 3)), none, none, 3)).tolist() == \
        np.zeros((3, 1, 4)).tolist()
    assert ops.mvmr(mx.ones((2, 1, 3, 4)), none, mx.ones((2, 1, 3)), none, none, 0).shape == (0, 1, 4)
    assert ops.vvor(mx.ones((2, 1, 3)), none, mx.ones((2, 1, 4)), none, none, 2).shape == (2, 1, 3, 4)
    y = ops.segment_sum(mx.zeros((0, 3)), mx.array([0, 0], dtype=mx.int32))
    assert np.asarray(y).tolist() == [[0, 0, 0], [0, 0, 0]]
    assert ops.segment_sum(mx.zeros((0, 3)), none).shape == (0, 3)
    dx = mx.grad(lambda x: ops.segment_sum(x, mx.array([0, 2], dtype=mx.int32)).sum())(mx.ones((2, 3)))
    assert np.asarray(dx).tolist() == [[1, 1, 1], [1, 1, 1]]


# ----------------------------------------------------------------------------- validation
A, B = mx.ones((4, 2, 3, 5)), mx.ones((6, 2, 3))
I3 = mx.array([0, 1, 2], dtype=mx.int32)

BAD_CALLS = [
    (lambda: ops.mvmr(mx.ones((4, 3, 5)), I3, B, I3, I3, 3), "mvmr: a must have 4 dimensions (Na, G, C, M), got shape (4, 3, 5)"),
    (lambda: ops.mvmr(A, I3, mx.ones((6, 2, 4)), I3, I3, 3), "mvmr: b has shape (6, 2, 4) but a has shape (4, 2, 3, 5): b must be (Nb, G=2, C=3)"),
    (lambda: ops.mvmr(A.astype(mx.float16), I3, B, I3, I3, 3), "mvmr: a must be float32, got mlx.core.float16 (shape (4, 2, 3, 5))"),
    (lambda: ops.mvmr(A, I3, B, I3[:2], I3, 3), "mvmr: b_idx has shape (2,) but a_idx has 3 entries"),
    (lambda: ops.mvmr(A, I3, B, I3, I3 + 1, 3), "mvmr: o_idx holds 3 at position 2, outside [0, n) = [0, 3)"),
    (lambda: ops.mvmr(A, I3 + 2, B, I3, I3, 3), "mvmr: a_idx holds 4 at position 2, outside [0, Na) = [0, 4)"),
    (lambda: ops.mvmr(A, I3.astype(mx.float32), B, I3, I3, 3), "mvmr: a_idx must be a 1-D integer array, got shape (3,)"),
    (lambda: ops.mvmr(A, I3, B, I3, I3, -1), "mvmr: n must be a non-negative integer, got -1"),
    (lambda: ops.vvor(mx.ones((4, 2, 5)), I3, mx.ones((6, 3, 3)), I3, I3, 3), "vvor: b has shape (6, 3, 3) but a has shape (4, 2, 5): b must be (Nb, G=2, C)"),
    (lambda: ops.vvor(mx.ones((4, 2, 5)), I3, mx.ones((2, 2, 3)), I3, I3, 3), "vvor: b_idx holds 2 at position 2, outside [0, Nb) = [0, 2)"),
    (lambda: ops.segment_sum(mx.ones((5,)), I3), "segment_sum: x must have 2 dimensions (N, C), got shape (5,)"),
    (lambda: ops.segment_sum(mx.ones((5, 2)), I3), "segment_sum: lengths add up to 3 but x has 5 rows (shape (5, 2))"),
    (lambda: ops.segment_sum(mx.ones((1, 2)), mx.array([2, -1])), "segment_sum: lengths holds -1 at position 1"),
    (lambda: ops.segment_sum(mx.ones((3, 2)), mx.array([[3]])), "segment_sum: lengths must be a 1-D integer array, got shape (1, 1)"),
]


@pytest.mark.parametrize("call, message", BAD_CALLS, ids=[m.split(":")[0] + str(i) for i, (_, m) in enumerate(BAD_CALLS)])
def test_bad_arguments_are_named_with_their_shapes(call, message):
    with pytest.raises(ValueError) as err:
        call()
    assert message in str(err.value)


def test_non_arrays_are_a_type_error():
    with pytest.raises(TypeError, match="mvmr: b must be an mx.array, got list"):
        ops.mvmr(A, I3, [[1.0]], I3, I3, 3)
