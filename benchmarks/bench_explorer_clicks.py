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

The first step after the explorer opens is timed apart ("first step"), once the page is idle and
a second after (a learner looks before clicking): it was the slow one (700-820 ms against 33-106 ms
for the steps after it, issue 36), the one click that changes most of the diagram; the explorer
now draws its diagram ahead and the page lays it out and paints it in a transparent layer while
the learner reads, which the click shows (the figures: benchmarks/README.md). Its target is the
worst case's, under 250 ms. So is the first click on a finding's ("first finding", timed apart
from the finding clicks after it, which find its diagram drawn already): 282-952 ms under load
before the explorer drew the first finding's diagram ahead, once idle, and the page laid it out
in a transparent layer of its own.

Prints, per front end and per action, the median and the maximum in milliseconds, and where the
time went (medians): until the kernel's last message of the click arrived (the Python handler,
the messages' encoding and their relay by the Jupyter server), the page's work after it (decoding,
widget updates, the diagram's redraw, painting), and the bytes the click brought to the page.
The machine's load average is printed with each front end's figures.

Timings, not asserts: compare before and after a change in one run on one machine, with
``--compare DIR``, another checkout (e.g. ``git worktree add --detach ../base main``): its lib/ is
measured first, then this checkout's, front end by front end, the figures side by side (or with
``--save`` and ``--before`` as in bench_explorer.py). Needs Chromium and Playwright
(``bash .ci/install-browser``).

Usage: python benchmarks/bench_explorer_clicks.py [--clicks N] [--openings N] [--ui lab|notebook]
                                                 [--compare DIR] [--save F] [--before F]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import sys
import tempfile
from dataclasses import dataclass
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

# Before the page's own scripts: every WebSocket (the kernel's channels) logs the time and size of
# each message it receives, before the page handles it.
_LOG_MESSAGES_JS = """
(() => {
  const Native = window.WebSocket;
  window.mpMessages = [];
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (event) => {
        const data = event.data;
        window.mpMessages.push({ t: performance.now(),
                                 bytes: typeof data === 'string' ? data.length : (data.byteLength || data.size || 0) });
      });
    }
  };
})();
"""

# In the page: click ``target`` and resolve with the milliseconds until ``done()`` holds (checked
# on every change of the explorer's DOM) and two animation frames have passed, with when the last
# kernel message before then arrived and how many bytes came.
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
  window.mpMessages.length = 0;
  const start = performance.now();
  const arrived = await new Promise((resolve) => {
    const observer = new MutationObserver(() => { if (done()) { observer.disconnect(); resolve(true); } });
    observer.observe(ex, { subtree: true, childList: true, attributes: true, characterData: true });
    setTimeout(() => { observer.disconnect(); resolve(false); }, 10000);
    target.click();
  });
  if (!arrived) return null;
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const end = performance.now();
  const messages = window.mpMessages.filter((m) => m.t <= end);
  return { ms: end - start, answer: messages.length ? messages[messages.length - 1].t - start : 0,
           bytes: messages.reduce((sum, m) => sum + m.bytes, 0) };
}
"""


# Resolves once the page's main thread is idle (it has laid out and painted what it was given).
_IDLE_JS = "() => new Promise((resolve) => requestIdleCallback(() => resolve(), { timeout: 10000 }))"

#: How long a learner looks at the explorer before the first click (no one clicks within
#: milliseconds of seeing it): the explorer draws the first step's diagram meanwhile.
READING_MS = 1000


@dataclass(frozen=True)
class Click:
    """One timed click: milliseconds until painted, until the kernel's last message came, and the
    bytes that came."""

    ms: float
    answer_ms: float
    received: int

    @property
    def page_ms(self) -> float:
        return self.ms - self.answer_ms


def write_notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "Python (metal-puzzles e2e)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(CELL)]
    nbformat.write(nb, path)


def timed_click(page, selector: str, nth: int, kind: str) -> Click | None:
    """A click in the page, timed there; None when its change never showed."""
    got = page.evaluate(_CLICK_JS, [selector, nth, kind])
    return None if got is None else Click(got["ms"], got["answer"], got["bytes"])


def click_times(page, clicks: int) -> dict[str, list[Click | None]]:
    """The clicks, timed: steps forward, lane changes, and clicks on a finding."""
    ex = page.locator(".mp-explorer").first
    if ex.locator(".mp-finding").count() < 1:
        raise SystemExit("the explorer lists no finding to click")
    forward = True
    clicks_by_action: dict[str, list[Click | None]] = {"first step": [], "step": [], "thread change": [],
                                                       "first finding": [], "finding click": []}
    # The first click after the explorer opened, as a learner's first: a step, once the page has
    # drawn the explorer (its main thread idle) and the learner has looked at it for a moment.
    page.evaluate(_IDLE_JS)
    page.wait_for_timeout(READING_MS)
    clicks_by_action["first step"].append(timed_click(page, ".mp-forward", 0, "step"))
    for _ in range(clicks):
        # Forward to the last step, then back: every click is a step.
        if ex.locator(".mp-forward" if forward else ".mp-back").is_disabled():
            forward = not forward
        clicks_by_action["step"].append(timed_click(page, ".mp-forward" if forward else ".mp-back", 0, "step"))
    for k in range(clicks):
        clicks_by_action["thread change"].append(
            timed_click(page, ".mp-lane-buttons button", 1 + (k * 7) % 31, "thread"))
    for k in range(clicks):
        # Away from the finding first (untimed): another thread, a step back.
        page.evaluate(_CLICK_JS, [".mp-lane-buttons button", 3 + (k * 5) % 27, "thread"])
        page.evaluate(_CLICK_JS, [".mp-back", 0, "step"])
        clicks_by_action["first finding" if k == 0 else "finding click"].append(
            timed_click(page, ".mp-finding", 0, "finding"))
    return clicks_by_action


def measure(ui: JupyterUI, browser, clicks: int, lib: Path) -> dict[str, list[Click | None]]:
    """The clicks timed in ``ui``, with a kernel that imports the package from ``lib``."""
    from playwright.sync_api import expect

    with tempfile.TemporaryDirectory(prefix="mp-bench-", ignore_cleanup_errors=True) as tmp:
        private = Path(tmp)
        server = _start_server(ui, private, private / "server.log", lib=lib)
        try:
            write_notebook(server.root_dir / NOTEBOOK)
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.add_init_script(_LOG_MESSAGES_JS)
            page = context.new_page()
            page.set_default_timeout(300_000)
            page.goto(server.notebook_url(NOTEBOOK))
            lab = Lab(page, private)
            wait_for_kernel(lab, server, NOTEBOOK, "metal-puzzles e2e")
            # Run > Run All Cells, as the browser tests do
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            label = page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$"))
            page.locator(".lm-Menu-item", has=label).click()
            # The diagram shown (not one laid out ahead, hidden); an older checkout draws it unwrapped.
            shown = ".mp-explorer .mp-diagram-view > .mp-shown > svg, .mp-explorer .mp-diagram-view > svg"
            expect(page.locator(shown)).to_have_count(1, timeout=300_000)
            expect(page.locator(".mp-explorer .mp-step-label")).to_have_text(re.compile(r"step 1 /"))
            times = click_times(page, clicks)
            context.close()
            return times
        finally:
            _stop_server(server)


def measure_openings(ui: JupyterUI, browser, clicks: int, lib: Path, openings: int) -> dict[str, list[Click | None]]:
    """``measure`` on ``openings`` fresh servers and explorers, the clicks of each action together
    (one first step per opening)."""
    together: dict[str, list[Click | None]] = {}
    for _ in range(openings):
        for action, timed in measure(ui, browser, clicks, lib).items():
            together.setdefault(action, []).extend(timed)
    return together


def summary(all_clicks: list[Click | None]) -> dict[str, float]:
    """Median and maximum milliseconds (a click whose change never showed counts as 10 s), and
    the medians of the parts of a click."""
    shown = [c for c in all_clicks if c is not None]
    ms = [c.ms for c in shown] + [10_000.0] * (len(all_clicks) - len(shown))
    return {"median": statistics.median(ms), "max": max(ms), "missed": len(all_clicks) - len(shown),
            "answer": statistics.median(c.answer_ms for c in shown) if shown else float("nan"),
            "page": statistics.median(c.page_ms for c in shown) if shown else float("nan"),
            "kB": statistics.median(c.received for c in shown) / 1e3 if shown else float("nan")}


def load_average() -> str:
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def print_figures(title: str, figures: dict[str, dict[str, float]], old: dict[str, dict[str, float]] | None) -> None:
    print(title)
    for action, f in figures.items():
        if f["missed"]:
            print(f"  {action}: {f['missed']:.0f} click(s) whose change never showed within 10 s")
        # One first step and one first finding per opening: their target is the worst case's.
        within = f["max"] < TARGET_MAX_MS and (action.startswith("first") or f["median"] < TARGET_MEDIAN_MS)
        flag = "" if within else "  (over target)"
        parts = f"[kernel's answer {f['answer']:4.0f}, page {f['page']:4.0f} ms, {f['kB']:6.1f} kB]"
        before = ""
        if old is not None and action in old:
            o = old[action]
            before = (f"before median {o['median']:4.0f} max {o['max']:4.0f} "
                      f"[{o['answer']:4.0f}, {o['page']:4.0f} ms, {o['kB']:6.1f} kB] -> ")
        print(f"  {action:<14} {before}median {f['median']:4.0f} max {f['max']:4.0f} {parts}{flag}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clicks", type=int, default=15, help="clicks per action (default 15)")
    parser.add_argument("--ui", choices=[ui.value for ui in JupyterUI], action="append",
                        help="front end(s) to measure (default: both)")
    parser.add_argument("--compare", type=Path, metavar="DIR",
                        help="another checkout of the project: its lib/ is measured too, before this one's")
    parser.add_argument("--openings", type=int, default=1,
                        help="explorers opened (each on a fresh server) per front end: one first step each (default 1)")
    parser.add_argument("--each", action="store_true",
                        help="also print every click: ms to painted / to the kernel's last message, kB")
    parser.add_argument("--save", help="write the figures (median and max by front end and action) to this JSON file")
    parser.add_argument("--before", help="a --save file of the old code: its figures are printed beside")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    if args.compare is not None and not (args.compare / "lib" / "metal_puzzles").is_dir():
        raise SystemExit(f"--compare {args.compare}: not a checkout of this project (no lib/metal_puzzles)")
    # Stopped with a signal: still stop the Jupyter servers and their kernels (the finally blocks).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))

    before = json.loads(Path(args.before).read_text()) if args.before else {}
    saved: dict[str, float] = {}
    uis = [JupyterUI(u) for u in args.ui] if args.ui else list(JupyterUI)
    where = f"1400x900, {args.clicks} clicks per action, ms from click to painted"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            for ui in uis:
                old = None
                if args.compare is not None:
                    load = load_average()
                    old = {a: summary(c) for a, c in measure_openings(ui, browser, args.clicks, args.compare / "lib",
                                                                      args.openings).items()}
                    print_figures(f"{ui.title}, {args.compare} ({where}; {load}):", old, None)
                elif before:
                    old = {a: {"median": before[f"{ui.value}: {a} median"], "max": before[f"{ui.value}: {a} max"],
                               "answer": before.get(f"{ui.value}: {a} answer", float("nan")),
                               "page": before.get(f"{ui.value}: {a} page", float("nan")),
                               "kB": before.get(f"{ui.value}: {a} kB", float("nan"))}
                           for a in ("first step", "step", "thread change", "first finding", "finding click")
                           if f"{ui.value}: {a} median" in before}
                load = load_average()
                clicks = measure_openings(ui, browser, args.clicks, REPO_ROOT / "lib", args.openings)
                figures = {a: summary(c) for a, c in clicks.items()}
                print_figures(f"{ui.title}, this checkout ({where}; {load}):", figures, old)
                if args.each:
                    for action, timed in clicks.items():
                        print(f"    {action}: " + ", ".join("missed" if c is None else
                                                           f"{c.ms:.0f}/{c.answer_ms:.0f}/{c.received / 1e3:.0f}"
                                                           for c in timed))
                for action, f in figures.items():
                    for name in ("median", "max", "answer", "page", "kB"):
                        saved[f"{ui.value}: {action} {name}"] = f[name]
        finally:
            browser.close()
    if args.save:
        Path(args.save).write_text(json.dumps(saved, indent=1))


if __name__ == "__main__":
    main()
