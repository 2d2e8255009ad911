"""``metal::numeric_limits<T>`` as kernels use it: max, min, lowest, epsilon, infinity and
quiet_NaN for float, half and bfloat (also through a template type), and the integer types'
ranges. Expected values are NumPy's ``finfo`` / ``iinfo`` (bfloat's from its 8-bit mantissa)."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import out0

F32, F16 = np.finfo(np.float32), np.finfo(np.float16)


@pytest.mark.parametrize(("expr", "want"), [
    ("numeric_limits<float>::max()", F32.max),
    ("-numeric_limits<float>::infinity()", -np.inf),
    ("metal::numeric_limits<float>::lowest()", -F32.max),
    ("numeric_limits<float>::min()", F32.tiny),
    ("numeric_limits<float>::epsilon()", F32.eps),
    ("numeric_limits<half>::max()", F16.max),
    ("numeric_limits<half>::epsilon()", F16.eps),
    ("numeric_limits<T>::infinity()", np.inf),  # T = half, a template type
    ("numeric_limits<bfloat>::epsilon()", 2.0 ** -7),
    ("numeric_limits<bfloat>::max()", (2 - 2.0 ** -7) * 2.0 ** 127),
])
def test_float_limits(expr: str, want: float) -> None:
    got = out0(f"out[0] = float({expr});", template=[("T", "float16")])
    assert got[0] == np.float32(want)


def test_quiet_nan_is_nan() -> None:
    assert np.isnan(out0("out[0] = numeric_limits<float>::quiet_NaN();")[0])


@pytest.mark.parametrize(("ty", "dtype"), [("int", np.int32), ("uint", np.uint32), ("short", np.int16),
                                           ("uchar", np.uint8), ("long", np.int64), ("ulong", np.uint64)])
def test_integer_ranges(ty: str, dtype) -> None:
    info = np.iinfo(dtype)
    got = out0(f"out[0] = numeric_limits<{ty}>::min(); out[1] = numeric_limits<{ty}>::max(); "
               f"out[2] = numeric_limits<{ty}>::lowest();", out=((3,), np.dtype(dtype).name))
    assert got.tolist() == [info.min, info.max, info.min]


def test_static_data_members_as_cs_limits_gives_them() -> None:
    """numeric_limits<T>::digits and friends are constants (no parentheses), usable as array
    sizes; the values are C++'s (<limits>): float 24 and 6, half 11 and 3, uint 32 and 9, short 15
    and 4 (digits, digits10)."""
    from metal_puzzles import compile_shader

    lib = compile_shader("""
    #include <metal_stdlib>
    using namespace metal;
    template <typename T> kernel void k(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      int bits[numeric_limits<T>::digits];
      o[0] = sizeof(bits) / sizeof(int); o[1] = metal::numeric_limits<T>::digits10;
      o[2] = numeric_limits<T>::is_signed; o[3] = numeric_limits<T>::is_integer;
    }
    #define K(T) template [[host_name("k_" #T)]] kernel void k<T>(device int*, uint);
    K(float) K(half) K(uint) K(short)
    """)
    got = {}
    for name in ("float", "half", "uint", "short"):
        o = np.zeros(4, np.int32)
        getattr(lib, f"k_{name}")(o, threads=1)
        got[name] = o.tolist()
    assert got == {"float": [24, 6, 1, 0], "half": [11, 3, 1, 0], "uint": [32, 9, 0, 1], "short": [15, 4, 1, 1]}


@pytest.mark.parametrize(("expr", "want"), [
    ("numeric_limits<float2>::infinity().x", np.inf),
    ("numeric_limits<half4>::lowest().w", -F16.max),
    ("numeric_limits<H2>::max().y", F16.max),  # H2 = half2 through a typedef (PyTorch's complex half)
])
def test_vector_limits_are_the_element_limits_in_every_component(expr: str, want: float) -> None:
    """numeric_limits of a vector type gives that vector (c10/metal's complex logaddexp reads
    'numeric_limits<T>::infinity().x' with T = float2), also in a constant expression."""
    got = out0(f"constexpr auto v = {expr}; out[0] = float(v);", header="typedef half2 H2;")
    assert got[0] == np.float32(want)
