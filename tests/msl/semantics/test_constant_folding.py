"""Constant expressions fold in their own C types, as clang folds them: a `constant` global, a
`constexpr` local or an array constant gets the same value the expression would compute at run
time. Float arithmetic rounds every result to float (so 2^24 + 1 is 2^24), an out-of-range float
literal is an infinity, `x / 0.0f` is an infinity or NaN, `as_type` reinterprets bits, integer
conversions wrap, and <metal_math>'s NAN, INFINITY and M_PI_F may initialise program-scope
constants. Expected values come from NumPy's float32 arithmetic on the same operations."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from metal_puzzles.msl.lang.errors import CompileWarning
from metal_puzzles.msl.shader_program import LaunchGeometry, ShaderLibrary

KERNEL = "kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]])"


def folded(globals_: str, value: str) -> float:
    """The value of ``value`` in a one-thread kernel after ``globals_`` (warnings are errors, but
    for clang's own about literals: 1e39f is too large for a float, as clang warns)."""
    src = f"#include <metal_stdlib>\nusing namespace metal;\n{globals_}\n{KERNEL} {{ o[i] = {value}; }}"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", CompileWarning)
        res = ShaderLibrary(src).kernel("k").launch({0: np.zeros(1, np.float32)}, LaunchGeometry((1, 1, 1), (1, 1, 1)))
    return float(res.outputs[0][0])


F = np.float32
TWO24 = F(16777216.0)


@pytest.mark.parametrize(("expr", "want"), [
    ("(16777216.0f + 1.0f) - 16777216.0f", float((TWO24 + F(1)) - TWO24)),   # 0: the 1 is lost in float
    ("0.1f + 0.2f", float(F(0.1) + F(0.2))),
    ("1.0f / 3.0f * 3.0f", float(F(1) / F(3) * F(3))),
    ("1e39f - 1e39f", math.nan),                                             # inf - inf
    ("1.0f / 0.0f", math.inf),
    ("float(int(2.9f)) + float(uchar(300))", 2.0 + 44.0),                   # truncation, wrap-around
    ("as_type<float>(0x3f800000u) + float(as_type<uint>(2.0f) >> 23)", 1.0 + 128.0),
])
@pytest.mark.parametrize("where", ["global", "constexpr"])
def test_constants_fold_in_float_as_at_run_time(expr: str, want: float, where: str) -> None:
    got = folded(f"constant float c = {expr};", "c") if where == "global" else _constexpr_local(expr)
    runtime = folded("", expr)  # the same expression computed by the kernel
    assert (math.isnan(got) and math.isnan(want)) or got == want
    assert (math.isnan(runtime) and math.isnan(got)) or runtime == got


def _constexpr_local(expr: str) -> float:
    src = f"{KERNEL} {{ constexpr float c = {expr}; o[i] = c; }}"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", CompileWarning)
        res = ShaderLibrary(src).kernel("k").launch({0: np.zeros(1, np.float32)}, LaunchGeometry((1, 1, 1), (1, 1, 1)))
    return float(res.outputs[0][0])


def test_metal_math_constants_initialise_program_scope_tables() -> None:
    table = "constant float lut[4] = {1.0f, NAN, -INFINITY, M_PI_F};"
    got = [folded(table, f"lut[{k}]") for k in range(4)]
    assert got[0] == 1.0 and math.isnan(got[1]) and got[2] == -math.inf and got[3] == float(F(math.pi))


def test_integer_constants_keep_cs_wrap_around() -> None:
    assert folded("constant uint big = 0xffffffffu + 2u;", "float(big)") == 1.0
    assert folded("constant int neg = int(uint(3000000000u));", "float(neg)") == float(np.uint32(3000000000).view(np.int32))
