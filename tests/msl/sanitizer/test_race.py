"""Planted data races.

Threadgroup memory: read-after-write, write-after-read and write-after-write between different
threads of one threadgroup within one barrier phase. Device memory: two threads writing one
output element without atomics, or a thread reading an output element another thread wrote in
the same dispatch without a barrier between them in one threadgroup (across threadgroups no
barrier helps).

``threads[0]`` is the thread whose access completes the race (the later access in lock-step
order: the read of a read-after-write, the write of a write-after-read, the second write of a
write-after-write); ``extra['other_thread']`` / ``extra['other_pos']`` name the earlier access.
When two threads make the conflicting accesses in one statement, neither is later: then
``threads[0]`` is the first of them in launch order and ``other_thread`` another one.
"""

from __future__ import annotations

import numpy as np

from .conftest import check_race, expect_one_kind, f32, findings_of, i32, kernel, line_of, t1, t2

RACE = "race"


def race_matches(f, race: str, other_line: int, other) -> bool:
    """``check_race`` as a predicate, for findings whose other thread may be one of several."""
    try:
        check_race(f, race, other_line, other)
    except AssertionError:
        return False
    return True


# ------------------------------------------------------------------ threadgroup memory


def test_threadgroup_raw_missing_barrier_between_store_and_load() -> None:
    """Pairs of threads swap values through threadgroup memory without a barrier: thread 0
    reads s[1] in the phase thread 1 wrote it."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[2];
        s[t] = a[gid];  // @W
        out[gid] = s[1 - t];  // @R
    """)
    found = findings_of(src, {"a": f32(np.arange(6))}, grid=(6, 1, 1), tg=(2, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@R"), t1(0, 2), "s", 1)
    check_race(f, "read-after-write", line_of(src, "@W"), t1(1, 2))


def test_threadgroup_raw_reduction_loop_missing_barrier() -> None:
    """A tree reduction with no barrier inside the loop: at stride 1 thread 0 reads s[1], which
    thread 1 wrote at stride 2 in the same phase."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[4];
        s[t] = a[gid];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint stride = 2; stride > 0; stride /= 2) {
            if (t < stride) {
                s[t] += s[t + stride];  // @SUM
            }
        }
        if (t == 0) {
            out[gid / 4] = s[0];
        }
    """)
    found = findings_of(src, {"a": f32(np.arange(8))}, {"out": ((2,), "float32")},
                        grid=(8, 1, 1), tg=(4, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@SUM"), t1(0, 4), "s", 1)
    check_race(f, "read-after-write", line_of(src, "@SUM"), t1(1, 4))


def test_threadgroup_war_in_place_scan_missing_middle_barrier() -> None:
    """A Hillis-Steele scan in place with only one barrier per step: thread 0 overwrites s[0]
    in the phase thread 1 read it."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[4];
        s[t] = a[gid];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint off = 1; off < 4; off *= 2) {
            float v = s[t];
            if (t >= off) {
                v += s[t - off];  // @R
            }
            s[t] = v;  // @W
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        out[gid] = s[t];
    """)
    found = findings_of(src, {"a": f32(np.arange(8))}, grid=(8, 1, 1), tg=(4, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@W"), t1(0, 4), "s", 0)
    check_race(f, "write-after-read", line_of(src, "@R"), t1(1, 4))


def test_threadgroup_war_tiled_matmul_missing_second_barrier_2d() -> None:
    """A tiled matmul without the barrier after the compute loop: on the second tile thread
    (0, 0) reloads As[0][0] while thread (1, 0) may still be reading it."""
    src = kernel("""
        uint2 g = thread_position_in_grid.xy;
        uint2 l = thread_position_in_threadgroup.xy;
        threadgroup float As[2][2];
        threadgroup float Bs[2][2];
        float acc = 0.0f;
        for (uint t0 = 0; t0 < 4; t0 += 2) {
            As[l.y][l.x] = A[g.y * 4 + t0 + l.x];  // @LOADA
            Bs[l.y][l.x] = B[(t0 + l.y) * 4 + g.x];
            threadgroup_barrier(mem_flags::mem_threadgroup);
            for (uint k = 0; k < 2; k++) {
                acc += As[l.y][k] * Bs[k][l.x];  // @USE
            }
        }
        out[g.y * 4 + g.x] = acc;
    """)
    rng = np.random.default_rng(0)
    found = findings_of(src, {"A": f32(rng.standard_normal(16)), "B": f32(rng.standard_normal(16))},
                        {"out": ((4, 4), "float32")}, grid=(4, 4, 1), tg=(2, 2, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@LOADA"), t2(0, 0, (2, 2)), "As", 0)
    check_race(f, "write-after-read", line_of(src, "@USE"), t2(1, 0, (2, 2)))


def test_threadgroup_waw_every_thread_stores_its_partial_to_slot_zero() -> None:
    """Each thread stores its partial sum to s[0] in the same statement: four writers of one
    element in one phase; thread 0 is named first, the other thread is one of 1..3."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[1];
        float partial = a[2 * gid] + a[2 * gid + 1];
        s[0] = partial;  // @W
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (t == 0) {
            out[gid / 4] = s[0];
        }
    """)
    found = findings_of(src, {"a": f32(np.arange(16))}, {"out": ((2,), "float32")},
                        grid=(8, 1, 1), tg=(4, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@W"), t1(0, 4), "s", 0)
    others = [race_matches(f, "write-after-write", line_of(src, "@W"), t1(k, 4))
              for k in (1, 2, 3)]
    assert any(ok for ok in others), f.extra


def test_threadgroup_waw_on_two_lines_2d() -> None:
    """Every thread stores its own tile element, then the last column's threads 'clear the
    first column' without a barrier: thread (3, 0) overwrites s[0][0], stored by (0, 0)."""
    src = kernel("""
        uint2 g = thread_position_in_grid.xy;
        uint2 l = thread_position_in_threadgroup.xy;
        threadgroup float s[2][4];
        s[l.y][l.x] = a[g.y * 8 + g.x];  // @MAIN
        if (l.x == 3) {
            s[l.y][0] = 0.0f;  // @CLEAR
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[g.y * 8 + g.x] = s[l.y][l.x];
    """)
    found = findings_of(src, {"a": f32(np.arange(32))}, {"out": ((4, 8), "float32")},
                        grid=(8, 4, 1), tg=(4, 2, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@CLEAR"), t2(3, 0, (4, 2)), "s", 0)
    check_race(f, "write-after-write", line_of(src, "@MAIN"), t2(0, 0, (4, 2)))


def test_threadgroup_race_only_in_partial_last_group() -> None:
    """The tail threadgroup (2 threads of grid 10) takes a shortcut path that swaps without a
    barrier; full threadgroups synchronise. Only threadgroup 2 races: thread 8 reads s[1]."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[4];
        s[t] = a[gid];  // @W
        if (threadgroup_position_in_grid.x < 2) {
            threadgroup_barrier(mem_flags::mem_threadgroup);
            out[gid] = s[3 - t];
        } else {
            out[gid] = s[1 - t];  // @R
        }
    """)
    found = findings_of(src, {"a": f32(np.arange(10))}, {"out": ((10,), "float32")},
                        grid=(10, 1, 1), tg=(4, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@R"), t1(8, 4), "s", 1)
    check_race(f, "read-after-write", line_of(src, "@W"), t1(9, 4))
    assert all(d["group"] == (2, 0, 0) for f in found for d in f.threads)


# ------------------------------------------------------------------ device memory


def test_device_waw_scatter_with_duplicate_index_across_threadgroups() -> None:
    """A scatter `out[idx[i]] = a[i]` whose index list repeats 1 (at positions 1 and 6): thread 1
    of threadgroup 0 and thread 6 of threadgroup 1 both write out[1], with no atomics."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[idx[i]] = a[i];  // @W
    """)
    idx = i32([0, 1, 2, 3, 4, 5, 1, 7])
    found = findings_of(src, {"idx": idx, "a": f32(np.arange(8))}, grid=(8, 1, 1), tg=(4, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@W"), t1(1, 4), "out", 1)
    check_race(f, "write-after-write", line_of(src, "@W"), t1(6, 4))


def test_device_waw_on_two_lines_2d() -> None:
    """Every thread writes its own element, then thread (1, 3) also 'fixes up' out[5], the element
    thread (1, 1) owns: two plain writes, different threadgroups, one element."""
    src = kernel("""
        uint2 g = thread_position_in_grid.xy;
        out[g.y * 4 + g.x] = a[g.y * 4 + g.x];  // @MAIN
        if (g.x == 1 && g.y == 3) {
            out[5] = 0.0f;  // @FIX
        }
    """)
    found = findings_of(src, {"a": f32(np.arange(16))}, {"out": ((4, 4), "float32")},
                        grid=(4, 4, 1), tg=(2, 2, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@FIX"), t2(1, 3, (2, 2)), "out", 5)
    check_race(f, "write-after-write", line_of(src, "@MAIN"), t2(1, 1, (2, 2)))


def test_device_raw_across_threadgroups_barrier_does_not_help() -> None:
    """Reading the right neighbour's output after a device barrier is fine inside a threadgroup,
    but thread 3 reads out[4], written by thread 4 of another threadgroup."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[i] = a[i] * 2.0f;  // @W
        threadgroup_barrier(mem_flags::mem_device);
        if (i + 1 < 8) {
            out2[i] = out[i + 1];  // @R
        }
    """)
    found = findings_of(src, {"a": f32(np.arange(8))},
                        {"out": ((8,), "float32"), "out2": ((8,), "float32")},
                        grid=(8, 1, 1), tg=(4, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@R"), t1(3, 4), "out", 4)
    check_race(f, "read-after-write", line_of(src, "@W"), t1(4, 4))
    assert len(found) == 1


def test_device_raw_within_threadgroup_without_barrier_2d() -> None:
    """Each thread reads the other row's output right after writing its own, with no barrier:
    thread (0, 0) reads out[4], written by thread (0, 1) of the same threadgroup."""
    src = kernel("""
        uint2 g = thread_position_in_grid.xy;
        out[g.y * 4 + g.x] = a[g.y * 4 + g.x] + 1.0f;  // @W
        out2[g.y * 4 + g.x] = out[(1 - g.y) * 4 + g.x];  // @R
    """)
    found = findings_of(src, {"a": f32(np.arange(8))},
                        {"out": ((2, 4), "float32"), "out2": ((2, 4), "float32")},
                        grid=(4, 2, 1), tg=(4, 2, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@R"), t2(0, 0, (4, 2)), "out", 4)
    check_race(f, "read-after-write", line_of(src, "@W"), t2(0, 1, (4, 2)))


def test_device_war_read_neighbour_before_it_is_written() -> None:
    """Thread 0 reads out[1] (still the init value) and thread 1 then writes it: whether thread 0
    sees the old or the new value depends on scheduling."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        float right = (i + 1 < 8) ? out[i + 1] : 0.0f;  // @R
        out[i] = a[i] + right;  // @W
    """)
    found = findings_of(src, {"a": f32(np.arange(8))}, grid=(8, 1, 1), tg=(8, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@W"), t1(1, 8), "out", 1)
    check_race(f, "write-after-read", line_of(src, "@R"), t1(0, 8))


def test_device_read_modify_write_histogram_without_atomics() -> None:
    """A histogram with plain `+=` on the output: threads 0 and 2 both update bin 1."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[bins[i]] += 1.0f;  // @BUG
    """)
    bins = i32([1, 0, 1, 3])
    found = findings_of(src, {"bins": bins}, {"out": ((4,), "float32")}, grid=(4, 1, 1),
                        tg=(2, 1, 1))
    kinds = {f.kind for f in found}
    assert kinds == {RACE}
    f = found[0]
    assert (f.pos.line, f.buffer, f.index) == (line_of(src, "@BUG"), "out", 1)
    assert {f.threads[0]["grid"], f.extra["other_thread"]["grid"]} == {(0, 0, 0), (2, 0, 0)}
    assert f.extra["race"] in ("write-after-write", "write-after-read")


def test_threadgroup_raw_through_pointer_alias() -> None:
    """The same missing barrier, but through a `threadgroup float*` alias of the array: thread 0
    reads s[1] through the pointer in the phase thread 1 wrote it."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[4];
        threadgroup float* p = s;
        p[t] = a[gid];  // @W
        out[gid] = p[(t + 1) % 4];  // @R
    """)
    found = findings_of(src, {"a": f32(np.arange(8))}, grid=(8, 1, 1), tg=(4, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@R"), t1(0, 4), "s", 1)
    check_race(f, "read-after-write", line_of(src, "@W"), t1(1, 4))


def test_a_write_after_several_reads_names_its_readers_other_threads() -> None:
    # Every thread reads tile[0]; the last of them then writes it: the reader the sanitizer
    # recorded is the writer itself, so the message names the others, not the writer.
    src = kernel("""
        threadgroup float tile[4];
        uint i = thread_position_in_threadgroup.x;
        tile[i] = a[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float v = tile[0];  // @R
        if (i == 3) { tile[0] = 1.0f; }  // @W
        out[i] = v;
    """)
    found = findings_of(src, {"a": f32(np.arange(4))}, {"out": ((4,), "float32")}, grid=(4, 1, 1), tg=(4, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@W"), t1(3, 4), "tile", 0)
    assert f.other_thread is None and f.other_pos.line == line_of(src, "@R")
    assert f.message.startswith("thread 3 writes tile[0], read by other threads in the same barrier phase")
