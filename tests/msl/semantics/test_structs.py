"""Structs declared in the header, with C++/Metal semantics.

Members are laid out at multiples of their alignment (a float3 member takes 16 bytes on a
16-byte boundary, a float2 8 on an 8-byte one), the size is rounded to the largest alignment;
brace initialization fills members in order, nested braces fill nested structs and arrays,
missing members take their default member initializer or zero; struct values are copied on
assignment and when passed by value, references alias; ``->`` reaches members through pointers,
including pointers into buffers; member functions see their object's members by name (and
``this->``). Expected values are computed by hand or with NumPy from the same definitions.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import CompileError, SanitizerError

from .conftest import out0, run

AFFINE = """
struct Affine { float scale; float shift; };
inline float apply(Affine a, float v) { return a.scale * v + a.shift; }
"""


def test_struct_by_value_with_brace_initialization() -> None:
    got = out0("uint i = thread_position_in_grid.x; Affine p = {params[0], params[1]}; out[i] = apply(p, x[i]);",
               inputs={"x": np.array([1, -2, 4, 0.5, 0, 0, 0, 0], np.float32),
                       "params": np.array([3, -1, 0, 0, 0, 0, 0, 0], np.float32)},
               out=((4,), "float32"), grid=(4, 1, 1), header=AFFINE)
    assert got.tolist() == [2.0, -7.0, 11.0, 0.5]


def test_passing_by_value_copies_and_by_reference_aliases() -> None:
    header = AFFINE + """
    inline void bump_copy(Affine a) { a.scale = 100.0f; }
    inline void bump_ref(thread Affine& a) { a.scale = 100.0f; }
    """
    got = out0("""
        Affine a = {1.0f, 2.0f};
        bump_copy(a);
        out[0] = a.scale;
        bump_ref(a);
        out[1] = a.scale;
    """, out=((2,), "float32"), header=header)
    assert got.tolist() == [1.0, 100.0]


def test_layout_offsets_and_sizes_follow_metal_alignment() -> None:
    header = """
    struct Inner { float2 v; int k; };                // 8 + 4, rounded to 8: 16 bytes
    struct Outer { Inner in; float w[3]; float3 p; }; // 0, 16..28, float3 at 32: 48 bytes
    struct Mixed { char c; half h; float f; uchar tail; };  // 0, 2, 4, 8 -> 12
    """
    got = out0("""
        out[0] = float(sizeof(Inner)); out[1] = float(sizeof(Outer)); out[2] = float(sizeof(Mixed));
        Outer o = {{float2(1.0f, 2.0f), 7}, {3.0f, 4.0f, 5.0f}, float3(6.0f)};
        thread uchar* bytes = (thread uchar*)&o.in.k;
        out[3] = float(*(thread float*)(bytes + 8));   // w[0]: k at 8, padding to 16
        out[4] = float(*(thread float*)(bytes + 24));  // p.x at 32
    """, out=((5,), "float32"), header=header)
    assert got.tolist() == [16.0, 48.0, 12.0, 3.0, 6.0]


def test_nested_members_arrays_and_copies() -> None:
    header = """
    struct Inner { float2 v; int k; };
    struct Outer { Inner in; float w[3]; float3 p; };
    inline Outer make(float a) {
        Outer o = {{float2(a, a + 1.0f), 7}, {1.0f, 2.0f, 3.0f}, float3(a)};
        return o;
    }
    """
    got = out0("""
        Outer o = make(5.0f);
        Outer b = o;
        b.w[1] = 9.0f;
        b.in.v.y = -1.0f;
        out[0] = o.in.v.y; out[1] = float(o.in.k); out[2] = o.w[2]; out[3] = o.p.z;
        out[4] = b.w[1]; out[5] = o.w[1]; out[6] = b.in.v.y;
    """, out=((7,), "float32"), header=header)
    assert got.tolist() == [6.0, 7.0, 3.0, 5.0, 9.0, 2.0, -1.0]


def test_missing_members_are_zero_and_defaults_apply() -> None:
    header = """
    struct P { float a; float b = 2.5f; int c; };
    """
    got = out0("""
        P x = {1.0f};
        P y;                 // default member initializer for b; a and c are set below
        y.a = 3.0f; y.c = 4;
        out[0] = x.a; out[1] = x.b; out[2] = float(x.c); out[3] = y.b; out[4] = y.a + float(y.c);
    """, out=((5,), "float32"), header=header)
    assert got.tolist() == [1.0, 2.5, 0.0, 2.5, 7.0]


def test_arrays_of_structs_in_thread_memory() -> None:
    header = "struct P { float s; uint n; float b; };"
    got = out0("""
        P arr[3] = {{1.0f, 2u, 3.0f}, {4.0f}};
        arr[2] = arr[0];
        arr[2].n += 5u;
        out[0] = arr[0].b + arr[1].s + float(arr[1].n);
        out[1] = float(arr[2].n) + arr[2].s;
    """, out=((2,), "float32"), header=header)
    assert got.tolist() == [7.0, 8.0]


def test_threadgroup_array_of_structs_reduced_by_reference() -> None:
    header = """
    struct Range { float lo; float hi; };
    inline void widen(thread Range& r, float v) { r.lo = min(r.lo, v); r.hi = max(r.hi, v); }
    """
    x = np.random.default_rng(3).standard_normal(32).astype(np.float32)
    res = run("""
        uint t = thread_position_in_threadgroup.x;
        threadgroup Range part[32];
        part[t] = Range{x[t], x[t]};
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (t == 0) {
            Range acc = part[0];
            for (uint k = 1; k < 32; ++k) {
                widen(acc, part[k].lo);
                widen(acc, part[k].hi);
            }
            out[0] = acc.lo;
            out[1] = acc.hi;
        }
    """, inputs={"x": x}, out=((2,), "float32"), grid=(32, 1, 1), header=header, init_value=0)
    assert res.outputs[0].tolist() == [float(x.min()), float(x.max())]
    # Each thread stores its struct (2 floats) once; thread 0 reads 2 + 31 * 2 members.
    counts = res.counts.max()
    assert counts["shared_writes"] == 2 and counts["shared_reads"] == 64


def test_threadgroup_struct_variable() -> None:
    header = "struct Stats { float sum; uint count; };"
    got = out0("""
        uint t = thread_position_in_threadgroup.x;
        threadgroup Stats st;
        if (t == 0) { st.sum = 0.0f; st.count = 0u; }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (t == 1) { st.sum = 42.0f; st.count = 6u; }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[t] = st.sum / float(st.count);
    """, out=((4,), "float32"), grid=(4, 1, 1), header=header)
    assert got.tolist() == [7.0] * 4


def test_struct_pointer_into_a_buffer_with_arrow() -> None:
    header = "struct Params { float scale; uint count; float bias; };"
    u = lambda v: np.uint32(v).view(np.float32)  # noqa: E731
    params = np.array([2.0, u(3), 0.25, 10.0, u(4), 1.0, 0, 0], np.float32)
    got = out0("""
        uint i = thread_position_in_grid.x;
        const device Params* p = (const device Params*)params + i;
        out[i] = p->scale * float(p->count) + (*p).bias;
    """, inputs={"params": params}, out=((2,), "float32"), grid=(2, 1, 1), header=header)
    assert got.tolist() == [2.0 * 3 + 0.25, 10.0 * 4 + 1.0]


def test_writing_structs_into_an_output_buffer() -> None:
    header = "struct Pair { float value; uint index; };"
    got = out0("""
        uint i = thread_position_in_grid.x;
        device Pair* pairs = (device Pair*)out;
        pairs[i] = Pair{float(i) * 1.5f, i};
        pairs[i].index += 10u;
    """, out=((6,), "float32"), grid=(3, 1, 1), header=header)
    assert got.view(np.uint32)[1::2].tolist() == [10, 11, 12]
    assert got[0::2].tolist() == [0.0, 1.5, 3.0]


def test_reading_a_struct_member_from_a_buffer_counts_one_element() -> None:
    header = "struct Params { float scale; float bias; float unused[6]; };"
    res = run("""
        uint i = thread_position_in_grid.x;
        const device Params* p = (const device Params*)params;
        out[i] = p->scale * float(i) + p->bias;
    """, inputs={"params": np.arange(8, dtype=np.float32)}, out=((4,), "float32"), grid=(4, 1, 1), header=header)
    assert res.outputs[0].tolist() == [1.0, 1.0, 1.0, 1.0]
    assert res.counts.max()["global_reads"] == 2


def test_member_functions_defaults_and_this() -> None:
    header = """
    struct Welford {
        float mean = 0.0f;
        float m2 = 0.0f;
        uint n = 0;
        void add(float x) { n++; float d = x - mean; mean += d / float(n); m2 += d * (x - mean); }
        void add_twice(float x) { add(x); this->add(x); }
        float variance() const { return m2 / float(n); }
    };
    """
    values = np.arange(100, dtype=np.float32)
    got = out0("""
        Welford w;
        for (uint k = 0; k < 50; ++k) { w.add(x[2 * k]); w.add(x[2 * k + 1]); }
        out[0] = w.mean; out[1] = w.variance();
        Welford d;
        d.add_twice(3.0f);
        out[2] = float(d.n) + d.mean;
    """, inputs={"x": values}, out=((3,), "float32"), header=header)
    assert got.tolist() == [49.5, 833.25, 5.0]  # mean and population variance of 0..99


def test_struct_returned_by_value_and_a_constant_struct() -> None:
    header = """
    struct MinMax { float lo; float hi; };
    constant MinMax UNIT = {0.0f, 1.0f};
    inline MinMax span(float a, float b) { return MinMax{min(a, b), max(a, b)}; }
    """
    got = out0("""
        MinMax m = span(x[0], x[1]);
        out[0] = m.hi - m.lo;
        out[1] = UNIT.hi + span(3.0f, -2.0f).lo;
    """, inputs={"x": np.array([4, -1, 0, 0, 0, 0, 0, 0], np.float32)}, out=((2,), "float32"), header=header)
    assert got.tolist() == [5.0, -1.0]


def test_reading_a_member_never_assigned_is_reported() -> None:
    with pytest.raises(SanitizerError) as info:
        run("P p; p.a = 1.0f; out[0] = p.a + p.b;", header="struct P { float a; float b; };")
    (f,) = info.value.findings
    assert f.kind == "uninitialized-read" and "p.b" in f.message and "never assigned" in f.message


def test_a_const_member_function_cannot_change_members() -> None:
    with pytest.raises(CompileError) as info:
        run("S s = {1.0f}; out[0] = s.get();",
            header="struct S { float v; float get() const { v = 2.0f; return v; } };")
    assert "read-only" in info.value.message and info.value.file == "header"


def test_calling_a_changing_member_function_on_a_const_struct_is_refused() -> None:
    with pytest.raises(CompileError, match="changes its object"):
        run("const S s = {1.0f}; s.set(2.0f); out[0] = s.v;",
            header="struct S { float v; void set(float x) { v = x; } };")


@pytest.mark.parametrize(("header", "body", "message"), [
    ("struct S { float a; };", "S s = {1.0f}; out[0] = s.b;", "no member named 'b' in struct 'S'"),
    ("struct S { float a; };", "S s = {1.0f, 2.0f}; out[0] = s.a;", "too many initializers for struct 'S'"),
    ("struct S { float a; template <typename T> S(T x) { a = x; } };", "out[0] = 0;",
     "constructor templates are not supported"),
    ("template <typename T> class S { T a; };", "out[0] = 0;", "class templates are not supported"),
    ("struct S { device float* p; };", "out[0] = 0;", "structs holding pointers are not supported"),
    ("struct S { float a; bool operator&&(S o) { return true; } };", "out[0] = 0;",
     "the simulator supports overloading the arithmetic"),
    ("struct S { float a; };", "float x = 1.0f; out[0] = x->a;", "not a pointer to a struct"),
    ("typedef struct { float a; } S;", "out[0] = 0;", "'typedef struct { ... } Name;' is not supported"),
    ("union { float a; uint b; } u;", "out[0] = 0;", "'union' definitions are not supported"),
    ("", "struct S { float a; float f() { return a; } }; out[0] = 0;", "may have data members only"),
    ("", "class C { float a; }; out[0] = 0;", "define the type in the header"),
    ("struct S { metal::array<float, 4> data [[id(0)]]; };", "S s; out[0] = 0;",
     "'S' is an argument buffer (its members carry [[id(n)]], line 1): the simulator does not support"),
    ("struct S { float4 p [[position]]; };", "out[0] = 0;", "attributes on struct members ([[position]])"),
])
def test_what_is_outside_the_subset_is_a_precise_compile_error(header: str, body: str, message: str) -> None:
    with pytest.raises(CompileError) as info:
        run(body, header=header)
    assert message in info.value.message


def test_decltype_names_the_type_of_an_expression() -> None:
    # mlx-primitives' idiom: the output element type after the usual arithmetic conversions.
    got = out0("""
        typedef decltype(out[0] + out[0]) OutT;
        uint i = thread_position_in_grid.x;
        out[i] = OutT(x[i] * 2.0f);
        decltype(i + 1u) j = i;
        out[i] += OutT(sizeof(j) + sizeof(OutT) - 6);
    """, inputs={"x": np.array([1.5, 2.25, 0, 0, 0, 0, 0, 0], np.float32)}, out=((2,), "float16"), grid=(2, 1, 1))
    assert got.dtype == np.float16 and got.tolist() == [3.0, 4.5]


def test_const_integral_locals_are_array_sizes() -> None:
    got = out0("""
        const uint TILE = 4;
        const int DEPTH = TILE / 2 + 1;
        threadgroup float buf[TILE][DEPTH];
        uint i = thread_position_in_threadgroup.x;
        buf[i][DEPTH - 1] = float(i + 6);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[i] = buf[i][2] + float(sizeof(buf) / sizeof(float)) - 12.0f;
    """, out=((4,), "float32"), grid=(4, 1, 1))
    assert got.tolist() == [6.0, 7.0, 8.0, 9.0]


def test_a_const_local_from_a_runtime_value_is_not_an_array_size() -> None:
    with pytest.raises(CompileError, match="array size must be a compile-time constant"):
        run("const uint n = thread_position_in_grid.x; float buf[n]; out[0] = 0;")
