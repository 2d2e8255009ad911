"""Is grading fair under any seed? Every reference solution, and every variant kernel in
tests/fairness_variants/, checked with hundreds of hidden-test seeds (the suite,
tests/checking/test_fairness.py, keeps a sample of 5 to 7).

Run: python benchmarks/bench_seed_sweep.py [--seeds 300] [--start 0] [--puzzle ID ...] [--jobs N]
                                            [--record FILE]

Prints, per kernel: the seeds it failed (a correct kernel must fail none; a ``wrong_*`` variant
must fail all), and the worst |yours - reference| / allowed over every element of every test
(how close a correct kernel came to the line; 1 fails). Seeds are drawn from a generator seeded
with --start, so a run is repeatable and two runs with different --start see different seeds.
``--jobs N`` sweeps N kernels at once, each in a process of its own; ``--record FILE`` writes
the run (its seeds' count and start, and per kernel its failures, the first failed seeds, worst
and time) as JSON, kernel by kernel as they finish, so that a run cut short keeps what it did.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the sweep is test infrastructure: tests/support/fairness.py

from metal_puzzles.checking import WiredPuzzle  # noqa: E402
from metal_puzzles.puzzles import PUZZLES, get_puzzle, solution_header, solution_source  # noqa: E402
from support.fairness import sweep  # noqa: E402

VARIANTS = ROOT / "tests" / "fairness_variants"


def _sweep_one(job: tuple[str, str, str, str | None, bool, list[int]]) -> dict:
    """One kernel over every seed, as a record (in a worker process with --jobs)."""
    puzzle_id, name, source, header, wrong, seeds = job
    puzzle = get_puzzle(puzzle_id)
    start = time.perf_counter()
    s = sweep(puzzle, source, seeds, header)
    ok = s.failures == len(seeds) if wrong else s.failures == 0
    verdict = "ok" if ok else ("PASSES SOME SEEDS" if wrong else f"UNFAIR, e.g. seed {s.failed_seeds[0]}")
    return {"puzzle": puzzle_id, "kernel": name, "model": puzzle.error_model.value, "wrong": wrong,
            "failed": s.failures, "seeds": len(seeds), "failed_seeds": s.failed_seeds[:10],
            "worst": s.worst_ratio, "seconds": round(time.perf_counter() - start, 1), "ok": ok, "verdict": verdict}


def _write_record(path: Path, record: dict) -> None:
    """The run so far, as JSON: a new file, then moved over the old one (never half written)."""
    fresh = path.with_name(path.name + ".new")
    fresh.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    os.replace(fresh, path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=300)
    ap.add_argument("--start", type=int, default=0, help="seeds the generator of hidden-test seeds")
    ap.add_argument("--puzzle", nargs="*", help="puzzle ids (default: every kernel puzzle)")
    ap.add_argument("--jobs", type=int, default=1, help="kernels swept at once, a process each (default 1)")
    ap.add_argument("--record", type=Path, help="write the run's results to this JSON file as they come")
    args = ap.parse_args()
    seeds = [int(s) for s in np.random.default_rng(args.start).integers(0, 2**63 - 1, size=args.seeds)]
    wanted = set(args.puzzle or [])
    unknown = wanted - {p.id for p in PUZZLES}
    if unknown:
        raise SystemExit(f"--puzzle: not a puzzle of the book: {', '.join(sorted(unknown))}")
    jobs = []
    for p in PUZZLES:
        if isinstance(p, WiredPuzzle) or (wanted and p.id not in wanted):
            continue
        jobs.append((p.id, "reference", solution_source(p), solution_header(p), False, seeds))
        folder = VARIANTS / p.id
        for f in sorted(folder.glob("*.metal")) if folder.is_dir() else []:
            jobs.append((p.id, f.stem, f.read_text(), None, f.name.startswith("wrong_"), seeds))
    print(f"{len(jobs)} kernels x {len(seeds)} seeds\n")
    print(f"{'puzzle':24} {'kernel':28} {'model':12} {'failed':>8} {'worst':>9} {'time':>7}  verdict")
    record = {"seeds": len(seeds), "start": args.start, "jobs": args.jobs, "machine": platform.node(),
              "cpus": os.cpu_count(), "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "kernels": []}
    # Workers are spawned, not forked: a fork of a process whose MLX has started its threads hangs.
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.jobs, mp_context=spawn) if args.jobs > 1 else _InProcess() as pool:
        for row in pool.map(_sweep_one, jobs):
            print(f"{row['puzzle']:24} {row['kernel']:28} {row['model']:12} {row['failed']:>4}/{row['seeds']:<3} "
                  f"{row['worst']:9.3g} {row['seconds']:6.1f}s  {row['verdict']}", flush=True)
            record["kernels"].append(row)
            if args.record is not None:
                _write_record(args.record, record)
    unfair = sum(not r["wrong"] and not r["ok"] for r in record["kernels"])
    strict_lost = sum(r["wrong"] and not r["ok"] for r in record["kernels"])
    record.update(finished=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), unfair=unfair,
                  strict_lost=strict_lost)
    if args.record is not None:
        _write_record(args.record, record)
    print(f"\n{unfair} correct kernel(s) failed some seed; {strict_lost} wrong kernel(s) passed some seed")
    return 1 if unfair or strict_lost else 0


class _InProcess:
    """``--jobs 1``: the kernels one after the other in this process, as a pool would map them."""

    def __enter__(self) -> _InProcess:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def map(self, fn, items):
        return map(fn, items)


if __name__ == "__main__":
    raise SystemExit(main())
