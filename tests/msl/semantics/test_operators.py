"""C operators: precedence, associativity, integer division, shifts, bitwise ops, compound
assignment with implicit narrowing, increments, the comma operator, short-circuiting and
the conditional operator.

Integer results are reproduced with explicit two's-complement arithmetic in Python
(`wrap32`, `c_div`, `c_rem`); none of them come from the simulator.
"""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import one, run


def wrap32(x: int) -> int:
    """Reduce a Python int to a signed 32-bit value (two's complement)."""
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def c_div(a: int, b: int) -> int:
    """C integer division: the quotient truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_rem(a: int, b: int) -> int:
    """C remainder: a - b * (a / b), so it has the sign of the dividend."""
    return a - b * c_div(a, b)


# ------------------------------------------------------------- precedence (int)

INT_EXPRS = [
    ("2 + 3 * 4", 14),
    ("(2 + 3) * 4", 20),
    ("10 - 4 - 3", 3),
    ("64 / 4 / 2", 8),
    ("10 % 3 * 2", 2),
    ("2 * 10 % 3", 2),
    ("1 << 2 + 1", 8),
    ("(1 << 2) + 1", 5),
    ("100 >> 2 >> 1", 12),
    ("6 & 3 == 3", 0),
    ("6 & 3 ^ 1", 3),
    ("1 | 2 ^ 3 & 4", 3),
    ("3 > 2 > 1", 0),
    ("1 < 2 == 1", 1),
    ("2 + 3 > 4 && 0", 0),
    ("0 || 3", 1),
    ("1 ? 2 : 3 ? 4 : 5", 2),
    ("0 ? 2 : 0 ? 4 : 5", 5),
    ("5 - -3", 8),
    ("-(-3)", 3),
    ("+4", 4),
    ("!5", 0),
    ("!0", 1),
    ("!!7", 1),
    ("~0", -1),
    ("~5", -6),
    ("-1 & 0xFF", 255),
    ("5 ^ -1", -6),
    ("-8 | 3", -5),
    ("-8 >> 1", -4),
    ("1 << 31", -2147483648),
    ("-2147483647 - 1", -2147483648),
    ("-7 / 2", -3),
    ("-7 % 2", -1),
    ("7 / -2", -3),
    ("7 % -2", 1),
    ("-7 % -2", -1),
    ("(1, 2)", 2),
    ("1 + 2 * 3 - 4 / 2 % 3", 5),
    ("3 & 5 | 8", 9),
    ("(int)(~0u << 4)", -16),
]


@pytest.mark.parametrize(("expr", "expected"), INT_EXPRS)
def test_int_expression(expr: str, expected: int) -> None:
    """The expression evaluates with C precedence, associativity and int semantics."""
    assert one(f"int r = {expr}; out[0] = r;", "int32") == expected


UINT_EXPRS = [
    ("0u - 1u", 4294967295),
    ("~0u", 4294967295),
    ("-1u", 4294967295),
    ("0xFFFFFFFFu + 2u", 1),
    ("65536u * 65536u", 0),
    ("7u / 2u", 3),
    ("-7 / 2u", 2147483644),
    ("-7 % 2u", 1),
    ("0x80000000u >> 31", 1),
    ("(uint)-8 >> 1", 2147483644),
    ("1u << 31", 2147483648),
    ("3000000000u + 3000000000u", 1705032704),
    ("5u - 7", 4294967294),
]


@pytest.mark.parametrize(("expr", "expected"), UINT_EXPRS)
def test_uint_expression(expr: str, expected: int) -> None:
    """Unsigned arithmetic wraps modulo 2**32; mixed int/uint converts to uint."""
    assert one(f"uint r = {expr}; out[0] = r;", "uint32") == expected


FLOAT_EXPRS = [
    ("7 / 2.0f", np.float32(3.5)),
    ("1.0f / 3.0f", np.float32(1.0) / np.float32(3.0)),
    ("-7.5f / 2", np.float32(-3.75)),
    ("2.0f * 3 + 1", np.float32(7.0)),
    ("1e8f + 1.0f - 1e8f", np.float32(0.0)),
    ("0.1f + 0.2f", np.float32(0.1) + np.float32(0.2)),
    ("-0.0f + 0.0f", np.float32(0.0)),
]


@pytest.mark.parametrize(("expr", "expected"), FLOAT_EXPRS)
def test_float_expression(expr: str, expected: np.float32) -> None:
    """Float expressions round to float32 after each operation."""
    assert one(f"float r = {expr}; out[0] = r;") == expected


# ------------------------------------------------------- division on run-time values

DIV_PAIRS = [(-7, 2), (7, -2), (-7, -2), (7, 2), (-1, 3), (0, -5), (-2147483647, 10), (9, 9)]


@pytest.mark.parametrize(("a", "b"), DIV_PAIRS)
def test_division_and_remainder_truncate(a: int, b: int) -> None:
    """Quotient truncates toward zero and (a / b) * b + a % b == a, on values from a buffer."""
    src = "out[0] = a[0] / a[1]; out[1] = a[0] % a[1];"
    res = run(src, inputs={"a": np.array([a, b], dtype=np.int32)}, out=((2,), "int32"))
    assert res.outputs[0].tolist() == [c_div(a, b), c_rem(a, b)]


# --------------------------------------------------------------------- shifts

SHIFT_CASES = [(1, 0), (1, 5), (-8, 2), (-1, 31), (0x40000000, 1), (12345, 7), (-12345, 3)]


@pytest.mark.parametrize(("x", "s"), SHIFT_CASES)
def test_signed_shifts(x: int, s: int) -> None:
    """<< keeps the low 32 bits; >> on a negative int is arithmetic (sign-filling)."""
    src = "int x = a[0]; int s = a[1]; out[0] = x << s; out[1] = x >> s;"
    res = run(src, inputs={"a": np.array([x, s], dtype=np.int32)}, out=((2,), "int32"))
    assert res.outputs[0].tolist() == [wrap32(x << s), x >> s]


@pytest.mark.parametrize(("x", "s"), [(0x80000000, 31), (0xFFFFFFFF, 4), (3, 30), (0xDEADBEEF, 16)])
def test_unsigned_shifts(x: int, s: int) -> None:
    """Shifts on uint are logical and wrap at 32 bits."""
    src = "uint x = a[0]; uint s = a[1]; out[0] = x << s; out[1] = x >> s;"
    res = run(src, inputs={"a": np.array([x, s], dtype=np.uint32)}, out=((2,), "uint32"))
    assert res.outputs[0].tolist() == [(x << s) & 0xFFFFFFFF, x >> s]


def test_shift_of_uchar_promotes_to_int() -> None:
    """uchar 200 << 2 is computed in int: 800."""
    assert one("uchar c = 200; out[0] = c << 2;", "int32") == 800


# ------------------------------------------------------------------- bitwise

BIT_CASES = [(-1, 0xFF), (-8, 3), (0x12345678, -0x10), (-100, -7), (0, -1)]


@pytest.mark.parametrize(("x", "y"), BIT_CASES)
def test_bitwise_on_signed(x: int, y: int) -> None:
    """&, |, ^ and ~ act on the two's-complement bits of signed ints."""
    src = "int x = a[0]; int y = a[1]; out[0] = x & y; out[1] = x | y; out[2] = x ^ y; out[3] = ~x;"
    res = run(src, inputs={"a": np.array([x, y], dtype=np.int32)}, out=((4,), "int32"))
    assert res.outputs[0].tolist() == [wrap32(x & y), wrap32(x | y), wrap32(x ^ y), wrap32(~x)]


# ------------------------------------------------------------ compound assignment

COMPOUND = [
    ("+=", 13, 4, 17),
    ("-=", 13, 4, 9),
    ("*=", 13, 4, 52),
    ("/=", 13, 4, 3),
    ("%=", 13, 4, 1),
    ("<<=", 13, 4, 208),
    (">>=", 13, 2, 3),
    ("&=", 13, 4, 4),
    ("|=", 13, 4, 13),
    ("^=", 13, 4, 9),
    ("/=", -13, 4, -3),
    ("%=", -13, 4, -1),
    (">>=", -13, 1, -7),
]


@pytest.mark.parametrize(("op", "x", "y", "expected"), COMPOUND)
def test_compound_assignment_int(op: str, x: int, y: int, expected: int) -> None:
    """Each compound operator applies the binary operator and assigns."""
    assert one(f"int x = {x}; x {op} {y}; out[0] = x;", "int32") == expected


NARROWING = [
    ("uchar c = 250; c += 10; out[0] = c;", 4),
    ("char c = 120; c += 10; out[0] = c;", -126),
    ("ushort s = 0; s -= 1; out[0] = s;", 65535),
    ("short s = 32767; s++; out[0] = s;", -32768),
    ("uchar c = 0; c--; out[0] = c;", 255),
    ("uchar c = 16; c *= 16; out[0] = c;", 0),
    ("int k = 3; k *= 2.5f; out[0] = k;", 7),
    ("int k = 10; k /= 4.0f; out[0] = k;", 2),
    ("int k = -10; k += 0.5f; out[0] = k;", -9),
    ("uint u = 5; u -= 6; out[0] = u;", -1),
    ("uchar c = 255; c <<= 1; out[0] = c;", 254),
]


@pytest.mark.parametrize(("body", "expected"), NARROWING)
def test_compound_assignment_converts_back_to_left_type(body: str, expected: int) -> None:
    """x op= y computes in the promoted type, then converts to x's type (wrapping/truncating)."""
    assert one(body, "int32") == expected


def test_compound_assignment_float_absorbs_tiny_increment() -> None:
    """1.0f + 1e-8f rounds back to 1.0f in float32."""
    assert one("float f = 1.0f; f += 1e-8f; out[0] = f;") == 1.0


def test_compound_assignment_on_half_rounds_to_half() -> None:
    """2048 + 1 is not representable in half; it rounds (to even) to 2048."""
    assert one("half h = 2048; h += 1; out[0] = h;") == 2048.0


# -------------------------------------------------------------- increments


def test_post_and_pre_increment_values() -> None:
    """a++ yields the old value, ++a the new one."""
    body = "int a = 5; int b = a++; int c = ++a; out[0] = a; out[1] = b; out[2] = c;"
    assert run(body, out=((3,), "int32")).outputs[0].tolist() == [7, 5, 7]


def test_post_and_pre_decrement_values() -> None:
    """a-- yields the old value, --a the new one."""
    body = "int a = 5; int b = a--; int c = --a; out[0] = a; out[1] = b; out[2] = c;"
    assert run(body, out=((3,), "int32")).outputs[0].tolist() == [3, 5, 3]


def test_increment_float() -> None:
    """++ works on floats: 0.5 -> 1.5."""
    assert one("float f = 0.5f; f++; out[0] = f;") == 1.5


def test_post_increment_as_array_index() -> None:
    """out[k++] writes at the old k and then advances it."""
    body = "int k = 0; out[k++] = 10; out[k++] = 20; out[k] = k;"
    assert run(body, out=((3,), "int32")).outputs[0].tolist() == [10, 20, 2]


# ---------------------------------------------------------- assignment, comma


def test_chained_assignment_is_right_associative() -> None:
    """x = y = 3 assigns 3 to both."""
    body = "int x; int y; x = y = 3; out[0] = x; out[1] = y;"
    assert run(body, out=((2,), "int32")).outputs[0].tolist() == [3, 3]


def test_comma_operator_evaluates_left_then_yields_right() -> None:
    """(a += 2, a * 10) runs a += 2 first and yields 20."""
    assert one("int a = 0; int b = (a += 2, a * 10); out[0] = b + a;", "int32") == 22


def test_assignment_expression_value() -> None:
    """The value of (x = 5) is 5."""
    assert one("int x; int y = (x = 5) + 1; out[0] = x * 10 + y;", "int32") == 56


# --------------------------------------------------------------- short-circuit


def test_and_does_not_evaluate_right_side_when_left_false() -> None:
    """false && (side effect) skips the side effect."""
    body = "int calls = 0; bool r = (calls > 5) && ((calls += 1) > 0); out[0] = calls; out[1] = r;"
    assert run(body, out=((2,), "int32")).outputs[0].tolist() == [0, 0]


def test_or_does_not_evaluate_right_side_when_left_true() -> None:
    """true || (side effect) skips the side effect."""
    body = "int calls = 0; bool r = (calls == 0) || ((calls += 1) > 0); out[0] = calls; out[1] = r;"
    assert run(body, out=((2,), "int32")).outputs[0].tolist() == [0, 1]


def test_and_evaluates_right_side_when_left_true() -> None:
    """true && (side effect) does run it."""
    body = "int calls = 0; bool r = (calls == 0) && ((calls += 1) > 0); out[0] = calls; out[1] = r;"
    assert run(body, out=((2,), "int32")).outputs[0].tolist() == [1, 1]


def test_short_circuit_is_per_thread() -> None:
    """Each thread skips the right side on its own: only odd threads increment."""
    src = """
    uint i = thread_position_in_grid.x;
    int c = 0;
    bool r = (i % 2 == 1) && ((c += 1) > 0);
    out[i] = c * 10 + (r ? 1 : 0);
    """
    res = run(src, out=((6,), "int32"), grid=(6, 1, 1))
    assert res.outputs[0].tolist() == [0, 11, 0, 11, 0, 11]


def test_guard_does_not_read_out_of_bounds() -> None:
    """`i < n && a[i] > 0`: threads past n never read a[i] (counts show zero reads)."""
    src = """
    uint i = thread_position_in_grid.x;
    int r = 0;
    if (i < 4 && a[i] > 0) { r = 1; }
    out[i] = r;
    """
    a = np.array([1.0, -1.0, 2.0, 0.0], dtype=np.float32)
    res = run(src, inputs={"a": a}, out=((8,), "int32"), grid=(8, 1, 1))
    assert res.outputs[0].tolist() == [1, 0, 1, 0, 0, 0, 0, 0]
    assert res.counts.global_reads.tolist() == [1, 1, 1, 1, 0, 0, 0, 0]


def test_or_guard_does_not_read_out_of_bounds() -> None:
    """`i >= n || a[i] < 0`: the right side is skipped when i >= n."""
    src = """
    uint i = thread_position_in_grid.x;
    out[i] = (i >= 4 || a[i] < 0) ? 1 : 0;
    """
    a = np.array([1.0, -1.0, 2.0, 0.0], dtype=np.float32)
    res = run(src, inputs={"a": a}, out=((6,), "int32"), grid=(6, 1, 1))
    assert res.outputs[0].tolist() == [0, 1, 0, 0, 1, 1]
    assert res.counts.global_reads.tolist() == [1, 1, 1, 1, 0, 0]


# ------------------------------------------------------------------ ternary


def test_ternary_mixed_int_float_is_float() -> None:
    """c ? 1 : 2.5f has type float; the taken branch converts: 1.0."""
    assert one("bool c = true; float r = c ? 1 : 2.5f; out[0] = r;") == 1.0


def test_ternary_int_and_uint_is_uint() -> None:
    """true ? -1 : 1u has type uint, so -1 becomes 4294967295 before widening to long."""
    assert one("bool c = true; long r = c ? -1 : 1u; out[0] = r;", "int64") == 4294967295


def test_ternary_evaluates_only_taken_branch() -> None:
    """Only the selected operand's side effect happens."""
    body = "int x = 0; int y = 0; bool c = false; int r = c ? x++ : y++; out[0] = x; out[1] = y; out[2] = r;"
    assert run(body, out=((3,), "int32")).outputs[0].tolist() == [0, 1, 0]


def test_ternary_per_thread_reads_only_selected_buffer() -> None:
    """Each thread reads a or b, never both."""
    src = """
    uint i = thread_position_in_grid.x;
    out[i] = (i < 2) ? a[i] : b[i];
    """
    a = np.arange(4, dtype=np.float32)
    b = np.arange(4, dtype=np.float32) + 10
    res = run(src, inputs={"a": a, "b": b}, out=((4,), "float32"), grid=(4, 1, 1))
    assert res.outputs[0].tolist() == [0.0, 1.0, 12.0, 13.0]
    assert res.counts.global_reads.tolist() == [1, 1, 1, 1]


def test_ternary_as_lvalue_free_nested_in_expression() -> None:
    """A conditional inside arithmetic: 1 + (c ? 10 : 20) * 2."""
    assert one("bool c = false; out[0] = 1 + (c ? 10 : 20) * 2;", "int32") == 41


# ------------------------------------------------------------------ NaN and zero


def test_nan_comparisons() -> None:
    """NaN compares unequal to everything, itself included; != is true."""
    src = """
    float n = a[0];
    out[0] = n == n; out[1] = n != n; out[2] = n < 1.0f; out[3] = n >= 1.0f;
    """
    res = run(src, inputs={"a": np.array([np.nan], dtype=np.float32)}, out=((4,), "int32"))
    assert res.outputs[0].tolist() == [0, 1, 0, 0]


def test_negative_zero_equals_zero() -> None:
    """-0.0f == 0.0f is true."""
    assert one("float z = -0.0f; out[0] = (z == 0.0f) ? 1 : 0;", "int32") == 1


def test_float_division_by_zero_is_infinite() -> None:
    """1.0f / 0.0f is +inf and -1.0f / 0.0f is -inf (IEEE)."""
    src = "float z = a[0]; out[0] = 1.0f / z; out[1] = -1.0f / z;"
    res = run(src, inputs={"a": np.array([0.0], dtype=np.float32)}, out=((2,), "float32"))
    assert res.outputs[0].tolist() == [np.inf, -np.inf]
