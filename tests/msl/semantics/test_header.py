"""The `header` string: helper functions (by value, by reference, through pointers,
overloads, default arguments, templates), `constant` globals, and the preprocessor
(#define object/function-like, #undef, #if/#elif/#else, #ifdef/#ifndef, defined(),
#include, #pragma), whose state carries over from the header into the source."""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import CompileError

from .conftest import one, out0, run


def test_helper_function_by_value() -> None:
    """A header function returning x * x."""
    header = "float sq(float x) { return x * x; }"
    assert one("out[0] = sq(3.0f) + sq(-0.5f);", header=header) == 9.25


def test_inline_and_metal_func_helpers() -> None:
    """`inline` and MSL's METAL_FUNC (always-inline) helpers are ordinary functions."""
    header = """
    inline int add1(int x) { return x + 1; }
    METAL_FUNC int dbl(int x) { return 2 * x; }
    static inline int neg(int x) { return -x; }
    """
    assert one("out[0] = neg(dbl(add1(4)));", "int32", header=header) == -10


def test_helper_parameter_is_a_copy() -> None:
    """Changing a by-value parameter does not touch the caller's variable."""
    header = "int bump(int x) { x += 100; return x; }"
    assert one("int v = 1; int r = bump(v); out[0] = v * 1000 + r;", "int32", header=header) == 1101


def test_helper_with_thread_reference_parameter() -> None:
    """`thread int& x` lets a helper modify the caller's variable."""
    header = "void inc(thread int& x) { x += 1; }"
    assert one("int v = 5; inc(v); inc(v); out[0] = v;", "int32", header=header) == 7


def test_helper_writes_through_device_pointer() -> None:
    """A helper storing through a `device float*` parameter writes the output (counted)."""
    header = "void put(device float* o, uint i, float v) { o[i] = v; }"
    src = "uint i = thread_position_in_grid.x; put(out, i, i * 1.5f);"
    res = run(src, header=header, out=((4,), "float32"), grid=(4, 1, 1))
    assert res.outputs[0].tolist() == [0.0, 1.5, 3.0, 4.5]
    assert res.counts.global_writes.tolist() == [1, 1, 1, 1]


def test_helper_reads_through_const_device_pointer() -> None:
    """Reads done inside a helper count for the calling thread."""
    header = "float sum3(const device float* p) { return p[0] + p[1] + p[2]; }"
    src = "uint i = thread_position_in_grid.x; out[i] = sum3(a + i);"
    a = np.arange(8, dtype=np.float32)  # 8+ elements: a `device` buffer, as the helper expects
    res = run(src, header=header, inputs={"a": a}, out=((4,), "float32"), grid=(4, 1, 1))
    assert res.outputs[0].tolist() == [3.0, 6.0, 9.0, 12.0]
    assert res.counts.global_reads.tolist() == [3, 3, 3, 3]


def test_helper_with_divergent_early_return() -> None:
    """A helper that returns early on some threads and late on others."""
    header = """
    float relu_plus(float x) {
        if (x < 0) return 0.0f;
        float y = x;
        for (int k = 0; k < 3; k++) y += 1.0f;
        return y;
    }
    """
    a = np.array([-2, -0.5, 0, 1.5], dtype=np.float32)
    src = "uint i = thread_position_in_grid.x; out[i] = relu_plus(a[i]);"
    got = out0(src, header=header, inputs={"a": a}, out=((4,), "float32"), grid=(4, 1, 1))
    assert got.tolist() == [0.0, 0.0, 3.0, 4.5]


def test_void_helper_with_early_return() -> None:
    """A void helper that returns before its write on some threads."""
    header = "void maybe_set(device int* o, uint i) { if (i % 2) return; o[i] = 9; }"
    src = "uint i = thread_position_in_grid.x; maybe_set(out, i);"
    got = out0(src, header=header, out=((4,), "int32"), grid=(4, 1, 1), init_value=0)
    assert got.tolist() == [9, 0, 9, 0]


def test_helper_calls_helper() -> None:
    """Helpers can call earlier helpers."""
    header = "int sq(int x) { return x * x; }\nint sumsq(int a, int b) { return sq(a) + sq(b); }"
    assert one("out[0] = sumsq(3, 4);", "int32", header=header) == 25


def test_overloaded_helpers_pick_by_argument_type() -> None:
    """Overloads on int and float select by the argument's type."""
    header = "int kind(int x) { return 1; }\nint kind(float x) { return 2; }"
    assert one("out[0] = kind(3) * 10 + kind(3.0f);", "int32", header=header) == 12


def test_default_argument() -> None:
    """A defaulted parameter takes its default when omitted."""
    header = "float scaled(float x, float s = 2.0f) { return x * s; }"
    assert one("out[0] = scaled(3.0f) + scaled(1.0f, 10.0f);", header=header) == 16.0


def test_helper_with_threadgroup_pointer() -> None:
    """A helper taking `threadgroup float*` reads shared memory (counted as shared reads)."""
    header = "float pair_sum(threadgroup float* s, uint t) { return s[t] + s[t ^ 1]; }"
    src = """
    threadgroup float s[4];
    uint t = thread_position_in_threadgroup.x;
    s[t] = t * 10.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = pair_sum(s, t);
    """
    res = run(src, header=header, out=((4,), "float32"), grid=(4, 1, 1))
    assert res.outputs[0].tolist() == [10.0, 10.0, 50.0, 50.0]
    assert res.counts.shared_reads.tolist() == [2, 2, 2, 2]


def test_helper_returning_bool_in_condition() -> None:
    """A bool helper used as a per-thread condition."""
    header = "bool is_odd(uint x) { return x & 1; }"
    src = "uint i = thread_position_in_grid.x; out[i] = is_odd(i) ? 1 : 0;"
    assert out0(src, header=header, out=((4,), "int32"), grid=(4, 1, 1)).tolist() == [0, 1, 0, 1]


# -------------------------------------------------------------------- templates


def test_function_template_deduces_type() -> None:
    """`template <typename T> T twice(T x)` deduces int for 3 and float for 1.25f."""
    header = "template <typename T> T twice(T x) { return x + x; }"
    src = "out[0] = twice(3) / 4; out[1] = twice(1.25f);"
    assert run(src, header=header, out=((2,), "float32")).outputs[0].tolist() == [1.0, 2.5]


def test_function_template_explicit_argument() -> None:
    """twice<float>(3) converts 3 to float: (6.0f) / 4 is 1.5."""
    header = "template <typename T> T twice(T x) { return x + x; }"
    assert one("out[0] = twice<float>(3) / 4;", header=header) == 1.5


def test_function_template_int_parameter() -> None:
    """`template <int N> int times(int x)`: times<3>(4) is 12."""
    header = "template <int N> int times(int x) { return x * N; }"
    assert one("out[0] = times<3>(4);", "int32", header=header) == 12


def test_function_template_with_kernel_template_type() -> None:
    """A header template instantiated with the kernel's own template type T = half rounds in half."""
    header = "template <typename U> U add(U x, U y) { return x + y; }"
    src = "out[0] = float(add(T(2048), T(1)));"
    assert one(src, header=header, template=[("T", np.dtype("float16"))]) == 2048.0


def test_function_template_two_type_parameters() -> None:
    """`template <typename A, typename B> A conv(B x)` with A explicit and B deduced."""
    header = "template <typename A, typename B> A conv(B x) { return static_cast<A>(x); }"
    assert one("out[0] = conv<int>(-2.75f);", "int32", header=header) == -2


# ------------------------------------------------------------- constant globals


def test_constant_scalar_global() -> None:
    """`constant float scale = 2.5f;` in the header."""
    assert one("out[0] = scale * 2;", header="constant float scale = 2.5f;") == 5.0


def test_constant_array_global() -> None:
    """A constant lookup table indexed per thread."""
    header = "constant int lut[4] = {3, 1, 4, 1};"
    src = "uint i = thread_position_in_grid.x; out[i] = lut[i] * 2;"
    got = out0(src, header=header, out=((4,), "int32"), grid=(4, 1, 1))
    assert got.tolist() == [6, 2, 8, 2]


def test_constant_struct_and_vector_globals() -> None:
    """A constant the checker does not fold to a number (a struct, a vector) keeps its checked
    initializer, which each read evaluates (front.symbols.DeferredConstant)."""
    header = """
    struct P { float x; float y; };
    constant P origin = {1.0f, 2.0f};
    constant float2 step = float2(3.0f, 4.0f);
    """
    assert one("out[0] = origin.y * 10 + step.x + step.y;", header=header) == 27.0


def test_constant_reads_are_not_global_traffic() -> None:
    """Program-scope constants are not kernel buffers: reading them is not a global read."""
    header = "constant float k[2] = {1.5f, 2.5f};"
    res = run("out[0] = k[0] + k[1];", header=header)
    assert res.outputs[0].tolist() == [4.0]
    assert res.counts.global_reads.tolist() == [0]


def test_constexpr_constants() -> None:
    """`constant constexpr int` and `static constant constexpr` are compile-time constants."""
    header = "constant constexpr int K = 3;\nstatic constant constexpr int M = 4;"
    src = "float buf[K * M]; for (int j = 0; j < K * M; j++) buf[j] = j; out[0] = buf[K * M - 1];"
    assert one(src, header=header) == 11.0


def test_local_constexpr_array_size() -> None:
    """A local `constexpr int` can size a thread-local array."""
    assert one("constexpr int M = 3; int b[M] = {1, 2, 3}; out[0] = b[M - 1];", "int32") == 3


# ------------------------------------------------------------------ preprocessor


def test_object_like_define_in_header() -> None:
    """#define in the header is visible in the source."""
    assert one("out[0] = N * 2;", "int32", header="#define N 21") == 42


def test_function_like_macro_parenthesised() -> None:
    """SQ(x) ((x) * (x)) applied to an expression."""
    header = "#define SQ(x) ((x) * (x))"
    assert one("int a = 2; out[0] = SQ(a + 1);", "int32", header=header) == 9


def test_function_like_macro_without_parentheses_expands_textually() -> None:
    """BAD_SQ(x) x * x with a + 1 expands to a + 1 * a + 1 = 2a + 1."""
    header = "#define BAD_SQ(x) x * x"
    assert one("int a = 2; out[0] = BAD_SQ(a + 1);", "int32", header=header) == 5


def test_multiline_macro_with_backslash() -> None:
    """A macro continued over several lines with backslashes."""
    header = "#define MAX3(a, b, c) \\\n  ((a) > (b) ? ((a) > (c) ? (a) : (c)) \\\n   : ((b) > (c) ? (b) : (c)))"
    assert one("out[0] = MAX3(3, 9, 4);", "int32", header=header) == 9


def test_define_in_source() -> None:
    """#define lines inside the kernel body work too."""
    assert one("#define K 7\nout[0] = K + 1;", "int32") == 8


def test_undef() -> None:
    """#undef removes a macro so #ifdef sees it undefined."""
    src = "#define X 1\n#undef X\n#ifdef X\nout[0] = 1;\n#else\nout[0] = 2;\n#endif"
    assert one(src, "int32") == 2


@pytest.mark.parametrize(("n", "expected"), [(1, 10), (3, 20), (5, 30)])
def test_if_elif_else_arithmetic(n: int, expected: int) -> None:
    """#if / #elif / #else choose by integer constant expressions."""
    header = f"#define N {n}"
    src = "#if N < 2\nout[0] = 10;\n#elif N == 3\nout[0] = 20;\n#else\nout[0] = 30;\n#endif"
    assert one(src, "int32", header=header) == expected


def test_ifndef_and_defined_operator() -> None:
    """#ifndef and `#if defined(A) && !defined(B)`."""
    header = "#define A\n#ifndef B\n#define B_MISSING 1\n#endif"
    src = "#if defined(A) && !defined(B)\nout[0] = B_MISSING + 1;\n#else\nout[0] = 0;\n#endif"
    assert one(src, "int32", header=header) == 2


def test_include_and_using_namespace_are_accepted() -> None:
    """`#include <metal_stdlib>` and `using namespace metal;` are harmless in the header."""
    header = "#include <metal_stdlib>\n#include <metal_simdgroup>\nusing namespace metal;\nfloat h(float x) { return metal::abs(x); }"
    assert one("out[0] = h(-2.0f);", header=header) == 2.0


def test_array_and_type_traits_headers_are_accepted() -> None:
    """<metal_array> and <metal_type_traits> are standard Metal headers (PyTorch's c10/metal headers
    include them); what they declare is built in, so including them changes nothing."""
    header = ("#include <metal_array>\n#include <metal_type_traits>\n"
              "template <typename T> int width() { return metal::is_same_v<T, short> ? 2 : 4; }")
    assert one("out[0] = width<short>() * 10 + width<float>();", "int32", header=header) == 24


def test_unknown_header_names_the_file() -> None:
    """A header the simulator does not provide is an error naming it, not silently skipped."""
    with pytest.raises(CompileError, match="'metal_arrays' file not found"):
        one("out[0] = 1;", header="#include <metal_arrays>")


def test_pragmas_are_ignored() -> None:
    """#pragma once in the header and #pragma unroll before a loop change nothing."""
    header = "#pragma once\nint three() { return 3; }"
    src = "int s = 0;\n#pragma unroll\nfor (int k = 0; k < 4; k++) s += three();\nout[0] = s;"
    assert one(src, "int32", header=header) == 12


def test_nested_macro_expansion() -> None:
    """A macro whose body uses another macro expands fully."""
    header = "#define W 4\n#define H 3\n#define AREA (W * H)"
    assert one("out[0] = AREA + W;", "int32", header=header) == 16


def test_comments_are_ignored() -> None:
    """Comments (// and /* */) in header and source are ignored."""
    header = "// a helper\n/* multi\n line */ int one_() { return 1; } // trailing"
    src = "int r = one_(); /* out[0] = 5; */\n// out[0] = 6;\nout[0] = r;"
    assert one(src, "int32", header=header) == 1


# ---------------------------------------------------------------- more helpers


def test_helper_taking_thread_local_array() -> None:
    """A thread-local array passed to a helper decays to a `thread float*`."""
    header = "float total(thread float* v, int n) { float s = 0; for (int k = 0; k < n; k++) s += v[k]; return s; }"
    assert one("float v[3] = {1.5f, 2.5f, 3.0f}; out[0] = total(v, 3);", header=header) == 7.0


def test_helper_modifies_thread_local_array_through_pointer() -> None:
    """Writes through a `thread int*` parameter change the caller's array."""
    header = "void fill(thread int* v, int n) { for (int k = 0; k < n; k++) v[k] = k * k; }"
    body = "int v[4]; fill(v, 4); out[0] = v[0] + v[1] + v[2] + v[3];"
    assert one(body, "int32", header=header) == 14


def test_helper_returns_from_nested_loops() -> None:
    """A return inside two nested loops leaves the helper immediately (per thread)."""
    header = """
    int find(int target) {
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 4; c++)
                if (r * 4 + c == target) return r * 10 + c;
        return -1;
    }
    """
    src = "int i = thread_position_in_grid.x; out[i] = find(i * 5);"
    got = out0(src, header=header, out=((6,), "int32"), grid=(6, 1, 1))
    assert got.tolist() == [0, 11, 22, 33, -1, -1]


def test_helper_modifies_threadgroup_array() -> None:
    """A helper writing through `threadgroup float*` is seen after the barrier."""
    header = "void put(threadgroup float* s, uint t, float v) { s[t] = v; }"
    src = """
    threadgroup float s[4];
    uint t = thread_position_in_threadgroup.x;
    put(s, t, t * 2.0f);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = s[3 - t];
    """
    got = out0(src, header=header, out=((4,), "float32"), grid=(4, 1, 1))
    assert got.tolist() == [6.0, 4.0, 2.0, 0.0]


def test_template_helper_with_int_and_type_parameters() -> None:
    """`template <typename T, int N> T sum_n(const device T* p)` instantiated explicitly."""
    header = "template <typename T, int N> T sum_n(const device T* p) { T s = 0; for (int k = 0; k < N; k++) s += p[k]; return s; }"
    a = np.arange(8, dtype=np.int32)
    assert one("out[0] = sum_n<int, 5>(a);", "int32", header=header, inputs={"a": a}) == 10


def test_token_pasting_macro() -> None:
    """`a ## b` pastes tokens into one identifier."""
    header = "#define CAT(a, b) a##b"
    assert one("int xy = 7; out[0] = CAT(x, y) + 1;", "int32", header=header) == 8


def test_variadic_macro() -> None:
    """__VA_ARGS__ forwards the remaining arguments."""
    header = "#define CALL(f, ...) f(__VA_ARGS__)\nint add3(int a, int b, int c) { return a + b + c; }"
    assert one("out[0] = CALL(add3, 1, 2, 3);", "int32", header=header) == 6


def test_metal_version_macro_is_defined() -> None:
    """__METAL_VERSION__ is defined (MLX's headers test it); it is at least 200."""
    src = "#if defined(__METAL_VERSION__) && __METAL_VERSION__ >= 200\nout[0] = 1;\n#else\nout[0] = 0;\n#endif"
    assert one(src, "int32") == 1


def test_struct_or_clear_compile_error() -> None:
    """A small struct: either C++ behaviour or a CompileError, never a wrong answer."""
    from metal_puzzles.msl import CompileError

    header = "struct Pair { float a; int b; };\nfloat combine(Pair p) { return p.a * p.b; }"
    src = "Pair p; p.a = 1.5f; p.b = 4; Pair q = p; q.b = 2; out[0] = combine(p) + combine(q);"
    try:
        got = one(src, header=header)
    except CompileError:
        return
    assert got == 9.0
