"""Second red team (issue 20): a correct kernel with thousands of threadgroup updates in one
phase must not cost the sanitizer quadratic time. Each update reads then writes; the
write-after-read check needs the phase's readers, and the table of them is now extended with
each new read instead of rebuilt from every read of the phase on every write. The work is
counted (reads folded into tables), not timed: benchmarks/bench_sanitizer_updates.py times it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from metal_puzzles.msl.observe import sanitizer as sanitizer_module

from .conftest import check_race, clean, expect_one_kind, f32, findings_of, kernel, line_of, t1

UPDATES = 2500


@pytest.fixture()
def sanitizers(monkeypatch) -> list:
    """Every Sanitizer made while the test runs (one per launch)."""
    made = []
    real = sanitizer_module.Sanitizer.__init__

    def spy(self) -> None:
        real(self)
        made.append(self)

    monkeypatch.setattr(sanitizer_module.Sanitizer, "__init__", spy)
    return made


def test_race_free_updates_fold_each_read_once(sanitizers) -> None:
    # Each thread cycles through four slots of its own: every read differs from the one before.
    src = kernel(f"""
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[128];
        for (int j = 0; j < 4; j++) {{ s[t * 4 + j] = 0.0f; }}
        for (int k = 0; k < {UPDATES}; k++) {{
            s[t * 4 + k % 4] += a[t];
        }}
        out[t] = s[t * 4] + s[t * 4 + 1] + s[t * 4 + 2] + s[t * 4 + 3];
    """)
    res = clean(src, {"a": f32(np.ones(32))}, grid=(32, 1, 1), tg=(32, 1, 1), init_value=None,
                max_steps=10 * UPDATES)
    np.testing.assert_array_equal(res.outputs[0], np.full(32, UPDATES, dtype=np.float32))
    assert len(sanitizers) == 1
    # One fold per read: rebuilding the table on each write folded about UPDATES**2 / 2.
    assert sanitizers[0].reads_folded == UPDATES


def test_a_read_repeated_in_a_loop_is_folded_once(sanitizers) -> None:
    """Issue 27: the same read over and over (a loop reading one place) was queued again at every
    iteration, holding memory for each; folding it twice changes nothing, so it is kept once."""
    src = kernel(f"""
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[32];
        s[t] = 0.0f;
        for (int k = 0; k < {UPDATES}; k++) {{
            s[t] += a[t];
        }}
        out[t] = s[t];
    """)
    res = clean(src, {"a": f32(np.ones(32))}, grid=(32, 1, 1), tg=(32, 1, 1), init_value=None,
                max_steps=10 * UPDATES)
    np.testing.assert_array_equal(res.outputs[0], np.full(32, UPDATES, dtype=np.float32))
    assert [s.reads_folded for s in sanitizers] == [1]


@pytest.fixture()
def shadows(monkeypatch) -> list:
    """Every threadgroup shadow made while the test runs, its read queue folded past 64 granules."""
    monkeypatch.setattr(sanitizer_module, "QUEUE_MIN_GRANULES", 64)
    monkeypatch.setattr(sanitizer_module, "QUEUE_GRANULES_PER_GRANULE", 1)
    made = []
    real = sanitizer_module.Shadow.__init__

    def spy(self, *args, **kw) -> None:
        real(self, *args, **kw)
        made.append(self)

    monkeypatch.setattr(sanitizer_module.Shadow, "__init__", spy)
    return made


def test_a_phase_of_many_reads_keeps_a_bounded_queue(sanitizers, shadows) -> None:
    """Issue 27: the reads of one phase were all kept until its end (1.5 GB for 4,000 copies of a
    64-float struct by 64 threads); past the limit the queue is folded into the reader table."""
    src = kernel("""
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[8];
        s[t] = a[t];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float acc = 0.0f;
        for (int k = 0; k < 200; k++) {
            acc += s[(t + k) % 8];
        }
        out[t] = acc;
    """)
    res = clean(src, {"a": f32(np.ones(8))}, grid=(8, 1, 1), tg=(8, 1, 1), init_value=None)
    np.testing.assert_array_equal(res.outputs[0], np.full(8, 200, dtype=np.float32))
    tg = [sh for sh in shadows if not sh.device and sh.track_races]
    assert len(tg) == 1
    assert tg[0].queued <= 64 and len(tg[0].pending) <= 64 // 8 + 1
    assert sanitizers[0].reads_folded >= 200 - 64 // 8  # folded, not kept


def test_a_race_after_the_queue_was_folded_is_still_found(sanitizers, shadows) -> None:
    """Reads folded into the table and dropped from the queue still race with a later write."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float r[16];
        r[t * 2] = a[gid];
        r[t * 2 + 1] = a[gid];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float acc = 0.0f;
        for (int k = 0; k < 100; k++) {
            acc += r[t * 2 + k % 2];  // @R
        }
        r[(t * 2 + 2) % 16] = acc;  // @W
        out[gid] = acc;
    """)
    found = findings_of(src, {"a": f32(np.arange(8))}, grid=(8, 1, 1), tg=(8, 1, 1))
    f = expect_one_kind(found, "race", line_of(src, "@W"), t1(0, 8), "r", 2)
    check_race(f, "write-after-read", line_of(src, "@R"), t1(1, 8))
    assert sanitizers[0].reads_folded >= 100 - 64 // 8


def test_a_race_after_many_folded_reads_is_still_found(sanitizers) -> None:
    """The readers of ``r`` are folded in over many writes to ``s``; the write to a neighbour's
    ``r`` slot at the end, in the same phase, is still a write-after-read."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float r[8];
        threadgroup float s[8];
        r[t] = a[gid];
        s[t] = 0.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (int k = 0; k < 50; k++) {
            s[t] += r[t];  // @R
        }
        r[(t + 1) % 8] = 1.0f;  // @W
        out[gid] = s[t];
    """)
    found = findings_of(src, {"a": f32(np.arange(8))}, grid=(8, 1, 1), tg=(8, 1, 1))
    f = expect_one_kind(found, "race", line_of(src, "@W"), t1(0, 8), "r", 1)
    check_race(f, "write-after-read", line_of(src, "@R"), t1(1, 8))
    assert sanitizers[0].reads_folded <= 2 * 50 * 8  # each read of r and s at most once


def test_the_benchmark_runs_small() -> None:
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_sanitizer_updates.py"
    spec = importlib.util.spec_from_file_location("bench_sanitizer_updates", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    seen: list = []
    np.testing.assert_array_equal(bench.run(20, seen), np.full(bench.THREADS, 20, dtype=np.float32))
    assert [s.reads_folded for s in seen] == [1]  # the same read in every update, folded once


def test_a_race_after_a_device_read_repeated_in_a_loop_is_still_found() -> None:
    """A device read repeated in a loop is recorded once (issue 27); the write to a neighbour's
    element after it, unordered, is still a write-after-read naming the reader."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        out[gid] = a[gid];
        threadgroup_barrier(mem_flags::mem_device);
        float acc = 0.0f;
        for (int k = 0; k < 50; k++) {
            acc += out[gid];  // @R
        }
        out[(gid + 1) % 8] = acc;  // @W
    """)
    found = findings_of(src, {"a": f32(np.arange(8))}, grid=(8, 1, 1), tg=(8, 1, 1))
    f = expect_one_kind(found, "race", line_of(src, "@W"), t1(0, 8), "out", 1)
    check_race(f, "write-after-read", line_of(src, "@R"), t1(1, 8))
