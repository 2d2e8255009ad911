"""Real-world whole shaders through ``compile_shader``: the porting guide's MVMR layout (seven
buffers, a dims buffer, atomic accumulation) and a PyTorch-style elementwise operator
templated over float/half/bfloat and instantiated with host_name, checked against references
computed independently (NumPy loops, MLX ops)."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from metal_puzzles import SanitizerError, compile_shader
from metal_puzzles.msl import FindingKind

MVMR = """
#include <metal_stdlib>
using namespace metal;

// o[o_idx[t], g, m] += dot(a[t, g, m, :], b[b_idx[t], g, :]); one thread per (t, g, m) row.
kernel void mvmr(device const float* a [[buffer(0)]],
                 device const uint* a_idx [[buffer(1)]],
                 device const float* b [[buffer(2)]],
                 device const uint* b_idx [[buffer(3)]],
                 device const uint* o_idx [[buffer(4)]],
                 device float* o [[buffer(5)]],
                 constant uint* dims [[buffer(6)]],
                 uint3 group [[threadgroup_position_in_grid]],
                 uint3 local [[thread_position_in_threadgroup]],
                 uint3 width [[ROW_WIDTH]]) {
  const uint T = dims[0], G = dims[1], M = dims[2], C = dims[3];
  const uint row = group.x * width.x + local.x;
  if (row >= T * G * M) return;
  const uint t = row / (G * M);
  const uint g = (row / M) % G;
  const uint m = row % M;
  float acc = 0.0f;
  for (uint c = 0; c < C; ++c) {
    acc += a[row * C + c] * b[(b_idx[t] * G + g) * C + c];  // @B_IDX
  }
  device atomic_float* target = (device atomic_float*)&o[(o_idx[t] * G + g) * M + m];
  atomic_fetch_add_explicit(target, acc, memory_order_relaxed);
}
"""

T, G, M, C, K, B = 6, 2, 3, 4, 3, 4


def _mvmr_inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((T, G, M, C)).astype(np.float32)
    b = rng.standard_normal((B, G, C)).astype(np.float32)
    b_idx = rng.integers(0, B, T).astype(np.uint32)
    o_idx = np.array([0, 2, 0, 1, 2, 2], np.uint32)  # repeated outputs: the atomics accumulate
    return a, b, b_idx, o_idx


def _mvmr_reference(a, b, b_idx, o_idx) -> np.ndarray:
    out = np.zeros((K, G, M), np.float32)
    for t in range(T):
        for g in range(G):
            for m in range(M):
                out[o_idx[t], g, m] += float(np.dot(a[t, g, m], b[b_idx[t], g]))
    return out


def _run_mvmr(width_attribute: str, b_idx=None, **options) -> np.ndarray:
    a, b, default_b_idx, o_idx = _mvmr_inputs()
    lib = compile_shader(MVMR.replace("ROW_WIDTH", width_attribute))
    o = np.zeros((K, G, M), np.float32)
    dims = np.array([T, G, M, C, K, B], np.uint32)
    b_idx = default_b_idx if b_idx is None else b_idx
    lib.mvmr(a, np.arange(T, dtype=np.uint32), b, b_idx, o_idx, o, dims, threads=T * G * M, group_size=8, **options)
    return o


def test_mvmr_with_its_buffer_layout_and_dims_buffer_matches_the_reference() -> None:
    """36 rows in threadgroups of 8: the last threadgroup is partial, and dispatch_threads_per_threadgroup
    (the launch's threadgroup width) gives every row its own thread."""
    got = _run_mvmr("dispatch_threads_per_threadgroup", sanitize="error")
    np.testing.assert_allclose(got, _mvmr_reference(*_mvmr_inputs()), rtol=1e-5, atol=1e-5)


def test_mvmr_rows_from_threads_per_threadgroup_go_wrong_in_a_partial_threadgroup() -> None:
    """threads_per_threadgroup is the size of the thread's own threadgroup (4 in the last one
    here), so rows 16-19 are computed twice and rows 32-35 never: what a GPU computes."""
    got = _run_mvmr("threads_per_threadgroup", sanitize="off")
    a, b, b_idx, o_idx = _mvmr_inputs()
    rows = np.array([r for r in range(T * G * M) if r < 32] + list(range(16, 20)))
    expected = np.zeros((K, G, M), np.float32)
    for row in rows:
        t, g, m = row // (G * M), (row // M) % G, row % M
        expected[o_idx[t], g, m] += float(np.dot(a[t, g, m], b[b_idx[t], g]))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert not np.allclose(got, _mvmr_reference(a, b, b_idx, o_idx))


def test_mvmr_with_b_idx_shorter_than_t_is_an_out_of_bounds_read() -> None:
    """b_idx with B entries, read at t < T = 6: the planted bug is found with thread, index and line."""
    short = np.array([0, 1, 2, 3], np.uint32)
    with pytest.raises(SanitizerError) as info:
        _run_mvmr("dispatch_threads_per_threadgroup", b_idx=short, sanitize="error")
    first = info.value.findings[0]
    assert first.kind == FindingKind.OUT_OF_BOUNDS and first.buffer == "b_idx" and first.index == 4
    assert first.threads[0]["grid"] == (24, 0, 0)  # the first row of t = 4
    assert first.pos.line == MVMR.split("\n").index(next(x for x in MVMR.split("\n") if "@B_IDX" in x)) + 1


ELEMENTWISE = """
#include <metal_stdlib>
using namespace metal;

// A PyTorch-style operator: compute in float, store in the tensor's type.
template <typename T>
kernel void lerp_scalar(device const T* start [[buffer(0)]], device const T* end [[buffer(1)]],
                        device T* out [[buffer(2)]], constant float& weight [[buffer(3)]],
                        constant uint& numel [[buffer(4)]], uint index [[thread_position_in_grid]]) {
  if (index >= numel) return;
  const float s = static_cast<float>(start[index]);
  out[index] = static_cast<T>(s + weight * (static_cast<float>(end[index]) - s));
}

#define REGISTER_LERP(DTYPE)                                                                    \\
  template [[host_name("lerp_scalar_" #DTYPE)]] kernel void lerp_scalar<DTYPE>(                \\
      device const DTYPE* start [[buffer(0)]], device const DTYPE* end [[buffer(1)]],          \\
      device DTYPE* out [[buffer(2)]], constant float& weight [[buffer(3)]],                   \\
      constant uint& numel [[buffer(4)]], uint index [[thread_position_in_grid]]);

REGISTER_LERP(float);
REGISTER_LERP(half);
REGISTER_LERP(bfloat);
"""


@pytest.mark.parametrize(("dtype", "suffix"), [(mx.float32, "float"), (mx.float16, "half"),
                                               (mx.bfloat16, "bfloat")])
def test_a_templated_elementwise_operator_agrees_with_mlx(dtype, suffix: str) -> None:
    lib = compile_shader(ELEMENTWISE)
    start = (mx.arange(37, dtype=mx.float32) / 7 - 2).astype(dtype)
    end = (mx.cos(mx.arange(37, dtype=mx.float32)) * 3).astype(dtype)
    out = mx.zeros(37, dtype=dtype)
    getattr(lib, f"lerp_scalar_{suffix}")(start, end, out, 0.25, 37, group_size=16)
    s = start.astype(mx.float32)
    expected = (s + 0.25 * (end.astype(mx.float32) - s)).astype(dtype)
    assert out.dtype == dtype
    np.testing.assert_array_equal(np.array(out.astype(mx.float32)), np.array(expected.astype(mx.float32)))
