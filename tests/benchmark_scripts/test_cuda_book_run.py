"""benchmarks/cuda_book_run.py without a GPU: how it judges the GPU's output against the simulator's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "cuda_book_run.py"


@pytest.fixture(scope="module")
def book_run():
    spec = importlib.util.spec_from_file_location("cuda_book_run", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_floats_agree_within_the_puzzles_declared_tolerance_not_a_fixed_one(book_run):
    """On the H200 (gpu2 run), rope's hidden test at positions 22-27 came back 8.2e-6 from the
    simulator (CUDA's cosf/sinf round their own way): past the old fixed 1e-5 relative comparison,
    far inside the 2.4e-4 that rope declares and check() allows a learner's kernel."""
    from metal_puzzles.puzzles import PUZZLES

    rope = next(p for p in PUZZLES if p.id == "rope")
    want = np.array([0.25, -0.5, 3.75, 1e-3], dtype=np.float32)
    off = want + np.float32(8.2e-6)  # what the GPU gave, at rope's magnitudes
    result = book_run.compare(off, want, rope.atol, rope.rtol)
    assert result["agree"] and not result["bit_exact"]
    assert not book_run.compare(want + np.float32(1e-3), want, rope.atol, rope.rtol)["agree"]
    exact = book_run.compare(want.copy(), want, rope.atol, rope.rtol)
    assert exact["agree"] and exact["bit_exact"] and exact["max_abs_diff"] == 0.0


def test_integer_outputs_still_agree_only_bit_for_bit(book_run):
    want = np.array([7, 1 << 30, -3], dtype=np.int32)
    assert book_run.compare(want.copy(), want, 1.0, 1.0)["agree"]
    assert not book_run.compare(want + np.int32(1), want, 1.0, 1.0)["agree"]
