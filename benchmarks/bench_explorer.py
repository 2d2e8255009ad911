"""How fast is the explorer on a 1024-thread threadgroup? Its model's operations, timed.

The explorer is where a stuck learner goes, so each click must feel immediate: the target is
under 100 ms for a step, a change of thread and a jump to a finding on III.1 (Tiled Transpose:
32x32 threads per threadgroup, 2 threadgroups), on this machine. This script times, on III.1's
reference solution (and on a variant without its barrier, for findings to jump to):

- the model (``ExplorerModel``): opening it, a step (the step's line and variables, and the
  diagram's run at that step), a thread change (its accesses, counts and the diagram's run), a
  finding jump (where, and the variables there), the memory at a step;
- the diagram the explorer draws for one thread (``draw_run`` of the model's filtered run, then
  ``to_svg``), apart, since every update that redraws it pays for it;
- the widget's update path end to end (``widgets.Explorer``, headless) where ipywidgets is
  installed: a step forward, a thread change, a finding click and a click on a cell of the
  diagram, each from the control's change to the last widget value set (texts, listing, variables, the diagram's SVG), and the
  size of the diagram each update sends to the page.

It prints the median of several repetitions per operation, in milliseconds. Timings, not
asserts: compare before and after a change on one machine. ``--save FILE`` writes the figures
as JSON; ``--before FILE`` prints such a file's figures beside this run's (run the script on the
old code with ``--save``, then on the new one with ``--before``).

Usage: python benchmarks/bench_explorer.py [--reps N] [--save FILE] [--before FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from collections.abc import Callable

from metal_puzzles.checking import run_case
from metal_puzzles.explorer.run_model import ExplorerModel
from metal_puzzles.puzzles import get_puzzle, solution_kernel, solution_source

TARGET_MS = 100.0
BARRIER = "threadgroup_barrier(mem_flags::mem_threadgroup);"


def median_ms(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def runs():
    """III.1's visible test run as explore() runs it: correct, and without its barrier (racy)."""
    puzzle = get_puzzle("tiled_transpose")
    correct = solution_kernel(puzzle)
    source = solution_source(puzzle)
    assert BARRIER in source
    racy = puzzle.kernel(source.replace(BARRIER, ""))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [(name, run_case(kernel, puzzle.visible, trace=True, steps=True, cost=True))
                for name, kernel in (("III.1", correct), ("III.1 without its barrier", racy))]


def model_figures(result, reps: int) -> list[tuple[str, float]]:
    m = ExplorerModel(result)
    group = m.n_groups - 1
    lanes = [m.lane(group, k) for k in range(0, m.threads_in_group(group), 97)]
    middle = m.n_steps // 2
    figures = [("open the model", median_ms(lambda: ExplorerModel(result), max(1, reps // 3)))]
    lane_iter = iter(lanes * reps)

    def step() -> None:
        lane = lanes[0]
        m.step(middle, lane)
        m.filtered_result(lane, step=middle)

    def thread_change() -> None:
        lane = next(lane_iter)
        m.accesses(lane)
        m.counts(lane)
        m.filtered_result(lane)

    figures += [("a step (line, variables, diagram's run)", median_ms(step, reps)),
                ("a thread change (accesses, counts, diagram's run)", median_ms(thread_change, reps)),
                ("the memory at a step", median_ms(lambda: m.memory_at(middle), reps))]
    if m.findings():
        number = m.findings()[-1].number

        def finding_jump():  # as the explorer's jump_to: where, then that thread's step
            target = m.jump(number)
            if target.step is not None:
                m.step(target.step, m.lane(target.group, target.thread))

        figures.append(("a finding jump (where, variables there)", median_ms(finding_jump, reps)))
    return figures


def diagram_figures(result, reps: int) -> list[tuple[str, float]]:
    from metal_puzzles.diagrams.draw import draw_run, to_svg

    m = ExplorerModel(result)
    group = m.n_groups - 1
    run = m.filtered_result(m.lane(group, 5), step=m.last_step)
    diagram = draw_run(run, only_group=group)
    size = len(to_svg(diagram))
    return [("diagram of one thread: draw_run", median_ms(lambda: draw_run(run, only_group=group), reps)),
            (f"diagram of one thread: to_svg ({size / 1e6:.2f} MB of SVG)", median_ms(lambda: to_svg(diagram), reps))]


def widget_figures(result, reps: int) -> list[tuple[str, float]]:
    try:
        from metal_puzzles.explorer.widgets import Explorer
    except ImportError:  # the explorer's UI is an optional extra
        return []
    ex = Explorer(result, "III.1")
    figures = [("widget: step forward", median_ms(lambda: ex.move(1), reps))]
    values = iter(list(range(1, ex.thread.max + 1, 97)) * reps)

    def thread_change() -> None:
        ex.thread.value = next(values)

    figures.append(("widget: thread change (redraws the diagram)", median_ms(thread_change, reps)))
    if ex.finding_buttons:
        button = ex.finding_buttons[-1]
        figures.append(("widget: finding click (redraws the diagram)", median_ms(button.click, reps)))
    # A click on an input element in the diagram: who touched it, then that thread's diagram. At
    # the last step, where every access has happened (earlier, fewer threads touched anything).
    ex.move(ex.model.n_steps)
    n_input = int(result.inputs[0].size)
    cells = iter(list(range(5, n_input, 131)) * reps)
    name = result.input_names[0]
    figures.append(("widget: click on a diagram's cell (redraws it)",
                    median_ms(lambda: ex.pick_cell(name, next(cells)), reps)))
    return figures


def sent_kilobytes(result) -> float:
    """What one update sends to the page for the diagram: the widget's SVG, in kilobytes."""
    try:
        from metal_puzzles.explorer.widgets import Explorer
    except ImportError:
        return float("nan")
    ex = Explorer(result, "III.1")
    ex.move(1)
    return len(ex.diagram_svg.encode("utf-8")) / 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--save", help="write the figures (milliseconds by run and label) to this JSON file")
    parser.add_argument("--before", help="a --save file of the old code: its figures are printed beside")
    args = parser.parse_args()
    before: dict[str, float] = {}
    if args.before:
        with open(args.before, encoding="utf-8") as f:
            before = json.load(f)
    saved: dict[str, float] = {}
    if before:
        print(f"{'':<60} {'before':>9}    {'now':>9}")
    for name, result in runs():
        lanes = result.lanes
        print(f"{name}: {lanes.n} threads in {lanes.n_groups} threadgroups of {int(lanes.threads_in_group[0])}, "
              f"{len(result.steps or [])} steps, {len(result.findings)} findings")
        slow = max(1, args.reps // 2)  # the drawing takes seconds a time
        figures = model_figures(result, args.reps) + diagram_figures(result, slow) + widget_figures(result, slow)
        for label, ms in figures:
            # The SVG's size is part of a label: strip it, so that runs of old and new code match.
            key = f"{name}: {label.split(' (')[0] if 'MB of SVG' in label else label}"
            saved[key] = ms
            flag = "" if ms < TARGET_MS else f"  (over the {TARGET_MS:.0f} ms target)"
            old = f"{before[key]:9.1f} ms -> " if key in before else ""
            print(f"  {label:<56} {old}{ms:9.1f} ms{flag}")
        kb = sent_kilobytes(result)
        key = f"{name}: diagram sent per update (kB)"
        saved[key] = kb
        old = f"{before[key]:9.0f} kB -> " if key in before else ""
        print(f"  {'widget: the diagram each update sends':<56} {old}{kb:9.0f} kB")
    if args.save:
        with open(args.save, "w", encoding="utf-8") as f:
            json.dump(saved, f, indent=1)


if __name__ == "__main__":
    main()
