"""Reading and writing a buffer as another element type.

Memory is bytes, little-endian as on Apple GPUs; a pointer cast between element types in one
address space (C-style, ``reinterpret_cast``, ``as_type`` of a pointer) sees the same bytes as
the new type. bfloat occupies two bytes: its bits are the top half of the float32 with the same
value. Every expected value below comes from NumPy's view of the same bytes (``.view``), never
from the simulator. Counting is per element of the view used; out-of-bounds indices are in the
view's elements; a cast that puts a wider scalar at a misaligned address is reported.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import CompileError, SanitizerError

from .conftest import out0, run

TID = "uint i = thread_position_in_grid.x;\n"


def test_bytes_of_uint_words_are_little_endian() -> None:
    w = np.array([0x04030201, 0xA0B0C0D0, 0, 0, 0, 0, 0, 0], dtype=np.uint32)
    got = out0(TID + "const device uchar* bytes = (const device uchar*)w; out[i] = bytes[i];",
               inputs={"w": w}, out=((8,), "uint32"), grid=(8, 1, 1))
    assert got.tolist() == w.view(np.uint8)[:8].tolist() == [1, 2, 3, 4, 0xD0, 0xC0, 0xB0, 0xA0]


def test_bfloat_buffer_read_as_ushort_gives_its_bits() -> None:
    values = np.array([1.0, -2.0, 0.5, 3.140625, 0, 0, 0, 0], dtype=np.float32)  # all exact in bfloat
    got = out0(TID + "const device ushort* raw = reinterpret_cast<const device ushort*>(v); out[i] = raw[i];",
               inputs={"v": values}, input_dtypes=["bfloat16"], out=((4,), "uint32"), grid=(4, 1, 1))
    assert got.tolist() == (values[:4].view(np.uint32) >> 16).tolist() == [0x3F80, 0xC000, 0x3F00, 0x4049]


def test_bits_assembled_as_bfloat_the_mhc_way() -> None:
    """bf16 -> float by shifting the stored bits into the top half (as_type<float>(uint(b) << 16))."""
    values = np.array([1.5, -0.375, 96.0, 0, 0, 0, 0, 0], dtype=np.float32)
    got = out0(TID + """
        const device ushort* raw = reinterpret_cast<const device ushort*>(v);
        out[i] = as_type<float>(uint(raw[i]) << 16) * 2.0f;
    """, inputs={"v": values}, input_dtypes=["bfloat16"], out=((3,), "float32"), grid=(3, 1, 1))
    assert got.tolist() == [3.0, -0.75, 192.0]


def test_bytes_stored_into_uint_words() -> None:
    got = out0(TID + "device uchar* b = (device uchar*)out; b[i] = uchar(16 * i + 1);",
               out=((2,), "uint32"), grid=(8, 1, 1))
    assert got.tolist() == (np.arange(8, dtype=np.uint8) * 16 + 1).view(np.uint32).tolist()


def test_uint_bit_patterns_read_as_float() -> None:
    f = np.array([1.5, -0.25, 3.0, 0, 0, 0, 0, 0], dtype=np.float32)
    got = out0(TID + "out[i] = ((const device float*)u)[i] * 2.0f;", inputs={"u": f.view(np.uint32)},
               out=((3,), "float32"), grid=(3, 1, 1))
    assert got.tolist() == [3.0, -0.5, 6.0]


def test_half2_read_from_uint_words_low_half_first() -> None:
    halves = np.array([1, -2, 0.5, 8] + [0] * 12, dtype=np.float16)
    got = out0(TID + "half2 h = ((const device half2*)w)[i]; out[2 * i] = h.x; out[2 * i + 1] = h.y;",
               inputs={"w": halves.view(np.uint32)}, out=((4,), "float32"), grid=(2, 1, 1))
    assert got.tolist() == [1.0, -2.0, 0.5, 8.0]


def test_packed_ushort2_store_into_a_bfloat_output() -> None:
    """Two bf16 results packed into one 32-bit store, as mhc-mlx's bf16 kernels write."""
    got = out0(TID + """
        device packed_ushort2* pairs = (device packed_ushort2*)out;
        pairs[i] = packed_ushort2(ushort(0x3F80 + i), ushort(0xC000));
    """, out=((4,), "bfloat16"), grid=(2, 1, 1))
    bits = np.array([0x3F80, 0xC000, 0x3F81, 0xC000], dtype=np.uint32) << 16
    assert got.tolist() == bits.view(np.float32).tolist()


def test_bfloat_occupies_two_bytes() -> None:
    got = out0("""
        out[0] = float(sizeof(bfloat));
        threadgroup bfloat pair[2];
        pair[0] = bfloat(1.0f);
        pair[1] = bfloat(-1.0f);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[1] = float(((threadgroup uint*)pair)[0]);
    """, out=((2,), "float32"))
    expected_word = (0xBF80 << 16) | 0x3F80
    assert got.tolist() == [2.0, float(np.float32(expected_word))]


def test_bfloat_output_rounds_to_nearest_even_on_store() -> None:
    x = np.array([1.00390625, 1.01171875, -3.3, 0, 0, 0, 0, 0], dtype=np.float32)
    got = out0(TID + "out[i] = bfloat(x[i]);", inputs={"x": x}, out=((3,), "bfloat16"), grid=(3, 1, 1))
    bits = x[:3].view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(np.float32)
    assert got.tolist() == rounded.tolist() == [1.0, 1.015625, -3.296875]


def test_float_threadgroup_array_read_back_as_uint_bits() -> None:
    vals = np.array([0.1, -7.25, 1e30, -0.0], dtype=np.float32)
    got = out0(TID + """
        threadgroup float tile[4];
        tile[i] = x[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        threadgroup uint* bits = (threadgroup uint*)tile;
        out[i] = bits[3 - i];
    """, inputs={"x": np.concatenate([vals, np.zeros(4, np.float32)])}, out=((4,), "uint32"), grid=(4, 1, 1))
    assert got.tolist() == vals.view(np.uint32)[::-1].tolist()


def test_signed_chars_and_a_ulong_view_of_two_words() -> None:
    w = np.array([0xFF80017F, 0x00000002, 0, 0, 0, 0, 0, 0], dtype=np.uint32)
    got = out0("""
        const device char* c = (const device char*)w;
        out[0] = long(c[0]); out[1] = long(c[1]); out[2] = long(c[2]); out[3] = long(c[3]);
        out[4] = long(((const device ulong*)w)[0]);
    """, inputs={"w": w}, out=((5,), "int64"))
    assert got.tolist() == [*w.view(np.int8)[:4].tolist(), int(w[:2].view(np.uint64)[0])]


def test_as_type_of_a_pointer_is_a_reinterpreting_cast() -> None:
    x = np.array([1.0, 2.0, -4.0, 0.5, 0, 0, 0, 0], dtype=np.float32)
    got = out0(TID + "const device uint* b = as_type<const device uint*>(x); out[i] = b[i];",
               inputs={"x": x}, out=((4,), "uint32"), grid=(4, 1, 1))
    assert got.tolist() == x[:4].view(np.uint32).tolist()


def test_byte_pointer_arithmetic_and_difference() -> None:
    w = np.arange(8, dtype=np.uint32) * 0x01010101
    got = out0("""
        const device uchar* b = (const device uchar*)w;
        const device uchar* p = b + 9;
        const device uint* q = (const device uint*)(p + 3);
        out[0] = uint(p - b);
        out[1] = *q;
        out[2] = uint((const device uchar*)(q + 2) - b);
    """, inputs={"w": w}, out=((3,), "uint32"))
    assert got.tolist() == [9, int(w[3]), 20]


def test_reading_a_uint_view_counts_one_element_per_read() -> None:
    res = run(TID + "out[i] = float(((const device uint*)x)[i] & 1u) + float(((const device uchar*)x)[4 * i]);",
              inputs={"x": np.arange(8, dtype=np.float32)}, out=((8,), "float32"), grid=(8, 1, 1))
    assert res.counts.max()["global_reads"] == 2


def test_out_of_bounds_through_a_view_is_in_the_views_elements() -> None:
    with pytest.raises(SanitizerError) as info:
        run(TID + "const device uchar* b = (const device uchar*)w; out[i] = b[i + 30];",
            inputs={"w": np.arange(8, dtype=np.uint32)}, out=((4,), "uint32"), grid=(4, 1, 1))
    (f,) = info.value.findings
    assert f.kind == "out-of-bounds" and f.buffer == "w" and f.index == 32
    assert "through a 'uchar' view" in f.message and "32 'uchar' elements (32 bytes)" in f.message


def test_a_word_read_past_the_last_whole_word_is_out_of_bounds() -> None:
    # 10 bytes hold two whole uints: reading the third would take bytes 8..11.
    got = out0("out[0] = ((const device uint*)b)[1];", inputs={"b": np.arange(1, 11, dtype=np.uint8)},
               out=((1,), "uint32"))
    assert got.tolist() == np.arange(5, 9, dtype=np.uint8).view(np.uint32).tolist()
    with pytest.raises(SanitizerError) as info:
        run("out[0] = ((const device uint*)b)[2];", inputs={"b": np.arange(1, 11, dtype=np.uint8)},
            out=((1,), "uint32"))
    assert info.value.findings[0].index == 2


def test_misaligned_cast_is_reported() -> None:
    with pytest.raises(SanitizerError) as info:
        run(TID + "const device uint* u = (const device uint*)((const device uchar*)w + 1); out[i] = u[i];",
            inputs={"w": np.arange(8, dtype=np.uint32)}, out=((4,), "uint32"), grid=(4, 1, 1))
    f = info.value.findings[0]
    assert f.kind == "misaligned-access" and "byte 1" in f.message and "4-byte alignment" in f.message


def test_cast_to_another_address_space_is_refused_with_the_small_input_hint() -> None:
    with pytest.raises(CompileError) as info:
        run("out[0] = ((const device uchar*)w)[0];", inputs={"w": np.arange(2, dtype=np.uint32)})
    assert "cannot cast between address spaces" in info.value.message
    assert "fewer than 8 elements" in info.value.message
