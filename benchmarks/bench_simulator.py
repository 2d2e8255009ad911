"""Benchmark the MSL simulator against numba's CUDA simulator, from one run on this machine.

Workloads (same algorithm and sizes on both sides):

1. tiled matmul 64x64, float32, 8x8 threadgroups, 8x8 tiles in threadgroup memory, a barrier
   between the load and compute phases of every tile;
2. the same at 256x256 (numba only when its extrapolated time fits ``--numba-limit``);
3. a 1-million-thread map ``out[i] = a[i] + 10`` with threadgroups of 256 (ours only);
4. the simulator's peak memory for map kernels at several grid sizes, in bytes per thread.

numba must see ``NUMBA_ENABLE_CUDASIM=1`` before it is imported, so its part runs in a
subprocess (this same file with ``--numba-worker``).  Memory is measured in fresh
subprocesses too (``--mem-worker``) so that resident memory starts from a clean process.

Timings are reported, never asserted: the script exits 1 only when a result is wrong
(or a kernel fails to run), 0 otherwise.

Usage: python benchmarks/bench_simulator.py [--numba-limit SECONDS] [--no-numba]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TILE = 8
MAP_THREADGROUP = 256

# The tiled matmul as a learner would write it for mx.fast.metal_kernel: body only, the size N
# comes in as a template constant and the tile width from the header, so that both are
# compile-time constants usable as threadgroup array bounds.
MATMUL_HEADER = f"#define TILE {TILE}\n"
MATMUL_SOURCE = """
    uint col = thread_position_in_grid.x;
    uint row = thread_position_in_grid.y;
    uint tx = thread_position_in_threadgroup.x;
    uint ty = thread_position_in_threadgroup.y;
    threadgroup float a_tile[TILE][TILE];
    threadgroup float b_tile[TILE][TILE];
    float acc = 0.0f;
    for (uint t = 0; t < (N + TILE - 1) / TILE; ++t) {
        uint ka = t * TILE + tx;
        if (row < N && ka < N) {
            a_tile[ty][tx] = a[row * N + ka];
        } else {
            a_tile[ty][tx] = 0.0f;
        }
        uint kb = t * TILE + ty;
        if (kb < N && col < N) {
            b_tile[ty][tx] = b[kb * N + col];
        } else {
            b_tile[ty][tx] = 0.0f;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < TILE; ++k) {
            acc += a_tile[ty][k] * b_tile[k][tx];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (row < N && col < N) {
        c[row * N + col] = acc;
    }
"""

MAP_SOURCE = """
    uint i = thread_position_in_grid.x;
    out[i] = a[i] + 10;
"""


# ----------------------------------------------------------------------------- inputs, checks


def matmul_inputs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two reproducible float32 n x n matrices with entries in [-1, 1)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1.0, 1.0, size=(n, n)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, size=(n, n)).astype(np.float32)
    return a, b


def matmul_error(a: np.ndarray, b: np.ndarray, got: np.ndarray) -> str | None:
    """None when ``got`` matches ``a @ b`` up to float32 summation-order error, else why not."""
    want = a.astype(np.float64) @ b.astype(np.float64)
    got = np.asarray(got, dtype=np.float64).reshape(want.shape)
    # Each entry sums n products of magnitude < 1; float32 reordering error grows ~ n * eps.
    tol = 1e-6 * a.shape[1] + 1e-5
    err = float(np.max(np.abs(got - want)))
    if not np.isfinite(err) or err > tol:
        return f"max |c - a@b| = {err:.3g} > {tol:.3g}"
    return None


def map_error(a: np.ndarray, got: np.ndarray) -> str | None:
    """None when ``got`` equals ``a + 10`` exactly (one float32 rounding, as on a GPU)."""
    want = a + np.float32(10)
    bad = np.flatnonzero(np.asarray(got).reshape(-1) != want)
    if bad.size:
        i = int(bad[0])
        return f"{bad.size} wrong elements, first out[{i}] = {got.reshape(-1)[i]!r}, want {want[i]!r}"
    return None


# ----------------------------------------------------------------------------- our simulator


def run_matmul_ours(a: np.ndarray, b: np.ndarray, sanitize: str = "error", cost: bool = False) -> np.ndarray:
    """Run the tiled matmul on the MSL simulator; returns c as an n x n float32 array."""
    from metal_puzzles.msl import simulate

    n = a.shape[0]
    # Round the grid up to whole tiles: every thread of a threadgroup must load its tile slot
    # (zero outside the matrix), exactly as CUDA blocks do, or the partial edge groups would
    # multiply never-written threadgroup memory.
    padded = (n + TILE - 1) // TILE * TILE
    res = simulate(
        "tiled_matmul", ["a", "b"], ["c"], MATMUL_SOURCE, MATMUL_HEADER,
        inputs=[a, b], output_shapes=[(n, n)], output_dtypes=["float32"],
        grid=(padded, padded, 1), threadgroup=(TILE, TILE, 1), template=[("N", n)],
        sanitize=sanitize, cost=cost,
    )
    if cost and res.cost is None:
        raise RuntimeError("asked for a cost profile and got none")
    return res.outputs[0]


def run_map_ours(a: np.ndarray, sanitize: str = "error", cost: bool = False) -> np.ndarray:
    """Run ``out[i] = a[i] + 10`` on the MSL simulator, one thread per element."""
    from metal_puzzles.msl import simulate

    res = simulate(
        "map_add_ten", ["a"], ["out"], MAP_SOURCE,
        inputs=[a], output_shapes=[a.shape], output_dtypes=["float32"],
        grid=(a.size, 1, 1), threadgroup=(MAP_THREADGROUP, 1, 1), sanitize=sanitize, cost=cost,
    )
    if cost and res.cost is None:
        raise RuntimeError("asked for a cost profile and got none")
    return res.outputs[0]


@dataclass
class Timing:
    """First call (includes compiling; the simulator caches compiled kernels) and best steady run."""

    first: float
    steady: float
    result: np.ndarray


def time_ours(run: Callable[[], np.ndarray], repeats: int) -> Timing:
    """Time the first call separately, then the best of ``repeats`` further calls."""
    t0 = time.perf_counter()
    result = run()
    first = time.perf_counter() - t0
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - t0)
    return Timing(first, best, result)


# ----------------------------------------------------------------------------- numba's CUDA simulator


def _numba_worker(workdir: str, n: int) -> None:
    """Subprocess body: run the same tiled matmul on numba's CUDA simulator, print its time.

    Reads a.npy/b.npy from ``workdir``, writes c.npy there and prints JSON on stdout.
    """
    # numba's simulator swaps the kernel's *global* ``cuda`` for its fake module, so both names
    # must be module globals, not locals the kernel would capture as closure cells.
    global numba, cuda
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    import numba
    from numba import cuda

    @cuda.jit
    def tiled_matmul(a, b, c, size):
        a_tile = cuda.shared.array((TILE, TILE), numba.float32)
        b_tile = cuda.shared.array((TILE, TILE), numba.float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        col = cuda.blockIdx.x * cuda.blockDim.x + tx
        row = cuda.blockIdx.y * cuda.blockDim.y + ty
        acc = numba.float32(0.0)
        for t in range((size + TILE - 1) // TILE):
            ka = t * TILE + tx
            if row < size and ka < size:
                a_tile[ty, tx] = a[row, ka]
            else:
                a_tile[ty, tx] = 0.0
            kb = t * TILE + ty
            if kb < size and col < size:
                b_tile[ty, tx] = b[kb, col]
            else:
                b_tile[ty, tx] = 0.0
            cuda.syncthreads()
            for k in range(TILE):
                acc += a_tile[ty, k] * b_tile[k, tx]
            cuda.syncthreads()
        if row < size and col < size:
            c[row, col] = acc

    def launch(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        size = a.shape[0]
        c = np.zeros((size, size), dtype=np.float32)
        blocks = ((size + TILE - 1) // TILE, (size + TILE - 1) // TILE)
        tiled_matmul[blocks, (TILE, TILE)](a, b, c, size)
        return c

    # Warm up on one block so the timed launch measures execution, not first-use setup.
    launch(*matmul_inputs(TILE, seed=1))
    a = np.load(Path(workdir, "a.npy"))
    b = np.load(Path(workdir, "b.npy"))
    t0 = time.perf_counter()
    c = launch(a, b)
    elapsed = time.perf_counter() - t0
    np.save(Path(workdir, "c.npy"), c)
    print(json.dumps({"seconds": elapsed, "numba": numba.__version__}))


@dataclass
class NumbaResult:
    """Outcome of one numba run: a time, or why there is none."""

    seconds: float | None
    error: str | None = None  # wrong result or failure, counts as WRONG
    skipped: str | None = None  # not run, with the reason
    version: str = ""
    estimate: float | None = None  # extrapolated seconds when skipped for time


def run_matmul_numba(a: np.ndarray, b: np.ndarray, timeout: float) -> NumbaResult:
    """Run numba's CUDA simulator on the same inputs in a subprocess and check its answer."""
    with tempfile.TemporaryDirectory() as workdir:
        np.save(Path(workdir, "a.npy"), a)
        np.save(Path(workdir, "b.npy"), b)
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
        cmd = [sys.executable, __file__, "--numba-worker", workdir, str(a.shape[0])]
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return NumbaResult(None, skipped=f"killed after the {timeout:.0f} s limit")
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            if "No module named 'numba'" in proc.stderr:
                return NumbaResult(None, skipped="numba is not installed")
            return NumbaResult(None, error=f"numba worker failed: {tail}")
        info = json.loads(proc.stdout.strip().splitlines()[-1])
        wrong = matmul_error(a, b, np.load(Path(workdir, "c.npy")))
        return NumbaResult(info["seconds"], error=wrong, version=info["numba"])


def numba_extrapolation(seconds_small: float, n_small: int, n_big: int) -> float:
    """Expected numba time at n_big from n_small: one Python thread per output element,
    each looping over n / TILE tiles, so time grows with threads x tiles = (n_big/n_small)^3."""
    return seconds_small * (n_big / n_small) ** 3


# ----------------------------------------------------------------------------- memory


def _proc_status_bytes(field: str) -> int | None:
    """A ``VmXXX`` figure from /proc/self/status in bytes (Linux only), else None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (Linux >= 4.0); False where that is impossible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return _proc_status_bytes("VmHWM") is not None


def _rss_growth(run: Callable[[], object]) -> int:
    """How far resident memory peaked above its level before ``run()``.

    ru_maxrss alone is unreliable in a subprocess: Linux carries the parent's peak over the
    fork/exec, so a big parent hides the child's peak.  Resetting VmHWM avoids that.
    """
    import resource

    if _reset_peak_rss():
        before = _proc_status_bytes("VmRSS") or 0
        run()
        return (_proc_status_bytes("VmHWM") or 0) - before
    unit = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is bytes on macOS, KiB elsewhere
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    run()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * unit


def _mem_worker(n_threads: int) -> None:
    """Subprocess body: peak memory of one map simulation over ``n_threads`` threads.

    Compiles on a small grid first so the figures are the run's, not the compiler's; then
    measures the resident-memory peak of a plain run, then tracemalloc's peak (NumPy reports
    its buffers to tracemalloc) during a second run.  Inputs are allocated before measuring.
    """
    import tracemalloc

    run_map_ours(np.zeros(MAP_THREADGROUP, dtype=np.float32))
    a = np.arange(n_threads, dtype=np.float32)
    errors: list[str | None] = []
    rss_delta = _rss_growth(lambda: errors.append(map_error(a, run_map_ours(a))))
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    out = run_map_ours(a)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    errors.append(map_error(a, out))
    print(json.dumps({
        "threads": n_threads,
        "tracemalloc_peak": peak - base,
        "rss_delta": rss_delta,
        "error": next((e for e in errors if e), None),
    }))


@dataclass
class MemResult:
    """Peak memory of a map simulation, from a fresh process."""

    threads: int
    tracemalloc_peak: int
    rss_delta: int
    error: str | None


def measure_memory(n_threads: int) -> MemResult:
    """Run ``_mem_worker`` in a fresh interpreter and parse its report."""
    cmd = [sys.executable, __file__, "--mem-worker", str(n_threads)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return MemResult(n_threads, 0, 0, f"memory worker failed: {tail}")
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    return MemResult(n_threads, info["tracemalloc_peak"], info["rss_delta"], info["error"])


# ----------------------------------------------------------------------------- reporting


@dataclass
class Row:
    """One line of the summary table."""

    name: str
    ours: str
    numba: str = "-"
    ratio: str = "-"
    target: str = "-"
    met: str = "-"


def fmt_s(seconds: float | None) -> str:
    """Seconds with three significant figures, in ms below 0.1 s and µs below 1 ms."""
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3g} µs"
    if seconds < 0.1:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


def fmt_bytes(n: float) -> str:
    """A byte count in MiB (or B for small counts)."""
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n:.0f} B"


def render_table(rows: list[Row]) -> str:
    """Left-aligned plain-text table with a header rule."""
    header = Row("name", "ours", "numba", "ratio", "target", "met?")
    cells = [[r.name, r.ours, r.numba, r.ratio, r.target, r.met] for r in [header, *rows]]
    widths = [max(len(line[i]) for line in cells) for i in range(6)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def yes_no(ok: bool) -> str:
    return "yes" if ok else "NO"


# ----------------------------------------------------------------------------- the benchmark


class Bench:
    """Collects rows, notes and failures while the workloads run."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rows: list[Row] = []
        self.notes: list[str] = []
        self.failures: list[str] = []

    def fail(self, what: str, why: str) -> None:
        self.failures.append(f"{what}: {why}")

    def ours(self, what: str, run: Callable[[], np.ndarray], repeats: int) -> Timing | None:
        """Time one of our workloads; a crash is recorded as a failure, not raised."""
        try:
            return time_ours(run, repeats)
        except Exception as exc:  # report every simulator failure, keep benchmarking
            self.fail(what, f"{type(exc).__name__}: {exc}")
            return None

    def matmul(self, n: int, numba_64: NumbaResult | None) -> NumbaResult:
        """Matmul n x n on both simulators; returns numba's result for extrapolation."""
        a, b = matmul_inputs(n)
        name = f"matmul {n}x{n}"
        timing = self.ours(name, lambda: run_matmul_ours(a, b, self.args.sanitize), self.args.repeats)
        if timing is not None and (wrong := matmul_error(a, b, timing.result)):
            self.fail(f"{name} (ours)", wrong)
        nb = self.matmul_numba(a, b, numba_64)
        if nb.error:
            self.fail(f"{name} (numba)", nb.error)
        self.add_matmul_rows(name, n, timing, nb)
        return nb

    def matmul_numba(self, a: np.ndarray, b: np.ndarray, numba_64: NumbaResult | None) -> NumbaResult:
        """Run numba unless disabled or its extrapolated time exceeds the limit."""
        limit = self.args.numba_limit
        if self.args.no_numba:
            return NumbaResult(None, skipped="--no-numba")
        if numba_64 is not None:
            if numba_64.seconds is None:
                return NumbaResult(None, skipped="numba did not run at 64x64")
            expected = numba_extrapolation(numba_64.seconds, 64, a.shape[0])
            if expected > limit:
                self.notes.append(
                    f"numba {a.shape[0]}x{a.shape[0]} skipped: extrapolated {expected:.0f} s "
                    f"(64x64 took {numba_64.seconds:.2f} s, x{(a.shape[0] / 64) ** 3:.0f} for "
                    f"{(a.shape[0] / 64) ** 2:.0f}x the threads and {a.shape[0] / 64:.0f}x the tiles "
                    f"each) > limit {limit:.0f} s"
                )
                return NumbaResult(None, skipped=f"~{expected:.0f} s est.", estimate=expected)
        return run_matmul_numba(a, b, timeout=limit)

    def add_matmul_rows(self, name: str, n: int, timing: Timing | None, nb: NumbaResult) -> None:
        numba_cell = fmt_s(nb.seconds) if nb.seconds is not None else f"skip: {nb.skipped or nb.error}"
        if timing is None:
            self.rows.append(Row(f"{name} steady", "FAILED", numba_cell))
            return
        self.rows.append(Row(f"{name} first call (compile+run)", fmt_s(timing.first)))
        ratio, target, met = "-", "-", "-"
        if nb.seconds is not None:
            ratio = f"{nb.seconds / timing.steady:,.0f}x"
            target, met = ">= 1000x faster", yes_no(nb.seconds / timing.steady >= 1000)
        elif nb.estimate is not None:
            ratio = f"~{nb.estimate / timing.steady:,.0f}x est."
        if n >= 256:
            target, met = "ours < 1 s", yes_no(timing.steady < 1.0)
        self.rows.append(Row(f"{name} steady (best of {self.args.repeats})", fmt_s(timing.steady),
                             numba_cell, ratio, target, met))

    def map_1m(self) -> None:
        n = 1 << 20
        a = np.random.default_rng(2).uniform(-100, 100, n).astype(np.float32)
        timing = self.ours("map 2^20", lambda: run_map_ours(a, self.args.sanitize), self.args.repeats)
        if timing is None:
            self.rows.append(Row("map 2^20 threads steady", "FAILED"))
            return
        if wrong := map_error(a, timing.result):
            self.fail("map 2^20 (ours)", wrong)
        self.rows.append(Row("map 2^20 threads first call", fmt_s(timing.first)))
        self.rows.append(Row(f"map 2^20 threads steady (best of {self.args.repeats})",
                             fmt_s(timing.steady), "n/a", "-", "ours < 1 s", yes_no(timing.steady < 1.0)))

    def sanitizer_cost(self) -> None:
        """The same workloads with the sanitizer off and on, side by side."""
        print_rows = []
        a64, b64 = matmul_inputs(64)
        a256, b256 = matmul_inputs(256)
        m = np.random.default_rng(3).uniform(-1, 1, 1 << 20).astype(np.float32)
        workloads = [
            ("matmul 64x64", lambda s: run_matmul_ours(a64, b64, s)),
            ("matmul 256x256", lambda s: run_matmul_ours(a256, b256, s)),
            ("map 2^20", lambda s: run_map_ours(m, s)),
        ]
        for name, run in workloads:
            off = self.ours(f"{name} sanitize=off", lambda run=run: run("off"), self.args.repeats)
            on = self.ours(f"{name} sanitize=error", lambda run=run: run("error"), self.args.repeats)
            if off is None or on is None:
                continue
            print_rows.append(Row(f"{name}: sanitizer off / on", f"{fmt_s(off.steady)} / {fmt_s(on.steady)}",
                                  "-", f"{on.steady / off.steady:.2f}x cost"))
        self.rows.extend(print_rows)

    def cost_profile_cost(self) -> None:
        """The same workloads without and with a cost profile (cost=True: the instrumented
        variant of the kernel, segments, banks, SIMD efficiency, arithmetic by kind)."""
        a64, b64 = matmul_inputs(64)
        a256, b256 = matmul_inputs(256)
        m = np.random.default_rng(3).uniform(-1, 1, 1 << 20).astype(np.float32)
        workloads = [
            ("matmul 64x64", lambda c: run_matmul_ours(a64, b64, self.args.sanitize, c)),
            ("matmul 256x256", lambda c: run_matmul_ours(a256, b256, self.args.sanitize, c)),
            ("map 2^20", lambda c: run_map_ours(m, self.args.sanitize, c)),
        ]
        for name, run in workloads:
            off = self.ours(f"{name} cost=False", lambda run=run: run(False), self.args.repeats)
            on = self.ours(f"{name} cost=True", lambda run=run: run(True), self.args.repeats)
            if off is None or on is None:
                continue
            self.rows.append(Row(f"{name}: cost profile off / on", f"{fmt_s(off.steady)} / {fmt_s(on.steady)}",
                                 "-", f"{on.steady / off.steady:.2f}x cost"))

    def memory(self) -> list[MemResult]:
        results = [measure_memory(1 << p) for p in self.args.mem_powers]
        for m in results:
            if m.error:
                self.fail(f"map 2^{m.threads.bit_length() - 1} memory run", m.error)
        good = [m for m in results if not m.error and m.tracemalloc_peak > 0]
        for m in good:
            self.rows.append(Row(
                f"map 2^{m.threads.bit_length() - 1} peak mem (tracemalloc)",
                f"{fmt_bytes(m.tracemalloc_peak)} = {m.tracemalloc_peak / m.threads:.0f} B/thread",
            ))
        if len(good) >= 2:
            per = [m.tracemalloc_peak / m.threads for m in good]
            growth = per[-1] / per[0]
            self.rows.append(Row("peak mem per thread, largest/smallest grid", f"{growth:.2f}",
                                 target="<= 1.25 (∝ grid)", met=yes_no(growth <= 1.25)))
        return results


def print_memory_detail(results: list[MemResult]) -> None:
    print("\nPeak memory of the map kernel (fresh process per size, compile excluded):")
    print(f"  {'threads':>9}  {'tracemalloc peak':>17}  {'B/thread':>9}  {'peak RSS growth':>16}  {'B/thread':>9}")
    for m in results:
        if m.error:
            print(f"  {m.threads:>9}  {m.error}")
            continue
        print(f"  {m.threads:>9}  {fmt_bytes(m.tracemalloc_peak):>17}  {m.tracemalloc_peak / m.threads:>9.1f}"
              f"  {fmt_bytes(m.rss_delta):>16}  {m.rss_delta / m.threads:>9.1f}")


def print_header(args: argparse.Namespace) -> None:
    print("MSL simulator benchmark")
    print(f"  python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
          f"{os.cpu_count()} cpus, {platform.platform()}")
    print(f"  ours: metal_puzzles.msl.simulate, sanitize={args.sanitize!r}; "
          f"numba: CUDA simulator (NUMBA_ENABLE_CUDASIM=1), limit {args.numba_limit:.0f} s per run")
    print("  numba figures are one launch after a one-block warm-up; ours: first call, then best of "
          f"{args.repeats}\n")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.numba_worker:
        _numba_worker(args.numba_worker[0], int(args.numba_worker[1]))
        return 0
    if args.mem_worker:
        _mem_worker(args.mem_worker)
        return 0
    print_header(args)
    bench = Bench(args)
    nb64 = bench.matmul(64, None)
    bench.matmul(256, nb64)
    bench.map_1m()
    bench.sanitizer_cost()
    bench.cost_profile_cost()
    mem = bench.memory()
    print(render_table(bench.rows))
    print_memory_detail(mem)
    for note in bench.notes:
        print(f"\nnote: {note}")
    if nb64 and nb64.version:
        print(f"\nnumba {nb64.version}")
    if bench.failures:
        print("\nWRONG RESULTS / FAILURES:")
        for f in bench.failures:
            print(f"  {f}")
        return 1
    print("\nall results match numpy")
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--numba-limit", type=float, default=120.0,
                   help="seconds allowed for one numba run (256x256 is skipped if extrapolated beyond)")
    p.add_argument("--no-numba", action="store_true", help="skip numba's CUDA simulator")
    p.add_argument("--repeats", type=int, default=3, help="steady-state repeats for ours")
    p.add_argument("--sanitize", default="error", choices=["error", "warn", "off"])
    p.add_argument("--mem-powers", type=int, nargs="+", default=[16, 18, 20],
                   help="grid sizes (powers of two) for the memory measurement")
    p.add_argument("--numba-worker", nargs=2, metavar=("DIR", "N"), help=argparse.SUPPRESS)
    p.add_argument("--mem-worker", type=int, metavar="THREADS", help=argparse.SUPPRESS)
    return p.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
