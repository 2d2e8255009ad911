"""Diagrams of traced runs: panels, threadgroup-memory snapshots, arrows from provenance, SVG and PNG."""

import re

import numpy as np
import pytest

from metal_puzzles.diagrams.data_flow import group_accesses, shared_snapshots, trace_arrows
from metal_puzzles.diagrams.draw import draw_run, save_png, to_svg
from metal_puzzles.diagrams.style import ARROW_W, fmt_value
from metal_puzzles.msl import simulate

F32 = np.float32


def run(src, ins, inputs, out_shape, grid, tg, header="", **kw):
    return simulate("k", ins, ["out"], src, header, inputs=inputs, output_shapes=[out_shape],
                    output_dtypes=["float32"], grid=grid, threadgroup=tg, trace=kw.pop("trace", True), **kw)


def map_run():
    src = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;"
    return run(src, ["a"], [np.arange(4, dtype=F32)], (4,), (4, 1, 1), (4, 1, 1))


POOL = """threadgroup float cache[8];
uint i = thread_position_in_grid.x; uint li = thread_position_in_threadgroup.x;
cache[li] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
float s = cache[li];
if (li >= 1) s += cache[li - 1];
if (li >= 2) s += cache[li - 2];
out[i] = s;"""

MATMUL = """threadgroup float sa[3][3];
threadgroup float sb[3][3];
uint i = thread_position_in_grid.y; uint j = thread_position_in_grid.x;
uint li = thread_position_in_threadgroup.y; uint lj = thread_position_in_threadgroup.x;
uint n = a_shape[0];
float acc = 0;
for (uint t = 0; t < n; t += 3) {
  sa[li][lj] = (i < n && t + lj < n) ? a[i * n + t + lj] : 0;
  sb[li][lj] = (j < n && t + li < n) ? b[(t + li) * n + j] : 0;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint k = 0; k < 3; k++) acc += sa[li][k] * sb[k][lj];
  threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (i < n && j < n) out[i * n + j] = acc;"""


def matmul_run():
    a = np.arange(64, dtype=F32).reshape(8, 8)
    b = np.eye(8, dtype=F32)
    return simulate("mm", ["a", "b"], ["out"], MATMUL, inputs=[a, b], output_shapes=[(8, 8)],
                    output_dtypes=["float32"], grid=(9, 9, 1), threadgroup=(3, 3, 1), trace=True)


def arrow_count(svg: str) -> int:
    """Arrow shafts are the only paths drawn with the arrow line width: one path each, in a group
    per colour that sets the width."""
    groups = re.findall(rf"<g [^>]*stroke-width='{ARROW_W:g}'[^>]*>(.*?)</g>", svg)
    return sum(g.count("<path") for g in groups)


def texts(svg: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def test_map_draws_one_arrow_per_thread_and_the_values():
    r = map_run()
    svg = to_svg(draw_run(r, title="Map"))
    assert arrow_count(svg) == 4
    t = texts(svg)
    assert t[0] == "Map"
    assert "threadgroup 0  ·  4 threads" in t
    for v in ["10", "11", "12", "13"]:  # the output values
        assert v in t
    assert "showing" not in svg  # a single threadgroup: no caption about hidden ones
    arrows = trace_arrows(group_accesses(r, 0), {}, r, {})
    assert sorted((a.source, a.target) for a in arrows) == [((("in", "a"), i), (("out", "out"), i)) for i in range(4)]


def test_pooling_arrows_run_through_the_shared_snapshot():
    r = run(POOL, ["a"], [np.arange(8, dtype=F32)], (8,), (8, 1, 1), (8, 1, 1))
    acc = group_accesses(r, 0)
    snaps = shared_snapshots(acc, "cache")
    assert [s.phase for s in snaps] == [0]
    assert snaps[0].values == {i: i for i in range(8)}
    assert snaps[0].writers == {i: {i} for i in range(8)}
    arrows = trace_arrows(acc, {}, r, {"cache": [0]})
    # 8 loads into cache, then out[i] from cache[i-2..i] (1 + 2 + 6 * 3 sources)
    assert len(arrows) == 8 + 21
    into_out3 = sorted(a.source for a in arrows if a.target == (("out", "out"), 3))
    assert into_out3 == [(("tg", "cache", 0), k) for k in (1, 2, 3)]
    svg = to_svg(draw_run(r, title="Pooling"))
    assert arrow_count(svg) == 29
    t = texts(svg)
    assert "after phase 0" in t and "cache" in t
    assert t.count("18") >= 1  # out[7] = 5 + 6 + 7


def test_matmul_shows_four_of_nine_threadgroups_with_2d_tiles():
    r = matmul_run()
    assert r.lanes.n_groups == 9
    svg = to_svg(draw_run(r, title="Matmul"))
    assert "showing 4 of 9 threadgroups" in svg
    t = texts(svg)
    titles = [s for s in t if s.startswith("threadgroup (")]
    assert titles == ["threadgroup (0,0)  ·  9 threads", "threadgroup (1,0)  ·  9 threads",
                      "threadgroup (2,0)  ·  9 threads", "threadgroup (0,1)  ·  9 threads"]
    # the tiles were loaded in phases 0, 2 and 4 (a barrier after loading, one after using)
    assert [s for s in t if s.startswith("after phase")] == ["after phase 0", "after phase 0", "after phase 2",
                                                             "after phase 2", "after phase 4", "after phase 4"] * 4
    acc = group_accesses(r, 0)
    arrows = trace_arrows(acc, {}, r, {"sa": [0, 2, 4], "sb": [0, 2, 4]})
    # loads: 9 per tile and phase, less the 3 + 3 past the edge in the last phase (they store a constant 0);
    # each out element comes from a row of sa and a column of sb as they stood in the last phase
    assert len(arrows) == 9 * 2 * 3 - 6 + 9 * 6
    out00 = sorted(a.source for a in arrows if a.target == (("out", "out"), 0))
    assert out00 == sorted([(("tg", "sa", 4), k) for k in (0, 1, 2)] + [(("tg", "sb", 4), k) for k in (0, 3, 6)])
    # group (1, 0) loads a[0][3] into sa[0][0] in phase 2
    acc1 = group_accesses(r, 1)
    assert shared_snapshots(acc1, "sa")[1].values[0] == 3
    total = sum(len(trace_arrows(group_accesses(r, g), {}, r, {"sa": [0, 2, 4], "sb": [0, 2, 4]}))
                for g in range(4))
    assert arrow_count(svg) == total


def test_a_run_without_writes_draws_no_arrows():
    src = "uint i = thread_position_in_grid.x;\nfloat v = a[i];\n(void)v;"
    r = run(src, ["a"], [np.arange(4, dtype=F32) + 5], (4,), (4, 1, 1), (4, 1, 1), init_value=0)
    svg = to_svg(draw_run(r))
    assert arrow_count(svg) == 0
    t = texts(svg)
    for v in ["5", "6", "7", "8"]:
        assert v in t


def test_without_a_trace_the_arrays_are_still_drawn():
    r = run(POOL, ["a"], [np.arange(8, dtype=F32)], (8,), (8, 1, 1), (8, 1, 1), trace=False)
    assert r.trace is None
    svg = to_svg(draw_run(r))
    assert "no trace was recorded" in svg
    assert arrow_count(svg) == 0
    assert "18" in texts(svg)


def test_unwritten_threadgroup_cells_stay_blank_and_guarded_threads_draw_nothing():
    src = """threadgroup float c[4];
uint i = thread_position_in_grid.x;
if (i < 2) c[i] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < 2) out[i] = c[i];"""
    r = run(src, ["a"], [np.array([7, 9, 0, 0], F32)], (4,), (4, 1, 1), (4, 1, 1), init_value=0)
    snap = shared_snapshots(group_accesses(r, 0), "c")[0]
    assert snap.values == {0: 7, 1: 9}
    svg = to_svg(draw_run(r))
    assert arrow_count(svg) == 4  # two loads into c, two stores to out


def test_max_groups_limits_the_panels():
    src = "uint i = thread_position_in_grid.x;\nout[i] = a[i] * 2;"
    r = run(src, ["a"], [np.arange(12, dtype=F32)], (12,), (12, 1, 1), (2, 1, 1))
    svg = to_svg(draw_run(r, max_groups=2))
    assert "showing 2 of 6 threadgroups" in svg
    assert [s for s in texts(svg) if s.startswith("threadgroup ")] == ["threadgroup 0  ·  2 threads",
                                                                        "threadgroup 1  ·  2 threads"]
    assert arrow_count(svg) == 4


def test_notebook_rendering_is_natural_size_svg():
    d = draw_run(map_run())
    svg = to_svg(d)
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    width = int(re.search(r"<svg[^>]* width='(\d+)'", svg).group(1))
    assert width > 400  # not squeezed to chalk's default 200-pixel-high preview
    assert "viewBox='0 0 " in svg


def test_notebook_shows_the_diagram_once_as_html_that_fits_its_room_down_to_legible_text():
    from IPython.core.interactiveshell import InteractiveShell

    from metal_puzzles.diagrams.draw import LEGIBLE_TEXT_PX, SMALLEST_TEXT_PX

    bundle, _ = InteractiveShell.instance().display_formatter.format(draw_run(map_run()))
    # One copy of the picture: an image/svg+xml twin (or chalk's own forms) would double the
    # notebook's size.
    assert set(bundle) == {"text/html", "text/plain"}
    page = bundle["text/html"]
    assert page.startswith("<div style='overflow-x:auto") and "<?xml" not in page
    # As wide as the room, at most its natural width, at least the width of legible text.
    style, width = re.search(r"<svg style='([^']*)'[^>]* width='(\d+)'", page).groups()
    assert "width:100%" in style and f"max-width:{width}px" in style
    sizes = sorted(float(f) for f in re.findall(r"font-size='([0-9.]+)'", page))
    min_width = int(re.search(r"min-width:(\d+)px", style).group(1))
    assert min_width < int(width)
    scale = min_width / int(width)  # at the narrowest: the typical text and the smallest, legible
    assert sizes[len(sizes) // 2] * scale >= LEGIBLE_TEXT_PX - 0.01
    assert sizes[0] * scale >= SMALLEST_TEXT_PX - 0.01


def test_png_render(tmp_path):
    path = tmp_path / "map.png"
    save_png(draw_run(map_run()), str(path), width=600)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width = int.from_bytes(data[16:20], "big")
    assert width == 600


@pytest.mark.parametrize("value, text", [(3.0, "3"), (-2, "-2"), (0.5, "0.5"), (1 / 3, "0.333"), (1e6, "1e+06"),
                                         (True, "1"), (None, ""), (float("nan"), "nan"), ("?", "?")])
def test_cell_values_are_short(value, text):
    assert fmt_value(value) == text


def test_prefix_sum_arrows_point_at_the_snapshot_each_read_saw():
    src = """threadgroup float c[4];
uint li = thread_position_in_threadgroup.x;
c[li] = a[li];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint s = 1; s < 4; s *= 2) {
  float v = li >= s ? c[li - s] : 0;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  c[li] += v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
}
out[li] = c[li];"""
    r = run(src, ["a"], [np.arange(1, 5, dtype=F32)], (4,), (4, 1, 1), (4, 1, 1))
    acc = group_accesses(r, 0)
    snaps = shared_snapshots(acc, "c")
    assert [s.phase for s in snaps] == [0, 2, 4]
    assert [snaps[k].values for k in range(3)] == [{0: 1, 1: 2, 2: 3, 3: 4}, {0: 1, 1: 3, 2: 5, 3: 7},
                                                   {0: 1, 1: 3, 2: 6, 3: 10}]
    arrows = trace_arrows(acc, {}, r, {"c": [0, 2, 4]})
    # c[3] in phase 2 adds c[2] (read in phase 1) to its own old value: both from the phase-0 snapshot
    into = sorted(a.source for a in arrows if a.target == (("tg", "c", 2), 3))
    assert into == [(("tg", "c", 0), 2), (("tg", "c", 0), 3)]
    into = sorted(a.source for a in arrows if a.target == (("out", "out"), 3))
    assert into == [(("tg", "c", 4), 3)]


def test_reading_an_output_back_draws_an_arc_and_no_self_loop():
    src = "out[0] = a[0];\nout[0] += 1;\nout[1] = out[0] * 2;"
    r = run(src, ["a"], [np.array([3, 0], F32)], (2,), (1, 1, 1), (1, 1, 1))
    assert r.outputs[0].tolist() == [4, 8]
    arrows = trace_arrows(group_accesses(r, 0), {}, r, {})
    assert sorted((a.source, a.target) for a in arrows) == [((("in", "a"), 0), (("out", "out"), 0)),
                                                            ((("out", "out"), 0), (("out", "out"), 1))]
    assert arrow_count(to_svg(draw_run(r))) == 2


def test_a_value_read_before_later_barriers_points_at_the_snapshot_it_was_read_from():
    src = """threadgroup float c[4];
uint li = thread_position_in_threadgroup.x;
c[li] = a[li];
float w = c[li];
threadgroup_barrier(mem_flags::mem_threadgroup);
float v = c[(li + 1) % 4];
threadgroup_barrier(mem_flags::mem_threadgroup);
c[li] = 0;
threadgroup_barrier(mem_flags::mem_threadgroup);
out[li] = v + w;"""
    r = run(src, ["a"], [np.arange(1, 5, dtype=F32)], (4,), (4, 1, 1), (4, 1, 1))
    assert r.outputs[0].tolist() == [3, 5, 7, 5]
    acc = group_accesses(r, 0)
    assert [s.phase for s in shared_snapshots(acc, "c")] == [0, 2]
    arrows = trace_arrows(acc, {}, r, {"c": [0, 2]})
    # w was read in phase 0 right after this thread's own write; v in phase 1: both saw the phase-0 contents,
    # not the zeros written in phase 2
    into = sorted(a.source for a in arrows if a.target == (("out", "out"), 1))
    assert into == [(("tg", "c", 0), 1), (("tg", "c", 0), 2)]


def test_only_group_draws_that_threadgroup_alone():
    r = matmul_run()
    svg = to_svg(draw_run(r, only_group=4))
    assert "showing 1 of 9 threadgroups" in svg
    assert [s for s in texts(svg) if s.startswith("threadgroup (")] == ["threadgroup (1,1)  ·  9 threads"]
    with pytest.raises(ValueError):
        draw_run(r, only_group=9)


def test_arrays_of_three_or_more_dimensions_are_drawn_as_labelled_blocks():
    """A (2, 3, 4) array is two 3x4 blocks side by side, labelled with their leading index."""
    from metal_puzzles.diagrams.scene import make_view

    v = make_view(("in", "x"), "x", "input (2, 3, 4)", (2, 3, 4), np.arange(24), {})
    assert (v.blocks, v.rows, v.cols, v.drawn) == (2, 3, 4, 24)
    assert v.block_labels == ["[0,:,:]", "[1,:,:]"]
    first, second = v.cell_box(0), v.cell_box(12)  # x[0,0,0] and x[1,0,0]
    assert first[1] == second[1] and second[0] > first[0] + 4 * v.cell  # same row, next block
    assert v.row_of(13) == 0 and v.row_of(17) == 1


# ----------------------------------------------------------------------------- arrows through simd_* functions
SIMD_SUM = """uint i = thread_position_in_grid.x;
float total = simd_sum(a[i]);
if (simd_is_first()) out[i / 32] = total;"""

SHUFFLE_AND_SCAN = """uint i = thread_position_in_grid.x;
float v = simd_shuffle_down(a[i], 1u);
float p = simd_prefix_exclusive_sum(a[i]);
out[i] = v + p;"""


def simd_run(src: str, n: int, out: int):
    return simulate("k", ["a"], ["out"], src, inputs=[np.arange(n, dtype=F32)], output_shapes=[(out,)],
                    output_dtypes=["float32"], grid=(n, 1, 1), threadgroup=(n, 1, 1), trace=True)


def written_sources(r) -> dict[int, list[int]]:
    return {a.index: sorted(s[2] for s in a.sources) for a in r.trace.element_accesses()
            if a.kind != "read" and a.buffer == "out"}


def test_simd_sum_keeps_an_arrow_from_every_lane_it_summed():
    r = simd_run(SIMD_SUM, 64, 2)
    assert written_sources(r) == {0: list(range(32)), 1: list(range(32, 64))}
    assert arrow_count(to_svg(draw_run(r))) == 64  # each SIMD-group's first lane: 32 arrows


def test_shuffles_and_scans_carry_the_lanes_they_read():
    r = simd_run(SHUFFLE_AND_SCAN, 8, 8)
    # Lane k reads lane k+1 (the last lane keeps its own value) and sums the lanes before it.
    expected = {k: sorted(set(range(k)) | {min(k + 1, 7)}) for k in range(8)}
    assert written_sources(r) == expected


def test_a_small_diagram_is_not_widened_by_its_explanations():
    svg = to_svg(draw_run(map_run(), title="Map"))
    width = int(re.search(r"<svg[^>]* width='(\d+)'", svg).group(1))
    assert width <= 620  # the header's explanations wrap (unwrapped they made it 888 px)
    words = " ".join(texts(svg))
    assert "in the colour of the thread that wrote it" in words


def test_left_aligned_text_starts_at_its_edge_whatever_the_readers_font():
    svg = to_svg(draw_run(map_run(), title="Map"))
    # The header's lines are anchored at their start (not centred on an estimate of their
    # width), so they line up in a browser whose font is narrower or wider than the estimate.
    header = re.findall(r"<text x='([\d.]+)'[^>]* text-anchor='start'>(Map|grid [^<]*|an arrow runs[^<]*)</text>", svg)
    assert [t[:4] for _, t in header] == ["Map", "grid", "an a"]
    assert len({x for x, _ in header}) == 1


def test_values_are_never_written_smaller_than_the_minimum_size():
    from metal_puzzles.diagrams.style import MIN_CELL_FONT

    r = simulate("mm", ["a", "b"], ["out"], MATMUL, inputs=[np.arange(64, dtype=F32).reshape(8, 8) * 100,
                                                            np.arange(64, dtype=F32).reshape(8, 8)],
                 output_shapes=[(8, 8)], output_dtypes=["float32"], grid=(9, 9, 1), threadgroup=(3, 3, 1),
                 trace=True)
    svg = to_svg(draw_run(r))
    assert any(len(t) >= 6 for t in texts(svg))  # six-digit products
    sizes = [float(v) for v in re.findall(r"font-size='([\d.]+)'", svg)]
    assert min(sizes) >= min(MIN_CELL_FONT, 7.5)  # 7.5: the small index in a 1D cell's corner


def test_a_diagram_saved_at_a_given_height_keeps_its_texts_and_proportions(tmp_path):
    """A sized render_svg is the diagram's own SVG scaled by its viewBox: chalk's backend, which
    cannot draw the batched cells and texts, would write a picture without them."""
    diagram = draw_run(map_run())
    natural = to_svg(diagram)
    diagram.render_svg(str(tmp_path / "small.svg"), height=100)
    small = (tmp_path / "small.svg").read_text(encoding="utf-8")
    w0, h0 = (int(v) for v in re.search(r"<svg [^>]*?width='(\d+)' height='(\d+)'", natural).groups())
    w, h = (float(v) for v in re.search(r"<svg [^>]*?width='([\d.]+)' height='([\d.]+)'", small).groups())
    assert h == 100 and abs(w - w0 * 100 / h0) < 0.1
    assert texts(small) == texts(natural) and f"viewBox='0 0 {w0} {h0}'" in small
