"""Verdicts tell one story (issue 22): what show() notes, check(), the grader's report and
results.json say too; the advice fits the accesses; the English is right (plurals, one list
separator, lines broken between words). Each test uses a learner's kernel from the issue."""

from __future__ import annotations

import csv
import json
import re
import textwrap

import mlx.core as mx
import nbformat
import numpy as np
import pytest

from metal_puzzles import MetalKernel, MetalProblem
from metal_puzzles.checking import check_source
from metal_puzzles.checking.wording import REPORT_WIDTH, plural, wrap
from metal_puzzles.diagrams.draw import to_svg
from metal_puzzles.grading.grade import grade_submissions, write_outputs
from metal_puzzles.grading.pool import Limits
from metal_puzzles.grading.tasks import summarize
from metal_puzzles.puzzles import PARTS, PUZZLES, get_puzzle, part3, solution_source

# Map 2D with the flat-index mistake the book warns about: a thread past the last column lands
# on the next row's first element and writes the value its owner writes (a benign race).
MAP_2D_FLAT_GUARD = """\
uint col = thread_position_in_grid.x;
uint row = thread_position_in_grid.y;
uint n = a_shape[0];
if (row * n + col < n * n) {
    out[row * n + col] = a[row * n + col] + 10;
}
"""


def map_2d_problem(source: str) -> MetalProblem:
    def map_2d_test(a):
        return MetalKernel(name="map_2D", input_names=["a"], output_names=["out"], source=source)
    return MetalProblem("Map 2D", map_2d_test, [mx.arange(4).reshape((2, 2))], (2, 2), grid=(3, 3, 1),
                        threadgroup=(3, 3, 1))


def test_a_note_show_prints_is_listed_by_check(capsys):
    problem = map_2d_problem(MAP_2D_FLAT_GUARD)
    problem.show()
    shown = capsys.readouterr().out
    assert "benign race" in shown and "check(), which lists it too" in shown
    assert "for details" not in shown  # no pointer to details that check() would not give
    result = problem.check()
    printed = capsys.readouterr().out
    assert result.passed and printed.startswith("Passed: Map 2D is correct on all 4 tests")
    assert "Note from the sanitizer (not counted against the verdict):" in printed
    assert "benign race" in printed and "line 5" in printed
    assert len(result.sanitizer_notes) == 1  # the same race on three tests is one note


def test_the_grader_record_and_report_carry_the_notes(tmp_path):
    summary = summarize(check_source(get_puzzle("map_2d"), MAP_2D_FLAT_GUARD))
    assert summary["passed"] and any("benign race" in n for n in summary["sanitizer_notes"])
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        f"k = MetalKernel('map_2D', ['a'], ['out'], {MAP_2D_FLAT_GUARD!r})\n")]
    nbformat.write(nb, str(tmp_path / "learner.ipynb"))
    run = grade_submissions([tmp_path], limits=Limits(wall_seconds=60, max_steps=20_000), progress=False)
    out = tmp_path / "out"
    write_outputs(run, out)
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    record = data["students"][0]["puzzles"]["map_2d"]
    assert record["passed"] and any("benign race" in n for n in record["sanitizer_notes"])
    rows = list(csv.DictReader(open(out / "grades.csv", encoding="utf-8")))
    report = (out / rows[0]["report"]).read_text(encoding="utf-8")
    assert "## 4. Map 2D: notes (not counted)" in report and "benign race" in report


def test_counts_take_the_right_plural():
    assert plural(1, "test") == "1 test" and plural(2, "test") == "2 tests" and plural(0, "test") == "0 tests"
    # Prefix Sum (Simple)'s hidden test of a single value.
    labels = [c.label for p in PUZZLES for c in p.cases(0)]
    assert not [label for label in labels if " 1 random values" in label or " 1 values" in label]


def test_no_hidden_test_is_listed_twice():
    for p in PUZZLES:
        labels = [c.label for c in p.cases(0)]
        assert len(labels) == len(set(labels)), (p.number, labels)


def test_one_separator_in_also_failing():
    # Dot Product summed without a barrier: several tests fail; labels hold commas, so the list
    # is separated by semicolons alone.
    source = """\
threadgroup float cache[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
cache[i] = a[i] * b[i];
if (i == 0) {
    float s = 0;
    for (uint k = 0; k < THREADGROUP_MEM_SIZE; k++) { s += cache[k]; }
    out[0] = s;
}
"""
    report = check_source(get_puzzle("dot_product"), source).report()
    also = next(line for line in report.splitlines() if line.startswith("Also failing:"))
    assert ", ..." not in also and "; " in also


def test_a_condition_is_said_once():
    # Occupancy's hidden test labelled '... a partial last threadgroup' poses just that.
    from metal_puzzles.checking.verdict import CaseStatus, Outcome, _note_line
    case = next(c for c in get_puzzle("lookup_occupancy").cases(0) if c.beyond and c.beyond[0] in c.label)
    line = _note_line(Outcome(case, CaseStatus.WRONG))
    assert line.count("a partial last threadgroup") == 1, line


def test_long_report_lines_break_between_words():
    result = check_source(get_puzzle("map_2d"), MAP_2D_FLAT_GUARD)
    (note,) = result.sanitizer_notes
    lines = result.report().splitlines()
    start = lines.index(next(line for line in lines if line.startswith("- race:")))
    block = lines[start:start + len(wrap("- " + note))]
    assert all(len(line) <= REPORT_WIDTH for line in lines)
    assert len(block) > 1 and " ".join(line.strip() for line in block) == "- " + note  # no word cut
    assert wrap("429496 / 7295 " * 20, width=30) == textwrap.wrap("429496 / 7295 " * 20, width=30,
                                                                   subsequent_indent="  ", break_long_words=False,
                                                                   break_on_hyphens=False)


def _simulated(source: str, n: int, group: int):
    import warnings

    import numpy as np

    from metal_puzzles.msl import simulate
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return simulate("k", ["a"], ["out"], source, inputs=[np.arange(n, dtype=np.float32)], output_shapes=[(n,)],
                        output_dtypes=["float32"], grid=(n, 1, 1), threadgroup=(group, 1, 1), sanitize="warn")


def test_marks_count_threads_in_the_right_plural():
    from metal_puzzles.diagrams.marks import finding_sites
    # Two threads read past the end: 'and 1 other thread'.
    two = finding_sites(_simulated("uint i = thread_position_in_grid.x;\nout[i] = a[i + 2];\n", 8, 8))
    assert any("(and 1 other thread)" in s.summary for s in two), [s.summary for s in two]
    # Thread 7 alone skips the barrier: it 'never reaches' it.
    source = ("uint i = thread_position_in_grid.x;\nif (i < 7) {\n    threadgroup_barrier(mem_flags::mem_threadgroup);\n"
              "}\nout[i] = a[i];\n")
    one = finding_sites(_simulated(source, 8, 8))
    assert any("never reaches the barrier" in s.summary for s in one), [s.summary for s in one]


# Prefix Sum (Simple) with the two barrier mistakes of a scan: one statement reading and writing
# shared memory, and a loop whose body ends without a barrier.
SCAN_ONE_STATEMENT = """\
threadgroup float cache[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
cache[local_i] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint offset = 1; offset < THREADGROUP_MEM_SIZE; offset *= 2) {
    if (local_i >= offset) {
        cache[local_i] += cache[local_i - offset];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (local_i == THREADGROUP_MEM_SIZE - 1) {
    out[threadgroup_position_in_grid.x] = cache[local_i];
}
"""

SCAN_NO_BARRIER_AT_LOOP_END = """\
threadgroup float cache[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
cache[local_i] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint offset = 1; offset < THREADGROUP_MEM_SIZE; offset *= 2) {
    float v = 0;
    if (local_i >= offset) {
        v = cache[local_i - offset];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    cache[local_i] += v;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (local_i == THREADGROUP_MEM_SIZE - 1) {
    out[threadgroup_position_in_grid.x] = cache[local_i];
}
"""


def first_race(source: str, pid: str = "prefix_sum_simple"):
    result = check_source(get_puzzle(pid), source)
    return next(f for f in result.findings if f.kind == "race")


def test_one_statement_race_says_register_barrier_write():
    race = first_race(SCAN_ONE_STATEMENT)
    assert race.pos.line == race.other_pos.line == 8
    assert "read into a register, barrier, then write" in race.message
    assert "between the two accesses (line 8 and line 8)" not in race.message
    assert "cache[1] (and 5 more elements)" in race.message  # offset 1: threads 1 to 6 overwrite what 2 to 7 read


def test_loop_carried_race_says_barrier_at_the_end_of_the_loop_body():
    race = first_race(SCAN_NO_BARRIER_AT_LOOP_END)
    assert (race.other_pos.line, race.pos.line) == (12, 9)
    assert "at the end of the loop body, before the next iteration's reads" in race.message
    assert "(and 5 more elements)" in race.message


# ----------------------------------------------------------------------------- the book's text (item 10)
ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def book_markdown() -> str:
    nb = nbformat.read(str(ROOT / "lib" / "metal_puzzles" / "notebooks" / "puzzles.ipynb"), as_version=4)
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def test_the_readme_counts_the_catalogue():
    import re
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    parts = {part.number: len(part.entries) for part in PARTS}
    match = re.search(r"The book has (\d+) entries: (\d+) in Part I, (\d+) in the debugging part, (\d+) in Part II"
                      r" .*?, (\d+) in the bonus\s+section, (\d+) in Part III,\s+(\d+) in Part IV\s+and (\d+) in Part V",
                      readme, re.S)
    assert match, "README's count of the book's entries"
    assert [int(g) for g in match.groups()] == [len(PUZZLES), *(parts[k] for k in range(1, 8))]  # reading order
    assert "**Bonus, SIMD-groups and layer norm**" in readme and "33 puzzles" not in readme


def test_the_book_says_outputs_have_no_shape_and_what_part_iii_templates_are():
    text = book_markdown()
    assert "outputs get no `out_shape`" in text
    assert "is a *correct* kernel that is slow" not in text  # III.1 to III.7 all start from FILL ME IN
    assert all("FILL ME IN" in p.template for p in part3.PART_III.puzzles)
    assert all(not check_source(p, p.template).correct for p in PUZZLES if p.number in ("III.1", "III.7"))


def test_show_after_a_compile_error_says_it_returns_none(capsys):
    problem = map_2d_problem("uint col = thread_position_in_grid.x\nout[col] = a[col];\n")
    assert problem.show() is None
    out = capsys.readouterr().out
    assert "error" in out and "show() returns None" in out


def test_explore_outside_jupyter_says_it_needs_jupyter(capsys):
    map_2d_problem(MAP_2D_FLAT_GUARD).explore()
    assert "explore() is interactive and needs Jupyter" in capsys.readouterr().out


# ----------------------------------------------------------------------------- shapes (item 5)
def test_a_shape_mismatch_in_the_finale_names_the_cause():
    # II.10a with None for the index arrays' cotangents, the mistake the book's text warns about.
    from puzzles.part2.test_part2 import notebook_scope, solution
    scope = notebook_scope()
    exec(solution("mvmr_autodiff").replace(
        "return da, mx.zeros_like(a_idx), db, mx.zeros_like(b_idx), mx.zeros_like(o_idx), None",
        "return da, None, db, None, None, None"), scope)
    report = " ".join(scope["problem"].check(quiet=True).report().split())
    assert "shape (4, 2, 2), but the reference's is (3, 2, 3)" in report
    assert "is the shape of the cotangent" in report
    assert "mx.zeros_like(...) for each index array" in report and "a None in place of an array shifts" in report


def test_an_outputs_shape_is_not_suggested_as_another_name():
    # VVOR-style kernel asking for its output's shape: the fix is the rule, not 'dy_shape'.
    import numpy as np

    from metal_puzzles.msl import CompileError, simulate
    source = "uint i = thread_position_in_grid.x;\nif (i < dx_shape[0]) {\n    dx[i] = dy[i];\n}\n"
    with pytest.raises(CompileError) as err:
        simulate("k", ["dy"], ["dx"], source, inputs=[np.ones(4, np.float32)], output_shapes=[(4,)],
                 output_dtypes=["float32"], grid=(4, 1, 1), threadgroup=(4, 1, 1))
    message = str(err.value)
    assert "did you mean 'dy_shape'" not in message
    assert "'dx' is an output, and outputs get no _shape" in message


# ----------------------------------------------------------------------------- endless loops (item 3)
ENDLESS_MAP = "uint i = thread_position_in_grid.x;\nwhile (i < 10) { i = i * 1; }\nout[i] = 1;\n"


def map_problem(source: str) -> MetalProblem:
    def map_test(a):
        return MetalKernel(name="map", input_names=["a"], output_names=["out"], source=source)
    return MetalProblem("Map", map_test, [mx.arange(4)], (4,), grid=(4, 1, 1), threadgroup=(4, 1, 1))


def test_an_endless_loop_names_a_thread_its_line_and_values():
    result = check_source(get_puzzle("map"), ENDLESS_MAP)
    (finding,) = [f for f in result.outcomes[0].findings if f.kind == "step-budget"]
    assert finding.threads and finding.threads[0]["grid"] == (0, 0, 0)
    assert "thread 0 (and 3 other threads) is still in the loop at line 2" in finding.message
    assert "its variables last held i = 0" in finding.message
    report = " ".join(result.report().split())
    assert "Budget:" not in report and "not compared: the kernel did not finish" in report
    assert result.counts_max == {}  # nothing counted from a run that did not finish
    assert "Also failing" not in report and "(3 more tests not run: the kernel did not finish this one" in report
    record = summarize(result)
    assert record["counts_max"] == {} and record["tests"][0]["counts_max"] is None


def test_show_of_an_endless_loop_prints_no_counts_and_marks_the_thread(capsys):
    diagram = map_problem(ENDLESS_MAP).show()
    out = capsys.readouterr().out
    assert "Score (Max Per Thread)" not in out and "No score table: the kernel did not finish" in out
    assert "a ringed swatch marks a thread involved" in " ".join(out.split())
    assert "thread 0 never leaves the loop at line 2" in to_svg(diagram)


# ----------------------------------------------------------------------------- over budget (item 4)
GUARD_READ_TWICE = ("uint i = thread_position_in_grid.x;\nif (i < a_shape[0]) {\n  float x = a[i];\n"
                    "  out[i] = x + a[i] - x + 10;\n}\n")


def test_over_budget_names_the_thread_and_its_reads():
    result = check_source(get_puzzle("guard"), GUARD_READ_TWICE)
    assert result.correct and not result.within_budget
    (sentence,) = result.over_budget
    assert sentence.startswith("uses 2 global reads per thread; this puzzle needs at most 1")
    # Two reads listed, as counted (a_shape, a parameter MLX adds, is not a counted read).
    assert "reads a[0] (line 3) and a[0] (line 4)" in sentence and "a_shape" not in sentence
    assert summarize(result)["over_budget"] == [sentence]  # the grader's record says the same


def test_show_and_check_give_one_simd_efficiency(capsys):
    # III.4 with the template's own hint, i = t: correct, but every SIMD-group runs both loops.
    p = get_puzzle("uniform_branches")
    source = p.template.replace("uint i = 0;", "uint i = t;")

    def uniform_branches_test(a):
        return MetalKernel(name="uniform_branches", input_names=["a"], output_names=["out"], source=source,
                           header=p.header)
    a = (mx.arange(120) % 8 - 4).astype(mx.float32) / 2  # the notebook's visible test
    problem = MetalProblem("Uniform Branches", uniform_branches_test, [a], (120,), grid=p.visible.grid,
                           threadgroup=p.visible.threadgroup)
    problem.show()
    shown = capsys.readouterr().out
    row = next(line for line in shown.splitlines() if line.startswith("yours") and "%" in line)
    shown_simd = [cell.strip() for cell in row.strip("|").split("|")][4]
    result = problem.check(quiet=True)
    (sentence,) = [s for s in result.over_budget if "SIMD-group lanes busy" in s]
    assert sentence.startswith(f"keeps {shown_simd} of its SIMD-group lanes busy on the visible test"), (shown_simd,
                                                                                                      sentence)


def test_simdgroup_matmul_reads_advice_fits_the_puzzle():
    from metal_puzzles.puzzles.part3.simdgroup_matmul import LANE_BY_LANE
    result = check_source(get_puzzle("simdgroup_matmul"), LANE_BY_LANE)
    (sentence,) = result.over_budget
    assert "later pass" not in sentence
    assert "simdgroup_load(m, p, n)" in sentence and "row length" in sentence


# ----------------------------------------------------------- one wrap, where the text is shown
_RACY_DOT = """
threadgroup float shared[8];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
shared[local_i] = a[i] * b[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint s = 4; s > 0; s /= 2) {
    if (local_i < s) {
        shared[local_i] += shared[local_i + s];
    }
}
if (local_i == 0) {
    out[0] = shared[0];
}
"""


def test_a_report_for_a_page_keeps_each_paragraph_on_one_line():
    """check() in a notebook: the page wraps the verdict to the output's width, so the report it
    gets has one line a paragraph (a report wrapped at 100 was wrapped again in a narrower
    output). Wrapped at 100 as before, it is the same text, line for line."""
    from metal_puzzles.checking.wording import report_width

    result = check_source(get_puzzle("dot_product"), _RACY_DOT)
    wrapped, paragraphs = result.report(), result.report(width=None)
    race = next(line for line in paragraphs.splitlines() if line.lstrip().startswith("race:"))
    assert len(race) > 2 * REPORT_WIDTH and "\n" not in race
    lines, wrapped_lines = paragraphs.splitlines(), wrapped.splitlines()
    assert len(lines) < len(wrapped_lines)
    # (A line that is not prose, such as the test's heading, is the same in both, at any length.)
    rewrapped = [out for line in lines
                 for out in (wrap(line.lstrip(), indent=line[:len(line) - len(line.lstrip())])
                             if len(line) > REPORT_WIDTH and line not in wrapped_lines else [line])]
    assert rewrapped == wrapped_lines
    at_60 = result.report(width=60).splitlines()
    assert len(at_60) > len(wrapped_lines) and all(len(line) <= 60 or line in lines for line in at_60)
    with report_width(None):  # the width holds while the report is written, and only then
        assert wrap("word " * 40) == [("word " * 40).strip()]
    assert len(wrap("word " * 40)) == 3


def test_a_report_as_html_wraps_in_the_page_with_hanging_indents():
    from metal_puzzles.checking.wording import report_html

    page = report_html("Failed: <b> & co\n\n  race: a long paragraph\n    table   row")
    lines = re.findall(r"<div class='mp-report-line' style='([^']*)'>(.*?)</div>", page)
    assert [text for _, text in lines] == ["Failed: &lt;b&gt; &amp; co", "&#160;", "race: a long paragraph",
                                           "table   row"]
    # Each line wraps (pre-wrap keeps aligned spaces) and hangs 2 characters under its first line.
    assert all("white-space: pre-wrap" in style and "text-indent: -2ch" in style for style, _ in lines)
    assert [re.search(r"padding-left: (\d+)ch", style).group(1) for style, _ in lines] == ["2", "2", "4", "6"]


def test_check_prints_at_the_terminals_width_and_shows_a_page_its_paragraphs(monkeypatch, capsys):
    """Outside Jupyter, check() prints its verdict wrapped to the terminal (at most 100
    columns; a pipe or a capture gets 100); in Jupyter it displays the paragraphs one line each,
    as text and as HTML, with the witness the grader reads."""
    import io

    import metal_puzzles.notebook.problem as problem_module
    from metal_puzzles.checking.witness_record import METADATA_KEY
    from metal_puzzles.checking.wording import terminal_width

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("COLUMNS", "60")
    assert terminal_width(Terminal()) == 60 and terminal_width(io.StringIO()) == REPORT_WIDTH
    monkeypatch.setenv("COLUMNS", "200")
    assert terminal_width(Terminal()) == REPORT_WIDTH

    puzzle = get_puzzle("dot_product")
    problem = MetalProblem(
        puzzle.title, lambda a, b: MetalKernel(name=puzzle.kernel_name, input_names=["a", "b"],
                                               output_names=["out"], source=_RACY_DOT),
        [mx.arange(8, dtype=mx.float32), mx.arange(8, dtype=mx.float32)], (1,), (8, 1, 1), (8, 1, 1),
        spec=lambda a, b: np.array([np.dot(a, b)]))
    monkeypatch.setattr(problem_module, "terminal_width", lambda: 60)
    result = problem.check()
    printed = capsys.readouterr().out
    assert printed.strip() == result.report(width=60).strip() and "race:" in printed
    shown = []
    monkeypatch.setattr(problem_module, "_shows_rich_output", lambda: True)
    monkeypatch.setattr("IPython.display.display", lambda data, **kw: shown.append((data, kw)))
    result = problem.check()
    ((data, kw),) = shown
    assert data["text/plain"] == result.report(width=None)
    assert "mp-report-line" in data["text/html"] and "race: line 9" in data["text/html"]
    assert kw["metadata"][METADATA_KEY]["check"]["kernel"] == puzzle.kernel_name


def test_a_verdict_shown_by_itself_in_a_notebook_is_wrapped_once(monkeypatch, capsys):
    """A CheckResult displayed on its own (``result`` as a cell's last line, or check_source's
    verdict) shows as check() does in Jupyter: paragraphs one line each, as text and HTML, which
    the page wraps once; not printed at 100 columns for the page to wrap again. One that check()
    has already shown is not shown twice."""
    from IPython.core.formatters import DisplayFormatter

    import metal_puzzles.notebook.problem as problem_module

    class Shell:
        display_formatter = DisplayFormatter()

    shell = Shell()
    problem_module.register_verdict_display(shell)
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda data, **kw: shown.append(data))
    result = check_source(get_puzzle("dot_product"), _RACY_DOT)
    assert shell.display_formatter.ipython_display_formatter(result)
    ((data,),) = [shown]
    assert data["text/plain"] == result.report(width=None) and "mp-report-line" in data["text/html"]
    assert capsys.readouterr().out == ""
    result.printed = True
    shown.clear()
    shell.display_formatter.ipython_display_formatter(result)
    assert shown == [] and capsys.readouterr().out == ""


def test_a_verdict_shown_in_a_terminal_is_printed_at_its_width(monkeypatch, capsys):
    import metal_puzzles.checking.verdict as verdict_module

    monkeypatch.setattr(verdict_module, "terminal_width", lambda: 60)
    result = check_source(get_puzzle("dot_product"), _RACY_DOT)
    result._ipython_display_()
    assert capsys.readouterr().out.strip() == result.report(width=60).strip()


def test_a_problems_grid_is_three_sizes_and_a_fourth_is_refused():
    """MLX's metal_kernel takes a grid and a threadgroup of three sizes: fewer are the leading
    ones (the rest 1), and more are refused by name rather than failing later in a launch."""
    puzzle = get_puzzle("map")

    def kernel(a):
        return MetalKernel(name=puzzle.kernel_name, input_names=["a"], output_names=["out"],
                           source="out[thread_position_in_grid.x] = a[thread_position_in_grid.x] + 10;")

    problem = MetalProblem(puzzle.title, kernel, [mx.arange(4, dtype=mx.float32)], (4,), (4,), (4, 1),
                           spec=lambda a: a + 10)
    assert (problem.grid, problem.threadgroup) == ((4, 1, 1), (4, 1, 1))
    assert problem.check(quiet=True).passed
    with pytest.raises(ValueError, match=r"grid has 4 dimensions; metal_kernel takes 3"):
        MetalProblem(puzzle.title, kernel, [mx.arange(4, dtype=mx.float32)], (4,), (4, 1, 1, 1), (4, 1, 1))


def test_a_verdict_and_an_unchecked_status_are_two_enums_sharing_no_value() -> None:
    """The grader's status column holds a checked puzzle's verdict (``checking.PuzzleStatus``) or
    what the grader says of a puzzle it did not check (``grading.results.UncheckedStatus``): two
    names for two ideas (both were PuzzleStatus), and no value that could mean either."""
    from metal_puzzles.checking import PuzzleStatus
    from metal_puzzles.grading.results import UncheckedStatus

    assert UncheckedStatus.__name__ != PuzzleStatus.__name__
    assert {s.value for s in PuzzleStatus} & {s.value for s in UncheckedStatus} == set()


def test_the_grader_s_statuses_read_as_their_values_wherever_they_are_written() -> None:
    """A status that reaches a report, a CSV cell or an f-string is its value ('missing'), as a
    verdict's is, never the member's name ('UncheckedStatus.MISSING', what ``(str, Enum)`` gives
    on Python 3.11 and later)."""
    import csv
    import io

    from metal_puzzles.checking import PuzzleStatus
    from metal_puzzles.grading.results import StudentStatus, UncheckedStatus

    for status in (*PuzzleStatus, *UncheckedStatus, *StudentStatus):
        cell = io.StringIO()
        csv.writer(cell).writerow([status])
        assert (str(status), f"{status}", f"{status:>1}", cell.getvalue().strip()) == (status.value,) * 4


def test_every_status_the_grader_writes_has_words_in_its_status_column() -> None:
    """A new verdict or unchecked status without words would show as its raw value in the
    gradebook, the check table and Gradescope."""
    from metal_puzzles.checking import PuzzleStatus
    from metal_puzzles.grading.report import STATUS_TEXT, status_text
    from metal_puzzles.grading.results import UncheckedStatus

    assert set(STATUS_TEXT) == {*PuzzleStatus, *UncheckedStatus}
    assert status_text({"status": "not-attempted"}) == "not attempted"  # as a summary read back holds it
    assert status_text({"status": PuzzleStatus.OVER_BUDGET}) == "correct, over budget"


def _puzzle_problem(pid: str, source: str) -> MetalProblem:
    """The book's cell for a catalogue puzzle: its visible test, the learner's kernel."""
    p = get_puzzle(pid)

    def kernel(*arrays):
        return MetalKernel(name=p.kernel_name, input_names=list(p.input_names), output_names=list(p.output_names),
                           source=source, header=p.header)
    return MetalProblem(p.title, kernel, [mx.array(x) for x in p.visible.inputs], p.visible.output_shape,
                        grid=p.visible.grid, threadgroup=p.visible.threadgroup, spec=p.spec)


def test_a_learners_check_runs_its_tests_untraced():
    """A verdict needs no trace: the notebook's check() ran every test traced, which on V.9's hidden
    tests (attention over 520 keys, every partial sum's sources kept) took 298 s of CPU for the
    reference solution, where untraced it takes seconds (benchmarks/bench_part5_checks.py)."""
    result = _puzzle_problem("prefill_attention", solution_source(get_puzzle("prefill_attention"))).check(quiet=True)
    assert result.passed
    assert [o.run.trace for o in result.outcomes] == [None] * len(result.outcomes)


def test_an_over_budget_check_still_explains_its_counts_from_a_traced_run():
    """What a trace is for in a verdict: the counts over budget, explained from a traced rerun of
    the test where they peak."""
    p = get_puzzle("dot_product")
    twice = solution_source(p).replace("a[i] * b[i]", "a[i] * b[i] + 0.0f * a[i]")
    assert twice != solution_source(p)
    result = _puzzle_problem("dot_product", twice).check(quiet=True)
    assert result.correct and not result.within_budget
    assert result.count_details and all(o.run.trace is None for o in result.outcomes)
