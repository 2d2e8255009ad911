"""Atomics: atomic_outputs=True (outputs become `device atomic<T>*`), atomic<float>, atomic_int,
atomic_uint; fetch_add/sub/min/max/and/or/xor, load/store/exchange, compare-exchange loops,
casts of plain outputs to atomic pointers, threadgroup atomics, and the atomics counter.

Results are order-independent (integer-valued floats, commutative operations) so the expected
value is known whatever order the simulator picks for the threads.
"""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import out0, run

RELAXED = "memory_order_relaxed"


def test_atomic_float_add_sums_all_threads() -> None:
    """64 threads add integer-valued floats into out[0] and out[1]."""
    src = f"""
    uint i = thread_position_in_grid.x;
    atomic_fetch_add_explicit(&out[i % 2], a[i], {RELAXED});
    """
    a = np.arange(64, dtype=np.float32)
    res = run(src, inputs={"a": a}, out=((2,), "float32"), grid=(64, 1, 1), tg=(32, 1, 1),
              atomic=True, init_value=0)
    assert res.outputs[0].tolist() == [a[0::2].sum(), a[1::2].sum()]


def test_atomic_add_respects_init_value() -> None:
    """With init_value=5, ten increments give 15."""
    src = f"atomic_fetch_add_explicit(&out[0], 1, {RELAXED});"
    got = out0(src, out=((1,), "int32"), grid=(10, 1, 1), atomic=True, init_value=5)
    assert got.tolist() == [15]


def test_fetch_add_returns_old_values_all_distinct() -> None:
    """Each thread gets a distinct old value of a counter: a permutation of 0..n-1."""
    src = f"""
    uint i = thread_position_in_grid.x;
    int old = atomic_fetch_add_explicit((device atomic_int*)&counter[0], 1, {RELAXED});
    out[i] = old;
    """
    res = run(src, out={"counter": ((1,), "int32"), "out": ((48,), "int32")}, grid=(48, 1, 1),
              tg=(16, 1, 1), init_value=0)
    assert res.outputs[0].tolist() == [48]
    assert sorted(res.outputs[1].tolist()) == list(range(48))


@pytest.mark.parametrize(
    ("op", "init", "expected"),
    [
        ("atomic_fetch_sub_explicit", 100, 100 - sum(range(16))),
        ("atomic_fetch_min_explicit", 1000, -8),
        ("atomic_fetch_max_explicit", -1000, 7),
    ],
)
def test_int_fetch_ops(op: str, init: int, expected: int) -> None:
    """sub/min/max on atomic_int with per-thread operands (threads 0..15, values i or i - 8)."""
    operand = "int(i)" if op.endswith("sub_explicit") else "int(i) - 8"
    src = f"uint i = thread_position_in_grid.x; {op}(&out[0], {operand}, {RELAXED});"
    got = out0(src, out=((1,), "int32"), grid=(16, 1, 1), atomic=True, init_value=init)
    assert got.tolist() == [expected]


@pytest.mark.parametrize(
    ("op", "init", "expected"),
    [
        ("atomic_fetch_and_explicit", 0xFFFF, 0xFFFF & ~sum(1 << k for k in range(0, 16, 2))),
        ("atomic_fetch_or_explicit", 0, sum(1 << k for k in range(0, 16, 2))),
        ("atomic_fetch_xor_explicit", 0, sum(1 << k for k in range(0, 16, 2))),
    ],
)
def test_uint_bitwise_fetch_ops(op: str, init: int, expected: int) -> None:
    """and/or/xor on atomic_uint: even threads clear/set/toggle bit i.

    (init_value travels as a float in MLX, so it stays below 2**24 to be exact.)"""
    if op == "atomic_fetch_and_explicit":
        operand = "~(1u << i)"
    else:
        operand = "(1u << i)"
    src = f"uint i = thread_position_in_grid.x; if (i % 2 == 0) {op}(&out[0], {operand}, {RELAXED});"
    got = out0(src, out=((1,), "uint32"), grid=(16, 1, 1), atomic=True, init_value=init)
    assert got.tolist() == [expected]


def test_xor_twice_cancels() -> None:
    """Every bit toggled by two threads ends where it started."""
    src = f"uint i = thread_position_in_grid.x; atomic_fetch_xor_explicit(&out[0], 1u << (i % 8), {RELAXED});"
    got = out0(src, out=((1,), "uint32"), grid=(16, 1, 1), atomic=True, init_value=0)
    assert got.tolist() == [0]


def test_atomic_uint_wraps() -> None:
    """atomic_uint arithmetic wraps: 0 - 1 (sub) by one thread gives 4294967295."""
    src = f"atomic_fetch_sub_explicit(&out[0], 1u, {RELAXED});"
    got = out0(src, out=((1,), "uint32"), atomic=True, init_value=0)
    assert got.tolist() == [4294967295]


def test_atomic_load_store_exchange() -> None:
    """store, then load, then exchange returning the previous value."""
    src = f"""
    atomic_store_explicit(&out[0], 41, {RELAXED});
    int v = atomic_load_explicit(&out[0], {RELAXED});
    int prev = atomic_exchange_explicit(&out[0], v + 1, {RELAXED});
    atomic_store_explicit(&out[1], prev * 10, {RELAXED});
    """
    got = out0(src, out=((2,), "int32"), atomic=True)
    assert got.tolist() == [42, 410]


def test_exchange_hands_out_each_value_once() -> None:
    """Threads exchange their own id into a slot; the old values form a chain: all ids but one
    come back exactly once, plus the initial value."""
    src = f"""
    uint i = thread_position_in_grid.x;
    int old = atomic_exchange_explicit((device atomic_int*)&slot[0], int(i), {RELAXED});
    out[i] = old;
    """
    res = run(src, out={"slot": ((1,), "int32"), "out": ((8,), "int32")}, grid=(8, 1, 1),
              init_value=-1)
    final = res.outputs[0].tolist()[0]
    olds = sorted(res.outputs[1].tolist())
    assert 0 <= final < 8
    assert olds == sorted([-1] + [k for k in range(8) if k != final])


def test_compare_exchange_loop_float_max() -> None:
    """A CAS loop implementing atomic float max over 32 threads."""
    src = f"""
    uint i = thread_position_in_grid.x;
    float v = a[i];
    float expected = atomic_load_explicit(&out[0], {RELAXED});
    while (expected < v &&
           !atomic_compare_exchange_weak_explicit(&out[0], &expected, v, {RELAXED}, {RELAXED})) {{
    }}
    """
    rng = np.random.default_rng(7)
    a = rng.integers(-500, 500, size=32).astype(np.float32)
    got = out0(src, inputs={"a": a}, out=((1,), "float32"), grid=(32, 1, 1), atomic=True,
               init_value=-1e30)
    assert got.tolist() == [a.max()]


def test_compare_exchange_failure_updates_expected() -> None:
    """A failing compare-exchange returns false and writes the current value to `expected`."""
    src = f"""
    atomic_store_explicit(&out[0], 5, {RELAXED});
    int expected = 3;
    bool ok = atomic_compare_exchange_weak_explicit(&out[0], &expected, 9, {RELAXED}, {RELAXED});
    atomic_store_explicit(&out[1], ok ? 1 : 0, {RELAXED});
    atomic_store_explicit(&out[2], expected, {RELAXED});
    """
    got = out0(src, out=((3,), "int32"), atomic=True)
    assert got.tolist() == [5, 0, 5]


def test_compare_exchange_success() -> None:
    """A succeeding compare-exchange stores the desired value and returns true.

    The weak form may fail spuriously on hardware, so the kernel retries in a loop."""
    src = f"""
    atomic_store_explicit(&out[0], 5, {RELAXED});
    int expected = 5;
    bool ok = false;
    for (int k = 0; k < 4 && !ok; k++) {{
        expected = 5;
        ok = atomic_compare_exchange_weak_explicit(&out[0], &expected, 9, {RELAXED}, {RELAXED});
    }}
    atomic_store_explicit(&out[1], ok ? 1 : 0, {RELAXED});
    """
    got = out0(src, out=((2,), "int32"), atomic=True)
    assert got.tolist() == [9, 1]


def test_cast_plain_float_output_to_atomic_float() -> None:
    """Without atomic_outputs, `(device atomic_float*)&o[j]` makes a plain output atomic."""
    src = f"""
    uint i = thread_position_in_grid.x;
    atomic_fetch_add_explicit((device atomic_float*)&out[i % 4], a[i], {RELAXED});
    """
    a = np.arange(40, dtype=np.float32)
    got = out0(src, inputs={"a": a}, out=((4,), "float32"), grid=(40, 1, 1), tg=(8, 1, 1),
               init_value=0)
    assert got.tolist() == [a[k::4].sum() for k in range(4)]


def test_cast_plain_uint_output_to_atomic_uint() -> None:
    """`(device atomic_uint*)&out[b]` builds a histogram of bucket ids."""
    src = f"""
    uint i = thread_position_in_grid.x;
    atomic_fetch_add_explicit((device atomic_uint*)&out[idx[i]], 1u, {RELAXED});
    """
    idx = np.array([0, 3, 3, 1, 0, 3, 2, 3, 1, 0, 0, 0], dtype=np.int32)
    got = out0(src, inputs={"idx": idx}, out=((4,), "uint32"), grid=(12, 1, 1), init_value=0)
    assert got.tolist() == np.bincount(idx, minlength=4).tolist()


def test_atomic_template_spelling() -> None:
    """`device atomic<int>*` and `device atomic_int*` are the same type."""
    src = f"""
    uint i = thread_position_in_grid.x;
    device atomic<int>* p = (device atomic<int>*)&out[0];
    atomic_fetch_add_explicit(p, int(i), {RELAXED});
    """
    got = out0(src, out=((1,), "int32"), grid=(10, 1, 1), init_value=0)
    assert got.tolist() == [45]


def test_scatter_add_to_rows() -> None:
    """Scatter-add of rows by index (the sparse-engine pattern) with atomic<float> outputs."""
    src = f"""
    uint t = thread_position_in_grid.y;
    uint c = thread_position_in_grid.x;
    atomic_fetch_add_explicit(&out[dst[t] * 3 + c], x[t * 3 + c], {RELAXED});
    """
    x = np.arange(18, dtype=np.float32).reshape(6, 3)
    dst = np.array([1, 0, 1, 1, 0, 2], dtype=np.int32)
    got = out0(src, inputs={"x": x, "dst": dst}, out=((3, 3), "float32"), grid=(3, 6, 1),
               tg=(3, 2, 1), atomic=True, init_value=0)
    expected = np.zeros((3, 3), dtype=np.float32)
    np.add.at(expected, dst, x)
    assert got.tolist() == expected.tolist()


def test_threadgroup_atomic_counter() -> None:
    """A `threadgroup atomic_int` counts the threads of each group."""
    src = f"""
    threadgroup atomic_int count;
    if (thread_index_in_threadgroup == 0) atomic_store_explicit(&count, 0, {RELAXED});
    threadgroup_barrier(mem_flags::mem_threadgroup);
    atomic_fetch_add_explicit(&count, 1, {RELAXED});
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (thread_index_in_threadgroup == 0)
        out[threadgroup_position_in_grid.x] = atomic_load_explicit(&count, {RELAXED});
    """
    got = out0(src, out=((3,), "int32"), grid=(20, 1, 1), tg=(8, 1, 1))
    assert got.tolist() == [8, 8, 4]


def test_atomics_counted_in_their_own_column() -> None:
    """Each atomic read-modify-write counts in `atomics`, not as a global read or write."""
    src = f"""
    uint i = thread_position_in_grid.x;
    float v = a[i];
    atomic_fetch_add_explicit(&out[0], v, {RELAXED});
    if (i < 2) atomic_fetch_add_explicit(&out[0], v, {RELAXED});
    """
    a = np.ones(4, dtype=np.float32)
    res = run(src, inputs={"a": a}, out=((1,), "float32"), grid=(4, 1, 1), atomic=True,
              init_value=0)
    assert res.outputs[0].tolist() == [6.0]
    assert res.counts.atomics.tolist() == [2, 2, 1, 1]
    assert res.counts.global_reads.tolist() == [1, 1, 1, 1]
    assert res.counts.global_writes.tolist() == [0, 0, 0, 0]


def test_atomic_in_loop_counts_per_iteration() -> None:
    """An atomic add inside a loop of i iterations counts i atomics for thread i."""
    src = f"""
    uint i = thread_position_in_grid.x;
    for (uint k = 0; k < i; k++) atomic_fetch_add_explicit(&out[0], 1, {RELAXED});
    """
    res = run(src, out=((1,), "int32"), grid=(5, 1, 1), atomic=True, init_value=0)
    assert res.outputs[0].tolist() == [10]
    assert res.counts.atomics.tolist() == [0, 1, 2, 3, 4]


# ------------------------------------------------------- lane order, the values each lane finds
def _one_by_one(data, addr, values, ufunc):
    """The updates applied one lane after another: what every atomic must equal."""
    found = np.empty(addr.size, dtype=data.dtype)
    for k, (a, v) in enumerate(zip(addr, values, strict=True)):
        found[k] = data[a]
        data[a] = v if ufunc is None else ufunc(data[a:a + 1], np.asarray([v], dtype=data.dtype))[0]
    return found


_INTEGER_OPS = [np.add, np.subtract, np.minimum, np.maximum, np.bitwise_and, np.bitwise_or, np.bitwise_xor, None]
_FLOAT_OPS = [np.add, np.subtract, None]  # atomic<float>: add, sub and exchange


@pytest.mark.parametrize(("ufunc", "dtype"), [(u, d) for d in ("int32", "uint32") for u in _INTEGER_OPS]
                         + [(u, "float32") for u in _FLOAT_OPS])
@pytest.mark.parametrize("spread", ["one address", "few", "many", "one hot among many"])
def test_updates_together_equal_updates_one_by_one(ufunc, dtype, spread) -> None:
    """Each address's updates applied together (the executor's way, None: an exchange) leave
    memory and hand each lane exactly what applying them one lane after another does."""
    from metal_puzzles.msl.executor.runtime import apply_in_lane_order

    rng = np.random.default_rng(7)
    n = 300
    addr = {"one address": np.zeros(n, dtype=np.int64), "few": rng.integers(0, 3, n),
            "many": rng.integers(0, 200, n),
            "one hot among many": np.where(rng.random(n) < 0.5, 5, rng.integers(0, 1000, n))}[spread]
    if dtype == "float32":  # not integer-valued: each addition's rounding shows
        values = (rng.standard_normal(n) * 1e3).astype(np.float32)
    else:  # large enough to wrap around
        values = rng.integers(0, 2**31 - 1, n).astype(dtype)
    start = (rng.standard_normal(1000) * 1e4).astype(dtype) if dtype == "float32" else \
        rng.integers(0, 2**31 - 1, 1000).astype(dtype)
    want_data = start.copy()
    with np.errstate(all="ignore"):
        want = _one_by_one(want_data, addr, values, ufunc)
        got_data = start.copy()
        got = apply_in_lane_order(got_data, addr, values, ufunc)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))
    np.testing.assert_array_equal(got_data.view(f"u{got.itemsize}"), want_data.view(f"u{want.itemsize}"))


def test_float_fetch_add_old_values_are_the_lane_order_prefix_sums() -> None:
    """64 threads add non-integer floats to one counter, each keeping what it found: thread k
    finds the float32 sum of threads 0..k-1's values, added one at a time in lane order."""
    src = f"""
    uint i = thread_position_in_grid.x;
    out[i] = atomic_fetch_add_explicit((device atomic_float*)&total[0], a[i], {RELAXED});
    """
    a = (np.random.default_rng(3).standard_normal(64) * 1000).astype(np.float32)
    res = run(src, inputs={"a": a}, out={"total": ((1,), "float32"), "out": ((64,), "float32")},
              grid=(64, 1, 1), tg=(32, 1, 1), init_value=0)
    acc = np.float32(0)
    prefix = []
    for v in a:
        prefix.append(acc)
        acc = np.float32(acc + v)
    assert res.outputs[1].tolist() == [float(x) for x in prefix]
    assert res.outputs[0].tolist() == [float(acc)]
