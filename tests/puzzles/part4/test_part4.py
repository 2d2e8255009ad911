"""Part IV of the book: whole shaders, checked like every puzzle and graded from a notebook by
static extraction (issue 23, item 4)."""

from __future__ import annotations

import json

import mlx.core as mx
import nbformat
import numpy as np
import pytest

from metal_puzzles.checking import CaseStatus
from metal_puzzles.checking.case_runner import check_source
from metal_puzzles.grading.extract import extract_kernels
from metal_puzzles.host.kernel import MetalKernel
from metal_puzzles.puzzles import get_puzzle, part4, solution_source

IDS = [p.id for p in part4.PART_IV.puzzles]


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


def test_lerp_registered_with_a_signed_count_does_not_compile_as_clang_would_not() -> None:
    """Issue 29: an instantiation declaring 'constant int&' where the template has 'constant uint&'."""
    p = get_puzzle("lerp_shader")
    source = solution_source(p).replace("constant float&, constant uint&, uint);", "constant float&, constant int&, uint);")
    assert source != solution_source(p)
    result = check_source(p, source)
    assert result.outcomes[0].status == CaseStatus.COMPILE_ERROR
    assert ("explicit instantiation of 'lerp' does not refer to a function template, variable template, member "
            "function, member class, or static data member ('lerp_float': parameter 5 is 'constant int&' here, but "
            "the template's 'numel' is 'constant uint&')") in result.report()


def test_metal_kernel_binds_inputs_and_outputs_by_parameter_name() -> None:
    """Outside a puzzle (no host layout): the output is buffer 0 here, the inputs 1 and 2: names
    decide, not positions."""
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


MVMR_BUFFERS = ("a", "a_idx", "b", "b_idx", "o_idx", "o", "dims")


def test_each_part_iv_puzzle_states_its_hosts_buffer_layout_in_its_text() -> None:
    mvmr, lerp = get_puzzle("mvmr_shader"), get_puzzle("lerp_shader")
    assert mvmr.buffer_layout == MVMR_BUFFERS
    assert lerp.buffer_layout == ("start", "end", "out", "weight", "numel")
    assert "the output `o` at buffer 5 and\n`dims` at buffer 6" in mvmr.description
    assert "The host binds `start`, `end`, `out`, `weight` and\n`numel` at buffers 0 to 4" in lerp.description
    for p in (mvmr, lerp):  # the template declares each array at the index the host binds it
        for k, name in enumerate(p.buffer_layout):
            assert f" {name} [[buffer({k})]]" in p.template


def test_mvmr_with_the_output_and_dims_buffers_swapped_fails_naming_index_parameter_and_host_array() -> None:
    """Issue 29: bound by name this passed; a host binding by index would write into dims."""
    p = get_puzzle("mvmr_shader")
    source = (solution_source(p).replace("o [[buffer(5)]]", "o [[buffer(@)]]")
              .replace("dims [[buffer(6)]]", "dims [[buffer(5)]]").replace("[[buffer(@)]]", "[[buffer(6)]]"))
    result = check_source(p, source)
    assert not result.passed
    assert result.outcomes[0].status == CaseStatus.RUNTIME_ERROR
    assert ("kernel 'mvmr_shader': [[buffer(5)]] is 'dims' (constant uint*), but the host puts the output o (24 "
            "float32 elements) there, and dims at [[buffer(6)]]: a host binds buffers by index, not by name; the host "
            "binds [[buffer(0)]] a, [[buffer(1)]] a_idx, [[buffer(2)]] b, [[buffer(3)]] b_idx, [[buffer(4)]] o_idx, "
            "[[buffer(5)]] o, [[buffer(6)]] dims") in result.outcomes[0].error


def test_parameters_named_otherwise_bind_by_index_as_a_host_binds_them() -> None:
    p = get_puzzle("mvmr_shader")
    renamed = solution_source(p).replace("float* o [[", "float* sums [[").replace("&o[", "&sums[")
    assert check_source(p, renamed).passed
    # Renamed and at each other's index: the element types tell what the host put there.
    swapped = (renamed.replace("sums [[buffer(5)]]", "sums [[buffer(6)]]").replace("dims [[buffer(6)]]", "sizes [[buffer(5)]]")
               .replace("dims[", "sizes["))
    error = check_source(p, swapped).outcomes[0].error
    assert ("[[buffer(5)]] is 'sizes' (constant uint*), which reads uint elements, but the host puts the output o "
            "(24 float32 elements) there") in error


@pytest.mark.parametrize(("old", "new", "message"), [
    ("dims [[buffer(6)]]", "dims [[buffer(7)]]",
     "[[buffer(7)]] is 'dims' (constant uint*), an index the host binds nothing at; the host binds [[buffer(0)]] a"),
    ("device float* o [[buffer(5)]]", "device const float* o [[buffer(5)]]",
     "the host reads its output 'o' back from [[buffer(5)]], but the kernel declares it read-only "
     "('o', device const float*)"),
])
def test_a_kernel_that_a_host_could_not_bind_fails_with_what_the_host_does(old: str, new: str, message: str) -> None:
    p = get_puzzle("mvmr_shader")
    source = solution_source(p).replace(old, new)
    assert source != solution_source(p)
    result = check_source(p, source)
    assert message in (result.outcomes[0].error or result.report())


def test_a_problem_in_the_notebook_binds_as_the_host_does() -> None:
    """MetalProblem (the notebook's face) launches with the puzzle's layout, like check_source."""
    from metal_puzzles import MetalProblem

    p = get_puzzle("mvmr_shader")
    swapped = (solution_source(p).replace("o [[buffer(5)]]", "o [[buffer(@)]]")
               .replace("dims [[buffer(6)]]", "dims [[buffer(5)]]").replace("[[buffer(@)]]", "[[buffer(6)]]"))
    case = p.visible

    def mvmr_shader_test(*arrays):
        return MetalKernel(name="mvmr_shader", input_names=list(p.input_names), output_names=["o"], source=swapped)

    problem = MetalProblem(p.title, mvmr_shader_test, [mx.array(a) for a in case.inputs], case.output_shape,
                           grid=case.grid, threadgroup=case.threadgroup)
    with pytest.raises(Exception, match=r"\[\[buffer\(5\)\]\] is 'dims'"):
        problem.run_case(case)


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
