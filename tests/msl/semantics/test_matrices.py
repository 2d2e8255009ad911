"""Matrix types ``floatCxR`` / ``halfCxR``: column-major, ``m[i]`` is column i and ``m[i][j]`` row j
of it; constructors take columns, C*R scalars column by column, or one scalar for the diagonal;
``m * v``, ``v * m``, ``m * n``, scaling, sums, ``transpose``; in memory each column is a vector
(a float3 column takes 16 bytes). Expected values come from NumPy with the same column-major
reading (``W.T`` where the kernel fills ``m[i][j] = w[i*4 + j]``); products are exact in the
cases below (small integers or exact binary fractions) unless a tolerance says otherwise.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import CompileError

from .conftest import out0, run


def test_rotation_built_from_columns() -> None:
    angle = 0.5
    got = out0("""
        uint i = thread_position_in_grid.x;
        float c = cos(angle[0]), s = sin(angle[0]);
        float2x2 rot = float2x2(float2(c, s), float2(-s, c));
        float2 p = rot * float2(xy[2 * i], xy[2 * i + 1]);
        out[2 * i] = p.x;
        out[2 * i + 1] = p.y;
    """, inputs={"angle": np.array([angle] + [0] * 7, np.float32), "xy": np.array([1, 0, 0, 2, 3, 4, 0, 0], np.float32)},
        out=((6,), "float32"), grid=(3, 1, 1))
    r = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    want = (r @ np.array([[1, 0, 3], [0, 2, 4]])).T.reshape(-1)
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=2e-7)


def test_column_access_products_and_transpose() -> None:
    w = np.arange(16, dtype=np.float32)
    got = out0("""
        float4x4 m;
        for (int i = 0; i < 4; i++) {
            for (int j = 0; j < 4; j++) {
                m[i][j] = w[i * 4 + j];
            }
        }
        float4 v = float4(1.0f, -1.0f, 2.0f, 0.5f);
        float4 a = m * v;
        float4 b = transpose(m) * v;
        float4 c = v * m;
        out[0] = a.x; out[1] = a.y; out[2] = a.z; out[3] = a.w;
        out[4] = b.x; out[5] = b.y; out[6] = b.z; out[7] = b.w;
        out[8] = c.x; out[9] = c.w;
    """, inputs={"w": w}, out=((10,), "float32"))
    mat = w.reshape(4, 4).T  # column i of m is row i of w
    v = np.array([1, -1, 2, 0.5])
    assert got.tolist() == [*(mat @ v), *(mat.T @ v), (v @ mat)[0], (v @ mat)[3]]


def test_matrix_product_scaling_sum_negation_and_conversion_to_half() -> None:
    got = out0("""
        float3x3 a = float3x3(1, 2, 3, 4, 5, 6, 7, 8, 10);
        float3x3 b = float3x3(float3(1, 0, 1), float3(0, 2, 0), float3(1, 1, 1));
        float3x3 c = a * b;
        half3x3 h = half3x3(c);
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 3; j++) {
                out[i * 3 + j] = h[i][j];
            }
        }
        c *= 2.0f;
        c += float3x3(1.0f);
        out[9] = c[2][2];
        float3x3 d = -c - c;
        out[10] = d[0][0];
        out[11] = (c / 2.0f)[1][0];
    """, out=((12,), "float32"))
    a = np.array([1, 2, 3, 4, 5, 6, 7, 8, 10], float).reshape(3, 3).T
    b = np.array([1, 0, 1, 0, 2, 0, 1, 1, 1], float).reshape(3, 3).T
    c = a @ b
    c2 = c * 2 + np.eye(3)
    assert got.tolist() == [*c.T.reshape(-1), c2[2, 2], -2 * c2[0, 0], c2[0, 1] / 2]


def test_diagonal_and_zero_constructors() -> None:
    got = out0("""
        float2x3 z = float2x3();
        float3x3 d = float3x3(4.0f);
        out[0] = z[1][2]; out[1] = d[0][0]; out[2] = d[1][0]; out[3] = d[2][2];
    """, out=((4,), "float32"))
    assert got.tolist() == [0.0, 4.0, 0.0, 4.0]


def test_non_square_products_have_the_right_shapes() -> None:
    got = out0("""
        float2x3 a = float2x3(float3(1, 2, 3), float3(4, 5, 6));  // 2 columns of 3 rows
        float3 r = a * float2(1.0f, 2.0f);                           // rows
        float2 t = float3(1.0f, 0.0f, -1.0f) * a;                    // columns
        float3x2 at = transpose(a);
        float2x2 g = at * a;
        out[0] = r.x; out[1] = r.y; out[2] = r.z; out[3] = t.x; out[4] = t.y; out[5] = g[1][0];
    """, out=((6,), "float32"))
    a = np.array([[1, 4], [2, 5], [3, 6]], float)  # rows x columns
    assert got.tolist() == [*(a @ [1, 2]), *(np.array([1, 0, -1]) @ a), (a.T @ a)[0, 1]]


def test_per_thread_matrices_and_a_varying_scale() -> None:
    got = out0("""
        uint i = thread_position_in_grid.x;
        float2x2 m = float2x2(float(i));
        float2x2 q = m * float(i) + float2x2(1.0f);
        out[i] = q[0][0] + q[1][0] + q[1][1];
    """, out=((4,), "float32"), grid=(4, 1, 1))
    assert got.tolist() == [2.0 * (i * i + 1) for i in range(4)]


def test_half_matrix_arithmetic_rounds_to_half() -> None:
    got = out0("""
        half2x2 m = half2x2(half2(0.1h, 0.2h), half2(0.3h, 0.4h));
        half2 r = m * half2(3.0h, 7.0h);
        out[0] = r.x; out[1] = r.y;
    """, out=((2,), "float16"))
    h = np.float16
    want = [h(h(h(0.1) * h(3)) + h(h(0.3) * h(7))), h(h(h(0.2) * h(3)) + h(h(0.4) * h(7)))]
    assert got.tolist() == [float(x) for x in want]


def test_matrices_in_memory_read_column_by_column() -> None:
    w = np.arange(16, dtype=np.float32)
    res = run("""
        uint i = thread_position_in_grid.x;
        const device float2x2* ms = (const device float2x2*)w;
        float2 r = ms[i] * float2(1.0f, 10.0f);
        out[2 * i] = r.x;
        out[2 * i + 1] = r.y;
        out[4 + i] = ms[i][1][0];
    """, inputs={"w": w}, out=((6,), "float32"), grid=(2, 1, 1))
    assert res.outputs[0].tolist() == [20.0, 31.0, 64.0, 75.0, 2.0, 6.0]
    assert res.counts.max()["global_reads"] == 4 + 2  # the whole matrix, then one column


def test_arrays_of_float3x3_use_padded_columns() -> None:
    got = out0("""
        float3x3 arr[2];
        arr[0] = float3x3(2.0f);
        arr[1] = arr[0] * 3.0f;
        arr[1][2] = float3(7.0f);
        out[0] = arr[1][1][1]; out[1] = arr[1][2][0]; out[2] = float(sizeof(float3x3)); out[3] = float(sizeof(arr));
    """, out=((4,), "float32"))
    assert got.tolist() == [6.0, 7.0, 48.0, 96.0]


def test_matrix_member_of_a_struct() -> None:
    got = out0("""
        Xf x = {float3x3(1.0f), float3(1, 2, 3)};
        x.rot[0][1] = 5.0f;
        float3 p = x.rot * float3(1, 1, 1) + x.t;
        out[0] = p.x; out[1] = p.y; out[2] = p.z;
    """, out=((3,), "float32"), header="struct Xf { float3x3 rot; float3 t; };")
    assert got.tolist() == [2.0, 8.0, 4.0]


@pytest.mark.parametrize(("body", "message"), [
    ("float2x2 a = float2x2(1.0f); float3 v = a * float3(1.0f); out[0] = v.x;", "2-column matrix times a 3-vector"),
    ("float2x2 a = float2x2(1.0f); half2x2 b = half2x2(1.0h); float2x2 c = a * b; out[0] = c[0][0];",
     "element types differ"),
    ("float2x3 a; float2x3 b; float2x3 c = a * b; out[0] = c[0][0];", "a 2-column matrix times a matrix of 3 rows"),
    ("float2x2 a = float2x2(1.0f, 2.0f, 3.0f); out[0] = a[0][0];", "takes 4 scalars"),
    ("float2x2 a = float2x2(1.0f); float2x2 b = a & a; out[0] = b[0][0];", "invalid operands to binary '&'"),
    ("float2x2 a = float2x2(1.0f); out[0] = determinant(a);", "use of undeclared function 'determinant'"),
])
def test_invalid_matrix_code_is_a_compile_error(body: str, message: str) -> None:
    with pytest.raises(CompileError) as info:
        run(body)
    assert message in info.value.message
