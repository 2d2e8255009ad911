"""The multi-thread differential generator (tests/differential/multithread.py): its kernels are
reproducible, cover what the oracle must exercise, and run clean under the sanitizer, so that
the simulator's output is what a GPU must give (benchmarks/cuda_oracle.py compares on one).

``MSL_MT_KERNELS`` (default 24) sets how many kernels the sanitizer test runs, ``MSL_MT_SEED``
(default 0) the first seed. Reproduce one kernel with ``generate(seed).listing()``.
"""

from __future__ import annotations

import dataclasses
import os
import re

import numpy as np

from differential.multithread import Feature, feature_counts, generate, simulate_kernel
from metal_puzzles.msl import SanitizerError

KERNELS = int(os.environ.get("MSL_MT_KERNELS", "24"))
SEED = int(os.environ.get("MSL_MT_SEED", "0"))


def test_generate_is_reproducible() -> None:
    a, b, other = generate(11), generate(11), generate(12)
    assert (a.source, a.header, a.grid, a.threadgroup, a.template) == (b.source, b.header, b.grid, b.threadgroup,
                                                                         b.template)
    assert all(np.array_equal(x, y) for x, y in zip(a.inputs, b.inputs, strict=True))
    assert a.source != other.source


def test_every_feature_is_exercised_by_a_few_hundred_seeds() -> None:
    counts = feature_counts([generate(SEED + s) for s in range(200)])
    missing = [f.value for f, n in counts.items() if n < 10]
    assert not missing, counts
    # The geometry the oracle is about: threads past the grid's edge and partial SIMD-groups.
    assert counts[Feature.PARTIAL_THREADGROUP] > 60 and counts[Feature.PARTIAL_SIMDGROUP] > 60


def test_generated_kernels_run_clean_under_the_sanitizer() -> None:
    """No race, out-of-bounds access, uninitialised read, unwritten output or note, on any kernel."""
    for seed in range(SEED, SEED + KERNELS):
        k = generate(seed)
        run = simulate_kernel(k)  # sanitize='error': an error finding raises SanitizerError
        assert run.stopped is None, k.listing()
        assert not run.findings, f"{k.listing()}\n{[str(f) for f in run.findings]}"
        assert [o.shape for o in run.outputs] == k.output_shapes
        assert [str(o.dtype) for o in run.outputs] == k.output_dtypes


def test_the_barriers_are_what_keeps_them_race_free() -> None:
    """Without their barriers most kernels race, and the sanitizer says so: the run above is a
    real check. (A kernel whose threads happen to read only slots they wrote themselves stays
    clean without them.)"""
    races = 0
    for seed in range(SEED, SEED + 8):
        k = generate(seed)
        source = re.sub(r"(threadgroup|simdgroup)_barrier\([^)]*\);", "", k.source)
        assert source != k.source
        try:
            simulate_kernel(dataclasses.replace(k, source=source))
        except SanitizerError as exc:
            assert "race" in str(exc)
            races += 1
    assert races >= 6
