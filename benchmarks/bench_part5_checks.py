"""How long a learner's check() of each Part V puzzle takes (the issue's target: under 2 s on one
core), as the book's cell runs it: the entry's notebook lines build the visible test, a
MetalProblem is made as the cell makes it, and check() runs the visible and hidden tests.

Run: taskset -c 0 python benchmarks/bench_part5_checks.py [--repeat 3]

Prints, per puzzle, the best of ``--repeat`` check() calls with the reference solution and with
the template: wall-clock time and this process's CPU time (on a machine others share, the wall
time includes waiting for the core; the CPU time does not). Timings are reported, never
asserted; the script exits 1 only when a reference fails or a template passes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time

import mlx.core as mx

from metal_puzzles import MetalKernel, MetalProblem
from metal_puzzles.puzzles import part5

TARGET_S = 2.0


def problem(entry, source: str) -> MetalProblem:
    p = entry.puzzle

    def kernel(*arrays):
        return MetalKernel(name=p.kernel_name, input_names=list(p.input_names), output_names=list(p.output_names),
                           source=source, header=entry.solution_header())

    scope: dict = {"mx": mx}
    exec(entry.setup, scope)  # the book's own lines for the visible test
    return MetalProblem(p.title, kernel, [scope[n] for n in p.input_names], scope["output_shape"],
                        grid=p.visible.grid, threadgroup=p.visible.threadgroup, spec=p.spec)


def timed(prob: MetalProblem, repeat: int) -> tuple[float, float, bool]:
    """(best wall-clock seconds, best CPU seconds, passed) over ``repeat`` check() calls."""
    wall, cpu, passed = [], [], False
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(io.StringIO()):
            passed = prob.check().passed
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return min(wall), min(cpu), passed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'puzzle':20} {'reference wall/cpu':>22} {'template wall/cpu':>22}  (best of {args.repeat}; "
          f"target {TARGET_S:g} s)")
    wrong = 0
    for entry in part5.PART_V.entries:
        if entry.setup is None:  # a finale cell is the learner's Python, not a kernel check
            continue
        ref = timed(problem(entry, entry.solution_source()), args.repeat)
        tmpl = timed(problem(entry, entry.puzzle.template), args.repeat)
        wrong += (not ref[2]) + tmpl[2]
        over = " OVER" if min(ref[0], ref[1]) > TARGET_S or min(tmpl[0], tmpl[1]) > TARGET_S else ""
        print(f"{entry.puzzle.id:20} {ref[0]:9.3f} s {ref[1]:7.3f} s {tmpl[0]:11.3f} s {tmpl[1]:7.3f} s{over}",
              flush=True)
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
