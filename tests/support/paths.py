"""The repository's folders as the tests read them, named once: a test moved to another folder of
tests/ reads the same files without counting parent directories again."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE = REPO_ROOT / "lib" / "metal_puzzles"
BENCHMARKS = REPO_ROOT / "benchmarks"
SOLUTIONS = REPO_ROOT / "solutions"
IMAGES = REPO_ROOT / "imgs"
#: Typical correct kernels per puzzle id, beside the reference solutions (see its README.md).
FAIRNESS_VARIANTS = REPO_ROOT / "tests" / "fairness_variants"
