"""A learner's mistakes read as a compiler's errors, never as the simulator's tracebacks: in
show(), check() and explore() of a problem, in a kernel's own call, in a script and in IPython;
and errors in a source string written in the learner's function also name that function's line."""

from __future__ import annotations

import contextlib
import inspect
import io
import traceback

import mlx.core as mx
import pytest

import metal_puzzles
from metal_puzzles import MetalKernel, MetalProblem
from metal_puzzles.msl import CompileError

TYPO_LINE = 3  # the line of the source string with the typo


def zip_with_a_typo(a: mx.array, b: mx.array) -> MetalKernel:
    source = """
uint local_i = thread_position_in_grid.x;
out[local_i] = a[local_i] + b[locl_i];
"""
    return MetalKernel(name="zip", input_names=["a", "b"], output_names=["out"], source=source)


def literal_line() -> int:
    """The line of this file holding line TYPO_LINE of zip_with_a_typo's source string."""
    lines, first = inspect.getsourcelines(zip_with_a_typo)
    opening = next(k for k, text in enumerate(lines) if 'source = """' in text)
    return first + opening + TYPO_LINE - 1


def problem() -> MetalProblem:
    return MetalProblem("Zip", zip_with_a_typo, [mx.arange(4), mx.arange(4)], (4,), grid=(4, 1, 1),
                        spec=lambda a, b: a + b)


def where() -> str:
    return f"source:3:31 (test_learner_errors.py, line {literal_line()}): error: use of undeclared identifier " \
           "'locl_i'; did you mean 'local_i'?"


def test_check_and_show_print_the_compiler_error_with_the_learners_line(capsys):
    assert not problem().check()
    out = capsys.readouterr().out
    assert out.startswith("Failed: Zip does not compile.") and where() in out
    assert problem().show() is None
    out = capsys.readouterr().out
    assert out.startswith("# Zip") and where() in out and "Traceback" not in out


def test_explore_on_a_kernel_that_does_not_compile_prints_the_error(capsys):
    assert problem().explore() is None
    out = capsys.readouterr().out
    assert where() in out and "out[local_i] = a[local_i] + b[locl_i];" in out and "Traceback" not in out


def test_explore_of_a_kernel_whose_last_call_did_not_compile(capsys):
    kernel = zip_with_a_typo(mx.arange(4), mx.arange(4))
    with pytest.raises(CompileError):
        kernel(inputs=[mx.arange(4), mx.arange(4)], output_shapes=[(4,)], output_dtypes=[mx.float32],
               grid=(4, 1, 1), threadgroup=(4, 1, 1))
    assert metal_puzzles.explore(kernel) is None
    assert where() in capsys.readouterr().out


def test_a_function_not_returning_a_kernel_is_reported(capsys):
    bad = MetalProblem("Map", lambda a: "source", [mx.arange(4)], (4,), grid=(4, 1, 1), spec=lambda a: a + 10)
    assert bad.explore() is None
    assert "must return a MetalKernel, but it returned str" in capsys.readouterr().out


def test_a_kernel_call_raises_without_the_simulators_frames():
    kernel = zip_with_a_typo(mx.arange(4), mx.arange(4))
    with pytest.raises(CompileError) as caught:
        kernel(inputs=[mx.arange(4), mx.arange(4)], output_shapes=[(4,)], output_dtypes=[mx.float32],
               grid=(4, 1, 1), threadgroup=(4, 1, 1))
    assert str(caught.value).startswith(where())
    files = {frame.filename.rsplit("/", 1)[-1] for frame in traceback.extract_tb(caught.value.__traceback__)}
    assert files <= {"test_learner_errors.py", "kernel.py"}, files


def test_ipython_shows_the_error_alone():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    cell = '''import mlx.core as mx
from metal_puzzles import MetalKernel
def zip_test(a, b):
    source = """
uint local_i = thread_position_in_grid.x;
out[local_i] = a[local_i] + b[locl_i];
"""
    return MetalKernel(name="zip", input_names=["a", "b"], output_names=["out"], source=source)
zip_test(1, 2)(inputs=[mx.arange(4), mx.arange(4)], output_shapes=[(4,)], output_dtypes=[mx.float32],
               grid=(4, 1, 1), threadgroup=(4, 1, 1))
'''
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), contextlib.redirect_stderr(shown):
        result = shell.run_cell(cell)
    assert isinstance(result.error_in_exec, CompileError)
    text = shown.getvalue()
    # The cell's line 6 holds the typo (the string opens on line 4).
    assert text.startswith("CompileError: source:3:31 (your cell, line 6): error: use of undeclared identifier")
    assert "Traceback" not in text and "program.py" not in text and "kernel.py" not in text


def test_a_source_not_written_as_a_literal_gets_no_cell_line(capsys):
    body = "uint i = thread_position_in_grid.x;\nout[i] = a[j];"

    def built(a: mx.array) -> MetalKernel:
        return MetalKernel(name="map", input_names=["a"], output_names=["out"], source=body.upper().lower())

    MetalProblem("Map", built, [mx.arange(4)], (4,), grid=(4, 1, 1), spec=lambda a: a + 10).check()
    out = capsys.readouterr().out
    assert "source:2:12: error: use of undeclared identifier 'j'" in out


# ----------------------------------------------------------------------------- show() outside Jupyter
def test_show_in_a_script_says_how_to_save_the_diagram(capsys, tmp_path):
    def map_test(a: mx.array) -> MetalKernel:
        return MetalKernel(name="map", input_names=["a"], output_names=["out"],
                           source="uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;")

    diagram = MetalProblem("Map", map_test, [mx.arange(4)], (4,), grid=(4, 1, 1), threadgroup=(4, 1, 1)).show()
    out = capsys.readouterr().out
    assert "diagram = problem.show(); diagram.render_svg('map.svg')" in out
    diagram.render_svg(str(tmp_path / "map.svg"))
    assert "<svg" in (tmp_path / "map.svg").read_text()


def test_score_table_rows_are_labelled(capsys):
    def map_test(a: mx.array) -> MetalKernel:
        return MetalKernel(name="map", input_names=["a"], output_names=["out"],
                           source="uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;")

    MetalProblem("Map", map_test, [mx.arange(4)], (4,), grid=(4, 1, 1), threadgroup=(4, 1, 1)).show()
    lines = capsys.readouterr().out.splitlines()
    head = lines.index("Score (Max Per Thread):")
    assert lines[head + 1] == "       | Global Reads | Global Writes | Shared Reads | Shared Writes |"
    assert lines[head + 2] == "yours  |            1 |             1 |            0 |             0 |"
    assert lines[head + 3] == "budget |            1 |             1 |            0 |             0 |"


def test_show_of_a_failing_kernel_says_what_the_marks_mean(capsys):
    def guardless(a: mx.array) -> MetalKernel:
        return MetalKernel(name="guard", input_names=["a"], output_names=["out"],
                           source="uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;")

    MetalProblem("Guard", guardless, [mx.arange(4)], (4,), grid=(8, 1, 1), threadgroup=(8, 1, 1)).show()
    out = capsys.readouterr().out
    # One paragraph (broken between words, as every long line show() prints) says what the marks mean.
    paragraphs = [" ".join(p.split()) for p in out.replace("\n  ", " ").splitlines()]
    marks = [p for p in paragraphs if p.startswith("In the diagram, red marks")]
    assert len(marks) == 1 and "dashed cells labelled with the indices accessed out of bounds" in marks[0]
