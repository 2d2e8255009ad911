"""Struct templates as shader headers use them: type maps with explicit and partial
specialisations (PyTorch's ``OpMathType<T>::type``), member types and static constants,
templated data structs with member functions, default template arguments.

C++'s rules, with answers worked out by hand: an explicit specialisation for exactly the
arguments wins over a partial one, which wins over the primary template; each argument list
is one instance (its static constants and member types are its own); member functions of an
instance see the template parameters' values.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles import compile_shader
from metal_puzzles.msl import CompileError

from .conftest import one, out0

HEADER = """
namespace c10 { namespace metal {
template <typename T> struct OpMath { using type = T; static constexpr int rank = 0; };
template <> struct OpMath<half> { using type = float; static constexpr int rank = 1; };
template <> struct OpMath<bfloat> { using type = float; static constexpr int rank = 1; };
template <typename T> struct OpMath<vec<T, 2>> { using type = vec<float, 2>; static constexpr int rank = 2; };
template <typename T> using opmath_t = typename OpMath<T>::type;

template <typename T, int N = 3> struct Arr {
    T v[N];
    static constexpr int size = N;
    T sum() const { T s = T(0); for (int i = 0; i < N; i++) { s += v[i]; } return s; }
    opmath_t<T> wide_sum() const { opmath_t<T> s = 0; for (int i = 0; i < size; i++) { s += v[i]; } return s; }
};
} }
struct Plain { using type = int; static constexpr float eps = 0.25f; };
"""


def test_explicit_then_partial_then_primary() -> None:
    got = out0("using namespace c10::metal;"
               "out[0] = OpMath<half>::rank; out[1] = OpMath<half2>::rank; out[2] = OpMath<int2>::rank;"
               "out[3] = OpMath<int>::rank; out[4] = OpMath<vec<int, 3>>::rank;"
               "out[5] = sizeof(opmath_t<bfloat>) + 100 * sizeof(typename OpMath<short2>::type);",
               out=((6,), "float32"), header=HEADER)
    # float4 x 2 = 8 bytes for the partial specialisation's vec<float, 2>; short for the primary.
    assert got.tolist() == [1.0, 2.0, 2.0, 0.0, 0.0, 4.0 + 800.0]


def test_member_types_pick_the_arithmetic_type() -> None:
    # 60000 + 60000 overflows half; opmath_t<half> is float.
    assert one("c10::metal::opmath_t<half> s = half(60000.0h); s += half(60000.0h); out[0] = s;",
               header=HEADER) == 120000.0
    assert one("c10::metal::opmath_t<int> k = 7; out[0] = float(k / 2);", header=HEADER) == 3.0


def test_templated_data_struct_with_methods_and_defaults() -> None:
    got = out0("using namespace c10::metal;"
               "Arr<float> a = {{1.0f, 2.0f, 3.5f}}; out[0] = a.sum(); out[1] = float(Arr<int, 5>::size);"
               "Arr<half, 2> h = {{half(60000.0h), half(60000.0h)}}; out[2] = h.wide_sum();"
               "out[3] = float(sizeof(Arr<uchar, 5>)) + 10.0f * float(sizeof(Arr<float>));",
               out=((4,), "float32"), header=HEADER)
    assert got.tolist() == [6.5, 5.0, 120000.0, 5.0 + 120.0]


def test_each_argument_list_is_its_own_struct() -> None:
    header = HEADER + "inline float first(c10::metal::Arr<float> a) { return a.v[0]; }"
    assert one("c10::metal::Arr<float, 3> a = {{2.0f, 0.0f, 0.0f}}; out[0] = first(a);", header=header) == 2.0
    with pytest.raises(CompileError, match=r"'c10::metal::Arr<float, 4>'"):
        one("c10::metal::Arr<float, 4> a = {{2.0f}}; out[0] = first(a);", header=header)


def test_plain_struct_member_type_and_constant() -> None:
    assert one("Plain::type k = 3; out[0] = float(k) + Plain::eps;", header=HEADER) == 3.25


@pytest.mark.parametrize(("header", "body", "message"), [
    (HEADER, "c10::metal::OpMath<int>::nothing x; out[0] = 0;", "no member type or constant named 'nothing'"),
    (HEADER, "c10::metal::OpMath<int>::rank x; out[0] = 0;", "is a constant, not a type"),
    (HEADER, "c10::metal::Arr<float, 2, 3> a; out[0] = 0;", "takes 2 template argument"),
    (HEADER, "c10::metal::OpMath x; out[0] = 0;", "needs template arguments"),
    ("template <> struct Nope<int> { float a; };", "out[0] = 0;", "not a struct template declared before it"),
    ("struct S { static constexpr int k; };", "out[0] = 0;", "needs an initializer"),
])
def test_struct_template_mistakes_are_compile_errors(header: str, body: str, message: str) -> None:
    with pytest.raises(CompileError, match=message):
        one(body, header=header)


def test_a_body_statement_may_start_with_typename() -> None:
    assert one("typename c10::metal::OpMath<half>::type s = 1.5f; out[0] = s * 2.0f;", header=HEADER) == 3.0


def test_two_matching_partial_specialisations_are_a_compile_error() -> None:
    header = """
    template <typename T, typename U> struct Pick { static constexpr int k = 0; };
    template <typename T> struct Pick<T, int> { static constexpr int k = 1; };
    template <typename T> struct Pick<float, T> { static constexpr int k = 2; };
    """
    assert one("out[0] = Pick<half, int>::k + 10 * Pick<float, uint>::k + 100 * Pick<int, int>::k;",
               header=header) == 1.0 + 20.0 + 100.0
    with pytest.raises(CompileError, match=r"more than one partial specialisation of 'Pick' matches <float, int>"):
        one("out[0] = Pick<float, int>::k;", header=header)


def test_a_member_type_name_stays_inside_its_struct() -> None:
    """'using type = float;' in a struct names 'S::type'; after the struct, 'type' is free for a
    variable or a parameter (c10/metal's helpers take a 'ScalarType type' and switch on it)."""
    header = """
    template <typename T> struct Widen { using type = float; };
    struct Tag { typedef int type; };
    int pick(int type) { switch (type) { case 1: return 5; default: return 7; } }
    """
    src = "int type = 1;\nWiden<half>::type w = 0.5f;\nTag::type t = 2;\nout[0] = float(pick(type) + t) + w;"
    assert one(src, header=header) == 7.5


def test_a_member_type_is_still_a_type_inside_its_struct() -> None:
    header = """
    struct Acc {
      using value_type = int;
      value_type total;
      value_type add(value_type x) { total += x; return total; }
    };
    """
    assert one("Acc a = {1};\na.add(2);\nout[0] = a.add(4);", "int32", header=header) == 7


def test_member_alias_templates_name_types_in_member_functions() -> None:
    """'template <typename U> using ret_type = ...;' inside a struct (PyTorch's complex functors
    declare their result type so), also inside a struct template where it sees the struct's
    parameters. p(i, 0) = (i, 0) and s.apply(i) = (3 i, i)."""
    src = """
    #include <metal_stdlib>
    using namespace metal;
    template <typename T> struct pair_of { using type = vec<T, 2>; };
    struct polar {
      template <typename U> using ret_type = typename pair_of<U>::type;
      template <typename T> ret_type<T> operator()(const T r, const T a) { return ret_type<T>(r * cos(a), r * sin(a)); }
    };
    template <typename S>
    struct scaled {
      template <typename U> using out_t = vec<U, sizeof(S) / 2>;   // 2 for an int
      S k;
      template <typename T> out_t<T> apply(T x) { return out_t<T>(x * T(k), x); }
    };
    kernel void k(device float2* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      polar p;
      scaled<int> s = {3};
      out[i] = p(float(i), 0.0f) + s.apply(float(i));
    }"""
    out = np.zeros((4, 2), np.float32)
    compile_shader(src).k(out, threads=4)
    assert out.tolist() == [[4.0 * i, 1.0 * i] for i in range(4)]
