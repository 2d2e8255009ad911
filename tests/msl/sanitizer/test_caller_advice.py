"""Advice only the caller of a kernel can apply (a launch option), applied, fixes the kernel.

A puzzle's learner writes only the kernel and is never given these (tests/msl/findings/test_advice.py holds
the learner's table); the caller of ``metal_kernel`` chooses ``init_value`` and ``max_steps``."""

from __future__ import annotations

import warnings

import mlx.core as mx

from metal_puzzles import metal_kernel

LAUNCH = dict(inputs=[mx.arange(1, 9, dtype=mx.float32)], output_shapes=[(8,)], output_dtypes=[mx.float32],
              grid=(8, 1, 1), threadgroup=(8, 1, 1))


def _warned(kernel, **launch) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel(**launch)
    return " ".join(" ".join(str(w.message) for w in caught).split())


def test_an_output_read_before_written_is_fixed_by_init_value():
    source = "uint i = thread_position_in_grid.x;\nout[i] += a[i];\n"
    kernel = metal_kernel("acc", ["a"], ["out"], source)
    assert "write it before reading it, or launch with init_value" in _warned(kernel, **LAUNCH)
    (out,) = kernel(**LAUNCH, init_value=0, sanitize="error")
    assert out.tolist() == list(range(1, 9))
    assert not kernel.last_run.findings


def test_an_output_left_unwritten_is_fixed_by_init_value():
    source = "uint i = thread_position_in_grid.x;\nif (i % 2 == 0) {\n    out[i] = a[i];\n}\n"
    kernel = metal_kernel("evens", ["a"], ["out"], source)
    assert "passing init_value to the call also fills them" in _warned(kernel, **LAUNCH)
    (out,) = kernel(**LAUNCH, init_value=0, sanitize="error")
    assert out.tolist() == [1, 0, 3, 0, 5, 0, 7, 0]
    assert not kernel.last_run.findings


def test_a_long_loop_is_fixed_by_raising_max_steps():
    source = ("uint i = thread_position_in_grid.x;\nfloat total = 0.0f;\n"
              "for (uint k = 0; k < 300; k++) {\n    total += a[i];\n}\nout[i] = total;\n")
    kernel = metal_kernel("long", ["a"], ["out"], source)
    assert "raise max_steps if the kernel really needs more" in _warned(kernel, **LAUNCH, max_steps=200)
    (out,) = kernel(**LAUNCH, max_steps=10_000, sanitize="error")
    assert out.tolist() == [300.0 * v for v in range(1, 9)]
    assert not kernel.last_run.findings


def test_a_misaligned_cast_is_fixed_by_reading_the_bytes():
    """Not a launch option, but a kernel no puzzle asks for: words read from byte 1 of a buffer."""
    data = mx.array(list(range(1, 34)), dtype=mx.uint8)
    launch = dict(inputs=[data], output_shapes=[(8,)], output_dtypes=[mx.uint32], grid=(8, 1, 1),
                  threadgroup=(8, 1, 1))
    planted = metal_kernel("words", ["a"], ["out"], "uint i = thread_position_in_grid.x;\n"
                           "const device uint* w = (const device uint*)((const device uchar*)a + 1);\nout[i] = w[i];\n")
    assert ("read the bytes one by one through the byte pointer and combine them (b[0] | b[1] << 8 | ...)"
            in _warned(planted, **launch))
    fixed = metal_kernel("words", ["a"], ["out"], "uint i = thread_position_in_grid.x;\n"
                         "const device uchar* b = (const device uchar*)a + 1 + 4 * i;\n"
                         "out[i] = uint(b[0]) | uint(b[1]) << 8 | uint(b[2]) << 16 | uint(b[3]) << 24;\n")
    (out,) = fixed(**launch, sanitize="error")
    raw = bytes(range(1, 34))[1:33]
    assert out.tolist() == [int.from_bytes(raw[4 * k:4 * k + 4], "little") for k in range(8)]
    assert not fixed.last_run.findings


def test_a_short_simd_group_is_fixed_by_a_whole_one():
    source = "simdgroup_float8x8 m;\nsimdgroup_load(m, a, 8);\nsimdgroup_store(m, out, 8);\n"
    tile = mx.arange(64, dtype=mx.float32)
    kernel = metal_kernel("copy_tile", ["a"], ["out"], source)
    short = dict(inputs=[tile], output_shapes=[(64,)], output_dtypes=[mx.float32], grid=(16, 1, 1),
                 threadgroup=(16, 1, 1))
    assert "launch with threadgroups of a multiple of 32 threads, so that every SIMD-group is whole" in _warned(
        kernel, **short)
    (out,) = kernel(**{**short, "grid": (32, 1, 1), "threadgroup": (32, 1, 1)}, sanitize="error")
    assert out.tolist() == list(range(64))
    assert not kernel.last_run.findings
