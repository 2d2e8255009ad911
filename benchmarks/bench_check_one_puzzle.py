"""How long `metal-puzzles check NOTEBOOK --puzzle map` takes on a notebook whose finale is slow
(issue 37): checking one puzzle must cost that puzzle, not the notebook's other kernels.

    python benchmarks/bench_check_one_puzzle.py [--loop 400] [--workers 1]

Three notebooks are timed, each with ``check --puzzle map`` run as the learner runs it (a process
of its own, start-up included): one with Map's solution alone; one with Map's solution and Part
V's five kernels, their reference solutions, each made slow by a loop of ``--loop`` iterations
that changes nothing (the decode step, V.12, launches them hundreds of times); and, for scale, that
second notebook checked whole. The script prints seconds and never judges them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from metal_puzzles.checking import WiredPuzzle
from metal_puzzles.puzzles import PUZZLES, get_puzzle, solution_source


def kernel_cell(kernel_name: str, source: str) -> str:
    """A notebook cell defining a kernel as the book does (as tests/grading/conftest.py writes them)."""
    p = next(q for q in PUZZLES if not isinstance(q, WiredPuzzle) and q.kernel_name == kernel_name)
    atomic = ", atomic_outputs=True" if p.atomic_outputs else ""
    return (f"def make_{kernel_name.lower()}_kernel(*inputs):\n"
            f"    header = {p.header!r}\n"
            f"    source = {source!r}\n"
            f"    return MetalKernel(name={kernel_name!r}, input_names={list(p.input_names)!r}, "
            f"output_names={list(p.output_names)!r},\n"
            f"                       source=source, header=header{atomic})\n")


def slowed(source: str, loop: int) -> str:
    """``source`` with a loop in front that costs steps and changes nothing."""
    return f"float idle_ = 0.0f;\nfor (uint w_ = 0; w_ < {loop}u; w_++) {{ idle_ += 1.0f; }}\n" + source


def notebook(path: Path, cells: list[str]) -> Path:
    path.write_text(json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": c}
                  for c in ["from metal_puzzles import MetalKernel", *cells]]}), encoding="utf-8")
    return path


def slow_finale_cells(loop: int) -> list[str]:
    finale = get_puzzle("decode_step")
    assert isinstance(finale, WiredPuzzle)
    cells = [kernel_cell("map", solution_source(get_puzzle("map")))]
    for name in finale.kernels:
        p = next(q for q in PUZZLES if not isinstance(q, WiredPuzzle) and q.kernel_name == name)
        cells.append(kernel_cell(name, slowed(solution_source(p), loop)))
    return cells


def time_check(nb: Path, workers: int, *puzzle: str) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "metal_puzzles.cli", "check", str(nb), "--workers", str(workers),
                           "--seed", "7", "--timeout", "600", *puzzle], capture_output=True, text=True)
    return time.perf_counter() - start, done.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loop", type=int, default=400, help="iterations of the loop each finale kernel idles in")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--skip-whole", action="store_true", help="do not time the slow notebook checked whole")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        map_only = notebook(Path(d) / "map_only.ipynb", slow_finale_cells(args.loop)[:1])
        slow = notebook(Path(d) / "slow_finale.ipynb", slow_finale_cells(args.loop))
        runs = [("map-only notebook, --puzzle map", map_only, ("--puzzle", "map")),
                (f"slow finale (loop {args.loop}), --puzzle map", slow, ("--puzzle", "map"))]
        if not args.skip_whole:
            runs.append((f"slow finale (loop {args.loop}), whole notebook", slow, ()))
        for label, nb, puzzle in runs:
            seconds, status = time_check(nb, args.workers, *puzzle)
            print(f"{label:<48} {seconds:7.1f} s  (exit status {status})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
