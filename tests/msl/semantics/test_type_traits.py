"""Type traits, overload selection by ``enable_if_t`` (SFINAE), ``static_assert`` and default
template arguments, as shader headers use them (PyTorch's c10/metal headers pick float or
integer versions of a helper with ``enable_if_t<is_floating_point_v<T>>``).

Expected values are the C++ standard's and Metal's definitions: ``half`` and ``bfloat`` are
floating point; ``bool`` is integral and unsigned; the scalar traits are false for vectors.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import CompileError

from .conftest import one, out0

TRAIT_TABLE = [
    # trait, type, value
    ("is_floating_point_v", "float", True), ("is_floating_point_v", "half", True),
    ("is_floating_point_v", "bfloat", True), ("is_floating_point_v", "int", False),
    ("is_floating_point_v", "float4", True), ("is_integral_v", "bool", True),
    ("is_integral_v", "ushort", True), ("is_integral_v", "long", True), ("is_integral_v", "half", False),
    ("is_signed_v", "char", True), ("is_signed_v", "float", True), ("is_signed_v", "uint", False),
    ("is_signed_v", "bool", False), ("is_unsigned_v", "bool", True), ("is_unsigned_v", "uchar", True),
    ("is_unsigned_v", "int", False), ("is_unsigned_v", "float", False), ("is_arithmetic_v", "half", True),
    ("is_arithmetic_v", "int2", True), ("is_integral_v", "ushort3", True), ("is_signed_v", "uint2", False), ("is_vector_v", "half3", True), ("is_vector_v", "float", False),
    ("is_scalar_v", "uint", True), ("is_scalar_v", "float2", False),
]


@pytest.mark.parametrize(("trait", "type_name", "value"), TRAIT_TABLE)
def test_trait_values(trait: str, type_name: str, value: bool) -> None:
    # As a run-time value, a constant expression (array size) and through metal::.
    body = f"bool v = metal::{trait}<{type_name}>; int sized[{trait}<{type_name}> ? 2 : 1];" \
           f"out[0] = float(v) + 10.0f * float(sizeof(sized) / sizeof(int));"
    assert one(body) == float(value) + 10.0 * (2 if value else 1)


def test_is_same_forms_and_aliases() -> None:
    header = "typedef float real; using index_t = int;"
    got = out0("out[0] = is_same_v<real, float>; out[1] = metal::is_same<index_t, int>::value;"
               "out[2] = is_same_v<int, uint>; out[3] = is_same_v<float2, vec<float, 2>>;",
               out=((4,), "float32"), header=header)
    assert got.tolist() == [1.0, 1.0, 0.0, 1.0]


SFINAE = """
using namespace metal;
// Chosen by a defaulted type parameter (the arithmetic traits hold for vectors by their element type, so a
// scalar-only overload also asks is_scalar_v, as PyTorch's is_scalar_floating_point_v does).
template <typename T, typename = enable_if_t<is_floating_point_v<T> && is_scalar_v<T>>> float kind(T x) { return 1.0f; }
// Chosen by a value parameter whose type is formed by enable_if_t.
template <typename T, enable_if_t<is_integral_v<T>, int> = 0> float kind(T x) { return 2.0f; }
// Chosen by the return type.
template <typename T> enable_if_t<is_vector_v<T>, float> kind(T x) { return 3.0f; }
template <typename T> conditional_t<is_integral_v<T>, long, float> widened(T x) { return x; }
"""


def test_enable_if_selects_one_overload_per_type() -> None:
    got = out0("out[0] = kind(1.0f); out[1] = kind(half(1.0h)); out[2] = kind(7); out[3] = kind(true);"
               "out[4] = kind(uchar(1)); out[5] = kind(float4(0.0f));",
               out=((6,), "float32"), header=SFINAE)
    assert got.tolist() == [1.0, 1.0, 2.0, 2.0, 2.0, 3.0]


def test_conditional_t_picks_a_type() -> None:
    got = out0("out[0] = float(sizeof(widened(3))); out[1] = float(sizeof(widened(2.5f)));"
               "out[2] = float(widened(7) / 2); out[3] = widened(7.0f) / 2;",
               out=((4,), "float32"), header=SFINAE)
    assert got.tolist() == [8.0, 4.0, 3.0, 3.5]


def test_no_candidate_left_is_a_located_error() -> None:
    header = "template <typename T> metal::enable_if_t<metal::is_same_v<T, half>, T> only_half(T x) { return x; }"
    with pytest.raises(CompileError, match="no matching function for call to 'only_half': 'enable_if_t' "
                                           "condition is false") as info:
        one("out[0] = 1.0f;\nout[0] = only_half(1.0f);", header=header)
    assert (info.value.pos.line, info.value.pos.col) == (2, 10)


def test_static_assert_passes_silently_and_fails_with_its_message() -> None:
    header = "static_assert(sizeof(float4) == 16, \"float4 is 16 bytes\");\nstatic_assert(is_integral_v<int>);"
    assert one("static_assert(sizeof(half) == 2); out[0] = 1.0f;", header=header) == 1.0
    with pytest.raises(CompileError, match="static assertion failed: float3 is 12 bytes") as info:
        one("out[0] = 1.0f;", header='static_assert(sizeof(float3) == 12, "float3 is 12 bytes");')
    assert (info.value.pos.line, info.value.pos.col) == (1, 1)


def test_static_assert_in_a_template_is_checked_per_instance() -> None:
    header = """
    template <typename T> T halve(T x) {
        static_assert(metal::is_floating_point_v<T>, "halve needs a floating-point type");
        return x / T(2);
    }"""
    assert one("out[0] = halve(3.0f) + float(halve(half(1.0h)));", header=header) == 2.0
    with pytest.raises(CompileError, match="static assertion failed: halve needs a floating-point type"):
        one("out[0] = float(halve(3));", header=header)


def test_default_template_arguments_follow_earlier_ones() -> None:
    header = """
    template <typename T, typename Acc = conditional_t<is_same_v<T, half>, float, T>, int N = sizeof(Acc)>
    float acc_size(T x) { Acc a = Acc(x); return float(N) + float(sizeof(a)) * 0.5f; }
    template <int N = 3> float scaled(float x) { return x * N; }
    """
    got = out0("out[0] = acc_size(half(1.0h)); out[1] = acc_size(short(1)); out[2] = scaled(2.0f);"
               "out[3] = scaled<5>(2.0f);", out=((4,), "float32"), header=header)
    assert got.tolist() == [6.0, 3.0, 6.0, 10.0]


@pytest.mark.parametrize(("body", "message"), [
    ("out[0] = is_same_v<int>;", "'is_same' takes 2 type argument"),
    ("out[0] = is_integral_v<3>;", "takes types as its template arguments"),
    ("metal::enable_if_t<true, float, int> x = 1.0f; out[0] = x;", "'enable_if_t' takes 1 or 2 template arguments"),
    ("metal::conditional_t<true, 1, int> x = 1; out[0] = x;", "takes a type after its condition"),
    ("static_assert(out[0] == 1.0f); out[0] = 1.0f;", "static_assert condition must be a compile-time constant"),
])
def test_trait_mistakes_are_compile_errors(body: str, message: str) -> None:
    with pytest.raises(CompileError, match=message):
        one(body)


OPMATH = """
namespace c10 { namespace metal {
// The type arithmetic on T is done in: float for the 16-bit floats, T itself otherwise.
template <typename T> using opmath_t = conditional_t<is_same_v<T, half> || is_same_v<T, bfloat>, float, T>;
template <typename T, int N = 2> using vec_t = vec<T, N>;
template <typename T> opmath_t<T> add(T a, T b) { return opmath_t<T>(a) + opmath_t<T>(b); }
} }
"""


def test_alias_templates_with_traits_and_defaults() -> None:
    got = out0("using namespace c10::metal; out[0] = sizeof(opmath_t<half>); out[1] = sizeof(c10::metal::opmath_t<short>);"
               "out[2] = sizeof(vec_t<float>) + sizeof(vec_t<half, 4>);"
               "out[3] = is_same_v<opmath_t<bfloat>, float> && is_same_v<vec_t<int, 3>, int3>;",
               out=((4,), "float32"), header=OPMATH)
    assert got.tolist() == [4.0, 2.0, 16.0, 1.0]


def test_alias_template_as_a_return_type_keeps_precision() -> None:
    # 60000 + 60000 overflows half (max 65504) but not float, the opmath type of half.
    assert one("out[0] = c10::metal::add(half(60000.0h), half(60000.0h));", header=OPMATH) == 120000.0
    assert one("out[0] = float(c10::metal::add(half(1.0h), half(2.0h)) / 2);", header=OPMATH) == 1.5


def test_alias_template_argument_mistakes() -> None:
    with pytest.raises(CompileError, match="alias template 'c10::metal::vec_t' takes 2 template argument"):
        one("c10::metal::vec_t<float, 2, 3> v; out[0] = 1.0f;", header=OPMATH)
    with pytest.raises(CompileError, match="needs a value for 'T'"):
        one("c10::metal::opmath_t<> v = 1; out[0] = 1.0f;", header=OPMATH)


# Helpers in the style of PyTorch's c10/metal headers (written afresh): overload sets chosen by
# a variable template trait through 'enable_if_t<..., bool> = true', NaN-propagating wrappers
# over '::metal::' builtins, and a return type computed with decltype.
TORCH_STYLE = """
namespace ops {
template <typename T> constexpr constant bool is_cplx_v = metal::is_same_v<T, float2> || metal::is_same_v<T, half2>;
template <typename T> metal::enable_if_t<metal::is_floating_point_v<T>, T> nan_max(T a, T b) {
    return ::metal::isunordered(a, b) ? NAN : ::metal::max(a, b);
}
template <typename T, typename U, metal::enable_if_t<metal::is_integral_v<T> && metal::is_integral_v<U>, bool> = true>
inline decltype(T(0) + U(0)) floor_div(T x, U y) {
    const auto q = x / y;
    return (x < 0) == (y < 0) ? q : (x % y != 0) ? q - 1 : q;
}
template <typename T, typename U, metal::enable_if_t<!is_cplx_v<T> && !is_cplx_v<U>, bool> = true>
inline T convert(const U from) { return static_cast<T>(from); }
template <typename T, typename U, metal::enable_if_t<is_cplx_v<T> && !is_cplx_v<U>, bool> = true>
inline T convert(const U from) { return T(float(from), 0.0f); }
}
"""


def test_torch_style_overload_sets() -> None:
    got = out0("out[0] = ops::nan_max(1.0f, NAN); out[1] = ops::nan_max(2.0f, -3.0f);"
               "out[2] = ops::floor_div(-7, 2); out[3] = ops::floor_div(7, 2); out[4] = sizeof(ops::floor_div(1, 2l));"
               "out[5] = ops::convert<float>(3); out[6] = ops::convert<float2>(2).x + 10.0f * ops::convert<float2>(2).y;",
               out=((7,), "float32"), header=TORCH_STYLE)
    assert np.isnan(got[0])
    assert got[1:].tolist() == [2.0, -4.0, 3.0, 8.0, 3.0, 2.0]


def test_a_pack_before_the_last_template_parameter_is_a_located_compile_error() -> None:
    # Variadic templates are supported (test_variadic_templates.py) with the pack last, as headers write them.
    with pytest.raises(CompileError, match="a template parameter pack must be the last") as info:
        one("out[0] = 1.0f;", header="template <typename... Args, typename F> float g(F f) { return 1.0f; }")
    assert (info.value.pos.line, info.value.pos.col) == (1, 27)


# --------------------------------------------------------------------------- declval
def test_declval_gives_the_type_of_an_expression_on_a_type() -> None:
    """decltype(metal::declval<A>() + metal::declval<B>()) is the type of 'a + b' (the usual
    arithmetic conversions): half + float is float, short + short is int (promotion)."""
    header = """
    template <typename A, typename B>
    using sum_t = decltype(::metal::declval<A>() + ::metal::declval<B>());
    """
    src = ("out[0] = (metal::is_same_v<sum_t<half, float>, float> ? 1 : 0)"
           " + (metal::is_same_v<sum_t<short, short>, int> ? 10 : 0)"
           " + (metal::is_same_v<sum_t<uint, int>, uint> ? 100 : 0);")
    assert one(src, "int32", header=header) == 111


def test_declval_of_a_helper_call_gives_its_return_type() -> None:
    header = """
    template <typename T> T twice(T x) { return x * T(2); }
    template <typename T> using twice_t = decltype(twice(metal::declval<T>()));
    """
    assert one("twice_t<half> h = 1.5h; out[0] = metal::is_same_v<twice_t<half>, half> ? float(h) : -1.0f;",
               header=header) == 1.5


def test_declval_outside_an_unevaluated_operand_does_not_compile() -> None:
    with pytest.raises(CompileError, match="only be used in an unevaluated operand"):
        one("out[0] = metal::declval<float>();")
    with pytest.raises(CompileError, match="one type and no arguments"):
        one("decltype(metal::declval<float>(1.0f)) x = 1; out[0] = x;")
