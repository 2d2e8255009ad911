"""Untyped buffers: ``void*`` kernel parameters read and written at byte offsets.

Strided kernels that serve every dtype take their tensors as ``device void*`` and reach an
element by casting to a byte pointer, adding a byte offset, and casting to the element type
(PyTorch's MPS kernels do so through helpers returning a reference). Metal, as C++, allows no
access through a ``void*`` itself: no dereference, no subscript, no arithmetic (there is no
element size), and no implicit conversion from ``void*`` to a typed pointer; any object pointer
converts to ``void*`` of its address space. Expected values come from NumPy's view of the same
bytes or are worked out by hand in the test.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import CompileError, FindingKind, SanitizerError
from metal_puzzles.msl.counting.access_kind import AccessKind
from metal_puzzles.msl.shader_program import LaunchGeometry, ShaderLibrary
from support.msl_snippets import BYTE_OFFSET_ACCESS


def launch(source: str, kernel: str, values: dict, threads=(8, 1, 1), group=(8, 1, 1), **options):
    return ShaderLibrary(source).kernel(kernel).launch(values, LaunchGeometry(threads, group), **options)


TRANSPOSE = BYTE_OFFSET_ACCESS + """
template <typename T>
kernel void strided_copy(device void* out [[buffer(0)]], constant void* in [[buffer(1)]],
                         constant long* in_strides [[buffer(2)]], constant uint& cols [[buffer(3)]],
                         uint i [[thread_position_in_grid]]) {
  long row = i / cols, col = i % cols;
  element_at<T>(out, long(i) * sizeof(T)) = load_at<T>(in, row * in_strides[0] + col * in_strides[1]);
}
template [[host_name("strided_copy_float")]] kernel void strided_copy<float>(
    device void*, constant void*, constant long*, constant uint&, uint);
template [[host_name("strided_copy_short")]] kernel void strided_copy<short>(
    device void*, constant void*, constant long*, constant uint&, uint);
"""


@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_a_strided_view_read_through_byte_strides_of_a_void_buffer(dtype) -> None:
    """The kernel gathers a transposed 3x4 view of a 4x3 row-major buffer: element (r, c) of the
    view is at byte r * itemsize + c * 3 * itemsize, which NumPy's .T computes independently."""
    storage = (np.arange(12) * 3 - 7).astype(dtype)
    view = storage.reshape(4, 3).T
    name = "strided_copy_float" if dtype == np.float32 else "strided_copy_short"
    res = launch(TRANSPOSE, name, {0: np.zeros(12, dtype), 1: storage, 2: np.array(view.strides, np.int64),
                                   3: np.array(4, np.uint32)}, threads=(12, 1, 1), group=(12, 1, 1))
    np.testing.assert_array_equal(res.outputs[0], view.reshape(-1))


def test_any_pointer_converts_to_void_and_back_with_a_cast() -> None:
    src = """
    inline float second(device const void* p) { return static_cast<device const float*>(p)[1]; }
    kernel void k(device float* out [[buffer(0)]], device const float* a [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
      device const void* untyped = a + i;   // an offset in floats becomes one in bytes
      out[i] = second(untyped) + second(a + i);
    }"""
    a = np.arange(9, dtype=np.float32) * 1.5
    res = launch(src, "k", {0: np.zeros(8, np.float32), 1: a})
    np.testing.assert_array_equal(res.outputs[0], 2 * a[1:9])


def test_bytes_of_a_float_buffer_seen_through_void_as_uint_bits() -> None:
    src = """
    kernel void bits(device uint* out [[buffer(0)]], device const void* raw [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
      out[i] = *(static_cast<device const uint*>(raw) + i);
    }"""
    a = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    res = launch(src, "bits", {0: np.zeros(4, np.uint32), 1: a}, threads=(4, 1, 1), group=(4, 1, 1))
    assert res.outputs[0].tolist() == a.view(np.uint32).tolist() == [0x3F800000, 0xC0000000, 0x3F000000, 0x40400000]


@pytest.mark.parametrize(("body", "message"), [
    ("out[i] = *p;", "cannot dereference a 'const device void\\*'"),
    ("out[i] = p[i];", "cannot subscript a 'const device void\\*'"),
    ("out[i] = *static_cast<device const float*>(p + 4);", "arithmetic '\\+' on a 'const device void\\*'.*char"),
    ("p++; out[i] = 0.0f;", "arithmetic '\\+\\+' on a 'const device void\\*'"),
    ("device const float* f = p; out[i] = f[i];", "without a cast; write static_cast<const device float\\*>"),
])
def test_what_c_forbids_on_a_void_pointer_does_not_compile(body: str, message: str) -> None:
    src = f"""
    kernel void k(device float* out [[buffer(0)]], device const void* p [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {{
      {body}
    }}"""
    with pytest.raises(CompileError, match=message) as info:
        ShaderLibrary(src).kernel("k")
    assert info.value.pos.line == 4


def test_a_byte_offset_past_the_buffer_is_out_of_bounds_in_its_elements() -> None:
    """Thread 3 reads the float at byte 16 of a 4-float buffer: element 4, one past its end."""
    src = BYTE_OFFSET_ACCESS + """
    kernel void k(device float* out [[buffer(0)]], constant void* in [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
      out[i] = load_at<float>(in, long(i + 1) * 4);
    }"""
    with pytest.raises(SanitizerError) as info:
        launch(src, "k", {0: np.zeros(4, np.float32), 1: np.ones(4, np.float32)}, threads=(4, 1, 1),
               group=(4, 1, 1))
    first = info.value.findings[0]
    assert first.kind == FindingKind.OUT_OF_BOUNDS and first.buffer == "in" and first.index == 4
    assert first.threads[0]["grid"][0] == 3


def test_a_byte_offset_between_elements_is_a_misaligned_access() -> None:
    src = BYTE_OFFSET_ACCESS + """
    kernel void k(device float* out [[buffer(0)]], constant void* in [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
      out[i] = load_at<float>(in, long(i) * 4 + (i == 2 ? 2 : 0));
    }"""
    with pytest.raises(SanitizerError) as info:
        launch(src, "k", {0: np.zeros(4, np.float32), 1: np.ones(4, np.float32)}, threads=(4, 1, 1),
               group=(4, 1, 1))
    first = info.value.findings[0]
    assert first.kind == FindingKind.MISALIGNED and "byte 10" in first.message and first.buffer == "in"


def test_writes_through_a_void_buffer_are_counted_and_traced_in_its_elements() -> None:
    src = BYTE_OFFSET_ACCESS + """
    kernel void k(device void* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      element_at<int>(out, long(7 - i) * 4) = int(i);
    }"""
    res = launch(src, "k", {0: np.zeros(8, np.int32)}, trace=True)
    assert res.outputs[0].tolist() == [7, 6, 5, 4, 3, 2, 1, 0]
    assert int(res.counts.global_writes.sum()) == 8
    writes = [a for a in res.trace.element_accesses() if a.buffer == "out" and a.kind == AccessKind.WRITE]
    assert sorted((a.lane, a.index) for a in writes) == [(t, 7 - t) for t in range(8)]
