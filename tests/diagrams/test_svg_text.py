"""The compact SVG writer (svg_text): what it writes for chalk shapes."""

from __future__ import annotations

import re

from chalk import rectangle
from chalk.shapes import Path
from chalk.transform import P2
from colour import Color

from metal_puzzles.diagrams.svg_text import diagram_svg, num, path_batch


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
    curve = path_batch([(((0, 0), (0, 20), (30, 20), (30, 40)),)], (0, 0, 30, 40)).line_width_local(1)
    assert re.search(r"d='M[\d.]+ [\d.]+c0 20 30 20 30 40'", diagram_svg(curve))


def test_a_path_of_lines_and_curves_is_written_piece_by_piece():
    """An arrow with straight leads: a line down, a curve, a line down, each relative to its start."""
    pieces = (((0, 0), (0, 10)), ((0, 10), (0, 30), (30, 30), (30, 50)), ((30, 50), (30, 60)))
    other = (((40, 0), (40, 60)),)
    svg = diagram_svg(path_batch([pieces, other], (0, 0, 40, 60)).line_width_local(1.25))
    # One group sets the stroke; each path is one arrow.
    group = re.search(r"<g fill='none' stroke='#000000' stroke-width='1.25'>(.*?)</g>", svg).group(1)
    assert re.fullmatch(r"<path d='M[\d.]+ [\d.]+l0 10c0 20 30 20 30 40l0 10'/><path d='M[\d.]+ [\d.]+l0 60'/>", group)


def test_dots_are_one_path_of_zero_length_lines_with_round_ends():
    dots = [(((5, 5), (5, 5)),), (((9, 5), (9, 5)),)]
    svg = diagram_svg(path_batch(dots, (0, 0, 10, 10), joined=True, round_caps=True).line_width_local(4.4))
    assert re.search(r"<path d='M[\d.]+ [\d.]+l0 0M[\d.]+ [\d.]+l0 0' fill='none' stroke='#000000' "
                     r"stroke-width='4.4' stroke-linecap='round'/>", svg)


def test_a_grid_of_outlined_cells_is_a_few_lines_and_touching_fills_one_rectangle():
    from metal_puzzles.diagrams.svg_text import box_path

    cells = [(10 + 10 * c, 10 + 10 * r, 20 + 10 * c, 20 + 10 * r) for r in range(3) for c in range(4)]
    grid = diagram_svg(box_path(cells, closed=False).line_width_local(1))
    d = re.search(r"<path d='([^']*)' fill='none'[^>]*stroke-linecap='square'", grid).group(1)
    assert d.count("M") == 4 + 5  # four lines across (40 long), five down (30 long)
    assert d.count("h40") == 4 and d.count("v30") == 5
    fill = diagram_svg(box_path(cells, closed=True).fill_color(Color("#fff1b8")).line_width_local(0))
    d = re.search(r"<path d='([^']*)' fill='#fff1b8'", fill).group(1)
    assert re.fullmatch(r"M[\d.]+ [\d.]+h40v30h-40Z", d)
    apart = diagram_svg(box_path([(0, 0, 10, 10), (20, 0, 30, 10)], closed=True).line_width_local(0))
    assert re.search(r"d='M[\d.]+ [\d.]+h10v10h-10ZM[\d.]+ [\d.]+h10v10h-10Z'", apart)  # not touching: two


def test_a_batch_of_texts_is_written_as_each_text_would_be_alone():
    from metal_puzzles.diagrams.svg_text import Anchor, PlacedText, anchored_text, text_batch

    def alone(s, x, y, size, anchor):
        # A start-anchored chalk text is placed by its centre, half its width from the start.
        shift = {Anchor.START: 10.0, Anchor.END: -10.0, Anchor.MIDDLE: 0.0}[anchor]
        c = Color("#123456")
        return anchored_text(s, size, anchor, 10.0).fill_color(c).line_width_local(0).translate(x + shift, y)

    specs = [("a<b", 5.0, 6.0, 9.0, Anchor.START), ("7", 40.25, 8.0, 12.0, Anchor.MIDDLE),
             ("end", 90.0, 30.0, 7.5, Anchor.END)]
    one_by_one = [diagram_svg(alone(*spec).translate(3, 4)) for spec in specs]
    batch = text_batch([PlacedText(s, x, y, size, "#123456", anchor) for s, x, y, size, anchor in specs],
                       (0, 0, 100, 40)).translate(3, 4)
    singles = [re.findall(r"<text[^>]*>[^<]*</text>", svg)[0] for svg in one_by_one]
    # The coordinates differ by the margin each diagram gets around its own extent; the rest agrees.
    def strip(t):
        return re.sub(r" x='[^']*' y='[^']*'", "", t)
    # Separated (the explorer's page), each text is an element of its own, written as alone.
    written = re.findall(r"<text[^>]*>[^<]*</text>", diagram_svg(batch, separated=True))
    assert [strip(t) for t in written] == [strip(t) for t in singles]
    assert "a&lt;b" in written[0] and "text-anchor='end'" in written[2]
    # In a book's diagram the texts of one colour and anchor share a group that sets them.
    grouped = []
    for fill, anchor, texts in re.findall(r"<g fill='([^']*)'(?: text-anchor='(\w+)')?>(.*?)</g>", diagram_svg(batch)):
        for t in re.findall(r"<text[^>]*>[^<]*</text>", texts):
            grouped.append(t.replace(">", f" fill='{fill}'" + (f" text-anchor='{anchor}'" if anchor else "") + ">", 1))
    assert [strip(t) for t in grouped] == [strip(t) for t in singles]


def test_boxes_are_one_path_of_closed_rectangles_or_outlines():
    from metal_puzzles.diagrams.svg_text import box_path

    filled = diagram_svg(box_path([(0, 0, 10, 5), (20, 0, 30, 5)], closed=True).fill_color(Color("#00ff00"))
                         .line_width_local(0))
    assert filled.count("<path") == 1 and "fill='#00ff00'" in filled
    assert len(re.findall(r"M[\d.]+ [\d.]+h10v5h-10Z", filled)) == 2
    outline = diagram_svg(box_path([(0, 0, 4, 4)], closed=False).line_color(Color("#ff0000")).line_width_local(1))
    assert re.search(r"d='M[\d.]+ [\d.]+l4 0 0 4 -4 0 0 -4'", outline)  # a frame: one line around
    assert "fill='none'" in outline and "stroke='#ff0000'" in outline
