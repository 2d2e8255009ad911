#!/usr/bin/env python3
"""Measure the CUDA twins of the MSL variants on an NVIDIA GPU (issue 17).

Run on a machine with a CUDA GPU, nvcc, Nsight Compute (ncu) and CuPy:

    python3 measure.py --out OUT_DIR

Phases (``--phases``, default all of them, in this order):

* ``build``: nvcc -arch=sm_90 -O3 -cubin kernels.cu; the ptxas resource report; SASS (cuobjdump).
* ``check``: every kernel at model and timing size against the NumPy reference of variants.py,
  on fresh seeded random inputs, outputs poisoned with NaN first (so an unwritten element fails).
* ``time``: every kernel at timing size with CUDA events: warm-up, then ``--repeats`` launches per
  round, each preceded by a read of a 256 MiB buffer (so no launch finds its inputs in the 50 MB
  L2), ``--rounds`` rounds over all variants; the median over all launches is reported, each
  round's median too (their spread is the noise). A device-to-device copy gives the bandwidth
  ceiling.
* ``ncu``: Nsight Compute reads the counters of one launch of every kernel at model size (the
  simulator's launch) and at timing size, in a child process (``--ncu-child``).

Everything lands in ``OUT_DIR/results_<device>.json`` (written after each phase), with the raw
ncu CSV beside it; the last thing printed is a table. ``--parse-only`` rebuilds the ncu section and
the comparison with expected.py from the raw CSV files of an earlier run, on any machine.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import expected as E  # noqa: E402
import variants as V  # noqa: E402

PHASES = ("build", "check", "time", "ncu")

METRICS = (
    "gpu__time_duration.sum",
    E.LD_REQ, E.LD_SEC, E.ST_REQ, E.ST_SEC,
    E.SH_LD_CONFLICTS, E.SH_ST_CONFLICTS, E.SH_LD_WAVES, E.SH_ST_WAVES, E.SH_LD_INST, E.SH_ST_INST,
    E.SASS_SH_LD_WAVES, E.SASS_SH_ST_WAVES,
    "smsp__sass_inst_executed_op_global_ld.sum", "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__inst_executed.sum", "smsp__thread_inst_executed.sum",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    # Active threads count predicated-off ones too: nvcc turns short if-bodies into predicated
    # instructions, so lanes doing work per instruction is the pred_on ratio.
    "smsp__thread_inst_executed_pred_on.sum", "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio",
    "smsp__sass_average_branch_targets_threads_uniform.pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active", E.THEORETICAL_OCCUPANCY,
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
    "launch__registers_per_thread", "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_blocks", "launch__occupancy_limit_registers", "launch__occupancy_limit_warps",
)

FLUSH_BYTES = 256 << 20


# ---------------------------------------------------------------------------------------------
# small helpers


def log(msg: str) -> None:
    print(msg, flush=True)


def run_text(cmd: list[str], timeout: float = 120) -> tuple[int, str]:
    """Run a command; (exit status, stdout + stderr). A missing program gives status 127."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return 127, f"{cmd[0]}: not found"
    except subprocess.TimeoutExpired as e:
        return 124, f"timed out after {timeout} s: {e}"
    return p.returncode, p.stdout + p.stderr


def device_slug(name: str) -> str:
    m = re.search(r"\b([A-Z]\d{2,4}[A-Z]?)\b", name)
    return (m.group(1) if m else re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")).lower()


def metric_base(metric: str) -> str:
    return metric.split(".", 1)[0]


class Results:
    """The JSON results file, rewritten after each phase so that a cut-off run keeps its figures."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.data: dict[str, Any] = {"schema": 1, "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
        self.path = out_dir / "results.json"

    def name_after(self, device_name: str) -> None:
        self.path.unlink(missing_ok=True)
        self.path = self.out_dir / f"results_{device_slug(device_name)}.json"

    def save(self) -> None:
        self.path.write_text(json.dumps(self.data, indent=1, sort_keys=False) + "\n")


# ---------------------------------------------------------------------------------------------
# the GPU side (CuPy)


class Gpu:
    """Loads the cubin and launches variants' CUDA kernels with CuPy."""

    def __init__(self, cubin: Path) -> None:
        import cupy as cp

        self.cp = cp
        self.module = cp.RawModule(path=str(cubin))
        self._functions: dict[str, Any] = {}
        props = cp.cuda.runtime.getDeviceProperties(0)
        # Plain numbers and the name; byte fields such as the UUID are not text.
        self.props = {k: v for k, v in props.items() if isinstance(v, int | float)}
        name = props.get("name", b"unknown GPU")
        self.props["name"] = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
        self.name = self.props["name"]

    def function(self, name: str):
        if name not in self._functions:
            self._functions[name] = self.module.get_function(name)
        return self._functions[name]

    def upload(self, case: V.Case) -> tuple[list, list]:
        cp = self.cp
        ins = [cp.asarray(x) for x in case.inputs]
        outs = [cp.empty(s, dtype=np.float32) for s in case.output_shapes]
        return ins, outs

    def poison(self, outs: list) -> None:
        """All bytes 0xFF: every float a NaN, so an element the kernel never wrote fails the check."""
        for o in outs:
            o.data.memset_async(0xFF, o.nbytes)

    def launch(self, case: V.Case, ins: list, outs: list) -> None:
        args = (*ins, *outs, *(np.int32(v) for v in case.cuda_int_args))
        self.function(case.variant.cuda_kernel)(case.launch.groups, case.launch.threadgroup, args,
                                                shared_mem=case.cuda_shared_bytes)

    def synchronize(self) -> None:
        self.cp.cuda.runtime.deviceSynchronize()


# ---------------------------------------------------------------------------------------------
# phases


def phase_environment(res: Results, args) -> None:
    env: dict[str, Any] = {"host": platform.node(), "python": sys.version.split()[0],
                           "numpy": np.__version__}
    for tool, cmd in (("nvcc", ["nvcc", "--version"]), ("ncu", ["ncu", "--version"]),
                      ("nvidia_smi", ["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,"
                                      "clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,"
                                      "temperature.gpu,persistence_mode,mig.mode.current",
                                      "--format=csv"])):
        env[tool] = run_text(cmd)[1].strip()
    try:
        import cupy as cp

        env["cupy"] = cp.__version__
    except Exception as e:  # reported, and the GPU phases fail with the same error later
        env["cupy"] = f"import failed: {e!r}"
    res.data["environment"] = env
    log(f"nvcc: {env['nvcc'].splitlines()[-1] if env['nvcc'] else '?'}")
    log(f"ncu: {env['ncu'].splitlines()[-1] if env['ncu'] else '?'}")
    log(f"nvidia-smi: {env['nvidia_smi']}")
    log(f"cupy: {env['cupy']}")


def phase_build(res: Results, args) -> Path:
    build = Path(args.build_dir)
    build.mkdir(parents=True, exist_ok=True)
    cubin = build / "kernels.cubin"
    cmd = ["nvcc", "-arch=sm_90", "-O3", "-lineinfo", "-cubin", "-Xptxas", "-v", "-o", str(cubin),
           str(HERE / "kernels.cu")]
    status, text = run_text(cmd, timeout=300)
    res.data["build"] = {"command": " ".join(cmd), "status": status, "ptxas": text}
    if status != 0:
        log(text)
        raise SystemExit(f"nvcc failed with status {status}")
    status, sass = run_text(["cuobjdump", "--dump-sass", str(cubin)], timeout=120)
    (args.out / "sass.txt").write_text(sass)
    log(f"built {cubin} ({cubin.stat().st_size} bytes); SASS {'saved' if status == 0 else 'unavailable'}")
    return cubin


def _selected(args) -> list[V.Variant]:
    if not args.variants:
        return list(V.VARIANTS)
    return [V.by_name(n) for n in args.variants.split(",")]


def phase_check(res: Results, args, gpu: Gpu) -> None:
    checks = []
    seed0 = args.seed if args.seed is not None else int(time.time()) % 1_000_000
    for size in (V.Size.MODEL, V.Size.TIMING):
        for k, variant in enumerate(_selected(args)):
            seed = seed0 + 1000 * (size is V.Size.TIMING) + k
            case = variant.case(size, seed)
            ins, outs = gpu.upload(case)
            gpu.poison(outs)
            try:
                gpu.launch(case, ins, outs)
                gpu.synchronize()
                problem = V.mismatch(case, [o.get() for o in outs])
            except Exception as e:
                problem = f"launch failed: {e!r}"
            checks.append({"variant": variant.name, "size": size.value, "seed": seed,
                           "ok": problem is None, "problem": problem})
            log(f"check {variant.name:20s} {size.value:6s} {'ok' if problem is None else 'FAIL: ' + problem}")
            del ins, outs
            gpu.cp.get_default_memory_pool().free_all_blocks()
    res.data["checks"] = checks
    failed = [c for c in checks if not c["ok"]]
    log(f"checks: {len(checks) - len(failed)} of {len(checks)} passed")


def _percentiles(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms)
    return {"median_ms": float(np.median(a)), "min_ms": float(a.min()),
            "p10_ms": float(np.percentile(a, 10)), "p90_ms": float(np.percentile(a, 90)), "n": len(ms)}


def phase_time(res: Results, args, gpu: Gpu) -> None:
    cp = gpu.cp
    flush_buf = cp.zeros(FLUSH_BYTES // 4, dtype=np.float32)
    sink = cp.zeros(1, dtype=np.float32)
    sms = int(gpu.props.get("multiProcessorCount", 132))
    flush_fn = gpu.function("l2_flush_read")

    def flush() -> None:
        flush_fn((sms * 4,), (256,), (flush_buf, np.uint64(flush_buf.size // 4), sink))

    ceiling = _copy_ceiling(cp)
    variants = _selected(args)
    resident = {}
    for k, variant in enumerate(variants):
        case = variant.case(V.Size.TIMING, 77 + k)
        ins, outs = gpu.upload(case)
        resident[variant.name] = (case, ins, outs)
    gpu.synchronize()
    samples: dict[str, list[list[float]]] = {v.name: [] for v in variants}
    for rnd in range(args.rounds):
        for variant in variants:
            case, ins, outs = resident[variant.name]
            for _ in range(3):
                gpu.launch(case, ins, outs)
            starts = [cp.cuda.Event() for _ in range(args.repeats)]
            ends = [cp.cuda.Event() for _ in range(args.repeats)]
            for s, e in zip(starts, ends, strict=True):
                flush()
                s.record()
                gpu.launch(case, ins, outs)
                e.record()
            ends[-1].synchronize()
            samples[variant.name].append([cp.cuda.get_elapsed_time(s, e) for s, e in zip(starts, ends, strict=True)])
            log(f"time round {rnd} {variant.name:20s} median {np.median(samples[variant.name][-1]):.4f} ms")
    timing = {}
    for variant in variants:
        case = resident[variant.name][0]
        every = [t for r in samples[variant.name] for t in r]
        entry = _percentiles(every)
        entry["rounds"] = [_percentiles(r) for r in samples[variant.name]]
        entry["params"] = case.params
        entry["grid"] = list(case.launch.grid)
        entry["threadgroup"] = list(case.launch.threadgroup)
        sec = entry["median_ms"] / 1e3
        entry["min_bytes"] = variant.min_bytes(case.params)
        entry["flops"] = variant.flops(case.params)
        entry["effective_GBps"] = entry["min_bytes"] / sec / 1e9
        entry["GFLOPs"] = entry["flops"] / sec / 1e9
        timing[variant.name] = entry
    res.data["timing"] = timing
    res.data["ceilings"] = {"device_to_device_copy_GBps": ceiling}
    del resident
    cp.get_default_memory_pool().free_all_blocks()


def _copy_ceiling(cp) -> float:
    """Device-to-device copy of 1 GiB (bytes read + written over time), median of 10."""
    n = 1 << 30
    src = cp.ones(n // 4, dtype=np.float32)
    dst = cp.empty_like(src)
    times = []
    for _ in range(11):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        dst.data.copy_from_device_async(src.data, n)
        e.record()
        e.synchronize()
        times.append(cp.cuda.get_elapsed_time(s, e))
    ms = float(np.median(times[1:]))
    log(f"device-to-device copy: {2 * n / ms / 1e6:.0f} GB/s")
    return 2 * n / ms / 1e6


def query_metrics(res: Results) -> None:
    """Record which of the requested metrics' base names ``ncu --query-metrics`` lists (for the log).

    The list is not used to filter: some metrics ncu collects (launch__*, a few ratios) are not
    listed. Unknown names are found by the first profiling run instead (see phase_ncu).
    """
    status, text = run_text(["ncu", "--query-metrics"], timeout=180)
    known = {line.split()[0] for line in text.splitlines() if line.strip()}
    bases = sorted({metric_base(m) for m in METRICS})
    res.data["ncu_query"] = {"status": status, "listed": [b for b in bases if b in known],
                             "not_listed": [b for b in bases if b not in known]}
    log(f"ncu --query-metrics (status {status}) does not list: {res.data['ncu_query']['not_listed']}")


def _rejected_metrics(metrics: list[str], *texts: str) -> list[str]:
    """Metrics that ncu's error lines name (an unknown metric stops ncu from collecting any)."""
    errors = [line for t in texts for line in t.splitlines() if "==ERROR==" in line]
    return [m for m in metrics if any(m in line or metric_base(m) in line for line in errors)]


def _profile(args, cubin: Path, size: str, metrics: list[str]) -> tuple[int, str, Path, Path]:
    names = sorted({v.cuda_kernel for v in _selected(args)})
    raw = args.out / f"ncu_{size}.csv"
    order = Path(args.build_dir) / f"ncu_order_{size}.json"
    for stale in (raw, order):
        stale.unlink(missing_ok=True)
    cmd = ["ncu", "--clock-control", "none", "--csv", "--print-units", "base",
           "--metrics", ",".join(metrics), "--kernel-name", f"regex:^({'|'.join(names)})$",
           "--log-file", str(raw),
           sys.executable, str(HERE / "measure.py"), "--ncu-child", "--sizes", size, "--cubin", str(cubin),
           "--order-file", str(order), "--build-dir", args.build_dir]
    if args.variants:
        cmd += ["--variants", args.variants]
    status, text = run_text(cmd, timeout=args.ncu_timeout)
    return status, " ".join(cmd) + "\n" + text, raw, order


def phase_ncu(res: Results, args, cubin: Path) -> None:
    query_metrics(res)
    metrics = list(METRICS)
    res.data.setdefault("ncu_runs", {})
    res.data["ncu_dropped_metrics"] = []
    for size in args.ncu_sizes.split(","):
        t0 = time.time()
        status, text, raw, order = _profile(args, cubin, size, metrics)
        rejected = _rejected_metrics(metrics, text, raw.read_text(errors="replace") if raw.exists() else "")
        if rejected and not read_ncu_csv(raw):
            log(f"ncu rejected {rejected}; profiling again without them")
            res.data["ncu_dropped_metrics"] += rejected
            metrics = [m for m in metrics if m not in rejected]
            status, text, raw, order = _profile(args, cubin, size, metrics)
        log(f"ncu at {size} size: status {status} in {time.time() - t0:.0f} s")
        if status != 0:
            log(text[-3000:])
        launches = json.loads(order.read_text()) if order.exists() else []
        res.data["ncu_runs"][size] = {"status": status, "seconds": round(time.time() - t0, 1),
                                      "metrics": metrics, "output_tail": text[-4000:], "launches": launches}
        res.save()
    parse_ncu(res, args.out)


def ncu_child(args) -> None:
    """Launch every selected variant once at the given sizes (profiled by the parent's ncu)."""
    gpu = Gpu(Path(args.cubin))
    order = []
    for size_name in args.sizes.split(","):
        size = V.Size(size_name)
        for k, variant in enumerate(_selected(args)):
            case = variant.case(size, 500 + k)
            ins, outs = gpu.upload(case)
            gpu.poison(outs)
            gpu.launch(case, ins, outs)
            gpu.synchronize()
            problem = V.mismatch(case, [o.get() for o in outs])
            order.append({"variant": variant.name, "size": size.value, "kernel": variant.cuda_kernel,
                          "grid": list(case.launch.groups), "block": list(case.launch.threadgroup),
                          "ok": problem is None, "problem": problem})
            del ins, outs
            gpu.cp.get_default_memory_pool().free_all_blocks()
    Path(args.order_file).write_text(json.dumps(order, indent=1))


# ---------------------------------------------------------------------------------------------
# ncu CSV -> figures


def _number(text: str) -> float | None:
    t = text.replace(",", "").strip()
    try:
        return float(t)
    except ValueError:
        return None


def read_ncu_csv(path: Path) -> list[dict[str, Any]]:
    """One dict per profiled kernel launch, in ID order: name, block, grid, {metric: value}."""
    lines = path.read_text(errors="replace").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    rows = csv.DictReader([line for line in lines[start:] if line.startswith('"')])
    by_id: dict[int, dict[str, Any]] = {}
    for row in rows:
        try:
            ident = int(row["ID"])
        except (KeyError, ValueError):
            continue
        entry = by_id.setdefault(ident, {"kernel": row.get("Kernel Name", ""), "block": row.get("Block Size", ""),
                                         "grid": row.get("Grid Size", ""), "metrics": {}, "units": {}})
        name = row.get("Metric Name", "")
        value = _number(row.get("Metric Value", ""))
        entry["metrics"][name] = value
        entry["units"][name] = row.get("Metric Unit", "")
    return [by_id[k] for k in sorted(by_id)]


def parse_ncu(res: Results, out_dir: Path) -> None:
    ncu: dict[str, dict[str, Any]] = {}
    problems = []
    for size, run in res.data.get("ncu_runs", {}).items():
        raw = out_dir / f"ncu_{size}.csv"
        profiled = read_ncu_csv(raw) if raw.exists() else []
        launches = run.get("launches", [])
        if len(profiled) != len(launches):
            problems.append(f"{size}: ncu profiled {len(profiled)} launches, the child made {len(launches)}")
        for launch, prof in zip(launches, profiled, strict=False):
            if launch["kernel"] not in prof["kernel"]:
                problems.append(f"{size}: launch {launch['variant']} was profiled as {prof['kernel']!r}")
                continue
            ncu.setdefault(launch["variant"], {})[size] = prof["metrics"] | {"_units": prof["units"]}
    res.data["ncu"] = ncu
    res.data["ncu_problems"] = problems
    for p in problems:
        log(f"ncu: {p}")
    compare_with_expected(res)


def compare_with_expected(res: Results) -> None:
    rows = []
    exp_all: dict[str, dict[str, dict[str, float]]] = {}
    for variant in V.VARIANTS:
        for size in V.Size:
            exp = E.expected(variant, variant.sizes[size])
            exp_all.setdefault(variant.name, {})[size.value] = exp
            measured = res.data.get("ncu", {}).get(variant.name, {}).get(size.value)
            if measured is None:
                continue
            for metric, want in exp.items():
                got = measured.get(metric)
                tol = 0.5 if metric == E.THEORETICAL_OCCUPANCY else 0.0
                rows.append({"variant": variant.name, "size": size.value, "metric": metric, "expected": want,
                             "measured": got, "agree": got is not None and abs(got - want) <= tol})
    res.data["expected"] = exp_all
    res.data["comparison"] = rows


# ---------------------------------------------------------------------------------------------
# the table


def _ratio(m: dict, num: str, den: str) -> str:
    a, b = m.get(num), m.get(den)
    return f"{a / b:.2f}" if a is not None and b else "-"


def _fmt(x, spec=".1f") -> str:
    return "-" if x is None else format(x, spec)


def print_tables(res: Results) -> None:
    timing = res.data.get("timing", {})
    ncu = res.data.get("ncu", {})
    log("")
    log("time at timing size (median of all launches, L2 flushed before each), counters at MODEL size:")
    head = (f"{'variant':19s} {'ms':>8s} {'GB/s':>6s} {'ldsec/rq':>8s} {'stsec/rq':>8s} {'shld':>6s} "
            f"{'shwave/rq':>9s} {'confl':>6s} {'thr/ins':>7s} {'predon':>6s} {'occ th/ach':>11s} {'DRAM/min(T)':>11s}")
    log(head)
    for variant in V.VARIANTS:
        t = timing.get(variant.name, {})
        m = ncu.get(variant.name, {}).get("model", {})
        mt = ncu.get(variant.name, {}).get("timing", {})
        dram = (mt.get("dram__bytes_read.sum") or 0) + (mt.get("dram__bytes_write.sum") or 0)
        min_b = t.get("min_bytes") or variant.min_bytes(variant.sizes[V.Size.TIMING])
        occ = f"{_fmt(m.get(E.THEORETICAL_OCCUPANCY), '.0f')}/{_fmt(mt.get('sm__warps_active.avg.pct_of_peak_sustained_active'), '.0f')}"
        log(f"{variant.name:19s} {_fmt(t.get('median_ms'), '.4f'):>8s} {_fmt(t.get('effective_GBps'), '.0f'):>6s} "
            f"{_ratio(m, E.LD_SEC, E.LD_REQ):>8s} {_ratio(m, E.ST_SEC, E.ST_REQ):>8s} "
            f"{_fmt(m.get(E.SH_LD_INST), '.0f'):>6s} {_ratio(m, E.SH_LD_WAVES, E.SH_LD_INST):>9s} "
            f"{_fmt(m.get(E.SH_LD_CONFLICTS), '.0f'):>6s} "
            f"{_fmt(m.get('smsp__thread_inst_executed_per_inst_executed.ratio'), '.1f'):>7s} "
            f"{_fmt(m.get('smsp__thread_inst_executed_pred_on_per_inst_executed.ratio'), '.1f'):>6s} {occ:>11s} "
            f"{(f'{dram / min_b:.2f}' if dram and min_b else '-'):>11s}")
    rows = res.data.get("comparison", [])
    for size in V.Size:
        sized = [r for r in rows if r["size"] == size.value]
        if not sized:
            continue
        bad = [r for r in sized if not r["agree"]]
        log(f"\nexpected-from-first-principles vs ncu at {size.value} size: "
            f"{len(sized) - len(bad)} of {len(sized)} figures agree exactly")
        for r in bad:
            got = r["measured"]
            rel = f"{(got - r['expected']) / r['expected']:+.1%}" if got is not None and r["expected"] else ""
            log(f"  {r['variant']:19s} {r['metric']:58s} expected {r['expected']:.0f} "
                f"measured {_fmt(got, '.0f')} {rel}")
    checks = res.data.get("checks", [])
    if checks:
        failed = [c for c in checks if not c["ok"]]
        log(f"correctness: {len(checks) - len(failed)} of {len(checks)} checks passed")
        for c in failed:
            log(f"  FAIL {c['variant']} {c['size']}: {c['problem']}")


# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--phases", default=",".join(PHASES), help=f"comma-separated, of {PHASES}")
    ap.add_argument("--variants", default="", help="comma-separated variant names (default: all)")
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=None, help="base seed of the checks (default: from the clock)")
    ap.add_argument("--ncu-sizes", default="model,timing")
    ap.add_argument("--ncu-timeout", type=float, default=400)
    ap.add_argument("--build-dir", default="/tmp/gpu_evidence_build")
    ap.add_argument("--parse-only", type=Path, default=None,
                    help="an earlier run's results JSON: re-read its ncu CSV files beside it, re-compare")
    ap.add_argument("--ncu-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="model", help=argparse.SUPPRESS)
    ap.add_argument("--cubin", default="", help=argparse.SUPPRESS)
    ap.add_argument("--order-file", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.ncu_child:
        ncu_child(args)
        return 0
    if args.parse_only:
        res = Results(args.parse_only.parent)
        res.data = json.loads(args.parse_only.read_text())
        res.path = args.parse_only
        parse_ncu(res, args.parse_only.parent)
        res.save()
        print_tables(res)
        return 0

    phases = [p for p in args.phases.split(",") if p]
    unknown = set(phases) - set(PHASES)
    if unknown:
        ap.error(f"unknown phase(s) {sorted(unknown)}; choose from {PHASES}")
    args.out.mkdir(parents=True, exist_ok=True)
    res = Results(args.out)
    phase_environment(res, args)
    cubin = Path(args.build_dir) / "kernels.cubin"
    if "build" in phases or not cubin.exists():
        cubin = phase_build(res, args)
    res.save()
    gpu = Gpu(cubin) if {"check", "time", "ncu"} & set(phases) else None
    if gpu is not None:
        res.data["device"] = gpu.props
        res.name_after(gpu.name)
        log(f"device: {gpu.name}, {gpu.props.get('multiProcessorCount')} SMs, "
            f"L2 {gpu.props.get('l2CacheSize', 0) / 2**20:.0f} MiB")
    t_start = time.time()
    for phase, fn in (("check", lambda: phase_check(res, args, gpu)), ("time", lambda: phase_time(res, args, gpu)),
                      ("ncu", lambda: phase_ncu(res, args, cubin))):
        if phase not in phases:
            continue
        t0 = time.time()
        try:
            fn()
        except Exception as e:  # keep what the other phases measure
            res.data.setdefault("errors", []).append(f"{phase}: {e!r}")
            log(f"phase {phase} failed: {e!r}")
        res.data.setdefault("phase_seconds", {})[phase] = round(time.time() - t0, 1)
        res.save()
    res.data["total_seconds"] = round(time.time() - t_start, 1)
    res.save()
    print_tables(res)
    log(f"\nresults: {res.path}")
    if shutil.which("nvidia-smi"):
        log(run_text(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,temperature.gpu", "--format=csv"])[1])
    return 1 if res.data.get("errors") or any(not c["ok"] for c in res.data.get("checks", [])) else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
