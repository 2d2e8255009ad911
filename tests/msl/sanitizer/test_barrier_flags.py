"""Barriers order what their mem_flags say, as Metal defines them.

``threadgroup_barrier(mem_flags::mem_none)`` synchronises execution only: an exchange through
threadgroup (or device) memory across it is still a race. ``mem_threadgroup`` orders threadgroup
memory and ``mem_device`` device memory among the threads of one threadgroup; each leaves the
other memory unordered. ``simdgroup_barrier(flags)`` does the same for the threads of one
SIMD-group: an exchange inside a SIMD-group is ordered by it, one across SIMD-groups is not.
Each planted race has a correct twin that must stay silent.
"""

from __future__ import annotations

import numpy as np

from .conftest import check_race, clean, expect_one_kind, f32, findings_of, kernel, line_of, t1

RACE = "race"

# Two SIMD-groups each reduce their 32 values, lane 0 of each publishes the partial in
# threadgroup memory, and every thread adds both partials: the shape of the mlx-lm loss kernels.
PARTIALS = """
    uint i = thread_position_in_threadgroup.x;
    threadgroup float partial[2];
    float s = simd_sum(a[i]);
    if (thread_index_in_simdgroup == 0) {{
        partial[simdgroup_index_in_threadgroup] = s;  // @W
    }}
    threadgroup_barrier(mem_flags::{flags});  // @B
    out[i] = partial[0] + partial[1];  // @R
"""


def test_mem_none_barrier_does_not_order_threadgroup_memory() -> None:
    src = kernel(PARTIALS.format(flags="mem_none"))
    found = findings_of(src, {"a": f32(np.arange(64))}, grid=(64, 1, 1), tg=(64, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@R"), t1(1, 64), "partial", 0)
    check_race(f, "read-after-write", line_of(src, "@W"), t1(0, 64))
    # The advice names the barrier that synchronised execution without ordering the memory.
    assert f"barrier at line {line_of(src, '@B')}" in f.message and "mem_threadgroup" in f.message


def test_mem_device_barrier_does_not_order_threadgroup_memory() -> None:
    src = kernel(PARTIALS.format(flags="mem_device"))
    found = findings_of(src, {"a": f32(np.arange(64))}, grid=(64, 1, 1), tg=(64, 1, 1))
    expect_one_kind(found, RACE, line_of(src, "@R"), t1(1, 64), "partial", 0)


def test_mem_threadgroup_barrier_orders_the_partials() -> None:
    res = clean(kernel(PARTIALS.format(flags="mem_threadgroup")), {"a": f32(np.arange(64))},
                grid=(64, 1, 1), tg=(64, 1, 1))
    assert (res.outputs[0] == np.arange(64).sum()).all()


def test_combined_flags_order_both_memories() -> None:
    res = clean(kernel(PARTIALS.format(flags="mem_device | mem_flags::mem_threadgroup")),
                {"a": f32(np.arange(64))}, grid=(64, 1, 1), tg=(64, 1, 1))
    assert (res.outputs[0] == np.arange(64).sum()).all()


# Each thread writes its own output element, then reads its neighbour's after a barrier.
NEIGHBOUR = """
    uint i = thread_position_in_grid.x;
    out[i] = a[i] * 2.0f;  // @W
    threadgroup_barrier(mem_flags::{flags});
    nb[i] = out[(i + 1) % 32];  // @R
"""
NEIGHBOUR_OUTS = {"out": ((32,), "float32"), "nb": ((32,), "float32")}


def test_threadgroup_flag_does_not_order_device_memory() -> None:
    src = kernel(NEIGHBOUR.format(flags="mem_threadgroup"))
    found = findings_of(src, {"a": f32(np.arange(32))}, NEIGHBOUR_OUTS, grid=(32, 1, 1), tg=(32, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@R"), t1(0, 32), "out", 1)
    check_race(f, "read-after-write", line_of(src, "@W"), t1(1, 32))
    assert "mem_device" in f.message


def test_device_flag_orders_device_memory_within_the_threadgroup() -> None:
    res = clean(kernel(NEIGHBOUR.format(flags="mem_device")), {"a": f32(np.arange(32))}, NEIGHBOUR_OUTS,
                grid=(32, 1, 1), tg=(32, 1, 1))
    assert res.outputs[1].tolist() == [2.0 * ((i + 1) % 32) for i in range(32)]


def test_device_flag_does_not_order_threadgroups_against_each_other() -> None:
    # With two threadgroups of 16, thread 15 reads out[16], written by the other threadgroup.
    src = kernel(NEIGHBOUR.format(flags="mem_device"))
    found = findings_of(src, {"a": f32(np.arange(32))}, NEIGHBOUR_OUTS, grid=(32, 1, 1), tg=(16, 1, 1))
    assert {f.kind for f in found} == {RACE}
    assert any(f.index == 16 and tuple(f.threads[0]["grid"]) == (15, 0, 0) for f in found)


# ------------------------------------------------------------------ SIMD-group barriers

# Each SIMD-group reverses its 32 values through threadgroup memory.
SIMD_REVERSE = """
    uint i = thread_position_in_threadgroup.x;
    uint lane = thread_index_in_simdgroup;
    uint base = i - lane;
    threadgroup float buf[64];
    buf[i] = a[i];  // @W
    {barrier}
    out[i] = buf[{source}];  // @R
"""


def test_simdgroup_barrier_orders_an_exchange_within_the_simdgroup() -> None:
    src = kernel(SIMD_REVERSE.format(barrier="simdgroup_barrier(mem_flags::mem_threadgroup);",
                                     source="base + 31 - lane"))
    res = clean(src, {"a": f32(np.arange(64))}, {"out": ((64,), "float32")}, grid=(64, 1, 1), tg=(64, 1, 1))
    assert res.outputs[0].tolist() == [float(31 - i) for i in range(32)] + [float(95 - i) for i in range(32, 64)]


def test_simdgroup_barrier_does_not_order_other_simdgroups() -> None:
    src = kernel(SIMD_REVERSE.format(barrier="simdgroup_barrier(mem_flags::mem_threadgroup);", source="63 - i"))
    found = findings_of(src, {"a": f32(np.arange(64))}, {"out": ((64,), "float32")}, grid=(64, 1, 1),
                        tg=(64, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@R"), t1(0, 64), "buf", 63)
    check_race(f, "read-after-write", line_of(src, "@W"), t1(63, 64))


def test_simdgroup_barrier_with_mem_none_orders_nothing() -> None:
    src = kernel(SIMD_REVERSE.format(barrier="simdgroup_barrier(mem_flags::mem_none);", source="base + 31 - lane"))
    found = findings_of(src, {"a": f32(np.arange(64))}, {"out": ((64,), "float32")}, grid=(64, 1, 1),
                        tg=(64, 1, 1))
    expect_one_kind(found, RACE, line_of(src, "@R"), t1(0, 64), "buf", 31)


def test_simdgroup_exchange_in_a_loop_rewrites_after_the_barrier() -> None:
    """Round after round, each lane overwrites its slot only after a SIMD-group barrier that
    follows everyone's read of the previous round: write-after-read ordered by the SIMD barrier."""
    src = kernel("""
        uint i = thread_position_in_threadgroup.x;
        uint lane = thread_index_in_simdgroup;
        threadgroup float buf[64];
        float v = a[i];
        for (int r = 0; r < 3; ++r) {
            buf[i] = v;
            simdgroup_barrier(mem_flags::mem_threadgroup);
            v = buf[i - lane + ((lane + 1) % 32)];
            simdgroup_barrier(mem_flags::mem_threadgroup);
        }
        out[i] = v;
    """)
    res = clean(src, {"a": f32(np.arange(64))}, {"out": ((64,), "float32")}, grid=(64, 1, 1), tg=(64, 1, 1))
    lanes = np.arange(64) % 32
    assert res.outputs[0].tolist() == list((np.arange(64) - lanes + (lanes + 3) % 32).astype(float))


def test_simdgroup_rewrite_without_the_second_barrier_races() -> None:
    src = kernel("""
        uint i = thread_position_in_threadgroup.x;
        uint lane = thread_index_in_simdgroup;
        threadgroup float buf[64];
        float v = a[i];
        for (int r = 0; r < 2; ++r) {
            buf[i] = v;  // @W
            simdgroup_barrier(mem_flags::mem_threadgroup);
            v = buf[i - lane + ((lane + 1) % 32)];  // @R
        }
        out[i] = v;
    """)
    found = findings_of(src, {"a": f32(np.arange(64))}, {"out": ((64,), "float32")}, grid=(64, 1, 1),
                        tg=(64, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@W"), t1(0, 64), "buf", 0)
    assert f.extra["race"] == "write-after-read" and f.extra["other_pos"].line == line_of(src, "@R")
