"""Gradients of Part V's ``metal_puzzles.ops``: ``mx.grad`` and ``mx.vjp`` through the reference
kernels agree with MLX's own operations (``mx.fast.rms_norm``, ``mx.fast.rope``,
``mx.quantized_matmul``) differentiated by MLX, on standard-normal inputs (off any grid), within
float32's rounding; top-k agrees with MLX's answers, and the radix sort with NumPy's stable sort."""

from __future__ import annotations

import re

import mlx.core as mx
import numpy as np
import pytest

from metal_puzzles import ops


def normal(rng: np.random.Generator, *shape: int) -> mx.array:
    return mx.array(rng.standard_normal(shape).astype(np.float32))


def close(got: mx.array, want: mx.array, tol: float = 1e-4) -> None:
    want = np.asarray(want)
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max())))


def test_rms_norm_gradients_with_respect_to_x_and_w_are_mlxs():
    rng = np.random.default_rng(21)
    x, w = normal(rng, 3, 200), normal(rng, 200)
    x = x * mx.array([[1.0], [1e-3], [10.0]])  # a row whose mean square is near eps counts the eps term

    def loss(f):
        return lambda x, w: (mx.sin(f(x, w)) * mx.arange(200)).sum()  # a cotangent that is not uniform

    value, grads = mx.value_and_grad(loss(ops.rms_norm), argnums=(0, 1))(x, w)
    value_mx, grads_mx = mx.value_and_grad(loss(lambda x, w: mx.fast.rms_norm(x, w, 1e-5)), argnums=(0, 1))(x, w)
    close(value, value_mx)
    for got, want in zip(grads, grads_mx, strict=True):
        close(got, want)


@pytest.mark.parametrize("traditional", [True, False])
def test_rope_gradient_with_respect_to_x_is_mlxs(traditional):
    rng = np.random.default_rng(22)
    x, cotangent = normal(rng, 2, 5, 32), normal(rng, 2, 5, 32)

    def reference(x):
        return mx.fast.rope(x, 32, traditional=traditional, base=10000.0, scale=1.0, offset=9)

    out, (dx,) = mx.vjp(lambda x: ops.rope(x, 9, traditional), [x], [cotangent])
    out_mx, (dx_mx,) = mx.vjp(reference, [x], [cotangent])
    close(out[0], out_mx[0])
    close(dx, dx_mx)
    # A rotation's vjp is its inverse: rotating the gradient back gives the cotangent again.
    close(ops.rope(dx, 9, traditional), cotangent)


def test_rope_gradient_uses_the_layout_it_was_called_with():
    """The other layout's sign flip gives another (wrong) gradient: the two vjps are not the same."""
    rng = np.random.default_rng(23)
    x, cotangent = normal(rng, 1, 3, 16), normal(rng, 1, 3, 16)
    _, (halves,) = mx.vjp(lambda x: ops.rope(x, 4, False), [x], [cotangent])
    _, (interleaved,) = mx.vjp(lambda x: ops.rope(x, 4, True), [x], [cotangent])
    assert not np.allclose(np.asarray(halves), np.asarray(interleaved), atol=1e-3)


def test_quantized_matvec_gradients_with_respect_to_x_scales_and_biases_are_mlxs():
    rng = np.random.default_rng(24)
    w_q, scales, biases = mx.quantize(normal(rng, 7, 256), group_size=64, bits=4)
    x = normal(rng, 256)

    def loss(f):
        return lambda x, s, b: (f(x, w_q, s, b) ** 2).sum()

    def reference(x, w_q, s, b):
        # MLX's gradient for scales and biases needs a matrix x (a vector fails inside MLX 0.32).
        return mx.quantized_matmul(x[None], w_q, s, b, transpose=True, group_size=64, bits=4)[0]

    grads = mx.grad(loss(ops.quantized_matvec), argnums=(0, 1, 2))(x, scales, biases)
    grads_mx = mx.grad(loss(reference), argnums=(0, 1, 2))(x, scales, biases)
    for got, want in zip(grads, grads_mx, strict=True):
        close(got, want)


def test_the_packed_weights_get_no_gradient():
    """As index arrays in Part II: zeros (MLX's quantized_matmul refuses to differentiate them)."""
    rng = np.random.default_rng(25)
    w_q, scales, biases = mx.quantize(normal(rng, 4, 64), group_size=64, bits=4)
    _, grads = mx.vjp(lambda x, w: ops.quantized_matvec(x, w, scales, biases), [normal(rng, 64), w_q],
                      [normal(rng, 4)])
    assert grads[1].dtype == mx.uint32 and not np.asarray(grads[1]).any()


def test_gradients_flow_through_a_chain_of_part_v_ops():
    """Norm, then rotation, then a quantized product: the chain rule through three kernels' vjps."""
    rng = np.random.default_rng(26)
    x, w = normal(rng, 4, 64), normal(rng, 64)
    w_q, scales, biases = mx.quantize(normal(rng, 5, 256), group_size=64, bits=4)

    def model(norm, rope, matvec):
        def loss(x, w):
            h = rope(norm(x, w).reshape(1, 4, 64))
            return mx.tanh(matvec(h.reshape(256), w_q, scales, biases)).sum()
        return loss

    def mlx_matvec(v, w_q, s, b):
        return mx.quantized_matmul(v, w_q, s, b, transpose=True, group_size=64, bits=4)

    got = mx.grad(model(ops.rms_norm, lambda h: ops.rope(h, 3), ops.quantized_matvec), argnums=(0, 1))(x, w)
    want = mx.grad(model(lambda x, w: mx.fast.rms_norm(x, w, 1e-5),
                         lambda h: mx.fast.rope(h, 64, traditional=False, base=10000.0, scale=1.0, offset=3),
                         mlx_matvec), argnums=(0, 1))(x, w)
    for g, m in zip(got, want, strict=True):
        close(g, m, 1e-3)


def test_topk_gives_mlxs_values_largest_first_and_ties_in_index_order():
    rng = np.random.default_rng(27)
    logits = mx.array(np.round(rng.standard_normal((4, 250)) * 2).astype(np.float32))  # many ties
    got = ops.topk(logits)
    assert got.dtype == mx.uint32 and got.shape == (4, 8)
    want = np.argsort(-np.asarray(logits), axis=1, kind="stable")[:, :8]
    assert np.asarray(got).tolist() == want.tolist()
    values = np.take_along_axis(np.asarray(logits), np.asarray(got), axis=1)
    assert values.tolist() == (-np.sort(-np.asarray(mx.topk(logits, 8, axis=1)), axis=1)).tolist()


@pytest.mark.parametrize(("x", "message"), [
    (mx.zeros((2, 300)), "rows of x must hold 8 to 256 values"),
    (mx.zeros((2, 5)), "rows of x must hold 8 to 256 values"),
    (mx.array([[0.0] * 9 + [float("-inf")]]), "x must hold finite values"),
])
def test_topk_says_what_is_wrong_with_its_argument(x, message):
    with pytest.raises(ValueError, match=message):
        ops.topk(x)


def test_a_radix_pass_orders_by_one_digit_stably_and_eight_passes_sort():
    rng = np.random.default_rng(28)
    keys = rng.integers(0, 2**32, size=300, dtype=np.uint64).astype(np.uint32)
    one = ops.radix_sort_pass(mx.array(keys), 8)
    assert one.dtype == mx.uint32
    assert np.asarray(one).tolist() == keys[np.argsort((keys >> 8) & 15, kind="stable")].tolist()
    assert np.asarray(ops.radix_sort(mx.array(keys))).tolist() == np.sort(keys).tolist()
    assert ops.radix_sort(mx.array(np.zeros(0, np.uint32))).shape == (0,)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: ops.radix_sort(mx.zeros(5)), "keys must be a 1-D uint32 array, got shape (5,) and dtype mlx.core.float32"),
    (lambda: ops.radix_sort(mx.zeros(5000, dtype=mx.uint32)), "keys holds 5000 values; at most 4096"),
    (lambda: ops.radix_sort_pass(mx.zeros(5, dtype=mx.uint32), 30), "shift must be 0 to 28"),
    (lambda: ops.radix_sort_pass(mx.zeros(5, dtype=mx.uint32), -4), "shift must be a non-negative integer"),
])
def test_the_radix_sort_says_what_is_wrong_with_its_arguments(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()
