"""Namespaces as shader headers use them (PyTorch's c10/metal headers: ``namespace c10 {
namespace metal { ... } }`` wrapping helpers that call ``::metal::`` builtins).

C++ lookup rules, each with an answer worked out by hand: a qualified name names exactly that
declaration; an unqualified name is looked up from the current namespace outwards, so an inner
declaration hides an outer one (and a user ``c10::metal::max`` hides the builtin inside
``c10::metal``, while ``::metal::max`` still reaches the builtin); ``using namespace`` makes a
namespace's names visible unqualified; nested and ``a::b`` namespace definitions are one;
structs, type aliases and constants in namespaces work like functions do.
"""

from __future__ import annotations

import pytest

from metal_puzzles.msl import CompileError

from .conftest import one, out0

C10_LIKE = """
namespace c10 {
namespace metal {
constant float bias = 0.5f;
// Hides the builtin inside c10::metal; '::metal::max' is still the builtin.
template <typename T> T max(T a, T b) { return ::metal::max(a, b) + bias; }
inline float twice(float x) { return 2.0f * x; }
inline float max_of_twice(float a, float b) { return max(twice(a), twice(b)); }
struct Pair { float a; float b; float sum() const { return twice(a) + b; } };
typedef int index_t;
namespace detail { inline float twice(float x) { return 10.0f * x; } inline float inner(float x) { return twice(x); } }
inline float via_detail(float x) { return detail::inner(x) + twice(x); }
}  // namespace metal
}  // namespace c10
namespace other { inline float twice(float x) { return 3.0f * x; } }
namespace a::b { inline int seven() { return 7; } }
namespace a { inline int eight() { return b::seven() + 1; } }
"""


def four(body: str, header: str = C10_LIKE) -> list[float]:
    return out0(body, out=((4,), "float32"), header=header).tolist()


def test_qualified_names_pick_the_declaration_of_that_namespace() -> None:
    got = four("out[0] = c10::metal::twice(1.5f); out[1] = other::twice(1.5f);"
               "out[2] = c10::metal::detail::twice(1.5f); out[3] = float(a::b::seven());")
    assert got == [3.0, 4.5, 15.0, 7.0]


def test_a_user_function_hides_the_builtin_inside_its_namespace_only() -> None:
    got = four("out[0] = c10::metal::max(1.0f, 2.0f); out[1] = metal::max(1.0f, 2.0f);"
               "out[2] = max(1.0f, 2.0f); out[3] = ::metal::max(-1.0f, -2.0f);")
    assert got == [2.5, 2.0, 2.0, -1.0]
    # Inside c10::metal an unqualified 'max' is c10::metal::max: max(2a, 2b) + 0.5.
    assert one("out[0] = c10::metal::max_of_twice(1.0f, 3.0f);", header=C10_LIKE) == 6.5


def test_unqualified_lookup_goes_from_the_inner_namespace_outwards() -> None:
    # detail::inner calls detail::twice (x10), not c10::metal::twice; via_detail adds c10::metal::twice.
    assert one("out[0] = c10::metal::via_detail(2.0f);", header=C10_LIKE) == 24.0
    # a::eight finds 'b' as a::b from inside namespace a.
    assert one("out[0] = float(a::eight());", header=C10_LIKE) == 8.0


def test_structs_aliases_and_constants_in_namespaces() -> None:
    got = four("c10::metal::Pair p = {1.0f, 2.0f}; out[0] = p.sum();"
               "c10::metal::index_t k = 5; out[1] = float(k / 2);"
               "out[2] = c10::metal::bias; ::c10::metal::Pair q = p; out[3] = q.b;")
    assert got == [4.0, 2.0, 0.5, 2.0]


def test_using_namespace_makes_names_visible_unqualified() -> None:
    got = four("using namespace c10::metal; Pair p = {3.0f, 1.0f}; out[0] = p.sum(); out[1] = twice(2.0f);"
               "index_t i = 3; out[2] = float(i); out[3] = bias;")
    assert got == [7.0, 4.0, 3.0, 0.5]
    header = C10_LIKE + "namespace user { using namespace c10::metal; inline float f(float x) { return twice(x); } }"
    assert one("out[0] = user::f(4.0f);", header=header) == 8.0


def test_using_namespace_metal_in_the_header_and_the_body() -> None:
    assert one("out[0] = fabs(-2.0f) + metal::precise::sqrt(4.0f);", header="using namespace metal;") == 4.0
    assert one("using namespace metal; out[0] = clamp(5.0f, 0.0f, 1.0f);") == 1.0


def test_a_name_in_another_namespace_is_not_found_unqualified() -> None:
    with pytest.raises(CompileError, match="undeclared function 'twice'"):
        one("out[0] = twice(1.0f);", header=C10_LIKE)
    with pytest.raises(CompileError, match="unknown type name 'Pair'"):
        one("Pair p = {1.0f, 2.0f}; out[0] = p.a;", header=C10_LIKE)


@pytest.mark.parametrize(("header", "message", "line", "col"), [
    ("namespace n { inline float f() { return 1.0f; }", "expected '}' to close this namespace", 1, 13),
    ("namespace n = metal;", "namespace aliases", 1, 13),
    ("using namespace nowhere;", "unknown namespace 'nowhere'", 1, 1),
])
def test_namespace_mistakes_are_located_compile_errors(header: str, message: str, line: int, col: int) -> None:
    with pytest.raises(CompileError, match=message) as info:
        one("out[0] = 1.0f;", header=header)
    assert (info.value.pos.line, info.value.pos.col) == (line, col)


def test_anonymous_and_inline_namespaces_are_found_from_the_enclosing_one() -> None:
    header = """
    namespace { inline float hidden(float x) { return x + 1.0f; } }
    namespace lib { inline namespace v2 { inline float f(float x) { return 2.0f * x; } } }
    """
    assert one("out[0] = hidden(1.0f) + lib::f(3.0f);", header=header) == 8.0


def test_a_static_assert_in_a_namespace_sees_its_names() -> None:
    """A namespace-scope static_assert is checked where it is written: unqualified names are
    the namespace's own (c10/metal/indexing.h asserts on its ILP_PER_THREAD this way)."""
    header = """
    namespace lib { namespace detail {
    constant constexpr int WIDTH = 4;
    static_assert(WIDTH == 4, "WIDTH must be 4");
    } }
    """
    assert one("out[0] = lib::detail::WIDTH;", "int32", header=header) == 4
    failing = header.replace("WIDTH == 4,", "WIDTH == 5,")
    with pytest.raises(CompileError, match="static assertion failed: WIDTH must be 4"):
        one("out[0] = 0;", "int32", header=failing)


# Every spelling of a library name: plain, 'metal::' and '::metal::' (lang/metal_namespace.py's
# one rule); the deduction through '::metal::vec<T, N>' failed while one site stripped 'metal::'
# without the leading '::'.
@pytest.mark.parametrize("metal", ["", "metal::", "::metal::"])
def test_every_spelling_of_a_library_name_is_the_library_s(metal: str) -> None:
    header = f"template <typename T, int N> T last({metal}vec<T, N> v) {{ return v[N - 1]; }}"
    assert one("out[0] = last(float3(1.0f, 2.0f, 3.0f));", header=header) == 3.0
    assert one(f"{metal}uint k = 2; out[0] = {metal}exp(0.0f) + {metal}fast::exp(0.0f) + k;") == 4.0
    assert one(f"out[0] = {metal}is_same_v<float, {metal}float32_t> ? {metal}M_PI_F : 0.0f;") == pytest.approx(3.1415927)
    assert one(f"out[0] = {metal}numeric_limits<float>::digits + {metal}numeric_limits<char>::max();") == 151.0
    assert one(f"threadgroup_barrier({metal}mem_flags::mem_threadgroup); out[0] = sizeof(decltype({metal}declval<half>()));") == 2.0


@pytest.mark.parametrize("name", ["metalx::exp", "a::metal::exp", "metal::metal::exp", "c10::metal::exp"])
def test_metal_inside_another_name_is_another_namespace(name: str) -> None:
    with pytest.raises(CompileError, match=f"undeclared function '{name}'"):
        one(f"out[0] = {name}(0.0f);")
