"""MLX's utility header, which MLX pastes above every custom kernel
(mlx/backend/metal/kernels/utils.h and friends): elem_to_loc (scalar and uint3 forms), ceildiv,
the integer/float type names (float16_t, bfloat16_t, int32_t, ...), and Limits<T>."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import one, out0, run


def test_elem_to_loc_contiguous_is_identity() -> None:
    """On a row-contiguous input elem_to_loc(e) == e."""
    src = """
    uint e = thread_position_in_grid.x;
    out[e] = elem_to_loc(e, a_shape, a_strides, a_ndim);
    """
    a = np.zeros((2, 3, 4), dtype=np.float32)
    got = out0(src, inputs={"a": a}, out=((24,), "int32"), grid=(24, 1, 1))
    assert got.tolist() == list(range(24))


def test_elem_to_loc_on_permuted_3d_view() -> None:
    """A transpose(2, 0, 1) view read without a copy gives the logical elements in order."""
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    view = base.transpose(2, 0, 1)
    src = """
    uint e = thread_position_in_grid.x;
    out[e] = a[elem_to_loc(e, a_shape, a_strides, a_ndim)];
    """
    got = out0(src, inputs={"a": view}, out=((24,), "float32"), grid=(24, 1, 1), contiguous=False)
    assert got.tolist() == view.ravel().tolist()


def test_elem_to_loc_expected_offsets_by_hand() -> None:
    """For shape (3, 4) with strides (1, 3) (a transposed 4x3), element e = 5 is row 1, col 1,
    at offset 1 * 1 + 1 * 3 = 4."""
    base = np.arange(12, dtype=np.float32).reshape(4, 3)
    view = base.T  # shape (3, 4), strides (1, 3) in elements
    src = "out[0] = elem_to_loc(5u, a_shape, a_strides, a_ndim);"
    assert one(src, "int32", inputs={"a": view}, contiguous=False) == 4


def test_elem_to_loc_uint3_form() -> None:
    """elem_to_loc(uint3, ...) maps (x, y) to x * stride[-1] + y * stride[-2]."""
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    view = base.T  # logical (4, 3)
    src = """
    uint2 p = thread_position_in_grid.xy;
    out[p.y * 3 + p.x] = a[elem_to_loc(thread_position_in_grid, a_shape, a_strides, a_ndim)];
    """
    got = out0(src, inputs={"a": view}, out=((12,), "float32"), grid=(3, 4, 1), contiguous=False)
    assert got.tolist() == view.ravel().tolist()


def test_shape_reads_are_free_in_elem_to_loc() -> None:
    """elem_to_loc reads only shape/strides: the counted global reads are the a[...] loads."""
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    src = """
    uint e = thread_position_in_grid.x;
    out[e] = a[elem_to_loc(e, a_shape, a_strides, a_ndim)];
    """
    res = run(src, inputs={"a": base.T}, out=((12,), "float32"), grid=(12, 1, 1), contiguous=False)
    assert res.counts.global_reads.tolist() == [1] * 12


@pytest.mark.parametrize(("n", "m", "expected"), [(7, 2, 4), (8, 2, 4), (1, 5, 1), (0, 3, 0), (100, 32, 4)])
def test_ceildiv(n: int, m: int, expected: int) -> None:
    """ceildiv(n, m) rounds the quotient up."""
    assert one(f"out[0] = ceildiv({n}, {m});", "int32") == expected


@pytest.mark.parametrize(
    ("tname", "value", "expected"),
    [("int8_t", -1, -1), ("uint8_t", -1, 255), ("int16_t", 70000, 4464), ("uint16_t", -1, 65535),
     ("int32_t", -5, -5), ("uint32_t", -1, 4294967295), ("int64_t", -1, -1)],
)
def test_fixed_width_integer_type_names(tname: str, value: int, expected: int) -> None:
    """The <cstdint>-style names are the MSL integer types of those widths."""
    assert one(f"{tname} x = {tname}({value}); out[0] = x;", "int64") == expected


def test_uint64_t_and_size_t() -> None:
    """uint64_t wraps at 2**64; size_t is 64-bit."""
    src = "uint64_t x = 0; x = x - 1; out[0] = x; out[1] = sizeof(size_t);"
    assert run(src, out=((2,), "uint64")).outputs[0].tolist() == [2**64 - 1, 8]


def test_float16_t_is_half() -> None:
    """float16_t arithmetic rounds to binary16: 2048 + 1 is 2048."""
    assert one("float16_t h = 2048; h = h + float16_t(1); out[0] = h;") == 2048.0


def test_bfloat16_t_rounds_to_bfloat() -> None:
    """bfloat16_t(257) rounds to 256 (8 significant bits, ties to even)."""
    assert one("bfloat16_t b = bfloat16_t(257.0f); out[0] = float(b);") == 256.0


def test_limits_float() -> None:
    """Limits<float>::max is +inf and finite_max is FLT_MAX (MLX's convention)."""
    src = "out[0] = Limits<float>::max; out[1] = Limits<float>::finite_max; out[2] = Limits<float>::min;"
    got = run(src, out=((3,), "float32")).outputs[0]
    assert got.tolist() == [np.inf, float(np.finfo(np.float32).max), -np.inf]


def test_limits_int() -> None:
    """Limits<int32_t>::max and ::min are INT32 extremes."""
    src = "out[0] = Limits<int32_t>::max; out[1] = Limits<int32_t>::min;"
    assert run(src, out=((2,), "int32")).outputs[0].tolist() == [2**31 - 1, -(2**31)]


def test_limits_with_template_type() -> None:
    """Limits<T>::min as the identity of a max-reduction over a template type."""
    src = """
    T m = Limits<T>::min;
    for (int k = 0; k < 4; k++) m = max(m, a[k]);
    out[0] = m;
    """
    a = np.array([-5, -3, -9, -4], dtype=np.int32)
    assert one(src, "int32", inputs={"a": a}, template=[("T", np.dtype("int32"))]) == -3
