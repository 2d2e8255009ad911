"""An array of three or more dimensions whose blocks side by side would be wider than a section
stacks them, one under another, each labelled with its leading index: V.4's k and v, (2, 5, 32),
made its explorer diagram 2,217 px wide."""

import numpy as np

from metal_puzzles.diagrams.draw import draw_run, lay_out_run, to_svg
from metal_puzzles.diagrams.model import make_view
from metal_puzzles.diagrams.style import INDEX_H, MAX_SECTION_W
from metal_puzzles.msl import simulate

from test_draw_fold import explorer_svg, natural_width, texts

F32 = np.float32


def test_blocks_too_wide_side_by_side_stack_one_under_another():
    v = make_view(("in", "k"), "k", "input (2, 5, 32)", (2, 5, 32), np.arange(320), {})
    v.narrow(MAX_SECTION_W)
    assert v.stacked and (v.blocks, v.rows, v.cols, v.lines) == (2, 5, 32, 10)
    first, second = v.cell_box(0), v.cell_box(160)  # k[0,0,0] and k[1,0,0]
    assert second[0] == first[0]  # same column
    assert second[1] == first[1] + 5 * v.cell + INDEX_H  # under block 0, past block 1's label
    assert v.locate(161) == (1, 5, 1) and v.cell_box(319)[3] == v.y + v.top + v.grid_h
    assert v.width < v.label_w + v.margin + 32 * v.cell + 1  # one block wide, not two
    assert v.height == v.top + 10 * v.cell + INDEX_H
    labels = {label.text.text: label for label in v.labels()}
    assert labels["[1,:,:]"].text.y < second[1] and labels["[1,:,:]"].text.y > v.cell_box(159)[3]
    rows = [label.text.text for label in v.labels() if label.row is not None]
    assert rows == [str(r) for r in range(5)] * 2  # each block's own row numbers


def test_blocks_go_as_many_to_a_line_as_fit_the_lines_evenly_filled():
    # V.9's cache (2, 1, 2, 8, 8): four blocks of 8 columns, 1,130 px side by side at 34 px: two lines of two.
    v = make_view(("out", "cache"), "cache", "output (2, 1, 2, 8, 8)", (2, 1, 2, 8, 8), np.arange(256), {})
    v.narrow(MAX_SECTION_W)
    assert v.stacked and (v.across, v.lines) == (2, 16)
    boxes = [v.cell_box(b * 64) for b in range(4)]  # the first cell of each block
    assert boxes[1][1] == boxes[0][1] and boxes[1][0] == boxes[0][0] + v.block_w  # beside block 0
    assert boxes[2][0] == boxes[0][0] and boxes[2][1] == boxes[0][1] + 8 * v.cell + INDEX_H  # under it
    assert boxes[3][0] == boxes[1][0] and boxes[3][1] == boxes[2][1]
    assert v.cell_boxes()[255] == v.cell_box(255) and v.locate(255) == (3, 15, 7)
    assert v.grid_w == 2 * v.block_w - 14 and v.width <= MAX_SECTION_W + v.label_w + v.margin


def test_narrow_blocks_stay_side_by_side():
    v = make_view(("in", "x"), "x", "input (2, 3, 4)", (2, 3, 4), np.arange(24), {})
    v.narrow(MAX_SECTION_W)
    assert not v.stacked and v.cell_box(12)[1] == v.cell_box(0)[1]


def test_arrows_start_and_end_on_the_stacked_cells_of_their_elements():
    # out[b, t, d] = k[1 - b, t, 31 - d]: every arrow crosses from one stacked block to the other.
    src = "uint i = thread_position_in_grid.x;\n" \
          "uint b = i / 160, t = (i / 32) % 5, d = i % 32;\n" \
          "out[i] = k[(1 - b) * 160 + t * 32 + (31 - d)] * 2.0f;"
    k = (np.arange(320, dtype=F32) % 9 - 4) / 4
    run = simulate("kern", ["k"], ["out"], src, inputs=[k.reshape(2, 5, 32)], output_shapes=[(2, 5, 32)],
                   output_dtypes=["float32"], grid=(320, 1, 1), threadgroup=(320, 1, 1), trace=True)
    panel = lay_out_run(run).panels[0]
    views = {v.key: v for s in panel.sections for v in s}
    k_view, out_view = views[("in", "k")], views[("out", "out")]
    assert k_view.stacked and out_view.stacked
    arrows = {a.target[1]: a for a in panel.arrows}
    assert sorted(arrows) == list(range(320))
    for e in (0, 31, 159, 160, 191, 319):
        b, t, d = e // 160, (e // 32) % 5, e % 32
        source = (1 - b) * 160 + t * 32 + (31 - d)
        a = arrows[e]
        assert a.source == (("in", "k"), source)
        (sx, sy), (tx, ty) = a.points[0], a.points[-1]
        x0, y0, x1, y1 = k_view.cell_box(source)
        assert x0 <= sx <= x1 and y0 - 1 <= sy <= y1 + 1, e
        x0, y0, x1, y1 = out_view.cell_box(e)
        assert x0 <= tx <= x1 and y0 - 1 <= ty <= y1 + 1, e
    svg = to_svg(draw_run(run))
    assert "[1,:,:]" in texts(svg) and natural_width(svg) <= 1400


def test_decode_attentions_explorer_diagram_fits_a_laptops_width():
    # V.4's k and v (2, 5, 32) were drawn as two blocks side by side: 2,217 px.
    for lane in (0, 40):
        svg = explorer_svg("decode_attention", lane)
        assert natural_width(svg) <= 1400, natural_width(svg)


def test_a_grid_of_32_columns_whose_values_widen_its_cells_folds_onto_shorter_lines():
    # V.4's out, (4, 32) of values like -0.00781, was a grid of cells 48.5 px wide: 1,659 px.
    src = "uint i = thread_position_in_grid.x; out[i] = x[i] * 1.0e-3f;"
    x = (np.arange(128, dtype=F32) - 64) * np.float32(0.1234)
    run = simulate("k", ["x"], ["out"], src, inputs=[x.reshape(4, 32)], output_shapes=[(4, 32)],
                   output_dtypes=["float32"], grid=(128, 1, 1), threadgroup=(128, 1, 1), trace=True)
    panel = lay_out_run(run).panels[0]
    out_view = next(v for s in panel.sections for v in s if v.key == ("out", "out"))
    assert out_view.fold == 32 and out_view.cols < 32 and out_view.cols * out_view.cell <= MAX_SECTION_W
    assert out_view.locate(127) == (0, out_view.rows - 1, 31 % out_view.cols)
    for a in panel.arrows:
        x0, y0, x1, y1 = out_view.cell_box(a.target[1])
        tx, ty = a.points[-1]
        assert x0 <= tx <= x1 and y0 - 1 <= ty <= y1 + 1, a.target
    assert len(panel.arrows) == 128
