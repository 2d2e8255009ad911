"""The findings layer of diagrams: each finding drawn where it happened, in the SVG a learner
sees (rings on elements, cells past the end of an array for out-of-bounds accesses, marked thread
swatches, a numbered list under each threadgroup and a line in the header saying what the marks
mean), and PNGs of the same for a person to look at."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from metal_puzzles.diagrams.draw import RunDiagram, draw_run, save_png, to_svg
from metal_puzzles.diagrams.marks import FINDING_RED, badge, finding_sites, marks_legend
from metal_puzzles.diagrams.style import MARK_W
from metal_puzzles.msl import simulate

F32 = np.float32


def run(src: str, n: int, grid: int, group: int, out: int | None = None, steps: bool = False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return simulate("k", ["a"], ["out"], src, inputs=[np.arange(n, dtype=F32)], output_shapes=[(out or n,)],
                        output_dtypes=["float32"], grid=(grid, 1, 1), threadgroup=(group, 1, 1), trace=True,
                        sanitize="warn", steps=steps)


def texts(svg: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def marks(svg: str) -> int:
    """Strokes drawn with the width of the findings layer."""
    return svg.count(f"stroke-width='{MARK_W:g}'")


def dashed(svg: str) -> int:
    return svg.count("stroke-dasharray")


RACE = """threadgroup float s[8];
uint i = thread_position_in_grid.x; uint li = thread_position_in_threadgroup.x;
s[li] = a[i];
float t = s[li];
if (li >= 1) t += s[li - 1];
out[i] = t;"""

GUARDLESS = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;"

WRAP = """threadgroup float s[8];
uint li = thread_position_in_threadgroup.x;
s[li] = a[li];
threadgroup_barrier(mem_flags::mem_threadgroup);
out[li] = s[li] + s[li - 1];"""

UNINIT = """threadgroup float s[8];
uint i = thread_position_in_grid.x;
if (i < a_shape[0]) s[i] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i == 0) { float t = 0; for (uint k = 0; k < 8; k++) t += s[k]; out[0] = t; }"""

DIVERGENT = """threadgroup float s[4];
uint i = thread_position_in_grid.x; uint li = thread_position_in_threadgroup.x;
if (i < a_shape[0]) {
  s[li] = a[i];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[i] = s[li] + 10;
}"""

CLEAN = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;"


def test_a_correct_run_has_no_marks():
    svg = to_svg(draw_run(run(CLEAN, 4, 4, 4)))
    assert marks(svg) == 0 and dashed(svg) == 0 and FINDING_RED not in svg


def test_a_race_rings_the_element_and_both_threads():
    r = run(RACE, 8, 8, 8)
    (site,) = finding_sites(r)
    assert (site.buffer, site.index, site.phase, site.line, site.other_line) == ("s", 0, 0, 5, 3)
    svg = to_svg(draw_run(r))
    # The element s[0] and the swatches of threads 1 (reads) and 0 (writes).
    assert marks(svg) == 3
    t = texts(svg)
    assert "① race on s[0] in phase 0: thread 1 reads it (line 5) while thread 0 writes it (line 3), with no barrier " \
           "between" in t
    assert "1" in t  # the number on the ring's badge
    assert "red marks show 1 finding of the sanitizer" in " ".join(t)


def test_out_of_bounds_accesses_leave_the_array_with_their_index():
    r = run(GUARDLESS, 4, 8, 8, out=4)
    svg = to_svg(draw_run(r))
    t = texts(svg)
    # Threads 4..7 read a[4..7] and write out[4..7]: four dashed cells past each array.
    assert dashed(svg) == 2 and all(t.count(str(k)) >= 3 for k in (4, 5, 6, 7))
    assert "① out of bounds: thread 4 reads a[4] at line 2 (and 3 other threads)" in t
    assert "② out of bounds: thread 4 writes out[4] at line 2 (and 3 other threads)" in t
    assert "an arrow leaves an array for dashed cells" in " ".join(t)  # the header, over two lines


def test_a_wrapped_index_shows_the_index_asked_for():
    svg = to_svg(draw_run(run(WRAP, 8, 8, 8)))
    assert "4294967295" in texts(svg) and dashed(svg) == 1
    assert "① out of bounds: thread 0 reads s[4294967295] at line 5" in texts(svg)


def test_an_uninitialised_read_rings_the_element():
    r = run(UNINIT, 5, 8, 8, out=1)
    (site,) = [s for s in finding_sites(r) if s.kind == "uninitialized-read"]
    assert (site.buffer, site.index) == ("s", 5)
    svg = to_svg(draw_run(r))
    assert marks(svg) == 2  # s[5] and thread 0's swatch
    assert "① uninitialised read: thread 0 reads s[5] at line 5 before any thread wrote it" in texts(svg)


def test_threads_that_miss_a_barrier_are_struck_in_their_threadgroup():
    r = run(DIVERGENT, 6, 8, 4)
    (site,) = finding_sites(r)
    assert site.kind == "barrier-divergence" and site.group == 1
    panel0 = to_svg(draw_run(r, only_group=0))
    panel1 = to_svg(draw_run(r, only_group=1))
    assert marks(panel0) == 0
    # Threads 6 and 7: a ring and a strike each.
    assert marks(panel1) == 4
    # Named as every text names threads: grid position = position of threadgroup (Lanes.label).
    assert ("① barrier divergence at line 5 in phase 0: thread 6 = 2 of threadgroup 1, thread 7 = 3 of "
            "threadgroup 1 never reach the barrier") in texts(panel1)


def test_findings_of_threadgroups_not_drawn_are_counted():
    r = run(DIVERGENT, 6, 8, 4)
    header = " ".join(texts(to_svg(draw_run(r, max_groups=1))))
    assert "(1 in threadgroups not shown)" in header


def test_the_legend_names_only_the_marks_drawn():
    race = marks_legend(finding_sites(run(RACE, 8, 8, 8)))
    assert "ring marks the element" in race and "dashed" not in race and "struck" not in race
    oob = marks_legend(finding_sites(run(GUARDLESS, 4, 8, 8, out=4)))
    assert "dashed cells" in oob and "ring marks the element" not in oob
    assert "struck swatch" in marks_legend(finding_sites(run(DIVERGENT, 6, 8, 4)))
    assert badge(3) == "③" and badge(25) == "(25)"


@pytest.mark.parametrize("name, src, n, grid, group, out", [
    ("race", RACE, 8, 8, 8, None), ("out_of_bounds", GUARDLESS, 4, 8, 8, 4), ("wraparound", WRAP, 8, 8, 8, None),
    ("uninitialised", UNINIT, 5, 8, 8, 1), ("divergent", DIVERGENT, 6, 8, 4, None)])
def test_marked_diagrams_render_as_png(tmp_path, name, src, n, grid, group, out):
    # Written for a person to look at (test-artifacts/ keeps nothing; look at tmp_path when in doubt).
    diagram = draw_run(run(src, n, grid, group, out), title=name)
    path = tmp_path / f"{name}.png"
    save_png(diagram, str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000


def test_a_diagram_saves_itself_at_its_natural_size(tmp_path):
    diagram = draw_run(run(CLEAN, 4, 4, 4))
    assert isinstance(diagram, RunDiagram)
    diagram.render_svg(str(tmp_path / "d.svg"))
    assert (tmp_path / "d.svg").read_text() == to_svg(diagram)
    diagram.render_png(str(tmp_path / "d.png"))
    assert (tmp_path / "d.png").read_bytes()[:4] == b"\x89PNG"


def test_a_long_list_of_findings_is_cut_short_under_the_panel():
    reads = "\n".join(f"t += a[i + {k}];" for k in range(1, 11))  # ten lines, each reading past the end
    r = run(f"uint i = thread_position_in_grid.x;\nfloat t = 0;\n{reads}\nout[i] = t;", 4, 4, 4)
    assert len(r.findings) == 10
    t = texts(to_svg(draw_run(r)))
    assert sum(line.startswith(("①", "②", "③", "④", "⑤", "⑥", "⑦", "⑧", "⑨", "⑩")) for line in t) == 8
    assert "... and 2 more findings (check() lists them)" in t


# ----------------------------------------------------------------------------- marks that do not hide each other
RACE_ON_AN_UNINITIALISED_ELEMENT = """threadgroup float s[8];
uint li = thread_position_in_threadgroup.x;
float t = s[1];
s[li] = a[li];
out[li] = t;"""

SHORT_WRITE = "uint i = thread_position_in_grid.x;\nif (i < 5) out[i] = a[i] + 10;"


def red_discs(svg: str) -> list[tuple[float, float]]:
    """Centres of the findings' numbered discs: red filled, unstroked paths of many points."""
    centres = []
    for d in re.findall(rf"<path d='([^']*)' fill='{FINDING_RED}'/>", svg):
        for sub in d.split("M")[1:]:
            nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", sub)]
            x, y = nums[0], nums[1]
            points = [(x, y)]
            for dx, dy in zip(nums[2::2], nums[3::2], strict=True):
                x, y = x + dx, y + dy
                points.append((x, y))
            if len(points) >= 12:  # a disc (heads are triangles)
                centres.append((sum(p[0] for p in points) / len(points), sum(p[1] for p in points) / len(points)))
    return centres


def test_two_findings_on_one_element_get_two_badges_that_do_not_overlap():
    r = run(RACE_ON_AN_UNINITIALISED_ELEMENT, 8, 8, 8)
    sites = finding_sites(r)
    assert {(s.kind, s.buffer, s.index) for s in sites} == {("uninitialized-read", "s", 1), ("race", "s", 1)}
    discs = red_discs(to_svg(draw_run(r)))
    assert len(discs) == 2
    (x0, y0), (x1, y1) = discs
    assert np.hypot(x1 - x0, y1 - y0) >= 2 * 6.5  # side by side, neither covers the other


def test_every_unwritten_output_element_is_ringed_and_shows_no_value():
    r = run(SHORT_WRITE, 8, 8, 8)
    (site,) = finding_sites(r)
    assert site.kind == "unwritten-output" and site.finding.count == 3
    svg = to_svg(draw_run(r))
    assert marks(svg) == 3  # out[5], out[6], out[7]
    assert len(red_discs(svg)) == 1  # one number for the one finding
    # "0" is a[0]'s value, the index of a[0] and of out[0] and thread 0's swatch: no unwritten
    # cell claims to hold 0.
    assert texts(svg).count("0") == 4
    assert [t for t in texts(svg) if t in ("10", "14")] == ["10", "14"]  # written cells keep values


def test_no_thread_colour_is_mistaken_for_the_findings_red():
    import colorsys

    from metal_puzzles.diagrams.style import PALETTE

    def hls(colour: str) -> tuple[float, float, float]:
        return colorsys.rgb_to_hls(*(int(colour[k:k + 2], 16) / 255 for k in (1, 3, 5)))

    red_hue = hls(FINDING_RED)[0]
    for colour in PALETTE:
        hue, _, saturation = hls(colour)
        apart = min(abs(hue - red_hue), 1 - abs(hue - red_hue)) * 360
        assert apart >= 25 or saturation < 0.2, f"thread colour {colour} is {apart:.0f} degrees from red"
