"""Kernels declared inside a namespace, as PyTorch's c10/metal/indexing.h declares its templated
elementwise kernels (issue 23): the kernel finds names from its namespace outwards, a templated
kernel may be declared ahead of its definition, and instantiation lines at file scope name it
with its qualified name ('kernel void ::ops::fill<float>(...)'). Expected values by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles import compile_shader
from metal_puzzles.msl import CompileError

SHADER = """
namespace ops {
constant float offset = 0.5f;
struct twice { template <typename T> T operator()(T x) { return x + x; } };
namespace detail {
template <typename T, typename F>
kernel void apply(device T* out [[buffer(0)]], constant T* in [[buffer(1)]], uint i [[thread_position_in_grid]]);
template <typename T, typename F>
kernel void apply(device T* out [[buffer(0)]], constant T* in [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    F f;
    out[i] = f(in[i]) + T(offset);  // 'offset' is found in the enclosing namespace 'ops'
}
}  // namespace detail
}  // namespace ops
template [[host_name("twice_float")]] kernel void ::ops::detail::apply<float, ops::twice>(
    device float*, constant float*, uint);
template [[host_name("twice_int")]] kernel void ops::detail::apply<int, ops::twice>(
    device int*, constant int*, uint);
kernel void plain(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = ops::offset; }
"""


def test_a_templated_kernel_in_a_namespace_runs_by_its_host_names() -> None:
    lib = compile_shader(SHADER)
    x = np.array([1.0, -2.0, 3.25], np.float32)
    got = np.zeros(3, np.float32)
    lib.twice_float(got, x, threads=3)
    assert got.tolist() == [2.5, -3.5, 7.0]
    xi = np.array([4, -5, 7], np.int32)
    goti = np.zeros(3, np.int32)
    lib.twice_int(goti, xi, threads=3)
    assert goti.tolist() == [8, -10, 14]  # int(0.5f) adds 0
    out = np.zeros(2, np.float32)
    lib.plain(out, threads=2)
    assert out.tolist() == [0.5, 0.5]


def test_an_instantiation_must_name_the_kernel_with_its_namespace() -> None:
    src = SHADER.replace("void ::ops::detail::apply<float", "void detail::apply<float")
    with pytest.raises(CompileError, match="names no templated kernel function defined above it"):
        compile_shader(src)
