"""``metal::array<T, N>`` from the standard library: a fixed-size array that is a value (copied
when assigned or passed), aggregate-initialised with or without inner braces, indexed with
``[]``, with ``size()``, ``empty()``, ``front()``, ``back()``; it may be a struct member and a
kernel's ``constant`` argument, laid out as N elements of T (its struct is as aligned as T).

Each expected value is worked out by hand in the test or by NumPy on the same bytes.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import FindingKind, SanitizerError
from metal_puzzles.msl.shader_program import LaunchGeometry, ShaderLibrary

from .conftest import out0


def launch(source: str, kernel: str, values: dict, threads=(4, 1, 1), group=(4, 1, 1), **options):
    return ShaderLibrary(source).kernel(kernel).launch(values, LaunchGeometry(threads, group), **options)


def test_a_local_array_with_and_without_inner_braces_and_its_members() -> None:
    src = """
    kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      metal::array<float, 4> a = {1.0f, 2.0f, 3.0f, 4.0f};
      metal::array<float, 4> b = {{10.0f, 20.0f}};   // the rest are zero
      b[3] = a.front() + a.back();                    // 1 + 4
      out[i] = a[i] + b[i] + float(a.size()) * 100.0f + (b.empty() ? 1000.0f : 0.0f);
    }"""
    res = launch(src, "k", {0: np.zeros(4, np.float32)})
    assert res.outputs[0].tolist() == [411.0, 422.0, 403.0, 409.0]


def test_arrays_are_values_copied_on_assignment_and_when_passed() -> None:
    src = """
    using namespace metal;
    inline float bump_and_sum(array<float, 3> a) { a[0] += 100.0f; return a[0] + a[1] + a[2]; }
    kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      array<float, 3> a = {1.0f, 2.0f, float(i)};
      array<float, 3> b = a;
      b[1] = 50.0f;
      out[i] = bump_and_sum(a) * 1000.0f + a[0] + a[1] + b[1];
    }"""
    res = launch(src, "k", {0: np.zeros(4, np.float32)})
    # bump_and_sum sees a copy: 103 + i; a keeps 1 and 2; b's change stays in b.
    assert res.outputs[0].tolist() == [(103 + i) * 1000 + 1 + 2 + 50 for i in range(4)]


def test_a_struct_of_arrays_passed_by_constant_reference_has_metals_layout() -> None:
    """struct P { array<long, 3> sizes; float scale; }: sizes at bytes 0-23, scale at 24, the
    struct padded to 32 (long's alignment); the host writes those bytes with NumPy."""
    src = """
    struct P { metal::array<long, 3> sizes; float scale; };
    kernel void k(device float* out [[buffer(0)]], constant P& p [[buffer(1)]], uint i [[thread_position_in_grid]]) {
      out[i] = float(p.sizes[i % 3]) * p.scale;
    }"""
    raw = np.zeros(32, np.uint8)
    raw[:24] = np.array([5, 6, 7], np.int64).view(np.uint8)
    raw[24:28] = np.array([0.5], np.float32).view(np.uint8)
    res = launch(src, "k", {0: np.zeros(4, np.float32), 1: raw})
    assert res.outputs[0].tolist() == [2.5, 3.0, 3.5, 2.5]


def test_a_constant_array_argument_is_read_only_and_indexed() -> None:
    src = """
    kernel void k(device int* out [[buffer(0)]], constant metal::array<int, 4>& table [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
      out[i] = table[3 - i] * 2;
    }"""
    res = launch(src, "k", {0: np.zeros(4, np.int32), 1: np.array([1, 2, 3, 4], np.int32)})
    assert res.outputs[0].tolist() == [8, 6, 4, 2]


def test_an_index_past_the_end_is_out_of_bounds() -> None:
    src = """
    kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      metal::array<float, 3> a = {1.0f, 2.0f, 3.0f};
      out[i] = a[i];
    }"""
    with pytest.raises(SanitizerError) as info:
        launch(src, "k", {0: np.zeros(4, np.float32)})
    first = info.value.findings[0]
    assert first.kind == FindingKind.OUT_OF_BOUNDS and first.index == 3


def test_metal_array_in_an_mlx_kernel_body() -> None:
    got = out0("""
        uint i = thread_position_in_grid.x;
        metal::array<int, 2> pair = {int(i), int(i) * 3};
        out[i] = pair[0] + pair[1];
    """, out=((4,), "int32"), grid=(4, 1, 1))
    assert got.tolist() == [0, 4, 8, 12]
