"""Math and common builtins: metal::, precise:: and fast:: functions, integer functions,
geometric functions and math constants.

Exact cases have values known by definition (floor(-1.5) == -2, fract(-1.25) == 0.75 since
fract(x) = x - floor(x), round() rounds halves away from zero, rint() to even, ...).
Transcendental cases compare with Python's double-precision `math` applied to the float32
argument, within a small relative tolerance (Metal's precise functions are within a few ulp;
fast:: ones are looser).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from .conftest import one, out0, run

EXACT = [
    ("floor(-1.5f)", -2.0),
    ("ceil(-1.5f)", -1.0),
    ("floor(2.0f)", 2.0),
    ("round(2.5f)", 3.0),
    ("round(-2.5f)", -3.0),
    ("round(2.4f)", 2.0),
    ("rint(2.5f)", 2.0),
    ("rint(3.5f)", 4.0),
    ("trunc(-2.7f)", -2.0),
    ("trunc(2.7f)", 2.0),
    ("fract(-1.25f)", 0.75),
    ("fract(2.75f)", 0.75),
    ("fmod(-7.5f, 2.0f)", -1.5),
    ("fmod(7.5f, -2.0f)", 1.5),
    ("fmod(6.0f, 3.0f)", 0.0),
    ("fabs(-3.5f)", 3.5),
    ("abs(-3.5f)", 3.5),
    ("sign(-3.0f)", -1.0),
    ("sign(0.0f)", 0.0),
    ("sign(2.5f)", 1.0),
    ("step(0.5f, 0.3f)", 0.0),
    ("step(0.5f, 0.5f)", 1.0),
    ("smoothstep(0.0f, 1.0f, 0.5f)", 0.5),
    ("smoothstep(0.0f, 1.0f, 2.0f)", 1.0),
    ("smoothstep(0.0f, 1.0f, -1.0f)", 0.0),
    ("smoothstep(0.0f, 2.0f, 0.5f)", 0.15625),
    ("mix(2.0f, 4.0f, 0.25f)", 2.5),
    ("clamp(5.0f, 0.0f, 1.0f)", 1.0),
    ("clamp(-5.0f, 0.0f, 1.0f)", 0.0),
    ("clamp(0.25f, 0.0f, 1.0f)", 0.25),
    ("saturate(1.5f)", 1.0),
    ("saturate(-0.5f)", 0.0),
    ("min(2.0f, -3.0f)", -3.0),
    ("max(2.0f, -3.0f)", 2.0),
    ("fmin(1.0f, 2.0f)", 1.0),
    ("fmax(1.0f, 2.0f)", 2.0),
    ("fma(2.0f, 3.0f, 4.0f)", 10.0),
    ("sqrt(16.0f)", 4.0),
    ("rsqrt(4.0f)", 0.5),
    ("exp2(10.0f)", 1024.0),
    ("log2(8.0f)", 3.0),
    ("pow(2.0f, 10.0f)", 1024.0),
    ("powr(2.0f, 3.0f)", 8.0),
    ("copysign(3.0f, -0.5f)", -3.0),
    ("select(1.0f, 2.0f, true)", 2.0),
    ("select(1.0f, 2.0f, false)", 1.0),
    ("ldexp(1.5f, 3)", 12.0),
    ("fdim(5.0f, 3.0f)", 2.0),
    ("fdim(3.0f, 5.0f)", 0.0),
    ("exp(0.0f)", 1.0),
    ("log(1.0f)", 0.0),
    ("sin(0.0f)", 0.0),
    ("cos(0.0f)", 1.0),
    ("tanh(0.0f)", 0.0),
    ("length(float2(3.0f, 4.0f))", 5.0),
    ("distance(float2(1.0f, 1.0f), float2(4.0f, 5.0f))", 5.0),
    ("dot(float4(1, 2, 3, 4), float4(1, 1, 1, 1))", 10.0),
    ("metal::abs(-2.0f)", 2.0),
    ("metal::max(1.0f, 7.0f)", 7.0),
    ("precise::sqrt(9.0f)", 3.0),
    ("metal::precise::sqrt(25.0f)", 5.0),
    ("metal::floor(-0.5f)", -1.0),
]


@pytest.mark.parametrize(("expr", "expected"), EXACT, ids=[e for e, _ in EXACT])
def test_exact_math(expr: str, expected: float) -> None:
    """Functions whose result is exactly representable and fixed by definition."""
    assert one(f"out[0] = {expr};") == np.float32(expected)


F = np.float32


def ref(fn: Callable[..., float], *args: float) -> float:
    """Apply a double-precision reference function to float32-rounded arguments."""
    return float(np.float32(fn(*[float(F(a)) for a in args])))


APPROX = [
    ("exp(1.0f)", ref(math.exp, 1.0)),
    ("exp(-3.0f)", ref(math.exp, -3.0)),
    ("log(10.0f)", ref(math.log, 10.0)),
    ("log2(10.0f)", ref(math.log2, 10.0)),
    ("log10(1000.0f)", 3.0),
    ("exp2(0.5f)", ref(lambda x: 2**x, 0.5)),
    ("sin(0.5235988f)", ref(math.sin, 0.5235988)),
    ("cos(1.0f)", ref(math.cos, 1.0)),
    ("tan(0.5f)", ref(math.tan, 0.5)),
    ("asin(0.5f)", ref(math.asin, 0.5)),
    ("acos(0.5f)", ref(math.acos, 0.5)),
    ("atan(1.0f)", ref(math.atan, 1.0)),
    ("atan2(1.0f, 2.0f)", ref(math.atan2, 1.0, 2.0)),
    ("sinh(1.0f)", ref(math.sinh, 1.0)),
    ("cosh(1.0f)", ref(math.cosh, 1.0)),
    ("tanh(0.5f)", ref(math.tanh, 0.5)),
    ("sqrt(2.0f)", ref(math.sqrt, 2.0)),
    ("rsqrt(2.0f)", ref(lambda x: 1 / math.sqrt(x), 2.0)),
    ("exp10(2.0f)", 100.0),
    ("sinpi(0.5f)", 1.0),
    ("atanh(0.5f)", ref(math.atanh, 0.5)),
    ("pow(1.5f, 2.5f)", ref(math.pow, 1.5, 2.5)),
    ("precise::exp(1.0f)", ref(math.exp, 1.0)),
    ("precise::sin(1.0f)", ref(math.sin, 1.0)),
    ("precise::log(3.0f)", ref(math.log, 3.0)),
    ("metal::precise::tanh(0.25f)", ref(math.tanh, 0.25)),
    ("normalize(float2(3.0f, 4.0f)).x", 0.6),
    ("normalize(float3(1.0f, 2.0f, 2.0f)).z", 2.0 / 3.0),
]


@pytest.mark.parametrize(("expr", "expected"), APPROX, ids=[e for e, _ in APPROX])
def test_transcendental_math(expr: str, expected: float) -> None:
    """Transcendentals agree with a double-precision reference to ~1e-6 relative."""
    got = one(f"out[0] = {expr};")
    assert got == pytest.approx(expected, rel=1e-6, abs=1e-7)


FAST = [
    ("fast::exp(1.0f)", ref(math.exp, 1.0)),
    ("fast::sin(1.0f)", ref(math.sin, 1.0)),
    ("fast::cos(0.5f)", ref(math.cos, 0.5)),
    ("fast::sqrt(2.0f)", ref(math.sqrt, 2.0)),
    ("fast::log(5.0f)", ref(math.log, 5.0)),
    ("fast::tanh(0.5f)", ref(math.tanh, 0.5)),
    ("fast::pow(2.0f, 0.5f)", ref(math.pow, 2.0, 0.5)),
    ("fast::exp2(3.0f)", 8.0),
    ("metal::fast::rsqrt(16.0f)", 0.25),
    ("fast::max(1.0f, 2.0f)", 2.0),
]


@pytest.mark.parametrize(("expr", "expected"), FAST, ids=[e for e, _ in FAST])
def test_fast_math(expr: str, expected: float) -> None:
    """fast:: variants are close to the exact value (looser tolerance)."""
    assert one(f"out[0] = {expr};") == pytest.approx(expected, rel=2e-5, abs=1e-6)


def test_float32_rounding_of_transcendental_result() -> None:
    """Results of math functions are float32, with no hidden float64 carried along:
    exp(1) * 1e-8 is below half an ulp of 1, so (that + 1) - 1 is exactly 0 in float32."""
    got = one("float e = exp(1.0f); float r = (e * 1e-8f + 1.0f) - 1.0f; out[0] = r;")
    assert got == 0.0


# ------------------------------------------------------------------ NaN / inf


def test_isnan_isinf_isfinite() -> None:
    """isnan/isinf/isfinite classify NaN, inf and ordinary values."""
    src = """
    float n = a[0]; float i = a[1]; float x = a[2];
    out[0] = isnan(n); out[1] = isnan(x); out[2] = isinf(i); out[3] = isinf(x);
    out[4] = isfinite(x); out[5] = isfinite(i); out[6] = isinf(-i); out[7] = isnan(i - i);
    """
    a = np.array([np.nan, np.inf, 1.5], dtype=np.float32)
    assert run(src, inputs={"a": a}, out=((8,), "int32")).outputs[0].tolist() == [1, 0, 1, 0, 1, 0, 1, 1]


def test_fmax_fmin_ignore_nan() -> None:
    """fmax/fmin return the non-NaN operand when the other is NaN."""
    src = "float n = a[0]; out[0] = fmax(n, 1.0f); out[1] = fmin(2.0f, n);"
    a = np.array([np.nan], dtype=np.float32)
    assert run(src, inputs={"a": a}, out=((2,), "float32")).outputs[0].tolist() == [1.0, 2.0]


def test_sqrt_of_negative_is_nan() -> None:
    """sqrt(-1) is NaN."""
    a = np.array([-1.0], dtype=np.float32)
    assert one("out[0] = isnan(sqrt(a[0])) ? 1 : 0;", "int32", inputs={"a": a}) == 1


# ------------------------------------------------------------------ constants


@pytest.mark.parametrize(
    ("name", "expected"),
    [("M_PI_F", np.float32(math.pi)), ("M_E_F", np.float32(math.e)),
     ("FLT_MAX", np.finfo(np.float32).max), ("MAXFLOAT", np.finfo(np.float32).max),
     ("FLT_EPSILON", np.finfo(np.float32).eps), ("INFINITY", np.inf), ("HUGE_VALF", np.inf)],
)
def test_math_constants(name: str, expected: float) -> None:
    """MSL's float constants have their float32 values."""
    assert one(f"out[0] = {name};") == np.float32(expected)


def test_nan_constant() -> None:
    """NAN is a NaN."""
    assert one("float n = NAN; out[0] = (n != n) ? 1 : 0;", "int32") == 1


# ------------------------------------------------------------------ integer functions

INT_FUNCS = [
    ("popcount(0xF0F0u)", 8),
    ("popcount(0u)", 0),
    ("popcount(0xFFFFFFFFu)", 32),
    ("popcount(-1)", 32),
    ("clz(1u)", 31),
    ("clz(0x80000000u)", 0),
    ("clz(0u)", 32),
    ("clz(0x00010000u)", 15),
    ("ctz(8u)", 3),
    ("ctz(1u)", 0),
    ("ctz(0u)", 32),
    ("ctz(0x80000000u)", 31),
    ("abs(-5)", 5),
    ("abs(7)", 7),
    ("min(3, -4)", -4),
    ("max(3u, 5u)", 5),
    ("max(-3, -4)", -3),
    ("clamp(10, 0, 5)", 5),
    ("clamp(-10, 0, 5)", 0),
    ("absdiff(3, 10)", 7),
    ("(int)reverse_bits(1u)", -2147483648),
    ("metal::min(7, 2)", 2),
]


@pytest.mark.parametrize(("expr", "expected"), INT_FUNCS, ids=[e for e, _ in INT_FUNCS])
def test_integer_functions(expr: str, expected: int) -> None:
    """Integer builtins (clz/ctz of 0 return the bit width, as MSL specifies)."""
    assert one(f"out[0] = {expr};", "int32") == expected


def test_uint_min_max_do_not_treat_large_values_as_negative() -> None:
    """max(0xFFFFFFFFu, 1u) is 4294967295 (unsigned comparison)."""
    assert one("out[0] = max(0xFFFFFFFFu, 1u);", "uint32") == 4294967295


# ------------------------------------------------------------------ vector math


def test_vector_min_max_abs_clamp() -> None:
    """min/max/abs/clamp act per component on vectors."""
    src = """
    float3 a = float3(-1, 5, 2); float3 b = float3(3, 4, -2);
    float3 mn = min(a, b); float3 mx = max(a, b); float3 ab = abs(b);
    float3 cl = clamp(a, float3(0), float3(3));
    out[0] = mn.x; out[1] = mn.y; out[2] = mn.z; out[3] = mx.x; out[4] = mx.y; out[5] = mx.z;
    out[6] = ab.z; out[7] = cl.x; out[8] = cl.y; out[9] = cl.z;
    """
    assert run(src, out=((10,), "float32")).outputs[0].tolist() == [-1, 4, -2, 3, 5, 2, 2, 0, 3, 2]


def test_cross_product() -> None:
    """cross(x, y) == z and cross(y, x) == -z."""
    src = """
    float3 c = cross(float3(1, 0, 0), float3(0, 1, 0));
    float3 d = cross(float3(0, 1, 0), float3(1, 0, 0));
    out[0] = c.x; out[1] = c.y; out[2] = c.z; out[3] = d.z;
    """
    assert run(src, out=((4,), "float32")).outputs[0].tolist() == [0, 0, 1, -1]


def test_elementwise_math_on_vector() -> None:
    """floor/sqrt on a float4 act per component."""
    src = "float4 v = floor(float4(1.5f, -1.5f, 2.0f, -0.1f)); float4 s = sqrt(float4(1, 4, 9, 16));" \
          " out[0] = v.x; out[1] = v.y; out[2] = v.z; out[3] = v.w; out[4] = s.w;"
    assert run(src, out=((5,), "float32")).outputs[0].tolist() == [1, -2, 2, -1, 4]


def test_half_overloads_return_half() -> None:
    """sqrt(half) and max(half, half) stay half: adding 2049 then rounds to half."""
    src = "half r = sqrt(half(4)) + half(2047); half m = max(half(1), half(2048)) + half(1); out[0] = r; out[1] = m;"
    assert run(src, out=((2,), "float32")).outputs[0].tolist() == [2048.0, 2048.0]


def test_math_per_thread_inputs() -> None:
    """A math map across threads: out[i] = fma(a[i], 2, 1) and floor()."""
    a = np.array([-1.5, -0.5, 0.5, 1.5, 2.25, -3.75, 10.0, 0.0], dtype=np.float32)
    src = "uint i = thread_position_in_grid.x; out[i] = floor(fma(a[i], 2.0f, 1.0f));"
    got = run(src, inputs={"a": a}, out=((8,), "float32"), grid=(8, 1, 1)).outputs[0]
    assert got.tolist() == np.floor(a * 2 + 1).tolist()


MORE_BUILTINS = [
    ("metal::divide(1.0f, 4.0f)", 0.25, "float32"),
    ("fast::divide(1.0f, 4.0f)", 0.25, "float32"),
    ("precise::divide(3.0f, 4.0f)", 0.75, "float32"),
    ("fmax3(1.0f, 5.0f, 3.0f)", 5.0, "float32"),
    ("fmin3(1.0f, 5.0f, 3.0f)", 1.0, "float32"),
    ("fmedian3(1.0f, 5.0f, 3.0f)", 3.0, "float32"),
    ("max3(1, 5, 3)", 5, "int32"),
    ("min3(1, 5, 3)", 1, "int32"),
    ("median3(1, 5, 3)", 3, "int32"),
    ("mulhi(0x80000000u, 4u)", 2, "uint32"),
    ("madhi(0x80000000u, 4u, 1u)", 3, "uint32"),
    ("rotate(0x80000001u, 1u)", 3, "uint32"),
    ("extract_bits(0xF0u, 4u, 4u)", 0xF, "uint32"),
    ("insert_bits(0u, 0xFu, 4u, 4u)", 0xF0, "uint32"),
    ("addsat(2147483647, 5)", 2147483647, "int32"),
    ("subsat(0u, 5u)", 0, "uint32"),
    ("hadd(7, 8)", 7, "int32"),
    ("rhadd(7, 8)", 8, "int32"),
    ("mad24(2, 3, 4)", 10, "int32"),
    ("mul24(-2, 3)", -6, "int32"),
    ("ilogb(8.0f)", 3, "int32"),
]


@pytest.mark.parametrize(("expr", "expected", "dtype"), MORE_BUILTINS, ids=[e for e, _, _ in MORE_BUILTINS])
def test_less_common_builtins(expr: str, expected: float, dtype: str) -> None:
    """Less common MSL math/integer builtins, with values fixed by their definitions."""
    assert one(f"out[0] = {expr};", dtype) == expected


def test_sincos_returns_sine_and_writes_cosine() -> None:
    """sincos(x, c) returns sin(x) and stores cos(x) in c."""
    assert one("float c; float s = sincos(0.0f, c); out[0] = s * 10 + c;") == 1.0


def test_frexp_and_modf_out_parameters() -> None:
    """frexp(8) = 0.5 * 2**4; modf(-2.5) = -0.5 with integral part -2."""
    src = "int e; float m = frexp(8.0f, e); float ip; float f = modf(-2.5f, ip); out[0] = m; out[1] = e; out[2] = f; out[3] = ip;"
    assert run(src, out=((4,), "float32")).outputs[0].tolist() == [0.5, 4.0, -0.5, -2.0]


def test_isunordered_and_isordered_say_whether_either_argument_is_nan() -> None:
    # Pairs (x, y): ordered unless one of them is NaN; infinities are ordered.
    got = out0("float n = NAN; float i = INFINITY;"
               "out[0] = isunordered(1.0f, 2.0f); out[1] = isunordered(n, 2.0f); out[2] = metal::isunordered(1.0f, n);"
               "out[3] = isunordered(i, -i); out[4] = isordered(1.0f, i); out[5] = isordered(n, n);"
               "out[6] = all(isunordered(float2(1.0f, n), float2(2.0f)) == bool2(false, true));",
               out=((7,), "float32"))
    assert got.tolist() == [0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0]
