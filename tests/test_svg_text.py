"""The compact SVG writer (svg_text): what it writes for chalk shapes."""

from __future__ import annotations

import re

from chalk import rectangle
from chalk.shapes import Path
from chalk.transform import P2
from colour import Color

from metal_puzzles.svg_text import CubicPath, diagram_svg, num


def test_numbers_are_rounded_to_a_tenth_without_trailing_zeros():
    assert [num(v) for v in (12.0, 3.26, -0.04, -1.55, 1e-9)] == ["12", "3.3", "0", "-1.6", "0"]


def test_a_line_width_scales_with_its_shape_as_in_chalk():
    square = rectangle(1, 1).line_width_local(0.1).line_color(Color("red")).scale(10)
    svg = diagram_svg(square)
    assert "stroke-width='1'" in svg and "stroke='#ff0000'" in svg
    # The square's corners are folded into absolute coordinates: 10 px sides, no transform.
    assert re.search(r"d='M[\d.]+ [\d.]+l10 0 0 10 -10 0 0 -10Z'", svg) and "transform" not in svg


def test_points_on_a_straight_line_are_one_step_and_a_curve_is_one_bezier():
    line = Path.from_points([P2(0, 0), P2(1, 1), P2(2, 2), P2(40, 40)]).stroke().line_width_local(1)
    assert "l40 40'" in diagram_svg(line)
    sampled = Path.from_points([P2(0, 0), P2(5, 20), P2(30, 40)])
    curve = CubicPath(sampled.loc_trails, curve=((0, 0), (0, 20), (30, 20), (30, 40))).stroke().line_width_local(1)
    assert re.search(r"d='M[\d.]+ [\d.]+c0 20 30 20 30 40'", diagram_svg(curve))
