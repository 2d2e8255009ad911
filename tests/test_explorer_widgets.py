"""The explorer's widgets without a browser: the thread picker, the step controls, what an idle
thread says, and the page furniture (the keyboard guard, collapsed sections). The browser tests
(tests/e2e/test_explorer_browser.py) check the same in JupyterLab and Notebook 7."""

import numpy as np
import pytest

from metal_puzzles.explorer_front import KEYBOARD_GUARD_HTML, SUPPRESS_SHORTCUTS
from metal_puzzles.msl import simulate
from metal_puzzles.widgets import Explorer

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
    whole = ex.diagram.value
    assert "at step" not in whole  # on opening: the whole run
    ex.move(1)  # step 2: before the guarded write
    before_write = ex.diagram.value
    assert "data-shows='thread 1, all phases, at step 2'" in before_write
    assert ">11<" not in before_write and ">11<" in whole  # out[1] = a[1] + 10 not yet written
    ex.move(ex.model.n_steps)  # the end: the whole run again
    assert ">11<" in ex.diagram.value
