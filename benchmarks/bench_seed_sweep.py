"""Is grading fair under any seed? Every reference solution, and every variant kernel in
tests/fairness_variants/, checked with many hidden-test seeds.

Run: python benchmarks/bench_seed_sweep.py [--seeds 200] [--start 0] [--puzzle ID ...]

Prints, per kernel: the seeds it failed (a correct kernel must fail none; a ``wrong_*`` variant
must fail all), and the worst |yours - reference| / allowed over every element of every test
(how close a correct kernel came to the line; 1 fails). Seeds are drawn from a generator seeded
with --start, so a run is repeatable and two runs with different --start see different seeds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the sweep is test infrastructure: tests/support/fairness.py

from metal_puzzles.checking import WiredPuzzle  # noqa: E402
from metal_puzzles.puzzles import PUZZLES, get_puzzle, solution_header, solution_source  # noqa: E402
from support.fairness import sweep  # noqa: E402

VARIANTS = ROOT / "tests" / "fairness_variants"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--start", type=int, default=0, help="seeds the generator of hidden-test seeds")
    ap.add_argument("--puzzle", nargs="*", help="puzzle ids (default: every kernel puzzle)")
    args = ap.parse_args()
    seeds = [int(s) for s in np.random.default_rng(args.start).integers(0, 2**63 - 1, size=args.seeds)]
    wanted = set(args.puzzle or [])
    kernels = []
    for p in PUZZLES:
        if isinstance(p, WiredPuzzle) or (wanted and p.id not in wanted):
            continue
        kernels.append((p, "reference", solution_source(p), solution_header(p), False))
        folder = VARIANTS / p.id
        for f in sorted(folder.glob("*.metal")) if folder.is_dir() else []:
            kernels.append((get_puzzle(p.id), f.stem, f.read_text(), None, f.name.startswith("wrong_")))
    print(f"{len(kernels)} kernels x {len(seeds)} seeds\n")
    print(f"{'puzzle':24} {'kernel':28} {'model':12} {'failed':>8} {'worst':>9} {'time':>7}  verdict")
    unfair = strict_lost = 0
    for puzzle, name, source, header, wrong in kernels:
        start = time.perf_counter()
        s = sweep(puzzle, source, seeds, header)
        ok = s.failures == len(seeds) if wrong else s.failures == 0
        unfair += not wrong and not ok
        strict_lost += wrong and not ok
        verdict = "ok" if ok else ("PASSES SOME SEEDS" if wrong else f"UNFAIR, e.g. seed {s.failed_seeds[0]}")
        print(f"{puzzle.id:24} {name:28} {puzzle.error_model.value:12} {s.failures:>4}/{len(seeds):<3} "
              f"{s.worst_ratio:9.3g} {time.perf_counter() - start:6.1f}s  {verdict}", flush=True)
    print(f"\n{unfair} correct kernel(s) failed some seed; {strict_lost} wrong kernel(s) passed some seed")
    return 1 if unfair or strict_lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
