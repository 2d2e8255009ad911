#!/usr/bin/env python3
"""Markdown tables of a measure.py results file (the tables in README.md are printed by this).

    python3 report.py results_h100.json [--repeat results_h100_run1.json]

``--repeat`` adds an earlier run's median times as a column, to show how much they move between
runs (on different machines of the same kind).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import expected as E  # noqa: E402
import variants as V  # noqa: E402

PRED_ON = "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio"
THREADS = "smsp__thread_inst_executed_per_inst_executed.ratio"
UNIFORM = "smsp__sass_average_branch_targets_threads_uniform.pct"
ACHIEVED = "sm__warps_active.avg.pct_of_peak_sustained_active"


def _n(x: float | None, spec: str = ",.0f") -> str:
    return "–" if x is None else format(x, spec)


def _per(a: float | None, b: float | None) -> str:
    return "–" if a is None or not b else f"{a / b:.2f}"


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def fp32_peak(res: dict) -> float:
    """FP32 FLOP/s: SMs x 128 FP32 lanes x 2 (an FMA) x the clock the device reports."""
    dev = res["device"]
    return dev["multiProcessorCount"] * 128 * 2 * dev["clockRate"] * 1e3


def timing_table(res: dict, repeat: dict | None) -> str:
    head = ["variant", "timing size", "median ms", "round medians ms"]
    head += ["earlier run ms"] if repeat else []
    head += ["ncu gpu time ms", "useful GB/s", "GFLOP/s", "floor ms", "time / floor"]
    bandwidth = res["ceilings"]["device_to_device_copy_GBps"] * 1e9
    fp32 = fp32_peak(res)
    rows = []
    for v in V.VARIANTS:
        t = res["timing"].get(v.name)
        if t is None:
            continue
        size = ", ".join(f"{k}={x}" for k, x in t["params"].items())
        row = [v.name, size, f"{t['median_ms']:.4f}", " / ".join(f"{r['median_ms']:.4f}" for r in t["rounds"])]
        if repeat:
            row.append(f"{repeat['timing'][v.name]['median_ms']:.4f}")
        ncu_t = res.get("ncu", {}).get(v.name, {}).get("timing", {}).get("gpu__time_duration.sum")
        floor = max(t["min_bytes"] / bandwidth, t["flops"] / fp32) * 1e3
        row += [_n(None if ncu_t is None else ncu_t / 1e6, ".4f"), f"{t['effective_GBps']:.0f}",
                f"{t['GFLOPs']:.0f}" if t["flops"] else "–", f"{floor:.4f}", f"{t['median_ms'] / floor:.2f}"]
        rows.append(row)
    return _table(head, rows)


def global_table(res: dict, size: str) -> str:
    head = ["variant", "ld requests", "ld sectors", "sectors/req", "st requests", "st sectors", "sectors/req"]
    rows = []
    for v in V.VARIANTS:
        m = res["ncu"].get(v.name, {}).get(size)
        if m is None:
            continue
        rows.append([v.name, _n(m.get(E.LD_REQ)), _n(m.get(E.LD_SEC)), _per(m.get(E.LD_SEC), m.get(E.LD_REQ)),
                     _n(m.get(E.ST_REQ)), _n(m.get(E.ST_SEC)), _per(m.get(E.ST_SEC), m.get(E.ST_REQ))])
    return _table(head, rows)


def shared_table(res: dict) -> str:
    head = ["variant", "size", "ld inst", "ld wavefronts (l1tex)", "ld wavefronts (SASS)", "ld conflicts",
            "st inst", "st wavefronts (l1tex)", "st wavefronts (SASS)", "st conflicts"]
    rows = []
    for v in V.VARIANTS:
        for size in ("model", "timing"):
            m = res["ncu"].get(v.name, {}).get(size)
            if m is None or not (m.get(E.SH_LD_INST) or m.get(E.SH_ST_INST)):
                continue
            rows.append([v.name, size, _n(m.get(E.SH_LD_INST)), _n(m.get(E.SH_LD_WAVES)),
                         _n(m.get(E.SASS_SH_LD_WAVES)), _n(m.get(E.SH_LD_CONFLICTS)), _n(m.get(E.SH_ST_INST)),
                         _n(m.get(E.SH_ST_WAVES)), _n(m.get(E.SASS_SH_ST_WAVES)), _n(m.get(E.SH_ST_CONFLICTS))])
    return _table(head, rows)


def execution_table(res: dict) -> str:
    head = ["variant", "threads/inst", "pred-on threads/inst", "branch uniformity %", "registers",
            "theoretical occupancy %", "achieved occupancy % (timing size)", "blocks/SM limit (smem)"]
    rows = []
    for v in V.VARIANTS:
        m = res["ncu"].get(v.name, {}).get("model")
        mt = res["ncu"].get(v.name, {}).get("timing", {})
        if m is None:
            continue
        rows.append([v.name, _n(m.get(THREADS), ".2f"), _n(m.get(PRED_ON), ".2f"), _n(m.get(UNIFORM), ".0f"),
                     _n(m.get("launch__registers_per_thread")), _n(m.get(E.THEORETICAL_OCCUPANCY), ".0f"),
                     _n(mt.get(ACHIEVED), ".1f"), _n(m.get("launch__occupancy_limit_shared_mem"))])
    return _table(head, rows)


def memory_table(res: dict) -> str:
    head = ["variant", "L1 ld sectors", "L2 sectors read by L1", "L1 st sectors", "L2 sectors written by L1",
            "DRAM read MB", "DRAM write MB", "min MB", "DRAM / min"]
    rows = []
    for v in V.VARIANTS:
        m = res["ncu"].get(v.name, {}).get("timing")
        t = res["timing"].get(v.name)
        if m is None or t is None:
            continue
        rd, wr = m.get("dram__bytes_read.sum") or 0, m.get("dram__bytes_write.sum") or 0
        rows.append([v.name, _n(m.get(E.LD_SEC)), _n(m.get("lts__t_sectors_srcunit_tex_op_read.sum")),
                     _n(m.get(E.ST_SEC)), _n(m.get("lts__t_sectors_srcunit_tex_op_write.sum")),
                     _n(rd / 1e6, ".1f"), _n(wr / 1e6, ".1f"), _n(t["min_bytes"] / 1e6, ".1f"),
                     f"{(rd + wr) / t['min_bytes']:.2f}"])
    return _table(head, rows)


def pairs_table(res: dict) -> str:
    head = ["slower (as first written)", "improved", "time ratio", "measured order agrees"]
    rows = []
    for slow, fast in V.PAIRS:
        a, b = res["timing"][slow]["median_ms"], res["timing"][fast]["median_ms"]
        rows.append([slow, fast, f"{a / b:.2f}", "yes" if a > b else "NO"])
    return _table(head, rows)


def disagreements(res: dict) -> str:
    lines = ["<details><summary>every figure that differs</summary>", ""]
    for size in ("model", "timing"):
        rows = [r for r in res.get("comparison", []) if r["size"] == size]
        bad = [r for r in rows if not r["agree"]]
        lines.append(f"- {size} size: {len(rows) - len(bad)} of {len(rows)} expected figures equal what ncu read.")
        for r in bad:
            got = r["measured"]
            rel = f" ({(got - r['expected']) / r['expected']:+.1%})" if got is not None and r["expected"] else ""
            lines.append(f"  - `{r['variant']}` `{r['metric']}`: expected {r['expected']:,.0f}, "
                         f"measured {_n(got)}{rel}")
    lines += ["", "</details>"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--repeat", type=Path, default=None)
    args = ap.parse_args(argv)
    res = json.loads(args.results.read_text())
    repeat = json.loads(args.repeat.read_text()) if args.repeat else None
    sections = [
        ("Times at timing size", timing_table(res, repeat)),
        ("Pairs", pairs_table(res)),
        ("Global memory at model size (the simulator's launch)", global_table(res, "model")),
        ("Global memory at timing size", global_table(res, "timing")),
        ("Threadgroup (shared) memory", shared_table(res)),
        ("Lanes, branches and occupancy (model-size launch; achieved occupancy at timing size)",
         execution_table(res)),
        ("Memory hierarchy at timing size", memory_table(res)),
        ("First-principles figures that ncu did not confirm", disagreements(res)),
    ]
    for title, body in sections:
        print(f"#### {title}\n\n{body}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
