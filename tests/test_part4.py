"""Part IV of the book: whole shaders, checked like every puzzle and graded from a notebook by
static extraction (issue 23, item 4)."""

from __future__ import annotations

import json

import mlx.core as mx
import nbformat
import numpy as np
import pytest

from metal_puzzles.checking import CaseStatus
from metal_puzzles.checking.run import check_source
from metal_puzzles.grading.extract import extract_kernels
from metal_puzzles.kernel import MetalKernel
from metal_puzzles.puzzles import get_puzzle, part4, solution_source

IDS = [p.id for p in part4.PART_IV]


@pytest.mark.parametrize("pid", IDS)
def test_reference_solution_passes_every_test_within_budget(pid: str) -> None:
    p = get_puzzle(pid)
    result = check_source(p, solution_source(p))
    assert result.passed, result.report()
    assert len(result.outcomes) == 1 + len(p.hidden(np.random.default_rng(0)))


@pytest.mark.parametrize("pid", IDS)
def test_template_compiles_runs_and_fails(pid: str) -> None:
    p = get_puzzle(pid)
    result = check_source(p, p.template)
    assert not result.passed
    assert all(o.status != CaseStatus.COMPILE_ERROR for o in result.outcomes), result.report()


def test_mvmr_rows_from_threads_per_threadgroup_fail_in_the_partial_threadgroup() -> None:
    """The porting guide's row formula: right in full threadgroups, wrong in the partial last one."""
    p = get_puzzle("mvmr_shader")
    source = solution_source(p).replace(
        "uint row [[thread_position_in_grid]]) {",
        "uint3 group [[threadgroup_position_in_grid]], uint3 local [[thread_position_in_threadgroup]],\n"
        "                        uint3 width [[threads_per_threadgroup]]) {\n"
        "  const uint row = group.x * width.x + local.x;")
    assert source != solution_source(p)
    result = check_source(p, source)
    assert not result.passed
    assert result.outcomes[0].status == CaseStatus.WRONG  # visible test: 24 rows in threadgroups of 16


def test_the_lerp_instantiation_for_half_is_required() -> None:
    p = get_puzzle("lerp_shader")
    source = solution_source(p).replace("REGISTER_LERP(half)\n", "")
    result = check_source(p, source)
    assert not result.passed and result.outcomes[0].status == CaseStatus.PASS  # float is still right
    assert "no kernel 'lerp_half' for float16 inputs" in result.report()


def test_metal_kernel_binds_inputs_and_outputs_by_parameter_name() -> None:
    """The output is buffer 0 here, the inputs 1 and 2: names decide, not positions."""
    source = """
    kernel void sub(device float* out [[buffer(0)]], device const float* y [[buffer(1)]],
                    device const float* x [[buffer(2)]], uint i [[thread_position_in_grid]]) {
      out[i] = x[i] - y[i];
    }"""
    kernel = MetalKernel(name="sub", input_names=["x", "y"], output_names=["out"], source=source)
    x, y = mx.arange(6, dtype=mx.float32), mx.ones(6, dtype=mx.float32)
    (out,) = kernel.kernel(inputs=[x, y], output_shapes=[(2, 3)], output_dtypes=[mx.float32], grid=(6, 1, 1),
                           threadgroup=(6, 1, 1))
    np.testing.assert_array_equal(np.array(out), (np.arange(6) - 1).reshape(2, 3))


def test_the_drop_in_still_refuses_a_whole_kernel_function_as_mlx_does() -> None:
    from metal_puzzles import CompileError, metal_kernel

    kernel = metal_kernel("sub", ["x"], ["out"], "kernel void sub(device float* out [[buffer(0)]]) { out[0] = 1; }")
    with pytest.raises(CompileError, match="compile_shader"):
        kernel(inputs=[mx.zeros(1)], output_shapes=[(1,)], output_dtypes=[mx.float32], grid=(1, 1, 1),
               threadgroup=(1, 1, 1))


def test_the_grader_reads_a_whole_shader_from_a_notebook_without_running_it(tmp_path) -> None:
    p = get_puzzle("mvmr_shader")
    cell = (f'source = """{solution_source(p)}"""\n\n'
            "def mvmr_shader_test(*arrays):\n"
            # Running this would leave a file behind; the grader follows the code without running it.
            f"    open({str(tmp_path / 'ran')!r}, 'w').close()\n"
            f"    return MetalKernel(name={p.kernel_name!r}, input_names={list(p.input_names)!r}, "
            f"output_names={list(p.output_names)!r}, source=source)\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(cell)]
    path = tmp_path / "learner.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    found = extract_kernels(path).kernels[p.kernel_name]
    assert not (tmp_path / "ran").exists()
    assert found.source == solution_source(p)
    assert check_source(p, found.source, input_names=found.input_names, output_names=found.output_names).passed


def test_a_header_beside_a_whole_shader_keeps_each_files_lines() -> None:
    header = "constant float SCALE = 2.0f;\n"
    source = ("kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
              "  out[i] = SCALE * float(i);\n"
              "  out[i + 8] = 1.0f;\n"
              "}\n")
    kernel = MetalKernel(name="k", input_names=[], output_names=["out"], source=source, header=header)
    result = kernel.kernel.run(inputs=[], output_shapes=[(8,)], output_dtypes=[mx.float32], grid=(8, 1, 1),
                               threadgroup=(8, 1, 1), sanitize="off")
    np.testing.assert_array_equal(result.outputs[0], np.arange(8) * 2.0)
    with pytest.warns(RuntimeWarning, match="out-of-bounds"):
        result = kernel.kernel.run(inputs=[], output_shapes=[(8,)], output_dtypes=[mx.float32], grid=(8, 1, 1),
                                   threadgroup=(8, 1, 1), sanitize="warn")
    assert (result.findings[0].pos.file, result.findings[0].pos.line) == ("source", 3)
