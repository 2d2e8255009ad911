"""A 2D array whose rows are longer than a line of cells folds each row onto lines of 32 (as a
long 1D array wraps), one row under another: V.6's run diagram was 6,578 px wide, a (2, 200)
input drawn as two lines of 200 cells."""

import re

import numpy as np

from metal_puzzles.checking import run_case
from metal_puzzles.diagrams.draw import draw_run, lay_out_run, to_svg
from metal_puzzles.diagrams.scene import make_view
from metal_puzzles.diagrams.style import FOLD_GAP, MAX_SECTION_W, WRAP
from metal_puzzles.explorer.run_model import ExplorerModel
from metal_puzzles.msl import simulate
from metal_puzzles.puzzles import get_puzzle, solution_kernel

F32 = np.float32


def natural_width(svg: str) -> int:
    return int(re.search(r"<svg [^>]*?width='(\d+)'", svg).group(1))


def texts(svg: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def test_a_long_row_folds_onto_lines_of_32_one_row_under_another():
    v = make_view(("in", "x"), "x", "input (2, 200)", (2, 200), np.arange(400), {})
    assert (v.fold, v.cols, v.rows, v.drawn, v.two_d) == (200, WRAP, 14, 400, False)
    assert v.locate(199) == (0, 6, 7) and v.locate(200) == (0, 7, 0) and v.locate(397) == (0, 13, 5)
    first, row1 = v.cell_box(0), v.cell_box(200)  # x[0, 0] and x[1, 0]
    assert row1[0] == first[0] and row1[1] == first[1] + 7 * v.cell + FOLD_GAP  # under row 0's 7 lines
    assert v.cell_box(32)[1] == first[1] + v.cell and v.cell_box(32)[0] == first[0]  # x[0, 32]: next line
    lines = [label.text.text for label in v.labels() if label.row is not None]
    assert lines == [f"{r}, {c}" for r in (0, 1) for c in range(0, 200, 32)]
    assert v.height == v.top + 14 * v.cell + FOLD_GAP
    # At most 32 cells and the row numbers wide, not 200 cells.
    assert v.width < v.label_w + v.margin + WRAP * v.cell + 1


def test_rows_of_32_or_fewer_stay_a_grid_with_column_numbers():
    v = make_view(("in", "x"), "x", "input (4, 32)", (4, 32), np.arange(128), {})
    assert (v.fold, v.rows, v.cols, v.two_d) == (0, 4, 32, True)


def test_a_folded_array_too_long_to_draw_shows_its_first_rows():
    v = make_view(("in", "x"), "x", "input (4, 300)", (4, 300), np.arange(1200), {})
    assert (v.drawn, v.rows) == (300, 10) and v.note.endswith("first 300 shown")


def test_arrows_start_and_end_on_the_folded_cells_of_their_elements():
    src = "uint r = thread_position_in_grid.y; uint c = thread_position_in_grid.x;\n" \
          "if (c < 200) out[r * 200 + c] = x[r * 200 + (199 - c)] + 1000.0f;"
    x = np.arange(400, dtype=F32) * 3 - 500
    run = simulate("k", ["x"], ["out"], src, inputs=[x], output_shapes=[(2, 200)], output_dtypes=["float32"],
                   grid=(256, 2, 1), threadgroup=(256, 1, 1), trace=True)
    drawing = lay_out_run(run, max_groups=2)
    panel = drawing.panels[1]  # threadgroup 1: row 1
    views = {v.key: v for s in panel.sections for v in s}
    x_view, out_view = views[("in", "x")], views[("out", "out")]
    arrows = {a.target[1]: a for a in panel.arrows}
    assert sorted(arrows) == list(range(200, 400))
    for e in (200, 231, 232, 397, 399):
        a = arrows[e]
        assert a.source == (("in", "x"), 599 - e)
        (sx, sy), (tx, ty) = a.points[0], a.points[-1]
        x0, y0, x1, y1 = x_view.cell_box(599 - e)
        assert x0 <= sx <= x1 and y0 - 1 <= sy <= y1 + 1, e
        x0, y0, x1, y1 = out_view.cell_box(e)
        assert x0 <= tx <= x1 and y0 - 1 <= ty <= y1 + 1, e
    svg = to_svg(draw_run(run, max_groups=2))
    assert "1, 192" in texts(svg) and natural_width(svg) < 1400


def explorer_svg(puzzle_id: str, lane: int = 0) -> str:
    """The explorer's diagram of one thread (the whole run), as widgets.Explorer draws it."""
    p = get_puzzle(puzzle_id)
    run = run_case(solution_kernel(p), p.visible, p.launch_options, trace=True)
    model = ExplorerModel(run)
    group = int(run.lanes.group[lane])
    return to_svg(draw_run(model.filtered_result(lane), title=p.title, max_groups=model.n_groups, only_group=group,
                           selected_lane=lane, clickable=True, steady_gaps=True))


def test_long_rows_keep_the_explorers_diagrams_within_a_laptops_width():
    # V.5 and V.6 were 6,578 px wide (x of (2, 200)), III.6 16,325 px (2, 300), B.1 3,075 px.
    for puzzle_id in ("topk", "argmax", "fused_softmax", "simd_row_sum", "rms_norm", "layer_norm"):
        svg = explorer_svg(puzzle_id)
        assert natural_width(svg) <= 1400, (puzzle_id, natural_width(svg))


def test_values_too_wide_for_lines_of_32_fold_onto_fewer_cells():
    # Values like -0.00123 widen the cells: a line of 32 would pass MAX_SECTION_W.
    x = (np.arange(400, dtype=F32) - 200) * np.float32(1.2345e-3)
    src = "uint i = thread_position_in_grid.x; out[i] = x[i];"
    run = simulate("k", ["x"], ["out"], src, inputs=[x.reshape(2, 200)], output_shapes=[(2, 200)],
                   output_dtypes=["float32"], grid=(400, 1, 1), threadgroup=(400, 1, 1), trace=True)
    view = next(v for s in lay_out_run(run).panels[0].sections for v in s if v.key == ("in", "x"))
    assert view.cols < WRAP and view.cols * view.cell <= MAX_SECTION_W
    assert view.locate(399) == (0, view.rows - 1, (199 % view.cols))


def test_a_diagram_fitted_to_its_room_keeps_its_typical_text_at_8_px_at_least():
    # Pooling's show() was fitted down to 0.69 of its size at 1400x900 beside JupyterLab's file
    # browser: 7 px text. Narrower than 8 px text allows, a diagram keeps that size and scrolls.
    from metal_puzzles.diagrams.draw import fitting_svg
    from metal_puzzles.notebook.images import puzzle_svg

    for puzzle_id in ("pooling", "topk", "matmul_full"):
        svg = puzzle_svg(get_puzzle(puzzle_id)) if puzzle_id != "topk" else explorer_svg(puzzle_id)
        fitted = fitting_svg(svg)
        min_width = int(re.search(r"min-width:(\d+)px", fitted).group(1))
        sizes = sorted(float(f) for f in re.findall(r"font-size='([0-9.]+)'", svg))
        scale = min(1.0, min_width / natural_width(svg))
        assert sizes[len(sizes) // 2] * scale >= 8.0 - 0.01, (puzzle_id, sizes[len(sizes) // 2] * scale)
