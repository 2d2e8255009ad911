"""How long grading a class takes: 100 notebooks with every puzzle, on this machine.

Run: python benchmarks/bench_grading.py [--students 100] [--workers N] [--memory MiB]
Prints the wall time, kernels graded per second, the per-notebook cost, and the peak memory of
the grader and its workers (sampled from /proc, see bench_hostile.py).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from metal_puzzles.checking import WiredPuzzle
from metal_puzzles.grading.grade import grade_submissions
from metal_puzzles.grading.limits import DEFAULT_MEMORY_MIB, Limits
from metal_puzzles.puzzles import PUZZLES, solution_source


def notebook(kind: int, student: int) -> nbformat.NotebookNode:
    """Kinds of learner: 0 solved everything, 1 left the templates, 2 solved half and broke the rest.

    Every student's sources differ (a comment naming them), so no compiled kernel is shared
    between notebooks, as in a real class."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("from metal_puzzles import MetalKernel, MetalProblem")]
    seen = set()
    for i, p in enumerate(PUZZLES):
        if p.kernel_name in seen or isinstance(p, WiredPuzzle):  # the finale is graded from these kernels
            continue
        seen.add(p.kernel_name)
        if kind == 0 or (kind == 2 and i % 2 == 0):
            src = solution_source(p)
        elif kind == 1:
            src = p.template
        else:
            src = solution_source(p).replace("+", "-", 1)
        src = f"// student {student}\n" + src
        nb.cells.append(nbformat.v4.new_code_cell(
            f"def make_kernel_{i}(*inputs):\n    source = {src!r}\n    header = {p.header!r}\n"
            f"    return MetalKernel(name={p.kernel_name!r}, input_names={list(p.input_names)!r}, "
            f"output_names={list(p.output_names)!r}, source=source, header=header, "
            f"atomic_outputs={p.atomic_outputs})\n"))
    return nb


def _tree_memory():
    """bench_hostile's process-tree memory sampler (benchmarks/ is not a package)."""
    path = Path(__file__).with_name("bench_hostile.py")
    spec = importlib.util.spec_from_file_location("bench_hostile", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TreeMemory()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=100)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--memory", type=int, default=DEFAULT_MEMORY_MIB, help="address space per worker, MiB")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        for s in range(args.students):
            nbformat.write(notebook(s % 3, s), str(Path(d) / f"student{s:03d}.ipynb"))
        start = time.perf_counter()
        with _tree_memory() as mem:
            run = grade_submissions([d], workers=args.workers, progress=False,
                                    limits=Limits(memory_bytes=args.memory * 2**20))
        dt = time.perf_counter() - start
    kernels = sum(1 for st in run.students for s in st.puzzles.values() if s.get("status") != "missing")
    workers = args.workers or os.cpu_count()
    print(f"graded {len(run.students)} notebooks x {len(PUZZLES)} puzzles ({kernels} puzzle checks) "
          f"with {workers} worker(s) in {dt:.1f} s")
    print(f"  {dt / len(run.students):.2f} s per notebook, {kernels / dt:.1f} puzzle checks per second")
    totals = sorted({st.total for st in run.students})
    print(f"  distinct totals: {totals}")
    print(f"  memory ({args.memory} MiB per worker): {mem.report()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
