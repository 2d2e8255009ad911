"""Planted outputs with elements no thread writes, when there is no ``init_value`` (a GPU would
leave garbage there). The finding names the output and its first unwritten element; there is no
single offending thread or line, so those are not asserted."""

from __future__ import annotations

import numpy as np

from .conftest import clean, expect_one_kind, f32, findings_of, kernel

UNWRITTEN = "unwritten-output"


def test_grid_one_thread_short() -> None:
    """A grid of 7 threads for 8 outputs leaves out[7] unwritten."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[i] = a[i] + 1.0f;
    """)
    found = findings_of(src, {"a": f32(np.arange(8))}, {"out": ((8,), "float32")},
                        grid=(7, 1, 1), tg=(4, 1, 1), init_value=None)
    expect_one_kind(found, UNWRITTEN, None, None, "out", 7)


def test_off_by_one_guard_across_threadgroups() -> None:
    """`if (i < n - 1)` instead of `i < n` leaves the last element (9) unwritten."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        if (i < n - 1) {
            out[i] = a[i] * 3.0f;
        }
    """)
    found = findings_of(src, {"a": f32(np.arange(16)), "n": np.int32(10)},
                        {"out": ((10,), "float32")}, grid=(16, 1, 1), tg=(8, 1, 1),
                        init_value=None)
    expect_one_kind(found, UNWRITTEN, None, None, "out", 9)


def test_2d_grid_misses_last_column() -> None:
    """A (4, 4) grid for a (4, 5) output never writes column 4: first unwritten element is 4."""
    src = kernel("""
        uint x = thread_position_in_grid.x;
        uint y = thread_position_in_grid.y;
        out[y * 5 + x] = a[y * 5 + x];
    """)
    found = findings_of(src, {"a": f32(np.arange(20))}, {"out": ((4, 5), "float32")},
                        grid=(4, 4, 1), tg=(2, 2, 1), init_value=None)
    expect_one_kind(found, UNWRITTEN, None, None, "out", 4)


def test_second_output_never_written() -> None:
    """Two outputs, and the kernel only ever writes the first: the finding names `out2`."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[i] = a[i];
    """)
    found = findings_of(src, {"a": f32(np.arange(8))},
                        {"out": ((8,), "float32"), "out2": ((8,), "float32")},
                        grid=(8, 1, 1), tg=(8, 1, 1), init_value=None)
    expect_one_kind(found, UNWRITTEN, None, None, "out2", 0)


def test_grid_stride_loop_stops_one_early() -> None:
    """A grid-stride loop bounded by `n - 1` skips the last element (19) in a loop, not a guard."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        uint stride = threads_per_grid.x;
        for (uint k = i; k < 19; k += stride) {
            out[k] = a[k] - 1.0f;
        }
    """)
    found = findings_of(src, {"a": f32(np.arange(20))}, {"out": ((20,), "float32")},
                        grid=(8, 1, 1), tg=(4, 1, 1), init_value=None)
    expect_one_kind(found, UNWRITTEN, None, None, "out", 19)


def test_write_only_in_branch_some_threads_skip() -> None:
    """Writes only where the input is positive: element 3 (the first non-positive) stays unwritten."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        if (a[i] > 0.0f) {
            out[i] = sqrt(a[i]);
        }
    """)
    a = f32([1, 4, 9, -1, 16, 0, 25, 36])
    found = findings_of(src, {"a": a}, grid=(8, 1, 1), tg=(4, 1, 1), init_value=None)
    expect_one_kind(found, UNWRITTEN, None, None, "out", 3)


def test_init_value_makes_unwritten_elements_fine() -> None:
    """The same kernel with init_value=0 is correct: the skipped elements hold the fill value."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        if (a[i] > 0.0f) {
            out[i] = sqrt(a[i]);
        }
    """)
    a = f32([1, 4, 9, -1, 16, 0, 25, 36])
    res = clean(src, {"a": a}, grid=(8, 1, 1), tg=(4, 1, 1), init_value=0)
    np.testing.assert_array_equal(res.outputs[0], f32([1, 2, 3, 0, 4, 0, 5, 6]))


def test_every_other_element_unwritten_message_names_output() -> None:
    """Odd elements are skipped: the first unwritten one is 1 and the message names `out`."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        if (i % 2 == 0) {
            out[i] = 1.0f;
        }
    """)
    found = findings_of(src, {}, {"out": ((6,), "float32")}, grid=(6, 1, 1), tg=(3, 1, 1),
                        init_value=None)
    f = expect_one_kind(found, UNWRITTEN, None, None, "out", 1)
    assert "out" in f.message
