"""An array of three or more dimensions whose blocks side by side would be wider than a laptop's
screen stacks them, one under another, each row labelled with its block's leading index: V.4's k
and v, (2, 5, 32), made its explorer diagram 2,217 px wide."""

import numpy as np

from diagrams.test_draw_fold import explorer_svg, natural_width, texts
from metal_puzzles.diagrams.draw import draw_run, lay_out_run, to_svg
from metal_puzzles.diagrams.scene import make_view
from metal_puzzles.diagrams.style import BLOCK_GAP, INDEX_H, MAX_SECTION_W
from metal_puzzles.msl import simulate

F32 = np.float32


def test_blocks_too_wide_side_by_side_stack_one_under_another():
    v = make_view(("in", "k"), "k", "input (2, 5, 32)", (2, 5, 32), np.arange(320), {})
    v.narrow(MAX_SECTION_W)
    assert v.stacked and (v.blocks, v.rows, v.cols, v.lines) == (2, 5, 32, 10)
    first, second = v.cell_box(0), v.cell_box(160)  # k[0,0,0] and k[1,0,0]
    assert second[0] == first[0]  # same column
    assert second[1] == first[1] + 5 * v.cell + BLOCK_GAP  # under block 0
    assert v.locate(161) == (1, 5, 1) and v.cell_box(319)[3] == v.y + v.top + v.grid_h
    assert v.cell_boxes() == tuple(v.cell_box(i) for i in range(320))  # the painter's cells are the same
    assert v.width < v.label_w + v.margin + 32 * v.cell + 1  # one block wide, not two
    assert v.top == INDEX_H and v.height == v.top + 10 * v.cell + BLOCK_GAP
    # Each line is labelled left of the grid with its block's leading index and its row.
    rows = [label.text.text for label in v.labels() if label.row is not None]
    assert rows == [f"{b},{r}" for b in (0, 1) for r in range(5)]
    assert all(label.box[2] < first[0] for label in v.labels() if label.row is not None)


def test_blocks_that_fit_side_by_side_stay_side_by_side():
    # V.7's cache (2, 1, 2, 8, 8): four blocks of 8 columns, 1,130 px side by side at 34 px.
    for shape in ((2, 3, 4), (2, 1, 2, 8, 8)):
        v = make_view(("in", "x"), "x", f"input {shape}", shape, np.arange(np.prod(shape)), {})
        v.narrow(MAX_SECTION_W)
        assert not v.stacked and v.cell_box(v.rows * v.cols)[1] == v.cell_box(0)[1], shape


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
    assert "1,4" in texts(svg) and natural_width(svg) <= 1400


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


def test_no_arrow_of_decode_attentions_explorer_diagram_crosses_a_label():
    from diagrams.test_draw_arrows_clear import crossings, describe
    from metal_puzzles.checking import run_case
    from metal_puzzles.explorer.run_model import ExplorerModel
    from metal_puzzles.puzzles import get_puzzle, solution_kernel

    p = get_puzzle("decode_attention")
    model = ExplorerModel(run_case(solution_kernel(p), p.visible, p.launch_options, trace=True))
    for lane in (0, 40):  # both of threadgroup 0 (64 threads)
        drawing = lay_out_run(model.filtered_result(lane), max_groups=model.n_groups, only_group=0,
                              steady_gaps=True)
        found = [describe(a, label) for panel in drawing.panels for a, label in crossings(panel)]
        assert not found, f"{len(found)} crossings, e.g. " + "; ".join(found[:3])
