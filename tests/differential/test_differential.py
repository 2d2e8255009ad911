"""Differential test: the MSL simulator against g++ on thousands of random kernels.

Each kernel body (see tests/differential/gen.py) is compiled as C++ with a small shim and
run for every thread id, and run through ``metal_puzzles.msl.simulate``; every output
element must agree bit for bit. ``MSL_DIFF_KERNELS`` (default 2000) sets how many kernels,
``MSL_DIFF_SEED`` (default 0) which ones. Reproduce a failure standalone with
``python -m tests.differential.runner --seed S --start INDEX --count 1``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from differential.gen import generate_kernel
from differential.runner import compare, run, run_cxx, typecheck

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ as the reference")

KERNELS = int(os.environ.get("MSL_DIFF_KERNELS", "2000"))
SEED = int(os.environ.get("MSL_DIFF_SEED", "0"))


def test_generator_is_reproducible() -> None:
    assert generate_kernel(7, 3).body == generate_kernel(7, 3).body
    assert generate_kernel(7, 3).body != generate_kernel(7, 4).body
    assert (generate_kernel(7, 3).input_data[0] == generate_kernel(7, 3).input_data[0]).all()


def test_generator_types_agree_with_gpp(tmp_path: Path) -> None:
    """The generator's C type tracking (which picks guards and shift masks) matches g++."""
    typecheck([generate_kernel(SEED, i) for i in range(300)], tmp_path)


def test_cxx_side_is_free_of_undefined_behaviour(tmp_path: Path) -> None:
    """UBSan (division, shifts, float->int casts) stays silent on a batch of kernels."""
    kernels = [generate_kernel(SEED + 1, i) for i in range(100)]
    outputs = run_cxx(kernels, tmp_path, ubsan=True)
    assert len(outputs) == len(kernels)


def test_compare_is_bitwise_but_ignores_nan_payloads(tmp_path: Path) -> None:
    kernel = generate_kernel(SEED, 0)
    want = run_cxx([kernel], tmp_path)[0]
    got = [a.copy() for a in want]
    assert compare(kernel, want, got) == ([], 0)

    # +0.0 vs -0.0 (or a one-ulp change) in thread 2, first float slot, is a mismatch.
    i = 2 * kernel.outputs[1].slots
    x = want[1][i]
    got[1][i] = -x if x == 0 else np.nextafter(x, np.float32(np.inf))
    found, _ = compare(kernel, want, got)
    assert [(m.output, m.thread, m.slot) for m in found] == [("out_f", 2, 0)]

    # Two NaNs with different payloads are not.
    got[1][i] = x
    want[1][0], got[1][0] = np.float32("nan"), -np.float32("nan")
    assert compare(kernel, want, got) == ([], 1)


def test_simulator_matches_gpp_bit_for_bit() -> None:
    summary = run(KERNELS, SEED)
    print(summary.text())
    assert summary.kernels == KERNELS
    assert not summary.mismatches, f"{summary.text()}\n\n{summary.details()}"
    assert summary.outputs_compared > 0
