"""Check reference solutions over many hidden-test seeds: a hidden test that a correct kernel
fails on some seed (a value that rounds badly, a size the generator should not pick) shows up
here long before a learner meets it.

    python tools/sweep_seeds.py                         # the debugging part, seeds 0 to 199
    python tools/sweep_seeds.py --seeds 50 map guard    # named puzzles (ids or titles)

Prints, per puzzle, how many seeds passed and the first failing seed's report; exits 1 when any
seed fails.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from metal_puzzles.checking import GradPuzzle, check_source  # noqa: E402
from metal_puzzles.puzzles import get_puzzle, part_debug, solution_header, solution_source  # noqa: E402


def sweep(puzzle, seeds: int) -> tuple[int, str | None]:
    """How many of seeds 0 .. seeds-1 the reference solution passes, and the first failure's report."""
    source, header = solution_source(puzzle), solution_header(puzzle)
    passed, first_failure = 0, None
    for seed in range(seeds):
        result = check_source(puzzle, source, header, seed=seed)
        if result.passed and not result.notes:
            passed += 1
        elif first_failure is None:
            first_failure = f"seed {seed}:\n{result.report()}"
    return passed, first_failure


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("puzzles", nargs="*", help="puzzle ids or titles (default: the debugging part)")
    parser.add_argument("--seeds", type=int, default=200, help="seeds 0 .. N-1 (default 200)")
    args = parser.parse_args(argv)
    puzzles = [get_puzzle(name) for name in args.puzzles] or list(part_debug.PART_DEBUG)
    failed = False
    for p in puzzles:
        if isinstance(p, GradPuzzle):
            print(f"{p.number} {p.title}: a finale entry (wiring, not a kernel); skipped")
            continue
        start = time.perf_counter()
        passed, failure = sweep(p, args.seeds)
        print(f"{p.number} {p.title}: {passed}/{args.seeds} seeds pass "
              f"({time.perf_counter() - start:.1f} s)", flush=True)
        if failure is not None:
            failed = True
            print(failure)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
