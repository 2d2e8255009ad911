"""SIMD-group matrix operations are collective: all 32 threads of a SIMD-group must run them.

Planted bugs: a load inside a branch taken by half of a SIMD-group, and a multiply in a
threadgroup whose size leaves a SIMD-group short. Correct twins: the same operations run by
whole SIMD-groups (a branch on the SIMD-group index keeps SIMD-groups whole).
"""

from __future__ import annotations

import numpy as np

from .conftest import clean, expect_one_kind, f32, findings_of, kernel, line_of, t1

DIVERGENCE = "simdgroup-divergence"
TILE = {"out": ((64,), "float32")}


def test_load_in_a_branch_that_splits_the_simdgroup() -> None:
    src = kernel("""
        uint lane = thread_index_in_simdgroup;
        simdgroup_float8x8 m = simdgroup_float8x8(0.0f);
        if (lane < 16) {
            simdgroup_load(m, a, 8);  // @BUG
        }
        simdgroup_store(m, out, 8);
    """)
    found = findings_of(src, {"a": f32(np.arange(64))}, TILE, grid=(32, 1, 1), tg=(32, 1, 1))
    f = expect_one_kind(found, DIVERGENCE, line_of(src, "@BUG"), t1(0, 32), None, None)
    assert "thread 16 " in f.message and "simdgroup_load" in f.message


def test_multiply_in_a_short_simdgroup() -> None:
    src = kernel("""
        simdgroup_float8x8 m = simdgroup_float8x8(1.0f);
        simdgroup_float8x8 p;
        simdgroup_multiply(p, m, m);  // @BUG
        if (simdgroup_index_in_threadgroup == 0) {
            simdgroup_store(p, out, 8);
        }
    """)
    found = findings_of(src, {}, TILE, grid=(48, 1, 1), tg=(48, 1, 1))
    f = expect_one_kind(found, DIVERGENCE, line_of(src, "@BUG"), t1(32, 48), None, None)
    assert "only 16" in f.message


def test_branch_on_the_simdgroup_index_keeps_simdgroups_whole() -> None:
    res = clean(kernel("""
        simdgroup_float8x8 m;
        if (simdgroup_index_in_threadgroup == 1) {
            simdgroup_load(m, a, 8);
            simdgroup_store(m, out, 8);
        }
    """), {"a": f32(np.arange(64))}, TILE, grid=(64, 1, 1), tg=(64, 1, 1))
    assert res.outputs[0].tolist() == list(range(64))
