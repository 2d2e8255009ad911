"""Operators overloaded on structs, as headers write them (complex numbers, small vectors).

``a * b`` with a struct operand calls the member ``operator*`` when the struct declares one,
else a free ``operator*`` (so ``2.0f * a`` works with a free function); unary operators,
compound assignment (``operator+=``, never synthesised from ``+``) and the member
``operator[]`` likewise. Expected values are complex arithmetic done by hand.
"""

from __future__ import annotations

import pytest

from metal_puzzles.msl import CompileError

from .conftest import one, out0

COMPLEX = """
namespace cx {
struct C {
    float re; float im;
    C operator*(C o) const { C r = {re * o.re - im * o.im, re * o.im + im * o.re}; return r; }
    C operator-() const { C r = {-re, -im}; return r; }
    thread C& operator+=(C o) { re += o.re; im += o.im; return *this; }
    float operator[](int k) const { return k == 0 ? re : im; }
};
inline C operator+(C a, C b) { C r = {a.re + b.re, a.im + b.im}; return r; }
inline C operator*(float s, C a) { C r = {s * a.re, s * a.im}; return r; }
inline bool operator==(C a, C b) { return a.re == b.re && a.im == b.im; }
inline bool operator!=(C a, C b) { return !(a == b); }
}
"""


def test_member_and_free_binary_operators() -> None:
    got = out0("using namespace cx; C a = {1.0f, 2.0f}; C b = {3.0f, -1.0f};"
               "C p = a * b; out[0] = p.re; out[1] = p.im;"       # (1+2i)(3-i) = 5+5i
               "C s = a + b + a; out[2] = s.re; out[3] = s.im;"   # chained free operator+ on a temporary
               "C t = 2.0f * a; out[4] = t.im;",                  # float * C: only the free one fits
               out=((5,), "float32"), header=COMPLEX)
    assert got.tolist() == [5.0, 5.0, 5.0, 3.0, 4.0]


def test_comparison_unary_compound_and_subscript() -> None:
    got = out0("cx::C a = {1.0f, 2.0f}; cx::C b = {3.0f, -1.0f};"
               "out[0] = float(a == a) + 10.0f * float(a != b) + 100.0f * float(a == b);"
               "cx::C n = -a; out[1] = n.re; n += b; out[2] = n[0]; out[3] = n[1];",
               out=((4,), "float32"), header=COMPLEX)
    assert got.tolist() == [11.0, -1.0, 2.0, -3.0]


def test_an_operator_the_struct_does_not_declare_is_an_error() -> None:
    with pytest.raises(CompileError, match=r"invalid operands to binary '/' \('cx::C' and 'cx::C'\): "
                                           "no 'operator/' is declared"):
        one("cx::C a = {1.0f, 2.0f}; cx::C q = a / a; out[0] = q.re;", header=COMPLEX)
    # C++ never makes '-=' out of '-' and '='.
    with pytest.raises(CompileError, match="no 'operator-=' is declared"):
        one("cx::C a = {1.0f, 2.0f}; a -= a; out[0] = a.re;", header=COMPLEX)


def test_an_operator_that_cannot_be_overloaded_is_a_located_error() -> None:
    with pytest.raises(CompileError, match="supports overloading") as info:
        one("out[0] = 1.0f;", header="struct S { float v; };\ninline S operator&&(S a, S b) { return a; }")
    assert (info.value.pos.line, info.value.pos.col) == (2, 18)
