"""The generated signature must be MLX 0.32's, character for character.

Expected texts are literals derived from MLX's generator (mlx/backend/common/metal_kernel.cpp at
v0.32.1, see /work/notes/mlx_signature_facts.md), not from our own code.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl.abi.signature import (
    InputDesc,
    build_signature,
    describe_input,
    msl_type_name,
    verbose_text,
)
from metal_puzzles.msl.lang.kernel_parameters import METAL_ATTRIBUTES

MYEXP_SOURCE = """
        uint elem = thread_position_in_grid.x;
        T tmp = inp[elem];
        out[elem] = metal::exp(tmp);
"""


def simple(source: str, inputs: list[InputDesc], outputs=("float32",), names=None, **kw):
    """Build with input names taken from the descriptions and outputs o0, o1, ..."""
    return build_signature(
        name=kw.pop("name", "k"),
        input_names=[d.name for d in inputs] if names is None else names,
        output_names=[f"o{i}" for i in range(len(outputs))],
        source=source,
        header=kw.pop("header", ""),
        inputs=inputs,
        output_dtypes=list(outputs),
        template=kw.pop("template", []),
        atomic_outputs=kw.pop("atomic_outputs", False),
    )


def vec(name: str, dtype: str = "float32", size: int = 16, ndim: int = 1) -> InputDesc:
    return InputDesc(name=name, dtype=dtype, ndim=ndim, size=size)


def decls(kernel) -> list[str]:
    return [p.text for p in kernel.params]


# ---------------------------------------------------------------------------------------------
# the documented example
# ---------------------------------------------------------------------------------------------


def test_myexp_doc_example_full_source_and_name():
    kernel = build_signature(
        name="myexp",
        input_names=["inp"],
        output_names=["out"],
        source=MYEXP_SOURCE,
        header="",
        inputs=[InputDesc("inp", "float16", 2, 64)],
        output_dtypes=["float16"],
        template=[("T", "float32")],
        atomic_outputs=False,
    )
    # The docs print a single underscore; MLX's code (and real 0.32 dumps) give two.
    name = "custom_kernel_myexp__float_float16_t_float16_t"
    assert kernel.kernel_name == name
    assert kernel.template_line == "template <typename T>\n"
    assert kernel.full_source == (
        "template <typename T>\n"
        f"[[kernel]] void {name}(\n"
        "  const device float16_t* inp [[buffer(0)]],\n"
        "  device float16_t* out [[buffer(1)]],\n"
        "  uint3 thread_position_in_grid [[thread_position_in_grid]]) {\n"
        f"{MYEXP_SOURCE}\n"
        "}\n"
        "\n"
        f'template [[host_name("{name}")]] [[kernel]] decltype({name}<float>) {name}<float>;\n'
    )
    assert kernel.instantiation_line.startswith('\ntemplate [[host_name("')


def test_verbose_text_matches_mlx_print_format():
    kernel = simple("o0[0] = 1;", [], outputs=("float32",), name="tiny")
    assert verbose_text("tiny", kernel) == (
        "Generated source code for `tiny`:\n"
        "```\n"
        "[[kernel]] void custom_kernel_tiny_float(\n"
        "  device float* o0 [[buffer(0)]]) {\n"
        "o0[0] = 1;\n"
        "}\n"
        "\n"
        "```\n"
    )


def test_header_goes_first_verbatim_and_source_offset_points_at_the_body():
    header = "#define SCALE 2\nconstant int K = 3;"  # no trailing newline: MLX adds none
    kernel = simple("o0[0] = SCALE;", [], header=header, name="h")
    assert kernel.full_source.startswith(header + "[[kernel]] void custom_kernel_h_float(\n")
    assert kernel.full_source[kernel.source_offset :].startswith("o0[0] = SCALE;\n}\n")


# ---------------------------------------------------------------------------------------------
# inputs: address space, reference, name suffix
# ---------------------------------------------------------------------------------------------


def test_scalar_input_is_a_constant_reference_with_s_suffix():
    kernel = simple("o0[0] = d;", [InputDesc("d", "float32", 0, 1)])
    assert decls(kernel)[0] == "  const constant float& d [[buffer(0)]]"
    assert kernel.kernel_name == "custom_kernel_k_floats_float"


@pytest.mark.parametrize(
    ("size", "expected", "suffix"),
    [
        (0, "  const constant int32_t* b [[buffer(0)]]", "c"),
        (3, "  const constant int32_t* b [[buffer(0)]]", "c"),
        (7, "  const constant int32_t* b [[buffer(0)]]", "c"),
        (8, "  const device int32_t* b [[buffer(0)]]", ""),
        (1000, "  const device int32_t* b [[buffer(0)]]", ""),
    ],
)
def test_fewer_than_eight_elements_go_to_constant_memory(size, expected, suffix):
    kernel = simple("o0[0] = b[0];", [vec("b", "int32", size)])
    assert decls(kernel)[0] == expected
    assert kernel.kernel_name == f"custom_kernel_k_int32_t{suffix}_float"


def test_small_multidimensional_input_is_constant_pointer():
    kernel = simple("o0[0] = c[3];", [InputDesc("c", "bfloat16", 2, 4)])
    assert decls(kernel)[0] == "  const constant bfloat16_t* c [[buffer(0)]]"


# ---------------------------------------------------------------------------------------------
# shape / strides / ndim
# ---------------------------------------------------------------------------------------------


def test_no_metadata_when_not_mentioned():
    kernel = simple("o0[0] = x[0];", [vec("x")])
    assert [p.role for p in kernel.params] == ["input", "output"]


def test_metadata_follows_its_input_in_fixed_order():
    source = "o0[0] = x_ndim + x_strides[0] + x_shape[0] + y[0];"
    kernel = simple(source, [vec("x", size=12, ndim=2), vec("y")])
    assert decls(kernel) == [
        "  const device float* x [[buffer(0)]]",
        "  const constant int* x_shape [[buffer(1)]]",
        "  const constant int64_t* x_strides [[buffer(2)]]",
        "  const constant int& x_ndim [[buffer(3)]]",
        "  const device float* y [[buffer(4)]]",
        "  device float* o0 [[buffer(5)]]",
    ]
    assert [(p.role, p.of) for p in kernel.params[1:4]] == [
        ("shape", "x"),
        ("strides", "x"),
        ("ndim", "x"),
    ]


def test_only_the_mentioned_metadata_is_added():
    kernel = simple("o0[0] = x_strides[0];", [vec("x")])
    assert [p.name for p in kernel.params] == ["x", "x_strides", "o0"]


def test_metadata_detection_is_a_plain_substring_search():
    # 'data_shape' contains 'a_shape'; a comment counts too.
    kernel = simple("// data_shape\no0[0] = a[0];", [vec("a")])
    assert [p.name for p in kernel.params] == ["a", "a_shape", "o0"]


def test_mention_in_header_does_not_count():
    kernel = simple("o0[0] = x[0];", [vec("x")], header="// x_shape x_ndim\n")
    assert [p.name for p in kernel.params] == ["x", "o0"]


def test_scalar_input_never_gets_metadata():
    kernel = simple("o0[0] = s + s_shape[0];", [InputDesc("s", "int32", 0, 1)])
    assert [p.name for p in kernel.params] == ["s", "o0"]


# ---------------------------------------------------------------------------------------------
# outputs
# ---------------------------------------------------------------------------------------------


def test_atomic_outputs_wrap_every_output():
    kernel = simple(
        "uint i = thread_position_in_grid.x;",
        [vec("x")],
        outputs=("float32", "int32"),
        atomic_outputs=True,
    )
    assert decls(kernel)[1:3] == [
        "  device atomic<float>* o0 [[buffer(1)]]",
        "  device atomic<int32_t>* o1 [[buffer(2)]]",
    ]


def test_plain_outputs():
    kernel = simple("o0[0] = 0;", [], outputs=("uint32", "bool"))
    assert decls(kernel) == [
        "  device uint32_t* o0 [[buffer(0)]]",
        "  device bool* o1 [[buffer(1)]]",
    ]
    assert kernel.kernel_name == "custom_kernel_k_uint32_t_bool"


def test_mlx_closes_the_list_early_with_metadata_two_outputs_and_no_attributes():
    # MLX's separator test ignores metadata buffers; the result is malformed, as on a real GPU.
    kernel = simple("o0[0] = x_shape[0];", [vec("x")], outputs=("float32", "float32"))
    assert kernel.signature.endswith(
        "  const constant int* x_shape [[buffer(1)]],\n"
        "  device float* o0 [[buffer(2)]]) {\n"
        "  device float* o1 [[buffer(3)]]) {\n"
    )


def test_two_outputs_without_metadata_or_attributes_are_well_formed():
    kernel = simple("o0[0] = x[0];", [vec("x")], outputs=("float32", "float32"))
    assert kernel.signature.endswith(
        "  device float* o0 [[buffer(1)]],\n  device float* o1 [[buffer(2)]]) {\n"
    )


# ---------------------------------------------------------------------------------------------
# thread attributes
# ---------------------------------------------------------------------------------------------

ATTRIBUTE_TYPES = {
    "dispatch_quadgroups_per_threadgroup": "uint",
    "dispatch_simdgroups_per_threadgroup": "uint",
    "dispatch_threads_per_threadgroup": "uint3",
    "grid_origin": "uint3",
    "grid_size": "uint3",
    "quadgroup_index_in_threadgroup": "uint",
    "quadgroups_per_threadgroup": "uint",
    "simdgroup_index_in_threadgroup": "uint",
    "simdgroups_per_threadgroup": "uint",
    "thread_execution_width": "uint",
    "thread_index_in_quadgroup": "uint",
    "thread_index_in_simdgroup": "uint",
    "thread_index_in_threadgroup": "uint",
    "thread_position_in_grid": "uint3",
    "thread_position_in_threadgroup": "uint3",
    "threadgroup_position_in_grid": "uint3",
    "threadgroups_per_grid": "uint3",
    "threads_per_grid": "uint3",
    "threads_per_simdgroup": "uint",
    "threads_per_threadgroup": "uint3",
}

# Names whose text contains another attribute's name, which MLX then adds as well.
IMPLIED = {
    "dispatch_quadgroups_per_threadgroup": "quadgroups_per_threadgroup",
    "dispatch_simdgroups_per_threadgroup": "simdgroups_per_threadgroup",
    "dispatch_threads_per_threadgroup": "threads_per_threadgroup",
}


@pytest.mark.parametrize(("attribute", "type_name"), sorted(ATTRIBUTE_TYPES.items()))
def test_each_attribute_has_mlx_type(attribute, type_name):
    kernel = simple(f"o0[0] = {attribute}.x;", [])
    attrs = [p for p in kernel.params if p.role == "attribute"]
    expected = [f"  {type_name} {attribute} [[{attribute}]]"]
    if attribute in IMPLIED:
        implied = IMPLIED[attribute]
        expected.append(f"  {ATTRIBUTE_TYPES[implied]} {implied} [[{implied}]]")
    assert [p.text for p in attrs] == expected


def test_attribute_table_is_mlx_table_in_mlx_order():
    assert list(METAL_ATTRIBUTES) == list(ATTRIBUTE_TYPES.items())


def test_attributes_follow_table_order_not_source_order():
    source = "o0[0] = threads_per_grid.x + thread_index_in_simdgroup + grid_size.x;"
    kernel = simple(source, [])
    assert [p.name for p in kernel.params if p.role == "attribute"] == [
        "grid_size",
        "thread_index_in_simdgroup",
        "threads_per_grid",
    ]
    assert kernel.signature.endswith(
        "  uint3 grid_size [[grid_size]],\n"
        "  uint thread_index_in_simdgroup [[thread_index_in_simdgroup]],\n"
        "  uint3 threads_per_grid [[threads_per_grid]]) {\n"
    )


# ---------------------------------------------------------------------------------------------
# parameter order, template arguments, mangling
# ---------------------------------------------------------------------------------------------

ARG_TEST_SOURCE = """
    uint elem = thread_position_in_grid.x;
    T tmp = a[0];
    if (e) {
        out1[elem] = a[1] + b[2] + c[3] + d + f;
    } else {
        out1[elem] = 1;
    }
    out2[elem] = a[1] + b[2] + c[1] - d;
"""


def arg_test_kernel(template):
    return build_signature(
        name="arg_test",
        input_names=["a", "b", "c", "d"],
        output_names=["out1", "out2"],
        source=ARG_TEST_SOURCE,
        header="",
        inputs=[
            InputDesc("a", "float32", 2, 18),
            InputDesc("b", "int32", 1, 3),
            InputDesc("c", "bfloat16", 2, 4),
            InputDesc("d", "float32", 0, 1),
        ],
        output_dtypes=["float32", "int32"],
        template=template,
        atomic_outputs=False,
    )


def test_parameter_order_inputs_outputs_attributes():
    kernel = arg_test_kernel([("e", True), ("f", 3), ("T", "float16")])
    assert decls(kernel) == [
        "  const device float* a [[buffer(0)]]",
        "  const constant int32_t* b [[buffer(1)]]",
        "  const constant bfloat16_t* c [[buffer(2)]]",
        "  const constant float& d [[buffer(3)]]",
        "  device float* out1 [[buffer(4)]]",
        "  device int32_t* out2 [[buffer(5)]]",
        "  uint3 thread_position_in_grid [[thread_position_in_grid]]",
    ]
    assert [p.role for p in kernel.params] == ["input"] * 4 + ["output"] * 2 + ["attribute"]


def test_template_bool_int_dtype_declaration_instantiation_and_name():
    kernel = arg_test_kernel([("e", True), ("f", 3), ("T", "float16")])
    name = "custom_kernel_arg_test__1_3_float16_t_float_int32_tc_bfloat16_tc_floats_float_int32_t"
    assert kernel.kernel_name == name
    assert kernel.template_line == "template <bool e, int f, typename T>\n"
    assert kernel.instantiation_line == (
        f'\ntemplate [[host_name("{name}")]] [[kernel]] '
        f"decltype({name}<1, 3, float16_t>) {name}<1, 3, float16_t>;\n"
    )


def test_false_and_negative_ints_mangle_as_mlx_writes_them():
    kernel = arg_test_kernel([("e", False), ("f", -2)])
    assert kernel.kernel_name.startswith("custom_kernel_arg_test__0_-2_float_")
    assert "<0, -2>" in kernel.instantiation_line


def test_no_template_means_no_template_lines():
    kernel = arg_test_kernel([])
    assert kernel.template_line == ""
    assert kernel.instantiation_line == ""
    assert kernel.full_source.startswith("[[kernel]] void custom_kernel_arg_test_float_")
    assert kernel.full_source.endswith(ARG_TEST_SOURCE + "\n}\n")


@pytest.mark.parametrize("bad", [1.5, None, 2**31, np.int64(3), "not_a_dtype"])
def test_invalid_template_values_are_rejected(bad):
    with pytest.raises(ValueError, match="template"):
        arg_test_kernel([("T", bad)])


@pytest.mark.parametrize(
    ("dtype", "msl"),
    [
        ("float32", "float"),
        ("float16", "float16_t"),
        ("bfloat16", "bfloat16_t"),
        ("float64", "double"),
        ("complex64", "complex64_t"),
        ("bool", "bool"),
        ("int8", "int8_t"),
        ("int16", "int16_t"),
        ("int32", "int32_t"),
        ("int64", "int64_t"),
        ("uint8", "uint8_t"),
        ("uint16", "uint16_t"),
        ("uint32", "uint32_t"),
        ("uint64", "uint64_t"),
    ],
)
def test_msl_type_names(dtype, msl):
    assert msl_type_name(dtype) == msl


def test_msl_type_name_accepts_numpy_and_mlx_spellings():
    assert msl_type_name(np.dtype(np.float16)) == "float16_t"
    assert msl_type_name("mlx.core.bfloat16") == "bfloat16_t"
    with pytest.raises(ValueError):
        msl_type_name("complex128")


# ---------------------------------------------------------------------------------------------
# argument checks and input conversion
# ---------------------------------------------------------------------------------------------


def test_no_outputs_is_an_error():
    with pytest.raises(ValueError, match="at least one output"):
        build_signature("k", [], [], "", "", [], [], [], False)


def test_build_signature_checks_counts_too():
    with pytest.raises(ValueError, match="output_dtypes"):
        build_signature("k", [], ["o", "p"], "", "", [], ["float32"], [], False)
    with pytest.raises(ValueError, match="inputs"):
        build_signature("k", ["a"], ["o"], "", "", [], ["float32"], [], False)


def test_describe_input_follows_mlx_scalar_conversion():
    assert describe_input("s", True) == InputDesc("s", "bool", 0, 1)
    assert describe_input("s", 3) == InputDesc("s", "int32", 0, 1)
    assert describe_input("s", 2**40) == InputDesc("s", "int64", 0, 1)
    assert describe_input("s", 7.3) == InputDesc("s", "float32", 0, 1)
    assert describe_input("x", np.zeros((3, 6), np.float16)) == InputDesc("x", "float16", 2, 18)
    assert describe_input("x", np.zeros(4, np.float32), "bfloat16").dtype == "bfloat16"
