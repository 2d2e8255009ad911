"""Explicit specialisations of function templates ('template <> float2 unit<float2>() {...}'):
a call that binds exactly the specialisation's template arguments runs its body, every other
call the primary template's, whether the arguments were written or deduced."""

from __future__ import annotations

import pytest

from metal_puzzles.msl import CompileError

from .conftest import one

UNIT = """
template <typename T> T unit() { return static_cast<T>(1); }
template <> float2 unit<float2>() { return float2(1.0f, 0.0f); }
"""


def test_specialisation_replaces_the_primary_for_its_argument() -> None:
    """unit<float2>() is (1, 0) from the specialisation; the primary would give (1, 1)."""
    assert one("float2 u = unit<float2>();\nout[0] = u.x * 10.0f + u.y;", header=UNIT) == 10.0


def test_other_arguments_keep_the_primary() -> None:
    assert one("out[0] = unit<int>() + unit<float>();", header=UNIT) == 2.0


def test_specialisation_chosen_by_deduced_argument() -> None:
    """The template argument deduced from the call's argument selects the specialisation."""
    header = """
    template <typename T> int weight(T x) { return 2; }
    template <> int weight<short>(short x) { return 5; }
    """
    assert one("short s = 1;\nout[0] = weight(s) * 10 + weight(1.5f);", "int32", header=header) == 52


def test_specialisation_inside_a_namespace() -> None:
    header = """
    namespace ops {
    template <typename T> T zero_or_one() { return T(0); }
    template <> bool zero_or_one<bool>() { return true; }
    }
    """
    assert one("out[0] = int(ops::zero_or_one<bool>()) * 10 + ops::zero_or_one<int>();", "int32",
               header=header) == 10


def test_specialisation_with_the_wrong_number_of_arguments() -> None:
    header = """
    template <typename T> T pick() { return T(0); }
    template <> int pick<int, int>() { return 1; }
    """
    with pytest.raises(CompileError, match="gives 2 template argument"):
        one("out[0] = pick<int>();", "int32", header=header)
