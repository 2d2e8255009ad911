"""Mistakes in what a kernel is made from get a clear error that says what and where.

* an unterminated ``/* ...`` comment is an error at the ``/*``;
* input and output names must be able to name kernel parameters (identifiers, not reserved
  words or type names, distinct, not a thread attribute or a generated shape/strides/ndim
  parameter): an ``ArgumentError`` when ``metal_kernel(...)`` / ``MetalKernel(...)`` is made;
* code nested too deeply to compile is an error at the place where the nesting got too deep;
* a whole kernel function passed as ``source`` is an error that explains that the source is the
  body and what to drop or rename, comparing the function's parameters with the names.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles import MetalKernel, metal_kernel
from metal_puzzles.msl import ArgumentError, CompileError, simulate


def _compile(source: str, input_names=("a",), output_names=("out",), header: str = ""):
    return simulate("k", list(input_names), list(output_names), source, header,
                    inputs=[np.zeros(8, np.float32) for _ in input_names],
                    output_shapes=[(8,)] * len(output_names), output_dtypes=["float32"] * len(output_names),
                    grid=(8, 1, 1), threadgroup=(8, 1, 1))


# ------------------------------------------------------------------ comments


def test_unterminated_block_comment_is_an_error_at_its_start() -> None:
    with pytest.raises(CompileError) as info:
        _compile("uint i = thread_position_in_grid.x;\n    /* the rest is swallowed\nout[i] = a[i];")
    assert (info.value.file, info.value.line, info.value.col) == ("source", 2, 5)
    assert "unterminated /* comment" in info.value.message


def test_unterminated_comment_in_the_header_points_into_the_header() -> None:
    with pytest.raises(CompileError) as info:
        _compile("out[0] = 0;", header="#define N 4\n/* helpers\n")
    assert (info.value.file, info.value.line, info.value.col) == ("header", 2, 1)


def test_terminated_comments_still_work() -> None:
    res = _compile("/* a */ uint i = thread_position_in_grid.x; /* b\n c */ out[i] = 1.0f; // d")
    assert res.outputs[0].tolist() == [1.0] * 8


# ------------------------------------------------------------------ names


@pytest.mark.parametrize(("inputs", "outputs", "message"), [
    (["a-b"], ["out"], "input name 'a-b' is not an identifier"),
    (["2a"], ["out"], "input name '2a' is not an identifier"),
    ([""], ["out"], "input name '' is not an identifier"),
    (["a", "a"], ["out"], "input name 'a' appears twice in input_names"),
    (["a"], ["a"], "output name 'a' is also an input name"),
    (["float"], ["out"], "input name 'float' is a reserved word or type name"),
    (["a"], ["kernel"], "output name 'kernel' is a reserved word"),
    (["half4"], ["out"], "input name 'half4' is a reserved word or type name"),
    (["thread_position_in_grid"], ["out"], "the thread attribute MLX passes"),
    (["a", "a_strides"], ["out"], "clashes with the 'a_strides' parameter MLX generates for input 'a'"),
    ("ab", ["out"], "input_names must be a list of names"),
])
def test_odd_names_are_refused_when_the_kernel_is_made(inputs, outputs, message) -> None:
    with pytest.raises(ArgumentError) as info:
        metal_kernel("k", inputs, outputs, "out[0] = 0;")
    assert message in str(info.value)
    with pytest.raises(ArgumentError, match="name"):
        MetalKernel("k", inputs, outputs, "out[0] = 0;")
    with pytest.raises(ArgumentError, match="name"):  # and the NumPy entry point too
        simulate("k", inputs, outputs, "out[0] = 0;", inputs=[np.zeros(8, np.float32)] * len(inputs),
                 output_shapes=[(1,)] * len(outputs), output_dtypes=["float32"] * len(outputs), grid=(1, 1, 1),
                 threadgroup=(1, 1, 1))


def test_ordinary_names_including_function_names_are_fine() -> None:
    k = metal_kernel("k", ["exp", "a_shape2", "_x1"], ["out"], "out[0] = exp[0] + a_shape2[0] + _x1[0];")
    assert k.input_names == ["exp", "a_shape2", "_x1"]


# ------------------------------------------------------------------ nesting


def test_deep_parentheses_point_at_the_place() -> None:
    deep = "(" * 5000 + "1" + ")" * 5000
    with pytest.raises(CompileError) as info:
        _compile(f"uint i = thread_position_in_grid.x;\nout[i] = {deep};")
    assert "nested too deeply" in info.value.message
    assert info.value.line == 2 and 9 < info.value.col < 100


def test_a_long_chain_of_operators_points_at_the_place() -> None:
    chain = " + ".join(["a[0]"] * 400)
    with pytest.raises(CompileError) as info:
        _compile(f"uint i = thread_position_in_grid.x;\nout[i] = {chain};")
    assert "nested too deeply" in info.value.message and info.value.line == 2 and info.value.col > 100


def test_deep_blocks_point_at_the_place() -> None:
    with pytest.raises(CompileError) as info:
        _compile("uint i = thread_position_in_grid.x;\n" + "{" * 300 + "out[i] = 1;" + "}" * 300)
    assert "nested too deeply" in info.value.message and info.value.line == 2


def test_realistic_nesting_compiles() -> None:
    chain = " + ".join(f"a[{k}]" for k in range(8)) + " + " + "(" * 20 + "1.0f" + ")" * 20
    res = _compile("uint i = thread_position_in_grid.x;\n" + "{" * 20 + f"out[i] = {chain};" + "}" * 20)
    assert res.outputs[0].tolist() == [1.0] * 8


# ------------------------------------------------------------------ a whole kernel function

WHOLE = """kernel void add(device const float* a [[buffer(0)]],
                device const float* b [[buffer(1)]],
                device float* c [[buffer(2)]],
                uint gid [[thread_position_in_grid]]) {
    c[gid] = a[gid] + b[gid];
}"""


def test_a_whole_kernel_function_says_the_source_is_the_body() -> None:
    with pytest.raises(CompileError) as info:
        _compile(WHOLE, input_names=("a", "b"), output_names=("out",))
    msg = info.value.message
    assert (info.value.line, info.value.col) == (1, 1)
    assert "the source must be the kernel's body" in msg and "MLX writes the signature" in msg
    assert "parameter 'c' is written to: add it to output_names" in msg
    assert "write 'thread_position_in_grid' where the body uses 'gid'" in msg
    assert "no parameter is named 'out'" in msg
    assert "'b'" not in msg.split("Drop the signature")[1].split("parameter 'c'")[0]  # b matches its input name


def test_attribute_spelling_and_matching_names_need_only_the_body() -> None:
    src = ("[[kernel]] void f(device const float* a [[buffer(0)]], device float* out [[buffer(1)]],\n"
           "                  uint3 thread_position_in_grid [[thread_position_in_grid]]) { out[0] = a[0]; }")
    with pytest.raises(CompileError) as info:
        _compile(src)
    assert info.value.message.endswith("Drop the signature and the outer braces")


def test_a_templated_kernel_function_is_recognised_too() -> None:
    src = "template <typename T>\n[[kernel]] void f(device const T* a [[buffer(0)]], device T* out [[buffer(1)]]) {}"
    with pytest.raises(CompileError, match="the source must be the kernel's body"):
        _compile(src)


def test_a_graded_kernel_with_odd_names_is_a_compile_error_not_a_crash() -> None:
    from metal_puzzles.checking import CaseStatus, check_source
    from metal_puzzles.puzzles import get_puzzle

    result = check_source(get_puzzle("map"), "out[thread_position_in_grid.x] = a[0];", input_names=["float"])
    assert not result.passed and result.outcomes[0].status == CaseStatus.COMPILE_ERROR
    assert "reserved word" in result.compile_error
