"""What a hostile class costs the grader: memory of the whole process tree on the largest hostile
notebooks, and time for a notebook whose every kernel is loop-free exponential work.

Run: python benchmarks/bench_hostile.py [--workers 2] [--memory MiB] [--skip-memory] [--skip-time]

Memory is sampled from /proc every 20 ms while a notebook is graded on its own: the peak of the
summed resident memory (VmRSS) of the grader and all its worker processes, and the sum of each
process's own peak (VmHWM; an upper bound, since processes do not all peak at once). The targets
(issue 11): bounded by the configured limits (workers x --memory, plus the parent), well under
2 GB by default; the exponential notebook in seconds, not minutes. The script prints figures and
never judges them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from metal_puzzles.checking import WiredPuzzle
from metal_puzzles.grading.grade import grade_submissions
from metal_puzzles.grading.journal import Journal, RunSettings
from metal_puzzles.grading.limits import DEFAULT_MEMORY_MIB, Limits
from metal_puzzles.grading.output import write_outputs
from metal_puzzles.puzzles import PUZZLES

MiB = 2**20


# ---------------------------------------------------------------------------- notebooks
def _notebook(cells: list[str]) -> str:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                       "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": c}
                                 for c in ["from metal_puzzles import MetalKernel", *cells]]})


def _kernel_cell(p, source: str, header: str) -> str:
    return (f"k = MetalKernel(name={p.kernel_name!r}, input_names={list(p.input_names)!r}, "
            f"output_names={list(p.output_names)!r}, source={source!r}, header={header!r}, "
            f"atomic_outputs={p.atomic_outputs})\n")


def _balanced(terms: int) -> str:
    return "x" if terms == 1 else f"({_balanced(terms // 2)} + {_balanced(terms - terms // 2)})"


def _tree(depth: int = 40) -> str:
    fns = "float f0(float x) { return x + 1.0f; }\n"
    fns += "".join(f"float f{k}(float x) {{ return f{k - 1}(x) + f{k - 1}(x); }}\n" for k in range(1, depth))
    return fns + f"float f(float x) {{ return f{depth - 1}(x); }}\n"


def _templates(depth: int = 40) -> str:
    fns = "template<typename T> T g0(T x) { return x + T(1); }\n"
    fns += "".join(f"template<typename T> T g{k}(T x) {{ return g{k - 1}(x) + g{k - 1}<T>(x); }}\n"
                   for k in range(1, depth))
    return fns + f"float f(float x) {{ return g{depth - 1}(x); }}\n"


#: (name, header, source): work no loop-iteration count would bound. None of them writes an
#: output, so each compiles whatever the puzzle's output type.
SHAPES = [
    ("call tree of 2^40 calls", _tree(), "float x = f(1.0f);\n"),
    ("template chain of 2^40 calls", _templates(), "float x = f(1.0f);\n"),
    ("15,000 straight-line statements", "", "float x = 0.0f;\n" + "x++;\n" * 15_000),
    ("1,000-term expression in a loop", "",
     f"float x = 1.0f;\nfor (int k = 0; k < 1000000; k++) {{ x = {_balanced(1000)} * 0.0f; }}\n"),
    ("macros doubling 30 times", "", "#define D0 1.0f\n" + "".join(f"#define D{k} D{k - 1} + D{k - 1}\n"
                                                                  for k in range(1, 31)) + "float x = D30;\n"),
    ("64 KiB private array filled in a loop", "",
     "float x = 0.0f;\nfor (int k = 0; k < 1000000; k++) { float t[16000] = {}; x += t[k & 7]; }\n"),
]


#: The shapes whose work is exponential in the source's length (the rest are merely long).
EXPONENTIAL = ("call tree of 2^40 calls", "template chain of 2^40 calls", "macros doubling 30 times")


def exponential_notebook(names: tuple[str, ...] | None = None) -> tuple[str, list[str]]:
    """A notebook with every puzzle kernel written in one of ``SHAPES`` (those named, or all)."""
    shapes_used = [s for s in SHAPES if names is None or s[0] in names]
    kernels = []
    seen = set()
    for p in PUZZLES:
        if isinstance(p, WiredPuzzle) or p.kernel_name in seen:
            continue
        seen.add(p.kernel_name)
        kernels.append(p)
    cells, shapes = [], []
    for i, p in enumerate(kernels):
        name, header, source = shapes_used[i % len(shapes_used)]
        cells.append(_kernel_cell(p, source, header))
        shapes.append(name)
    return _notebook(cells), shapes


def write_large(d: Path) -> dict[str, Path]:
    """The largest hostile notebooks of the issue, built here."""
    from metal_puzzles.puzzles import get_puzzle, solution_source

    mp = get_puzzle("map")
    ok = _kernel_cell(mp, solution_source(mp), mp.header)
    files = {
        "5 MB of Python in one cell": ("python5.ipynb", _notebook(["x = 1\n" * 900_000, ok])),
        "5 MB of Python in 20 cells of 250 KiB": ("python5_cells.ipynb",
                                                  _notebook(["f(a, b, c)\n" * 23_000] * 20 + [ok])),
        "78 MB notebook (130 cells of 600 KB)": ("big78.ipynb", _notebook(["y = 2\n" * 100_000] * 130 + [ok])),
        "40 MB JSON of 10 million floats": ("floats.ipynb", '{"nbformat": 4, "cells": [], "metadata": {"x": ['
                                            + "1.5," * 10_000_000 + "1]}}"),
        "JSON nested 1,000,000 deep": ("deep.ipynb", "[" * 1_000_000 + "]" * 1_000_000),
    }
    out = {}
    for label, (name, text) in files.items():
        path = d / label.replace(" ", "_").replace(",", "") / name
        path.parent.mkdir()
        path.write_text(text)
        out[label] = path
    return out


# ---------------------------------------------------------------------------- measuring
def _status(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM", "PPid"):
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def _tree_pids(root: int) -> list[int]:
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            ppid = _status(int(entry)).get("PPid")
            if ppid is not None:
                parents[int(entry)] = ppid
    tree, frontier = {root}, [root]
    while frontier:
        p = frontier.pop()
        for child, parent in parents.items():
            if parent == p and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sorted(tree)


class TreeMemory:
    """Samples the memory of this process and its descendants in a background thread."""

    def __init__(self, period: float = 0.02) -> None:
        self.period = period
        self.peak_rss_sum = 0
        self.hwm: dict[int, int] = {}
        self._stop = threading.Event()
        self._pids: list[int] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last_scan = 0.0
        while not self._stop.is_set():
            if time.monotonic() - last_scan > 0.2:  # workers come and go
                self._pids, last_scan = _tree_pids(os.getpid()), time.monotonic()
            self._sample()
            self._stop.wait(self.period)

    def _sample(self) -> None:
        total = 0
        for pid in self._pids:
            st = _status(pid)
            total += st.get("VmRSS", 0)
            if "VmHWM" in st:
                self.hwm[pid] = max(self.hwm.get(pid, 0), st["VmHWM"])
        self.peak_rss_sum = max(self.peak_rss_sum, total)

    def __enter__(self) -> TreeMemory:
        self._pids = _tree_pids(os.getpid())
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        # One last sample: a block shorter than the sampling period is still measured.
        self._pids = _tree_pids(os.getpid())
        self._sample()

    def report(self) -> str:
        return (f"peak summed RSS {self.peak_rss_sum / 1024:.0f} MiB, sum of per-process peaks "
                f"{sum(self.hwm.values()) / 1024:.0f} MiB over {len(self.hwm)} processes")


def _grade(paths, limits: Limits, workers: int, max_bytes: int):
    return grade_submissions(paths, limits=limits, workers=workers, seed=1, progress=False,
                             max_notebook_bytes=max_bytes)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory", type=int, default=DEFAULT_MEMORY_MIB, help="MiB per worker")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--skip-time", action="store_true")
    args = ap.parse_args(argv)
    limits = Limits(memory_bytes=args.memory * MiB)
    print(f"{args.workers} worker(s), {args.memory} MiB address space each, {os.cpu_count()} CPU(s)")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        if not args.skip_time:
            text, kinds = exponential_notebook(EXPONENTIAL)
            nb = d / "exponential-only" / "exponential.ipynb"
            nb.parent.mkdir()
            nb.write_text(text)
            start = time.perf_counter()
            run = _grade([nb.parent], limits, args.workers, 64 * MiB)
            statuses = Counter(s["status"] for s in run.students[0].puzzles.values())
            print(f"\nnotebook of {len(kinds)} kernels, each a call tree, a template chain or doubling macros: graded in "
                  f"{time.perf_counter() - start:.1f} s ({dict(statuses)})")
            text, shapes = exponential_notebook()
            nb = d / "exponential" / "exponential.ipynb"
            nb.parent.mkdir()
            nb.write_text(text)
            start = time.perf_counter()
            with TreeMemory() as mem:
                run = _grade([nb.parent], limits, args.workers, 64 * MiB)
            dt = time.perf_counter() - start
            puzzles = run.students[0].puzzles
            by_shape = Counter()
            for p, shape in zip([p for p in PUZZLES if not isinstance(p, WiredPuzzle)], _shapes_by_puzzle(shapes),
                                strict=True):
                by_shape[(shape, puzzles[p.id]["status"])] += 1
            print(f"notebook of {len(shapes)} kernels in the {len(SHAPES)} shapes below "
                  f"({len(PUZZLES)} puzzles): graded in {dt:.1f} s; {mem.report()}")
            for (shape, status), n in sorted(by_shape.items()):
                print(f"  {shape:40s} -> {status} ({n} puzzle(s))")
            out = d / "exponential-out"
            out.mkdir()
            journal = Journal.create(out, RunSettings(1, limits.max_steps, "bench"))
            for st in run.students:
                journal.append({"file": st.path, "sha256": "", "complete": True, "issues": st.notebook_issues,
                                "puzzles": st.puzzles})
            write_outputs(run, out)
            sizes = {p.name: p.stat().st_size for p in [out / "journal.jsonl", out / "results.json"]}
            sizes["report"] = sum(p.stat().st_size for p in (out / "reports").iterdir())
            print("  output for this student: " + ", ".join(f"{k} {v / 1024:.0f} KiB" for k, v in sizes.items()))
        if not args.skip_memory:
            print("\nlargest hostile notebooks, each graded on its own (size cap raised to 100 MiB so all are read):")
            for label, path in write_large(d).items():
                start = time.perf_counter()
                with TreeMemory() as mem:
                    run = _grade([path.parent], limits, args.workers, 100 * MiB)
                dt = time.perf_counter() - start
                st = run.students[0]
                note = (st.issues[0] if st.issues else "no issue")[:90]
                print(f"  {label} ({path.stat().st_size / MiB:.0f} MiB): {dt:.1f} s; {mem.report()}\n"
                      f"      map: {st.puzzles['map']['status']}; {note}")
    return 0


def _shapes_by_puzzle(kernel_shapes: list[str]) -> list[str]:
    """The shape of each Part I/II puzzle's kernel (puzzles sharing a kernel share its shape)."""
    order, seen = [], {}
    for p in PUZZLES:
        if isinstance(p, WiredPuzzle):
            continue
        if p.kernel_name not in seen:
            seen[p.kernel_name] = kernel_shapes[len(seen)]
        order.append(seen[p.kernel_name])
    return order


if __name__ == "__main__":
    sys.exit(main())
