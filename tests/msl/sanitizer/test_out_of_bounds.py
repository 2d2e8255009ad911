"""Planted out-of-bounds accesses: device and constant buffers, threadgroup arrays, thread-local
arrays and per-dimension overruns of multi-dimensional arrays, in 1D and 2D grids, in branches
and loops, over several threadgroups.

When several threads of one statement go out of bounds, ``threads[0]`` is the first of them in
launch order (threadgroup by threadgroup, and within a threadgroup by linear local index).
"""

from __future__ import annotations

import numpy as np

from .conftest import T, expect_one_kind, f32, findings_of, i32, kernel, line_of, t1, t2

OOB = "out-of-bounds"


def test_device_read_one_past_the_end_1d() -> None:
    """`a[i + 1]` with one thread per element: only the very last thread leaves the buffer."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[i] = a[i + 1] - a[i];  // @BUG
    """)
    found = findings_of(src, {"a": f32(np.arange(64))}, grid=(64, 1, 1), tg=(16, 1, 1))
    expect_one_kind(found, OOB, line_of(src, "@BUG"), t1(63, 16), "a", 64)


def test_device_read_before_the_start_signed_index() -> None:
    """A left-neighbour read with a signed index reads a[-1] in thread 0."""
    src = kernel("""
        int i = int(thread_position_in_grid.x);
        out[i] = a[i] - a[i - 1];  // @BUG
    """)
    found = findings_of(src, {"a": f32(np.arange(16))}, grid=(16, 1, 1), tg=(8, 1, 1))
    expect_one_kind(found, OOB, line_of(src, "@BUG"), t1(0, 8), "a", -1)


def test_device_read_unsigned_index_wraps_around() -> None:
    """With a uint index, `i - 1` in thread 0 is 4294967295 (C wrap-around), not -1."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[i] = a[i] - a[i - 1];  // @BUG
    """)
    found = findings_of(src, {"a": f32(np.arange(16))}, grid=(16, 1, 1), tg=(8, 1, 1))
    expect_one_kind(found, OOB, line_of(src, "@BUG"), t1(0, 8), "a", 4294967295)


def test_output_write_past_the_end_2d_without_guard() -> None:
    """A (4, 4) grid writes a (3, 4) output with no guard: row y == 3 writes out[12..15]; the
    first of those threads in launch order is (0, 3), in threadgroup (0, 1)."""
    src = kernel("""
        uint x = thread_position_in_grid.x;
        uint y = thread_position_in_grid.y;
        out[y * 4 + x] = a[x] * 2.0f;  // @BUG
    """)
    found = findings_of(src, {"a": f32(np.arange(8))}, {"out": ((3, 4), "float32")},
                        grid=(4, 4, 1), tg=(2, 2, 1))
    expect_one_kind(found, OOB, line_of(src, "@BUG"), t2(0, 3, (2, 2)), "out", 12)


def test_device_read_in_branch_in_loop_2d_only_true_overrun() -> None:
    """A 3-tap horizontal stencil that checks only the left edge. At x == 4 the right tap of
    rows 0 and 1 wraps into the next row (in bounds: a logic error, not an out-of-bounds
    access); only thread (4, 2), in threadgroup (1, 1), reads past the end of the image."""
    src = kernel("""
        uint x = thread_position_in_grid.x;
        uint y = thread_position_in_grid.y;
        float acc = 0.0f;
        for (int d = -1; d <= 1; d++) {
            int xx = int(x) + d;
            if (xx >= 0) {
                acc += img[y * 5 + xx];  // @BUG
            }
        }
        out[y * 5 + x] = acc;
    """)
    found = findings_of(src, {"img": f32(np.arange(15))}, {"out": ((3, 5), "float32")},
                        grid=(5, 3, 1), tg=(4, 2, 1))
    expect_one_kind(found, OOB, line_of(src, "@BUG"), t2(4, 2, (4, 2)), "img", 15)
    assert len({(f.threads[0]["grid"], f.index) for f in found}) == 1


def test_threadgroup_read_halo_missing_across_threadgroups() -> None:
    """A stencil through threadgroup memory that forgot the halo: the last thread of each
    threadgroup reads s[16] of a 16-element array (threadgroup-local index)."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[16];
        s[t] = a[gid];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (gid + 1 < 48) {
            out[gid] = s[t] + s[t + 1];  // @BUG
        }
    """)
    found = findings_of(src, {"a": f32(np.arange(48))}, grid=(48, 1, 1), tg=(16, 1, 1))
    first = expect_one_kind(found, OOB, line_of(src, "@BUG"), t1(15, 16), "s", 16)
    assert "s" in first.message and "16" in first.message


def test_threadgroup_write_in_strided_loop() -> None:
    """A loop `k <= 32` that should be `k < 32`: thread 0 of each threadgroup writes s[32]."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[32];
        for (uint k = t; k <= 32; k += 16) {
            s[k] = a[k];  // @BUG
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[gid] = s[t] + s[t + 16];
    """)
    found = findings_of(src, {"a": f32(np.arange(40))}, grid=(32, 1, 1), tg=(16, 1, 1))
    expect_one_kind(found, OOB, line_of(src, "@BUG"), t1(0, 16), "s", 32)


def test_thread_local_array_data_dependent_index() -> None:
    """A per-thread histogram indexed by data: thread 9 meets bin value 4 in a 4-bin array."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        float hist[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (uint k = 0; k < 4; k++) {
            int b = bins[gid * 4 + k];
            hist[b] += 1.0f;  // @BUG
        }
        out[gid] = hist[0] + 2.0f * hist[3];
    """)
    bins = np.zeros(64, dtype=np.int32)
    bins[9 * 4 + 2] = 4
    found = findings_of(src, {"bins": i32(bins)}, grid=(16, 1, 1), tg=(8, 1, 1))
    expect_one_kind(found, OOB, line_of(src, "@BUG"), t1(9, 8), "hist", 4)


def test_threadgroup_2d_per_dimension_overrun() -> None:
    """s[ly][lx + 1] on `float s[4][8]` at lx == 7 is s[ly][8]: inside the 32 elements as a flat
    block, but past the end of its row. Row 0 makes the flat and per-row index agree (8)."""
    src = kernel("""
        uint2 g = thread_position_in_grid.xy;
        uint2 l = thread_position_in_threadgroup.xy;
        threadgroup float s[4][8];
        s[l.y][l.x] = a[g.y * 16 + g.x];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[g.y * 16 + g.x] = s[l.y][l.x + 1];  // @BUG
    """)
    found = findings_of(src, {"a": f32(np.arange(128))}, {"out": ((8, 16), "float32")},
                        grid=(16, 8, 1), tg=(8, 4, 1))
    expect_one_kind(found, OOB, line_of(src, "@BUG"), t2(7, 0, (8, 4)), "s", 8)


def test_thread_local_2d_per_dimension_overrun_flat_index() -> None:
    """m[1][c] for c = 0..3 on `float m[3][3]`: m[1][3] is past the end of row 1 although
    flat element 6 exists; the finding gives the flat index within the thread's copy (6)."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        float m[3][3];
        for (int r = 0; r < 3; r++) {
            for (int c = 0; c < 3; c++) {
                m[r][c] = a[gid] + float(r * 3 + c);
            }
        }
        float acc = 0.0f;
        for (int c = 0; c <= 3; c++) {
            acc += m[1][c];  // @BUG
        }
        out[gid] = acc;
    """)
    found = findings_of(src, {"a": f32(np.arange(8))}, grid=(4, 1, 1), tg=(2, 1, 1))
    expect_one_kind(found, OOB, line_of(src, "@BUG"), t1(0, 2), "m", 6)


def test_constant_buffer_small_input() -> None:
    """An input of fewer than 8 elements lives in the constant address space; reading w[4] of a
    4-element filter is out of bounds there too (first offender: thread 4, threadgroup 1)."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[i] = x[i] * w[i];  // @BUG
    """)
    found = findings_of(src, {"x": f32(np.arange(6)), "w": f32([1, 2, 3, 4])},
                        grid=(6, 1, 1), tg=(3, 1, 1))
    expect_one_kind(found, OOB, line_of(src, "@BUG"), t1(4, 3), "w", 4)


def test_out_of_bounds_inside_header_helper_points_into_header() -> None:
    """An out-of-bounds read inside a header function is reported at the header's line."""
    header = kernel("""
        float fetch(const device float* p, uint i) {
            return p[i];  // @BUG
        }
    """)
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[i] = fetch(a, i + 2);
    """)
    found = findings_of(src, {"a": f32(np.arange(12))}, grid=(12, 1, 1), tg=(4, 1, 1),
                        header=header)
    expect_one_kind(found, OOB, line_of(header, "@BUG"), t1(10, 4), "a", 12, file="header")


def test_pointer_walk_past_the_end() -> None:
    """A pointer walking a row one element too far: the last row's thread dereferences a[20]."""
    src = kernel("""
        uint row = thread_position_in_grid.x;
        const device float* p = a + row * 5;
        float acc = 0.0f;
        for (int k = 0; k <= 5; k++) {
            acc += *p++;  // @BUG
        }
        out[row] = acc;
    """)
    found = findings_of(src, {"a": f32(np.arange(20))}, grid=(4, 1, 1), tg=(2, 1, 1))
    expect_one_kind(found, OOB, line_of(src, "@BUG"), t1(3, 2), "a", 20)


def test_every_offending_thread_is_an_actual_offender() -> None:
    """All threads named by the findings really went out of bounds, and their index matches
    their position (here x + 8 for a read of a[x + 8] from a 12-element buffer)."""
    src = kernel("""
        uint x = thread_position_in_grid.x;
        out[x] = a[x + 8];  // @BUG
    """)
    found = findings_of(src, {"a": f32(np.arange(12))}, grid=(8, 1, 1), tg=(4, 1, 1))
    expect_one_kind(found, OOB, line_of(src, "@BUG"), t1(4, 4), "a", 12)
    for f in found:
        named = [T.of(d).grid[0] for d in f.threads]
        assert all(x >= 4 for x in named), named
        assert f.index == f.threads[0]["grid"][0] + 8


def test_shape_array_read_past_ndim() -> None:
    """`a_shape` has one entry per dimension: a 2D input's a_shape[2] is out of bounds."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        int depth = a_shape[2];  // @BUG
        out[i] = a[i] * float(depth);
    """)
    found = findings_of(src, {"a": f32(np.arange(8).reshape(2, 4))}, grid=(8, 1, 1),
                        tg=(8, 1, 1))
    expect_one_kind(found, OOB, line_of(src, "@BUG"), t1(0, 8), "a_shape", 2)


def test_threadgroup_write_through_offset_pointer() -> None:
    """`threadgroup float* p = s + t; p[1] = ...`: thread 3 of each threadgroup writes s[4]."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[4];
        threadgroup float* p = s + t;
        p[1] = a[gid];  // @BUG
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[gid] = t > 0 ? s[t] : 0.0f;
    """)
    found = findings_of(src, {"a": f32(np.arange(8))}, grid=(8, 1, 1), tg=(4, 1, 1))
    expect_one_kind(found, OOB, line_of(src, "@BUG"), t1(3, 4), "s", 4)
