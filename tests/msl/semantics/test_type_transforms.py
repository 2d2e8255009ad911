"""The type-producing traits of <metal_type_traits> and the constant-carrying types (issue 23):
``remove_cv_t``, ``remove_const_t``, ``remove_volatile_t``, ``remove_reference_t``,
``remove_cvref_t``, ``decay_t``, ``make_signed_t``, ``make_unsigned_t``, and
``integral_constant<T, v>`` with ``bool_constant``, ``true_type`` and ``false_type`` (their
``::value``, their call operator, and tag dispatch between overloads).

Expected values follow the C++ standard's definitions, worked out by hand.
"""

from __future__ import annotations

import pytest

from metal_puzzles.msl import CompileError

from .conftest import one, out0

SAME_TYPE = [
    ("remove_cv_t<const volatile float>", "float"),
    ("remove_const_t<const int>", "int"),
    ("remove_volatile_t<volatile uint>", "uint"),
    ("remove_reference_t<thread half&>", "half"),
    ("remove_cvref_t<const thread short&>", "short"),
    ("decay_t<const float>", "float"),
    ("make_unsigned_t<int>", "uint"),
    ("make_unsigned_t<uint>", "uint"),
    ("make_unsigned_t<char>", "uchar"),
    ("make_signed_t<ushort>", "short"),
    ("make_signed_t<ulong>", "long"),
]


@pytest.mark.parametrize(("trait", "expected"), SAME_TYPE)
def test_a_transform_names_the_standards_type(trait: str, expected: str) -> None:
    assert one(f"out[0] = metal::is_same_v<metal::{trait}, {expected}> ? 1.0f : 0.0f;") == 1.0


def test_transformed_types_keep_c_arithmetic() -> None:
    # make_unsigned_t<int> holds -1 as 4294967295 (> 0); make_signed_t<uint> holds 0xFFFFFFFF as -1;
    # remove_cv_t<const float> is a mutable float.
    got = out0("metal::make_unsigned_t<int> u = -1; out[0] = u > 0u ? 1.0f : 0.0f;"
               "metal::make_signed_t<uint> s = 0xFFFFFFFFu; out[1] = s;"
               "metal::remove_cv_t<const float> f = 2.5f; f += 1.0f; out[2] = f;",
               out=((3,), "float32"))
    assert got.tolist() == [1.0, -1.0, 3.5]


def test_decay_turns_an_array_into_a_pointer_to_its_first_element() -> None:
    got = out0("float a[3] = {4.0f, 5.0f, 6.0f}; using P = metal::decay_t<decltype(a)>;"
               "P p = a; out[0] = p[2]; out[1] = metal::is_pointer_v<P> ? 1.0f : 0.0f;",
               out=((2,), "float32"))
    assert got.tolist() == [6.0, 1.0]


TAGS = """
template <typename T> float kind(T x, metal::true_type) { return x * 2.0f; }
template <typename T> float kind(T x, metal::false_type) { return float(x) + 100.0f; }
template <typename T> float dispatch(T x) {
    return kind(x, metal::bool_constant<metal::is_floating_point_v<T>>{});
}
"""


def test_integral_constant_carries_its_value() -> None:
    got = out0("out[0] = metal::integral_constant<int, 7>::value;"
               "out[1] = metal::true_type::value ? 1.0f : 0.0f; out[2] = metal::false_type::value ? 1.0f : 0.0f;"
               "metal::integral_constant<short, -3> c; out[3] = c();"
               "int sized[metal::integral_constant<int, 4>::value]; out[4] = sizeof(sized) / sizeof(int);"
               "out[5] = metal::is_same_v<metal::integral_constant<uint, 2>::value_type, uint> ? 1.0f : 0.0f;",
               out=((6,), "float32"))
    assert got.tolist() == [7.0, 1.0, 0.0, -3.0, 4.0, 1.0]


def test_true_type_and_false_type_pick_an_overload_by_tag() -> None:
    got = out0("out[0] = dispatch(1.5f); out[1] = dispatch(3);", out=((2,), "float32"), header=TAGS)
    assert got.tolist() == [3.0, 103.0]


@pytest.mark.parametrize(("trait", "message"), [
    ("make_unsigned_t<float>", "'make_unsigned_t' needs an integer type other than bool, not 'float'"),
    ("make_signed_t<bool>", "'make_signed_t' needs an integer type other than bool, not 'bool'"),
    ("remove_cv_t<float, int>", "'remove_cv_t' takes one type argument"),
])
def test_a_transform_of_the_wrong_type_is_a_precise_error(trait: str, message: str) -> None:
    with pytest.raises(CompileError, match=message):
        one(f"metal::{trait} x = 0; out[0] = x;")
