"""How long does a click in the explorer take, seen in the browser? JupyterLab and Notebook 7.

The explorer is where a stuck learner goes, so each click must feel immediate: the target is a
median under 100 ms and a worst case under 250 ms for a step, a thread change and a click on a
finding, on a 1,024-thread threadgroup (III.1, Tiled Transpose, 32x32 threads per threadgroup,
without its barrier so that the sanitizer has a race to click; before each click on it, an
untimed thread change and step back move the explorer away from it).

The script starts a Jupyter server the way the browser tests do (``metal-puzzles lab|notebook``,
private directories, a token), opens a notebook whose one cell explores that run, in headless
Chromium at 1400x900, and times each click inside the page: from the click until the page shows
both the new highlighted line / thread and the new diagram (the diagram's ``data-shows`` names
the thread, phase and step it draws), then two animation frames so that the new state is painted.

Prints, per front end and per action, the median and the maximum in milliseconds. Timings, not
asserts: compare before and after a change in one run on one machine (``--save`` and
``--before`` as in bench_explorer.py). Needs Chromium and Playwright (``bash .ci/install-browser``).

Usage: python benchmarks/bench_explorer_clicks.py [--clicks N] [--ui lab|notebook] [--save F] [--before F]
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import statistics
import sys
import tempfile
from pathlib import Path

import nbformat

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from tests.e2e.conftest import (  # noqa: E402
    CHROMIUM_ARGS,
    KERNEL_NAME,
    _chromium_path,
    _start_server,
    _stop_server,
)
from tests.e2e.pages import Lab, wait_for_kernel  # noqa: E402

from metal_puzzles.notebook.book import JupyterUI  # noqa: E402

TARGET_MEDIAN_MS, TARGET_MAX_MS = 100.0, 250.0
NOTEBOOK = "bench_clicks.ipynb"

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

# In the page: click ``target`` and resolve with the milliseconds until ``done()`` holds (checked
# on every change of the explorer's DOM) and two animation frames have passed.
_CLICK_JS = """
async ([selector, nth, kind]) => {
  const ex = document.querySelector('.mp-explorer');
  const shows = () => { const v = ex.querySelector('.mp-diagram-view'); return v ? v.getAttribute('data-shows') : null; };
  const text = (s) => { const e = ex.querySelector(s); return e ? e.textContent : null; };
  const before = { shows: shows(), label: text('.mp-step-label'), who: text('.mp-who'),
                   line: text('.mp-source .mp-current') };
  const done = () => {
    if (shows() === before.shows) return false;
    if (kind === 'thread') return text('.mp-who') !== before.who;
    // a step: the label moved; a step or a finding: the highlighted line is the label's line
    const label = text('.mp-step-label');
    if (kind === 'step' && label === before.label) return false;
    const m = /: line (\\d+)/.exec(label);
    const current = ex.querySelector('.mp-source .mp-current');
    if (!m) return current === null || current.offsetParent === null;
    return current !== null && current.getAttribute('data-line') === m[1]
           || (current !== null && current.textContent.trim().split(/\\s+/).includes(m[1]));
  };
  const target = ex.querySelectorAll(selector)[nth];
  if (!target || target.disabled) return null;
  const start = performance.now();
  const arrived = await new Promise((resolve) => {
    const observer = new MutationObserver(() => { if (done()) { observer.disconnect(); resolve(true); } });
    observer.observe(ex, { subtree: true, childList: true, attributes: true, characterData: true });
    setTimeout(() => { observer.disconnect(); resolve(false); }, 10000);
    target.click();
  });
  if (!arrived) return null;
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  return performance.now() - start;
}
"""


def write_notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "Python (metal-puzzles e2e)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(CELL)]
    nbformat.write(nb, path)


def click_times(page, clicks: int) -> dict[str, list[float]]:
    """Milliseconds per click: steps forward, lane changes, and clicks on two findings in turn."""
    ex = page.locator(".mp-explorer").first
    if ex.locator(".mp-finding").count() < 1:
        raise SystemExit("the explorer lists no finding to click")
    forward = True
    clicks_by_action: dict[str, list] = {"step": [], "thread change": [], "finding click": []}
    for _ in range(clicks):
        # Forward to the last step, then back: every click is a step.
        if ex.locator(".mp-forward" if forward else ".mp-back").is_disabled():
            forward = not forward
        clicks_by_action["step"].append(page.evaluate(_CLICK_JS, [".mp-forward" if forward else ".mp-back", 0, "step"]))
    for k in range(clicks):
        clicks_by_action["thread change"].append(
            page.evaluate(_CLICK_JS, [".mp-lane-buttons button", 1 + (k * 7) % 31, "thread"]))
    for k in range(clicks):
        # Away from the finding first (untimed): another thread, a step back.
        page.evaluate(_CLICK_JS, [".mp-lane-buttons button", 3 + (k * 5) % 27, "thread"])
        page.evaluate(_CLICK_JS, [".mp-back", 0, "step"])
        clicks_by_action["finding click"].append(page.evaluate(_CLICK_JS, [".mp-finding", 0, "finding"]))
    return clicks_by_action


def measure(ui: JupyterUI, browser, clicks: int) -> dict[str, list[float]]:
    from playwright.sync_api import expect

    with tempfile.TemporaryDirectory(prefix="mp-bench-", ignore_cleanup_errors=True) as tmp:
        private = Path(tmp)
        server = _start_server(ui, private, private / "server.log")
        try:
            write_notebook(server.root_dir / NOTEBOOK)
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            page = context.new_page()
            page.set_default_timeout(300_000)
            page.goto(server.notebook_url(NOTEBOOK))
            lab = Lab(page, private)
            wait_for_kernel(lab, server, NOTEBOOK, "metal-puzzles e2e")
            # Run > Run All Cells, as the browser tests do
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            label = page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$"))
            page.locator(".lm-Menu-item", has=label).click()
            expect(page.locator(".mp-explorer .mp-diagram svg")).to_have_count(1, timeout=300_000)
            expect(page.locator(".mp-explorer .mp-step-label")).to_have_text(re.compile(r"step 1 /"))
            times = click_times(page, clicks)
            context.close()
            return times
        finally:
            _stop_server(server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clicks", type=int, default=15, help="clicks per action (default 15)")
    parser.add_argument("--ui", choices=[ui.value for ui in JupyterUI], action="append",
                        help="front end(s) to measure (default: both)")
    parser.add_argument("--save", help="write the figures (median and max by front end and action) to this JSON file")
    parser.add_argument("--before", help="a --save file of the old code: its figures are printed beside")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    # Stopped with a signal: still stop the Jupyter servers and their kernels (the finally blocks).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))

    before = json.loads(Path(args.before).read_text()) if args.before else {}
    saved: dict[str, float] = {}
    uis = [JupyterUI(u) for u in args.ui] if args.ui else list(JupyterUI)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            for ui in uis:
                times = measure(ui, browser, args.clicks)
                print(f"{ui.title}, 1400x900, {args.clicks} clicks per action (ms from click to painted):")
                for action, all_ms in times.items():
                    ms = [t for t in all_ms if t is not None]
                    missed = len(all_ms) - len(ms)
                    if missed:  # counted as over the target, and said
                        print(f"  {action}: {missed} click(s) whose change never showed within 10 s")
                        ms += [10_000.0] * missed
                    med, top = statistics.median(ms), max(ms)
                    flag = "" if med < TARGET_MEDIAN_MS and top < TARGET_MAX_MS else "  (over target)"
                    key = f"{ui.value}: {action}"
                    saved[f"{key} median"], saved[f"{key} max"] = med, top
                    old = (f"before median {before[key + ' median']:6.0f} max {before[key + ' max']:6.0f} -> "
                           if key + " median" in before else "")
                    print(f"  {action:<14} {old}median {med:6.0f}  max {top:6.0f}{flag}")
        finally:
            browser.close()
    if args.save:
        Path(args.save).write_text(json.dumps(saved, indent=1))


if __name__ == "__main__":
    main()
