"""Vector types: float2..4, int2..4, uint2..4, half and bool vectors; constructors,
component access (xyzw / rgba / [i]), swizzles including swizzle assignment, component-wise
arithmetic with scalar broadcast, comparisons with all/any/select, and conversions."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import one, out0, run


def vec_out(body: str, n: int, dtype: str = "float32", **kw: object) -> list:
    """Run a single-thread body writing out[0..n-1]; return them as a list."""
    return run(body, out=((n,), dtype), **kw).outputs[0].tolist()


def store4(expr: str, vtype: str = "float4") -> str:
    """Code storing the four components of a 4-vector expression into out[0..3]."""
    return f"{vtype} v_ = {expr}; out[0] = v_.x; out[1] = v_.y; out[2] = v_.z; out[3] = v_.w;"


def store2(expr: str, vtype: str = "float2") -> str:
    """Code storing the two components of a 2-vector expression into out[0..1]."""
    return f"{vtype} v_ = {expr}; out[0] = v_.x; out[1] = v_.y;"


def test_float4_constructor_and_xyzw() -> None:
    """float4(1, 2, 3, 4) has x, y, z, w = 1, 2, 3, 4."""
    assert vec_out(store4("float4(1, 2, 3, 4)"), 4) == [1, 2, 3, 4]


def test_rgba_aliases() -> None:
    """.r .g .b .a name the same components as .x .y .z .w."""
    src = "float4 v = float4(1, 2, 3, 4); out[0] = v.r; out[1] = v.g; out[2] = v.b; out[3] = v.a;"
    assert vec_out(src, 4) == [1, 2, 3, 4]


def test_splat_constructor() -> None:
    """float4(2.5f) repeats the scalar."""
    assert vec_out(store4("float4(2.5f)"), 4) == [2.5] * 4


def test_scalar_initialises_vector_by_splat() -> None:
    """`float4 v = 2.0f;` splats the scalar."""
    assert vec_out("float4 v = 2.0f;" + store4("v"), 4) == [2.0] * 4


@pytest.mark.parametrize(
    "expr",
    ["float4(float2(1, 2), 3, 4)", "float4(1, float2(2, 3), 4)", "float4(1, 2, float2(3, 4))",
     "float4(float3(1, 2, 3), 4)", "float4(1, float3(2, 3, 4))", "float4(float2(1, 2), float2(3, 4))"],
)
def test_composite_constructors(expr: str) -> None:
    """Vectors build from smaller vectors and scalars in order."""
    assert vec_out(store4(expr), 4) == [1, 2, 3, 4]


def test_brace_initialisation() -> None:
    """`float2 v = {1.5f, -2.0f};` and `int3 w{1, 2, 3};`."""
    src = "float2 v = {1.5f, -2.0f}; int3 w{1, 2, 3}; out[0] = v.x; out[1] = v.y; out[2] = w.z;"
    assert vec_out(src, 3) == [1.5, -2.0, 3.0]


@pytest.mark.parametrize(
    ("swz", "expected"),
    [("yx", [2, 1]), ("xx", [1, 1]), ("wz", [4, 3]), ("zyx", [3, 2, 1]), ("xxyy", [1, 1, 2, 2]),
     ("wzyx", [4, 3, 2, 1]), ("bgr", [3, 2, 1]), ("ww", [4, 4])],
)
def test_swizzle_read(swz: str, expected: list[int]) -> None:
    """Swizzles read components in any order, with repeats."""
    n = len(swz)
    stores = " ".join(f"out[{k}] = s[{k}];" for k in range(n))
    src = f"float4 v = float4(1, 2, 3, 4); float{n} s = v.{swz}; {stores}"
    assert vec_out(src, n) == expected


def test_swizzle_assignment() -> None:
    """`v.xy = float2(5, 6);` writes x and y only."""
    src = "float4 v = float4(1, 2, 3, 4); v.xy = float2(5, 6);" + store4("v")
    assert vec_out(src, 4) == [5, 6, 3, 4]


def test_swizzle_assignment_out_of_order() -> None:
    """`v.wx = float2(7, 8);` writes w = 7 and x = 8."""
    src = "float4 v = float4(1, 2, 3, 4); v.wx = float2(7, 8);" + store4("v")
    assert vec_out(src, 4) == [8, 2, 3, 7]


def test_swizzle_swap_reads_before_writing() -> None:
    """`v.xy = v.yx;` swaps (the right side is evaluated first)."""
    src = "float2 v = float2(1, 2); v.xy = v.yx;" + store2("v")
    assert vec_out(src, 2) == [2, 1]


def test_component_assignment_and_compound() -> None:
    """v.x = 3; v.y += 2; v.zw *= 2."""
    src = "float4 v = float4(1, 2, 3, 4); v.x = 3; v.y += 2; v.zw *= 2;" + store4("v")
    assert vec_out(src, 4) == [3, 4, 6, 8]


def test_dynamic_index() -> None:
    """v[i] with a run-time index per thread."""
    src = "uint i = thread_position_in_grid.x; float4 v = float4(10, 20, 30, 40); out[i] = v[i];"
    assert out0(src, out=((4,), "float32"), grid=(4, 1, 1)).tolist() == [10, 20, 30, 40]


def test_index_assignment() -> None:
    """v[2] = 9 writes z."""
    assert vec_out("float4 v = float4(0); v[2] = 9;" + store4("v"), 4) == [0, 0, 9, 0]


def test_componentwise_arithmetic() -> None:
    """+, -, *, / act per component."""
    src = """
    float4 a = float4(1, 2, 3, 4); float4 b = float4(8, 6, 4, 2);
    float4 s = a + b; float4 d = a - b; float4 m = a * b; float4 q = b / a;
    out[0] = s.x; out[1] = s.w; out[2] = d.y; out[3] = d.z; out[4] = m.y; out[5] = m.w;
    out[6] = q.x; out[7] = q.w;
    """
    assert vec_out(src, 8) == [9, 6, -4, -1, 12, 8, 8, 0.5]


def test_scalar_broadcast_in_arithmetic() -> None:
    """v * 2, 2 * v, v + 1, 1 - v and -v broadcast the scalar."""
    src = """
    float2 v = float2(1.5f, -2.0f);
    float2 a = v * 2.0f; float2 b = 2.0f * v; float2 c = v + 1; float2 d = 1 - v; float2 e = -v;
    out[0] = a.x; out[1] = b.y; out[2] = c.x; out[3] = d.y; out[4] = e.x; out[5] = e.y;
    """
    assert vec_out(src, 6) == [3.0, -4.0, 2.5, 3.0, -1.5, 2.0]


def test_vector_compound_with_scalar() -> None:
    """v += 1.0f adds to every component."""
    assert vec_out("float4 v = float4(1, 2, 3, 4); v += 1.0f;" + store4("v"), 4) == [2, 3, 4, 5]


def test_int_vector_division_truncates() -> None:
    """int2(7, -7) / 2 is (3, -3); % 2 is (1, -1)."""
    src = "int2 v = int2(7, -7); int2 q = v / 2; int2 r = v % 2; out[0] = q.x; out[1] = q.y; out[2] = r.x; out[3] = r.y;"
    assert vec_out(src, 4, "int32") == [3, -3, 1, -1]


def test_uint_vector_wraps() -> None:
    """uint2(0, 1) - 1u wraps component-wise."""
    assert vec_out(store2("uint2(0, 1) - 1u", "uint2"), 2, "uint32") == [4294967295, 0]


def test_uchar_vector_arithmetic_does_not_promote() -> None:
    """Vector operands are not integer-promoted: uchar4 + uchar4 wraps in uchar (400 -> 144)."""
    src = "uchar4 c = uchar4(200); int4 r = int4(c + c); out[0] = r.x; out[1] = r.w;"
    assert vec_out(src, 2, "int32") == [144, 144]


def test_int_vector_bitwise_and_shifts() -> None:
    """&, |, ^, <<, >> on int/uint vectors act per component."""
    src = """
    uint2 a = uint2(0xF0, 0x0F); uint2 b = uint2(0x3C, 0x3C);
    uint2 x = a & b; uint2 y = a | b; uint2 z = a ^ b;
    int2 s = int2(1, 2) << int2(3, 1); int2 t = int2(-16, 16) >> 2;
    out[0] = x.x; out[1] = x.y; out[2] = y.x; out[3] = y.y; out[4] = z.x; out[5] = z.y;
    out[6] = s.x; out[7] = s.y; out[8] = t.x; out[9] = t.y;
    """
    assert vec_out(src, 10, "int32") == [0x30, 0x0C, 0xFC, 0x3F, 0xCC, 0x33, 8, 4, -4, 4]


def test_comparison_gives_bool_vector_and_all_any() -> None:
    """a < b is a bool vector; all() and any() reduce it."""
    src = """
    float3 a = float3(1, 5, 3); float3 b = float3(2, 4, 6);
    bool3 lt = a < b;
    out[0] = lt.x; out[1] = lt.y; out[2] = lt.z;
    out[3] = all(lt); out[4] = any(lt); out[5] = all(a < b + 10); out[6] = any(a > b + 10);
    """
    assert vec_out(src, 7, "int32") == [1, 0, 1, 0, 1, 1, 0]


def test_vector_equality_with_all() -> None:
    """all(a == b) is true only when every component matches."""
    src = "int2 a = int2(1, 2); out[0] = all(a == int2(1, 2)); out[1] = all(a == int2(1, 3)); out[2] = any(a != int2(1, 3));"
    assert vec_out(src, 3, "int32") == [1, 0, 1]


def test_select_with_bool_vector() -> None:
    """select(a, b, c) picks b where c is true: here a component-wise min."""
    src = "float4 a = float4(1, 5, 3, 8); float4 b = float4(2, 4, 6, 7);" + store4("select(a, b, b < a)")
    assert vec_out(src, 4) == [1, 4, 3, 7]


def test_bool_vector_components() -> None:
    """bool2(true, false) converts components to 1 and 0."""
    src = "bool2 b = bool2(true, false); out[0] = b.x; out[1] = b.y; out[2] = int(b.x) + int(b.y) * 2;"
    assert vec_out(src, 3, "int32") == [1, 0, 1]


def test_float_to_int_vector_conversion_truncates() -> None:
    """int2(float2(1.7, -1.7)) is (1, -1)."""
    assert vec_out(store2("int2(float2(1.7f, -1.7f))", "int2"), 2, "int32") == [1, -1]


def test_uint3_position_to_float3() -> None:
    """float3(thread_position_in_grid) converts each component."""
    src = """
    uint i = thread_position_in_grid.x + 2 * thread_position_in_grid.y;
    float3 p = float3(thread_position_in_grid);
    out[i] = p.x * 10 + p.y;
    """
    got = out0(src, out=((4,), "float32"), grid=(2, 2, 1))
    assert got.tolist() == [0, 10, 1, 11]


def test_xy_of_thread_position() -> None:
    """thread_position_in_grid.xy is a uint2."""
    src = "uint2 p = thread_position_in_grid.xy; out[p.y * 3 + p.x] = p.x + 100 * p.y;"
    assert out0(src, out=((6,), "int32"), grid=(3, 2, 1)).tolist() == [0, 1, 2, 100, 101, 102]


def test_half4_rounds_components() -> None:
    """half4(float4(...)) rounds each component to binary16 (2049 -> 2048, 0.1 -> half(0.1))."""
    src = "half4 h = half4(float4(2049.0f, 0.1f, 65519.0f, -1.5f));" + store4("float4(h)")
    expected = [np.float32(np.float16(v)) for v in [2049.0, np.float32(0.1), 65519.0, -1.5]]
    assert vec_out(src, 4) == expected


def test_half2_arithmetic_rounds_in_half() -> None:
    """half2 + half2 rounds per component to half: 2048 + 1 is 2048."""
    src = "half2 a = half2(2048, 1); half2 b = half2(1, 1); half2 c = a + b; out[0] = c.x; out[1] = c.y;"
    assert vec_out(src, 2) == [2048.0, 2.0]


def test_vector_helper_function() -> None:
    """A header helper taking and returning vectors: rotate (x, y) by 90 degrees."""
    header = "float2 rot90(float2 v) { return float2(-v.y, v.x); }"
    assert vec_out(store2("rot90(float2(3, 4))"), 2, header=header) == [-4, 3]


def test_thread_local_array_of_vectors() -> None:
    """An array of float2 with brace initialisation."""
    src = "float2 pts[2] = {float2(1, 2), float2(3, 4)}; out[0] = pts[1].x + pts[0].y;"
    assert vec_out(src, 1) == [5.0]


def test_write_vector_through_output_cast() -> None:
    """Storing a float4 through `(device float4*)out` fills four floats."""
    src = "((device float4*)out)[1] = float4(1, 2, 3, 4); ((device float4*)out)[0] = float4(0);"
    assert vec_out(src, 8) == [0, 0, 0, 0, 1, 2, 3, 4]


def test_vector_load_from_input_elements() -> None:
    """Building a float4 from four consecutive input elements and summing components."""
    src = """
    uint i = thread_position_in_grid.x;
    float4 v = float4(a[4 * i], a[4 * i + 1], a[4 * i + 2], a[4 * i + 3]);
    out[i] = v.x + v.y + v.z + v.w;
    """
    a = np.arange(8, dtype=np.float32)
    res = run(src, inputs={"a": a}, out=((2,), "float32"), grid=(2, 1, 1))
    assert res.outputs[0].tolist() == [6.0, 22.0]
    assert res.counts.global_reads.tolist() == [4, 4]


def test_float3_dot() -> None:
    """dot(float3(1,2,3), float3(4,5,6)) == 32 exactly."""
    assert one("out[0] = dot(float3(1, 2, 3), float3(4, 5, 6));") == 32.0


def test_float3_pointer_stride_is_sixteen_bytes() -> None:
    """float3 occupies 16 bytes in memory: element 1 of a float3* view starts at float 4."""
    a = np.arange(16, dtype=np.float32)
    src = "float3 v = ((const device float3*)a)[1]; out[0] = v.x; out[1] = v.z;"
    assert run(src, inputs={"a": a}, out=((2,), "float32")).outputs[0].tolist() == [4.0, 6.0]


def test_packed_float3_pointer_stride_is_twelve_bytes() -> None:
    """packed_float3 is 12 bytes: element 1 starts at float 3."""
    a = np.arange(16, dtype=np.float32)
    src = "packed_float3 v = ((const device packed_float3*)a)[1]; out[0] = v.x; out[1] = v.z;"
    assert run(src, inputs={"a": a}, out=((2,), "float32")).outputs[0].tolist() == [3.0, 5.0]
