"""show()'s score and cost tables: text in a terminal, HTML tables in Jupyter (issue 22, item 7)."""

from __future__ import annotations

import re

import IPython.display
import mlx.core as mx

from metal_puzzles.host.kernel import MetalKernel
from metal_puzzles.notebook import problem as problem_module
from metal_puzzles.notebook.problem import MetalProblem
from metal_puzzles.notebook.tables import OVER_STYLE, Table, row
from metal_puzzles.puzzles import get_puzzle, solution_kernel

MAP_TWICE = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + a[i];"  # two global reads: over budget


def map_problem(source: str) -> MetalProblem:
    def map_test(a: mx.array) -> MetalKernel:
        return MetalKernel(name="map", input_names=["a"], output_names=["out"], source=source)

    return MetalProblem("Map", map_test, [mx.arange(4)], (4,), grid=(4, 1, 1), threadgroup=(4, 1, 1))


def shown_in_jupyter(problem: MetalProblem, monkeypatch) -> list[object]:
    displayed: list[object] = []
    monkeypatch.setattr(problem_module, "_shows_rich_output", lambda: True)
    monkeypatch.setattr(IPython.display, "display", displayed.append)
    problem.show()
    return displayed


def test_text_form_keeps_labels_and_right_aligned_figures():
    t = Table(("Global Reads", "Atomics"), (row("yours", ["12", "0"]), row("budget", ["1", "-"])), above=("# X",))
    assert t.text().splitlines() == ["# X",
                                     "       | Global Reads | Atomics |",
                                     "yours  |           12 |       0 |",
                                     "budget |            1 |       - |"]


def test_show_in_jupyter_displays_the_score_table_as_html_and_prints_no_text_table(monkeypatch, capsys):
    displayed = shown_in_jupyter(map_problem(MAP_TWICE), monkeypatch)
    assert "Score (Max Per Thread):" not in capsys.readouterr().out
    (table,) = [d for d in displayed if isinstance(d, Table)]
    page = table._repr_html_()
    assert "<table>" in page and "<th style='text-align:right'>Global Reads</th>" in page
    cells = re.findall(r"<tr><th style='text-align:left'>(\w+)</th>(.*?)</tr>", page)
    assert [label for label, _ in cells] == ["yours", "budget"]
    yours = re.findall(r"<td style='([^']*)'>([^<]*)</td>", cells[0][1])
    # Two global reads against a budget of one: that figure, and only it, is set off.
    assert [(v, OVER_STYLE in s) for s, v in yours] == [("2", True), ("1", False), ("0", False), ("0", False)]


def test_part_three_displays_score_and_cost_tables(monkeypatch):
    p = get_puzzle("padded_transpose")
    problem = MetalProblem(p.title, lambda a: solution_kernel(p), [mx.array(x) for x in p.visible.inputs],
                           p.visible.output_shape, p.visible.grid, p.visible.threadgroup)
    tables = [d for d in shown_in_jupyter(problem, monkeypatch) if isinstance(d, Table)]
    assert len(tables) == 2
    cost = tables[1]._repr_html_()
    assert "Cost on a model of an Apple GPU" in cost and "<th style='text-align:left'>budget</th>" in cost
    assert "Time (a roofline model)" in cost
    assert OVER_STYLE not in cost  # the reference solution is within every budget
