"""Every promise the README and the book's introduction make about verdicts, findings and compile
errors is a test here (issue 36, section 5): each reads the claim from the text itself, so that
the test fails when the claim stops being true, and the text cannot drift from what the package
prints. (The diagrams' promises, arrows to sources, are tests of their own, in test_draw*.py.)"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import mlx.core as mx
import pytest

from metal_puzzles import MetalKernel, MetalProblem
from metal_puzzles.checking import check_source
from metal_puzzles.msl.findings.registry import FindingKind
from metal_puzzles.puzzles import get_puzzle

ROOT = Path(__file__).resolve().parents[2]


def _introduction() -> str:
    spec = importlib.util.spec_from_file_location("build_notebook", ROOT / "tools" / "build_notebook.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.INTRO


INTRO = _introduction()
README = (ROOT / "README.md").read_text(encoding="utf-8")
SOLUTIONS = ROOT / "solutions"


def flat(text: str) -> str:
    return " ".join(text.split())


def text_blocks(markdown: str) -> list[str]:
    return re.findall(r"```text\n(.*?)```", markdown, flags=re.S)


# ----------------------------------------------------------------------------- README
def test_the_readmes_pooling_verdict_is_what_check_prints():
    """The README's check() example: Pooling with its barrier left out (the line kept blank, as
    the line numbers show). Each stretch of the example between its '...' is in the report."""
    block = next(b for b in text_blocks(README) if b.startswith("Failed: Pooling"))
    source = (SOLUTIONS / "part1/pooling.metal").read_text(encoding="utf-8").replace(
        "threadgroup_barrier(mem_flags::mem_threadgroup);\n", "\n")
    report = flat(check_source(get_puzzle("pooling"), source).report())
    stretches = [flat(part) for part in re.split(r"^\s*\.\.\.\s*$", block, flags=re.M)]
    assert len(stretches) == 2
    for stretch in stretches:
        assert stretch in report, f"the README says:\n{stretch}\ncheck() prints:\n{report}"


def test_the_readmes_compile_error_suggests_a_near_name():
    (block,) = [b for b in text_blocks(README) if "did you mean" in b]
    assert "use of undeclared identifier 'locl_i'; did you mean 'local_i'?" in block
    report = check_source(get_puzzle("map"), "uint local_i = thread_position_in_grid.x;\nout[locl_i] = a[local_i];\n")
    assert "use of undeclared identifier 'locl_i'; did you mean 'local_i'?" in report.report()


@pytest.mark.parametrize("typo, name", [("UINT_MAXX", "UINT_MAX"), ("INFINTY", "INFINITY"), ("FLT_EPSLON", "FLT_EPSILON"),
                                        ("HALF_MAXX", "HALF_MAX"), ("thread_position_in_gird", "thread_position_in_grid"),
                                        # C's names: as near the half constant as the float one, float meant
                                        ("M_PI", "M_PI_F"), ("M_PI_2", "M_PI_2_F"), ("M_E", "M_E_F"),
                                        ("M_SQRT2", "M_SQRT2_F")])
def test_a_misspelt_builtin_constant_gets_a_suggestion(typo, name):
    """'a suggestion' (the README): near a builtin constant as near a variable of the kernel."""
    assert "and a suggestion" in flat(README)
    source = f"uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10 + 0 * float({typo} > 0);\n"
    report = check_source(get_puzzle("map"), source).report()
    assert f"use of undeclared identifier '{typo}'; did you mean '{name}'?" in report


# ----------------------------------------------------------------------------- the book's introduction
def test_the_introduction_marks_differing_positions_of_outputs_of_every_rank():
    assert "with the differing positions marked `^`" in flat(INTRO)
    one_d = check_source(get_puzzle("map"), "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 11;\n").report()
    two_d = check_source(get_puzzle("map_2d"), "uint i = thread_position_in_grid.x;\nuint j = thread_position_in_grid.y;\n"
                                               "if (i < a_shape[0] && j < a_shape[1]) {\n"
                                               "    out[j * a_shape[0] + i] = a[j * a_shape[1] + i] + 10 + (i == 1);\n"
                                               "}\n").report()

    def three_d_test(a):
        return MetalKernel(name="add_3d", input_names=["a"], output_names=["out"],
                           source="uint i = thread_position_in_grid.x;\nout[i] = a[i] + (i == 5 ? 2 : 1);\n")
    three_d = MetalProblem("Add 3D", three_d_test, [mx.arange(12, dtype=mx.float32).reshape(2, 3, 2)], (2, 3, 2),
                           grid=(12, 1, 1), threadgroup=(12, 1, 1), spec=lambda a: a + 1).check(quiet=True).report()
    for report, marked_line in ((one_d, "Spec : ["), (two_d, "Spec  row 0: ["), (three_d, "Spec  [0, 2, :]: [")):
        lines = report.splitlines()
        k = next(i for i, line in enumerate(lines) if line.lstrip().startswith(marked_line.strip()))
        assert set(lines[k + 1].strip()) <= {"^", " "} and "^" in lines[k + 1], report


def test_the_introductions_compile_error_reads_like_a_compilers():
    said = re.search(r"`source:(\d+):(\d+) \(your cell, line \d+\): error: ([^`]*)`", flat(INTRO))
    assert said is not None
    line, column, message = int(said.group(1)), int(said.group(2)), said.group(3)
    assert message == "expected ';' after expression"
    # A source string starting with a line break, as the book's do; its third line lacks its ';'.
    report = check_source(get_puzzle("map"), "\nuint i = thread_position_in_grid.x;\nout[i] = a[i] + 10\n").report()
    assert f"source:{line}:{column}: error: {message}" in report
    assert report.splitlines()[-1] == " " * (column - 1) + "^"  # the caret under the column


def test_the_introductions_out_of_bounds_finding_is_what_the_sanitizer_says():
    said = re.search(r"```\n(out-of-bounds: [^\n]*)\n```", INTRO).group(1)

    def read_past(a):
        return MetalKernel(name="read_past", input_names=["a"], output_names=["out"],
                           source="\nout[thread_position_in_grid.x] = a[thread_position_in_grid.x] + 10;\n")
    problem = MetalProblem("Read past", read_past, [mx.arange(4, dtype=mx.float32)], (8,), grid=(8, 1, 1),
                           threadgroup=(4, 1, 1), spec=lambda a: mx.concatenate([a, a]) + 10)
    assert said in flat(problem.check(quiet=True).report())


def test_the_kinds_the_introduction_lists_are_the_sanitizers():
    listed = re.search(r"The kinds you will meet:(.*?)Any finding fails", flat(INTRO)).group(1)
    names = re.findall(r"`([a-z-]+)`", listed)
    assert len(names) >= 7
    assert set(names) <= {k.value for k in FindingKind}, set(names) - {k.value for k in FindingKind}


def test_the_introductions_wrapped_index_is_explained_by_its_subtraction():
    assert "an index of `4294967295` is `-1` in unsigned arithmetic, and the message names the subtraction" in flat(INTRO)
    blur = get_puzzle("detective_blur")
    report = flat(check_source(blur, blur.template).report())
    assert "reads a[4294967295]" in report and "the index comes from 'i - 1', which is unsigned (uint) arithmetic" in report


def test_the_introductions_failed_verdict_states_its_tolerance_and_a_cause():
    """What the introduction promises of a wrong output beyond the marks."""
    intro, readme = flat(INTRO), flat(README)
    assert "the error at each differing position beside the error allowed there" in intro
    assert "a likely cause where the errors show one" in intro
    assert "each differing position's error beside the error the puzzle's tolerance allows there" in readme
    assert "a likely cause where the errors show one" in readme
    report = flat(check_source(get_puzzle("map_2d"), "uint i = thread_position_in_grid.x;\nuint j = thread_position_in_grid.y;\n"
                                                    "if (i < a_shape[0] && j < a_shape[1]) {\n"
                                                    "    out[j * a_shape[0] + i] = a[i * a_shape[1] + j] + 10;\n"
                                                    "}\n").report())
    assert re.search(r"\[0, 1\] yours 12 spec 11 error 1 allowed \S+", report)
    assert "Tolerance: |yours - spec| may be at most" in report and "Likely cause:" in report


def test_every_likely_cause_the_readme_lists_is_named_for_a_kernel_that_makes_it():
    """The README's list of likely causes, each on a kernel with that mistake, checked."""
    readme = flat(README)
    causes = re.search(r"a likely cause where the errors show one \((.*?)\)\.", readme).group(1)
    solutions = ROOT / "solutions"
    planted = {
        "one ratio everywhere from a missing constant": (
            "rms_norm", (solutions / "part5/rms_norm.metal").read_text().replace(" + EPS", ""),
            "yours is the spec's times"),
        "the spec's values in another order": (
            "map_2d", "uint i = thread_position_in_grid.x;\nuint j = thread_position_in_grid.y;\n"
                      "if (i < a_shape[0] && j < a_shape[1]) {\n    out[j * a_shape[0] + i] = a[i * a_shape[1] + j] + 10;\n}\n",
            "in another order"),
        "one place off": (
            "map", "uint i = thread_position_in_grid.x;\nout[i] = a[i > 0 ? i - 1 : 0] + 10;\n", "an index off by 1"),
        "every other index wrong from a position kept in half": (
            "rope", (solutions / "part5/rope.metal").read_text().replace("float(offset + int(l))",
                                                                         "float(half(offset + int(l)))"),
            "A position kept in half does"),
        "an input off by sqrt of a size from a scale such as attention's 1/sqrt(D) left out": (
            "decode_attention", (solutions / "part5/decode_attention.metal").read_text().replace(
                "float scale = rsqrt(float(D));", "float scale = 1.0f;"),
            "multiplied by sqrt(32)"),
    }
    # NaN from an overflow: the softmax without its maximum, a problem of its own
    # (test_numeric_verdicts.test_a_softmax_without_its_maximum_overflows_and_is_named_so).
    assert "NaN from an overflow" in causes
    for claim, (puzzle, source, said) in planted.items():
        assert claim in causes, f"the README no longer lists {claim!r}"
        report = flat(check_source(get_puzzle(puzzle), source).report())
        assert "Likely cause:" in report and said in report, f"{claim}: check() said\n{report}"


def test_the_introductions_almost_verdict_names_the_count_too_high():
    said = re.search(r"for example\s+`(it uses 2 global reads per thread; this puzzle needs at most 1)`", INTRO).group(1)
    result = check_source(get_puzzle("map"), "uint i = thread_position_in_grid.x;\nout[i] = a[i] * 0 + a[i] + 10;\n")
    assert result.report().startswith("Almost: Map is correct on all") and said in flat(result.report())
