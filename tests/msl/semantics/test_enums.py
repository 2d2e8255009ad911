"""Enumerations at namespace scope, as shader headers declare them (PyTorch's c10/metal names its
dtypes with a macro-generated 'enum class ScalarType'): the enumerators' values follow C++ (each
one more than the one before unless written, the first 0), a scoped enum's enumerators are named
through the enum, an unscoped one's also through the enclosing namespace, and the underlying
type is int unless written."""

from __future__ import annotations

import pytest

from metal_puzzles.msl import CompileError

from .conftest import one

HEADER = """
namespace dt {
enum class Kind { Byte, Half = 5, Float, Last = Float + 10 };
inline int bytes(Kind k) {
  switch (k) {
    case Kind::Byte: return 1;
    case Kind::Half: return 2;
    case Kind::Float: return 4;
    default: return 0;
  }
}
}
"""


@pytest.mark.parametrize(("expr", "value"), [
    ("int(dt::Kind::Byte)", 0), ("int(dt::Kind::Half)", 5), ("int(dt::Kind::Float)", 6),
    ("int(dt::Kind::Last)", 16),
])
def test_enumerator_values_follow_cpp(expr: str, value: int) -> None:
    assert one(f"out[0] = {expr};", "int32", header=HEADER) == value


def test_switch_on_an_enum_converted_from_an_integer() -> None:
    """static_cast<Kind>(6) is Kind::Float; case labels are the enumerators."""
    src = "int w = dt::bytes(static_cast<dt::Kind>(6)) * 10 + dt::bytes(dt::Kind::Byte);\nout[0] = w;"
    assert one(src, "int32", header=HEADER) == 41


def test_using_namespace_finds_the_enum_and_its_enumerators() -> None:
    header = HEADER + "using namespace dt;\n"
    assert one("Kind k = Kind::Half;\nout[0] = bytes(k);", "int32", header=header) == 2


def test_unscoped_enumerators_are_names_of_the_enclosing_namespace() -> None:
    header = "enum Color : uchar { Red, Green = 3, Blue };\n"
    assert one("out[0] = Blue * 100 + int(Color::Green) * 10 + sizeof(Color);", "int32", header=header) == 431


def test_enumerator_values_must_fit_the_underlying_type() -> None:
    with pytest.raises(CompileError, match="enumerator value 256 does not fit 'uchar'"):
        one("out[0] = 0;", header="enum class E : uchar { A = 255, B };")


def test_an_enumeration_over_a_non_integer_type_does_not_compile() -> None:
    with pytest.raises(CompileError, match="must be an integer type, not 'float'"):
        one("out[0] = 0;", header="enum class E : float { A };")
