"""What the sanitizer's history and the atomics cost per access (issue 27, section 3): kernels that
stay within a puzzle's step budget yet make many accesses, run as the grader runs a student's
kernel (the Map puzzle's tests, sanitizer on, ``PUZZLE_MAX_STEPS``), and at one 32-thread launch
with the sanitizer off and on.

Kernels (each thread, within the 20,000-step budget):
  struct reads   4,000 loop iterations, each copying a 64-float struct out of threadgroup memory
                 (64 reads a thread an iteration);
  scalar reads   4,000 loop iterations of one threadgroup read;
  atomic adds    6,000 atomic_fetch_add_explicit on one threadgroup atomic<int>, the old value used;
  plain updates  6,000 read-then-write updates of the thread's own threadgroup slot (the plain
                 accesses the atomic adds stand beside).

Run: python benchmarks/bench_sanitizer_cost.py [--before REV|none] [--kernels ...] [--scale 1]

The "before" columns come from the package as it was at git revision REV (default: the commit
before this work), extracted with ``git archive`` and run in a subprocess; "after" from this tree.
Both run in this one invocation, on this machine. Prints, per kernel and per version: CPU seconds
of the grader's check (all the puzzle's tests, with the traced rerun that explains an over-budget
count), CPU microseconds per access (accesses of all threads) with the sanitizer off and on, and
the peak resident memory of the process that ran it. CPU time, not wall time: the figures stay
comparable on a machine other work shares. The script prints figures and never judges them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: The commit before the sanitizer's history and the atomics were made cheap (issue 27).
BASELINE = "e1169d7"

THREADS = 32
HEADER = "struct Row { float v[64]; };\n"
PROLOGUE = "uint i = thread_position_in_grid.x;\nuint t = thread_position_in_threadgroup.x;\n"
EPILOGUE = "out[i] = a[i] + 10.0f + keep * 0.0f;\n"


def kernels(reads: int = 4000, updates: int = 6000) -> dict[str, tuple[str, tuple[str, ...]]]:
    """name -> (body, the counters its accesses land in), with ``reads`` loop iterations of reads
    and ``updates`` of updates a thread."""
    return {
        "struct reads": (
            PROLOGUE + "threadgroup Row s;\n"
            "for (uint j = t; j < 64; j += threads_per_threadgroup.x) { s.v[j] = float(j); }\n"
            "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            "float keep = 0.0f;\n"
            f"for (uint k = 0; k < {reads}; k++) {{ Row r = s; keep += r.v[k % 64]; }}\n" + EPILOGUE,
            ("shared_reads",)),
        "scalar reads": (
            PROLOGUE + "threadgroup float s[64];\n"
            "for (uint j = t; j < 64; j += threads_per_threadgroup.x) { s[j] = float(j); }\n"
            "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            "float keep = 0.0f;\n"
            f"for (uint k = 0; k < {reads}; k++) {{ keep += s[(t + k) % 64]; }}\n" + EPILOGUE,
            ("shared_reads",)),
        "atomic adds": (
            PROLOGUE + "threadgroup atomic<int> c;\n"
            "if (t == 0) { atomic_store_explicit(&c, 0, memory_order_relaxed); }\n"
            "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            "int last = 0;\n"
            f"for (uint k = 0; k < {updates}; k++) {{ last = atomic_fetch_add_explicit(&c, 1, memory_order_relaxed); }}\n"
            "float keep = float(last);\n" + EPILOGUE,
            ("atomics",)),
        "plain updates": (
            PROLOGUE + "threadgroup int s[1024];\n"
            "s[t] = 0;\n"
            f"for (uint k = 0; k < {updates}; k++) {{ s[t] += 1; }}\n"
            "float keep = float(s[t]);\n" + EPILOGUE,
            ("shared_reads", "shared_writes")),
    }


KERNELS = list(kernels())


# ------------------------------------------------------------------------ one version
def measure(name: str, scale: float = 1.0) -> dict:
    """Run one kernel (its loops ``scale`` times as long) with the package importable here;
    figures as JSON-ready numbers."""
    from metal_puzzles.checking import PUZZLE_MAX_STEPS, check_source
    from metal_puzzles.msl import simulate
    from metal_puzzles.puzzles import PUZZLES

    map_puzzle = next(p for p in PUZZLES if p.id == "map")
    body, counters = kernels(max(1, round(4000 * scale)), max(1, round(6000 * scale)))[name]
    row = {}
    for mode in ("off", "warn"):
        a = np.arange(THREADS, dtype=np.float32)
        start = time.process_time()
        run = simulate(name.replace(" ", "_"), ["a"], ["out"], body, HEADER, inputs=[a],
                       output_shapes=[(THREADS,)], output_dtypes=["float32"], grid=(THREADS, 1, 1),
                       threadgroup=(THREADS, 1, 1), init_value=None, sanitize=mode,
                       max_steps=PUZZLE_MAX_STEPS, trace=False)
        took = time.process_time() - start
        made = int(sum(getattr(run.counts, c).sum() for c in counters))  # all threads' accesses
        ok = run.stopped is None and np.array_equal(run.outputs[0], a + 10)
        errors = [f.kind for f in run.findings if f.is_error]
        row[mode] = {"seconds": took, "accesses": made, "us_per_access": 1e6 * took / max(made, 1),
                     "ok": bool(ok and not errors), "findings": [str(k) for k in errors]}
    row["launch_peak_mib"] = _peak_mib()
    start = time.process_time()
    try:
        row["grader_status"] = str(check_source(map_puzzle, body, HEADER).status)
    except Exception as exc:  # noqa: BLE001 - an internal error is a figure to report here
        row["grader_status"] = f"internal error: {type(exc).__name__}"
    row["grader_seconds"] = time.process_time() - start
    row["grader_peak_mib"] = _peak_mib()
    import metal_puzzles

    row["package"] = str(Path(metal_puzzles.__file__).parent)
    return row


def _peak_mib() -> float:
    """The peak resident memory of this process so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_version(lib: Path, name: str, scale: float) -> dict:
    """``measure`` in a fresh interpreter that imports the package from ``lib`` (a process per
    kernel, so each peak of memory is that kernel's)."""
    env = dict(os.environ, PYTHONPATH=str(lib))
    proc = subprocess.run([sys.executable, __file__, "--measure", name, "--scale", str(scale)], env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"the run with {lib} failed:\n{proc.stderr[-3000:]}")
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    if not row["package"].startswith(str(lib)):
        raise SystemExit(f"the run meant for {lib} imported the package from {row['package']}")
    return row


def extract(rev: str, into: Path) -> Path:
    """The package's lib/ folder as it was at ``rev``."""
    blob = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, "lib"], capture_output=True,
                          check=True).stdout
    with tarfile.open(fileobj=BytesIO(blob)) as tar:
        tar.extractall(into, filter="data") if sys.version_info >= (3, 12) else tar.extractall(into)
    return into / "lib"


# ------------------------------------------------------------------------------ table
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default=BASELINE, help="git revision for the 'before' column, or 'none'")
    ap.add_argument("--kernels", nargs="+", default=KERNELS, choices=KERNELS)
    ap.add_argument("--scale", type=float, default=1.0, help="loops this many times as long (1: the issue's)")
    ap.add_argument("--measure", choices=KERNELS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure is not None:
        print(json.dumps(measure(args.measure, args.scale)))
        return
    libs = {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.before != "none":
            libs[f"before ({args.before})"] = extract(args.before, Path(tmp))
        libs["after (this tree)"] = ROOT / "lib"
        rows = {(name, version): run_version(lib, name, args.scale) for name in args.kernels for version, lib in libs.items()}
    print(f"{THREADS} threads in one threadgroup, CPU time; the grader's check: the Map puzzle's tests, "
          "sanitizer on. MiB: peak resident memory after the two launches, and after the grader's check")
    head = (f"{'kernel':14} {'version':19} {'accesses':>9} {'off us/acc':>10} {'on us/acc':>10} {'on/off':>6} "
            f"{'MiB':>5} {'grader s':>8} {'MiB':>5}  grader's verdict")
    print(head)
    print("-" * len(head))
    for (name, version), row in rows.items():
        off, on = row["off"], row["warn"]
        bad = "" if off["ok"] and on["ok"] else f"  WRONG RUN {off['findings'] + on['findings']}"
        print(f"{name:14} {version:19} {on['accesses']:>9} {off['us_per_access']:>10.3f} "
              f"{on['us_per_access']:>10.3f} {on['seconds'] / off['seconds']:>6.1f} {row['launch_peak_mib']:>5.0f} "
              f"{row['grader_seconds']:>8.2f} {row['grader_peak_mib']:>5.0f}  {row['grader_status']}{bad}")
    for version, lib in libs.items():
        print(f"{version}: {lib}")


if __name__ == "__main__":
    main()
