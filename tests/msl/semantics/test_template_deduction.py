"""Template argument deduction as C++ does it for the shapes headers use: an array parameter
('thread T v[8]') is a pointer to its elements, so T is the element type; arguments that deduce
different types for one parameter make that template no candidate (the call picks another
overload instead of being ambiguous); explicit template arguments are not deduced (the
arguments convert to them). Expected values are worked out by hand in each test."""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import CompileError
from metal_puzzles.msl.shader_program import LaunchGeometry, ShaderLibrary


def launch(source: str, kernel: str, values: dict, n: int = 4):
    return ShaderLibrary(source).kernel(kernel).launch(values, LaunchGeometry((n, 1, 1), (n, 1, 1)))


def test_an_array_parameter_deduces_its_element_type() -> None:
    src = """
    template <typename T>
    T weighted(thread T v[4], T w) { T s = 0; for (int k = 0; k < 4; k++) s += v[k] * w; return s; }
    kernel void k(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      int v[4] = {1, 2, 3, int(i)};
      out[i] = weighted(v, 2);        // T = int, not 'thread int*'
    }"""
    res = launch(src, "k", {0: np.zeros(4, np.int32)})
    assert res.outputs[0].tolist() == [2 * (6 + i) for i in range(4)]


def test_conflicting_deductions_drop_a_candidate_instead_of_making_the_call_ambiguous() -> None:
    """With a uint2 first argument, 'split(T, thread T*)' would need T = uint2 and T = int: only
    the uint2 overload is a candidate, and it splits x and y."""
    src = """
    template <typename T>
    void split(T idx, thread T pos[2], int width) { pos[0] = idx % width; pos[1] = idx / width; }
    template <typename T>
    void split(uint2 idx, thread T pos[2], int width) { pos[0] = T(idx.x); pos[1] = T(idx.y) + 100; }
    kernel void k(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      int a[2], b[2];
      split(int(i) + 5, a, 3);        // T = int: (i + 5) % 3, (i + 5) / 3
      split(uint2(i, 7), b, 3);       // the uint2 overload
      out[i] = a[0] * 1000 + a[1] * 100 + b[0] * 10 + b[1];
    }"""
    res = launch(src, "k", {0: np.zeros(4, np.int32)})
    want = [((i + 5) % 3) * 1000 + ((i + 5) // 3) * 100 + i * 10 + 107 for i in range(4)]
    assert res.outputs[0].tolist() == want


def test_explicit_template_arguments_convert_the_call_arguments() -> None:
    src = """
    template <typename T> T add(T a, T b) { return a + b; }
    kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      out[i] = add<float>(int(i), 0.5f);
    }"""
    res = launch(src, "k", {0: np.zeros(4, np.float32)})
    assert res.outputs[0].tolist() == [0.5, 1.5, 2.5, 3.5]


def test_a_lone_template_with_conflicting_deductions_says_which_types() -> None:
    src = """
    template <typename T> T add(T a, T b) { return a + b; }
    kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      out[i] = add(int(i), 0.5f);
    }"""
    with pytest.raises(CompileError, match="conflicting types for template parameter 'T' \\('int' and 'float'\\)"):
        ShaderLibrary(src).kernel("k")


def test_overloads_that_cannot_take_an_argument_drop_out_and_exact_matches_win() -> None:
    """read(constant void*, long) and read(device void*, long) called with a constant pointer and
    an int offset: only the constant overload can take the pointer (address spaces do not
    convert), though neither matches the int exactly. twice(int) beats twice(float) for an int
    and for a short (a promotion beats a conversion); a long converts to either, which is
    ambiguous, as in C++."""
    src = """
    template <typename T> T read(constant void* p, long k) { return static_cast<constant T*>(p)[k] + T(100); }
    template <typename T> T read(device void* p, long k) { return static_cast<device T*>(p)[k]; }
    inline int twice(int x) { return 2 * x; }
    inline int twice(float x) { return -1; }
    kernel void k(device int* out [[buffer(0)]], constant int* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
      constant void* untyped = c;
      int offset = int(i);
      out[i] = read<int>(untyped, offset) + twice(int(i)) * 1000 + twice(short(i)) * 10000;
    }"""
    res = launch(src, "k", {0: np.zeros(4, np.int32), 1: np.arange(4, dtype=np.int32) * 3})
    assert res.outputs[0].tolist() == [3 * i + 100 + 2000 * i + 20000 * i for i in range(4)]
    ambiguous = src.replace("twice(int(i))", "twice(long(i))")
    with pytest.raises(CompileError, match="call to 'twice' is ambiguous"):
        ShaderLibrary(ambiguous).kernel("k")


def test_half_promotes_to_float_and_a_scalar_made_a_vector_ranks_last() -> None:
    """f(float) and f(float2) called with a half: clang ranks half to float as a promotion and a
    splat below any scalar conversion, so f(float) is chosen (as PyTorch's headers rely on)."""
    src = """
    inline float f(float x) { return x + 1.0f; }
    inline float2 f(float2 v) { return v * 100.0f; }
    kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      out[i] = f(half(i)) + f(short(i));
    }"""
    res = launch(src, "k", {0: np.zeros(4, np.float32)})
    assert res.outputs[0].tolist() == [2.0 * i + 2 for i in range(4)]
