"""Atomics mixed with plain accesses, benign same-value races (notes), and races at the
granularity of the bytes a view touches.

* Atomics never race with each other, but an atomic and a plain access to one element that no
  barrier orders do (the plain store may land before, between or after the updates).
* Two threads storing the same value in one element race by the letter of the language, and
  nothing goes wrong on a GPU: the sanitizer reports a note (``Severity.NOTE``), which never
  raises and never fails a check; the same store with different values is an error.
* Memory is shadowed per scalar of the narrowest view used: threads writing different bytes of
  one word do not race; a byte and a word store overlapping do.
"""

from __future__ import annotations

import warnings

import pytest

from metal_puzzles.msl import SanitizerError, Severity

from .conftest import (
    check_race,
    clean,
    expect_one_kind,
    f32,
    findings_of,
    kernel,
    launch,
    line_of,
    t1,
)

RACE = "race"
COUNTER = {"out": ((1,), "uint32")}


# ------------------------------------------------------------------ atomic and plain


def test_plain_store_then_atomic_updates_race() -> None:
    src = kernel("""
        uint i = thread_position_in_grid.x;
        if (i == 0) {
            out[0] = 5u;  // @PLAIN
        } else {
            atomic_fetch_add_explicit((device atomic_uint*)out, 1u, memory_order_relaxed);  // @ATOMIC
        }
    """)
    found = findings_of(src, {}, COUNTER, grid=(8, 1, 1), tg=(8, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@ATOMIC"), t1(1, 8), "out", 0)
    check_race(f, "write-after-write", line_of(src, "@PLAIN"), t1(0, 8))
    assert "atomic" in f.message


def test_atomic_updates_then_plain_store_race() -> None:
    src = kernel("""
        uint i = thread_position_in_grid.x;
        if (i != 0) {
            atomic_fetch_add_explicit((device atomic_uint*)out, 1u, memory_order_relaxed);  // @ATOMIC
        }
        if (i == 0) {
            out[0] = 5u;  // @PLAIN
        }
    """)
    found = findings_of(src, {}, COUNTER, grid=(8, 1, 1), tg=(8, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@PLAIN"), t1(0, 8), "out", 0)
    assert f.extra["other_pos"].line == line_of(src, "@ATOMIC")


def test_plain_read_of_an_atomically_updated_counter_races() -> None:
    src = kernel("""
        uint i = thread_position_in_grid.x;
        atomic_fetch_add_explicit((device atomic_uint*)out, 1u, memory_order_relaxed);
        seen[i] = out[0];  // @READ
    """)
    found = findings_of(src, {}, {"out": ((1,), "uint32"), "seen": ((8,), "uint32")}, grid=(8, 1, 1),
                        tg=(8, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@READ"), None, "out", 0)
    assert f.extra["race"] == "read-after-write"


def test_atomic_load_of_the_counter_is_silent() -> None:
    src = kernel("""
        uint i = thread_position_in_grid.x;
        device atomic_uint* c = (device atomic_uint*)out;
        atomic_fetch_add_explicit(c, 1u, memory_order_relaxed);
        atomic_fetch_add_explicit(c, 2u, memory_order_relaxed);
        seen[i] = atomic_load_explicit(c, memory_order_relaxed) >= 3u ? 1u : 0u;
    """)
    res = clean(src, {}, {"out": ((1,), "uint32"), "seen": ((8,), "uint32")}, grid=(8, 1, 1), tg=(8, 1, 1))
    assert res.outputs[0].tolist() == [24]


def test_plain_initialisation_ordered_by_a_barrier_before_atomics_is_silent() -> None:
    src = kernel("""
        uint i = thread_position_in_threadgroup.x;
        threadgroup atomic_uint hits;
        if (i == 0) {
            atomic_store_explicit(&hits, 0u, memory_order_relaxed);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        atomic_fetch_add_explicit(&hits, 1u, memory_order_relaxed);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (i == 0) {
            out[0] = atomic_load_explicit(&hits, memory_order_relaxed);
        }
    """)
    res = clean(src, {}, COUNTER, grid=(16, 1, 1), tg=(16, 1, 1))
    assert res.outputs[0].tolist() == [16]


def test_plain_store_and_atomics_in_threadgroup_memory_race() -> None:
    src = kernel("""
        uint i = thread_position_in_threadgroup.x;
        threadgroup uint hits[1];
        if (i == 0) {
            hits[0] = 0u;  // @PLAIN
        }
        atomic_fetch_add_explicit((threadgroup atomic_uint*)hits, 1u, memory_order_relaxed);  // @ATOMIC
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (i == 0) {
            out[0] = hits[0];
        }
    """)
    found = findings_of(src, {}, COUNTER, grid=(16, 1, 1), tg=(16, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@ATOMIC"), t1(1, 16), "hits", 0)
    check_race(f, "write-after-write", line_of(src, "@PLAIN"), t1(0, 16))


# ------------------------------------------------------------------ same-value writes


def test_same_value_store_is_a_note_that_never_raises() -> None:
    src = kernel("""
        out[0] = threads_per_threadgroup.x;  // @STORE
    """)
    with pytest.warns(RuntimeWarning, match=r"race \(note\)"):
        res = launch(src, {}, COUNTER, grid=(8, 1, 1), tg=(8, 1, 1))  # sanitize='error'
    assert res.outputs[0].tolist() == [8]
    (f,) = res.findings
    assert f.kind == RACE and f.severity == Severity.NOTE and not f.is_error
    assert f.pos.line == line_of(src, "@STORE") and "same value" in f.message
    assert res.errors == []


def test_same_value_store_across_statements_is_a_note() -> None:
    src = kernel("""
        uint i = thread_position_in_grid.x;
        if (i < 4) {
            out[0] = 1.0f;  // @FIRST
        } else {
            out[0] = 1.0f;  // @SECOND
        }
    """)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = launch(src, {}, {"out": ((1,), "float32")}, grid=(8, 1, 1), tg=(8, 1, 1))
    assert [f.severity for f in res.findings] == [Severity.NOTE, Severity.NOTE]
    assert {f.pos.line for f in res.findings} == {line_of(src, "@FIRST"), line_of(src, "@SECOND")}


def test_different_values_are_an_error() -> None:
    src = kernel("""
        out[0] = thread_position_in_grid.x;  // @STORE
    """)
    found = findings_of(src, {}, COUNTER, grid=(8, 1, 1), tg=(8, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@STORE"), t1(0, 8), "out", 0)
    assert f.severity == Severity.ERROR and "same value" not in f.message


def test_negative_zero_is_not_the_same_value() -> None:
    # The comparison is bit for bit: 0.0 and -0.0 differ in memory.
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[0] = (i % 2 == 0) ? 0.0f : -0.0f;
    """)
    found = findings_of(src, {}, {"out": ((1,), "float32")}, grid=(8, 1, 1), tg=(8, 1, 1))
    assert [f.severity for f in found] == [Severity.ERROR]


def test_same_value_in_threadgroup_memory_is_a_note() -> None:
    src = kernel("""
        uint i = thread_position_in_threadgroup.x;
        threadgroup float flag[1];
        flag[0] = 1.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[i] = flag[0];
    """)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = launch(src, {}, {"out": ((8,), "float32")}, grid=(8, 1, 1), tg=(8, 1, 1))
    assert [(f.buffer, f.severity) for f in res.findings] == [("flag", Severity.NOTE)]


def test_notes_do_not_hide_an_error_at_the_same_place() -> None:
    src = kernel("""
        uint i = thread_position_in_grid.x;
        for (int r = 0; r < 2; ++r) {
            out[0] = r == 0 ? 7u : i;  // @STORE
        }
    """)
    with pytest.raises(SanitizerError) as info:
        launch(src, {}, COUNTER, grid=(8, 1, 1), tg=(8, 1, 1))
    severities = [f.severity for f in info.value.findings]
    assert severities[0] == Severity.ERROR and Severity.NOTE in severities


# ------------------------------------------------------------------ bytes of a word


def test_threads_writing_different_bytes_of_a_word_do_not_race() -> None:
    src = kernel("""
        uint i = thread_position_in_grid.x;
        device uchar* bytes = (device uchar*)out;
        bytes[i] = uchar(16 * i + 1);
    """)
    res = clean(src, {}, {"out": ((2,), "uint32")}, grid=(8, 1, 1), tg=(8, 1, 1), init_value=None)
    assert res.outputs[0].tolist() == [0x31211101, 0x71615141]


def test_a_word_store_over_another_threads_byte_races() -> None:
    src = kernel("""
        uint i = thread_position_in_grid.x;
        device uchar* bytes = (device uchar*)out;
        bytes[i] = uchar(i);  // @BYTE
        if (i == 7) {
            out[0] = 3u;  // @WORD
        }
    """)
    found = findings_of(src, {}, {"out": ((2,), "uint32")}, grid=(8, 1, 1), tg=(8, 1, 1))
    f = expect_one_kind(found, RACE, line_of(src, "@WORD"), t1(7, 8), "out", 0)
    check_race(f, "write-after-write", line_of(src, "@BYTE"), t1(0, 8))


def test_half_written_output_word_is_reported_unwritten() -> None:
    # Only the low half of the second word is written: the element is still not (fully) written.
    src = kernel("""
        uint i = thread_position_in_grid.x;
        device ushort* halves = (device ushort*)out;
        halves[i] = ushort(i);
    """)
    found = findings_of(src, {}, {"out": ((2,), "uint32")}, grid=(3, 1, 1), tg=(3, 1, 1), init_value=None)
    (f,) = found
    assert f.kind == "unwritten-output" and f.index == 1 and f.count == 1


def test_reading_a_byte_nobody_wrote_is_uninitialised() -> None:
    src = kernel("""
        uint i = thread_position_in_threadgroup.x;
        threadgroup uint word[1];
        threadgroup uchar* bytes = (threadgroup uchar*)word;
        if (i < 3) {
            bytes[i] = uchar(i + 1);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[i] = float(bytes[i]);  // @READ
    """)
    found = findings_of(src, {}, {"out": ((4,), "float32")}, grid=(4, 1, 1), tg=(4, 1, 1))
    f = expect_one_kind(found, "uninitialized-read", line_of(src, "@READ"), t1(3, 4), "word", 0)
    assert "word[0]" in f.message


def test_uniform_byte_views_of_distinct_words_are_silent() -> None:
    res = clean(kernel("""
        uint i = thread_position_in_grid.x;
        device uchar* bytes = (device uchar*)out;
        bytes[4 * i + 3] = uchar(0x80);
        bytes[4 * i] = uchar(i);
        bytes[4 * i + 1] = 0;
        bytes[4 * i + 2] = 0;
    """), {}, {"out": ((4,), "uint32")}, grid=(4, 1, 1), tg=(4, 1, 1), init_value=None)
    assert res.outputs[0].tolist() == [0x80000000 + i for i in range(4)]


def test_float_buffer_read_through_a_uint_view_is_counted_per_view_element() -> None:
    res = clean(kernel("""
        uint i = thread_position_in_grid.x;
        const device uint* bits = (const device uint*)a;
        out[i] = float(bits[i] >> 31);
    """), {"a": f32([1.0, -2.0, 0.0, -0.0, 3.0, -1.0, 5.0, 6.0])}, grid=(8, 1, 1), tg=(8, 1, 1))
    assert res.outputs[0].tolist() == [0, 1, 0, 1, 0, 1, 0, 0]
    assert res.counts.max()["global_reads"] == 1
