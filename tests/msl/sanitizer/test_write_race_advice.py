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
    # Map's outputs start uninitialised: an atomic add would add to garbage, so none is offered.
    assert "through a cast" not in report
    assert "outputs start uninitialised in this puzzle, so atomic adds would add to garbage" in report


CALLER_UPDATE = "uint i = thread_position_in_grid.x;\nout[0] += a[i];\n"
CALLER_CAST = ("uint i = thread_position_in_grid.x;\n"
               "atomic_fetch_add_explicit((device atomic_float*)&out[0], a[i], memory_order_relaxed);\n")


def test_mlx_s_caller_without_init_value_is_told_to_fill_the_output_first_and_that_fixes_it():
    """Atomic adds start from what the element holds: without init_value that is garbage on a GPU,
    so the advice names init_value=0 with the atomics, and the cast alone is an uninitialised read."""
    a = mx.arange(1, 9, dtype=mx.float32)
    launch = dict(inputs=[a], output_shapes=[(1,)], output_dtypes=[mx.float32], grid=(8, 1, 1),
                  threadgroup=(8, 1, 1))
    planted = metal_kernel("total", ["a"], ["out"], CALLER_UPDATE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        planted(**launch)
    text = " ".join(" ".join(str(w.message) for w in caught).split())
    assert ("launch with init_value=0 and atomic_outputs=True (the outputs become atomic<T>) and add with "
            "atomic_fetch_add_explicit, or with init_value=0 and update it atomically through a cast") in text, text

    half_applied = metal_kernel("total", ["a"], ["out"], CALLER_CAST)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        half_applied(**launch)
    text = " ".join(str(w.message) for w in caught)
    assert "reads out[0], an output element that no thread has written (the launch has no init_value)" in text, text

    fixed = metal_kernel("total", ["a"], ["out"], CALLER_CAST)
    (out,) = fixed(**launch, init_value=0, sanitize="error")
    assert out.item() == 36.0
    assert not fixed.last_run.findings


OTHER_GROUP_READ = ("uint i = thread_position_in_grid.x;\nout[i] = a[i];\n"
                    "if (i >= 4) {\n    out[i - 4] += 10;\n}\n")
FIRST_KERNEL = "uint i = thread_position_in_grid.x;\nout[i] = a[i];\n"
SECOND_KERNEL = "uint i = thread_position_in_grid.x;\nout[i] = i + 4 < a_shape[0] ? a[i] + 10 : a[i];\n"

ZERO_THEN_ADD = ("uint i = thread_position_in_grid.x;\nif (i == 0) {\n    out[0] = 0.0f;\n}\n"
                 "atomic_fetch_add_explicit((device atomic_float*)&out[0], a[i], memory_order_relaxed);\n")
ZERO = "out[0] = 0.0f;\n"
ADD = "uint i = thread_position_in_grid.x;\natomic_fetch_add_explicit((device atomic_float*)&out[0], a[i], memory_order_relaxed);\n"


def test_threadgroups_that_share_an_element_are_told_to_split_the_work_and_that_fixes_it():
    """Threads of different threadgroups cannot be ordered within a kernel: the caller may split
    the work into two kernels (one writes, the next reads what it wrote), the cure a barrier is not."""
    a = mx.arange(1, 9, dtype=mx.float32)
    launch = dict(output_shapes=[(8,)], output_dtypes=[mx.float32], grid=(8, 1, 1), threadgroup=(4, 1, 1))
    planted = metal_kernel("shifted", ["a"], ["out"], OTHER_GROUP_READ)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        planted(inputs=[a], **launch)
    text = " ".join(" ".join(str(w.message) for w in caught).split())
    assert "threads of different threadgroups cannot synchronise within a kernel" in text, text
    assert "or split the work into two kernels" in text, text

    first = metal_kernel("first", ["a"], ["out"], FIRST_KERNEL)
    second = metal_kernel("second", ["a"], ["out"], SECOND_KERNEL)
    (mid,) = first(inputs=[a], **launch, sanitize="error")
    (out,) = second(inputs=[mid], **launch, sanitize="error")
    assert out.tolist() == [11, 12, 13, 14, 5, 6, 7, 8]
    assert not first.last_run.findings and not second.last_run.findings


def test_an_atomic_and_a_plain_access_from_two_threadgroups_are_told_to_split_and_that_fixes_it():
    a = mx.arange(1, 9, dtype=mx.float32)
    launch = dict(output_shapes=[(1,)], output_dtypes=[mx.float32], grid=(8, 1, 1), threadgroup=(4, 1, 1))
    planted = metal_kernel("zero_then_add", ["a"], ["out"], ZERO_THEN_ADD)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        planted(inputs=[a], **launch)
    text = " ".join(" ".join(str(w.message) for w in caught).split())
    assert "an atomic and a plain access to one element race, from different threadgroups" in text, text
    assert "or split the work into two kernels" in text, text

    zero = metal_kernel("zero", ["a"], ["out"], ZERO)
    add = metal_kernel("add", ["a", "start"], ["out"], ADD)
    (start,) = zero(inputs=[a], output_shapes=[(1,)], output_dtypes=[mx.float32], grid=(1, 1, 1),
                    threadgroup=(1, 1, 1), sanitize="error")
    # The second kernel adds onto what the first wrote: its output starts as the first's (init_value).
    (out,) = add(inputs=[a, start], **launch, init_value=float(start.item()), sanitize="error")
    assert out.item() == 36.0
    assert not zero.last_run.findings and not add.last_run.findings
