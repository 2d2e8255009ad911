"""Variadic templates as PyTorch's c10/metal headers use them (issue 23): an alias template
with a type pack whose expansion names a functor's result
('template <typename F, typename... Args> using result_of =
decltype(declval<F>()(declval<Args>()...));') and recursive variadic functions
('f(first, rest...)' ending at an overload for no arguments). Expected values are sums and
types worked out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles import compile_shader
from metal_puzzles.msl import CompileError

from .conftest import one

RESULT_OF = """
template <typename F, typename... Args>
using result_of = decltype(metal::declval<F>()(metal::declval<Args>()...));
struct to_float_half { template <typename T> float operator()(T a) { return float(a) / 2; } };
struct sum3 { template <typename T> T operator()(T a, T b, T c) { return a + b + c; } };
struct is_odd { bool operator()(int a) { return (a & 1) != 0; } };
"""


def test_result_of_names_the_call_operators_return_type() -> None:
    # 7 / 2 in int would be 3: the result type is float, so 3.5 is kept.
    assert one("result_of<to_float_half, int> r = 7 / 2.0f; out[0] = r;", header=RESULT_OF) == 3.5
    # Three ints give int: integer division truncates 7 / 2 to 3.
    assert one("sum3 s; result_of<sum3, int, int, int> r = s(1, 2, 4) / 2; out[0] = r;", header=RESULT_OF) == 3.0
    assert one("out[0] = metal::is_same_v<result_of<is_odd, int>, bool> ? 1.0f : 0.0f;", header=RESULT_OF) == 1.0


def test_result_of_types_a_kernel_templates_output_buffer() -> None:
    source = RESULT_OF + """
template <typename T, typename F>
kernel void unary(device result_of<F, T>* out [[buffer(0)]], constant T* in [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    F f;
    out[i] = f(in[i]);
}
template [[host_name("halve_int")]] kernel void unary<int, to_float_half>(device float*, constant int*, uint);
"""
    lib = compile_shader(source)
    x = np.array([7, -3, 10], dtype=np.int32)
    got = np.zeros(3, np.float32)
    lib.halve_int(got, x, threads=3)
    assert got.tolist() == [3.5, -1.5, 5.0]
    with pytest.raises(Exception, match="float"):  # the buffer's element type is float, not int
        lib.halve_int(np.zeros(3, np.int32), x, threads=3)


SUM_ALL = """
inline int sum_all() { return 0; }
template <typename T, typename... Rest>
int sum_all(T first, Rest... rest) { return int(first) + 10 * sum_all(rest...); }
"""


def test_a_recursive_variadic_function_peels_one_argument_per_call() -> None:
    # Digits in order: 1 + 10 * (2 + 10 * (3 + 10 * (4 + 10 * 0))) = 4321; 2.5f converts to 2.
    assert one("out[0] = sum_all(1, 2.5f, short(3), 4u);", header=SUM_ALL) == 4321.0
    assert one("out[0] = sum_all();", header=SUM_ALL) == 0.0


def test_an_unexpanded_pack_is_a_precise_error() -> None:
    header = "template <typename... Args> int first(Args... args) { return args; }"
    with pytest.raises(CompileError, match="parameter pack 'args' must be expanded with '...'"):
        one("out[0] = first(1, 2);", header=header)


def test_packs_expanded_together_must_have_one_length() -> None:
    header = RESULT_OF + """
inline int add2(int a, int b) { return a + b; }
template <typename... A> int pairs(A... a) { return add2(a..., 1); }
"""
    assert one("out[0] = pairs(5);", header=header) == 6.0
    with pytest.raises(CompileError, match="the pattern before '...' names no parameter pack"):
        one("int x = 1; out[0] = add2(x..., 1);")


def test_a_non_type_parameter_pack_is_outside_the_subset() -> None:
    with pytest.raises(CompileError, match="only type parameter packs"):
        one("out[0] = 0;", header="template <int... N> int f() { return 0; }")
