"""V.11, a radix sort pass debugged stage by stage: the puzzle's host runs the shader's three kernels
in turn (``checking.pipeline``), the whole pass is checked against a stable sort by the digit, and
a failed test names the first stage that differs from NumPy's version of it on the inputs it got."""

from __future__ import annotations

import contextlib
import io

import mlx.core as mx
import numpy as np
import pytest

from metal_puzzles.checking import CaseStatus, PuzzleStatus, check_source, run_case
from metal_puzzles.checking.pipeline import Buffer, Pipeline, PipelineRun, Stage
from metal_puzzles.puzzles import get_puzzle, solution_source
from metal_puzzles.puzzles.part5.radix_pass import DEBUGGING, PIPELINE, SETUP

PUZZLE = get_puzzle("radix_pass")
SOLUTION = solution_source(PUZZLE)


def flat(report: str) -> str:
    return " ".join(report.split())


def planted(old: str, new: str) -> str:
    assert old in SOLUTION
    return SOLUTION.replace(old, new)


def test_the_spec_is_a_stable_sort_by_the_digit_on_every_test():
    for case in PUZZLE.cases(seed=9):
        keys, shift, n = case.inputs
        want = keys[np.argsort((keys >> shift) & 15, kind="stable")]
        got = np.asarray(PUZZLE.spec(*(mx.array(x) for x in case.inputs)))
        assert np.array_equal(got, want), case.label
        assert int(n) == keys.size, case.label


def test_the_reference_passes_and_says_nothing_about_stages():
    result = check_source(PUZZLE, SOLUTION)
    assert result.passed, result.report()
    run = result.outcomes[0].run
    assert isinstance(run, PipelineRun) and [c.stage.kernel for c in run.checks] == ["histogram", "scan", "scatter"]
    assert all(c.ok for c in run.checks) and run.diagnosis() is None


def test_the_template_fails_in_the_scatter_and_the_check_names_the_scan():
    """The symptom (out-of-bounds writes, unwritten outputs) is the scatter's; the cause is the
    inclusive scan, and the report says so with both sets of offsets."""
    result = check_source(PUZZLE, PUZZLE.template)
    assert result.status == PuzzleStatus.FINDINGS
    report = flat(result.report())
    assert "out-of-bounds: line 50" in report and "unwritten-output" in report
    assert ("Where: stage by stage (each kernel against NumPy on the inputs it received), 'histogram' matches NumPy, "
            "'scan' does not: it writes offsets = [3, 3, 6, 7, 7, 11, 11, 12, 15, 15, 19, 19, 19, 23, 23, 24] where "
            "NumPy's exclusive scan of your histogram, np.cumsum(hist) - hist, gives [0, 3, 3, 6, 7, 7, 11, 11, 12, "
            "15, 15, 19, 19, 19, 23, 23]. Fix the kernel 'scan'.") in report
    # Fixing the stage the report names passes.
    assert check_source(PUZZLE, PUZZLE.template.replace("c <= b", "c < b")).passed


@pytest.mark.parametrize(("old", "new", "stage"), [
    # The histogram forgets the shift: it counts the lowest digit.
    ("atomic_fetch_add_explicit(&hist[digit_of(keys[i], shift)]", "atomic_fetch_add_explicit(&hist[keys[i] & 15]",
     "histogram"),
    # The scatter ranks a key among the later keys of its digit: sorted by digit, but not stable.
    ("for (uint j = 0; j < i; j++) {", "for (uint j = i + 1; j < n; j++) {", "scatter"),
])
def test_the_check_names_the_stage_that_is_wrong(old, new, stage):
    result = check_source(PUZZLE, planted(old, new))
    assert not result.passed
    visible = result.outcomes[0]
    assert visible.run.wrong_stage.stage.kernel == stage
    report = flat(result.report())
    assert f"'{stage}' does not" in report and f"Fix the kernel '{stage}'." in report


def test_an_unstable_scatter_is_wrong_without_any_finding():
    """Reversed equal digits: every key inside out, every element written once."""
    result = check_source(PUZZLE, planted("for (uint j = 0; j < i; j++) {", "for (uint j = i + 1; j < n; j++) {"))
    visible = result.outcomes[0]
    assert visible.status == CaseStatus.WRONG and not visible.findings
    keys = visible.case.inputs[0]
    assert sorted(np.asarray(visible.yours).tolist()) == sorted(keys.tolist())


def test_a_stage_that_does_not_finish_ends_the_pipeline_there():
    endless = planted("for (uint c = 0; c < b; c++) {", "for (uint c = 0; c < b; c += 0) {")
    result = check_source(PUZZLE, endless)
    visible = result.outcomes[0]
    assert visible.stopped is not None and visible.run.kernel_name == "scan"
    assert [c.stage.kernel for c in visible.run.checks] == ["histogram"]
    assert "did not finish" in flat(result.report())


def test_a_kernel_the_host_cannot_bind_is_an_error_naming_the_index():
    """As in Part IV: the host binds by index; a stage declaring its output elsewhere fails clearly."""
    moved = planted("device uint* offsets [[buffer(1)]],\n                 uint b", "device uint* offsets [[buffer(2)]],\n"
                    "                 uint b")
    result = check_source(PUZZLE, moved)
    assert result.status == PuzzleStatus.RUNTIME_ERROR
    assert "[[buffer(1)]]" in flat(result.report()) and "scan" in flat(result.report())


def test_a_compile_error_is_reported_as_one():
    result = check_source(PUZZLE, planted("uint rank = 0;", "uint rank = 0"))
    assert result.status == PuzzleStatus.COMPILE_ERROR


def test_the_diagram_and_the_record_are_the_last_stages():
    run = run_case(PUZZLE.kernel(SOLUTION), PUZZLE.visible, PUZZLE.launch_options, trace=True)
    assert run.kernel_name == "scatter" and run.trace is not None
    assert run.output_names == ["out"] and run.counts.max()["global_writes"] == 1


def test_the_book_cell_checks_the_histogram_against_numpy():
    """The cell's stage-by-stage lines run as written, with the template's shader and the solution's."""
    from metal_puzzles import MetalKernel

    for source, verdict in ((PUZZLE.template, "histogram matches NumPy:"), (SOLUTION, "histogram matches NumPy:")):
        def radix_pass_test(keys, shift, n, source=source):
            return MetalKernel(name="radix_pass", input_names=["keys", "shift", "n"], output_names=["out"],
                               source=source)

        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(SETUP + "\n" + DEBUGGING, {"mx": mx, "radix_pass_test": radix_pass_test})  # noqa: S102 (the book's cell)
        assert printed.getvalue().startswith(verdict)
        assert "[3 0 3 1 0 4 0 1 3 0 4 0 0 4 0 1]" in printed.getvalue()


def test_a_pipeline_refuses_stages_that_bind_arrays_it_lacks():
    stage = PIPELINE.stages[1]
    with pytest.raises(ValueError, match="'scan' binds or writes arrays the pipeline lacks"):
        Pipeline(("keys",), "out", (Buffer("hist", lambda case: (16,), "uint32"),),
                 (Stage("scan", ("hist", "offsets"), "offsets", stage.geometry, stage.reference, ""),))


def test_the_notebooks_problem_checks_the_pipeline_with_the_puzzles_output_type():
    """The book's cell passes no output_dtype: MetalProblem takes the puzzle's (uint32 keys; the
    scatter's 'device uint* out' cannot take the float32 MLX would otherwise allocate)."""
    from metal_puzzles import MetalKernel, MetalProblem

    def radix_pass_test(keys, shift, n):
        return MetalKernel(name="radix_pass", input_names=["keys", "shift", "n"], output_names=["out"],
                           source=SOLUTION)

    keys, shift, n = (mx.array(x) for x in PUZZLE.visible.inputs)
    problem = MetalProblem(PUZZLE.title, radix_pass_test, [keys, shift, n], (24,), grid=(32, 1, 1),
                           threadgroup=(16, 1, 1), spec=PUZZLE.spec)
    assert problem.output_dtype == "uint32"
    assert problem.check(quiet=True).passed


def test_a_shader_without_a_stages_kernel_is_an_error_naming_it():
    result = check_source(PUZZLE, planted("kernel void scan(", "kernel void prefix_scan("))
    assert result.status == PuzzleStatus.RUNTIME_ERROR
    assert "the shader has no kernel named 'scan' (kernels: histogram, prefix_scan, scatter)" in result.report()
