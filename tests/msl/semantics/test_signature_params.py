"""The generated kernel signature, as MLX 0.32 writes it (mlx/backend/common/metal_kernel.cpp):
thread attributes appear when the source mentions them; inputs are `const device T*`, or
`const constant T*` below 8 elements, or `const constant T&` when 0-d; `x_shape` (int),
`x_strides` (int64_t) and `x_ndim` exist when mentioned; templates; init_value; and
ensure_row_contiguous=False with strided inputs.

Per-thread attribute values follow the MSL specification's attribute table: SIMD-groups are
32 wide and linear in thread_index_in_threadgroup; simdgroups_per_threadgroup and
quadgroups_per_threadgroup are ceil(actual threadgroup size / 32 or 4) while the dispatch_*
variants use the dispatched size.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np
import pytest

from .conftest import one, out0, run

GRID70 = (70, 1, 1)
TG64 = (64, 1, 1)


def _actual(i: int) -> int:
    """Size of the threadgroup holding thread i for grid 70, threadgroup 64."""
    return 64 if i < 64 else 6


SCALAR_ATTRS: list[tuple[str, Callable[[int], int]]] = [
    ("thread_index_in_threadgroup", lambda i: i % 64),
    ("thread_index_in_simdgroup", lambda i: (i % 64) % 32),
    ("simdgroup_index_in_threadgroup", lambda i: (i % 64) // 32),
    ("threads_per_simdgroup", lambda i: 32),
    ("thread_execution_width", lambda i: 32),
    ("simdgroups_per_threadgroup", lambda i: math.ceil(_actual(i) / 32)),
    ("dispatch_simdgroups_per_threadgroup", lambda i: 2),
    ("thread_index_in_quadgroup", lambda i: (i % 64) % 4),
    ("quadgroup_index_in_threadgroup", lambda i: (i % 64) // 4),
    ("quadgroups_per_threadgroup", lambda i: math.ceil(_actual(i) / 4)),
    ("dispatch_quadgroups_per_threadgroup", lambda i: 16),
    ("threads_per_threadgroup.x", _actual),
    ("dispatch_threads_per_threadgroup.x", lambda i: 64),
    ("threadgroup_position_in_grid.x", lambda i: i // 64),
    ("thread_position_in_threadgroup.x", lambda i: i % 64),
    ("threadgroups_per_grid.x", lambda i: 2),
    ("threads_per_grid.x", lambda i: 70),
    ("grid_size.x", lambda i: 70),
    ("grid_origin.x", lambda i: 0),
]


@pytest.mark.parametrize(("attr", "expected"), SCALAR_ATTRS, ids=[a for a, _ in SCALAR_ATTRS])
def test_thread_attribute_values(attr: str, expected: Callable[[int], int]) -> None:
    """Each attribute has its MSL value in full and partial (6-thread) threadgroups."""
    src = f"out[thread_position_in_grid.x] = {attr};"
    got = out0(src, out=((70,), "uint32"), grid=GRID70, tg=TG64)
    assert got.tolist() == [expected(i) for i in range(70)]


def test_thread_index_in_threadgroup_2d_is_row_major() -> None:
    """thread_index_in_threadgroup = x + y * width in a 2-D threadgroup."""
    src = """
    uint2 g = thread_position_in_grid.xy;
    out[g.y * 4 + g.x] = thread_index_in_threadgroup;
    """
    got = out0(src, out=((16,), "uint32"), grid=(4, 4, 1), tg=(2, 2, 1))
    expected = [(x % 2) + (y % 2) * 2 for y in range(4) for x in range(4)]
    assert got.tolist() == expected


def test_simdgroups_follow_linear_index_in_2d_threadgroup() -> None:
    """SIMD-groups are linear in thread_index_in_threadgroup: a 16x4 threadgroup has lanes
    0..31 in rows 0-1 and simdgroup 1 in rows 2-3."""
    src = """
    uint2 t = thread_position_in_threadgroup.xy;
    out[(t.y * 16 + t.x) * 2 + 0] = simdgroup_index_in_threadgroup;
    out[(t.y * 16 + t.x) * 2 + 1] = thread_index_in_simdgroup;
    """
    got = out0(src, out=((128,), "uint32"), grid=(16, 4, 1), tg=(16, 4, 1)).reshape(64, 2)
    assert got[:, 0].tolist() == [i // 32 for i in range(64)]
    assert got[:, 1].tolist() == [i % 32 for i in range(64)]


# ------------------------------------------------------------ signature text


def test_attributes_declared_only_when_mentioned() -> None:
    """Only mentioned attributes become parameters, with MLX's types (uint3 / uint)."""
    res = run("out[thread_position_in_grid.x] = thread_index_in_simdgroup;",
              out=((4,), "uint32"), grid=(4, 1, 1))
    src = res.generated_source
    assert re.search(r"uint3\s+thread_position_in_grid\s*\[\[\s*thread_position_in_grid\s*\]\]", src)
    assert re.search(r"uint\s+thread_index_in_simdgroup\s*\[\[\s*thread_index_in_simdgroup\s*\]\]", src)
    assert "threads_per_grid" not in src
    assert "threadgroup_position_in_grid" not in src


def test_small_input_is_constant_pointer_and_large_is_device() -> None:
    """Inputs of fewer than 8 elements go in the constant address space."""
    src = "out[0] = a[0] + b[0];"
    res = run(src, inputs={"a": np.ones(7, np.float32), "b": np.ones(8, np.float32)})
    gen = res.generated_source
    assert re.search(r"const\s+constant\s+float\s*\*\s*a\s*\[\[\s*buffer\(0\)\s*\]\]", gen)
    assert re.search(r"const\s+device\s+float\s*\*\s*b\s*\[\[\s*buffer\(1\)\s*\]\]", gen)
    assert res.outputs[0].tolist() == [2.0]


def test_zero_dim_input_is_constant_reference() -> None:
    """A 0-d input is `const constant T& name` and reads as a plain value."""
    src = "uint i = thread_position_in_grid.x; out[i] = a[i] * s;"
    a = np.arange(4, dtype=np.float32)
    res = run(src, inputs={"a": a, "s": np.float32(2.5)}, out=((4,), "float32"), grid=(4, 1, 1))
    assert re.search(r"const\s+constant\s+float\s*&\s*s\b", res.generated_source)
    assert res.outputs[0].tolist() == (a * np.float32(2.5)).tolist()


def test_zero_dim_python_int_is_int() -> None:
    """A Python int becomes an int32 scalar: s / 2 is integer division."""
    assert one("out[0] = s / 2;", inputs={"s": 5}) == 2.0


def test_zero_dim_python_float_is_float() -> None:
    """A Python float becomes a float32 scalar: s / 2 is 1.25."""
    assert one("out[0] = s / 2;", inputs={"s": 2.5}) == 1.25


def test_output_declarations() -> None:
    """Outputs are `device T* name`, atomic<T> with atomic_outputs; dtype names as MLX's."""
    res = run("out[0] = 1; o2[0] = 2;", out={"out": ((1,), "float16"), "o2": ((1,), "int32")})
    gen = res.generated_source
    assert re.search(r"device\s+float16_t\s*\*\s*out\b", gen)
    assert re.search(r"device\s+int32_t\s*\*\s*o2\b", gen)
    res = run("atomic_store_explicit(&out[0], 3, memory_order_relaxed);", out=((1,), "int32"),
              atomic=True)
    assert re.search(r"device\s+atomic<\s*int32_t\s*>\s*\*\s*out\b", res.generated_source)
    assert res.outputs[0].tolist() == [3]


@pytest.mark.parametrize(
    ("dtype", "type_name"),
    [("float32", "float"), ("float16", "float16_t"), ("int32", "int32_t"), ("uint32", "uint32_t"),
     ("int8", "int8_t"), ("uint8", "uint8_t"), ("int16", "int16_t"), ("uint16", "uint16_t"),
     ("int64", "int64_t"), ("uint64", "uint64_t"), ("bool", "bool")],
)
def test_input_type_names_in_signature(dtype: str, type_name: str) -> None:
    """Input element types are spelt the way MLX's get_type_string spells them."""
    a = np.zeros(8, dtype=dtype)
    res = run("out[0] = 1;", inputs={"a": a})
    assert re.search(rf"const\s+device\s+{type_name}\s*\*\s*a\b", res.generated_source)


def test_bfloat16_input_via_input_dtypes() -> None:
    """input_dtypes=['bfloat16'] declares the input bfloat16_t; bf16-representable values
    read back exactly, and arithmetic on them happens in bfloat (1 + 2**-8 rounds to 1)."""
    a = np.array([1.0, 1.0078125, 3.0, -2.5, 0.00390625, 0, 0, 0], dtype=np.float32)
    src = """
    uint i = thread_position_in_grid.x;
    out[i] = float(a[i]);
    if (i == 0) out[8] = float(a[0] + a[4] * bfloat16_t(1.0f));
    """
    res = run(src, inputs={"a": a}, out=((9,), "float32"), grid=(8, 1, 1),
              input_dtypes=["bfloat16"])
    assert re.search(r"const\s+device\s+bfloat16_t\s*\*\s*a\b", res.generated_source)
    assert res.outputs[0][:5].tolist() == [1.0, 1.0078125, 3.0, -2.5, 0.00390625]
    # 1 + 2**-8 lies exactly between the bf16 neighbours 1 and 1 + 2**-7: ties go to even, 1.
    assert res.outputs[0][8] == 1.0


# ----------------------------------------------------------- shape / strides


def test_shape_strides_ndim_of_contiguous_input() -> None:
    """x_shape, x_strides (in elements) and x_ndim describe the input; reading them is free."""
    src = """
    out[0] = a_shape[0]; out[1] = a_shape[1]; out[2] = a_shape[2];
    out[3] = a_strides[0]; out[4] = a_strides[1]; out[5] = a_strides[2];
    out[6] = a_ndim;
    """
    a = np.zeros((2, 3, 4), dtype=np.float32)
    res = run(src, inputs={"a": a}, out=((7,), "int32"))
    assert res.outputs[0].tolist() == [2, 3, 4, 12, 4, 1, 3]
    assert res.counts.global_reads.tolist() == [0]
    gen = res.generated_source
    assert re.search(r"const\s+constant\s+int\s*\*\s*a_shape\b", gen)
    assert re.search(r"const\s+constant\s+int64_t\s*\*\s*a_strides\b", gen)
    assert re.search(r"const\s+constant\s+int\s*&\s*a_ndim\b", gen)


def test_shape_params_absent_when_not_mentioned() -> None:
    """No a_shape/a_strides/a_ndim parameters unless the source mentions them."""
    res = run("out[0] = a[0];", inputs={"a": np.ones(8, np.float32)})
    assert "a_shape" not in res.generated_source
    assert "a_strides" not in res.generated_source
    assert "a_ndim" not in res.generated_source


def test_row_contiguous_copy_of_a_strided_view() -> None:
    """With ensure_row_contiguous=True a strided view arrives as a row-major copy."""
    base = np.arange(24, dtype=np.float32).reshape(3, 8)
    view = base[:, ::2]
    src = """
    uint i = thread_position_in_grid.x;
    out[i] = a[i];
    if (i == 0) { out[12] = a_strides[0]; out[13] = a_strides[1]; }
    """
    got = out0(src, inputs={"a": view}, out=((14,), "float32"), grid=(12, 1, 1))
    assert got[:12].tolist() == view.ravel().tolist()
    assert got[12:].tolist() == [4.0, 1.0]


def test_elem_to_loc_on_sliced_view_without_copy() -> None:
    """ensure_row_contiguous=False: elem_to_loc with the view's shape/strides finds each
    logical element of a[:, ::2]."""
    base = np.arange(24, dtype=np.float32).reshape(3, 8)
    view = base[:, ::2]
    src = """
    uint e = thread_position_in_grid.x;
    out[e] = a[elem_to_loc(e, a_shape, a_strides, a_ndim)];
    """
    got = out0(src, inputs={"a": view}, out=((12,), "float32"), grid=(12, 1, 1), contiguous=False)
    assert got.tolist() == view.ravel().tolist()


def test_elem_to_loc_on_transposed_view_without_copy() -> None:
    """ensure_row_contiguous=False with a.T: strides are (1, 4) and elem_to_loc reads the
    transpose; a[i] itself reads the untransposed buffer, as on the GPU."""
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    view = base.T
    src = """
    uint e = thread_position_in_grid.x;
    out[e] = a[elem_to_loc(e, a_shape, a_strides, a_ndim)];
    raw[e] = a[e];
    if (e == 0) { st[0] = a_strides[0]; st[1] = a_strides[1]; }
    """
    res = run(src, inputs={"a": view},
              out={"out": ((12,), "float32"), "raw": ((12,), "float32"), "st": ((2,), "int64")},
              grid=(12, 1, 1), contiguous=False)
    assert res.outputs[0].tolist() == view.ravel().tolist()
    assert res.outputs[1].tolist() == base.ravel().tolist()
    assert res.outputs[2].tolist() == [1, 4]


# -------------------------------------------------------------- templates


@pytest.mark.parametrize(("dtype", "expected"), [("float32", 1.00048828125), ("float16", 1.0)])
def test_template_type_parameter(dtype: str, expected: float) -> None:
    """T stands for the template dtype: 1 + 2**-11 survives in float but rounds away in half."""
    src = "T s = T(1); s += T(a[0]); out[0] = float(s);"
    a = np.array([2.0**-11], dtype=np.float32)
    assert one(src, inputs={"a": a}, template=[("T", np.dtype(dtype))]) == expected


def test_template_int_parameter() -> None:
    """An int template argument is a compile-time constant (usable as an array size)."""
    src = """
    float buf[N];
    for (int k = 0; k < N; k++) buf[k] = k;
    float s = 0;
    for (int k = 0; k < N; k++) s += buf[k];
    out[0] = s;
    """
    assert one(src, template=[("N", 5)]) == 10.0


@pytest.mark.parametrize(("flag", "expected"), [(True, 1), (False, 2)])
def test_template_bool_parameter(flag: bool, expected: int) -> None:
    """A bool template argument selects a branch."""
    assert one("if (FLAG) out[0] = 1; else out[0] = 2;", "int32", template=[("FLAG", flag)]) == expected


def test_template_declaration_in_generated_source() -> None:
    """The kernel becomes `template <typename T, int N, bool B>` with an instantiation."""
    res = run("out[0] = T(N) + (B ? 1 : 0);",
              template=[("T", np.dtype("float32")), ("N", 3), ("B", True)])
    gen = res.generated_source
    assert re.search(r"template\s*<\s*typename\s+T\s*,\s*int\s+N\s*,\s*bool\s+B\s*>", gen)
    assert "host_name" in gen
    assert res.outputs[0].tolist() == [4.0]


# -------------------------------------------------------------- init_value


def test_init_value_fills_every_output() -> None:
    """init_value fills all outputs before the kernel runs (converted to each dtype)."""
    src = "out[0] = 1; o2[1] = 2;"
    res = run(src, out={"out": ((3,), "float32"), "o2": ((3,), "int32")}, init_value=7)
    assert res.outputs[0].tolist() == [1.0, 7.0, 7.0]
    assert res.outputs[1].tolist() == [7, 2, 7]


def test_init_value_fractional_into_int_output() -> None:
    """init_value 2.75 in an int32 output truncates to 2 (a float -> int conversion)."""
    got = out0("out[0] += 1;", out=((2,), "int32"), init_value=2.75)
    assert got.tolist() == [3, 2]


def test_multiple_outputs_with_different_shapes() -> None:
    """Several outputs, each with its own shape and dtype."""
    src = """
    uint i = thread_position_in_grid.x;
    o1[i] = i * 2;
    if (i < 2) o2[i] = -float(i) - 0.5f;
    """
    res = run(src, out={"o1": ((4,), "uint32"), "o2": ((2,), "float32")}, grid=(4, 1, 1))
    assert res.outputs[0].tolist() == [0, 2, 4, 6]
    assert res.outputs[1].tolist() == [-0.5, -1.5]
    assert [o.shape for o in res.outputs] == [(4,), (2,)]


def test_output_shape_is_2d() -> None:
    """A 2-D output is indexed as flat row-major memory in the kernel."""
    src = """
    uint2 g = thread_position_in_grid.xy;
    out[g.y * 3 + g.x] = g.y * 10 + g.x;
    """
    got = out0(src, out=((2, 3), "int32"), grid=(3, 2, 1))
    assert got.tolist() == [[0, 1, 2], [10, 11, 12]]


# ------------------------------------------------------ exact MLX source text


def test_generated_source_matches_mlx_text_exactly() -> None:
    """The signature text is byte-for-byte what MLX's write_signature produces: kernel name
    custom_kernel_<name>_<input types>_<output types>, one parameter per line, and thread
    attributes in MLX's fixed table order (not the order they appear in the source)."""
    src = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + thread_index_in_simdgroup;"
    res = run(src, inputs={"a": np.zeros(8, np.float32)}, out=((8,), "float32"), grid=(8, 1, 1))
    expected = (
        "[[kernel]] void custom_kernel_probe_float_float(\n"
        "  const device float* a [[buffer(0)]],\n"
        "  device float* out [[buffer(1)]],\n"
        "  uint thread_index_in_simdgroup [[thread_index_in_simdgroup]],\n"
        "  uint3 thread_position_in_grid [[thread_position_in_grid]]) {\n"
        "uint i = thread_position_in_grid.x;\n"
        "out[i] = a[i] + thread_index_in_simdgroup;\n"
        "}\n"
    )
    assert res.generated_source.rstrip("\n") == expected.rstrip("\n")


def test_generated_source_small_and_scalar_inputs_and_shape_params() -> None:
    """Small inputs get a `c` suffix in the kernel name, 0-d ones an `s`; shape parameters
    take the next buffer indices after their input."""
    src = "out[0] = a[0] + a_shape[0] + s;"
    res = run(src, inputs={"a": np.zeros(3, np.float32), "s": np.int32(2)})
    expected = (
        "[[kernel]] void custom_kernel_probe_floatc_int32_ts_float(\n"
        "  const constant float* a [[buffer(0)]],\n"
        "  const constant int* a_shape [[buffer(1)]],\n"
        "  const constant int32_t& s [[buffer(2)]],\n"
        "  device float* out [[buffer(3)]]) {\n"
        "out[0] = a[0] + a_shape[0] + s;\n"
        "}\n"
    )
    assert res.generated_source.rstrip("\n") == expected.rstrip("\n")
    assert res.outputs[0].tolist() == [5.0]


def test_generated_source_template_instantiation_text() -> None:
    """Templates: `template <...>` before the kernel, the template arguments folded into the
    kernel name, and an explicit instantiation with [[host_name]] (bool printed as 1)."""
    res = run("out[0] = T(N) + (B ? 1 : 0);",
              template=[("T", np.dtype("float32")), ("N", 3), ("B", True)])
    name = "custom_kernel_probe__float_3_1_float"
    expected = (
        "template <typename T, int N, bool B>\n"
        f"[[kernel]] void {name}(\n"
        "  device float* out [[buffer(0)]]) {\n"
        "out[0] = T(N) + (B ? 1 : 0);\n"
        "}\n"
        "\n"
        f'template [[host_name("{name}")]] [[kernel]] decltype({name}<float, 3, 1>) {name}<float, 3, 1>;\n'
    )
    assert res.generated_source.rstrip("\n") == expected.rstrip("\n")
