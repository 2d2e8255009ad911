"""SIMD-group functions on 32-lane SIMD-groups, including partial SIMD-groups at the end of a
threadgroup and SIMD functions called under divergence (only active threads take part).

Semantics from the MSL specification (section on SIMD-group functions): shuffle_down(data, d)
gives lane i the value of lane i + d and leaves the upper d lanes' values unchanged (no
wrap-around); shuffle_up leaves the lower d lanes unchanged; shuffle_xor reads lane i ^ mask;
prefix sums are over lanes with lower index; reductions and votes cover the active threads.
References below are NumPy reductions over the same 32-lane blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from .conftest import out0

W = 32


def lanes_of(n: int, tg: int) -> list[list[int]]:
    """Global thread indices of each SIMD-group for a 1-D grid of n threads in groups of tg."""
    groups = []
    for start in range(0, n, tg):
        size = min(tg, n - start)
        for s in range(0, size, W):
            groups.append(list(range(start + s, start + min(s + W, size))))
    return groups


def simd_map(src_expr: str, a: np.ndarray, n: int, tg: int, dtype: str = "float32") -> np.ndarray:
    """Run `out[i] = <src_expr>` per thread with input a; return out."""
    src = f"uint i = thread_position_in_grid.x; uint lane = thread_index_in_simdgroup; out[i] = {src_expr};"
    return out0(src, inputs={"a": a}, out=((n,), dtype), grid=(n, 1, 1), tg=(tg, 1, 1))


@pytest.mark.parametrize(("n", "tg"), [(64, 64), (40, 40), (70, 64), (32, 16), (96, 48)])
def test_simd_sum_full_and_partial(n: int, tg: int) -> None:
    """simd_sum adds over each SIMD-group's active lanes (partial groups included)."""
    a = np.arange(n, dtype=np.float32)
    got = simd_map("simd_sum(a[i])", a, n, tg)
    expected = np.empty(n, dtype=np.float32)
    for g in lanes_of(n, tg):
        expected[g] = a[g].sum()
    assert got.tolist() == expected.tolist()


def test_simd_sum_int() -> None:
    """simd_sum on ints is an exact integer sum."""
    a = (np.arange(64, dtype=np.int32) * 7) - 100
    got = simd_map("simd_sum(a[i])", a, 64, 64, "int32")
    assert got.tolist() == [int(a[:32].sum())] * 32 + [int(a[32:].sum())] * 32


@pytest.mark.parametrize(("fn", "np_fn"), [("simd_max", np.max), ("simd_min", np.min)])
def test_simd_max_min(fn: str, np_fn: Callable[[np.ndarray], Any]) -> None:
    """simd_max / simd_min reduce over the SIMD-group (a partial group of 8 included)."""
    rng = np.random.default_rng(3)
    a = rng.integers(-1000, 1000, size=40).astype(np.float32)
    got = simd_map(f"{fn}(a[i])", a, 40, 40)
    expected = np.empty(40, dtype=np.float32)
    for g in lanes_of(40, 40):
        expected[g] = np_fn(a[g])
    assert got.tolist() == expected.tolist()


def test_simd_product() -> None:
    """simd_product of 1s and 2s is 2 ** (number of 2s)."""
    a = np.where(np.arange(32) % 3 == 0, 2.0, 1.0).astype(np.float32)
    got = simd_map("simd_product(a[i])", a, 32, 32)
    assert got.tolist() == [2.0**11] * 32


def test_simd_shuffle_rotation() -> None:
    """simd_shuffle(x, (lane + 5) % 32) rotates values within each SIMD-group."""
    a = np.arange(64, dtype=np.float32)
    got = simd_map("simd_shuffle(a[i], (lane + 5) % 32)", a, 64, 64)
    expected = [a[(i // W) * W + ((i % W) + 5) % W] for i in range(64)]
    assert got.tolist() == expected


@pytest.mark.parametrize("delta", [1, 3, 16])
def test_simd_shuffle_down_keeps_upper_lanes(delta: int) -> None:
    """Lane i gets lane i + delta; the top delta lanes keep their own value."""
    a = np.arange(64, dtype=np.float32) * 2
    got = simd_map(f"simd_shuffle_down(a[i], {delta})", a, 64, 64)
    expected = [a[i + delta] if (i % W) + delta < W else a[i] for i in range(64)]
    assert got.tolist() == expected


@pytest.mark.parametrize("delta", [1, 4])
def test_simd_shuffle_up_keeps_lower_lanes(delta: int) -> None:
    """Lane i gets lane i - delta; the bottom delta lanes keep their own value."""
    a = np.arange(64, dtype=np.float32) + 0.5
    got = simd_map(f"simd_shuffle_up(a[i], {delta})", a, 64, 64)
    expected = [a[i - delta] if (i % W) >= delta else a[i] for i in range(64)]
    assert got.tolist() == expected


@pytest.mark.parametrize("mask", [1, 2, 16, 31])
def test_simd_shuffle_xor(mask: int) -> None:
    """Lane i reads lane i ^ mask."""
    a = np.arange(32, dtype=np.int32) * 3
    got = simd_map(f"simd_shuffle_xor(a[i], {mask})", a, 32, 32, "int32")
    assert got.tolist() == [int(a[i ^ mask]) for i in range(32)]


def test_simd_broadcast() -> None:
    """simd_broadcast(x, 7) gives every lane lane 7's value, per SIMD-group."""
    a = np.arange(64, dtype=np.float32) * -1.5
    got = simd_map("simd_broadcast(a[i], 7)", a, 64, 64)
    assert got.tolist() == [a[7]] * 32 + [a[39]] * 32


def test_simd_broadcast_first_under_divergence() -> None:
    """simd_broadcast_first returns the value of the lowest active lane."""
    src = """
    uint i = thread_position_in_grid.x;
    uint lane = thread_index_in_simdgroup;
    float r = -1;
    if (lane >= 5) r = simd_broadcast_first(a[i]);
    out[i] = r;
    """
    a = np.arange(32, dtype=np.float32) + 100
    got = out0(src, inputs={"a": a}, out=((32,), "float32"), grid=(32, 1, 1))
    assert got.tolist() == [-1.0] * 5 + [105.0] * 27


def test_simd_prefix_inclusive_sum() -> None:
    """Inclusive prefix sum within each SIMD-group."""
    a = np.arange(1, 65, dtype=np.float32)
    got = simd_map("simd_prefix_inclusive_sum(a[i])", a, 64, 64)
    expected = np.concatenate([np.cumsum(a[:32]), np.cumsum(a[32:])])
    assert got.tolist() == expected.tolist()


def test_simd_prefix_exclusive_sum_partial_group() -> None:
    """Exclusive prefix sum, including a partial SIMD-group of 8 lanes."""
    a = np.arange(40, dtype=np.int32) % 5
    got = simd_map("simd_prefix_exclusive_sum(a[i])", a, 40, 40, "int32")
    expected = []
    for g in lanes_of(40, 40):
        c = np.cumsum(a[g]) - a[g]
        expected.extend(c.tolist())
    assert got.tolist() == expected


def test_simd_prefix_inclusive_product() -> None:
    """Inclusive prefix product of 2s doubles each lane."""
    a = np.full(32, 2.0, dtype=np.float32)
    got = simd_map("simd_prefix_inclusive_product(a[i])", a, 32, 32)
    assert got.tolist() == [2.0 ** (k + 1) for k in range(32)]


def test_simd_all_and_any() -> None:
    """simd_all/simd_any vote over each SIMD-group."""
    a = np.ones(64, dtype=np.float32)
    a[40] = -1.0  # only the second SIMD-group has a negative value
    src = """
    uint i = thread_position_in_grid.x;
    out[i] = (simd_all(a[i] > 0) ? 1 : 0) + (simd_any(a[i] < 0) ? 10 : 0);
    """
    got = out0(src, inputs={"a": a}, out=((64,), "int32"), grid=(64, 1, 1))
    assert got.tolist() == [1] * 32 + [10] * 32


def test_simd_ballot() -> None:
    """simd_ballot converts to a 64-bit mask with bit k set when lane k's condition holds."""
    src = """
    uint i = thread_position_in_grid.x;
    uint lane = thread_index_in_simdgroup;
    out[i] = static_cast<uint64_t>(simd_ballot(lane % 3 == 0));
    """
    got = out0(src, out=((40,), "uint64"), grid=(40, 1, 1))
    full = sum(1 << k for k in range(0, 32, 3))
    part = sum(1 << k for k in range(0, 8, 3))
    assert got.tolist() == [full] * 32 + [part] * 8


def test_simd_is_first_under_divergence() -> None:
    """simd_is_first() is true only on the lowest active lane of the branch."""
    src = """
    uint i = thread_position_in_grid.x;
    uint lane = thread_index_in_simdgroup;
    int r = 0;
    if (lane >= 5) r = simd_is_first() ? 1 : 2;
    out[i] = r;
    """
    got = out0(src, out=((32,), "int32"), grid=(32, 1, 1))
    assert got.tolist() == [0] * 5 + [1] + [2] * 26


def test_simd_sum_under_divergence_counts_active_lanes_only() -> None:
    """Inside `if (lane % 2 == 0)` only 16 lanes are active: simd_sum(1) is 16."""
    src = """
    uint i = thread_position_in_grid.x;
    int r = -1;
    if (thread_index_in_simdgroup % 2 == 0) r = simd_sum(1);
    out[i] = r;
    """
    got = out0(src, out=((32,), "int32"), grid=(32, 1, 1))
    assert got.tolist() == [16 if i % 2 == 0 else -1 for i in range(32)]


def test_simd_sum_after_early_return() -> None:
    """Threads that returned do not take part: lanes >= 10 return, the rest sum 0..9."""
    src = """
    uint i = thread_position_in_grid.x;
    if (i >= 10) return;
    out[i] = simd_sum(a[i]);
    """
    a = np.arange(32, dtype=np.float32)
    got = out0(src, inputs={"a": a}, out=((32,), "float32"), grid=(32, 1, 1), init_value=-1)
    assert got.tolist() == [45.0] * 10 + [-1.0] * 22


def test_shuffle_down_tree_reduction() -> None:
    """The classic shuffle_down reduction leaves the SIMD-group total in lane 0."""
    src = """
    uint i = thread_position_in_grid.x;
    float v = a[i];
    for (ushort off = 16; off > 0; off /= 2) v += simd_shuffle_down(v, off);
    if (thread_index_in_simdgroup == 0) out[i / 32] = v;
    """
    a = np.arange(64, dtype=np.float32)
    got = out0(src, inputs={"a": a}, out=((2,), "float32"), grid=(64, 1, 1))
    assert got.tolist() == [a[:32].sum(), a[32:].sum()]


def test_simd_sum_then_threadgroup_combine() -> None:
    """Two-level reduction: simd_sum per SIMD-group, partials in threadgroup memory."""
    src = """
    threadgroup float partial[4];
    uint i = thread_position_in_grid.x;
    float s = simd_sum(a[i]);
    if (thread_index_in_simdgroup == 0) partial[simdgroup_index_in_threadgroup] = s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (thread_index_in_threadgroup == 0) {
        float t = 0;
        for (uint k = 0; k < simdgroups_per_threadgroup; k++) t += partial[k];
        out[threadgroup_position_in_grid.x] = t;
    }
    """
    a = np.arange(200, dtype=np.float32)
    got = out0(src, inputs={"a": a}, out=((2,), "float32"), grid=(200, 1, 1), tg=(128, 1, 1))
    assert got.tolist() == [a[:128].sum(), a[128:].sum()]


def test_simdgroup_barrier_is_accepted() -> None:
    """simdgroup_barrier(mem_flags::mem_none) is a valid no-op for this kernel."""
    src = """
    uint i = thread_position_in_grid.x;
    simdgroup_barrier(mem_flags::mem_none);
    out[i] = simd_shuffle_xor(a[i], 1);
    """
    a = np.arange(8, dtype=np.float32)
    got = out0(src, inputs={"a": a}, out=((8,), "float32"), grid=(8, 1, 1))
    assert got.tolist() == [1, 0, 3, 2, 5, 4, 7, 6]


def test_simd_sum_of_half() -> None:
    """simd_sum on half values returns half (here exactly representable)."""
    a = np.full(32, 0.5, dtype=np.float16)
    got = simd_map("simd_sum(a[i])", a, 32, 32, "float16")
    assert got.tolist() == [16.0] * 32


def test_simd_sum_of_half_is_the_float_sum_rounded_once() -> None:
    """2048 and 31 ones: 2079 rounds to the half 2080 (its neighbours are 2078 and 2080, a tie to
    even); adding the ones in half one by one would stay at 2048, since 2048 + 1 rounds back to
    2048. PyTorch's own test of simd_sum on halves needs the rounded float sum (see simd.py)."""
    a = np.ones(32, dtype=np.float16)
    a[0] = 2048
    got = simd_map("simd_sum(a[i])", a, 32, 32, "float16")
    assert got.tolist() == [2080.0] * 32


def test_simd_functions_in_2d_threadgroup() -> None:
    """In an 8x8 threadgroup, SIMD-group k covers rows 4k..4k+3 (linear thread index)."""
    src = """
    uint2 p = thread_position_in_grid.xy;
    out[p.y * 8 + p.x] = simd_sum(1) * 100 + simdgroup_index_in_threadgroup;
    """
    got = out0(src, out=((64,), "int32"), grid=(8, 8, 1))
    assert got.tolist() == [3200 + (k // 32) for k in range(64)]


def test_simd_shuffle_xor_on_vectors() -> None:
    """simd_shuffle_xor works on float2 values component by component."""
    src = """
    uint i = thread_position_in_grid.x;
    float2 v = float2(a[i], -a[i]);
    float2 w = simd_shuffle_xor(v, 2);
    out[2 * i] = w.x; out[2 * i + 1] = w.y;
    """
    a = np.arange(8, dtype=np.float32)
    got = out0(src, inputs={"a": a}, out=((16,), "float32"), grid=(8, 1, 1)).reshape(8, 2)
    assert got[:, 0].tolist() == [float(a[i ^ 2]) for i in range(8)]
    assert got[:, 1].tolist() == [-float(a[i ^ 2]) for i in range(8)]


def test_simd_max_int_negative() -> None:
    """simd_max on negative ints picks the largest (closest to zero)."""
    a = -(np.arange(32, dtype=np.int32) + 5)
    got = simd_map("simd_max(a[i])", a, 32, 32, "int32")
    assert got.tolist() == [-5] * 32


def test_simd_shuffle_with_per_lane_source() -> None:
    """simd_shuffle with a data-dependent source lane (a gather within the SIMD-group)."""
    rng = np.random.default_rng(11)
    src_lane = rng.integers(0, 32, size=32).astype(np.uint32)
    a = np.arange(32, dtype=np.float32) * 10
    src = "uint i = thread_position_in_grid.x; out[i] = simd_shuffle(a[i], ushort(idx[i]));"
    got = out0(src, inputs={"a": a, "idx": src_lane}, out=((32,), "float32"), grid=(32, 1, 1))
    assert got.tolist() == [a[s] for s in src_lane]


def test_simd_active_threads_mask_under_divergence() -> None:
    """simd_active_threads_mask() (no arguments) has a bit per active lane."""
    src = """
    uint i = thread_position_in_grid.x;
    ulong m = 0;
    if (i % 4 == 1) m = static_cast<ulong>(simd_active_threads_mask());
    out[i] = m;
    """
    got = out0(src, out=((8,), "uint64"), grid=(8, 1, 1))
    mask = (1 << 1) | (1 << 5)
    assert got.tolist() == [mask if i % 4 == 1 else 0 for i in range(8)]


def test_simd_vote_all_and_any_members() -> None:
    """simd_ballot(...) returns a simd_vote whose all()/any() consult the active lanes."""
    src = """
    uint i = thread_position_in_grid.x;
    simd_vote v = simd_ballot(i < 3);
    out[i] = (v.all() ? 1 : 0) + (v.any() ? 10 : 0);
    """
    got = out0(src, out=((8,), "int32"), grid=(8, 1, 1))
    assert got.tolist() == [10] * 8


@pytest.mark.parametrize("delta", [1, 5])
def test_simd_shuffle_and_fill_down(delta: int) -> None:
    """The top delta lanes take the filling value instead of keeping their own."""
    a = np.arange(32, dtype=np.float32)
    got = simd_map(f"simd_shuffle_and_fill_down(a[i], -1.0f, {delta})", a, 32, 32)
    assert got.tolist() == [a[i + delta] if i + delta < W else -1.0 for i in range(32)]


def test_simd_shuffle_and_fill_up() -> None:
    """The bottom delta lanes take the filling value."""
    a = np.arange(32, dtype=np.float32)
    got = simd_map("simd_shuffle_and_fill_up(a[i], -1.0f, 3)", a, 32, 32)
    assert got.tolist() == [a[i - 3] if i >= 3 else -1.0 for i in range(32)]


def test_simd_sum_inside_loop_with_divergent_trip_counts() -> None:
    """Lane L runs L iterations; in iteration k only lanes > k are active, so simd_sum(1)
    there is 31 - k and lane L accumulates sum(31 - k for k < L)."""
    src = """
    uint i = thread_position_in_grid.x;
    uint lane = thread_index_in_simdgroup;
    int acc = 0;
    for (uint k = 0; k < lane; k++) acc += simd_sum(1);
    out[i] = acc;
    """
    got = out0(src, out=((32,), "int32"), grid=(32, 1, 1))
    assert got.tolist() == [sum(31 - k for k in range(lane)) for lane in range(32)]


def test_simd_prefix_sum_counts_only_active_lanes() -> None:
    """Under `if (lane % 2 == 0)`, the exclusive prefix sum of 1 is the rank among even lanes."""
    src = """
    uint i = thread_position_in_grid.x;
    int r = -1;
    if (thread_index_in_simdgroup % 2 == 0) r = simd_prefix_exclusive_sum(1);
    out[i] = r;
    """
    got = out0(src, out=((32,), "int32"), grid=(32, 1, 1))
    assert got.tolist() == [i // 2 if i % 2 == 0 else -1 for i in range(32)]


def test_simd_min_after_break_excludes_exited_lanes() -> None:
    """Lanes that broke out of the loop do not contribute to a later simd_min inside it:
    in iteration k only lanes >= 8k remain, so the minimum there is 8k."""
    src = """
    uint i = thread_position_in_grid.x;
    uint lane = thread_index_in_simdgroup;
    int last = -1;
    for (int k = 0; k < 4; k++) {
        if (lane < uint(k) * 8) break;
        last = simd_min(int(lane));
    }
    out[i] = last;
    """
    got = out0(src, out=((32,), "int32"), grid=(32, 1, 1))
    assert got.tolist() == [8 * min(3, lane // 8) for lane in range(32)]


@pytest.mark.parametrize(
    ("expr", "ref"),
    [("quad_sum(a[i])", lambda a, i: a[i & ~3:(i & ~3) + 4].sum()),
     ("quad_shuffle_xor(a[i], 1)", lambda a, i: a[i ^ 1]),
     ("quad_broadcast(a[i], 3)", lambda a, i: a[(i & ~3) + 3]),
     ("quad_shuffle_down(a[i], 1)", lambda a, i: a[i + 1] if i % 4 < 3 else a[i])],
    ids=["quad_sum", "quad_shuffle_xor", "quad_broadcast", "quad_shuffle_down"],
)
def test_quad_functions(expr: str, ref: Callable[[np.ndarray, int], Any]) -> None:
    """Quad-group functions act within groups of four consecutive lanes."""
    a = (np.arange(16, dtype=np.float32) * 3) % 7
    got = simd_map(expr, a, 16, 16)
    assert got.tolist() == [float(ref(a, i)) for i in range(16)]


@pytest.mark.parametrize("dtype", ["uint32", "int32", "uint16", "uint8", "uint64"])
def test_simd_and_or_xor_on_every_integer_type(dtype: str) -> None:
    """simd_and's identity is all ones of the operand's type: on unsigned types it used to be
    the Python integer -1, which NumPy refuses (OverflowError from a correct kernel, found by the
    multi-thread differential generator). A partial SIMD-group of 8 pads with the identity."""
    rng = np.random.default_rng(5)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, size=40, dtype=dtype, endpoint=True)
    t = {"uint32": "uint", "int32": "int", "uint16": "ushort", "uint8": "uchar", "uint64": "ulong"}[dtype]
    for fn, ufunc in (("simd_and", np.bitwise_and), ("simd_or", np.bitwise_or), ("simd_xor", np.bitwise_xor)):
        got = simd_map(f"{fn}(({t})a[i])", a, 40, 40, dtype)
        expected = np.empty(40, dtype=dtype)
        for g in lanes_of(40, 40):
            expected[g] = ufunc.reduce(a[g])
        assert got.tolist() == expected.tolist(), fn
