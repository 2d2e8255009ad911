"""Planted barrier divergence: a threadgroup_barrier reached by some live threads of a
threadgroup and not by others, in branches and in loops with per-thread trip counts.

The finding's line is the barrier's; ``threads[0]`` is the first thread (in launch order) of
that threadgroup that is alive but never arrives. Threads that already returned are not
waited for; that case is in test_no_false_alarms.
"""

from __future__ import annotations

import numpy as np

from .conftest import ANY, expect_one_kind, f32, findings_of, kernel, line_of, t1, t2

DIVERGENCE = "barrier-divergence"


def test_barrier_inside_bounds_guard_partial_last_group() -> None:
    """The whole body, barrier included, is inside `if (gid < n)`; with n = 40 and groups of 32,
    threads 40..63 of threadgroup 1 are alive and skip the barrier: thread 40 is named."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[32];
        if (gid < n) {
            s[t] = a[gid];
            threadgroup_barrier(mem_flags::mem_threadgroup);  // @BUG
            out[gid] = s[t] + s[t / 2];
        }
    """)
    found = findings_of(src, {"a": f32(np.arange(64)), "n": np.int32(40)},
                        {"out": ((64,), "float32")}, grid=(64, 1, 1), tg=(32, 1, 1))
    expect_one_kind(found, DIVERGENCE, line_of(src, "@BUG"), t1(40, 32), ANY, ANY)


def test_different_barriers_in_if_and_else() -> None:
    """Two barriers in the two arms of an if are two different barriers: the first is reached
    only by threads 0..7, so thread 8 is the first that never arrives there."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[16];
        s[t] = a[gid];
        if (t < 8) {
            threadgroup_barrier(mem_flags::mem_threadgroup);  // @BUG
            out[gid] = s[t + 8];
        } else {
            threadgroup_barrier(mem_flags::mem_threadgroup);
            out[gid] = s[t - 8];
        }
    """)
    found = findings_of(src, {"a": f32(np.arange(32))}, grid=(32, 1, 1), tg=(16, 1, 1))
    expect_one_kind(found, DIVERGENCE, line_of(src, "@BUG"), t1(8, 16), ANY, ANY)


def test_strided_loop_with_per_thread_trip_count() -> None:
    """A block-stride loop over 40 elements with a barrier inside: threads 0..7 make a second
    trip, threads 8..31 have left the loop and are still alive: thread 8 is named."""
    src = kernel("""
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[32];
        s[t] = 0.0f;
        for (uint k = t; k < 40; k += 32) {
            s[t] += a[k];
            threadgroup_barrier(mem_flags::mem_threadgroup);  // @BUG
        }
        out[t] = s[t];
    """)
    found = findings_of(src, {"a": f32(np.arange(40))}, {"out": ((32,), "float32")},
                        grid=(32, 1, 1), tg=(32, 1, 1))
    expect_one_kind(found, DIVERGENCE, line_of(src, "@BUG"), t1(8, 32), ANY, ANY)


def test_break_before_barrier_in_loop_2d() -> None:
    """Threads stop at their first negative value with `break`; thread (5, 2), in threadgroup
    (1, 1), breaks on its second trip while the rest of its threadgroup reaches the barrier."""
    src = kernel("""
        uint2 g = thread_position_in_grid.xy;
        uint2 l = thread_position_in_threadgroup.xy;
        threadgroup float s[2][4];
        float acc = 0.0f;
        for (uint k = 0; k < 4; k++) {
            float v = a[(g.y * 8 + g.x) * 4 + k];
            if (v < 0.0f) {
                break;
            }
            acc += v;
            s[l.y][l.x] = acc;
            threadgroup_barrier(mem_flags::mem_threadgroup);  // @BUG
        }
        out[g.y * 8 + g.x] = acc;
    """)
    a = np.ones(8 * 4 * 4, dtype=np.float32)
    a[(2 * 8 + 5) * 4 + 1] = -1.0
    found = findings_of(src, {"a": a}, {"out": ((4, 8), "float32")}, grid=(8, 4, 1),
                        tg=(4, 2, 1))
    expect_one_kind(found, DIVERGENCE, line_of(src, "@BUG"), t2(5, 2, (4, 2)), ANY, ANY)


def test_barrier_in_header_helper_called_in_branch() -> None:
    """A helper that synchronises, called only by even threads: the barrier line in the header
    is reported, and thread 1 is the first that never arrives."""
    header = kernel("""
        void sync_group() {
            threadgroup_barrier(mem_flags::mem_threadgroup);  // @BUG
        }
    """)
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        if (gid % 2 == 0) {
            sync_group();
        }
        out[gid] = a[gid];
    """)
    found = findings_of(src, {"a": f32(np.arange(8))}, grid=(8, 1, 1), tg=(8, 1, 1),
                        header=header)
    expect_one_kind(found, DIVERGENCE, line_of(header, "@BUG"), t1(1, 8), ANY, ANY,
                    file="header")


def test_continue_skips_barrier_for_some_threads() -> None:
    """`continue` before the barrier for odd threads on even trips: at trip 0 thread 1 of
    threadgroup 0 is alive and skips it."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[4];
        float acc = 0.0f;
        for (uint k = 0; k < 3; k++) {
            if ((t + k) % 2 == 1) {
                continue;
            }
            s[t] = a[gid] * float(k);
            threadgroup_barrier(mem_flags::mem_threadgroup);  // @BUG
            acc += s[t];
        }
        out[gid] = acc;
    """)
    found = findings_of(src, {"a": f32(np.arange(8))}, grid=(8, 1, 1), tg=(4, 1, 1))
    expect_one_kind(found, DIVERGENCE, line_of(src, "@BUG"), t1(1, 4), ANY, ANY)


def test_divergence_only_in_the_threadgroup_that_splits() -> None:
    """A condition that splits only threadgroup 2 (of 4): thread 21 is the one named, and no
    finding names a thread of the other threadgroups."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        if (a[gid] > 0.0f) {
            threadgroup_barrier(mem_flags::mem_threadgroup);  // @BUG
        }
        out[gid] = a[gid];
    """)
    a = np.ones(32, dtype=np.float32)
    a[21] = -1.0
    found = findings_of(src, {"a": a}, grid=(32, 1, 1), tg=(8, 1, 1))
    expect_one_kind(found, DIVERGENCE, line_of(src, "@BUG"), t1(21, 8), ANY, ANY)
    assert all(d["group"] == (2, 0, 0) for f in found for d in f.threads)
