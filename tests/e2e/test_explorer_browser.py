"""The kernel explorer as a learner uses it: in JupyterLab and in Jupyter Notebook 7, in a
browser, with mouse and keyboard.

One notebook (written here with nbformat, so no outputs are committed) holds a correct Map
puzzle, the progress table and a buggy loop kernel. The test opens it in a real JupyterLab (then
a real Notebook 7) in headless Chromium, runs all cells from the Run menu and drives the
ipywidgets explorer. A screenshot of the page is saved to test-artifacts/e2e/<lab|notebook>/ after
every interaction, and on failure.

Every wait is for a state the page shows, never for a length of time: the explorer's widgets are
updated by separate messages from the kernel, so a check reads one widget only once the widget
that changed last says the change is done (see ``step_until_line``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from metal_puzzles.notebook.book import JupyterUI

from .conftest import KERNEL_NAME, JupyterServer
from .pages import Lab, error_outputs, wait_for_kernel

pytestmark = pytest.mark.e2e

NOTEBOOK_NAME = "explorer_demo.ipynb"
EXPLORERS_TIMEOUT = 360.0  # seconds: kernel start, imports of mlx and the simulator, seven traced runs

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

# A window sum that overwrites its slot before the neighbour has read it: a race in phase 1.
RACY_CELL = '''\
def racy_window_test(a):
    source = """
threadgroup float shared[4];
uint i = thread_position_in_grid.x;
uint li = thread_position_in_threadgroup.x;
shared[li] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
float total = shared[li];
shared[li] = 0;
if (li > 0) {
    total += shared[li - 1];
}
out[i] = total;
"""
    return MetalKernel(name="racy_window", input_names=["a"], output_names=["out"], source=source)


racy = MetalProblem("Racy window", racy_window_test, [mx.arange(8)], (8,), (8, 1, 1), (4, 1, 1))
racy.explore()'''

# explore() on a kernel that does not compile: the compiler's error, no traceback.
BROKEN_CELL = '''\
def broken_test(a):
    source = """
uint i = thread_position_in_grid.x;
out[i] = a[j];
"""
    return MetalKernel(name="broken", input_names=["a"], output_names=["out"], source=source)


MetalProblem("Broken", broken_test, [mx.arange(4)], (4,), (4, 1, 1)).explore()'''

# The Guard puzzle without its guard: 8 threads over 4 elements, threads 4 to 7 read and write past the end.
GUARD_CELL = '''\
def guard_test(a):
    source = """
uint local_i = thread_position_in_grid.x;
out[local_i] = a[local_i] + 10;
"""
    return MetalKernel(name="guard", input_names=["a"], output_names=["out"], source=source)


guard = MetalProblem("Guard", guard_test, [mx.arange(4)], (4,), (8, 1, 1), (8, 1, 1))
guard.explore()'''

# Dot Product with a tree reduction and no barrier inside the loop: at s = 2 thread 0 reads
# shared[2], which thread 2 wrote at s = 4 with no barrier between. Thirty comment lines make
# the listing taller than its box, so the last line is out of view until a step goes there.
DOT_CELL = '''\
def dot_test(a, b):
    source = """
threadgroup float shared[8];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
shared[local_i] = a[i] * b[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint s = 4; s > 0; s /= 2) {
    if (local_i < s) {
        shared[local_i] += shared[local_i + s];
    }
}
//  1: room to make the listing longer than its half screen
//  2: room to make the listing longer than its half screen
//  3: room to make the listing longer than its half screen
//  4: room to make the listing longer than its half screen
//  5: room to make the listing longer than its half screen
//  6: room to make the listing longer than its half screen
//  7: room to make the listing longer than its half screen
//  8: room to make the listing longer than its half screen
//  9: room to make the listing longer than its half screen
// 10: room to make the listing longer than its half screen
// 11: room to make the listing longer than its half screen
// 12: room to make the listing longer than its half screen
// 13: room to make the listing longer than its half screen
// 14: room to make the listing longer than its half screen
// 15: room to make the listing longer than its half screen
// 16: room to make the listing longer than its half screen
// 17: room to make the listing longer than its half screen
// 18: room to make the listing longer than its half screen
// 19: room to make the listing longer than its half screen
// 20: room to make the listing longer than its half screen
// 21: room to make the listing longer than its half screen
// 22: room to make the listing longer than its half screen
// 23: room to make the listing longer than its half screen
// 24: room to make the listing longer than its half screen
// 25: room to make the listing longer than its half screen
// 26: room to make the listing longer than its half screen
// 27: room to make the listing longer than its half screen
// 28: room to make the listing longer than its half screen
// 29: room to make the listing longer than its half screen
// 30: room to make the listing longer than its half screen
if (local_i == 0) {
    out[0] = shared[0];
}
"""
    return MetalKernel(name="dot_product", input_names=["a", "b"], output_names=["out"], source=source)


dot = MetalProblem("Dot Product", dot_test, [mx.arange(8, dtype=mx.float32), mx.arange(8, dtype=mx.float32)],
                   (1,), (8, 1, 1), (8, 1, 1))
dot.explore()'''

# One threadgroup of 1,024 threads (the most Metal allows) over 1,000 elements: a correct guard
# leaves the last 24 threads idle.
WIDE_CELL = '''\
def wide_test(a):
    source = """
uint i = thread_position_in_grid.x;
if (i < 1000) {
    out[i] = a[i] * 2;
}
"""
    return MetalKernel(name="wide", input_names=["a"], output_names=["out"], source=source)


wide = MetalProblem("Wide", wide_test, [mx.arange(1000, dtype=mx.float32)], (1000,), (1024, 1, 1), (1024, 1, 1),
                    spec=lambda a: a * 2)
wide.explore()'''

# A 1,024-thread threadgroup with a longer kernel and a finding: III.1 (Tiled Transpose) without
# its barrier, 32x32 threads, as the click benchmark explores it.
TRANSPOSE_CELL = '''\
import warnings
from metal_puzzles.checking import run_case
from metal_puzzles.puzzles import get_puzzle, solution_source
from metal_puzzles.explorer.widgets import explore_run

transpose = get_puzzle("tiled_transpose")
racy_transpose = transpose.kernel(solution_source(transpose).replace("threadgroup_barrier(mem_flags::mem_threadgroup);", ""))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    transpose_run = run_case(racy_transpose, transpose.visible, trace=True, steps=True, cost=True)
explore_run(transpose_run, "III.1 without its barrier")'''

# Dot Product's diagram as show() draws it, outside the explorer.
SHOW_CELL = "dot.show()"

# After a markdown title: code cell k is page cell k + 1.
CELLS = (MAP_CELL, PROGRESS_CELL, LOOP_CELL, RACY_CELL, BROKEN_CELL, GUARD_CELL, DOT_CELL, WIDE_CELL, TRANSPOSE_CELL,
         SHOW_CELL)
SHOW_CELL_INDEX = len(CELLS)
PROGRESS_CELL_INDEX = 2
BROKEN_CELL_INDEX = 5
# Explorers in page order (the broken kernel's cell draws none).
MAP, LOOP, RACY, GUARD, DOT, WIDE, TRANSPOSE = range(7)


def write_notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "Python (metal-puzzles e2e)",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Kernel explorer, end to end"),
                *(nbformat.v4.new_code_cell(source) for source in CELLS)]
    nbformat.validate(nb)
    nbformat.write(nb, path)


def wait_for_cells_run(lab: Lab, timeout_ms: int = 120_000) -> None:
    """Until every code cell has an execution count ('[n]:'), none queued or running ('[*]:')."""
    from playwright.sync_api import expect

    prompts = lab.page.locator(".jp-Notebook .jp-CodeCell .jp-InputPrompt")
    expect(prompts).to_have_count(len(CELLS))
    expect(prompts).to_have_text([re.compile(r"\[\d+\]:")] * len(CELLS), timeout=timeout_ms)


def _wait_for_explorers(lab: Lab, count: int) -> None:
    """Until ``count`` explorers are drawn; fail early, with the traceback, if a cell raised."""
    deadline = time.monotonic() + EXPLORERS_TIMEOUT
    while lab.page.locator(".mp-explorer").count() < count:
        dialogs = lab.page.locator(".jp-Dialog").all_inner_texts()
        if dialogs:
            lab.shot_quietly("FAILED-dialog")
            pytest.fail("JupyterLab opened a dialog instead of running the cells:\n" + "\n".join(dialogs))
        errors = error_outputs(lab.page)
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
def lab(browser, jupyter_server: JupyterServer, artifacts_dir: Path) -> Iterator[Lab]:
    """The demo notebook open in JupyterLab or Notebook 7 with all its cells run and all its
    explorers drawn."""
    from playwright.sync_api import expect

    artifacts_dir = artifacts_dir / jupyter_server.ui.value
    artifacts_dir.mkdir(exist_ok=True)
    write_notebook(jupyter_server.root_dir / NOTEBOOK_NAME)
    write_notebook(artifacts_dir / NOTEBOOK_NAME)  # to open by hand when a run fails
    context = browser.new_context(viewport={"width": 1400, "height": 1300})
    page = context.new_page()
    page.set_default_timeout(60_000)
    console = (artifacts_dir / "browser-console.log").open("w")
    page.on("console", lambda m: console.write(f"[{m.type}] {m.text}\n"))
    page.on("pageerror", lambda e: console.write(f"[pageerror] {e}\n"))
    lab = Lab(page, artifacts_dir)
    try:
        page.goto(jupyter_server.notebook_url(NOTEBOOK_NAME), timeout=120_000)
        # Wait until the notebook is loaded and its kernel has started and is idle: Run All
        # before that opens a "Select Kernel" dialog instead of running anything.
        expect(page.locator(".jp-NotebookPanel .jp-Cell")).to_have_count(len(CELLS) + 1, timeout=120_000)
        wait_for_kernel(lab, jupyter_server, NOTEBOOK_NAME, "metal-puzzles e2e")
        lab.shot("notebook-opened")
        _run_all_cells(page)
        _wait_for_explorers(lab, len(range(MAP, TRANSPOSE + 1)))
        wait_for_cells_run(lab)
        lab.shot("cells-run", lab.explorer(MAP))
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
_STEP_LABEL = re.compile(r"step (\d+) / (\d+): line (\d+)")
_STEP_LABEL_ANY = re.compile(r"step (\d+) / (\d+): ")  # a line, or "after the last line"


def step_until_line(lab: Lab, explorer, text: str, max_steps: int = 40) -> None:
    """Click 'step' until the step reaches the first source line containing ``text``.

    A step updates three widgets by three kernel messages: the step label, then the source
    listing, then the variables. Reading the listing right after the label changed could see the
    previous step's highlight, step once more and overshoot into the next loop iteration (a
    variable read 1 instead of 0). So the decision is made on the label alone, which names the
    step and its line in one text, each click waits for the label to show exactly the next
    step, and on arrival the listing is awaited too."""
    from playwright.sync_api import expect

    label = explorer.locator(".mp-step-label")
    lines = explorer.locator(".mp-source .mp-line").all_inner_texts()
    target = next((n for n, line in enumerate(lines, start=1) if text in line), None)
    assert target is not None, f"no source line contains {text!r}"
    for _ in range(max_steps):
        step, total, line = map(int, _STEP_LABEL.search(label.inner_text()).groups())
        if line == target:
            expect(explorer.locator(".mp-source .mp-current")).to_contain_text(text)
            return
        if step == total:
            break
        explorer.locator(".mp-forward").click()
        expect(label).to_have_text(re.compile(rf"step {step + 1} / {total}: line \d+"))
    pytest.fail(f"stepping never reached line {target} ({text!r}); stopped at {label.inner_text()!r}")


COUNTS, COST = ("counts of this thread's accesses", ".mp-counts"), ("cost model (", ".mp-cost")


def expect_diagram_of(explorer, shows: str | re.Pattern) -> None:
    """Until the diagram drawn is the one of ``shows`` (thread and phase, and the step it stands at
    once the learner stepped or jumped; a pattern is matched as given): the explorer sends the
    diagram last, after the texts, so a test that reads them may still see the diagram before."""
    from playwright.sync_api import expect

    if isinstance(shows, str):
        shows = re.compile(re.escape(shows) + r"(, at step \d+)?$")
    expect(explorer.locator(".mp-diagram .mp-diagram-view")).to_have_attribute("data-shows", shows)


def open_section(explorer, section: tuple[str, str]) -> None:
    """Open a collapsed section of the explorer (an ipywidgets Accordion: COUNTS or COST) by a
    click on its title, and wait until its content is shown."""
    from playwright.sync_api import expect

    title, content = section
    details = explorer.locator(".mp-details")
    if details.locator(content).is_visible():
        return
    header = details.get_by_text(re.compile("^" + re.escape(title))).first
    header.scroll_into_view_if_needed()
    header.click()
    expect(details.locator(content)).to_be_visible()


def thread_button(explorer, thread: int):
    """The button of a thread in a small threadgroup's picker."""
    return explorer.locator(".mp-thread-buttons button", has_text=re.compile(rf"^{thread}$"))


def variable(explorer, name: str):
    """The cell that shows a variable's value in the variables table."""
    return explorer.locator(".mp-variables tr", has=explorer.page.locator(f"td:text-is('{name}')")).locator("td").nth(1)


# -------------------------------------------------------------------------------- tests
def test_map_explorer_threads_steps_and_check(lab: Lab) -> None:
    from playwright.sync_api import expect

    ex = lab.explorer(MAP)
    who, accesses = ex.locator(".mp-who"), ex.locator(".mp-accesses li")
    expect(who).to_have_text("thread 0")
    expect(accesses).to_have_text(["line 3: read a[0] (phase 0)", "line 3: write out[0] (phase 0)"])
    expect(ex.locator(".mp-diagram .mp-shown > svg")).to_have_count(1)
    # Two statements, and (when the record keeps it) a last step after them: what the kernel left.
    label = ex.locator(".mp-step-label")
    expect(label).to_have_text(re.compile(r"^step 1 / [23]: line 2$"))
    total = int(_STEP_LABEL.search(label.inner_text()).group(2))
    expect(ex.locator(".mp-source .mp-current")).to_contain_text("uint i = thread_position_in_grid.x;")
    diagram_before = ex.locator(".mp-diagram").inner_html()

    # Pick thread 2: its button, the one thread control (no slider beside the buttons).
    expect(ex.locator(".mp-thread")).to_be_hidden()
    thread_button(ex, 2).click()
    expect(who).to_have_text("thread 2")
    expect(ex.locator(".mp-thread-buttons button.mod-active")).to_have_text("2")
    expect(accesses).to_have_text(["line 3: read a[2] (phase 0)", "line 3: write out[2] (phase 0)"])
    expect(ex.locator(".mp-counts .mp-mine")).to_have_text(["1", "1", "0", "0", "0"])
    expect_diagram_of(ex, "thread 2, all phases")
    assert ex.locator(".mp-diagram").inner_html() != diagram_before, "the diagram did not follow the thread"
    lab.shot("map-thread-2", ex)

    # One step forward: the next line is highlighted and thread 2 has i = 2.
    ex.locator(".mp-forward").click()
    expect(label).to_have_text(f"step 2 / {total}: line 3")
    expect(ex.locator(".mp-source .mp-current")).to_have_count(1)
    expect(ex.locator(".mp-source .mp-current")).to_contain_text("out[i] = a[i] + 10;")
    expect(ex.locator(".mp-variables td")).to_have_text(["i", "2"])
    lab.shot("map-step-forward", ex)
    if total == 3:
        ex.locator(".mp-forward").click()
        expect(label).to_have_text("step 3 / 3: after the last line")
        expect(ex.locator(".mp-source .mp-current")).to_have_count(0)

    # At the last step there is nowhere further to go (step is disabled); back returns to the first.
    expect(ex.locator(".mp-forward")).to_be_disabled()
    for step in range(total - 1, 0, -1):
        ex.locator(".mp-back").click()
        expect(label).to_have_text(re.compile(rf"^step {step} / {total}: "))
    expect(label).to_have_text(f"step 1 / {total}: line 2")
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
        lab.explorer(MAP).locator(".mp-check").click()
        expect(lab.explorer(MAP).locator(".mp-verdict")).to_contain_text("Passed", timeout=60_000)
    # Run the progress cell again (select it, Shift+Enter): Map is now solved within budget.
    cell.locator(".jp-InputPrompt").click()
    lab.page.keyboard.press("Shift+Enter")
    expect(map_state).to_have_text("passing within budget")
    expect(cell.locator(".mp-progress caption")).to_contain_text("1 of")
    lab.shot("progress-after-check", cell)


def test_loop_explorer_shows_inactive_thread_and_failed_check(lab: Lab) -> None:
    from playwright.sync_api import expect

    ex = lab.explorer(LOOP)
    ex.scroll_into_view_if_needed()
    expect(ex.locator(".mp-who")).to_have_text("thread 0")
    # Thread 0 reads nothing: its only access is the write of out[0].
    expect(ex.locator(".mp-accesses li")).to_have_text(["line 7: write out[0] (phase 0)"])

    # At the loop body thread 0 (j < 0 never holds) sits idle while the others add.
    step_until_line(lab, ex, "total += a[j];")
    expect(ex.locator(".mp-variables")).to_contain_text("this thread is inactive at this step")
    lab.shot("loop-thread-0-inactive", ex)

    # Thread 3 is active at the same step, in its first iteration.
    thread_button(ex, 3).click()
    expect(ex.locator(".mp-who")).to_have_text("thread 3")
    expect(ex.locator(".mp-source .mp-current")).to_contain_text("total += a[j];")
    expect(ex.locator(".mp-variables")).not_to_contain_text("inactive")
    expect(ex.locator(".mp-variables tr", has=lab.page.locator("td:text-is('i')")).locator("td").nth(1)).to_have_text("3")
    expect(ex.locator(".mp-variables tr", has=lab.page.locator("td:text-is('j')")).locator("td").nth(1)).to_have_text("0")
    expect(ex.locator(".mp-accesses li")).to_have_text([
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


# What a person sees of an element without scrolling sideways: how much of its width is inside
# every box that clips it (up to the cell's output area), on how many lines its text wraps, and
# whether its text is cut short (an ellipsis: the text is wider than the content box).
_READABILITY_JS = """
(el) => {
  const clippers = [];
  for (let a = el.parentElement; a && !a.classList.contains('jp-OutputArea-output'); a = a.parentElement) {
    if (getComputedStyle(a).overflowX !== 'visible') { a.scrollLeft = 0; clippers.push(a); }
  }
  const box = el.getBoundingClientRect();
  let left = box.left, right = box.right;
  for (const a of clippers) {
    const r = a.getBoundingClientRect();
    left = Math.max(left, r.left + a.clientLeft);
    right = Math.min(right, r.left + a.clientLeft + a.clientWidth);
  }
  const range = document.createRange();
  range.selectNodeContents(el);
  const style = getComputedStyle(el);
  const content = box.width - ['paddingLeft', 'paddingRight', 'borderLeftWidth', 'borderRightWidth']
    .reduce((sum, k) => sum + parseFloat(style[k]), 0);
  return {visible: box.width > 0 ? Math.max(0, right - left) / box.width : 0,
          lines: new Set(Array.from(range.getClientRects(), r => Math.round(r.top))).size,
          truncated: range.getBoundingClientRect().width > content + 0.01,
          width: Math.round(box.width), text: el.innerText};
}
"""


def readability_problems(explorer) -> list[str]:
    problems = []
    for cell in explorer.locator(".mp-counts .mp-mine").all():
        seen = cell.evaluate(_READABILITY_JS)
        if seen["visible"] < 0.99:
            problems.append(f"a count in the counts table ({seen['text']!r}) is {1 - seen['visible']:.0%} "
                            "hidden (scrolled out of its row)")
    for item in explorer.locator(".mp-accesses li").all():
        seen = item.evaluate(_READABILITY_JS)
        if seen["visible"] < 0.99 or seen["lines"] > 1:
            problems.append(f"the access {seen['text']!r} is squeezed into {seen['width']} px: "
                            f"{seen['lines']} lines, {seen['visible']:.0%} visible")
    for name in ("mp-phase", "mp-picker"):
        seen = explorer.locator(f".{name} .widget-label").first.evaluate(_READABILITY_JS)
        if seen["truncated"]:
            problems.append(f"the label {seen['text']!r} of .{name} is cut short to {seen['width']} px")
    return problems


def test_explorer_layout_keeps_everything_readable(lab: Lab) -> None:
    ex = lab.explorer(MAP)
    open_section(ex, COUNTS)
    problems = readability_problems(ex)
    lab.shot("map-layout", ex.locator(".mp-who"))
    assert not problems, "the explorer is hard to read in a 1400 px wide JupyterLab:\n" + "\n".join(problems)


def test_findings_are_listed_and_a_click_jumps_to_them(lab: Lab) -> None:
    from playwright.sync_api import expect

    ex = lab.explorer(RACY)
    ex.scroll_into_view_if_needed()
    findings = ex.locator(".mp-findings .mp-finding")
    expect(findings).to_have_count(1)
    # (The threads' names may carry their place in the threadgroup: "thread 1 = 1 of threadgroup 0".)
    expect(findings.first).to_contain_text(re.compile(r"race on shared\[0\] in phase 1: thread 1\b[^,]* reads it "
                                                      r"\(line 10\) while thread 0\b[^,]* writes it \(line 8\)"))
    expect(ex.locator(".mp-who")).to_have_text("thread 0 = 0 of threadgroup 0")
    # The line of the finding is flagged in the source.
    expect(ex.locator(".mp-source .mp-line", has=lab.page.locator(".mp-finding-line"))).to_contain_text(
        "total += shared[li - 1];")
    # The diagram marks the race: the element and the two threads (the marks' line width; the
    # browser writes the attributes it serialises in double quotes).
    assert re.search(r"stroke-width=[\"']2\.5[\"']", ex.locator(".mp-diagram").inner_html())
    lab.shot("racy-before-jump", ex)

    findings.first.click()
    expect(ex.locator(".mp-who")).to_have_text("thread 1 = 1 of threadgroup 0")
    expect(ex.locator(".mp-step-label")).to_contain_text("line 10")
    selected = ex.locator(".mp-phase select").evaluate("s => s.options[s.selectedIndex].text")
    assert selected.replace("\xa0", " ") == "phase 1"  # ipywidgets writes a non-breaking space
    expect(ex.locator(".mp-source .mp-current")).to_contain_text("total += shared[li - 1];")
    expect(ex.locator(".mp-finding-detail")).to_contain_text("race: thread 1 = 1 of threadgroup 0 reads "
                                                             "shared[0]")
    # The view of phase 1 still draws the threadgroup memory the thread reads, and its arrows.
    diagram = ex.locator(".mp-diagram")
    expect(diagram).to_contain_text("after phase 0")
    expect(diagram).to_contain_text("race on shared[0]")
    expect(ex.locator(".mp-accesses li")).to_have_text([
        "line 7: read shared[1] (phase 1)", "line 8: write shared[1] (phase 1)", "line 10: read shared[0] (phase 1)",
        "line 12: write out[1] (phase 1)"])
    lab.shot("racy-after-jump", ex)


def test_explore_of_a_kernel_that_does_not_compile_shows_the_compiler_error(lab: Lab) -> None:
    from playwright.sync_api import expect

    cell = lab.cell(BROKEN_CELL_INDEX)
    cell.scroll_into_view_if_needed()
    output = cell.locator(".jp-OutputArea-output")
    expect(output).to_contain_text("source:3:12 (your cell, line 4): error: use of undeclared identifier 'j'")
    assert not error_outputs(lab.page)
    lab.shot("broken-explore", cell)


def _handle(explorer, slider_class: str):
    return explorer.locator(f".{slider_class} .noUi-handle").first


def _active_cell_index(page) -> int:
    return page.evaluate("() => Array.from(document.querySelectorAll('.jp-Notebook .jp-Cell'))"
                         ".findIndex(c => c.classList.contains('jp-mod-active'))")


def test_keys_move_the_thread_and_step_without_the_notebook_taking_them(lab: Lab) -> None:
    """ArrowRight, End, Home and ArrowLeft on a focused thread button move along the threads, on
    the step slider they step, and the notebook keeps its active cell (in Notebook 7 these keys
    used to move to other cells)."""
    from playwright.sync_api import expect

    ex = lab.explorer(GUARD)
    who, label = ex.locator(".mp-who"), ex.locator(".mp-step-label")
    ex.scroll_into_view_if_needed()
    handle = thread_button(ex, 0)
    handle.click()  # a click puts the notebook in command mode, where its shortcuts listen
    expect(who).to_have_text("thread 0")
    expect(handle).to_be_focused()
    cell_before = _active_cell_index(lab.page)
    lab.page.keyboard.press("ArrowRight")
    expect(who).to_have_text("thread 1")
    lab.page.keyboard.press("End")
    expect(who).to_have_text("thread 7")
    expect(ex.locator(".mp-thread-buttons button.mod-active")).to_have_text("7")
    lab.page.keyboard.press("Home")
    expect(who).to_have_text("thread 0")
    expect(thread_button(ex, 0)).to_be_focused()
    assert _active_cell_index(lab.page) == cell_before, "the notebook moved to another cell"
    lab.shot("keys-thread-buttons", ex)

    # The step slider: the same keys step forward, to the end and back.
    step = _handle(ex, "mp-step")
    step.click()
    expect(step).to_be_focused()
    total = int(_STEP_LABEL.search(label.inner_text()).group(2))
    lab.page.keyboard.press("Home")
    expect(label).to_have_text(re.compile(rf"^step 1 / {total}: line 2$"))
    lab.page.keyboard.press("ArrowRight")
    expect(label).to_have_text(f"step 2 / {total}: line 3")
    expect(ex.locator(".mp-source .mp-current")).to_contain_text("out[local_i] = a[local_i] + 10;")
    expect(variable(ex, "local_i")).to_have_text("0")
    lab.page.keyboard.press("ArrowLeft")
    expect(label).to_have_text(f"step 1 / {total}: line 2")
    assert _active_cell_index(lab.page) == cell_before, "the notebook moved to another cell"
    lab.shot("keys-step-slider", ex)


def test_guard_finding_click_shows_the_out_of_bounds_thread_line_and_value(lab: Lab) -> None:
    from playwright.sync_api import expect

    ex = lab.explorer(GUARD)
    ex.scroll_into_view_if_needed()
    finding = ex.locator(".mp-findings .mp-finding").first
    expect(finding).to_contain_text("out of bounds: thread 4 reads a[4] at line 3")
    finding.click()
    expect(ex.locator(".mp-who")).to_have_text("thread 4")
    expect(ex.locator(".mp-thread-buttons button.mod-active")).to_have_text("4")
    expect(ex.locator(".mp-step-label")).to_contain_text("line 3")
    expect(ex.locator(".mp-source .mp-current")).to_contain_text("out[local_i] = a[local_i] + 10;")
    expect(variable(ex, "local_i")).to_have_text("4")
    lab.shot("guard-finding", ex)


def test_guard_a_spare_thread_shows_its_own_out_of_bounds_accesses(lab: Lab) -> None:
    from playwright.sync_api import expect

    ex = lab.explorer(GUARD)
    ex.scroll_into_view_if_needed()
    ex.locator(".mp-thread-buttons button", has_text=re.compile(r"^5$")).click()
    expect(ex.locator(".mp-who")).to_have_text("thread 5")
    lab.shot("guard-thread-5", ex)
    expect(ex.locator(".mp-accesses li")).to_have_text(["line 3: read a[5] (phase 0)", "line 3: write out[5] (phase 0)"],
                                                       timeout=5_000)


def test_a_click_on_an_element_of_the_diagram_selects_the_thread_that_touched_it(lab: Lab) -> None:
    from playwright.sync_api import expect

    ex = lab.explorer(GUARD)
    ex.scroll_into_view_if_needed()
    ex.locator(".mp-thread-buttons button", has_text=re.compile(r"^0$")).click()
    # A click selects among the threads that touched the element before the step shown (an
    # earlier test may have left this explorer mid-run): step to the end, where all of them did.
    step = _handle(ex, "mp-step")
    step.click()
    lab.page.keyboard.press("End")
    expect(ex.locator(".mp-step-label")).to_have_text(re.compile(r"^step (\d+) / \1: "))
    total = int(_STEP_LABEL_ANY.search(ex.locator(".mp-step-label").inner_text()).group(2))
    # The diagram of the last step, not one drawn on the way there (each is replaced in turn).
    expect_diagram_of(ex, re.compile(rf"^thread 0, .*at step {total}$"))
    # out[2] in the diagram: only thread 2 wrote it. The click lands on the cell's (invisible)
    # target, which lies over the value; the page script sends the cell to the kernel.
    ex.locator(".mp-diagram .mp-shown g.mp-cells[data-buffer='out'] rect[data-index='2']").click()
    expect(ex.locator(".mp-who")).to_have_text("thread 2")
    expect(ex.locator(".mp-cell-info")).to_contain_text("out[2]: touched by 1 thread")
    expect(ex.locator(".mp-thread-buttons button.mod-active")).to_have_text("2")
    expect_diagram_of(ex, re.compile(r"^thread 2, "))
    lab.shot("guard-cell-click", ex)
    # a[1] was read by thread 1 only; a click there moves on to it.
    ex.locator(".mp-diagram .mp-shown g.mp-cells[data-buffer='a'] rect[data-index='1']").click()
    expect(ex.locator(".mp-who")).to_have_text("thread 1")
    expect(ex.locator(".mp-accesses li").first).to_have_text("line 3: read a[1] (phase 0)")
    # A thread's swatch in the diagram selects that thread, and the diagram frames it.
    ex.locator(".mp-diagram .mp-shown g.mp-cells[data-space='thread'] rect[data-index='6']").click()
    expect(ex.locator(".mp-who")).to_have_text("thread 6")
    expect(ex.locator(".mp-thread-buttons button.mod-active")).to_have_text("6")
    expect_diagram_of(ex, re.compile(r"^thread 6, "))
    lab.shot("guard-swatch-click", ex)


def _click_dot_race(lab: Lab):
    from playwright.sync_api import expect

    ex = lab.explorer(DOT)
    ex.scroll_into_view_if_needed()
    finding = ex.locator(".mp-findings .mp-finding").first
    expect(finding).to_contain_text("race on shared[2] in phase 1: thread 0 reads it (line 9)")
    finding.click()
    expect(ex.locator(".mp-finding-detail")).to_contain_text("race")
    expect(ex.locator(".mp-who")).to_have_text("thread 0")
    expect(ex.locator(".mp-step-label")).to_contain_text("line 9")
    expect(ex.locator(".mp-source .mp-current")).to_contain_text("shared[local_i] += shared[local_i + s];")
    return ex


def test_dot_product_race_click_shows_the_thread_and_the_line(lab: Lab) -> None:
    from playwright.sync_api import expect

    ex = _click_dot_race(lab)
    expect(variable(ex, "local_i")).to_have_text("0")
    lab.shot("dot-race-finding", ex)


def test_dot_product_race_click_lands_on_the_racing_iteration(lab: Lab) -> None:
    from playwright.sync_api import expect

    ex = _click_dot_race(lab)
    expect(variable(ex, "s")).to_have_text("2", timeout=5_000)  # the read at s = 2, not the first pass at s = 4
    # The diagram shows the run as it stood at that step, not the whole run.
    expect(ex.locator(".mp-diagram .mp-diagram-view")).to_have_attribute("data-shows", re.compile(r"at step \d+$"))


def _within(box: dict | None, width: int, height: int) -> bool:
    return box is not None and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= width + 0.5 \
        and box["y"] + box["height"] <= height + 0.5


def _scroll_to_top_of(explorer) -> None:
    explorer.evaluate("e => e.scrollIntoView({block: 'start'})")


@pytest.fixture
def small_screen(lab: Lab) -> Iterator[tuple[int, int]]:
    """The page at 1400x900 for one test, then back to the fixture's size."""
    before = lab.page.viewport_size
    lab.page.set_viewport_size({"width": 1400, "height": 900})
    try:
        yield 1400, 900
    finally:
        lab.page.set_viewport_size(before)


def _one_screen_problems(ex, width: int, height: int) -> list[str]:
    problems = []
    for what in (".mp-controls", ".mp-stepper", ".mp-source", ".mp-diagram", ".mp-variables", ".mp-source .mp-current"):
        box = ex.locator(what).first.bounding_box()
        if not _within(box, width, height):
            problems.append(f"{what} is not within the {width}x{height} screen: {box}")
    return problems


def test_one_screen_at_1400x900_shows_controls_code_and_diagram(lab: Lab, small_screen) -> None:
    width, height = small_screen
    ex = _click_dot_race(lab)
    # A finding jump shows the run as it stood at the finding's step.
    expect_diagram_of(ex, re.compile(r"^thread 0, phase 1, at step \d+$"))
    _scroll_to_top_of(ex)
    problems = _one_screen_problems(ex, width, height)
    lab.shot("one-screen-dot")
    assert not problems, "\n".join(problems)


def test_a_1024_thread_threadgroup_is_picked_by_simd_group_and_lane_on_one_screen(lab: Lab, small_screen) -> None:
    from playwright.sync_api import expect

    width, height = small_screen
    ex = lab.explorer(WIDE)
    expect(ex.locator(".mp-simd-buttons button")).to_have_count(32)
    expect(ex.locator(".mp-lane-buttons button")).to_have_count(32)
    _scroll_to_top_of(ex)
    ex.locator(".mp-simd-buttons button", has_text=re.compile(r"^3$")).click()
    expect(ex.locator(".mp-who")).to_have_text("thread 96")
    ex.locator(".mp-lane-buttons button", has_text=re.compile(r"^5$")).click()
    expect(ex.locator(".mp-who")).to_have_text("thread 101")
    expect(ex.locator(".mp-simd-buttons button.mod-active")).to_have_text("3")
    expect(ex.locator(".mp-lane-buttons button.mod-active")).to_have_text("5")
    expect(ex.locator(".mp-accesses li")).to_have_text(["line 4: read a[101] (phase 0)",
                                                        "line 4: write out[101] (phase 0)"])
    expect_diagram_of(ex, "thread 101, all phases")
    _scroll_to_top_of(ex)
    problems = _one_screen_problems(ex, width, height)
    lab.shot("wide-thread-101")
    assert not problems, "\n".join(problems)

    # The last thread is a spare one: it says that it did nothing, and why.
    ex.locator(".mp-simd-buttons button", has_text=re.compile(r"^31$")).click()
    expect(ex.locator(".mp-who")).to_have_text("thread 997")
    ex.locator(".mp-lane-buttons button", has_text=re.compile(r"^31$")).click()
    expect(ex.locator(".mp-who")).to_have_text("thread 1023")
    expect(ex.locator(".mp-idle")).to_have_text("this thread did nothing: the condition on line 3 (if (i < 1000) {) "
                                                "is false for it, so it skipped the statements that touch memory")
    expect_diagram_of(ex, "thread 1023, all phases")
    _scroll_to_top_of(ex)
    problems = _one_screen_problems(ex, width, height)
    lab.shot("wide-thread-1023-idle", ex)
    assert not problems, "\n".join(problems)


def _scrollers_outside(explorer, selectors: tuple[str, ...]) -> list[str]:
    """Boxes that scroll what does not fit, but are themselves wider than the explorer (so the
    explorer cuts off their right end, and their scroll bar with it)."""
    frame = explorer.bounding_box()
    problems = []
    for what in selectors:
        box = explorer.locator(what).first.bounding_box()
        if box["x"] < frame["x"] - 0.5 or box["x"] + box["width"] > frame["x"] + frame["width"] + 0.5:
            problems.append(f"{what} ({box['width']:.0f} px) does not fit in the explorer "
                            f"({frame['width']:.0f} px): its right end is cut off")
    return problems


def test_a_900px_window_clips_no_text(lab: Lab) -> None:
    from playwright.sync_api import expect

    before = lab.page.viewport_size
    lab.page.set_viewport_size({"width": 900, "height": 900})
    try:
        ex = lab.explorer(DOT)
        open_section(ex, COUNTS)
        _scroll_to_top_of(ex)
        problems = readability_problems(ex)
        for line in ex.locator(".mp-source .mp-line").all():
            seen = line.evaluate(_READABILITY_JS)
            if seen["lines"] > 1:
                problems.append(f"the code line {seen['text']!r} wraps onto {seen['lines']} lines")
        problems += _fit_problems("the diagram", ex.locator(".mp-diagram .mp-shown > svg"))
        for what in (".mp-diagram", ".mp-source"):
            overflow = ex.locator(what).evaluate("e => getComputedStyle(e).overflowX")
            if overflow not in ("auto", "scroll"):
                problems.append(f"{what} cuts off what does not fit (overflow-x: {overflow}) instead of scrolling")
        # The cost table: inside a box that scrolls, inside the explorer; every header over its column.
        open_section(ex, COST)
        problems += _scrollers_outside(ex, (".mp-diagram", ".mp-source", ".mp-cost-scroll"))
        frame = ex.bounding_box()
        if frame["x"] + frame["width"] > 900:
            problems.append(f"the explorer runs past the window's right edge ({frame['x'] + frame['width']:.0f} px)")
        table = ex.locator(".mp-cost-table")
        expect(table).to_be_visible()
        headers = table.locator("tr").first.locator("th").all()
        cells = table.locator("tr").nth(1).locator("td").all()
        assert len(headers) == len(cells) >= 5
        for th, td in zip(headers, cells, strict=True):
            h, c = th.bounding_box(), td.bounding_box()
            if abs(h["x"] - c["x"]) > 0.5 or abs(h["width"] - c["width"]) > 0.5:
                problems.append(f"the header {th.inner_text()!r} is not over its column")
        lab.shot("narrow-900", ex)
    finally:
        lab.page.set_viewport_size(before)
    assert not problems, "the explorer at 900 px:\n" + "\n".join(problems)


def test_the_listing_scrolls_to_the_line_of_the_step(lab: Lab, small_screen) -> None:
    """End on the step slider goes to the last step, far down a listing taller than its box: the
    listing scrolls so that the highlighted line is in view (and on the screen)."""
    from playwright.sync_api import expect

    width, height = small_screen
    ex = lab.explorer(DOT)
    _scroll_to_top_of(ex)
    source = ex.locator(".mp-source")
    assert source.evaluate("e => e.scrollHeight > e.clientHeight"), "the listing fits: nothing to scroll"
    step = _handle(ex, "mp-step")
    step.click()
    lab.page.keyboard.press("End")
    # The label may already show the last step, which has no line when it is the state after
    # the last statement: read only the total here.
    total = int(_STEP_LABEL_ANY.search(ex.locator(".mp-step-label").inner_text()).group(2))
    expect(ex.locator(".mp-step-label")).to_have_text(re.compile(rf"^step {total} / {total}: "))
    if "after the last line" in ex.locator(".mp-step-label").inner_text():
        # A record that ends with the state after the last statement has no line there: one back.
        lab.page.keyboard.press("ArrowLeft")
        expect(ex.locator(".mp-step-label")).to_have_text(re.compile(rf"^step {total - 1} / {total}: line"))
    current = ex.locator(".mp-source .mp-current")
    expect(current).to_contain_text("out[0] = shared[0];")
    expect(current).to_be_in_viewport(ratio=1)
    line, frame = current.bounding_box(), source.bounding_box()
    assert frame["y"] <= line["y"] and line["y"] + line["height"] <= frame["y"] + frame["height"] + 0.5
    assert _within(line, width, height)
    lab.shot("listing-scrolled-to-last-step", ex)
    step.click()
    lab.page.keyboard.press("Home")  # and back to the top
    expect(ex.locator(".mp-step-label")).to_have_text(re.compile(rf"^step 1 / {total}: "))
    expect(ex.locator(".mp-source .mp-current")).to_be_in_viewport()


# --------------------------------------------------------------- one screen on a laptop
LAPTOP_SCREENS = ((900, 800), (1400, 900))


def _file_browser_open(page) -> bool:
    return page.locator("#filebrowser").is_visible()


def _set_file_browser(page, open_: bool) -> None:
    """JupyterLab's file browser beside the notebook, open or closed (its tab in the left bar)."""
    from playwright.sync_api import expect

    if _file_browser_open(page) != open_:
        page.locator(".jp-SideBar .lm-TabBar-tab[data-id='filebrowser']").click()
    expect(page.locator("#filebrowser")).to_be_visible(visible=open_)


@pytest.fixture
def laptop_layouts(lab: Lab, jupyter_server: JupyterServer) -> Iterator[list[tuple[int, int, bool | None]]]:
    """The layouts a laptop gives the notebook: 900x800 and 1400x900, and in JupyterLab each with
    the file browser open and closed (Notebook 7 has none beside the notebook: None). Puts the
    page back as it was afterwards."""
    before, browser_open = lab.page.viewport_size, None
    if jupyter_server.ui is JupyterUI.LAB:
        browser_open = _file_browser_open(lab.page)
        layouts = [(w, h, fb) for w, h in LAPTOP_SCREENS for fb in (True, False)]
    else:
        layouts = [(w, h, None) for w, h in LAPTOP_SCREENS]
    try:
        yield layouts
    finally:
        lab.page.set_viewport_size(before)
        if browser_open is not None:
            _set_file_browser(lab.page, browser_open)


def _apply_layout(lab: Lab, width: int, height: int, file_browser: bool | None) -> str:
    lab.page.set_viewport_size({"width": width, "height": height})
    if file_browser is not None:
        _set_file_browser(lab.page, file_browser)
    return f"{width}x{height}" + ("" if file_browser is None else f", file browser {'open' if file_browser else 'closed'}")


def _notebook_view(page) -> dict:
    """What of the notebook the screen shows: its panel (below the tool bar, above JupyterLab's
    status bar) within the window."""
    panel = page.locator(".jp-NotebookPanel-notebook").first.bounding_box()
    size = page.viewport_size
    top, left = max(panel["y"], 0), max(panel["x"], 0)
    return {"x": left, "y": top, "right": min(panel["x"] + panel["width"], size["width"]),
            "bottom": min(panel["y"] + panel["height"], size["height"])}


def _outside_view(ex, view: dict, what: tuple[str, ...]) -> list[str]:
    problems = []
    for selector in what:
        box = ex.locator(selector).first.bounding_box()
        if box is None or box["x"] < view["x"] - 0.5 or box["y"] < view["y"] - 0.5 \
                or box["x"] + box["width"] > view["right"] + 0.5 or box["y"] + box["height"] > view["bottom"] + 0.5:
            problems.append(f"{selector} {box} is not within the notebook's view {view}")
    return problems


ONE_SCREEN = (".mp-title", ".mp-controls", ".mp-stepper", ".mp-source", ".mp-source .mp-current", ".mp-diagram")


def test_code_step_controls_and_diagram_share_one_laptop_screen(lab: Lab, laptop_layouts) -> None:
    """Dot Product at its race (8 threads, a finding) and a 1,024-thread threadgroup: with the
    explorer's top at the top of the notebook, its thread controls, step controls, code (with
    the highlighted line) and diagram are all on the screen, at 900x800 and 1400x900, in
    JupyterLab with the file browser open or closed and in Notebook 7."""
    from playwright.sync_api import expect

    ex = _click_dot_race(lab)
    expect_diagram_of(ex, re.compile(r"^thread 0, phase 1, at step \d+$"))
    expect(ex.locator(".mp-title")).to_have_text("explorer of Dot Product")
    wide = lab.explorer(WIDE)
    problems = []
    for width, height, file_browser in laptop_layouts:
        where = _apply_layout(lab, width, height, file_browser)
        for name, explorer in (("Dot Product", ex), ("a 1,024-thread threadgroup", wide)):
            _scroll_to_top_of(explorer)
            view = _notebook_view(lab.page)
            found = _outside_view(explorer, view, ONE_SCREEN)
            problems += [f"{name} at {where}: {p}" for p in found]
            lab.shot(f"one-screen-{name.split()[0].lower()}-{where.replace(', ', '-').replace(' ', '-')}")
    assert not problems, "\n".join(problems)


#: The smallest typical text (the values in the cells) a diagram may be shown with, in CSS pixels.
READABLE_TEXT_PX = 8.0

def test_a_1024_thread_explorer_at_its_finding_keeps_its_diagram_on_a_900px_screen(lab: Lab, laptop_layouts) -> None:
    """III.1 without its barrier, at its race (a finding's text, a thread's variables, two rows of
    32 thread buttons above the code): with the explorer's top at the top of the notebook, its
    diagram starts, and ends, on the screen at 900x800 beside JupyterLab's file browser (it ran
    past the screen), as at every laptop layout."""
    from playwright.sync_api import expect

    ex = lab.explorer(TRANSPOSE)
    _scroll_to_top_of(ex)
    ex.locator(".mp-finding").first.click()
    expect_diagram_of(ex, re.compile(r", phase 0, at step \d+$"))
    expect(ex.locator(".mp-finding-detail")).to_contain_text("race")
    problems = []
    for width, height, file_browser in laptop_layouts:
        where = _apply_layout(lab, width, height, file_browser)
        _scroll_to_top_of(ex)
        view = _notebook_view(lab.page)
        diagram = ex.locator(".mp-diagram").bounding_box()
        top = None if diagram is None else diagram["y"]
        if top is None or top > view["bottom"] - 40:  # its top, and some of it, on the screen
            problems.append(f"at {where} the diagram starts at y={top}, the screen ends at {view['bottom']:.0f}")
        problems += [f"at {where}: {p}" for p in _outside_view(ex, view, ONE_SCREEN)]
        lab.shot(f"transpose-finding-{where.replace(', ', '-').replace(' ', '-')}", ex)
    assert not problems, "\n".join(problems)


_DIAGRAM_FIT_JS = """(svg) => {
  const box = svg.closest('.mp-diagram, div[style*="overflow-x"]');
  const natural = svg.width.baseVal.value;
  const sizes = Array.from(svg.querySelectorAll('text')).map(t => parseFloat(t.getAttribute('font-size')))
      .filter(x => x > 0).sort((a, b) => a - b);
  const drawn = svg.getBoundingClientRect().width;
  return { drawn, natural, room: box.clientWidth, scale: drawn / natural,
           median: sizes[Math.floor(sizes.length / 2)] * drawn / natural, smallest: sizes[0] * drawn / natural };
}"""


def _fit_problems(what: str, svg) -> list[str]:
    """A diagram fits the room it is given: as wide as the room (at most its natural size), and
    only when even its legible minimum is wider does it scroll, at that minimum."""
    from metal_puzzles.diagrams.draw import LEGIBLE_TEXT_PX, SMALLEST_TEXT_PX

    fit = svg.evaluate(_DIAGRAM_FIT_JS)
    problems = []
    if fit["scale"] > 1.001:
        problems.append(f"{what} is drawn larger than its natural size ({fit['scale']:.2f}x)")
    # No text a learner reads (the median size: the values) is shown under 8 px: Pooling's show()
    # beside JupyterLab's file browser at 1400x900 was fitted down to 7 px (0.69 of its size).
    legible = fit["median"] >= max(LEGIBLE_TEXT_PX, READABLE_TEXT_PX) - 0.05 \
        and fit["smallest"] >= SMALLEST_TEXT_PX - 0.05
    if not legible:
        problems.append(f"{what}'s text is shrunk below legible ({fit['median']:.1f} px typical, "
                        f"{fit['smallest']:.1f} px smallest)")
    at_minimum = (fit["median"] < LEGIBLE_TEXT_PX + 0.3 or fit["smallest"] < SMALLEST_TEXT_PX + 0.3)
    if fit["drawn"] > fit["room"] + 1 and not at_minimum:
        problems.append(f"{what} is {fit['drawn']:.0f} px wide in a {fit['room']:.0f} px box, and could shrink")
    if fit["drawn"] < min(fit["room"], fit["natural"]) - 1:
        problems.append(f"{what} is {fit['drawn']:.0f} px wide but has {fit['room']:.0f} px of room")
    return problems


def test_diagrams_fit_the_room_they_are_given_and_follow_it(lab: Lab, laptop_layouts) -> None:
    """The explorer's diagram and a show() diagram, drawn at the fixture's 1400 px, then seen at
    each laptop layout: each is as wide as its box, down to a legible minimum, and only past
    that minimum wider than its box (scrolling)."""
    from playwright.sync_api import expect

    show = lab.cell(SHOW_CELL_INDEX).locator(".jp-OutputArea-output svg").first
    expect(show).to_be_visible()
    problems = []
    for width, height, file_browser in laptop_layouts:
        where = _apply_layout(lab, width, height, file_browser)
        for name, explorer in (("Dot Product's", lab.explorer(DOT)), ("the 1,024-thread", lab.explorer(WIDE))):
            problems += _fit_problems(f"{name} diagram in the explorer at {where}", explorer.locator(".mp-diagram .mp-shown > svg"))
        problems += _fit_problems(f"Dot Product's show() at {where}", show)
    lab.shot("diagram-fit", lab.explorer(DOT))
    assert not problems, "\n".join(problems)


def test_keys_keep_stepping_after_a_click_on_step_or_on_the_diagram_and_nothing_jumps(lab: Lab) -> None:
    """After a click on "step" or on the diagram, ArrowRight and ArrowLeft step (the notebook
    keeps its active cell), also once the step button is disabled at the last step; and the last
    step ("after the last line") moves neither the diagram nor the code."""
    from playwright.sync_api import expect

    ex = lab.explorer(GUARD)
    label = ex.locator(".mp-step-label")
    _scroll_to_top_of(ex)
    _handle(ex, "mp-step").click()
    lab.page.keyboard.press("Home")
    expect(label).to_have_text(re.compile(r"^step 1 / \d+: line 2$"))
    total = int(_STEP_LABEL.search(label.inner_text()).group(2))
    cell_before = _active_cell_index(lab.page)
    ex.locator(".mp-forward").click()
    expect(label).to_have_text(f"step 2 / {total}: line 3")
    boxes_before = [ex.locator(s).bounding_box() for s in (".mp-diagram", ".mp-source", ".mp-stepper")]
    lab.page.keyboard.press("ArrowLeft")
    expect(label).to_have_text(f"step 1 / {total}: line 2")
    ex.locator(".mp-diagram .mp-shown > svg").click(position={"x": 4, "y": 4})  # the diagram's margin, not a cell
    lab.page.keyboard.press("ArrowRight")
    expect(label).to_have_text(f"step 2 / {total}: line 3")
    for step in range(3, total + 1):  # to the last step, where "step" is disabled
        lab.page.keyboard.press("ArrowRight")
        expect(label).to_have_text(re.compile(rf"^step {step} / {total}: "))
    expect(ex.locator(".mp-forward")).to_be_disabled()
    expect_diagram_of(ex, re.compile(rf"at step {total}$"))
    boxes_after = [ex.locator(s).bounding_box() for s in (".mp-diagram", ".mp-source", ".mp-stepper")]
    lab.shot("keys-last-step", ex)
    for name, before, after in zip(("diagram", "code", "step controls"), boxes_before, boxes_after, strict=True):
        # Its place, and the width the diagram is drawn at, stay (the diagram may grow downwards).
        same = abs(before["y"] - after["y"]) < 1 and abs(before["x"] - after["x"]) < 1 \
            and abs(before["width"] - after["width"]) < 1
        assert same and (name == "diagram" or abs(before["height"] - after["height"]) < 1), \
            f"the {name} moved at the last step: {before} -> {after}"
    lab.page.keyboard.press("ArrowLeft")
    expect(label).to_have_text(re.compile(rf"^step {total - 1} / {total}: "))
    assert _active_cell_index(lab.page) == cell_before, "the notebook moved to another cell"


# The page asks for the whole diagram, as a new view of the explorer does (page.py): the kernel
# sends it as the next version, which a canvas that already shows it keeps as it is.
_ASK_FOR_THE_WHOLE_DIAGRAM_JS = """(ex) => {
  const box = ex.querySelector('.mp-diagram-want input');
  box.value = 'whole|' + Date.now();
  box.dispatchEvent(new Event('input', { bubbles: true }));
}"""

_DRAWN_THE_VERSION_SENT_JS = """(ex) => ex.querySelector('.mp-diagram .mp-diagram-view').mpVersion
  === Number(ex.querySelector('.mp-diagram-source img').getAttribute('data-version'))"""

# The drawn diagram against the whole diagram sent: the same SVG; and whether the SVG element is
# the one marked before (redrawn in place, not replaced).
_DRAWN_AS_SENT_JS = """(ex) => {
  const view = ex.querySelector('.mp-diagram .mp-diagram-view');
  const text = ex.querySelector('.mp-diagram-source textarea').value.split('\\u001e').join('');
  const whole = document.createElement('div');
  whole.innerHTML = text;
  const svg = view.querySelector('.mp-shown > svg');
  return { same: svg.outerHTML === whole.querySelector('svg').outerHTML, kept: svg.mpMark === 'before',
           version: view.mpVersion,
           sent: Number(ex.querySelector('.mp-diagram-source img').getAttribute('data-version')) };
}"""


def test_the_diagram_is_redrawn_in_place_and_matches_the_diagram_sent(lab: Lab) -> None:
    """Steps, a thread change and a finding jump redraw only what changed in the diagram (the
    page keeps its SVG element), and what is drawn is exactly the latest diagram sent."""
    from playwright.sync_api import expect

    ex = lab.explorer(DOT)
    _scroll_to_top_of(ex)
    ex.locator(".mp-forward").click()  # off step 1 (where a fresh explorer stands), then back with Home
    _handle(ex, "mp-step").click()
    lab.page.keyboard.press("Home")
    expect(ex.locator(".mp-step-label")).to_have_text(re.compile(r"^step 1 / \d+: "))
    expect_diagram_of(ex, re.compile(r", at step 1$"))
    ex.locator(".mp-diagram .mp-shown > svg").evaluate("svg => { svg.mpMark = 'before'; }")
    for k in range(2, 7):
        ex.locator(".mp-forward").click()
        expect_diagram_of(ex, re.compile(rf", at step {k}$"))
    thread_button(ex, 5).click()
    expect_diagram_of(ex, re.compile(r"^thread 5, .*at step 6$"))
    ex.locator(".mp-findings .mp-finding").first.click()
    expect_diagram_of(ex, re.compile(r"^thread 0, phase 1, at step \d+$"))
    # Each click sent only what changed; the whole diagram, asked for, is what the page drew.
    assert ex.locator(".mp-diagram-source img[data-same]").count() == 0
    ex.evaluate(_ASK_FOR_THE_WHOLE_DIAGRAM_JS)
    expect(ex.locator(".mp-diagram-source img[data-same]")).to_have_count(1)
    lab.page.wait_for_function(_DRAWN_THE_VERSION_SENT_JS, arg=ex.element_handle())
    drawn = ex.evaluate(_DRAWN_AS_SENT_JS)
    lab.shot("diagram-redrawn-in-place", ex)
    assert drawn["version"] == drawn["sent"], drawn
    assert drawn["same"], "the diagram drawn differs from the diagram sent"
    assert drawn["kept"], "the diagram was drawn whole again instead of redrawn in place"
