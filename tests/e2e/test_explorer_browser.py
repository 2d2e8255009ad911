"""The kernel explorer as a learner uses it: in JupyterLab, in a browser, with mouse and keyboard.

One notebook (written here with nbformat, so no outputs are committed) holds a correct Map
puzzle, the progress table and a buggy loop kernel. The test opens it in a real JupyterLab in
headless Chromium, runs all cells from the Run menu and drives the ipywidgets explorer. A
screenshot of the page is saved to test-artifacts/e2e/ after every interaction, and on failure.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

from .conftest import KERNEL_NAME, LabServer

pytestmark = pytest.mark.e2e

NOTEBOOK_NAME = "explorer_demo.ipynb"
EXPLORERS_TIMEOUT = 240.0  # seconds: kernel start, imports of mlx and the simulator, two traced runs
UI_TIMEOUT_MS = 30_000  # one widget round trip to the kernel and back (a Check runs the hidden tests)

MAP_CELL = '''\
import mlx.core as mx
from metal_puzzles import MetalKernel, MetalProblem


def map_test(a):
    source = """
uint i = thread_position_in_grid.x;
out[i] = a[i] + 10;
"""
    return MetalKernel(name="map", input_names=["a"], output_names=["out"], source=source)


problem = MetalProblem("Map", map_test, [mx.arange(4)], (4,), (4, 1, 1), (4, 1, 1))
problem.explore()'''

PROGRESS_CELL = '''\
import metal_puzzles

metal_puzzles.progress()'''

# A running total that leaves out the thread's own element (j < i instead of j <= i): thread 0
# never enters the loop, so it is inactive while the others run the loop body, and Check fails.
LOOP_CELL = '''\
import numpy as np


def running_total_test(a):
    source = """
uint i = thread_position_in_grid.x;
float total = 0;
for (uint j = 0; j < i; j++) {
    total += a[j];
}
out[i] = total;
"""
    return MetalKernel(name="running_total", input_names=["a"], output_names=["out"], source=source)


running = MetalProblem("Running total", running_total_test, [mx.arange(4)], (4,), (4, 1, 1), (4, 1, 1),
                       spec=np.cumsum)
running.explore()'''

MAP_CELL_INDEX, PROGRESS_CELL_INDEX, LOOP_CELL_INDEX = 1, 2, 3


def write_notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "Python (metal-puzzles e2e)",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Kernel explorer, end to end"),
                nbformat.v4.new_code_cell(MAP_CELL),
                nbformat.v4.new_code_cell(PROGRESS_CELL),
                nbformat.v4.new_code_cell(LOOP_CELL)]
    nbformat.validate(nb)
    nbformat.write(nb, path)


# ------------------------------------------------------------------------------- the page
@dataclass
class Lab:
    """The notebook page, with numbered screenshots of everything done to it."""

    page: object
    artifacts: Path
    shots: list[Path] = field(default_factory=list)

    def shot(self, name: str, focus=None) -> Path:
        if focus is not None:
            focus.scroll_into_view_if_needed(timeout=5_000)
        path = self.artifacts / f"{len(self.shots) + 1:02d}-{name}.png"
        self.page.screenshot(path=str(path))
        self.shots.append(path)
        return path

    def shot_quietly(self, name: str) -> None:
        """A screenshot while something already failed: never raise over the real error."""
        try:
            self.shot(name)
        except Exception:  # noqa: BLE001 - best effort only
            pass

    def explorer(self, n: int):
        return self.page.locator(".mp-explorer").nth(n)

    def cell(self, n: int):
        return self.page.locator(".jp-Notebook .jp-Cell").nth(n)


def _error_outputs(page) -> list[str]:
    """Tracebacks printed by the cells (error outputs are rendered as stderr)."""
    texts = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts()
    return [t for t in texts if "Traceback" in t or "Error" in t]


def _wait_for_explorers(lab: Lab, count: int) -> None:
    """Until ``count`` explorers are drawn; fail early, with the traceback, if a cell raised."""
    deadline = time.monotonic() + EXPLORERS_TIMEOUT
    while lab.page.locator(".mp-explorer").count() < count:
        errors = _error_outputs(lab.page)
        if errors:
            lab.shot_quietly("FAILED-cell-error")
            pytest.fail("a notebook cell raised instead of showing the explorer:\n" + "\n\n".join(errors)[:4000])
        if time.monotonic() > deadline:
            lab.shot_quietly("FAILED-no-explorer")
            pytest.fail(f"no explorer appeared within {EXPLORERS_TIMEOUT:.0f} s "
                        f"({lab.page.locator('.mp-explorer').count()} of {count})")
        lab.page.wait_for_timeout(500)


def _run_all_cells(page) -> None:
    """Run > Run All Cells, through the menu bar as a learner would."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    label = page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$"))
    page.locator(".lm-Menu-item", has=label).click()


@pytest.fixture(scope="module")
def lab(lab_server: LabServer, browser, artifacts_dir: Path) -> Iterator[Lab]:
    """The demo notebook open in JupyterLab with all its cells run and both explorers drawn."""
    from playwright.sync_api import expect

    expect.set_options(timeout=UI_TIMEOUT_MS)
    write_notebook(lab_server.root_dir / NOTEBOOK_NAME)
    context = browser.new_context(viewport={"width": 1400, "height": 1300})
    page = context.new_page()
    page.set_default_timeout(60_000)
    console = (artifacts_dir / "browser-console.log").open("w")
    page.on("console", lambda m: console.write(f"[{m.type}] {m.text}\n"))
    page.on("pageerror", lambda e: console.write(f"[pageerror] {e}\n"))
    lab = Lab(page, artifacts_dir)
    try:
        page.goto(lab_server.url(f"lab/tree/{NOTEBOOK_NAME}"), timeout=120_000)
        # The notebook is open and its kernel has started.
        expect(page.locator(".jp-NotebookPanel .jp-Cell").first).to_be_visible(timeout=120_000)
        expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first).to_be_attached(
            timeout=120_000)
        lab.shot("notebook-opened")
        _run_all_cells(page)
        _wait_for_explorers(lab, 2)
        expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first).to_be_attached(
            timeout=120_000)
        lab.shot("cells-run", lab.explorer(0))
        yield lab
    except BaseException:
        lab.shot_quietly("FAILED-setup")
        raise
    finally:
        console.close()
        context.close()


@pytest.fixture(autouse=True)
def _screenshot_on_failure(request: pytest.FixtureRequest, lab: Lab) -> Iterator[None]:
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        lab.shot_quietly(f"FAILED-{request.node.name}")


# ------------------------------------------------------------------------------ helpers
def press_right(lab: Lab, slider, times: int) -> None:
    """Move an IntSlider with the keyboard: focus its handle, press the right arrow."""
    slider.locator(".noUi-handle").first.focus()
    for _ in range(times):
        lab.page.keyboard.press("ArrowRight")


def step_until_line(lab: Lab, explorer, text: str, max_steps: int = 40) -> None:
    """Click 'step' until the highlighted source line contains ``text``."""
    from playwright.sync_api import expect

    current = explorer.locator(".mp-source .mp-current")
    label = explorer.locator(".mp-step-label")
    for _ in range(max_steps):
        if text in current.inner_text():
            return
        before = label.inner_text()
        explorer.locator(".mp-forward").click()
        expect(label).not_to_have_text(before)
    pytest.fail(f"stepping {max_steps} times never reached a line containing {text!r}")


# -------------------------------------------------------------------------------- tests
def test_map_explorer_threads_steps_and_check(lab: Lab) -> None:
    from playwright.sync_api import expect

    ex = lab.explorer(0)
    who, accesses = ex.locator(".mp-who"), ex.locator(".mp-counts .mp-accesses li")
    expect(who).to_have_text("thread (0,0,0) of threadgroup (0,0,0)")
    expect(accesses).to_have_text(["line 3: read a[0] (phase 0)", "line 3: write out[0] (phase 0)"])
    expect(ex.locator(".mp-diagram svg")).to_have_count(1)
    expect(ex.locator(".mp-step-label")).to_have_text("step 1 / 2: line 2")
    expect(ex.locator(".mp-source .mp-current")).to_contain_text("uint i = thread_position_in_grid.x;")
    diagram_before = ex.locator(".mp-diagram").inner_html()

    # Pick thread 2 with the keyboard.
    press_right(lab, ex.locator(".mp-thread"), 2)
    expect(who).to_have_text("thread (2,0,0) of threadgroup (0,0,0)")
    expect(ex.locator(".mp-thread .widget-readout")).to_have_text("2")
    expect(accesses).to_have_text(["line 3: read a[2] (phase 0)", "line 3: write out[2] (phase 0)"])
    expect(ex.locator(".mp-counts .mp-mine")).to_have_text(["1", "1", "0", "0", "0"])
    assert ex.locator(".mp-diagram").inner_html() != diagram_before, "the diagram did not follow the thread"
    lab.shot("map-thread-2", ex)

    # One step forward: the next line is highlighted and thread 2 has i = 2.
    ex.locator(".mp-forward").click()
    expect(ex.locator(".mp-step-label")).to_have_text("step 2 / 2: line 3")
    expect(ex.locator(".mp-source .mp-current")).to_have_count(1)
    expect(ex.locator(".mp-source .mp-current")).to_contain_text("out[i] = a[i] + 10;")
    expect(ex.locator(".mp-variables td")).to_have_text(["i", "2"])
    lab.shot("map-step-forward", ex)

    # Stepping past the end stays on the last step; stepping back returns to the first.
    ex.locator(".mp-forward").click()
    ex.locator(".mp-back").click()
    expect(ex.locator(".mp-step-label")).to_have_text("step 1 / 2: line 2")
    expect(ex.locator(".mp-source .mp-current")).to_contain_text("uint i = thread_position_in_grid.x;")
    lab.shot("map-step-back", ex)

    # Check runs the visible and hidden tests in the kernel.
    ex.locator(".mp-check").click()
    expect(ex.locator(".mp-verdict")).to_contain_text("Passed", timeout=60_000)
    expect(ex.locator(".mp-verdict")).to_contain_text("Map is correct on all")
    lab.shot("map-check-passed", ex.locator(".mp-verdict"))


def test_progress_table_follows_check(lab: Lab) -> None:
    from playwright.sync_api import expect

    # Ran before Check was clicked: Map not tried yet.
    cell = lab.cell(PROGRESS_CELL_INDEX)
    map_state = cell.locator(".mp-progress tr", has=lab.page.locator("td:text-is('Map')")).locator(".mp-state")
    expect(map_state).to_have_text("not tried")
    if lab.page.locator(".mp-verdict", has_text="Passed").count() == 0:
        lab.explorer(0).locator(".mp-check").click()
        expect(lab.explorer(0).locator(".mp-verdict")).to_contain_text("Passed", timeout=60_000)
    # Run the progress cell again (select it, Shift+Enter): Map is now solved within budget.
    cell.locator(".jp-InputPrompt").click()
    lab.page.keyboard.press("Shift+Enter")
    expect(map_state).to_have_text("passing within budget")
    expect(cell.locator(".mp-progress caption")).to_contain_text("1 of")
    lab.shot("progress-after-check", cell)


def test_loop_explorer_shows_inactive_thread_and_failed_check(lab: Lab) -> None:
    from playwright.sync_api import expect

    ex = lab.explorer(1)
    ex.scroll_into_view_if_needed()
    expect(ex.locator(".mp-who")).to_have_text("thread (0,0,0) of threadgroup (0,0,0)")
    # Thread 0 reads nothing: its only access is the write of out[0].
    expect(ex.locator(".mp-counts .mp-accesses li")).to_have_text(["line 7: write out[0] (phase 0)"])

    # At the loop body thread 0 (j < 0 never holds) sits idle while the others add.
    step_until_line(lab, ex, "total += a[j];")
    expect(ex.locator(".mp-variables")).to_contain_text("this thread is inactive at this step")
    lab.shot("loop-thread-0-inactive", ex)

    # Thread 3 is active at the same step, in its first iteration.
    press_right(lab, ex.locator(".mp-thread"), 3)
    expect(ex.locator(".mp-who")).to_have_text("thread (3,0,0) of threadgroup (0,0,0)")
    expect(ex.locator(".mp-source .mp-current")).to_contain_text("total += a[j];")
    expect(ex.locator(".mp-variables")).not_to_contain_text("inactive")
    expect(ex.locator(".mp-variables tr", has=lab.page.locator("td:text-is('i')")).locator("td").nth(1)).to_have_text("3")
    expect(ex.locator(".mp-variables tr", has=lab.page.locator("td:text-is('j')")).locator("td").nth(1)).to_have_text("0")
    expect(ex.locator(".mp-counts .mp-accesses li")).to_have_text([
        "line 5: read a[0] (phase 0)", "line 5: read a[1] (phase 0)", "line 5: read a[2] (phase 0)",
        "line 7: write out[3] (phase 0)"])
    lab.shot("loop-thread-3-active", ex)

    # The kernel is wrong, and Check says so, in place.
    ex.locator(".mp-check").click()
    verdict = ex.locator(".mp-verdict")
    expect(verdict).to_contain_text("Failed", timeout=60_000)
    expect(verdict).not_to_contain_text("Passed")
    expect(verdict).to_contain_text("[0 0 1 3]")
    lab.shot("loop-check-failed", verdict)


# What a person can actually see: an element is visible at its own centre (not clipped by an
# overflow box, not covered by a neighbour) and its text is not cut short.
_VISIBILITY_JS = """
(el) => {
  el.scrollIntoView({block: 'center'});
  const r = el.getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return {shown: hit !== null && (hit === el || el.contains(hit)),
          truncated: el.scrollWidth > el.clientWidth + 1,
          width: Math.round(r.width), text: el.innerText};
}
"""


def test_explorer_layout_keeps_everything_readable(lab: Lab) -> None:
    ex = lab.explorer(0)
    problems = []
    for cell in ex.locator(".mp-counts .mp-mine").all():
        seen = cell.evaluate(_VISIBILITY_JS)
        if not seen["shown"]:
            problems.append(f"a count of the counts table ({seen['text']!r}) is hidden (width {seen['width']} px)")
    for item in ex.locator(".mp-counts .mp-accesses li").all():
        seen = item.evaluate(_VISIBILITY_JS)
        if not seen["shown"] or seen["width"] < 150:
            problems.append(f"the access {seen['text']!r} is squeezed into {seen['width']} px")
    for name in ("mp-group", "mp-thread", "mp-phase"):
        seen = ex.locator(f".{name} .widget-label").evaluate(_VISIBILITY_JS)
        if seen["truncated"]:
            problems.append(f"the label {seen['text']!r} of .{name} is cut short ({seen['width']} px)")
    lab.shot("map-layout", ex.locator(".mp-counts"))
    assert not problems, "the explorer is hard to read:\n" + "\n".join(problems)
