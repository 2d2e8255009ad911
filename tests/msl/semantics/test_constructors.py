"""Constructors (issue 23), as attention kernels and PyTorch's MPS headers write them: member
initializer lists and/or a body, overloads, ``METAL_FUNC`` / ``inline`` / ``constexpr``
prefixes, called by ``P p(a, b);``, ``P p = P(a, b);``, ``P p{a, b};``, ``P p = {a, b};``,
``P p;`` (the default constructor), ``P(a, b)`` / ``P{a, b}`` as temporaries (also passed to
functions and used in place: ``P(a, b).sum()``), and in struct templates
(``Loader<T, N>(src, ld)``).

C++'s rules: members are initialised in declaration order, from the initializer list, else
from their default member initializer; a member with neither is indeterminate, and reading it
is the sanitizer's uninitialised read. Expected values are worked out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import CompileError, SanitizerError

from .conftest import out0

POINT = """
struct P {
    float a;
    int b;
    float c = 7.0f;                          // a default member initializer
    P(float x, int y) : a(x), b(y) {}
    METAL_FUNC P() : a(0), b(1) { c = 3.0f; }  // the body runs after the members are initialised
    inline explicit P(int y) : a(float(y) / 2), b{y} {}
    P(float x) : a(x), b(-1), c(x * 10.0f) {}  // same arity as P(int): picked by the argument's type
    float sum() const { return a + float(b) + c; }
};
float take(P p) { return p.sum(); }
"""


def test_each_declaration_form_calls_the_constructor_its_arguments_pick() -> None:
    got = out0("P p(1.5f, 2); out[0] = p.sum();"      # 1.5 + 2 + 7
               "P q = P(2.0f, 3); out[1] = q.sum();"  # 2 + 3 + 7
               "P r; out[2] = r.sum();"               # 0 + 1 + 3 (body assigns c)
               "P s{0.5f, 4}; out[3] = s.sum();"      # 0.5 + 4 + 7
               "P t = {0.25f, 1}; out[4] = t.sum();"  # 0.25 + 1 + 7
               "P u(5); out[5] = u.sum();"            # float(5) / 2 = 2.5, + 5 + 7
               "P v(0.5f); out[6] = v.sum();",        # 0.5 - 1 + 5
               out=((7,), "float32"), header=POINT)
    assert got.tolist() == [10.5, 12.0, 4.0, 11.5, 8.25, 14.5, 4.5]


def test_temporaries_are_built_by_constructors_and_used_in_place() -> None:
    got = out0("out[0] = P{1.0f, 1}.sum();"            # 1 + 1 + 7
               "out[1] = take(P(5));"                 # 2.5 + 5 + 7
               "out[2] = P(2.0f, 2).a * 4.0f;"
               "P w = P(1.0f, 0); w = P(3); out[3] = w.sum();",  # assignment from a temporary: 1.5 + 3 + 7
               out=((4,), "float32"), header=POINT)
    assert got.tolist() == [9.0, 14.5, 8.0, 11.5]


def test_a_const_object_is_made_by_its_constructor() -> None:
    got = out0("const P p(4); out[0] = p.a; out[1] = p.sum();", out=((2,), "float32"), header=POINT)
    assert got.tolist() == [2.0, 13.0]


LOADER = """
// Struct members cannot be pointers in the simulator: the loader keeps a base index.
template <typename T, int N>
struct BlockLoader {
    int base;
    int ld;
    T scale;
    BlockLoader(int row0, int l) : ld(l) { base = row0 * l; scale = T(N); }
    T at(const device T* src, int row, int col) const { return src[base + row * ld + col] * scale; }
};
"""


def test_a_struct_templates_constructor_runs_in_the_instances_types() -> None:
    x = np.arange(12, dtype=np.float32)
    got = out0("BlockLoader<float, 2> L(1, 4); out[0] = L.at(x, 1, 1);"        # x[4 + 4 + 1] * 2
               "out[1] = BlockLoader<float, 3>(0, 3).at(x, 1, 2);"             # x[5] * 3
               "out[2] = BlockLoader<int, 2>(0, 1).scale / 4;",                # int 2 / 4 = 0
               inputs={"x": x}, out=((3,), "float32"), header=LOADER)
    assert got.tolist() == [18.0, 15.0, 0.0]


def test_a_member_the_constructor_leaves_alone_is_indeterminate() -> None:
    header = "struct U { float a; float b; U(float x) : a(x) {} };"
    assert out0("U u(1.0f); out[0] = u.a;", header=header).tolist() == [1.0]
    assert out0("out[0] = U(2.0f).a;", header=header).tolist() == [2.0]  # no copy of the indeterminate 'b'
    with pytest.raises(SanitizerError, match=r"uninitialized-read: thread 0 reads u\.b"):
        out0("U u(1.0f); out[0] = u.b;", header=header)


TWO = "struct U { float a; float b; U(float x) : a(x), b(0) {} U(float x, float y) : a(x), b(y) {} };"


@pytest.mark.parametrize(("header", "body", "message"), [
    (TWO, "U u; out[0] = u.a;", r"no constructor of 'U' takes 0 argument\(s\) \(its constructors take 1 or 2\)"),
    (TWO, "U u(1.0f, 2.0f, 3.0f); out[0] = u.a;", "no constructor of 'U' takes 3 argument"),
    ("struct V { float a; V(float x) : c(x) {} };", "V v(1.0f); out[0] = v.a;",
     "'c' in the initializer list of 'V' is not a data member of it"),
    ("struct V { float a; V(float x) : a(x), a(x) {} };", "V v(1.0f); out[0] = v.a;", "member 'a' is initialized twice"),
    (TWO + "struct W { U u; };", "out[0] = 1;", "member 'u' has type 'U', which has constructors"),
    (TWO + "U make() { return {1.0f, 2.0f}; }", "out[0] = make().a;", "'U' has constructors, so a brace list here"),
    ("struct V { float a; V(float x); };", "out[0] = 1;", "constructor 'V' needs its body here"),
    ("struct V { float a; ~V() {} };", "out[0] = 1;", "destructors are not supported"),
])
def test_what_stays_outside_is_a_precise_error(header: str, body: str, message: str) -> None:
    with pytest.raises(CompileError, match=message):
        out0(body, out=((1,), "float32"), header=header)


@pytest.mark.parametrize(("body", "message"), [
    ("U u(); out[0] = 1;", r"'u\(\)' declares a function in C\+\+, not a variable"),
    ("int i = 2; U u(float(i)); out[0] = u.a;", "this declares 'u' as a function in C\\+\\+"),
])
def test_cpps_most_vexing_parse_is_refused_not_misread(body: str, message: str) -> None:
    # g++ reads both as function declarations; the simulator says so instead of making a variable.
    with pytest.raises(CompileError, match=message):
        out0(body, header=TWO)


def test_the_unambiguous_spellings_make_variables() -> None:
    got = out0("int i = 2; U u{float(i)}; U v = U(float(i), 1.0f); U w(float(i) + 1.0f); out[0] = u.a + v.b + w.a;",
               header=TWO)
    assert got.tolist() == [6.0]


NAMESPACED = """
namespace num { namespace detail {
struct pair2 {
    float hi;
    float lo;
    pair2(float h, float l) : hi(h), lo(l) {}
    explicit pair2(long i) : hi(static_cast<float>(i)), lo(static_cast<float>(i - static_cast<long>(static_cast<float>(i)))) {}
};
inline pair2 two_sum(float a, float b) {
    const float s = a + b;
    const float v = s - a;
    return pair2(s, (a - (s - v)) + (b - v));   // a temporary of a struct declared in a namespace
}
} }
"""


def test_temporaries_of_a_namespaced_struct_split_a_value_exactly() -> None:
    # two_sum: hi + lo is a + b exactly (floats near 1e8 are 8 apart: hi rounds to 1e8, lo = 3);
    # pair2(long): 2^24 + 1 splits into 2^24 and 1.
    got = out0("num::detail::pair2 p = num::detail::two_sum(1.0e8f, 3.0f);"
               "num::detail::pair2 q = num::detail::pair2(16777217l);"
               "out[0] = p.hi - 1.0e8f; out[1] = p.lo; out[2] = q.hi - 16777216.0f; out[3] = q.lo;",
               out=((4,), "float32"), header=NAMESPACED)
    assert got.tolist() == [0.0, 3.0, 0.0, 1.0]
