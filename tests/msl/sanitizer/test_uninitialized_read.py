"""Planted reads of uninitialised memory: threadgroup memory never written, thread-local
variables and arrays declared without an initializer and read before assignment, and outputs
read before being written when there is no ``init_value``."""

from __future__ import annotations

import numpy as np

from metal_puzzles.msl import FindingKind

from .conftest import ANY, expect_one_kind, f32, findings_of, i32, kernel, line_of, t1, t2

UNINIT = "uninitialized-read"


def test_threadgroup_reduction_starting_stride_too_large() -> None:
    """A tree reduction whose first stride is the threadgroup size instead of half of it reads
    s[t + 16] of a 32-element array only 16 threads wrote: thread 0 reads s[16] first."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[32];
        s[t] = a[gid];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint stride = 16; stride > 0; stride /= 2) {
            if (t < stride) {
                s[t] += s[t + stride];  // @BUG
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (t == 0) {
            out[gid / 16] = s[0];
        }
    """)
    found = findings_of(src, {"a": f32(np.arange(32))}, {"out": ((2,), "float32")},
                        grid=(32, 1, 1), tg=(16, 1, 1))
    expect_one_kind(found, UNINIT, line_of(src, "@BUG"), t1(0, 16), "s", 16)


def test_threadgroup_2d_tile_partially_loaded() -> None:
    """A transpose through a 4x4 tile whose load skips column 3; thread (0, 3) reads s[0][3]
    (flat index 3 of the threadgroup's tile) first."""
    src = kernel("""
        uint2 g = thread_position_in_grid.xy;
        uint2 l = thread_position_in_threadgroup.xy;
        threadgroup float tile[4][4];
        if (l.x < 3) {
            tile[l.y][l.x] = a[g.y * 8 + g.x];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[g.y * 8 + g.x] = tile[l.x][l.y];  // @BUG
    """)
    found = findings_of(src, {"a": f32(np.arange(32))}, {"out": ((4, 8), "float32")},
                        grid=(8, 4, 1), tg=(4, 4, 1))
    expect_one_kind(found, UNINIT, line_of(src, "@BUG"), t2(0, 3, (4, 4)), "tile", 3)


def test_thread_local_scalar_set_only_in_branch() -> None:
    """`best` is assigned only when the thread's value passes a test; thread 45 (threadgroup 1)
    fails it and reads the variable uninitialised."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        float best;
        if (a[gid] >= 0.0f) {
            best = a[gid];
        }
        out[gid] = best * 2.0f;  // @BUG
    """)
    a = np.arange(64, dtype=np.float32)
    a[45] = -1.0
    found = findings_of(src, {"a": a}, grid=(64, 1, 1), tg=(32, 1, 1))
    expect_one_kind(found, UNINIT, line_of(src, "@BUG"), t1(45, 32), "best", ANY)
    assert found[0].index in (None, 0)


def test_thread_local_scalar_empty_segment_skips_loop() -> None:
    """Segment max with the first element as the start value: the loop initialises `m` on its
    first iteration, so an empty segment (segment 5) reads it uninitialised after the loop."""
    src = kernel("""
        uint seg = thread_position_in_grid.x;
        uint start = offsets[seg];
        uint end = offsets[seg + 1];
        float m;
        for (uint k = start; k < end; k++) {
            if (k == start) {
                m = x[k];
            } else {
                m = max(m, x[k]);
            }
        }
        out[seg] = m;  // @BUG
    """)
    lengths = np.array([2, 1, 3, 1, 2, 0, 1, 2])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    found = findings_of(src, {"offsets": offsets, "x": f32(np.arange(12))},
                        grid=(8, 1, 1), tg=(4, 1, 1))
    expect_one_kind(found, UNINIT, line_of(src, "@BUG"), t1(5, 4), "m", ANY)


def test_thread_local_array_partially_filled_2d() -> None:
    """A 4-element register array filled for k < 3 only; r[3] is read uninitialised by every
    thread of a 2D launch, thread (0, 0) first."""
    src = kernel("""
        uint2 g = thread_position_in_grid.xy;
        float r[4];
        for (uint k = 0; k < 3; k++) {
            r[k] = a[(g.y * 4 + g.x) * 4 + k];
        }
        out[g.y * 4 + g.x] = r[0] + r[3];  // @BUG
    """)
    found = findings_of(src, {"a": f32(np.arange(64))}, {"out": ((4, 4), "float32")},
                        grid=(4, 4, 1), tg=(2, 2, 1))
    expect_one_kind(found, UNINIT, line_of(src, "@BUG"), t2(0, 0, (2, 2)), "r", 3)


def test_output_accumulated_without_first_assignment() -> None:
    """Without init_value, `out[gid] += 1` reads garbage where nothing was stored first: the
    tail threads (from thread 6, threadgroup 1) skip the initial store."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        if (gid < 6) {
            out[gid] = a[gid];
        }
        out[gid] += 1.0f;  // @BUG
    """)
    found = findings_of(src, {"a": f32(np.arange(8))}, grid=(8, 1, 1), tg=(4, 1, 1),
                        init_value=None)
    expect_one_kind(found, UNINIT, line_of(src, "@BUG"), t1(6, 4), "out", 6)


def test_output_read_in_loop_2d_without_init_value() -> None:
    """An axis sum written as `out[x] += ...` in a loop relies on zero-filled outputs; without
    init_value the first iteration reads out[x] uninitialised (thread (0, 0) first)."""
    src = kernel("""
        uint x = thread_position_in_grid.x;
        for (uint r = 0; r < 3; r++) {
            out[x] += a[r * 4 + x];  // @BUG
        }
    """)
    found = findings_of(src, {"a": f32(np.arange(12))}, {"out": ((4,), "float32")},
                        grid=(4, 1, 1), tg=(2, 1, 1), init_value=None)
    expect_one_kind(found, UNINIT, line_of(src, "@BUG"), t1(0, 2), "out", 0)


def test_threadgroup_memory_read_in_other_threadgroup_only() -> None:
    """Each threadgroup fills its own copy of `s`; a read of a slot only other threads of the
    *last* (partial) threadgroup would have filled reads that copy uninitialised: threadgroup 2
    has 2 threads, so its thread 1 reads s[2], which no thread of that threadgroup wrote."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[4];
        s[t] = a[gid];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[gid] = s[t] + s[(t + 1) % 4];  // @BUG
    """)
    idx = np.arange(10)
    found = findings_of(src, {"a": f32(idx)}, grid=(10, 1, 1), tg=(4, 1, 1))
    expect_one_kind(found, UNINIT, line_of(src, "@BUG"), t1(9, 4), "s", 2)


def test_uninitialised_read_names_int_variable_from_header_function() -> None:
    """A helper in the header whose accumulator is declared without a value: the finding points
    into the header."""
    header = kernel("""
        int count_positive(const device int* v, uint n) {
            int c;
            for (uint k = 0; k < n; k++) {
                c += v[k] > 0 ? 1 : 0;  // @BUG
            }
            return c;
        }
    """)
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        out[gid] = count_positive(v + gid * 3, 3);
    """)
    found = findings_of(src, {"v": i32(np.arange(12) - 4)}, {"out": ((4,), "int32")},
                        grid=(4, 1, 1), tg=(4, 1, 1), header=header)
    expect_one_kind(found, UNINIT, line_of(header, "@BUG"), t1(0, 4), "c", ANY, file="header")


def test_thread_local_array_read_through_pointer() -> None:
    """A register array filled only at r[0], read through a pointer at p[1]."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        float r[4];
        thread float* p = r;
        r[0] = a[gid];
        out[gid] = p[0] + p[1];  // @BUG
    """)
    found = findings_of(src, {"a": f32(np.arange(8))}, grid=(8, 1, 1), tg=(4, 1, 1))
    expect_one_kind(found, UNINIT, line_of(src, "@BUG"), t1(0, 4), "r", 1)


def test_copying_a_struct_with_an_unassigned_member_is_still_reported() -> None:
    """The twin of the padding false alarm: a member that is never assigned is read by the copy."""
    header = "struct G { float phi; float3 d; };"
    src = kernel("""
        uint i = thread_position_in_grid.x;
        G g;
        g.d = float3(2.0f);
        G h = g; // @BUG
        out[i] = h.d.x;
    """)
    found = findings_of(src, {}, {"out": ((4,), "float32")}, grid=(4, 1, 1), tg=(4, 1, 1), header=header)
    assert [f.kind for f in found] == [FindingKind.UNINITIALIZED_READ]
    assert found[0].pos.line == line_of(src, "@BUG")
    assert "g.phi" in found[0].message
