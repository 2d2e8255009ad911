"""Unions (named in the header, anonymous in a function body), alignof, and pointers converted to
numbers: what PyTorch's c10/metal/atomic.h does to add a half through a 32-bit atomic
(``reinterpret_cast<ulong>(data) % alignof(atomic<uint>)`` finds the misalignment, a local
``union { uint i; half t[2]; }`` reads and writes the two halves of one word).

Expected values are IEEE bit patterns from NumPy and C's rules worked out by hand; the last test
runs the same code through g++."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from metal_puzzles.msl import CompileError

from .conftest import out0, run


def test_a_union_members_share_their_bytes() -> None:
    """Storing the float 1.5 and reading the uint gives its bits (0x3FC00000); sizeof is the
    largest member's, rounded to the largest alignment."""
    got = out0("""
        Bits b;
        b.f = 1.5f;
        out[0] = float(b.u == 0x3FC00000u);
        out[1] = float(sizeof(Bits));
        out[2] = float(sizeof(Wide));
    """, out=((3,), "float32"), header="union Bits { float f; uint u; };\nunion Wide { char c[5]; int i; };")
    assert got.tolist() == [1.0, 4.0, 8.0]  # Wide: 5 bytes rounded up to int's alignment


def test_an_anonymous_union_in_a_function_body_puns_one_word_into_two_halves() -> None:
    """atomic.h's pattern: the word's low half is element 0 (little-endian), so writing 1.0 and
    -2.0 as halves gives 0xC0003C00."""
    got = run("""
        union { uint i; half t[2]; } val;
        val.i = 0u;
        val.t[0] = 1.0h;
        val.t[1] = -2.0h;
        out[0] = val.i;
        struct { float x; float y; } p = {1.0f, 2.0f};
        out[1] = uint(p.x + p.y);
    """, out=((2,), "uint32")).outputs[0]
    assert got.tolist() == [0xC0003C00, 3]


@pytest.mark.parametrize(("expr", "want"), [
    ("alignof(float)", 4), ("alignof(half2)", 4), ("alignof(float3)", 16), ("alignof(packed_float3)", 4),
    ("alignof(metal::atomic<uint>)", 4), ("alignof(S)", 8), ("alignof(long)", 8),
])
def test_alignof_is_metals_alignment(expr: str, want: int) -> None:
    assert out0(f"out[0] = float({expr});", header="struct S { char c; long l; };")[0] == want


def test_a_pointer_converted_to_a_number_keeps_the_byte_offsets_and_buffer_alignment() -> None:
    """Addresses are made up, but as on a GPU a buffer starts aligned (to 16 bytes at least) and
    element k of a half buffer is 2k bytes further; so 'addr % 4' tells an odd half from an even
    one, as atomic.h needs."""
    got = run("""
        uint i = thread_position_in_grid.x;
        ulong base = reinterpret_cast<ulong>(x);
        ulong here = (ulong)(x + i);
        out[i] = uint(here - base) * 100u + uint(here % 4) * 10u + uint(base % 16);
    """, inputs={"x": np.zeros(4, np.float16)}, out=((4,), "uint32"), grid=(4, 1, 1)).outputs[0]
    assert got.tolist() == [0, 220, 400, 620]


def test_a_pointer_converts_only_to_an_integer() -> None:
    with pytest.raises(CompileError, match="a pointer converts only to an integer type, not to 'float'"):
        run("out[0] = (float)x;", inputs={"x": np.zeros(2, np.float32)})


def test_program_scope_auto_and_constexpr_vector_braces() -> None:
    got = out0("""
        constexpr uint2 k = {0x9E3779B9u, 7u};  // as c10/metal/random.h writes its Philox constants
        out[0] = float(n * 2);
        out[1] = float(k.y);
        out[2] = float(k.x == 0x9E3779B9u);
    """, out=((3,), "float32"), header="constant constexpr auto n = 64;")
    assert got.tolist() == [128.0, 7.0, 1.0]


@pytest.mark.parametrize(("header", "message"), [
    ("template <typename T> union U { T a; int b; };", "union templates are not supported"),
    ("class C { float a; };", "'class' definitions are not supported"),
])
def test_what_unions_cannot_do_here_is_a_precise_error(header: str, message: str) -> None:
    with pytest.raises(CompileError, match=message):
        run("out[0] = 0;", header=header)


GPP_HEADER = """
union Word { uint u; ushort h[2]; uchar b[4]; };
union FloatBits { float f; uint u; };
union Mixed { char c[6]; short s; int i; };
uint compute(int i) {
    Word w;
    w.u = uint(i) * 2654435761u;
    w.h[1] = ushort(w.h[0] ^ ushort(i * 77));
    w.b[0] = uchar(w.b[3] + uchar(i));
    FloatBits fb;
    fb.f = float(i) * 0.75f - 3.0f;
    union { uint u; ushort s[2]; } local;
    local.u = fb.u;
    uint r = w.u ^ (local.s[0] + local.s[1]);
    r += uint(sizeof(Word)) * 1000u + uint(sizeof(Mixed)) * 100u + uint(alignof(Mixed)) * 10u + uint(alignof(Word));
    return r;
}
"""

GPP_MAIN = """
#include <cstdio>
typedef unsigned int uint; typedef unsigned short ushort; typedef unsigned char uchar;
%s
int main() { for (int i = 0; i < %d; i++) std::printf("%%u\\n", compute(i)); return 0; }
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ as the reference")
def test_unions_and_alignof_agree_with_gpp(tmp_path: Path) -> None:
    threads = 32
    src, exe = tmp_path / "unions.cpp", tmp_path / "unions"
    src.write_text(GPP_MAIN % (GPP_HEADER, threads))
    subprocess.run(["g++", "-std=c++17", "-O0", "-o", str(exe), str(src)], check=True, capture_output=True)
    want = [int(x) for x in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()]
    got = run("uint i = thread_position_in_grid.x; out[i] = compute(int(i));", out=((threads,), "uint32"),
              grid=(threads, 1, 1), header=GPP_HEADER).outputs[0]
    assert got.tolist() == want


def test_a_lambda_is_a_precise_compile_error() -> None:
    """Metal 3.2 has lambdas (PyTorch's test suite compiles one); the simulator says it has not."""
    with pytest.raises(CompileError, match=r"source:1:\d+: error: lambda expressions .* are not supported"):
        run("auto f = [](float v) { return v * 2.0f; }; out[0] = f(1.0f);")
