"""Functors as PyTorch's elementwise MPS kernels write them (issue 23): structs with a call
operator ``operator()`` (often a member function template, overloaded with ``enable_if_t``),
called as ``f(a, b)`` on an object and passed to a kernel template as a type parameter.

Expected values are plain arithmetic worked out by hand or by NumPy on the same inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles import compile_shader
from metal_puzzles.msl import CompileError

from .conftest import one, out0

FUNCTORS = """
struct add_functor {
    template <typename T> T operator()(const T a, const T b) { return a + b; }
};
// True division: integers divide as floats, other types in their own type.
struct div_true_functor {
    template <typename T, metal::enable_if_t<metal::is_integral_v<T>, bool> = true>
    float operator()(const T a, const T b) { return float(a) / float(b); }
    template <typename T, metal::enable_if_t<!metal::is_integral_v<T>, bool> = true>
    T operator()(const T a, const T b) { return a / b; }
};
struct scaler {
    float k;
    template <typename T> T scale(T x) const { return x * T(k); }
};
struct running_sum {
    int total = 0;
    int operator()(int x) { total += x; return total; }
};
"""


def test_a_template_call_operator_deduces_its_type_per_call() -> None:
    got = out0("add_functor add;"
               "out[0] = add(7, 8) / 2;"          # int + int: integer division of 15 gives 7
               "out[1] = add(7.0f, 8.0f) / 2;"    # float: 7.5
               "out[2] = add(0.25f, 0.5f);",
               out=((3,), "float32"), header=FUNCTORS)
    assert got.tolist() == [7.0, 7.5, 0.75]


def test_enable_if_overloads_of_the_call_operator_pick_by_type() -> None:
    got = out0("div_true_functor d;"
               "out[0] = d(7, 2);"                 # integral overload: 3.5, not 3
               "out[1] = d(7.0f, 2.0f);"           # floating overload
               "out[2] = d(half(1.0h), half(4.0h));",
               out=((3,), "float32"), header=FUNCTORS)
    assert got.tolist() == [3.5, 3.5, 0.25]


def test_a_member_function_template_reads_its_object() -> None:
    got = out0("scaler s = {2.5f}; out[0] = s.scale(4.0f); out[1] = s.scale(3);",
               out=((2,), "float32"), header=FUNCTORS)
    assert got.tolist() == [10.0, 6.0]  # int: 3 * int(2.5f) = 6


def test_a_stateful_functor_keeps_its_members_between_calls() -> None:
    assert one("running_sum r; r(3); r(4); out[0] = r(5);", header=FUNCTORS) == 12.0


SHADER = FUNCTORS + """
template <typename F, typename T, typename R>
kernel void binary(device const T* a [[buffer(0)]], device const T* b [[buffer(1)]],
                   device R* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    F f;
    out[i] = static_cast<R>(f(a[i], b[i]));
}
template [[host_name("add_int")]] kernel void binary<add_functor, int, int>(
    device const int*, device const int*, device int*, uint);
template [[host_name("div_true_int")]] kernel void binary<div_true_functor, int, float>(
    device const int*, device const int*, device float*, uint);
template [[host_name("div_true_float")]] kernel void binary<div_true_functor, float, float>(
    device const float*, device const float*, device float*, uint);
"""


def test_a_functor_passed_to_a_kernel_template_as_a_type() -> None:
    lib = compile_shader(SHADER)
    a = np.array([7, -9, 100, 1], dtype=np.int32)
    b = np.array([2, 4, -8, 3], dtype=np.int32)
    summed = np.zeros(4, np.int32)
    lib.add_int(a, b, summed, threads=4)
    assert summed.tolist() == (a + b).tolist()
    quotient = np.zeros(4, np.float32)
    lib.div_true_int(a, b, quotient, threads=4)
    np.testing.assert_allclose(quotient, a.astype(np.float32) / b.astype(np.float32), rtol=1e-6)
    fa, fb = a.astype(np.float32) + 0.5, b.astype(np.float32)
    quotient = np.zeros(4, np.float32)
    lib.div_true_float(fa, fb, quotient, threads=4)
    np.testing.assert_allclose(quotient, fa / fb, rtol=1e-6)


def test_calling_an_object_without_a_call_operator_is_an_error() -> None:
    with pytest.raises(CompileError, match="no member function named 'operator\\(\\)' in struct 'scaler'"):
        one("scaler s = {1.0f}; out[0] = s(2.0f);", header=FUNCTORS)


def test_a_call_no_overload_accepts_is_an_error_naming_the_functor() -> None:
    header = ("struct only_ints { template <typename T, metal::enable_if_t<metal::is_integral_v<T>, bool> = true>"
              " T operator()(T a) { return a; } };")
    with pytest.raises(CompileError, match="no matching function for call to 'only_ints::operator\\(\\)'"):
        one("only_ints f; out[0] = f(1.5f);", header=header)


def test_a_plain_variable_is_still_not_callable() -> None:
    with pytest.raises(CompileError, match="'x' is a variable, not a function"):
        one("int x = 1; out[0] = x(2);")


def test_a_member_variable_template_is_a_precise_error() -> None:
    with pytest.raises(CompileError, match="only member functions may be templates inside a struct"):
        one("out[0] = 1.0f;", header="struct S { template <typename T> static constexpr T v = T(1); };")


def test_return_type_enable_if_picks_the_call_operator() -> None:
    # c10/metal/indexing.h's floating unary functors: the overload is chosen by SFINAE on the
    # return type; integers go through float and come back as float.
    header = """
struct sqrt_functor {
    template <typename T>
    metal::enable_if_t<metal::is_floating_point_v<T>, T> operator()(const T x) { return T(metal::sqrt(float(x))); }
    template <typename T>
    metal::enable_if_t<metal::is_integral_v<T>, float> operator()(const T x) { return metal::sqrt(float(x)) + 100.0f; }
};
"""
    got = out0("sqrt_functor f; out[0] = f(16.0f); out[1] = f(9);"
               "out[2] = metal::is_same_v<decltype(f(half(4.0h))), half> ? 1.0f : 0.0f;",
               out=((3,), "float32"), header=header)
    assert got.tolist() == [4.0, 103.0, 1.0]


def test_member_functions_called_on_temporary_objects() -> None:
    """'F()(x)' and 'F{}(x)' call the call operator of a temporary functor; a member function
    that changes its temporary object changes only that temporary (here: 10 + i, then nothing)."""
    src = """
    struct twice { template <typename T> T operator()(T x) const { return x + x; } };
    struct acc { float base; float add(float v) { base += v; return base; } };
    inline acc make(float b) { return acc{b}; }
    template <typename F, typename T>
    kernel void apply(device T* out [[buffer(0)]], device const T* a [[buffer(1)]], uint i [[thread_position_in_grid]]) {
      acc kept = make(1.0f);
      out[i] = F()(a[i]) + F{}(T(1)) + T(make(10.0f).add(float(i))) + T(kept.base);
    }
    template [[host_name("apply_float")]] kernel void apply<twice, float>(device float*, device const float*, uint);
    """
    a = np.arange(4, dtype=np.float32) * 1.5
    out = np.zeros(4, np.float32)
    compile_shader(src).apply_float(out, a)
    np.testing.assert_array_equal(out, 2 * a + 2 + (10 + np.arange(4)) + 1)
