"""Two threads writing one device element: the fix each host can apply, applied, fixes the kernel.

MLX's caller makes outputs atomic with a launch option (``atomic_outputs=True``); a whole shader
has no such option and makes the element atomic through a cast; a puzzle's learner cannot change
the launch. Advice naming a fix its reader cannot apply is the wrong cure."""

from __future__ import annotations

import warnings

import mlx.core as mx
import numpy as np

from metal_puzzles import compile_shader, metal_kernel
from metal_puzzles.checking import check_source
from metal_puzzles.puzzles import get_puzzle

SHADER_PLANTED = """
#include <metal_stdlib>
using namespace metal;
kernel void total(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    out[0] += a[i];
}
"""
SHADER_AS_ADVISED = SHADER_PLANTED.replace(
    "out[0] += a[i];", "atomic_fetch_add_explicit((device atomic_float*)&out[0], a[i], memory_order_relaxed);")


def test_a_whole_shader_is_told_to_cast_and_the_cast_fixes_it():
    a = np.arange(1, 9, dtype=np.float32)
    out = np.zeros(1, dtype=np.float32)
    lib = compile_shader(SHADER_PLANTED)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.total(a, out, threads=8, group_size=8)
    text = " ".join(str(w.message) for w in caught)
    assert "update it atomically through a cast: atomic_fetch_add_explicit((device atomic_float*)&out[i]" in text, text
    assert "atomic_outputs" not in text, text

    fixed = compile_shader(SHADER_AS_ADVISED)
    out = np.zeros(1, dtype=np.float32)
    fixed.total(a, out, threads=8, group_size=8, sanitize="error")
    assert out[0] == a.sum()
    assert not fixed.total.last_run.findings


MLX_PLANTED = "uint i = thread_position_in_grid.x;\nout[0] += a[i];\n"
MLX_AS_ADVISED = ("uint i = thread_position_in_grid.x;\n"
                  "atomic_fetch_add_explicit(&out[0], a[i], memory_order_relaxed);\n")


def test_mlx_s_caller_is_told_to_launch_with_atomic_outputs_and_that_fixes_it():
    a = mx.arange(1, 9, dtype=mx.float32)
    launch = dict(inputs=[a], output_shapes=[(1,)], output_dtypes=[mx.float32], grid=(8, 1, 1),
                  threadgroup=(8, 1, 1), init_value=0)
    planted = metal_kernel("total", ["a"], ["out"], MLX_PLANTED)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        planted(**launch)
    text = " ".join(str(w.message) for w in caught)
    assert "launch with atomic_outputs=True" in text and "atomic_fetch_add_explicit" in text, text

    fixed = metal_kernel("total", ["a"], ["out"], MLX_AS_ADVISED, atomic_outputs=True)
    (out,) = fixed(**launch, verbose=False)
    assert out.item() == 36.0
    assert not fixed.last_run.findings


def test_a_puzzle_learner_is_not_told_to_change_the_launch():
    result = check_source(get_puzzle("map"), "uint i = thread_position_in_grid.x;\nout[i / 2] = a[i] + 10;\n"
                                             "out[i] = a[i] + 10;\n")
    report = " ".join(result.report().split())
    assert "make each output element written by one thread" in report
    assert "atomic_outputs" not in report  # a puzzle's launch is its tests'
    assert "through a cast" in report
