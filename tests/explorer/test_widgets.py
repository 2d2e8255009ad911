"""The explorer's widgets without a browser: the thread picker, the step controls, what an idle
thread says, and the page furniture (the keyboard guard, collapsed sections). The browser tests
(tests/e2e/test_explorer_browser.py) check the same in JupyterLab and Notebook 7."""

import re

import numpy as np
import pytest

from metal_puzzles.explorer.page import (
    KEYBOARD_GUARD_HTML,
    SUPPRESS_SHORTCUTS,
    CellPick,
    PickedSpace,
    parse_cell_pick,
)
from metal_puzzles.explorer.widgets import Explorer
from metal_puzzles.msl import simulate

GUARDED = """
uint i = thread_position_in_grid.x;
if (i < 4) {
    out[i] = a[i] + 10;
}
"""

WIDE = """
uint i = thread_position_in_grid.x;
out[i] = a[i] * 2;
"""


def _run(source: str, n_in: int, n_out: int, grid: int, threadgroup: int):
    return simulate("k", ["a"], ["out"], source, inputs=[np.arange(n_in, dtype=np.float32)],
                    output_shapes=[(n_out,)], output_dtypes=["float32"], grid=(grid, 1, 1),
                    threadgroup=(threadgroup, 1, 1), trace=True, steps=True)


@pytest.fixture(scope="module")
def guarded() -> Explorer:
    return Explorer(_run(GUARDED, 4, 4, 8, 8), "guarded")


@pytest.fixture(scope="module")
def wide() -> Explorer:
    return Explorer(_run(WIDE, 1024, 1024, 1024, 1024), "wide")


def test_a_click_on_a_thread_button_selects_that_thread(guarded):
    assert guarded.picker.threads is not None and len(guarded.picker.threads.options) == 8
    guarded.picker.threads.value = 2
    assert guarded.thread.value == 2
    assert guarded.who.value == "<span>thread 2</span>"
    assert "write out[2]" in guarded.accesses.value
    guarded.thread.value = 3  # the slider moves the buttons too
    assert guarded.picker.threads.value == 3


def test_a_spare_thread_of_a_guard_says_it_did_nothing_and_why(guarded):
    guarded.picker.threads.value = 5
    text = guarded.accesses.value
    assert "this thread did nothing" in text
    assert "the condition on line 3 (<code>if (i &lt; 4) {</code>) is false for it" in text
    guarded.picker.threads.value = 1
    assert "did nothing" not in guarded.accesses.value


def test_a_large_threadgroup_is_picked_by_simd_group_and_lane(wide):
    picker = wide.picker
    assert picker.threads is None, "1,024 thread buttons: the wall of swatches the picker replaces"
    assert len(picker.simd_groups.options) == 32 and len(picker.lanes.options) == 32
    assert picker.simd_groups.tooltips[3] == "threads 96 to 127"  # what a SIMD-group button stands for
    picker.simd_groups.value = 3
    picker.lanes.value = 5
    assert wide.thread.value == 3 * 32 + 5
    assert "read a[101]" in wide.accesses.value
    wide.thread.value = 1023
    assert (picker.simd_groups.value, picker.lanes.value) == (31, 31)


def test_the_step_slider_and_the_step_buttons_agree(guarded):
    guarded.move(-guarded.model.n_steps)
    assert guarded.step_slider.value == 1 and guarded.back.disabled and not guarded.forward.disabled
    guarded.forward.click()
    assert guarded.step_slider.value == 2 and guarded.step_index == 1
    last = guarded.model.n_steps
    guarded.step_slider.value = last  # the keyboard moves the slider; the step follows
    assert guarded.step_index == last - 1
    assert f"step {last} / {last}" in guarded.step_label.value and guarded.forward.disabled
    guarded.back.click()
    assert guarded.step_slider.value == last - 1 and not guarded.forward.disabled


def test_counts_start_collapsed_and_the_page_guards_its_keys(guarded):
    assert guarded.details.selected_index is None
    first = guarded.widget.children[0].value
    assert KEYBOARD_GUARD_HTML in first and SUPPRESS_SHORTCUTS in first
    assert "mp-explorer" in guarded.widget._dom_classes


def test_the_diagram_follows_the_steps_once_the_learner_steps() -> None:
    ex = Explorer(_run(GUARDED, 4, 4, 8, 8), "guarded")
    ex.thread.value = 1
    whole = ex.diagram_svg
    assert "data-shows='thread 1, all phases'" in ex.diagram.value  # on opening: the whole run
    ex.move(1)  # step 2: before the guarded write
    before_write = ex.diagram_svg
    assert "data-shows='thread 1, all phases, at step 2'" in ex.diagram.value
    assert ">11<" not in before_write and ">11<" in whole  # out[1] = a[1] + 10 not yet written
    ex.move(ex.model.n_steps)  # the end: the whole run again
    assert ">11<" in ex.diagram_svg


NEIGHBOURS = """
uint i = thread_position_in_grid.x;
out[i] = a[i] + (i > 0 ? a[i - 1] : 0.0f);
"""

SHARED_REVERSE = """
threadgroup float t[4];
uint i = thread_position_in_grid.x;
uint li = thread_position_in_threadgroup.x;
t[li] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
out[i] = t[3 - li];
"""


def _cell_targets(svg: str) -> dict[tuple[str, str, str], list[int]]:
    """(array, space, threadgroup) -> element indices of the diagram's click targets."""
    out = {}
    for attrs, body in re.findall(r"<g class='mp-cells'([^>]*)>(.*?)</g>", svg):
        name = re.search(r"data-buffer='([^']*)'", attrs).group(1)
        space = re.search(r"data-space='([^']*)'", attrs).group(1)
        group = re.search(r"data-group='([^']*)'", attrs)
        out[(name, space, group.group(1) if group else "")] = [int(k) for k in re.findall(r"data-index='(\d+)'", body)]
    return out


def test_the_diagram_cells_name_their_array_and_element_for_a_click():
    ex = Explorer(_run(SHARED_REVERSE, 8, 8, 8, 4), "reverse")
    ex.thread.value = 1
    ex.group.value = 1
    targets = _cell_targets(ex.diagram_svg)
    assert targets[("a", "device", "")] == list(range(8))
    assert targets[("out", "device", "")] == list(range(8))
    # Threadgroup memory is one copy per threadgroup: its cells say whose.
    assert targets[("t", "threadgroup", "1")] == [0, 1, 2, 3]


def test_a_click_on_a_cell_selects_the_threads_that_touched_it_one_after_another():
    ex = Explorer(_run(NEIGHBOURS, 8, 8, 8, 8), "neighbours")
    ex.cell_pick.value = "a|device||2|1"  # as the page script writes it
    assert ex.who.value == "<span>thread 2</span>"
    assert "a[2]: touched by 2 threads" in ex.cell_info.value and "click it again" in ex.cell_info.value
    assert "read a[2]" in ex.accesses.value
    ex.cell_pick.value = "a|device||2|2"  # the same cell again: the next thread that read it
    assert ex.who.value == "<span>thread 3</span>"
    assert "read a[2]" in ex.accesses.value
    ex.cell_pick.value = "a|device||2|3"
    assert ex.who.value == "<span>thread 2</span>"


def test_a_click_on_threadgroup_memory_selects_in_that_threadgroup():
    ex = Explorer(_run(SHARED_REVERSE, 8, 8, 8, 4), "reverse")
    assert ex.pick_cell("t", 0, group=1) == [4, 7]  # thread 0 of group 1 wrote t[0], thread 3 read it
    assert (ex.group.value, ex.thread.value) == (1, 0)
    ex.pick_cell("t", 0, group=1)
    assert (ex.group.value, ex.thread.value) == (1, 3)
    assert "read t[0]" in ex.accesses.value


def test_a_click_on_a_cell_nobody_touched_yet_says_so():
    ex = Explorer(_run(NEIGHBOURS, 8, 8, 8, 8), "neighbours")
    ex.thread.value = 5
    ex.move(0)  # the diagram now follows the step: the first step, before any access
    assert ex.pick_cell("a", 2) == []
    assert "no thread touched a[2] before step 1" in ex.cell_info.value
    assert ex.thread.value == 5  # the selection stays


def test_the_selected_threads_swatch_is_framed():
    ex = Explorer(_run(NEIGHBOURS, 8, 8, 8, 8), "neighbours")
    for thread in (2, 6):
        ex.thread.value = thread
        svg = ex.diagram_svg
        frames = re.findall(r"<path d='M([\d.]+) ([\d.]+)l([\d.]+) 0 0 ([\d.]+)[^']*' fill='none' "
                            r"stroke='#222222' stroke-width='2'/>", svg)
        assert len(frames) == 1
        x, y, w, h = (float(v) for v in frames[0])
        labels = re.findall(r"<text x='([\d.]+)' y='([\d.]+)'[^>]*fill='#ffffff'>(\d+)</text>", svg)
        inside = [name for lx, ly, name in labels if x < float(lx) < x + w and y < float(ly) < y + h]
        assert inside == [str(thread)]


def test_a_click_on_a_threads_swatch_selects_that_thread():
    ex = Explorer(_run(SHARED_REVERSE, 8, 8, 8, 4), "reverse")
    ex.group.value = 1
    assert _cell_targets(ex.diagram_svg)[("", "thread", "1")] == [0, 1, 2, 3]
    ex.cell_pick.value = "|thread|1|2|1"
    assert (ex.group.value, ex.thread.value) == (1, 2)
    assert ex.who.value == "<span>thread 6 = 2 of threadgroup 1</span>"


def test_a_cell_pick_value_is_read_strictly():
    assert parse_cell_pick("") is None
    assert parse_cell_pick("a|device||12|3") == CellPick(PickedSpace.DEVICE, "a", 12, None)
    assert parse_cell_pick("t|threadgroup|1|0|9") == CellPick(PickedSpace.THREADGROUP, "t", 0, 1)
    assert parse_cell_pick("|thread|0|5|2") == CellPick(PickedSpace.THREAD, "", 5, 0)
    with pytest.raises(ValueError, match="buffer|space|group|index|click"):
        parse_cell_pick("a|12")
    with pytest.raises(ValueError, match="buffer|space|group|index|click"):
        parse_cell_pick("a|constant||1|1")
    with pytest.raises(ValueError, match="must name its threadgroup"):
        parse_cell_pick("t|threadgroup||0|1")
    with pytest.raises(ValueError, match="names an array exactly when"):
        parse_cell_pick("a|thread|0|1|1")


def _line(ex: Explorer, number: int) -> str:
    return re.search(rf"<div class='mp-line[^']*' data-line='{number}'[^>]*>", ex.source.value).group(0)


def test_lines_the_thread_does_not_run_are_shown_as_such() -> None:
    """GUARDED on 8 threads: threads 4 to 7 never run line 4 (the guarded write); their listing
    greys it out and says so, and at the step of line 4 their current line is grey, not yellow."""
    ex = Explorer(_run(GUARDED, 4, 4, 8, 8), "guarded")
    write = next(n for n, text in enumerate(ex.model.source_lines(), start=1) if "out[i]" in text)
    assert "mp-not-run" not in _line(ex, write)  # thread 0 runs it
    ex.thread.value = 6
    assert "mp-not-run" in _line(ex, write) and "thread 6 does not run this line" in _line(ex, write)
    assert "mp-not-run" not in _line(ex, write - 1)  # the condition, which it runs
    while ex.model.step(ex.step_index, ex.lane)["line"] != write:
        ex.move(1)
    assert "mp-current" in _line(ex, write) and "#e6e6e6" in _line(ex, write) and "#ffe08a" not in _line(ex, write)
    ex.thread.value = 1
    assert "mp-current" in _line(ex, write) and "#ffe08a" in _line(ex, write) and "mp-not-run" not in _line(ex, write)


def test_the_explorer_says_which_kernel_it_shows() -> None:
    ex = Explorer(_run(GUARDED, 4, 4, 8, 8), "Guard <1>")
    assert "<div class='mp-title'>explorer of <b>Guard &lt;1&gt;</b></div>" in ex.widget.children[0].value
