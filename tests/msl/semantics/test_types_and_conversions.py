"""Scalar types, integer promotions, the usual arithmetic conversions and casts.

Expected values follow C++14 rules (MSL is C++14-based) and are worked out by hand in the
comments; NumPy only supplies IEEE float32/float16 rounding where a float constant is needed.
"""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import one, out0

# --------------------------------------------------------------------------- promotions


def test_uchar_plus_uchar_is_int() -> None:
    """uchar + uchar promotes both to int, so 200 + 100 is 300, not 44."""
    assert one("uchar a = 200; uchar b = 100; out[0] = a + b;", "int32") == 300


def test_uchar_sum_stored_back_to_uchar_wraps() -> None:
    """Storing the int 300 into a uchar keeps the low 8 bits: 44."""
    assert one("uchar a = 200; uchar b = 100; uchar c = a + b; out[0] = c;", "int32") == 44


def test_promoted_uchar_sum_compares_above_255() -> None:
    """The comparison happens in int, so (a + b) > 255 is true for 200 + 100."""
    body = "uchar a = 200; uchar b = 100; out[0] = (a + b) > 255 ? 1 : 0;"
    assert one(body, "int32") == 1


def test_ushort_max_plus_one_is_int_65536() -> None:
    """ushort promotes to int: 65535 + 1 == 65536."""
    assert one("ushort a = 65535; out[0] = a + 1;", "int32") == 65536


def test_ushort_assignment_wraps_to_zero() -> None:
    """Assigning 65536 back to a ushort wraps to 0."""
    assert one("ushort a = 65535; a = a + 1; out[0] = a;", "int32") == 0


def test_char_minus_one_widens_with_sign() -> None:
    """char is signed in MSL: -1 widened to int stays -1."""
    assert one("char c = -1; out[0] = c;", "int32") == -1


def test_char_to_uchar_reinterprets_modulo_256() -> None:
    """Converting -1 to uchar gives 255."""
    assert one("char c = -1; uchar u = c; out[0] = u;", "int32") == 255


def test_short_to_ushort_modulo_65536() -> None:
    """Converting -2 to ushort gives 65534."""
    assert one("short s = -2; ushort u = s; out[0] = u;", "int32") == 65534


def test_char_literal_arithmetic() -> None:
    """'A' is 65; adding 1 promotes to int: 66."""
    assert one("char c = 'A'; out[0] = c + 1;", "int32") == 66


# ------------------------------------------------------- usual arithmetic conversions


def test_int_minus_one_less_than_uint_one_is_false() -> None:
    """int vs uint compares in uint: -1 becomes 4294967295, so -1 < 1u is false."""
    assert one("int a = -1; uint b = 1; out[0] = a < b;", "int32") == 0


def test_int_plus_uint_is_uint() -> None:
    """-1 + 1u is computed in uint: 0; -1 * 1u is 4294967295."""
    assert one("int a = -1; uint b = 1; out[0] = a + b;", "uint32") == 0
    assert one("int a = -1; uint b = 1; out[0] = a * b;", "uint32") == 4294967295


def test_negative_int_divided_by_uint() -> None:
    """-7 / 2u divides 4294967289 by 2 in uint: 2147483644."""
    assert one("int a = -7; uint b = 2; out[0] = a / b;", "uint32") == 2147483644


def test_negative_int_modulo_uint() -> None:
    """-7 % 2u is 4294967289 % 2 = 1."""
    assert one("int a = -7; uint b = 2; out[0] = a % b;", "uint32") == 1


def test_short_vs_uint_compares_unsigned() -> None:
    """short promotes to int, then int meets uint: -1 < 1u is false."""
    assert one("short s = -1; uint u = 1; out[0] = s < u;", "int32") == 0


def test_ushort_vs_int_compares_signed() -> None:
    """ushort promotes to int (not unsigned): -1 < (ushort)1 is true."""
    assert one("ushort s = 1; int i = -1; out[0] = i < s;", "int32") == 1


def test_long_vs_uint_compares_signed() -> None:
    """long (64-bit) holds every uint, so uint converts to long: -1L < 1u is true."""
    assert one("long a = -1; uint b = 1; out[0] = a < b;", "int32") == 1


def test_long_vs_ulong_compares_unsigned() -> None:
    """Same rank, one unsigned: both become ulong, so -1L < 1UL is false."""
    assert one("long a = -1; ulong b = 1; out[0] = a < b;", "int32") == 0


def test_uint_widened_to_long_is_zero_extended() -> None:
    """4000000000u fits in long unchanged."""
    assert one("uint a = 4000000000u; long b = a; out[0] = b;", "int64") == 4000000000


def test_int_to_long_sign_extends_but_via_uint_does_not() -> None:
    """int -1 -> long is -1; int -1 -> uint -> long is 4294967295."""
    assert one("int a = -1; long b = a; out[0] = b;", "int64") == -1
    assert one("int a = -1; uint u = a; long c = u; out[0] = c;", "int64") == 4294967295


def test_uint_sum_wraps_before_widening() -> None:
    """0xFFFFFFFFu + 1 wraps in uint before the assignment widens it: 0."""
    assert one("uint a = 0xFFFFFFFF; ulong b = a + 1; out[0] = b;", "uint64") == 0


def test_cast_to_ulong_before_adding_does_not_wrap() -> None:
    """Widening first keeps the carry: 4294967296."""
    assert one("uint a = 0xFFFFFFFF; ulong b = (ulong)a + 1; out[0] = b;", "uint64") == 4294967296


def test_int_times_long_is_long() -> None:
    """Casting one operand to long makes the product 64-bit: 2e9 * 2 = 4e9."""
    assert one("int a = 2000000000; long b = (long)a * 2; out[0] = b;", "int64") == 4000000000


def test_large_integer_literal_is_long() -> None:
    """3000000000 does not fit int, so the literal has type long."""
    assert one("long x = 3000000000; out[0] = x;", "int64") == 3000000000


def test_int_equals_float_compares_as_float() -> None:
    """16777217 converts to float (16777216.0f) before ==, so they compare equal."""
    body = "int i = 16777217; float f = 16777216.0f; out[0] = (i == f) ? 1 : 0;"
    assert one(body, "int32") == 1


def test_integer_division_happens_before_float_multiply() -> None:
    """3 / 2 * 1.0f: the int division (1) happens first, then 1 * 1.0f = 1.0."""
    assert one("int i = 3; float f = 1.0f; out[0] = i / 2 * f;") == 1.0


def test_int_divided_by_float_is_float() -> None:
    """7 / 2.0f is a float division: 3.5."""
    assert one("int i = 7; out[0] = i / 2.0f;") == 3.5


def test_int_division_assigned_to_float_truncates_first() -> None:
    """float f = 7 / 2; is 3.0: the right side is int division."""
    assert one("float f = 7 / 2; out[0] = f;") == 3.0


def test_unary_minus_on_uint_then_to_float() -> None:
    """-3u is 4294967293u, which rounds to 4294967296.0f as a float."""
    assert one("uint u = 3; float f = -u; out[0] = f;") == np.float32(4294967293.0)


def test_negative_int_to_uint_is_modulo_2_32() -> None:
    """uint x = -1 gives 4294967295."""
    assert one("uint x = -1; out[0] = x;", "uint32") == 4294967295


def test_uint_max_to_int_is_minus_one() -> None:
    """int y = 4294967295u gives -1 (two's complement, as clang does)."""
    assert one("int y = 4294967295u; out[0] = y;", "int32") == -1


# ----------------------------------------------------------------------- bool


def test_bool_from_nonzero_int_is_true() -> None:
    """Any non-zero value converts to true, and true converts to 1."""
    assert one("bool b = 7; out[0] = b;", "int32") == 1


def test_bool_arithmetic_promotes_to_int() -> None:
    """true + true is the int 2."""
    assert one("bool t = true; out[0] = t + t;", "int32") == 2


def test_bool_from_float_fraction_is_true() -> None:
    """0.25f is non-zero, so it converts to true."""
    assert one("bool b = 0.25f; out[0] = b ? 1 : 0;", "int32") == 1


# ------------------------------------------------------------------- float <-> int


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("int(2.9f)", 2),
        ("int(-2.7f)", -2),
        ("(int)-0.5f", 0),
        ("static_cast<int>(-3.5f)", -3),
        ("int(-1.0f * 2.5f)", -2),
        ("(int)1e9f", 1000000000),
    ],
)
def test_float_to_int_truncates_toward_zero(expr: str, expected: int) -> None:
    """Float -> int conversion drops the fraction (rounds toward zero)."""
    assert one(f"out[0] = {expr};", "int32") == expected


def test_float_to_uint_truncates() -> None:
    """uint(3.99f) is 3."""
    assert one("out[0] = uint(3.99f);", "uint32") == 3


def test_implicit_float_to_int_assignment_truncates() -> None:
    """int i = -2.7f; is -2."""
    assert one("float f = -2.7f; int i = f; out[0] = i;", "int32") == -2


def test_int_to_float_rounds_to_nearest_even() -> None:
    """16777217 is not representable in float32: it rounds to 16777216."""
    assert one("int i = 16777217; float f = i; out[0] = f;") == 16777216.0
    assert one("int i = 16777219; float f = i; out[0] = f;") == 16777220.0


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("static_cast<uchar>(300)", 44),
        ("(uchar)-1", 255),
        ("(char)200", -56),
        ("(short)70000", 4464),
        ("(ushort)-1", 65535),
        ("uchar(511)", 255),
    ],
)
def test_integer_narrowing_casts_wrap(expr: str, expected: int) -> None:
    """Narrowing integer casts keep the low bits (two's complement)."""
    assert one(f"out[0] = {expr};", "int32") == expected


# ----------------------------------------------------------------------- as_type


def test_as_type_float_bits() -> None:
    """as_type<uint>(1.0f) is the IEEE pattern 0x3F800000."""
    assert one("out[0] = as_type<uint>(1.0f);", "uint32") == 0x3F800000


def test_as_type_bits_to_float() -> None:
    """0x40490FDB is float32 pi."""
    assert one("out[0] = as_type<float>(0x40490FDBu);") == np.float32(np.pi)


def test_as_type_negative_zero() -> None:
    """-0.0f has only the sign bit set: as int it is INT_MIN."""
    assert one("out[0] = as_type<int>(-0.0f);", "int32") == -2147483648


def test_as_type_half_bits() -> None:
    """half 1.0 is 0x3C00."""
    assert one("half h = 1.0h; out[0] = as_type<ushort>(h);", "int32") == 0x3C00


# ---------------------------------------------------------------------- literals


@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        ("0x10", 16),
        ("010", 8),
        ("0b101", 5),
        ("0x7fffffff", 2147483647),
        ("1000000", 1000000),
        ("'a'", 97),
        ("100u", 100),
        ("0XFF", 255),
    ],
)
def test_integer_literals(literal: str, expected: int) -> None:
    """Hex, octal, binary, char and suffixed literals have their C++ values."""
    assert one(f"out[0] = {literal};", "int32") == expected


@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        ("1e3f", 1000.0),
        ("1.5e-3f", np.float32(1.5e-3)),
        ("0.1f", np.float32(0.1)),
        ("2.f", 2.0),
        (".5f", 0.5),
        ("0.1", np.float32(0.1)),
        ("1.0h", 1.0),
    ],
)
def test_float_literals(literal: str, expected: float) -> None:
    """Float literals round to the float32 value; an unsuffixed literal stored to float is float(0.1)."""
    assert one(f"float f = {literal}; out[0] = f;") == np.float32(expected)


def test_auto_deduces_uint() -> None:
    """auto x = 0u; makes x a uint, so x - 1 wraps."""
    assert one("auto x = 0u; out[0] = x - 1;", "uint32") == 4294967295


# --------------------------------------------------------------------- sizeof


@pytest.mark.parametrize(
    ("ctype", "size"),
    [
        ("char", 1),
        ("bool", 1),
        ("short", 2),
        ("half", 2),
        ("int", 4),
        ("float", 4),
        ("long", 8),
        ("uint2", 8),
        ("float4", 16),
        ("float3", 16),
        ("int3", 16),
        ("half3", 8),
    ],
)
def test_sizeof(ctype: str, size: int) -> None:
    """sizeof follows MSL's table (3-vectors are padded to 4 components)."""
    assert one(f"out[0] = sizeof({ctype});", "int32") == size


# ---------------------------------------------------------------- buffer dtypes


def test_output_int8_store_wraps() -> None:
    """Storing 200 into a char (int8) output keeps the low byte: -56."""
    assert one("out[0] = 200;", "int8") == -56


def test_output_half_rounds_float_to_nearest_half() -> None:
    """0.1f stored into a half output is rounded to the nearest binary16 value."""
    assert one("out[0] = 0.1f;", "float16") == np.float16(np.float32(0.1))


def test_output_uint8_store_of_int() -> None:
    """Storing 257 into a uchar output gives 1."""
    assert one("out[0] = 257;", "uint8") == 1


def test_output_bool_store() -> None:
    """Storing 5 into a bool output gives true."""
    assert bool(one("out[0] = 5;", "bool")) is True


def test_input_int8_is_signed() -> None:
    """An int8 input of -5 reads as char -5 and promotes: -5 * 2 = -10."""
    a = np.array([-5], dtype=np.int8)
    assert one("out[0] = a[0] * 2;", "int32", inputs={"a": a}) == -10


def test_input_uint8_promotes_to_int() -> None:
    """A uint8 input of 250 plus 10 is 260 in int."""
    a = np.array([250], dtype=np.uint8)
    assert one("out[0] = a[0] + 10;", "int32", inputs={"a": a}) == 260


def test_input_uint16_and_int16() -> None:
    """uint16 65535 and int16 -32768 read back exactly and promote to int."""
    a = np.array([65535], dtype=np.uint16)
    b = np.array([-32768], dtype=np.int16)
    assert one("out[0] = a[0] + b[0];", "int32", inputs={"a": a, "b": b}) == 32767


def test_input_half_promotes_to_float_in_mixed_arithmetic() -> None:
    """half(0.1) * 2.0f is computed in float from the exact half value."""
    a = np.array([0.1], dtype=np.float16)
    got = one("out[0] = a[0] * 2.0f;", inputs={"a": a})
    assert got == np.float32(np.float16(0.1)) * np.float32(2.0)


def test_input_bool() -> None:
    """A bool input reads as true/false."""
    a = np.array([True, False, True, True, False, False, True, False])
    src = "uint i = thread_position_in_grid.x; out[i] = a[i] ? 10 : 20;"
    got = out0(src, inputs={"a": a}, out=((8,), "int32"), grid=(8, 1, 1))
    assert got.tolist() == [10 if v else 20 for v in a]


def test_input_int64_shift() -> None:
    """int64 inputs keep all 64 bits: (2**40 + 256) >> 8 == 2**32 + 1."""
    a = np.array([2**40 + 256], dtype=np.int64)
    assert one("out[0] = a[0] >> 8;", "int64", inputs={"a": a}) == 2**32 + 1


def test_input_uint64_wraps() -> None:
    """uint64 arithmetic wraps modulo 2**64."""
    a = np.array([2**64 - 1], dtype=np.uint64)
    assert one("out[0] = a[0] + 2;", "uint64", inputs={"a": a}) == 1


def test_input_int32_negative_division() -> None:
    """Values from a buffer divide with truncation too."""
    a = np.array([-9, 4], dtype=np.int32)
    assert one("out[0] = a[0] / a[1];", "int32", inputs={"a": a}) == -2


# ------------------------------------------------------------- learner pitfalls


def test_uint_thread_index_minus_constant_into_int() -> None:
    """uint i - 5 wraps in uint; converting the result to int gives i - 5 again (two's complement)."""
    src = "uint i = thread_position_in_grid.x; int j = i - 5; out[i] = j;"
    got = out0(src, out=((4,), "int32"), grid=(4, 1, 1))
    assert got.tolist() == [-5, -4, -3, -2]


def test_uint_thread_index_minus_constant_into_float() -> None:
    """float f = i - 5 with uint i converts the wrapped uint: 4294967291.. round to 2**32."""
    src = "uint i = thread_position_in_grid.x; float f = i - 5; out[i] = f;"
    got = out0(src, out=((2,), "float32"), grid=(2, 1, 1))
    assert got.tolist() == [float(np.float32(2**32 - 5)), float(np.float32(2**32 - 4))]


def test_uint_minus_one_is_never_negative() -> None:
    """`i - 1 >= 0` is always true for uint i (the comparison is unsigned)."""
    src = "uint i = thread_position_in_grid.x; out[i] = (i - 1 >= 0) ? 1 : 0;"
    assert out0(src, out=((3,), "int32"), grid=(3, 1, 1)).tolist() == [1, 1, 1]


def test_uint_divided_by_negative_int() -> None:
    """7u / -2: -2 becomes 4294967294u, so the quotient is 0."""
    assert one("uint a = 7; int b = -2; out[0] = a / b;", "int32") == 0


def test_uint_equals_minus_one() -> None:
    """0xFFFFFFFFu == -1 is true: -1 converts to uint."""
    assert one("uint u = 4294967295u; out[0] = (u == -1) ? 1 : 0;", "int32") == 1


def test_uchar_never_equals_minus_one() -> None:
    """uchar 255 promotes to int 255, which differs from -1; char -1 differs from 255."""
    body = "uchar c = 255; char d = -1; out[0] = (c == -1) ? 1 : 0; out[1] = (d == 255) ? 1 : 0;"
    assert out0(body, out=((2,), "int32")).tolist() == [0, 0]


def test_short_product_computed_in_int() -> None:
    """short 300 * short 300 is 90000 in int (no 16-bit overflow)."""
    assert one("short a = 300, b = 300; int c = a * b; out[0] = c;", "int32") == 90000


def test_negating_char_min_wraps_on_store() -> None:
    """-(-128) is int 128; storing it back into char gives -128."""
    assert one("char c = -128; c = -c; out[0] = c;", "int32") == -128


def test_long_keeps_64_bit_precision() -> None:
    """2**53 + 1 survives long arithmetic (no float64 shortcut)."""
    assert one("long x = 9007199254740993; out[0] = x + 2;", "int64") == 9007199254740995


def test_ulong_division_of_max() -> None:
    """ULONG_MAX / 3 is 6148914691236517205."""
    assert one("ulong u = 18446744073709551615ul; out[0] = u / 3;", "uint64") == 6148914691236517205


def test_long_division_truncates() -> None:
    """-9000000000 / 7 truncates toward zero; % keeps the dividend's sign."""
    body = "long x = -9000000000; out[0] = x / 7; out[1] = x % 7;"
    assert out0(body, out=((2,), "int64")).tolist() == [-1285714285, -5]


def test_long_to_float_rounds() -> None:
    """16777217 as long converts to the float 16777216."""
    assert one("long l = 16777217; float f = l; out[0] = f;") == 16777216.0


def test_int_division_then_float_assignment() -> None:
    """float x = 1 / 3 is 0; int y = 5 / 2 * 2.0 is 4 (int division first, then float)."""
    body = "float x = 1 / 3; int y = 5 / 2 * 2.0; out[0] = x; out[1] = y;"
    assert out0(body, out=((2,), "float32")).tolist() == [0.0, 4.0]


def test_float_accumulation_rounds_every_step() -> None:
    """Adding 0.1f ten times in float32 gives 1.0000001192092896, not 1.0."""
    acc = np.float32(0)
    for _ in range(10):
        acc = np.float32(acc + np.float32(0.1))
    got = one("float s = 0; for (int k = 0; k < 10; k++) s += 0.1f; out[0] = s;")
    assert got == acc
    assert got != np.float32(1.0)


def test_large_plus_small_float32_cancellation() -> None:
    """(1e8f + 1) - 1e8f is 0 in float32 although 1 in float64, even across statements."""
    a = np.array([1e8, 1.0], dtype=np.float32)
    assert one("float s = a[0]; s = s + a[1]; s = s - a[0]; out[0] = s;", inputs={"a": a}) == 0.0


def test_sizeof_local_array() -> None:
    """sizeof a float[5] variable is 20."""
    assert one("float v[5]; v[0] = 0; out[0] = sizeof(v);", "int32") == 20


def test_as_type_uint_to_uchar4_is_little_endian() -> None:
    """as_type<uchar4>(0x04030201u) is (1, 2, 3, 4)."""
    body = "uchar4 c = as_type<uchar4>(0x04030201u); out[0] = c.x; out[1] = c.y; out[2] = c.z; out[3] = c.w;"
    assert out0(body, out=((4,), "int32")).tolist() == [1, 2, 3, 4]


def test_as_type_float2_to_uint2() -> None:
    """as_type<uint2>(float2(1, 2)) is (0x3F800000, 0x40000000)."""
    body = "uint2 u = as_type<uint2>(float2(1.0f, 2.0f)); out[0] = u.x; out[1] = u.y;"
    assert out0(body, out=((2,), "uint32")).tolist() == [0x3F800000, 0x40000000]


@pytest.mark.parametrize(
    ("dtype", "body", "expected"),
    [("float16", "out[0] = 70000.0f;", np.inf), ("uint8", "out[0] = -1;", 255),
     ("int64", "int x = -5; out[0] = x;", -5), ("bool", "out[0] = 0.5f;", True),
     ("uint16", "out[0] = 65537;", 1), ("int16", "out[0] = 40000;", -25536)],
)
def test_store_converts_to_output_type(dtype: str, body: str, expected: object) -> None:
    """Stores convert to the buffer's element type (overflow to inf, modulo wrap, != 0 is true)."""
    assert one(body, dtype) == expected


def test_bool_input_promotes_in_arithmetic() -> None:
    """bool + bool from a buffer is the int 2."""
    a = np.array([True] * 8)
    assert one("out[0] = a[0] + a[1];", "int32", inputs={"a": a}) == 2


def test_multiple_declarators_in_one_statement() -> None:
    """`int a = 1, b = a + 1, c;` declares three ints in order."""
    assert one("int a = 1, b = a + 1, c; c = a + b; out[0] = c * 10 + b;", "int32") == 32


def test_sizeof_char_literal_is_one() -> None:
    """In C++ (unlike C) a character literal has type char: sizeof('a') == 1."""
    assert one("out[0] = sizeof('a');", "int32") == 1


def test_large_float_to_unsigned_conversions() -> None:
    """Floats above the signed range convert exactly to unsigned types:
    3e9f -> 3000000000u and 1e19f (exactly 9999999980506447872) -> ulong."""
    body = "float a = 3e9f; float b = 1e19f; uint u = a; ulong v = b; out[0] = u; out[1] = v;"
    assert out0(body, out=((2,), "uint64")).tolist() == [3000000000, int(np.float32(1e19))]


def test_long_to_half_and_bfloat() -> None:
    """Integers convert to half/bfloat with round-to-nearest-even: 4097 -> 4096 (half),
    257 -> 256 (bfloat), 65536 -> inf (half)."""
    body = "int a = 4097; int b = 257; int c = 65536; out[0] = half(a); out[1] = float(bfloat(b)); out[2] = half(c);"
    assert out0(body, out=((3,), "float32")).tolist() == [4096.0, 256.0, np.inf]


# --------------------------------------------------------------------------- C's spelled-out type names
@pytest.mark.parametrize(("body", "want"), [
    ("unsigned int a = 0; a = a - 1; out[0] = float(a == 4294967295u);", 1.0),  # unsigned int wraps
    ("out[0] = float((unsigned char)300);", 44.0),  # 300 mod 256
    ("out[0] = float((signed char)200);", -56.0),  # 200 - 256
    ("unsigned short us = (unsigned short)70000; out[0] = float(us);", 4464.0),  # 70000 - 65536
    ("unsigned long ul = 0; ul = ul - 1; out[0] = float(ul == 18446744073709551615ul);", 1.0),
    ("unsigned u = 5u; out[0] = float(u + sizeof(unsigned int) + sizeof(unsigned char) + sizeof(unsigned long));",
     18.0),  # 5 + 4 + 1 + 8
    ("short int si = -3; long int li = -4; out[0] = float(si + li);", -7.0),
    ("unsigned short int usi = 65535; usi = usi + 1; out[0] = float(usi);", 0.0),
    ("Pair p = {7u, 9u}; out[0] = float(p.x + p.y) + float(static_cast<unsigned int>(-1) == 4294967295u);", 17.0),
])
def test_type_names_spelled_with_signed_and_unsigned(body: str, want: float) -> None:
    """'unsigned int', 'signed char', 'unsigned short int'... are C's other names of uint, char,
    ushort (PyTorch's c10/metal/error.h has an 'unsigned int' struct member)."""
    got = out0(body, header="struct Pair { unsigned int x; unsigned y; };")
    assert got[0] == want
