"""One name for a thread everywhere a learner reads it (issue 21 item 9): the finding's message,
check()'s verdict, the explorer's heading and the diagram's list of findings all write the grid
position first, then the place in the threadgroup ("thread (2,1) = (0,1) of threadgroup (1,0)")."""

from __future__ import annotations

import html
import re
import warnings

import mlx.core as mx
import numpy as np

from metal_puzzles import MetalKernel, MetalProblem
from metal_puzzles.diagrams.draw import draw_run, to_svg
from metal_puzzles.explorer.widgets import Explorer
from metal_puzzles.msl import simulate

# On a 3x3 grid of 2x2 threadgroups over a 2x2 array, only thread (2,1) writes past the end of
# `out` (index 1 * 2 + 2 = 4): it is thread (0,1) of threadgroup (1,0).
ONE_STRAY_WRITE = """
uint x = thread_position_in_grid.x;
uint y = thread_position_in_grid.y;
if (x < 2 && y < 2) {
    out[y * 2 + x] = a[y * 2 + x] + 10;
}
if (x == 2 && y == 1) {
    out[y * 2 + x] = 0;
}
"""
NAME = "thread (2,1) = (0,1) of threadgroup (1,0)"


def _simulated():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return simulate("k", ["a"], ["out"], ONE_STRAY_WRITE, inputs=[np.arange(4, dtype=np.float32).reshape(2, 2)],
                        output_shapes=[(2, 2)], output_dtypes=["float32"], grid=(3, 3, 1), threadgroup=(2, 2, 1),
                        trace=True, steps=True, sanitize="warn")


def test_the_finding_message_names_the_thread():
    (finding,) = _simulated().findings
    assert finding.threads[0] == {"grid": (2, 1, 0), "group": (1, 0, 0), "local": (0, 1, 0)}  # data kept as is
    assert finding.message.startswith(f"{NAME} writes out[4]")


def test_check_names_the_thread_as_the_finding_does():
    def stray(a):
        return MetalKernel(name="stray", input_names=["a"], output_names=["out"], source=ONE_STRAY_WRITE)
    problem = MetalProblem("Stray", stray, [mx.arange(4).reshape((2, 2))], (2, 2), grid=(3, 3, 1),
                           threadgroup=(2, 2, 1), spec=lambda a: a + 10)
    report = " ".join(problem.check(quiet=True).report().split())
    assert f"{NAME} writes out[4]" in report
    assert "thread (0,1,0) of" not in report  # the old scheme is gone


def test_the_explorer_heading_names_the_thread_after_a_jump_to_the_finding():
    explorer = Explorer(_simulated(), "stray")
    explorer.jump_to(1)
    assert explorer.who.value == f"<span>{html.escape(NAME)}</span>"
    assert html.escape(f"{NAME} writes out[4]") in explorer.finding_detail.value


def test_the_diagram_lists_the_finding_under_the_same_name():
    svg = to_svg(draw_run(_simulated()))
    labels = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    assert any(NAME in t and "out[4]" in t for t in labels), labels
