"""Correct kernels with tricky control flow must produce no finding at all (no false alarms),
and the right answer. Each runs in the default 'error' mode without ``init_value`` wherever the
kernel writes every output element, so unwritten-output and uninitialised-read checks are live.
"""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import clean, f32, i32, kernel


def test_bounds_guard_with_partial_threadgroup() -> None:
    src = kernel("""
        uint i = thread_position_in_grid.x;
        if (i < n) {
            out[i] = a[i] + 1.0f;
        }
    """)
    a = f32(np.arange(10))
    res = clean(src, {"a": a, "n": np.int32(10)}, {"out": ((10,), "float32")},
                grid=(16, 1, 1), tg=(8, 1, 1), init_value=None)
    np.testing.assert_array_equal(res.outputs[0], a + 1)


def test_short_circuit_and_ternary_guard_reads() -> None:
    """`i > 0 ? a[i - 1] : 0` and `i + 1 < n && a[i + 1] > 0` must not evaluate the guarded read."""
    src = kernel("""
        int i = int(thread_position_in_grid.x);
        float left = i > 0 ? a[i - 1] : 0.0f;
        bool up = i + 1 < n && a[i + 1] > a[i];
        out[i] = left + (up ? 100.0f : 0.0f);
    """)
    a = f32([3, 1, 4, 1, 5, 9, 2, 6])
    res = clean(src, {"a": a, "n": np.int32(8)}, {"out": ((8,), "float32")},
                grid=(8, 1, 1), tg=(4, 1, 1), init_value=None)
    left = np.concatenate([[0], a[:-1]])
    up = np.concatenate([a[1:] > a[:-1], [False]])
    np.testing.assert_array_equal(res.outputs[0], left + 100 * up)


def test_early_return_before_barrier_is_not_divergence() -> None:
    """Threads past n return before the barrier; the rest of the last threadgroup synchronises
    without them and only reads slots that threads still alive wrote."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[8];
        if (gid >= uint(n)) {
            return;
        }
        s[t] = a[gid];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[gid] = s[t] + (t > 0 ? s[t - 1] : 0.0f);
    """)
    a = f32(np.arange(16) + 1)
    res = clean(src, {"a": a, "n": np.int32(11)}, {"out": ((11,), "float32")},
                grid=(16, 1, 1), tg=(8, 1, 1), init_value=None)
    expect = a[:11].copy()
    for i in range(11):
        if i % 8:
            expect[i] += a[i - 1]
    np.testing.assert_array_equal(res.outputs[0], expect)


def test_early_return_then_loop_with_barriers() -> None:
    """Half the threads return; the others loop three times over two barriers each."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[4];
        if (t >= 4) {
            return;
        }
        float acc = a[gid];
        for (int k = 0; k < 3; k++) {
            s[t] = acc;
            threadgroup_barrier(mem_flags::mem_threadgroup);
            acc = s[(t + 1) % 4];
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        out[gid / 8 * 4 + t] = acc;
    """)
    a = f32(np.arange(16))
    res = clean(src, {"a": a}, {"out": ((8,), "float32")}, grid=(16, 1, 1), tg=(8, 1, 1),
                init_value=None)
    groups = a.reshape(2, 8)[:, :4]
    np.testing.assert_array_equal(res.outputs[0], np.roll(groups, -3, axis=1).reshape(-1))


def test_uniform_barriers_in_chunk_loop() -> None:
    """Each threadgroup sums a 64-element input in chunks of 16 through threadgroup memory, with
    a barrier after the load and after the use of every chunk."""
    src = kernel("""
        uint t = thread_position_in_threadgroup.x;
        uint g = threadgroup_position_in_grid.x;
        threadgroup float s[16];
        float acc = 0.0f;
        for (uint base = 0; base < 64; base += 16) {
            s[t] = a[base + t];
            threadgroup_barrier(mem_flags::mem_threadgroup);
            if (t == 0) {
                for (uint k = 0; k < 16; k++) {
                    acc += s[k];
                }
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (t == 0) {
            out[g] = acc + float(g);
        }
    """)
    a = f32(np.arange(64))
    res = clean(src, {"a": a}, {"out": ((2,), "float32")}, grid=(32, 1, 1), tg=(16, 1, 1),
                init_value=None)
    np.testing.assert_array_equal(res.outputs[0], f32([a.sum(), a.sum() + 1]))


def test_tree_reduction_partial_last_threadgroup() -> None:
    """A reduction over threadgroups of 8 with a last threadgroup of 4: the guard keeps the
    reads inside the slots this threadgroup's threads wrote."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        uint g = threadgroup_position_in_grid.x;
        threadgroup float s[8];
        uint count = min(8u, 20u - g * 8u);
        s[t] = a[gid];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint stride = 4; stride > 0; stride /= 2) {
            if (t < stride && t + stride < count) {
                s[t] += s[t + stride];
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (t == 0) {
            out[g] = s[0];
        }
    """)
    a = f32(np.arange(20))
    res = clean(src, {"a": a}, {"out": ((3,), "float32")}, grid=(20, 1, 1), tg=(8, 1, 1),
                init_value=None)
    np.testing.assert_array_equal(res.outputs[0], f32([a[:8].sum(), a[8:16].sum(), a[16:].sum()]))


def test_hillis_steele_scan_double_buffered() -> None:
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[2][8];
        uint pin = 0;
        s[0][t] = a[gid];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint off = 1; off < 8; off *= 2) {
            uint pout = 1 - pin;
            s[pout][t] = t >= off ? s[pin][t] + s[pin][t - off] : s[pin][t];
            threadgroup_barrier(mem_flags::mem_threadgroup);
            pin = pout;
        }
        out[gid] = s[pin][t];
    """)
    a = f32(np.arange(16) % 5)
    res = clean(src, {"a": a}, {"out": ((16,), "float32")}, grid=(16, 1, 1), tg=(8, 1, 1),
                init_value=None)
    np.testing.assert_array_equal(res.outputs[0], np.cumsum(a.reshape(2, 8), axis=1).reshape(-1))


def test_hillis_steele_scan_read_barrier_write_barrier() -> None:
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[8];
        s[t] = a[gid];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint off = 1; off < 8; off *= 2) {
            float v = s[t];
            if (t >= off) {
                v += s[t - off];
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
            s[t] = v;
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        out[gid] = s[t];
    """)
    a = f32(np.arange(24) % 7)
    res = clean(src, {"a": a}, {"out": ((24,), "float32")}, grid=(24, 1, 1), tg=(8, 1, 1),
                init_value=None)
    np.testing.assert_array_equal(res.outputs[0], np.cumsum(a.reshape(3, 8), axis=1).reshape(-1))


def test_atomic_histogram_from_many_threads() -> None:
    """Atomics never race with atomics: 64 threads increment 4 bins."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        atomic_fetch_add_explicit(&out[bins[i]], 1, memory_order_relaxed);
    """)
    bins = i32(np.arange(64) * 7 % 4)
    res = clean(src, {"bins": bins}, {"out": ((4,), "int32")}, grid=(64, 1, 1), tg=(16, 1, 1),
                atomic=True, init_value=0)
    np.testing.assert_array_equal(res.outputs[0], np.bincount(bins, minlength=4))


def test_atomic_float_sum_through_cast_pointer() -> None:
    """Plain float output, updated through `(device atomic_float*)` casts by every thread."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        device atomic_float* o = (device atomic_float*)&out[i % 2];
        atomic_fetch_add_explicit(o, a[i], memory_order_relaxed);
    """)
    a = f32(np.arange(32))
    res = clean(src, {"a": a}, {"out": ((2,), "float32")}, grid=(32, 1, 1), tg=(8, 1, 1),
                init_value=0)
    np.testing.assert_array_equal(res.outputs[0], f32([a[0::2].sum(), a[1::2].sum()]))


def test_threadgroup_atomic_counter() -> None:
    """A threadgroup atomic counter reset by one thread, bumped by many, read by one."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup atomic_int count;
        if (t == 0) {
            atomic_store_explicit(&count, 0, memory_order_relaxed);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (a[gid] > 0.0f) {
            atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (t == 0) {
            out[threadgroup_position_in_grid.x] = atomic_load_explicit(&count, memory_order_relaxed);
        }
    """)
    a = f32(np.arange(16) % 3 - 1)
    res = clean(src, {"a": a}, {"out": ((2,), "int32")}, grid=(16, 1, 1), tg=(8, 1, 1),
                init_value=None)
    np.testing.assert_array_equal(res.outputs[0], (a.reshape(2, 8) > 0).sum(axis=1))


def test_tiled_matmul_with_partial_tiles() -> None:
    """(5 x 7) @ (7 x 6) with 4 x 4 tiles: partial tiles on every edge, zero-padded loads,
    guarded stores, two uniform barriers per tile."""
    src = kernel("""
        uint2 g = thread_position_in_grid.xy;
        uint2 l = thread_position_in_threadgroup.xy;
        threadgroup float As[4][4];
        threadgroup float Bs[4][4];
        float acc = 0.0f;
        for (uint t0 = 0; t0 < K; t0 += 4) {
            As[l.y][l.x] = (g.y < M && t0 + l.x < K) ? A[g.y * K + t0 + l.x] : 0.0f;
            Bs[l.y][l.x] = (t0 + l.y < K && g.x < N) ? B[(t0 + l.y) * N + g.x] : 0.0f;
            threadgroup_barrier(mem_flags::mem_threadgroup);
            for (uint k = 0; k < 4; k++) {
                acc += As[l.y][k] * Bs[k][l.x];
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (g.y < M && g.x < N) {
            out[g.y * N + g.x] = acc;
        }
    """)
    rng = np.random.default_rng(1)
    A = f32(rng.integers(-3, 4, (5, 7)))
    B = f32(rng.integers(-3, 4, (7, 6)))
    res = clean(src, {"A": A, "B": B}, {"out": ((5, 6), "float32")}, grid=(8, 8, 1),
                tg=(4, 4, 1), init_value=None, template=[("M", 5), ("K", 7), ("N", 6)])
    np.testing.assert_array_equal(res.outputs[0], A @ B)


def test_pointer_walking_rows() -> None:
    """Reading rows through a walking pointer that ends one past the end of the buffer (legal,
    never dereferenced) and writing through an output pointer."""
    src = kernel("""
        uint row = thread_position_in_grid.x;
        const device float* p = a + row * 5;
        const device float* end = p + 5;
        float acc = 0.0f;
        while (p != end) {
            acc += *p++;
        }
        device float* o = out + row;
        *o = acc;
    """)
    a = f32(np.arange(20))
    res = clean(src, {"a": a}, {"out": ((4,), "float32")}, grid=(4, 1, 1), tg=(2, 1, 1),
                init_value=None)
    np.testing.assert_array_equal(res.outputs[0], a.reshape(4, 5).sum(axis=1))


def test_float_division_by_zero_is_ieee_not_a_finding() -> None:
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[i] = a[i] / b[i];
    """)
    res = clean(src, {"a": f32([1, -1, 0, 4]), "b": f32([0, 0, 0, 2])},
                {"out": ((4,), "float32")}, grid=(4, 1, 1), tg=(4, 1, 1), init_value=None)
    out = res.outputs[0]
    assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2]) and out[3] == 2


def test_guarded_integer_division() -> None:
    src = kernel("""
        uint i = thread_position_in_grid.x;
        int q = b[i] != 0 ? a[i] / b[i] : -1;
        int r = 0;
        if (b[i] != 0) {
            r = a[i] % b[i];
        }
        out[i] = q * 100 + r;
    """)
    a, b = i32([7, 8, 9, 10]), i32([2, 0, -4, 3])
    res = clean(src, {"a": a, "b": b}, {"out": ((4,), "int32")}, grid=(4, 1, 1), tg=(2, 1, 1),
                init_value=None)
    assert res.outputs[0].tolist() == [301, -100, -199, 301]


def test_locals_assigned_on_every_path_before_use() -> None:
    """Declared without initializers: assigned in both arms of an if, in a loop that always
    runs, and by the first iteration of a loop before later iterations read it."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        float v;
        if (i % 2 == 0) {
            v = 1.0f;
        } else {
            v = 2.0f;
        }
        float r[4];
        for (uint k = 0; k < 4; k++) {
            r[k] = a[i * 4 + k];
        }
        float m;
        for (uint k = 0; k < 4; k++) {
            if (k == 0) {
                m = r[k];
            } else {
                m = max(m, r[k]);
            }
        }
        float part[3] = {1.0f};
        out[i] = v * 100.0f + m + part[2];
    """)
    a = f32(np.arange(16)[::-1])
    res = clean(src, {"a": a}, {"out": ((4,), "float32")}, grid=(4, 1, 1), tg=(4, 1, 1),
                init_value=None)
    np.testing.assert_array_equal(res.outputs[0], f32([115, 211, 107, 203]))


def test_segment_max_nonempty_segments() -> None:
    """The first-iteration initialisation pattern over data-dependent loop bounds."""
    src = kernel("""
        uint seg = thread_position_in_grid.x;
        uint start = offsets[seg];
        uint end = offsets[seg + 1];
        float m;
        for (uint k = start; k < end; k++) {
            m = (k == start) ? x[k] : max(m, x[k]);
        }
        out[seg] = m;
    """)
    lengths = np.array([2, 1, 3, 1, 2, 4, 1, 2])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    x = f32(np.random.default_rng(2).integers(-9, 9, 16))
    res = clean(src, {"offsets": offsets, "x": x}, {"out": ((8,), "float32")}, grid=(8, 1, 1),
                tg=(4, 1, 1), init_value=None)
    expect = [x[offsets[k]:offsets[k + 1]].max() for k in range(8)]
    np.testing.assert_array_equal(res.outputs[0], f32(expect))


def test_same_thread_reads_back_its_output() -> None:
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[i] = a[i];
        out[i] = out[i] * 2.0f;
        out[i] += 1.0f;
    """)
    a = f32(np.arange(8))
    res = clean(src, {"a": a}, {"out": ((8,), "float32")}, grid=(8, 1, 1), tg=(4, 1, 1),
                init_value=None)
    np.testing.assert_array_equal(res.outputs[0], a * 2 + 1)


def test_device_read_of_neighbour_after_device_barrier_same_threadgroup() -> None:
    """Reading another thread's output of the same threadgroup after a device barrier is ordered."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        out[gid] = a[gid] * 2.0f;
        threadgroup_barrier(mem_flags::mem_device);
        out2[gid] = out[gid - t + (t + 1) % 4];
    """)
    a = f32(np.arange(8))
    res = clean(src, {"a": a}, {"out": ((8,), "float32"), "out2": ((8,), "float32")},
                grid=(8, 1, 1), tg=(4, 1, 1), init_value=None)
    np.testing.assert_array_equal(res.outputs[1], np.roll((a * 2).reshape(2, 4), -1, axis=1).reshape(-1))


def test_barrier_in_branch_uniform_per_threadgroup() -> None:
    """Even threadgroups synchronise, odd ones do not: the condition is uniform within each
    threadgroup, so no threadgroup splits."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[4];
        if (threadgroup_position_in_grid.x % 2 == 0) {
            s[t] = a[gid];
            threadgroup_barrier(mem_flags::mem_threadgroup);
            out[gid] = s[(t + 1) % 4];
        } else {
            out[gid] = a[gid];
        }
    """)
    a = f32(np.arange(16))
    res = clean(src, {"a": a}, {"out": ((16,), "float32")}, grid=(16, 1, 1), tg=(4, 1, 1),
                init_value=None)
    expect = a.reshape(4, 4).copy()
    expect[0::2] = np.roll(expect[0::2], -1, axis=1)
    np.testing.assert_array_equal(res.outputs[0], expect.reshape(-1))


def test_barrier_in_header_helper_called_by_all() -> None:
    header = kernel("""
        void sync_group() {
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
    """)
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[8];
        s[t] = a[gid];
        sync_group();
        out[gid] = s[7 - t];
    """)
    a = f32(np.arange(16))
    res = clean(src, {"a": a}, {"out": ((16,), "float32")}, grid=(16, 1, 1), tg=(8, 1, 1),
                init_value=None, header=header)
    np.testing.assert_array_equal(res.outputs[0], a.reshape(2, 8)[:, ::-1].reshape(-1))


def test_continue_after_barrier_and_uniform_break() -> None:
    """`continue` only after the last barrier of the trip, and a `break` whose condition is the
    same for every thread: all threads meet the same barriers on every trip."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[4];
        float acc = 0.0f;
        uint k = 0;
        while (true) {
            s[t] = float(k) + a[gid];
            threadgroup_barrier(mem_flags::mem_threadgroup);
            if (k == 3) {
                break;
            }
            k++;
            float v = s[(t + 1) % 4];
            threadgroup_barrier(mem_flags::mem_threadgroup);
            if ((t + k) % 2 == 1) {
                continue;
            }
            acc += v;
        }
        out[gid] = acc;
    """)
    a = f32(np.arange(8))
    res = clean(src, {"a": a}, {"out": ((8,), "float32")}, grid=(8, 1, 1), tg=(4, 1, 1),
                init_value=None)
    expect = []
    for gid in range(8):
        t, acc = gid % 4, 0.0
        right = a[gid - t + (t + 1) % 4]
        for k in range(1, 4):
            if (t + k) % 2 == 0:
                acc += (k - 1) + right
        expect.append(acc)
    np.testing.assert_array_equal(res.outputs[0], f32(expect))


def test_simd_sum_then_threadgroup_combine() -> None:
    """simd_sum per SIMD group, one lane per SIMD group stores, a barrier, one thread combines."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint lane = thread_index_in_simdgroup;
        uint sg = simdgroup_index_in_threadgroup;
        threadgroup float partial[2];
        float v = simd_sum(a[gid]);
        if (lane == 0) {
            partial[sg] = v;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (thread_position_in_threadgroup.x == 0) {
            out[threadgroup_position_in_grid.x] = partial[0] + partial[1];
        }
    """)
    a = f32(np.arange(128) % 10)
    res = clean(src, {"a": a}, {"out": ((2,), "float32")}, grid=(128, 1, 1), tg=(64, 1, 1),
                init_value=None)
    np.testing.assert_array_equal(res.outputs[0], a.reshape(2, 64).sum(axis=1))


def test_transpose_through_shared_tile_2d() -> None:
    src = kernel("""
        uint2 g = thread_position_in_grid.xy;
        uint2 l = thread_position_in_threadgroup.xy;
        uint2 b = threadgroup_position_in_grid.xy;
        threadgroup float tile[4][5];
        tile[l.y][l.x] = a[g.y * 8 + g.x];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        uint ox = b.y * 4 + l.x;
        uint oy = b.x * 4 + l.y;
        out[oy * 8 + ox] = tile[l.x][l.y];
    """)
    a = f32(np.arange(64))
    res = clean(src, {"a": a}, {"out": ((8, 8), "float32")}, grid=(8, 8, 1), tg=(4, 4, 1),
                init_value=None)
    np.testing.assert_array_equal(res.outputs[0], a.reshape(8, 8).T)


def test_broadcast_from_one_thread_and_grid_stride_loop() -> None:
    """Thread 0 publishes a scale, everyone reads it after the barrier; a grid-stride loop then
    writes each output element exactly once."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        threadgroup float scale[1];
        if (thread_position_in_threadgroup.x == 0) {
            scale[0] = s[0];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = gid; k < 21; k += threads_per_grid.x) {
            out[k] = a[k] * scale[0];
        }
    """)
    a = f32(np.arange(21))
    res = clean(src, {"a": a, "s": f32([3])}, {"out": ((21,), "float32")}, grid=(8, 1, 1),
                tg=(4, 1, 1), init_value=None)
    np.testing.assert_array_equal(res.outputs[0], a * 3)


def test_threadgroup_memory_exactly_32_kib() -> None:
    """8192 floats of threadgroup memory is exactly the limit and is allowed."""
    src = kernel("""
        uint t = thread_position_in_threadgroup.x;
        threadgroup float big[8192];
        for (uint k = t; k < 8192; k += 32) {
            big[k] = float(k);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[t] = big[8191 - t];
    """)
    res = clean(src, {}, {"out": ((32,), "float32")}, grid=(32, 1, 1), tg=(32, 1, 1),
                init_value=None)
    np.testing.assert_array_equal(res.outputs[0], f32(8191 - np.arange(32)))


def test_return_inside_loop_before_barrier() -> None:
    """Threads leave a barrier loop by `return` at different trips; those that returned are not
    waited for, and the rest only read slots of threads still running."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[8];
        float acc = a[gid];
        for (uint k = 0; k < 8; k++) {
            if (t + k >= 8) {
                out[gid] = acc;
                return;
            }
            s[t] = acc;
            threadgroup_barrier(mem_flags::mem_threadgroup);
            acc += (t > 0) ? s[t - 1] : 0.0f;
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        out[gid] = acc;
    """)
    a = f32(np.arange(16) % 4 + 1)
    res = clean(src, {"a": a}, {"out": ((16,), "float32")}, grid=(16, 1, 1), tg=(8, 1, 1),
                init_value=None)
    expect = np.empty(16, dtype=np.float32)
    for g in range(2):
        vals = a[g * 8:(g + 1) * 8].astype(np.float64).copy()
        done = {}
        for k in range(8):
            alive = [t for t in range(8) if t + k < 8]
            for t in range(8):
                if t + k >= 8 and t not in done:
                    done[t] = vals[t]
            prev = vals.copy()
            for t in alive:
                vals[t] += prev[t - 1] if t > 0 else 0.0
        for t in range(8):
            done.setdefault(t, vals[t])
            expect[g * 8 + t] = done[t]
    np.testing.assert_array_equal(res.outputs[0], expect)


def test_vector_loads_through_cast_pointer() -> None:
    """float4 loads through a cast pointer cover the whole buffer and nothing beyond it."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        const device float4* v = (const device float4*)a;
        float4 x = v[i];
        out[i] = x.x + x.y + x.z + x.w;
    """)
    a = f32(np.arange(16))
    res = clean(src, {"a": a}, {"out": ((4,), "float32")}, grid=(4, 1, 1), tg=(4, 1, 1),
                init_value=None)
    np.testing.assert_array_equal(res.outputs[0], a.reshape(4, 4).sum(axis=1))


def test_3d_grid_with_partial_threadgroups_and_barrier() -> None:
    """A (3, 3, 5) grid in (2, 2, 2) threadgroups: edge threadgroups are partial in every
    dimension; each threadgroup reverses its threads' values through threadgroup memory."""
    src = kernel("""
        uint3 g = thread_position_in_grid;
        uint3 l = thread_position_in_threadgroup;
        threadgroup float s[2][2][2];
        uint i = g.x + g.y * 3 + g.z * 9;
        s[l.z][l.y][l.x] = a[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[i] = s[l.z][l.y][l.x] * 2.0f;
    """)
    a = f32(np.arange(45))
    res = clean(src, {"a": a}, {"out": ((5, 3, 3), "float32")}, grid=(3, 3, 5), tg=(2, 2, 2),
                init_value=None)
    np.testing.assert_array_equal(res.outputs[0].reshape(-1), a * 2)


@pytest.mark.parametrize(
    "fill",
    ["v.x = a[i]; v.y = 2.0f;", "v[0] = a[i]; v[1] = 2.0f;", "v.yx = float2(2.0f, a[i]);"],
    ids=["swizzle", "subscript", "swizzle-pair"],
)
def test_vector_initialised_one_component_at_a_time(fill: str) -> None:
    """Assigning components of an uninitialised float2 writes them; it reads nothing."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        float2 v;
        FILL
        out[i] = v.x * v.y;
    """).replace("FILL", fill)
    a = f32(np.arange(4))
    res = clean(src, {"a": a}, {"out": ((4,), "float32")}, grid=(4, 1, 1), tg=(4, 1, 1),
                init_value=None)
    np.testing.assert_array_equal(res.outputs[0], a * 2)


def test_locals_initialised_through_pointer_and_reference() -> None:
    """An array filled through a pointer, and a scalar set through a reference parameter of a
    header helper: both initialised before they are read."""
    header = kernel("""
        void set_to(thread float& dst, float v) {
            dst = v;
        }
    """)
    src = kernel("""
        uint i = thread_position_in_grid.x;
        float r[3];
        thread float* p = r;
        for (int k = 0; k < 3; k++) {
            p[k] = float(k) + a[i];
        }
        float z;
        set_to(z, 100.0f);
        out[i] = r[2] + z;
    """)
    a = f32(np.arange(4))
    res = clean(src, {"a": a}, {"out": ((4,), "float32")}, grid=(4, 1, 1), tg=(4, 1, 1),
                init_value=None, header=header)
    np.testing.assert_array_equal(res.outputs[0], a + 102)


def test_return_from_helper_is_not_a_kernel_return_before_barrier() -> None:
    """A helper's early `return` leaves the helper, not the kernel: those threads still reach
    the barrier that follows, so nothing diverges."""
    header = kernel("""
        float clipped(float x) {
            if (x < 0.0f) {
                return 0.0f;
            }
            return x;
        }
    """)
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[4];
        s[t] = clipped(a[gid]);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[gid] = s[3 - t];
    """)
    a = f32([-1, 2, -3, 4, 5, -6, 7, -8])
    res = clean(src, {"a": a}, {"out": ((8,), "float32")}, grid=(8, 1, 1), tg=(4, 1, 1),
                init_value=None, header=header)
    np.testing.assert_array_equal(res.outputs[0], np.maximum(a, 0).reshape(2, 4)[:, ::-1].reshape(-1))


def test_copying_a_struct_with_interior_padding_reads_no_padding() -> None:
    """`struct G { float phi; float3 d; }` has 12 bytes of alignment between phi and d; copying a
    fully assigned G reads them, but padding is never data a kernel reads (issue 23, item 5)."""
    header = "struct G { float phi; float3 d; };"
    src = kernel("""
        uint i = thread_position_in_grid.x;
        G g;
        g.phi = float(i);
        g.d = float3(2.0f);
        G h = g;
        out[i] = h.phi + h.d.z;
    """)
    res = clean(src, {}, {"out": ((4,), "float32")}, grid=(4, 1, 1), tg=(4, 1, 1), header=header, init_value=None)
    np.testing.assert_array_equal(res.outputs[0], np.arange(4) + 2.0)
