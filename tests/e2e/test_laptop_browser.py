"""What a learner on a laptop sees, at 900x800 in JupyterLab and in Notebook 7: a failing
``check()``'s verdict wrapped once, to the output's width; and the explorer of Part V's kernels
(RMSNorm, V.1, and decode attention, V.4) with code, step controls and diagram on one screen.

One notebook (written here with nbformat) holds a Dot Product whose reduction has no barrier in
its loop (check() fails it with a long paragraph on the race) and the two Part V explorers, run
with the catalogue's solutions. Every wait is for a state the page shows.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from .conftest import KERNEL_NAME, JupyterServer
from .pages import Lab, error_outputs, wait_for_kernel
from .test_explorer_browser import (
    ONE_SCREEN,
    _notebook_view,
    _outside_view,
    _run_all_cells,
    _scroll_to_top_of,
    expect_diagram_of,
)

pytestmark = pytest.mark.e2e

NOTEBOOK_NAME = "laptop.ipynb"
LAPTOP = {"width": 900, "height": 800}
CELLS_TIMEOUT = 360.0  # seconds: kernel start, imports of mlx and the simulator, the runs

# Dot Product whose tree reduction has no barrier inside its loop: the sanitizer's race is the
# verdict's long paragraph (about 400 characters).
CHECK_CELL = '''\
import mlx.core as mx
import numpy as np
from metal_puzzles import MetalKernel, MetalProblem


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
if (local_i == 0) {
    out[0] = shared[0];
}
"""
    return MetalKernel(name="dot_product", input_names=["a", "b"], output_names=["out"], source=source)


dot = MetalProblem("Dot Product", dot_test, [mx.arange(8, dtype=mx.float32), mx.arange(8, dtype=mx.float32)],
                   (1,), (8, 1, 1), (8, 1, 1), spec=lambda a, b: np.array([np.dot(a, b)]))
dot.check()'''

# A Part V puzzle's visible test, run with the catalogue's solution, in the explorer.
EXPLORE_CELL = '''\
from metal_puzzles.checking import run_case
from metal_puzzles.explorer.widgets import explore_run
from metal_puzzles.puzzles import get_puzzle, solution_source

puzzle = get_puzzle("{puzzle}")
explore_run(run_case(puzzle.kernel(solution_source(puzzle)), puzzle.visible, trace=True, steps=True, cost=True),
            puzzle.title)'''

PART_V = ("rms_norm", "decode_attention")
CELLS = (CHECK_CELL, *(EXPLORE_CELL.format(puzzle=p) for p in PART_V))
CHECK_CELL_INDEX = 0


def write_notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "Python (metal-puzzles e2e)",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nbformat.validate(nb)
    nbformat.write(nb, path)


def _wait_for_cells(lab: Lab) -> None:
    """Until both explorers are drawn and every cell has run; fail early, with the traceback, if
    a cell raised."""
    from playwright.sync_api import expect

    deadline = time.monotonic() + CELLS_TIMEOUT
    while lab.page.locator(".mp-explorer .mp-diagram .mp-shown > svg").count() < len(PART_V):
        errors = error_outputs(lab.page)
        if errors:
            lab.shot_quietly("FAILED-cell-error")
            pytest.fail("a notebook cell raised:\n" + "\n\n".join(errors)[:4000])
        if time.monotonic() > deadline:
            lab.shot_quietly("FAILED-no-explorer")
            pytest.fail(f"the explorers were not drawn within {CELLS_TIMEOUT:.0f} s")
        lab.page.wait_for_timeout(500)
    prompts = lab.page.locator(".jp-Notebook .jp-CodeCell .jp-InputPrompt")
    expect(prompts).to_have_text([re.compile(r"\[\d+\]:")] * len(CELLS), timeout=120_000)


@pytest.fixture(scope="module")
def laptop(browser, jupyter_server: JupyterServer, artifacts_dir: Path) -> Iterator[Lab]:
    """The notebook open at 900x800 in JupyterLab (file browser closed) or Notebook 7, all its
    cells run."""
    artifacts_dir = artifacts_dir / jupyter_server.ui.value
    artifacts_dir.mkdir(exist_ok=True)
    write_notebook(jupyter_server.root_dir / NOTEBOOK_NAME)
    # Opened wider: at 900 px the notebook's tool bar folds the kernel's name away, which is how
    # wait_for_kernel tells the kernel is there.
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    lab = Lab(page, artifacts_dir)
    try:
        page.goto(jupyter_server.notebook_url(NOTEBOOK_NAME), timeout=120_000)
        wait_for_kernel(lab, jupyter_server, NOTEBOOK_NAME, "metal-puzzles e2e")
        page.set_viewport_size(LAPTOP)
        if page.locator("#filebrowser").is_visible():  # JupyterLab: the window is the notebook's
            page.locator(".jp-SideBar .lm-TabBar-tab[data-id='filebrowser']").click()
        _run_all_cells(page)
        _wait_for_cells(lab)
        yield lab
    except BaseException:
        lab.shot_quietly("FAILED-laptop-setup")
        raise
    finally:
        context.close()


# ---------------------------------------------------------------------------------- check()
def _verdict_paragraphs() -> list[str]:
    """The check cell's verdict as the package writes it one line a paragraph: run here, in the
    test's own process, on the same kernel."""
    namespace: dict = {}
    exec(CHECK_CELL.replace("dot.check()", "result = dot.check(quiet=True)"), namespace)
    return [line.strip() for line in namespace["result"].report(width=None).splitlines() if line.strip()]


# For each paragraph: where its characters are drawn, line by line. The output's text is read
# character by character (a Range per character gives its box); whitespace is skipped, so a
# paragraph is found whatever line breaks and indentation the text carries. For every line but
# the last: how far short of the text box's right edge it ends, and how wide the next line's
# first word is (with its space): a line wrapped once, at the box, leaves less room than that.
_LINE_BOXES_JS = """([output, paragraphs]) => {
  const range = document.createRange();
  const chars = [];
  const walker = document.createTreeWalker(output, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const s = node.textContent;
    for (let i = 0; i < s.length; i++) {
      if (/\\s/.test(s[i])) { chars.push({ space: true }); continue; }
      range.setStart(node, i); range.setEnd(node, i + 1);
      const r = range.getBoundingClientRect();
      const block = node.parentElement.closest('div, pre');
      const b = block.getBoundingClientRect(), cs = getComputedStyle(block);
      chars.push({ c: s[i], top: Math.round(r.top), left: r.left, right: r.right,
                   edge: b.right - parseFloat(cs.paddingRight) - parseFloat(cs.borderRightWidth) });
    }
  }
  const ink = chars.map((x, k) => [x, k]).filter(([x]) => !x.space);
  const flat = ink.map(([x]) => x.c).join('');
  const charW = ink.map(([x]) => x.right - x.left).sort((a, b) => a - b)[Math.floor(ink.length / 2)];
  return paragraphs.map((p) => {
    const key = p.replace(/\\s+/g, '');
    const at = flat.indexOf(key);
    if (at < 0) return { paragraph: p, found: false };
    const mine = ink.slice(at, at + key.length);
    const lines = [];
    for (const [x, k] of mine) {
      if (!lines.length || lines[lines.length - 1].top !== x.top) lines.push({ top: x.top, first: k, last: k, right: x.right, edge: x.edge });
      const line = lines[lines.length - 1];
      line.last = k; line.right = Math.max(line.right, x.right);
    }
    const short = [];
    for (let n = 0; n + 1 < lines.length; n++) {
      let word = 0;
      for (let k = lines[n + 1].first; k < chars.length && !chars[k].space; k++) word++;
      const room = lines[n].edge - lines[n].right;
      if (room > (word + 1) * charW + 2) {
        short.push({ line: n + 1, of: lines.length, room: Math.round(room), nextWord: word, charW });
      }
    }
    return { paragraph: p, found: true, lines: lines.length, short };
  });
}"""


def test_a_failing_checks_verdict_is_wrapped_once_to_the_output_width(laptop: Lab) -> None:
    """At 900x800, a failing check()'s long paragraphs fill each line of the output up to the
    word that no longer fits: no paragraph is broken at 100 characters and broken again at the
    output's edge (ragged half-empty lines), nor left short of an output wider than 100."""
    from playwright.sync_api import expect

    output = laptop.page.locator(".jp-Notebook .jp-CodeCell").nth(CHECK_CELL_INDEX).locator(".jp-OutputArea-output").first
    expect(output).to_contain_text("Failed: Dot Product fails")
    output.scroll_into_view_if_needed()
    laptop.shot("check-verdict-900", output)
    paragraphs = [p for p in _verdict_paragraphs() if len(p) > 150]  # wider than the output: it wraps
    assert paragraphs, "the verdict has no long paragraph to wrap"
    seen = laptop.page.evaluate(_LINE_BOXES_JS, [output.element_handle(), paragraphs])
    problems = []
    for p in seen:
        if not p["found"]:
            problems.append(f"not shown: {p['paragraph'][:80]}...")
        elif p["lines"] < 2:
            problems.append(f"not wrapped at all (one line): {p['paragraph'][:80]}...")
        for s in p.get("short", []):
            problems.append(f"line {s['line']} of {s['of']} ends {s['room']} px short of the edge, where the next "
                            f"line's first word ({s['nextWord']} characters) would fit: {p['paragraph'][:60]}...")
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------ Part V
@pytest.mark.parametrize("puzzle", PART_V)
def test_part_v_explorer_shows_code_steps_and_diagram_on_one_laptop_screen(laptop: Lab, puzzle: str) -> None:
    """RMSNorm (V.1) and decode attention (V.4) at 900x800: with the explorer's top at the top of
    the notebook, its controls, step controls, code (with the highlighted line) and diagram are
    all on the screen, and a step redraws the diagram at that step."""
    from playwright.sync_api import expect

    ex = laptop.page.locator(".mp-explorer").nth(PART_V.index(puzzle))
    expect(ex.locator(".mp-diagram .mp-shown > svg")).to_have_count(1)
    label = ex.locator(".mp-step-label")
    expect(label).to_have_text(re.compile(r"^step 1 / \d+: "))
    ex.locator(".mp-forward").click()  # the first step: the diagram follows the step-through
    expect(label).to_have_text(re.compile(r"^step 2 / \d+: "))
    expect_diagram_of(ex, re.compile(r", at step 2$"))
    _scroll_to_top_of(ex)
    problems = _outside_view(ex, _notebook_view(laptop.page), ONE_SCREEN)
    laptop.shot(f"part-v-{puzzle}-one-screen", ex)
    assert not problems, "\n".join(problems)
    # A step changes the diagram: stepping on, the first statement that touches memory (after
    # the declarations) redraws it, and it says at which step it stands.
    before = ex.locator(".mp-diagram .mp-shown > svg").inner_html()
    for k in range(3, 40):
        ex.locator(".mp-forward").click()
        expect(label).to_have_text(re.compile(rf"^step {k} / \d+: "))
        expect_diagram_of(ex, re.compile(rf", at step {k}$"))
        if ex.locator(".mp-diagram .mp-shown > svg").inner_html() != before:
            break
    else:
        pytest.fail(f"stepping from step 2 to step {k} left the diagram as it was")
    laptop.shot(f"part-v-{puzzle}-stepped", ex)
