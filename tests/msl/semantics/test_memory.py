"""Memory: threadgroup arrays and barriers, thread-local arrays (1-D and multi-dimensional,
with initialisers), threadgroup multi-dimensional arrays, and pointers into buffers
(pointer arithmetic, dereference, pointer increments, address-of, pointer casts)."""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import KernelRuntimeError

from .conftest import one, out0, run


def test_threadgroup_reverse_with_barrier() -> None:
    """Each thread writes shared[t], barrier, then reads shared[n-1-t]: a reversal."""
    src = """
    threadgroup float s[8];
    uint t = thread_position_in_threadgroup.x;
    s[t] = a[t];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = s[7 - t];
    """
    a = np.arange(8, dtype=np.float32) * 1.5
    res = run(src, inputs={"a": a}, out=((8,), "float32"), grid=(8, 1, 1))
    assert res.outputs[0].tolist() == a[::-1].tolist()
    assert res.counts.shared_writes.tolist() == [1] * 8
    assert res.counts.shared_reads.tolist() == [1] * 8


def test_threadgroup_tree_reduction() -> None:
    """A classic shared-memory tree sum with barriers between levels."""
    src = """
    threadgroup float s[16];
    uint t = thread_position_in_threadgroup.x;
    uint g = threadgroup_position_in_grid.x;
    s[t] = a[g * 16 + t];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint stride = 8; stride > 0; stride /= 2) {
        if (t < stride) s[t] += s[t + stride];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (t == 0) out[g] = s[0];
    """
    a = np.arange(48, dtype=np.float32)
    got = out0(src, inputs={"a": a}, out=((3,), "float32"), grid=(48, 1, 1), tg=(16, 1, 1))
    assert got.tolist() == [a[0:16].sum(), a[16:32].sum(), a[32:48].sum()]


def test_threadgroup_2d_tile_transpose() -> None:
    """A 4x4 threadgroup tile indexed tile[y][x], read back transposed."""
    src = """
    threadgroup float tile[4][4];
    uint2 t = thread_position_in_threadgroup.xy;
    tile[t.y][t.x] = a[t.y * 4 + t.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t.y * 4 + t.x] = tile[t.x][t.y];
    """
    a = np.arange(16, dtype=np.float32)
    got = out0(src, inputs={"a": a}, out=((16,), "float32"), grid=(4, 4, 1))
    assert got.tolist() == a.reshape(4, 4).T.ravel().tolist()


def test_threadgroup_scalar_variable() -> None:
    """A threadgroup scalar written by one thread is seen by all after the barrier."""
    src = """
    threadgroup int flag;
    uint t = thread_position_in_threadgroup.x;
    if (t == 3) flag = 42;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = flag + t;
    """
    assert out0(src, out=((6,), "int32"), grid=(6, 1, 1)).tolist() == [42 + t for t in range(6)]


def test_two_threadgroup_arrays() -> None:
    """Two threadgroup arrays are distinct storage."""
    src = """
    threadgroup int x[4];
    threadgroup int y[4];
    uint t = thread_position_in_threadgroup.x;
    x[t] = t; y[t] = 10 * t;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = x[(t + 1) % 4] + y[(t + 2) % 4];
    """
    got = out0(src, out=((4,), "int32"), grid=(4, 1, 1))
    assert got.tolist() == [(t + 1) % 4 + 10 * ((t + 2) % 4) for t in range(4)]


def test_barrier_mem_device_and_none_flags_compile_and_synchronise() -> None:
    """threadgroup_barrier accepts mem_device and mem_none (and combinations)."""
    src = """
    threadgroup int s[4];
    uint t = thread_position_in_threadgroup.x;
    s[t] = t * t;
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
    int v = s[3 - t];
    threadgroup_barrier(mem_flags::mem_none);
    out[t] = v;
    """
    assert out0(src, out=((4,), "int32"), grid=(4, 1, 1)).tolist() == [9, 4, 1, 0]


def test_threadgroup_memory_in_partial_group() -> None:
    """A partial edge threadgroup uses only its live threads' slots."""
    src = """
    threadgroup float s[4];
    uint t = thread_position_in_threadgroup.x;
    uint i = thread_position_in_grid.x;
    s[t] = a[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint n = threads_per_threadgroup.x;
    out[i] = s[n - 1 - t];
    """
    a = np.arange(6, dtype=np.float32)
    got = out0(src, inputs={"a": a}, out=((6,), "float32"), grid=(6, 1, 1), tg=(4, 1, 1))
    assert got.tolist() == [3.0, 2.0, 1.0, 0.0, 5.0, 4.0]


# ------------------------------------------------------------------ thread-local


def test_thread_local_array_with_initialiser() -> None:
    """`float v[4] = {1, 2, 3, 4};` then indexed by a per-thread value."""
    src = """
    uint i = thread_position_in_grid.x;
    float v[4] = {1.5f, 2.5f, 3.5f, 4.5f};
    out[i] = v[i % 4] + v[(i + 1) % 4];
    """
    got = out0(src, out=((5,), "float32"), grid=(5, 1, 1))
    v = [1.5, 2.5, 3.5, 4.5]
    assert got.tolist() == [v[i % 4] + v[(i + 1) % 4] for i in range(5)]


def test_thread_local_array_partial_initialiser_zero_fills() -> None:
    """`int v[4] = {7};` sets v[0] = 7 and zero-fills the rest; `= {}` zero-fills all."""
    src = "int v[4] = {7}; int w[3] = {}; out[0] = v[0]; out[1] = v[1] + v[2] + v[3] + w[0] + w[2];"
    assert run(src, out=((2,), "int32")).outputs[0].tolist() == [7, 0]


def test_thread_local_2d_array() -> None:
    """`int m[2][3] = {{1,2,3},{4,5,6}};` indexed m[r][c]."""
    src = """
    int m[2][3] = {{1, 2, 3}, {4, 5, 6}};
    for (int r = 0; r < 2; r++) for (int c = 0; c < 3; c++) out[r * 3 + c] = m[r][c] * 10 + r;
    """
    got = run(src, out=((6,), "int32")).outputs[0].tolist()
    assert got == [10, 20, 30, 41, 51, 61]


def test_thread_local_arrays_are_private_per_thread() -> None:
    """Every thread fills its own local array; no thread sees another's values."""
    src = """
    uint i = thread_position_in_grid.x;
    float acc[3];
    for (int k = 0; k < 3; k++) acc[k] = float(i * 10 + k);
    out[i] = acc[0] + acc[1] + acc[2];
    """
    got = out0(src, out=((6,), "float32"), grid=(6, 1, 1))
    assert got.tolist() == [float(30 * i + 3) for i in range(6)]


def test_thread_local_array_reads_are_free() -> None:
    """Thread-local array accesses are not counted as global or shared traffic."""
    src = "float v[2] = {1.0f, 2.0f}; v[1] += v[0]; out[0] = v[1];"
    res = run(src)
    assert res.outputs[0].tolist() == [3.0]
    assert res.counts.global_reads.tolist() == [0]
    assert res.counts.shared_reads.tolist() == [0]
    assert res.counts.global_writes.tolist() == [1]


def test_local_array_copied_element_by_element_in_loop() -> None:
    """A loaded window held in a local array, then shifted."""
    src = """
    float w[3];
    for (int k = 0; k < 3; k++) w[k] = a[k];
    for (int k = 0; k < 2; k++) w[k] = w[k + 1];
    out[0] = w[0]; out[1] = w[1]; out[2] = w[2];
    """
    a = np.array([1, 2, 3], dtype=np.float32)
    assert run(src, inputs={"a": a}, out=((3,), "float32")).outputs[0].tolist() == [2, 3, 3]


# ------------------------------------------------------------------ pointers


def test_pointer_offset_into_input() -> None:
    """`const device float* p = a + 2; p[1]` reads a[3]."""
    a = np.arange(8, dtype=np.float32) * 3
    assert one("const device float* p = a + 2; out[0] = p[1];", inputs={"a": a}) == 9.0


def test_dereference_pointer_arithmetic() -> None:
    """*(a + i) is a[i]."""
    a = np.arange(8, dtype=np.float32) + 0.5
    src = "uint i = thread_position_in_grid.x; out[i] = *(a + i);"
    assert out0(src, inputs={"a": a}, out=((8,), "float32"), grid=(8, 1, 1)).tolist() == a.tolist()


def test_write_through_pointer_to_output_element() -> None:
    """`device float* q = &out[i]; *q = v;` writes out[i]."""
    src = "uint i = thread_position_in_grid.x; device float* q = &out[i]; *q = i * 2.0f;"
    assert out0(src, out=((4,), "float32"), grid=(4, 1, 1)).tolist() == [0.0, 2.0, 4.0, 6.0]


def test_pointer_increment_walks_buffer() -> None:
    """Incrementing a pointer in a loop visits consecutive elements (each read counted)."""
    src = """
    const device float* p = a + 1;
    float s = 0;
    for (int k = 0; k < 4; k++) { s += *p; p++; }
    out[0] = s;
    """
    a = np.array([100, 1, 2, 3, 4, 200, 0, 0], dtype=np.float32)
    res = run(src, inputs={"a": a})
    assert res.outputs[0].tolist() == [10.0]
    assert res.counts.global_reads.tolist() == [4]


def test_pointer_difference() -> None:
    """Subtracting two pointers into one buffer gives the element distance."""
    src = "const device float* p = a + 2; const device float* q = a + 7; out[0] = q - p;"
    assert one(src, "int32", inputs={"a": np.zeros(8, np.float32)}) == 5


def test_row_pointer_into_2d_input() -> None:
    """A per-thread row pointer `a + row * ncols` indexes a 2-D input."""
    src = """
    uint r = thread_position_in_grid.x;
    const device float* row = a + r * 4;
    out[r] = row[0] + row[3];
    """
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = out0(src, inputs={"a": a}, out=((3,), "float32"), grid=(3, 1, 1))
    assert got.tolist() == (a[:, 0] + a[:, 3]).tolist()


def test_pointer_to_threadgroup_memory() -> None:
    """A `threadgroup float*` pointer into a threadgroup array reads and writes it."""
    src = """
    threadgroup float s[4];
    uint t = thread_position_in_threadgroup.x;
    threadgroup float* p = &s[t];
    *p = t + 0.5f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    threadgroup float* q = s;
    out[t] = q[(t + 1) % 4];
    """
    res = run(src, out=((4,), "float32"), grid=(4, 1, 1))
    assert res.outputs[0].tolist() == [1.5, 2.5, 3.5, 0.5]
    assert res.counts.shared_writes.tolist() == [1] * 4
    assert res.counts.shared_reads.tolist() == [1] * 4


def test_pointer_to_thread_local_variable() -> None:
    """`thread int* p = &x; *p += 5;` modifies x."""
    assert one("int x = 1; thread int* p = &x; *p += 5; out[0] = x;", "int32") == 6


def test_pointer_cast_to_vector_type() -> None:
    """Reading a float buffer through `(const device float4*)` loads four floats at once."""
    src = """
    uint i = thread_position_in_grid.x;
    float4 v = ((const device float4*)a)[i];
    out[i] = v.x + v.y + v.z + v.w;
    """
    a = np.arange(8, dtype=np.float32)
    got = out0(src, inputs={"a": a}, out=((2,), "float32"), grid=(2, 1, 1))
    assert got.tolist() == [6.0, 22.0]


def test_reference_to_output_element() -> None:
    """`device float& r = out[i]; r = ...;` writes through the reference."""
    src = "uint i = thread_position_in_grid.x; device float& r = out[i]; r = 3.0f * i;"
    assert out0(src, out=((3,), "float32"), grid=(3, 1, 1)).tolist() == [0.0, 3.0, 6.0]


def test_constant_address_space_small_input_pointer() -> None:
    """Small inputs live in `constant`; a `constant float*` pointer reads them."""
    src = "const constant float* p = a + 1; out[0] = p[0] + p[2];"
    a = np.array([1, 2, 3, 4], dtype=np.float32)
    assert one(src, inputs={"a": a}) == 6.0


# --------------------------------------------------------- whole-kernel patterns


def test_tiled_matmul_with_two_dimensional_tiles() -> None:
    """A 4x4 matmul with 2x2 threadgroup tiles and a barrier-separated loop over tiles."""
    src = """
    threadgroup float ta[2][2];
    threadgroup float tb[2][2];
    uint row = thread_position_in_grid.y;
    uint col = thread_position_in_grid.x;
    uint ty = thread_position_in_threadgroup.y;
    uint tx = thread_position_in_threadgroup.x;
    float acc = 0;
    for (uint t = 0; t < 2; t++) {
        ta[ty][tx] = a[row * 4 + t * 2 + tx];
        tb[ty][tx] = b[(t * 2 + ty) * 4 + col];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < 2; k++) acc += ta[ty][k] * tb[k][tx];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    out[row * 4 + col] = acc;
    """
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    b = (np.arange(16, dtype=np.float32).reshape(4, 4) % 5) - 2
    res = run(src, inputs={"a": a, "b": b}, out=((4, 4), "float32"), grid=(4, 4, 1), tg=(2, 2, 1))
    assert res.outputs[0].tolist() == (a @ b).tolist()
    assert res.counts.global_reads.tolist() == [4] * 16
    assert res.counts.shared_reads.tolist() == [8] * 16
    assert res.counts.shared_writes.tolist() == [4] * 16


def test_hillis_steele_scan_double_buffered() -> None:
    """An inclusive scan in threadgroup memory with ping-pong buffers."""
    src = """
    threadgroup float buf[2][8];
    uint t = thread_position_in_threadgroup.x;
    buf[0][t] = a[t];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint src_ = 0;
    for (uint off = 1; off < 8; off *= 2) {
        float v = buf[src_][t];
        if (t >= off) v += buf[src_][t - off];
        buf[1 - src_][t] = v;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        src_ = 1 - src_;
    }
    out[t] = buf[src_][t];
    """
    a = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.float32)
    got = out0(src, inputs={"a": a}, out=((8,), "float32"), grid=(8, 1, 1))
    assert got.tolist() == np.cumsum(a).tolist()


def test_returned_threads_do_not_block_barrier() -> None:
    """Threads past n return before the barrier; the others still synchronise and finish."""
    src = """
    threadgroup float s[8];
    uint t = thread_position_in_threadgroup.x;
    if (t >= 5) return;
    s[t] = a[t];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = s[4 - t];
    """
    a = np.arange(8, dtype=np.float32) + 1
    got = out0(src, inputs={"a": a}, out=((8,), "float32"), grid=(8, 1, 1), init_value=0)
    assert got.tolist() == [5, 4, 3, 2, 1, 0, 0, 0]


def test_threadgroup_atomic_histogram() -> None:
    """A per-group histogram in a `threadgroup atomic_uint` array, flushed by the first threads."""
    src = """
    threadgroup atomic_uint hist[4];
    uint t = thread_position_in_threadgroup.x;
    uint i = thread_position_in_grid.x;
    if (t < 4) atomic_store_explicit(&hist[t], 0u, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    atomic_fetch_add_explicit(&hist[v[i]], 1u, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (t < 4) out[threadgroup_position_in_grid.x * 4 + t] = atomic_load_explicit(&hist[t], memory_order_relaxed);
    """
    v = np.array([0, 1, 1, 3, 3, 3, 2, 0, 1, 1, 1, 1, 2, 2, 0, 3], dtype=np.int32)
    got = out0(src, inputs={"v": v}, out=((8,), "uint32"), grid=(16, 1, 1), tg=(8, 1, 1))
    expected = np.concatenate([np.bincount(v[:8], minlength=4), np.bincount(v[8:], minlength=4)])
    assert got.tolist() == expected.tolist()


def test_strided_loop_over_input_per_thread() -> None:
    """Grid-stride loop: thread i sums a[i], a[i + 4], a[i + 8], ..."""
    src = """
    uint i = thread_position_in_grid.x;
    float s = 0;
    for (uint k = i; k < 20; k += threads_per_grid.x) s += a[k];
    out[i] = s;
    """
    a = np.arange(20, dtype=np.float32)
    res = run(src, inputs={"a": a}, out=((4,), "float32"), grid=(4, 1, 1))
    assert res.outputs[0].tolist() == [a[i::4].sum() for i in range(4)]
    assert res.counts.global_reads.tolist() == [5, 5, 5, 5]


def test_brace_elision_in_2d_array_initialiser() -> None:
    """C++ aggregate initialisation may omit inner braces: {1,2,3,4,5,6} fills m[2][3] row by row."""
    assert one("int m[2][3] = {1, 2, 3, 4, 5, 6}; out[0] = m[1][0] * 10 + m[0][2];", "int32") == 43


def test_unsized_array_takes_size_from_initialiser() -> None:
    """`int v[] = {4, 5, 6};` has three elements."""
    assert one("int v[] = {4, 5, 6}; out[0] = sizeof(v) / sizeof(v[0]) * 10 + v[2];", "int32") == 36


def test_device_memory_visible_after_barrier_within_group() -> None:
    """A device write by thread 0, then threadgroup_barrier(mem_device), is read by thread 1."""
    src = """
    uint t = thread_position_in_threadgroup.x;
    if (t == 0) out[0] = 5;
    threadgroup_barrier(mem_flags::mem_device);
    if (t == 1) out[1] = out[0] + 1;
    """
    assert out0(src, out=((2,), "float32"), grid=(2, 1, 1)).tolist() == [5.0, 6.0]


def test_own_output_write_then_read_back() -> None:
    """A thread reads back the value it just wrote to its own output element."""
    src = "uint i = thread_position_in_grid.x; out[i] = i * 3; out[i] = out[i] + 1;"
    assert out0(src, out=((4,), "float32"), grid=(4, 1, 1)).tolist() == [1.0, 4.0, 7.0, 10.0]


# ------------------------------------------------------------------------------ pointers set per branch
RATIONAL = """
// A rational function by Horner's rule, read from either end of its coefficient tables (as
// Cephes' ratevl does, which PyTorch's igamma.h uses): p is set on both sides of a branch, so
// in lock-step its threads point into 'num' and 'den' for a while.
float ratevl(float x, const thread float num[], int M, const thread float den[], int N) {
  thread const float* p;
  int dir;
  float y;
  if (fabs(x) > 1) { dir = -1; p = num + M; y = 1 / x; } else { dir = 1; p = num; y = x; }
  float a = *p; p += dir;
  for (int i = 1; i <= M; i++) { a = a * y + *p; p += dir; }
  if (fabs(x) > 1) { p = den + N; } else { p = den; }
  float b = *p; p += dir;
  for (int i = 1; i <= N; i++) { b = b * y + *p; p += dir; }
  return a / b;
}
"""


def test_a_pointer_set_on_both_sides_of_a_branch_reads_each_threads_target() -> None:
    """Threads of one SIMD-group take either side, and some call the function under a mask (the
    threads with x == 0 do not): each reads the table its own pointer reaches. Expected values
    by hand with Horner's rule: (x^2 + 2x + 3) / (4x^2 + 5x + 6) for |x| <= 1, the tables read
    backwards in y = 1/x otherwise."""
    src = """
    uint i = thread_position_in_grid.x;
    const float num[3] = {1.0f, 2.0f, 3.0f};
    const float den[3] = {4.0f, 5.0f, 6.0f};
    out[i] = a[i] == 0.0f ? -1.0f : ratevl(a[i], num, 2, den, 2);
    """
    x = np.array([0.5, 3.0, 0.0, -2.0, -0.25, 0.0, 1.5, 1.0], np.float32)

    def rational(v: float) -> float:
        if v == 0:
            return -1.0
        if abs(v) > 1:  # the tables read backwards, in y = 1/x
            y = 1 / v
            return (3 * y * y + 2 * y + 1) / (6 * y * y + 5 * y + 4)
        return (v * v + 2 * v + 3) / (4 * v * v + 5 * v + 6)

    got = out0(src, inputs={"a": x}, out=((8,), "float32"), grid=(8, 1, 1), header=RATIONAL)
    np.testing.assert_allclose(got, [rational(float(v)) for v in x], rtol=1e-6)


def test_a_pointer_used_while_its_threads_point_into_different_arrays_is_a_located_error() -> None:
    """Reading through a pointer whose threads disagree at that moment is what the simulator cannot
    do: a runtime error at the read's line, never a wrong value."""
    src = """
    uint i = thread_position_in_grid.x;
    const float lo[2] = {1.0f, 2.0f};
    const float hi[2] = {3.0f, 4.0f};
    thread const float* p = a[i] > 0.0f ? hi : lo;
    out[i] = p[1];
    """
    with pytest.raises(KernelRuntimeError, match=r"source:6:15: .*different memories \('hi' and 'lo'\)"):
        run(src, inputs={"a": np.array([1, -1, 1, -1], np.float32)}, out=((4,), "float32"), grid=(4, 1, 1))
    same = src.replace("a[i] > 0.0f", "a[0] > 0.0f")  # every thread the same array: fine
    assert out0(same, inputs={"a": np.array([1, -1, 1, -1], np.float32)}, out=((4,), "float32"),
                grid=(4, 1, 1)).tolist() == [4.0] * 4
