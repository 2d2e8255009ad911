"""Functions that return references (C++): a call designates the object the function returns,
so it can be assigned, updated in place and read, as an element can.

Each expected value is worked out by hand in the test (or by NumPy on the same indices).
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import CompileError, FindingKind, SanitizerError
from metal_puzzles.msl.shader_program import LaunchGeometry, ShaderLibrary


def launch(source: str, kernel: str, values: dict, threads=(8, 1, 1), group=(8, 1, 1), **options):
    return ShaderLibrary(source).kernel(kernel).launch(values, LaunchGeometry(threads, group), **options)


def test_a_returned_device_reference_is_assigned_updated_and_read() -> None:
    src = """
    inline device float& cell(device float* grid, uint row, uint col) { return grid[row * 4 + col]; }
    kernel void k(device float* g [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      cell(g, i, 0) = float(i);          // assigned
      cell(g, i, 1) += 10.0f;            // updated in place
      cell(g, i, 2) = cell(g, i, 1) * 2.0f;  // read
    }"""
    g = np.ones((4, 4), np.float32)
    res = launch(src, "k", {0: g.reshape(-1)}, threads=(4, 1, 1), group=(4, 1, 1))
    want = g.copy()
    want[:, 0] = np.arange(4)
    want[:, 1] = 11
    want[:, 2] = 22
    np.testing.assert_array_equal(res.outputs[0].reshape(4, 4), want)


def test_lanes_returning_from_different_statements_get_their_own_elements() -> None:
    """Even threads return a[i], odd threads a[i + 4] from a second return statement."""
    src = """
    inline device int& pick(device int* a, uint i) {
      if (i % 2 == 0) { return a[i]; }
      return a[i + 4];
    }
    kernel void k(device int* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      pick(a, i) = 100 + int(i);
    }"""
    res = launch(src, "k", {0: np.zeros(8, np.int32)}, threads=(4, 1, 1), group=(4, 1, 1))
    assert res.outputs[0].tolist() == [100, 0, 102, 0, 0, 101, 0, 103]


def test_a_reference_returned_through_a_reference_parameter() -> None:
    src = """
    inline thread float& same(thread float& a) { return a; }
    kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      float x = float(i);
      same(x) += 2.5f;
      same(same(x)) *= 2.0f;
      out[i] = x;
    }"""
    res = launch(src, "k", {0: np.zeros(4, np.float32)}, threads=(4, 1, 1), group=(4, 1, 1))
    assert res.outputs[0].tolist() == [(i + 2.5) * 2 for i in range(4)]


def test_a_reference_through_a_conditional_expression_is_refused_with_what_to_write() -> None:
    src = """
    inline thread float& larger(thread float& a, thread float& b) { return a > b ? a : b; }
    kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      float x = float(i), y = 2.5f;
      larger(x, y) = -1.0f;
      out[i] = x + y;
    }"""
    with pytest.raises(CompileError, match="if/else") as info:
        ShaderLibrary(src).kernel("k")
    assert (info.value.pos.line, info.value.pos.col) == (2, 82)


def test_an_out_of_bounds_element_returned_by_reference_is_reported_at_the_call_site_index() -> None:
    src = """
    inline device float& at(device float* a, int k) { return a[k]; }
    kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      at(a, int(i) + 1) = 1.0f;
    }"""
    with pytest.raises(SanitizerError) as info:
        launch(src, "k", {0: np.zeros(4, np.float32)}, threads=(4, 1, 1), group=(4, 1, 1))
    first = info.value.findings[0]
    assert first.kind == FindingKind.OUT_OF_BOUNDS and first.buffer == "a" and first.index == 4


@pytest.mark.parametrize(("function", "message"), [
    ("inline device float& f(device float* a) { return a[0] + 1.0f; }", "reference to a temporary value"),
    ("inline device float& f(device const float* a) { return a[0]; }", "would drop 'const'"),
    ("inline device float& f(device int* a) { return a[0]; }", "cannot return a reference to a 'int'"),
    ("inline thread float& f(device float* a) { return a[0]; }", "this object is in device memory"),
])
def test_what_a_reference_return_cannot_bind_does_not_compile(function: str, message: str) -> None:
    src = f"""
    {function}
    kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {{
      a[i] = 0.0f;
      float x = f(a);
      a[i] = x;
    }}"""
    with pytest.raises(CompileError, match=message) as info:
        ShaderLibrary(src.replace("device int* a) {", "device int* a) {")).kernel("k")
    assert info.value.pos.line == 2


def test_a_const_reference_result_cannot_be_assigned() -> None:
    src = """
    inline const device float& first(device float* a) { return a[0]; }
    kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      first(a) = 1.0f;
    }"""
    with pytest.raises(CompileError, match="read-only"):
        ShaderLibrary(src).kernel("k")


def test_member_operator_subscript_overloaded_on_const_picks_by_the_objects_constness() -> None:
    """The non-const operator[] writes through; on a const object only the const one is viable
    (it returns by value here, so the two are told apart by what they return)."""
    src = """
    struct Pair {
      float v[2];
      thread float& operator[](int k) { return v[k]; }
      float operator[](int k) const { return v[k] + 100.0f; }
    };
    kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      Pair p = {{1.0f, 2.0f}};
      p[1] = 5.0f;                 // non-const object: the reference
      const Pair q = p;
      out[i] = p[1] + q[0];        // 5 + (1 + 100) from the const overload
    }"""
    res = launch(src, "k", {0: np.zeros(2, np.float32)}, threads=(2, 1, 1), group=(2, 1, 1))
    assert res.outputs[0].tolist() == [106.0, 106.0]
