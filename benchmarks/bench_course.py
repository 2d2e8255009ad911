"""Grading at course scale: a class of notebooks with every puzzle of the book, on the local pool or a Dask
LocalCluster, with every student's sources unique or half the class sharing answers; and what
5,000 students would cost on N workers, extrapolated from the measured figures.

Run: python benchmarks/bench_course.py [--students 100] [--shared] [--runner pool | local:N]
     [--workers 2]

The class is bench_grading.py's: a third solved everything, a third left the templates, a third
solved half and broke the rest (endless loops among them). Unique: every student's sources carry
a comment naming them, so no two kernel checks are alike. Shared (``--shared``): the second half
of the class submitted, file for file, a notebook of the first half.

Prints the wall time, what the run cost (cost.json's figures: checks asked for, unique, run,
shared, compilations, compile-cache hits, worker time per puzzle), a sandboxed worker's start-up
time, and the extrapolation.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from metal_puzzles.grading.grade import grade_submissions
from metal_puzzles.grading.limits import Limits
from metal_puzzles.grading.pool import ProcessPoolRunner
from metal_puzzles.grading.tasks import ReadTask
from metal_puzzles.puzzles import PUZZLES

COURSE = 5_000


def _bench_grading():
    path = Path(__file__).with_name("bench_grading.py")
    spec = importlib.util.spec_from_file_location("bench_grading", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_class(d: Path, students: int, shared: bool) -> None:
    make = _bench_grading().notebook
    half = students // 2
    for s in range(students):
        path = d / f"student{s:04d}.ipynb"
        if shared and s >= half:
            shutil.copy(d / f"student{s - half:04d}.ipynb", path)  # a copy of a classmate's answers
        else:
            nbformat.write(make(s % 3, s), str(path))


def worker_startup_seconds(d: Path) -> float:
    """Time for one sandboxed worker to start (spawn, imports, warm-up) and read an empty notebook."""
    nb = d / "empty.ipynb"
    nb.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    st = os.stat(nb)
    start = time.perf_counter()
    with ProcessPoolRunner(Limits(), 1) as pool:
        pool.submit(ReadTask("startup", 0, str(nb), st.st_dev, st.st_ino, 2**20, ()))
        list(pool.outcomes())
    return time.perf_counter() - start


def make_runner(spec: str, workers: int):
    if spec == "pool":
        return None, f"the local pool, {workers} worker process(es)", 0.0
    from metal_puzzles.grading.cluster import ClusterSpec, DaskRunner

    cluster = ClusterSpec.parse(spec, workers)
    start = time.perf_counter()
    runner = DaskRunner(cluster, Limits())
    return runner, cluster.describe(), time.perf_counter() - start


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=100)
    ap.add_argument("--shared", action="store_true", help="the second half of the class copies the first")
    ap.add_argument("--runner", default="pool", help="pool (default), or a --cluster spec such as local:2")
    ap.add_argument("--workers", type=int, default=2, help="worker processes of the pool (default 2)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "class"
        d.mkdir()
        write_class(d, args.students, args.shared)
        load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() \
            else "unknown"
        startup = worker_startup_seconds(Path(tmp))
        runner, name, cluster_start = make_runner(args.runner, args.workers)
        workers = args.workers if runner is None else runner.threads
        start = time.perf_counter()
        run = grade_submissions([d], workers=args.workers, seed=1, progress=False, runner=runner,
                                runner_name=name if runner is not None else None)
        wall = time.perf_counter() - start
    cost = run.cost
    n = len(run.students)
    kind = "half the class sharing answers" if args.shared else "unique sources per student"
    print(f"{n} notebooks x {len(PUZZLES)} puzzles, {kind}, on {name} ({os.cpu_count()} cores on this machine)")
    print(f"  wall {wall:.1f} s ({wall / n:.2f} s per notebook)" +
          (f"; the cluster took {cluster_start:.1f} s to start before that" if cluster_start else ""))
    print(f"  {cost.summary()}")
    # Once the workers have started, how much of their time went into tasks (the rest: waiting,
    # handing tasks and results over, the parent's own work on this shared machine).
    efficiency = min(1.0, cost.worker_seconds / (max(wall - startup, 1e-9) * workers))
    print(f"  worker time {cost.worker_seconds:.1f} s = {cost.worker_seconds / n:.2f} s per notebook "
          f"(reading {cost.read_seconds:.2f} s in all); after start-up, workers were busy {efficiency:.0%} "
          f"of the time ({workers} worker(s))")
    print(f"  worker CPU time {cost.worker_cpu_seconds:.1f} s = {cost.worker_cpu_seconds / n:.2f} s per notebook "
          f"(wall / CPU = {cost.worker_seconds / max(cost.worker_cpu_seconds, 1e-9):.2f}: above 1, the machine's "
          f"other load took cores from the workers); load average before the run: {load_before}")
    print(f"  a sandboxed worker starts in {startup:.1f} s (spawn, imports, warm-up; once per worker)")
    top = sorted(cost.seconds_per_puzzle.items(), key=lambda kv: -kv[1])[:8]
    print("  worker time by puzzle (top 8): " + ", ".join(f"{pid} {s:.1f} s" for pid, s in top))
    # Extrapolation: the CPU time a notebook of this class costs (on cores of their own, which a
    # cluster's workers have), at the efficiency measured, plus one worker start; grading is
    # embarrassingly parallel (students are independent).
    per_notebook = cost.worker_cpu_seconds / n
    print(f"  {COURSE:,} students like these (extrapolated: {per_notebook:.2f} CPU-s per notebook, "
          f"{efficiency:.0%} efficiency, + one worker start), on N workers with a core each:")
    for n_workers in (2, 16, 64, 256):
        seconds = COURSE * per_notebook / (n_workers * efficiency) + startup
        print(f"    {n_workers:>4} workers: {seconds / 60:7.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
