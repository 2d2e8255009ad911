"""half is IEEE binary16 and bfloat is bfloat16: conversions round to nearest even, arithmetic
between two halves (or two bfloats) rounds to that type after every operation, overflow goes to
infinity, and mixing with float widens to float.

References: NumPy's float16 (a correct binary16 implementation; sums and products of two halves
are exact in float32 before the single rounding to half) and `bf16` below, the standard
round-to-nearest-even on the top 16 bits of a float32.
"""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import one, out0, run


def bf16(x: float) -> float:
    """Round a float32 value to bfloat16 (nearest, ties to even) and return it as a float."""
    u = int(np.array([x], dtype=np.float32).view(np.uint32)[0])
    u += 0x7FFF + ((u >> 16) & 1)
    u &= 0xFFFF0000
    return float(np.array([u], dtype=np.uint32).view(np.float32)[0])


def h(x: float) -> float:
    """Round to binary16 and widen back to a Python float (overflow to inf is intended)."""
    with np.errstate(over="ignore"):
        return float(np.float16(np.float32(x)))


# -------------------------------------------------------------------- float -> half


@pytest.mark.parametrize(
    "value",
    [65519.0, 65520.0, -65520.0, 65504.0, 2049.0, 2051.0, 0.1, 1.0 / 3.0, 2.0**-24, 2.0**-25,
     3 * 2.0**-25, 1e-9, -0.0],
)
def test_float_to_half_conversion(value: float) -> None:
    """half(x) rounds to nearest even; 65520 and up overflow to inf; tiny values go subnormal/zero."""
    a = np.array([value], dtype=np.float32)
    got = one("half v = half(a[0]); out[0] = float(v);", inputs={"a": a})
    assert np.array_equal(np.float32(got), np.float32(h(value)), equal_nan=True)
    assert np.signbit(got) == np.signbit(h(value))


def test_half_overflow_by_addition() -> None:
    """65504 + 65504 in half is +inf."""
    assert one("half x = 65504; half y = x + x; out[0] = y;") == np.inf


def test_half_overflow_by_multiplication() -> None:
    """60000 * 2 in half is +inf; -60000 * 2 is -inf."""
    src = "half x = 60000; half p = x * half(2); half n = -x * half(2); out[0] = p; out[1] = n;"
    assert run(src, out=((2,), "float32")).outputs[0].tolist() == [np.inf, -np.inf]


@pytest.mark.parametrize(
    ("x", "y"),
    [(1.0, 2.0**-11), (1.0, 3 * 2.0**-11), (2048.0, 1.0), (2048.0, 3.0), (0.1, 0.2), (1000.0, 0.3)],
)
def test_half_addition_rounds_to_half(x: float, y: float) -> None:
    """half + half is rounded to binary16 (ties to even)."""
    a = np.array([x, y], dtype=np.float16)
    got = one("half s = a[0] + a[1]; out[0] = s;", inputs={"a": a})
    assert got == np.float32(np.float16(np.float32(a[0]) + np.float32(a[1])))


@pytest.mark.parametrize(("x", "y"), [(1.1, 1.1), (3.3, 7.7), (0.01, 300.0), (255.0, 257.0)])
def test_half_multiplication_rounds_to_half(x: float, y: float) -> None:
    """half * half is rounded to binary16 (the exact product fits in float32 first)."""
    a = np.array([x, y], dtype=np.float16)
    got = one("half p = a[0] * a[1]; out[0] = p;", inputs={"a": a})
    assert got == np.float32(h(np.float32(a[0]) * np.float32(a[1])))


def test_half_division() -> None:
    """half(1) / half(3) is 1/3 rounded to binary16."""
    assert one("half q = half(1) / half(3); out[0] = q;") == np.float32(np.float16(1.0 / 3.0))


def test_half_accumulation_rounds_every_step() -> None:
    """Summing half(0.1) 100 times in a half accumulator rounds after each add."""
    acc = np.float16(0)
    step = np.float16(0.1)
    for _ in range(100):
        acc = np.float16(np.float32(acc) + np.float32(step))
    got = one("half s = 0; for (int k = 0; k < 100; k++) s += half(0.1f); out[0] = s;")
    assert got == np.float32(acc)
    assert got != np.float32(10.0)


def test_half_plus_float_is_float() -> None:
    """half + float widens to float: 1 + 1e-4f keeps the small part."""
    assert one("half x = 1; float r = x + 1e-4f; out[0] = r;") == np.float32(1) + np.float32(1e-4)


def test_half_compared_with_float_literal() -> None:
    """half(0.1) widens to float for ==, and 0.0999755859375 != 0.1f."""
    assert one("half x = half(0.1f); out[0] = (x == 0.1f) ? 1 : 0;", "int32") == 0


def test_half_literal_suffix() -> None:
    """1.5h and 0.1h are half literals."""
    src = "half a = 1.5h; half b = 0.1h; out[0] = a; out[1] = b;"
    assert run(src, out=((2,), "float32")).outputs[0].tolist() == [1.5, h(0.1)]


def test_half_to_int_truncates() -> None:
    """int(half(2.75)) is 2; int(half(-2.75)) is -2."""
    src = "out[0] = int(half(2.75f)); out[1] = int(half(-2.75f));"
    assert run(src, out=((2,), "int32")).outputs[0].tolist() == [2, -2]


def test_half_bit_patterns() -> None:
    """as_type<half>: 0x7BFF is the largest finite half, 0x0001 the smallest subnormal."""
    src = "out[0] = as_type<half>(ushort(0x7BFF)); out[1] = float(as_type<half>(ushort(1))) * 16777216.0f;"
    assert run(src, out=((2,), "float32")).outputs[0].tolist() == [65504.0, 1.0]


def test_half_buffers_in_and_out() -> None:
    """float16 input and output: a * a rounds to half and stores exactly."""
    a = np.array([1.1, -3.3, 100.5, 0.01, 255.0, 2.0, 7.7, 60000.0], dtype=np.float16)
    src = "uint i = thread_position_in_grid.x; out[i] = a[i] * a[i];"
    got = out0(src, inputs={"a": a}, out=((8,), "float16"), grid=(8, 1, 1))
    with np.errstate(over="ignore"):
        expected = (a.astype(np.float32) * a.astype(np.float32)).astype(np.float16)
    assert np.array_equal(got, expected)
    assert np.isinf(got[7])


def test_half_nan_propagates() -> None:
    """inf - inf in half is NaN."""
    src = "half x = INFINITY; half y = x - x; out[0] = isnan(y) ? 1 : 0;"
    assert one(src, "int32") == 1


# -------------------------------------------------------------------- bfloat


@pytest.mark.parametrize(
    "value",
    [1.0, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, 1.0 + 2.0**-8 + 2.0**-20, 257.0, 259.0, 3.14159265,
     -0.1, 1e30, 1e-30],
)
def test_float_to_bfloat_conversion(value: float) -> None:
    """bfloat(x) keeps 8 significant bits, rounding to nearest even."""
    a = np.array([value], dtype=np.float32)
    assert one("bfloat b = bfloat(a[0]); out[0] = float(b);", inputs={"a": a}) == np.float32(bf16(value))


def test_bfloat16_t_is_bfloat() -> None:
    """MLX's bfloat16_t names the same type."""
    assert one("bfloat16_t b = bfloat16_t(1.0f + 0.00390625f); out[0] = float(b);") == 1.0


@pytest.mark.parametrize(("x", "y"), [(1.0, 2.0**-8), (256.0, 1.0), (256.0, 3.0), (1.5, 0.0078125),
                                      (100.0, 0.3)])
def test_bfloat_addition_rounds_to_bfloat(x: float, y: float) -> None:
    """bfloat + bfloat is rounded to bfloat16."""
    a = np.array([bf16(x), bf16(y)], dtype=np.float32)
    src = "bfloat p = bfloat(a[0]); bfloat q = bfloat(a[1]); bfloat s = p + q; out[0] = float(s);"
    exact = np.float32(a[0]) + np.float32(a[1])
    assert one(src, inputs={"a": a}) == np.float32(bf16(exact))


def test_bfloat_multiplication_rounds_to_bfloat() -> None:
    """bfloat(1.0078125) squared is 1.01568603515625 exactly, which rounds to 1.015625."""
    src = "bfloat p = bfloat(1.0078125f); bfloat s = p * p; out[0] = float(s);"
    assert one(src) == np.float32(bf16(1.0078125 * 1.0078125))
    assert bf16(1.0078125 * 1.0078125) == 1.015625


def test_bfloat_plus_float_is_float() -> None:
    """bfloat + float widens to float: 1 + 2**-8 is kept."""
    assert one("bfloat b = bfloat(1.0f); float r = b + 0.00390625f; out[0] = r;") == 1.00390625


def test_bfloat16_output_rounds_store() -> None:
    """Storing into a bfloat16 output rounds to bf16 (returned as float32 values)."""
    src = "out[0] = 1.00390625f; out[1] = 3.0f; out[2] = 1.01171875f; out[3] = -0.1f;"
    got = run(src, out=((4,), "bfloat16")).outputs[0]
    assert got.dtype == np.float32
    assert got.tolist() == [bf16(1.00390625), 3.0, bf16(1.01171875), bf16(-0.1)]


def test_bfloat_input_products() -> None:
    """A bfloat16 input (via input_dtypes): a * a rounds to bf16 per element."""
    vals = [bf16(v) for v in [1.0078125, 3.0, -1.5, 0.3, 17.0, 100.0, 0.0625, 2.0]]
    a = np.array(vals, dtype=np.float32)
    src = "uint i = thread_position_in_grid.x; out[i] = float(a[i] * a[i]);"
    got = out0(src, inputs={"a": a}, out=((8,), "float32"), grid=(8, 1, 1), input_dtypes=["bfloat16"])
    assert got.tolist() == [bf16(v * v) for v in vals]
