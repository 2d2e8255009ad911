"""Planted integer divisions and remainders by zero (signed and unsigned, `/` and `%`), in 1D
and 2D grids, in branches, loops and header helpers. Float division by zero is IEEE (inf/nan)
and is not a finding; that is covered in test_no_false_alarms."""

from __future__ import annotations

import numpy as np

from .conftest import ANY, clean, expect_one_kind, findings_of, i32, kernel, line_of, t1, t2

DIV0 = "division-by-zero"


def test_signed_division_by_data_zero() -> None:
    """An element-wise integer quotient: b[5] is 0, so thread 5 (threadgroup 1) divides by zero."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[i] = a[i] / b[i];  // @BUG
    """)
    b = i32([1, 2, 3, 4, 5, 0, 7, 8])
    found = findings_of(src, {"a": i32(np.arange(8) * 10), "b": b}, {"out": ((8,), "int32")},
                        grid=(8, 1, 1), tg=(4, 1, 1))
    expect_one_kind(found, DIV0, line_of(src, "@BUG"), t1(5, 4), ANY, ANY)


def test_remainder_in_loop_2d_zero_window() -> None:
    """A per-row window width read from the input is 0 for row 2: the `%` in the loop divides
    by zero in every thread of that row; the first in launch order is (0, 2) of threadgroup (0, 1)."""
    src = kernel("""
        uint x = thread_position_in_grid.x;
        uint y = thread_position_in_grid.y;
        int w = widths[y];
        int acc = 0;
        for (int k = 0; k < 4; k++) {
            acc += (int(x) + k) % w;  // @BUG
        }
        out[y * 4 + x] = acc;
    """)
    found = findings_of(src, {"widths": i32([3, 2, 0, 5, 1, 4, 2, 2])}, {"out": ((4, 4), "int32")},
                        grid=(4, 4, 1), tg=(2, 2, 1))
    expect_one_kind(found, DIV0, line_of(src, "@BUG"), t2(0, 2, (2, 2)), ANY, ANY)


def test_unsigned_division_in_branch() -> None:
    """`100u / (i - 3)` in a branch only some threads take: thread 3 takes it and divides by 0."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        if (flags[i] != 0) {
            out[i] = 100u / (i - 3u);  // @BUG
        }
    """)
    flags = i32([1, 0, 1, 1, 0, 1, 1, 1])
    found = findings_of(src, {"flags": flags}, {"out": ((8,), "uint32")},
                        grid=(8, 1, 1), tg=(2, 1, 1))
    expect_one_kind(found, DIV0, line_of(src, "@BUG"), t1(3, 2), ANY, ANY)


def test_not_taken_branch_does_not_divide() -> None:
    """Same kernel, but thread 3 does not take the branch: no division by zero happens, so
    nothing may be reported (masked-off lanes must not evaluate the division)."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        if (flags[i] != 0) {
            out[i] = 100u / (i - 3u);
        }
    """)
    flags = i32([1, 0, 1, 0, 0, 1, 1, 1])
    res = clean(src, {"flags": flags}, {"out": ((8,), "uint32")}, grid=(8, 1, 1), tg=(2, 1, 1))
    assert res.outputs[0][4] == 0 and res.outputs[0][5] == 50


def test_ceil_div_helper_in_header_with_zero_tile() -> None:
    """A ceil-division helper in the header called with a tile size of 0 from the input: the
    finding points at the header line doing the division."""
    header = kernel("""
        inline int ceil_div(int n, int d) {
            return (n + d - 1) / d;  // @BUG
        }
    """)
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[i] = ceil_div(n[i], tile);
    """)
    found = findings_of(src, {"n": i32(np.arange(8) + 5), "tile": np.int32(0)},
                        {"out": ((8,), "int32")}, grid=(8, 1, 1), tg=(8, 1, 1), header=header)
    expect_one_kind(found, DIV0, line_of(header, "@BUG"), t1(0, 8), ANY, ANY, file="header")


def test_compound_remainder_assignment_long() -> None:
    """`%=` on a 64-bit integer by a zero from the data (thread 6 of threadgroup 1)."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        long v = long(a[i]) * 1000;
        v %= long(m[i]);  // @BUG
        out[i] = int(v);
    """)
    m = i32([7, 7, 7, 7, 7, 7, 0, 7])
    found = findings_of(src, {"a": i32(np.arange(8)), "m": m}, {"out": ((8,), "int32")},
                        grid=(8, 1, 1), tg=(5, 1, 1))
    expect_one_kind(found, DIV0, line_of(src, "@BUG"), t1(6, 5), ANY, ANY)


def test_vector_division_with_one_zero_lane() -> None:
    """An int2 division whose second component's divisor is i - 3: thread 3 divides by zero."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        int2 v = int2(int(i), 12) / int2(2, int(i) - 3);  // @BUG
        out[i] = v.x + v.y;
    """)
    found = findings_of(src, {}, {"out": ((8,), "int32")}, grid=(8, 1, 1), tg=(4, 1, 1))
    expect_one_kind(found, DIV0, line_of(src, "@BUG"), t1(3, 4), ANY, ANY)
