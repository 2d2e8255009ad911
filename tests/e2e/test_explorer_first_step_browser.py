"""The explorer's first step and first click on a finding, in the browser: the diagram each shows
(the run at step 2, most of whose elements differ from the whole run shown on opening; the
finding's thread in its phase at its step) is laid out ahead in a transparent layer under the one
shown, and the click shows that layer instead of redrawing (explorer/page.py). They were the slow
clicks (the first step 411-436 ms in JupyterLab on a loaded machine, the first finding click
282-952 ms, the page's layout and paint much of it); ``benchmarks/bench_explorer_clicks.py`` times them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from .conftest import KERNEL_NAME, UI_TIMEOUT_MS, JupyterServer
from .pages import Lab, wait_for_kernel

pytestmark = pytest.mark.e2e

NOTEBOOK = "first_step.ipynb"

# III.1 without its barrier: one threadgroup of 1,024 threads, as the click benchmark explores it.
CELL = '''\
import warnings
from metal_puzzles.checking import run_case
from metal_puzzles.puzzles import get_puzzle, solution_source
from metal_puzzles.explorer.widgets import explore_run

puzzle = get_puzzle("tiled_transpose")
racy = puzzle.kernel(solution_source(puzzle).replace("threadgroup_barrier(mem_flags::mem_threadgroup);", ""))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    run = run_case(racy, puzzle.visible, trace=True, steps=True, cost=True)
explore_run(run, "III.1 without its barrier")'''

# The layers of the canvas but the finding's (laid out ahead once the explorer is idle, kept while
# the learner steps): class and number of elements of each.
_LAYERS_JS = """(ex) => Array.from(ex.querySelectorAll('.mp-diagram-view > div:not([data-slot="finding"])'))
  .map((layer) => [layer.className, layer.querySelectorAll('*').length])"""

_FINDING_LAYER = ".mp-diagram-view > .mp-ahead[data-slot='finding'] > svg"

# The diagram shown against the whole diagram sent (asked for after the click): the same SVG.
_SHOWN_AS_SENT_JS = """(ex) => {
  const text = ex.querySelector('.mp-diagram-source textarea').value.split('\\u001e').join('');
  const whole = document.createElement('div');
  whole.innerHTML = text;
  const svg = ex.querySelector('.mp-diagram-view > .mp-shown > svg');
  return { same: svg.outerHTML === whole.querySelector('svg').outerHTML, mark: svg.mpMark || null };
}"""

_ASK_FOR_THE_WHOLE_DIAGRAM_JS = """(ex) => {
  const box = ex.querySelector('.mp-diagram-want input');
  box.value = 'whole|' + Date.now();
  box.dispatchEvent(new Event('input', { bubbles: true }));
}"""


@pytest.fixture()
def transpose_explorer(browser, jupyter_server: JupyterServer, artifacts_dir: Path) -> Iterator[Lab]:
    """A notebook whose one cell explores III.1 without its barrier, opened and run."""
    from playwright.sync_api import expect

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "Python (metal-puzzles e2e)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(CELL)]
    nbformat.write(nb, jupyter_server.root_dir / NOTEBOOK)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(UI_TIMEOUT_MS)
    lab = Lab(page, artifacts_dir / jupyter_server.ui.value)
    try:
        page.goto(jupyter_server.notebook_url(NOTEBOOK), timeout=120_000)
        wait_for_kernel(lab, jupyter_server, NOTEBOOK, "metal-puzzles e2e")
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        label = page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$"))
        page.locator(".lm-Menu-item", has=label).click()
        expect(page.locator(".mp-explorer .mp-diagram-view > .mp-shown > svg")).to_have_count(1, timeout=180_000)
        yield lab
    finally:
        context.close()


def test_the_first_step_shows_the_layer_laid_out_ahead(transpose_explorer: Lab) -> None:
    from playwright.sync_api import expect

    ex = transpose_explorer.page.locator(".mp-explorer").first
    # On opening: the whole run shown, and the first step's diagram under it, drawn ahead.
    expect(ex.locator(".mp-diagram-view > .mp-ahead[data-slot='step'] > svg")).to_have_count(1)
    (shown, shown_count), (ahead, ahead_count) = ex.evaluate(_LAYERS_JS)
    assert (shown, ahead) == ("mp-shown", "mp-ahead")
    assert ahead_count > 1000 and shown_count > ahead_count  # the whole run draws more
    ex.locator(".mp-diagram-view > .mp-ahead[data-slot='step'] > svg").evaluate("svg => { svg.mpMark = 'ahead'; }")
    ex.locator(".mp-forward").click()
    expect(ex.locator(".mp-diagram .mp-diagram-view")).to_have_attribute("data-shows", re.compile(r", at step 2$"))
    # The layer drawn ahead is the one shown now, the whole run's is gone: nothing was redrawn.
    assert [name for name, _ in ex.evaluate(_LAYERS_JS)] == ["mp-shown"]
    assert ex.locator(".mp-diagram-view > .mp-shown > svg").evaluate("svg => svg.mpMark || null") == "ahead"
    # And it is exactly the diagram of step 2: the whole of it, asked for, is what is shown (a
    # canvas that shows the version asked for keeps it).
    ex.evaluate(_ASK_FOR_THE_WHOLE_DIAGRAM_JS)
    expect(ex.locator(".mp-diagram-source img[data-same]")).to_have_count(1)
    shown_now = ex.evaluate(_SHOWN_AS_SENT_JS)
    transpose_explorer.shot("first-step-from-the-layer-ahead", ex)
    assert shown_now == {"same": True, "mark": "ahead"}, shown_now
    # A later step changes a few dozen elements: patched in place, no layer drawn ahead.
    ex.locator(".mp-forward").click()
    expect(ex.locator(".mp-diagram .mp-diagram-view")).to_have_attribute("data-shows", re.compile(r", at step 3$"))
    assert [name for name, _ in ex.evaluate(_LAYERS_JS)] == ["mp-shown"]
    assert ex.locator(".mp-diagram-view > .mp-shown > svg").evaluate("svg => svg.mpMark || null") == "ahead"


def test_the_first_finding_click_shows_the_layer_laid_out_ahead(transpose_explorer: Lab) -> None:
    from playwright.sync_api import expect

    ex = transpose_explorer.page.locator(".mp-explorer").first
    view = ex.locator(".mp-diagram .mp-diagram-view")
    # Once the explorer is idle: the finding's diagram under the one shown, laid out ahead.
    expect(ex.locator(_FINDING_LAYER)).to_have_count(1)
    assert ex.locator(_FINDING_LAYER).evaluate("svg => svg.parentNode.querySelectorAll('*').length") > 1000
    ex.locator(_FINDING_LAYER).evaluate("svg => { svg.mpMark = 'finding'; }")
    # It stays while the learner steps and picks another thread.
    ex.locator(".mp-forward").click()
    expect(view).to_have_attribute("data-shows", re.compile(r", all phases, at step 2$"))
    shows = view.get_attribute("data-shows")
    ex.locator(".mp-lane-buttons button").nth(5).click()
    expect(view).not_to_have_attribute("data-shows", shows)
    expect(ex.locator(_FINDING_LAYER)).to_have_count(1)
    assert ex.locator(_FINDING_LAYER).evaluate("svg => svg.mpMark || null") == "finding"
    # The click on the finding shows its thread, in its phase, at its step: the layer laid out ahead.
    ex.locator(".mp-finding").first.click()
    expect(view).to_have_attribute("data-shows", re.compile(r"^thread \(1,0\).*, phase 0, at step 10$"))
    expect(ex.locator(".mp-step-label")).to_contain_text("step 10 /")
    assert ex.locator(".mp-diagram-view > .mp-shown > svg").evaluate("svg => svg.mpMark || null") == "finding"
    expect(ex.locator(_FINDING_LAYER)).to_have_count(0)
    # And it is exactly the finding's diagram: the whole of it, asked for, is what is shown.
    ex.evaluate(_ASK_FOR_THE_WHOLE_DIAGRAM_JS)
    expect(ex.locator(".mp-diagram-source img[data-same]")).to_have_count(1)
    shown_now = ex.evaluate(_SHOWN_AS_SENT_JS)
    transpose_explorer.shot("first-finding-from-the-layer-ahead", ex)
    assert shown_now == {"same": True, "mark": "finding"}, shown_now
