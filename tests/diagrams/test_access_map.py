"""The access map (``diagrams.access_map``): which segments and banks each SIMD-group touched, drawn,
and the explorer's cost figures per line and per SIMD-group."""

from __future__ import annotations

import re

import pytest

from metal_puzzles.checking import run_case
from metal_puzzles.diagrams.access_map import ColourBy, draw_access_map
from metal_puzzles.diagrams.draw import to_svg
from metal_puzzles.explorer.run_model import ExplorerModel
from metal_puzzles.puzzles import get_puzzle, solution_kernel, solution_source

NAIVE = """
uint rows = a_shape[0];
uint cols = a_shape[1];
uint x = thread_position_in_grid.x;
uint y = thread_position_in_grid.y;
if (y < rows && x < cols) {
    out[x * rows + y] = a[y * cols + x];
}
"""


def words(svg: str) -> str:
    """The diagram's texts as one line (captions wrap onto several lines of the drawing)."""
    return " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg))


def traced(pid: str, source: str | None = None, **kw):
    p = get_puzzle(pid)
    kernel = solution_kernel(p) if source is None else p.kernel(source)
    return run_case(kernel, p.visible, p.launch_options, trace=True, cost=True, **kw)


def test_the_naive_transposes_store_is_drawn_as_32_segments():
    svg = words(to_svg(draw_access_map(traced("tiled_transpose", NAIVE), title="naive")))
    assert "line 7: store to out, SIMD-group 0 of threadgroup (0,0): 32 segments of 128 B for 128 useful bytes" in svg
    assert "line 7: load from a, SIMD-group 0 of threadgroup (0,0): 1 segment of 128 B" in svg


def test_the_tiles_column_read_is_drawn_as_a_32_way_conflict_and_the_padded_one_as_none():
    tiled = words(to_svg(draw_access_map(traced("tiled_transpose"), ColourBy.BANK)))
    assert "a 32-way bank conflict: 32 lanes need different words of one bank (bank 0)" in tiled
    assert "segment of 128 B" not in tiled  # colour_by='bank' keeps threadgroup accesses only
    padded = words(to_svg(draw_access_map(traced("padded_transpose"), "bank")))
    assert "bank conflict" not in padded.replace("no bank conflict", "")


def test_colouring_by_segment_keeps_device_accesses_only():
    svg = words(to_svg(draw_access_map(traced("tiled_transpose"), "segment")))
    assert "threadgroup memory)" not in svg and "store to out" in svg


def test_the_access_map_stays_legible_at_a_laptops_width_and_lanes_sit_over_their_banks():
    from metal_puzzles.diagrams.access_map import LABEL_W, LANE, MIN_TEXT, PAD

    svg = to_svg(draw_access_map(traced("tiled_transpose"), ColourBy.BANK))
    width = int(re.search(r"<svg[^>]* width='(\d+)'", svg).group(1))
    assert width <= 900  # captions wrap instead of widening the map (it was 1,234 px)
    sizes = [float(v) for v in re.findall(r"font-size='([\d.]+)'", svg)]
    assert min(sizes) >= MIN_TEXT
    # The lane numbers 0..31 are centred over the columns of the banks 0..31.
    left = PAD + LABEL_W + (width - (2 * PAD + LABEL_W + 32 * LANE)) / 2  # the SVG's margin, both sides alike
    lane_x = {int(t): float(x) for x, t in re.findall(r"<text x='([\d.]+)'[^>]*font-size='9'[^>]*>(\d+)</text>", svg)}
    for lane in (0, 1, 17, 31):
        assert abs(lane_x[lane] - (left + lane * LANE + (LANE - 2) / 2)) < 1.5, lane
    # Memory cells are 14 high (a column of touching cells of one colour is one rectangle).
    bank_cells = [x for x, h in re.findall(rf"M([\d.]+) [\d.]+h{LANE - 2}v([\d.]+)h", svg) if float(h) % 14 == 0]
    columns = sorted({round(float(x) - left) for x in bank_cells})
    assert columns[:3] == [0, LANE, 2 * LANE] and len(columns) == 32


def test_the_access_map_needs_a_trace_and_a_profile():
    p = get_puzzle("tiled_transpose")
    run = run_case(solution_kernel(p), p.visible, p.launch_options, trace=False, cost=True)
    with pytest.raises(ValueError, match="trace=True and cost=True"):
        draw_access_map(run)
    with pytest.raises(ValueError, match="'diagonal' is not a valid ColourBy"):
        draw_access_map(traced("tiled_transpose"), "diagonal")


def test_the_explorer_lists_cost_per_line_and_per_simdgroup():
    run = traced("tiled_transpose", NAIVE, steps=True)
    model = ExplorerModel(run)
    assert model.has_cost
    line7 = next(r for r in model.cost_lines() if r["line"] == 7)
    assert line7["store_segments"] == (32.0, 32) and line7["load_segments"] == (1.0, 1)
    mine = model.simd_group_costs(lane=40)  # a thread of SIMD-group 1
    assert {(r["buffer"], r["kind"], r["value"]) for r in mine} == {("a", "read", 1), ("out", "write", 32)}


def test_the_explorer_shows_the_simdgroups_bank_conflict():
    model = ExplorerModel(traced("padded_transpose", solution_source(get_puzzle("tiled_transpose"))))
    tile = [r for r in model.simd_group_costs(lane=0) if r["buffer"] == "tile"]
    assert {(r["kind"], r["value"]) for r in tile} == {("write", 1), ("read", 32)}
