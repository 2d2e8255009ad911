"""Sweeping kernels over hidden-test seeds: is a puzzle's comparison fair to every correct kernel,
and still strict with wrong ones? Used by the fairness tests and ``benchmarks/bench_seed_sweep.py``:
test infrastructure, not part of the package (both have tests/ on their path and import it as
``support.fairness``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from metal_puzzles.checking import Puzzle, check_source


@dataclass
class SeedSweep:
    """How one kernel fared on a puzzle's tests over many seeds."""

    failed_seeds: list[int] = field(default_factory=list)
    #: The largest |yours - reference| / allowed over every element of every test: how close a
    #: correct kernel came to failing (below 1 passes).
    worst_ratio: float = 0.0
    seeds: int = 0

    @property
    def failures(self) -> int:
        return len(self.failed_seeds)


def sweep(puzzle: Puzzle, source: str, seeds: Iterable[int], header: str | None = None) -> SeedSweep:
    """Check ``source`` on ``puzzle`` with every seed; correctness only (budgets aside)."""
    out = SeedSweep()
    for seed in seeds:
        out.seeds += 1
        result = check_source(puzzle, source, header, seed=seed)
        for o in result.outcomes:
            if (o.yours is not None and o.allowed is not None and o.expected is not None
                    and o.yours.shape == o.expected.shape):
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.abs(o.yours.astype(np.float64) - o.expected) / o.allowed
                finite = ratio[np.isfinite(ratio)]
                if finite.size:
                    out.worst_ratio = max(out.worst_ratio, float(finite.max()))
        if not result.correct:
            out.failed_seeds.append(seed)
    return out
