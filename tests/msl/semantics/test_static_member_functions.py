"""Static member functions (issue 23), as PyTorch's c10/metal reduction ops and attention
kernels write them: ``struct MaxOp { static constexpr float identity() {...} };``, called as
``MaxOp::identity()``, ``Max<T>::apply(a, b)``, ``F::apply(a, b)`` with F a template type
parameter, on an object (``op.apply(a, b)``), and unqualified from another member function.
They have no ``this``; a ``static constexpr`` one whose body is ``return expr;`` is a constant
expression.

Expected values are worked out by hand.
"""

from __future__ import annotations

import math

import pytest

from metal_puzzles.msl import CompileError

from .conftest import out0

OPS = """
struct MaxOp {
    static constexpr float identity() { return -INFINITY; }
    static float apply(float a, float b) { return a > b ? a : b; }
};
struct SumOp {
    static constexpr float identity() { return 0.0f; }
    static float apply(float a, float b) { return a + b; }
};
template <typename T> struct Max {
    static T apply(T a, T b) { return a > b ? a : b; }
    static T apply_twice(T a, T b) { return apply(apply(a, b), b) + T(1); }  // unqualified call
};
template <typename Op> float reduce3(float a, float b, float c) {
    float acc = Op::identity();
    acc = Op::apply(acc, a);
    acc = Op::apply(acc, b);
    return Op::apply(acc, c);
}
struct Tile {
    static constexpr int rows() { return 3; }
    static constexpr int cols(int pad) { return 4 + pad; }
    int base;
    int corner() const { return base + rows() * cols(0); }  // a static one called from a member
};
"""


def test_a_static_member_function_is_called_through_its_struct() -> None:
    got = out0("out[0] = MaxOp::identity(); out[1] = MaxOp::apply(2.0f, -3.0f); out[2] = SumOp::apply(2.0f, -3.0f);",
               out=((3,), "float32"), header=OPS)
    assert got[0] == -math.inf
    assert got[1:].tolist() == [2.0, -1.0]


def test_a_template_type_parameter_names_the_op_whose_static_functions_run() -> None:
    got = out0("out[0] = reduce3<MaxOp>(1.5f, -2.0f, 0.5f); out[1] = reduce3<SumOp>(1.5f, -2.0f, 0.5f);",
               out=((2,), "float32"), header=OPS)
    assert got.tolist() == [1.5, 0.0]


def test_a_struct_templates_static_function_works_in_the_instances_type() -> None:
    # Max<int>: 7 / 2 is computed by the caller in int; apply_twice adds T(1) in int.
    got = out0("out[0] = Max<float>::apply(2.5f, 1.0f); out[1] = Max<int>::apply(7, 9) / 2;"
               "out[2] = Max<int>::apply_twice(3, 5);",
               out=((3,), "float32"), header=OPS)
    assert got.tolist() == [2.5, 4.0, 6.0]


def test_a_static_function_called_on_an_object_ignores_the_object() -> None:
    got = out0("MaxOp op; Max<float> m; out[0] = op.apply(1.0f, 9.0f); out[1] = m.apply(-1.0f, -9.0f);",
               out=((2,), "float32"), header=OPS)
    assert got.tolist() == [9.0, -1.0]


def test_static_constexpr_functions_are_constant_expressions() -> None:
    # An array sized by one (3 * (4 + 1) floats) and a static_assert on another.
    got = out0("float cells[Tile::rows() * Tile::cols(1)];"
               "static_assert(Tile::cols(2) == 6, \"cols\");"
               "constexpr float lowest = MaxOp::identity();"
               "out[0] = sizeof(cells) / sizeof(float); out[1] = lowest;",
               out=((2,), "float32"), header=OPS)
    assert got[0] == 15.0 and got[1] == -math.inf


def test_a_member_function_calls_a_static_one_without_qualification() -> None:
    got = out0("Tile t = {100}; out[0] = t.corner();", out=((1,), "int32"), header=OPS)
    assert got.tolist() == [112]


@pytest.mark.parametrize(("header", "body", "message"), [
    ("struct S { float v; static float f() { return v; } };", "out[0] = S::f();",
     "invalid use of member 'v' in a static member function"),
    ("struct S { float v; float g() const { return v; } };", "out[0] = S::g();",
     "call to non-static member function 'S::g' without an object"),
    ("struct S { static float f() const { return 1; } };", "out[0] = S::f();",
     "static member function 'f' cannot be 'const'"),
    ("struct S { static int n; };", "out[0] = 1;",
     "'static' inside a struct is supported on member functions"),
])
def test_what_a_static_member_function_cannot_do_is_a_precise_error(header: str, body: str, message: str) -> None:
    with pytest.raises(CompileError, match=message):
        out0(body, out=((1,), "float32"), header=header)


LIMITS = """
template <typename T> struct Lim {
    static constexpr T lowest() { return T(-5); }
    static constexpr int bytes() { return sizeof(T); }
};
template <typename L> int bytes_through(int k) { int cells[L::bytes()]; return k * int(sizeof(cells) / sizeof(int)); }
"""


def test_a_struct_templates_static_constexpr_function_is_a_constant_expression() -> None:
    # sizeof(half) = 2, sizeof(float) = 4; lowest() converts -5 to the instance's type.
    got = out0("int cells[Lim<half>::bytes()]; static_assert(Lim<float>::bytes() == 4, \"float\");"
               "constexpr int low = Lim<int>::lowest();"
               "out[0] = sizeof(cells) / sizeof(int); out[1] = low; out[2] = bytes_through<Lim<float>>(10);",
               out=((3,), "float32"), header=LIMITS)
    assert got.tolist() == [2.0, -5.0, 40.0]
