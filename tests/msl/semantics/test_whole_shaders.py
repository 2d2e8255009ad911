"""Whole shaders (issue 23, item 1): kernel functions that declare their own parameters, run
through the second ABI (``msl.shader_program``) with arrays bound at buffer indices.

Each test states an answer known independently of the simulator (NumPy or by hand)."""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import ArgumentError, CompileError, FindingKind, SanitizerError, StopReason
from metal_puzzles.msl.shader_program import LaunchGeometry, ShaderLibrary


def launch(source: str, kernel: str, values: dict, threads=(8, 1, 1), group=(8, 1, 1), **options):
    return ShaderLibrary(source).kernel(kernel).launch(values, LaunchGeometry(threads, group), **options)


def f32(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.float32)


# ------------------------------------------------------------------------------ buffers
def test_explicit_buffer_indices_bind_by_index_not_by_position() -> None:
    src = """
    kernel void copy(device float* out [[buffer(1)]], device const float* a [[buffer(0)]],
                     uint i [[thread_position_in_grid]]) {
      out[i] = a[i] * 2.0f;
    }"""
    res = launch(src, "copy", {0: f32(8), 1: np.zeros(8, np.float32)})
    np.testing.assert_array_equal(res.outputs[0], f32(8) * 2)
    assert res.output_names == ["out"] and res.input_names == ["a"]


def test_implicit_indices_take_the_lowest_free_ones_in_order() -> None:
    src = """
    kernel void k(device const float* a, device float* out [[buffer(0)]], device const float* b,
                  uint i [[thread_position_in_grid]]) {
      out[i] = a[i] - b[i];
    }"""
    lib = ShaderLibrary(src)
    assert [(p.name, p.index) for p in lib.kernel("k").buffers] == [("out", 0), ("a", 1), ("b", 2)]
    res = lib.kernel("k").launch({0: np.zeros(8, np.float32), 1: f32(8) * 3, 2: f32(8)},
                                 LaunchGeometry((8, 1, 1), (8, 1, 1)))
    np.testing.assert_array_equal(res.outputs[0], f32(8) * 2)


def test_two_parameters_claiming_one_buffer_index_do_not_compile() -> None:
    src = """
    kernel void k(device float* a [[buffer(0)]], device float* b [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      a[i] = b[i];
    }"""
    with pytest.raises(CompileError, match=r"both claim \[\[buffer\(0\)\]\]"):
        ShaderLibrary(src).kernel("k")


def test_a_pointer_parameter_without_address_space_does_not_compile() -> None:
    src = "kernel void k(float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] = 1.0f; }"
    with pytest.raises(CompileError, match="needs an address space"):
        ShaderLibrary(src).kernel("k")


def test_an_unknown_parameter_attribute_is_named() -> None:
    src = "kernel void k(device float* a [[texture(0)]], uint i [[thread_position_in_grid]]) { a[i] = 1.0f; }"
    with pytest.raises(CompileError, match=r"\[\[texture\]\]"):
        ShaderLibrary(src).kernel("k")


def test_constant_scalar_references_and_constant_arrays() -> None:
    src = """
    kernel void k(device float* out [[buffer(0)]], constant float& scale [[buffer(1)]],
                  constant float* weights [[buffer(2)]], constant uint& n [[buffer(3)]],
                  uint i [[thread_position_in_grid]]) {
      if (i < n) out[i] = scale * weights[i % 3];
    }"""
    w = np.array([1, 10, 100], np.float32)
    res = launch(src, "k", {0: np.full(8, -1, np.float32), 1: np.asarray(np.float32(0.5)), 2: w,
                            3: np.asarray(np.uint32(6))})
    expected = np.where(np.arange(8) < 6, 0.5 * w[np.arange(8) % 3], -1)
    np.testing.assert_array_equal(res.outputs[0], expected)


def test_a_struct_by_constant_reference_with_metal_layout() -> None:
    """`Params { uint n; float4 bias; }`: bias sits at byte 16 (float4 aligns to 16), so the host
    builds the same layout with a NumPy structured dtype with explicit offsets."""
    src = """
    struct Params { uint n; float4 bias; };
    kernel void k(device float4* out [[buffer(0)]], constant Params& p [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
      if (i < p.n) out[i] = p.bias * float(i);
    }"""
    layout = np.dtype({"names": ["n", "bias"], "formats": ["<u4", ("<f4", 4)], "offsets": [0, 16], "itemsize": 32})
    params = np.zeros(1, dtype=layout)
    params["n"] = 3
    params["bias"] = [1, 2, 3, 4]
    res = launch(src, "k", {0: np.zeros(16, np.float32), 1: params}, threads=(4, 1, 1), group=(4, 1, 1))
    expected = np.array([[1, 2, 3, 4]] * 4, np.float32) * np.array([[0], [1], [2], [0]])
    np.testing.assert_array_equal(res.outputs[0].reshape(4, 4), expected)


def test_a_buffer_of_the_wrong_dtype_is_refused_with_both_types() -> None:
    src = "kernel void k(device int* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] = 1; }"
    with pytest.raises(ArgumentError, match=r"holds float32 elements; the kernel reads int \(int32\)"):
        launch(src, "k", {0: np.zeros(8, np.float32)})


def test_a_missing_buffer_is_named() -> None:
    src = "kernel void k(device int* a [[buffer(0)]], device int* b [[buffer(1)]], uint i [[thread_position_in_grid]]) {}"
    with pytest.raises(ArgumentError, match=r"\[\[buffer\(1\)\]\] \('b'\)"):
        launch(src, "k", {0: np.zeros(8, np.int32)})


# ------------------------------------------------------------------------------ thread attributes
def test_thread_attributes_under_their_own_names_and_types() -> None:
    src = """
    kernel void k(device uint* out [[buffer(0)]], uint gid [[thread_position_in_grid]],
                  ushort2 lid [[thread_position_in_threadgroup]], uint3 group [[threadgroup_position_in_grid]],
                  uint lane [[thread_index_in_simdgroup]], ushort width [[threads_per_threadgroup]]) {
      out[gid * 4 + 0] = lid.x;
      out[gid * 4 + 1] = group.x;
      out[gid * 4 + 2] = lane;
      out[gid * 4 + 3] = width;
    }"""
    res = launch(src, "k", {0: np.zeros(32, np.uint32)}, threads=(8, 1, 1), group=(4, 1, 1))
    got = res.outputs[0].reshape(8, 4)
    gid = np.arange(8)
    np.testing.assert_array_equal(got[:, 0], gid % 4)
    np.testing.assert_array_equal(got[:, 1], gid // 4)
    np.testing.assert_array_equal(got[:, 2], gid % 4)
    np.testing.assert_array_equal(got[:, 3], np.full(8, 4))


def test_a_two_dimensional_grid_through_uint2() -> None:
    src = """
    kernel void k(device float* out [[buffer(0)]], uint2 pos [[thread_position_in_grid]],
                  uint2 size [[threads_per_grid]]) {
      out[pos.y * size.x + pos.x] = float(pos.x * 10 + pos.y);
    }"""
    res = launch(src, "k", {0: np.zeros(12, np.float32)}, threads=(4, 3, 1), group=(2, 2, 1))
    y, x = np.mgrid[0:3, 0:4]
    np.testing.assert_array_equal(res.outputs[0].reshape(3, 4), (x * 10 + y).astype(np.float32))


def test_a_thread_attribute_declared_wider_than_it_is_does_not_compile() -> None:
    src = "kernel void k(device float* a [[buffer(0)]], uint2 lane [[thread_index_in_simdgroup]]) { a[0] = 1.0f; }"
    with pytest.raises(CompileError, match="has 1 component"):
        ShaderLibrary(src).kernel("k")


# ------------------------------------------------------------------------------ threadgroup memory
REDUCE = """
kernel void block_sum(device const float* a [[buffer(0)]], device float* sums [[buffer(1)]],
                      threadgroup float* scratch [[threadgroup(0)]],
                      uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                      uint group [[threadgroup_position_in_grid]], uint width [[threads_per_threadgroup]]) {
  scratch[lid] = a[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint stride = width / 2; stride > 0; stride /= 2) {
    if (lid < stride) scratch[lid] += scratch[lid + stride];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) sums[group] = scratch[0];
}"""


def test_threadgroup_memory_sized_at_launch() -> None:
    a = np.arange(16, dtype=np.float32)
    res = launch(REDUCE, "block_sum", {0: a, 1: np.zeros(2, np.float32)}, threads=(16, 1, 1), group=(8, 1, 1),
                 threadgroup_memory={0: 8 * 4})
    np.testing.assert_array_equal(res.outputs[0], [a[:8].sum(), a[8:].sum()])
    assert res.counts.shared_writes.sum() > 0


def test_threadgroup_memory_too_small_for_the_group_is_an_out_of_bounds_access() -> None:
    with pytest.raises(SanitizerError) as info:
        launch(REDUCE, "block_sum", {0: f32(16), 1: np.zeros(2, np.float32)}, threads=(16, 1, 1), group=(8, 1, 1),
               threadgroup_memory={0: 4 * 4})
    first = info.value.findings[0]
    assert first.kind == FindingKind.OUT_OF_BOUNDS and first.buffer == "scratch" and first.index == 4
    assert first.pos.line == REDUCE.split("\n").index("  scratch[lid] = a[gid];") + 1


def test_threadgroup_memory_without_a_size_is_an_error_that_says_how_to_give_it() -> None:
    with pytest.raises(ArgumentError, match=r"threadgroup_memory=\{0: nbytes\}"):
        launch(REDUCE, "block_sum", {0: f32(16), 1: np.zeros(2, np.float32)}, threads=(16, 1, 1), group=(8, 1, 1))


# ------------------------------------------------------------------------------ templates and attributes
TEMPLATED = """
#include <metal_stdlib>
using namespace metal;

template <typename T>
T twice(T x) { return x + x; }

template <typename T, int K>
kernel void scale(device const T* a [[buffer(0)]], device T* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  out[i] = twice(a[i]) * T(K);
}

#define INSTANTIATE_SCALE(T, K)                                              \\
  template [[host_name("scale_" #T "_" #K)]] [[kernel]] void scale<T, K>( \\
      device const T* a [[buffer(0)]], device T* out [[buffer(1)]], uint i [[thread_position_in_grid]]);
INSTANTIATE_SCALE(float, 3)
INSTANTIATE_SCALE(int, 5)
template [[host_name("scale_half")]] kernel void scale<half, 1>(device const half*, device half*, uint);
"""


def test_templated_kernels_instantiated_with_host_names_and_macros() -> None:
    lib = ShaderLibrary(TEMPLATED)
    assert lib.kernel_names == ["scale_float_3", "scale_int_5", "scale_half"]
    geometry = LaunchGeometry((8, 1, 1), (8, 1, 1))
    res = lib.kernel("scale_float_3").launch({0: f32(8), 1: np.zeros(8, np.float32)}, geometry)
    np.testing.assert_array_equal(res.outputs[0], f32(8) * 6)
    res = lib.kernel("scale_int_5").launch({0: np.arange(8, dtype=np.int32), 1: np.zeros(8, np.int32)}, geometry)
    np.testing.assert_array_equal(res.outputs[0], np.arange(8) * 10)
    half = np.array([0.1, 0.2, 0.3, 1000, 60000, 2, 3, 4], np.float16)
    res = lib.kernel("scale_half").launch({0: half, 1: np.zeros(8, np.float16)}, geometry)
    with np.errstate(over="ignore"):  # 60000 + 60000 overflows to inf in half, on the GPU as in NumPy
        expected = half + half
    np.testing.assert_array_equal(res.outputs[0], expected)


def test_each_instantiation_is_checked_on_its_own_copy_of_the_kernel() -> None:
    """Compiling the float instantiation first must not leave float types in the half one."""
    src = """
    template <typename T>
    kernel void mix_k(device const T* a [[buffer(0)]], device T* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
      const float x = float(a[i]);
      out[i] = T(x * 0.5f + 1.0f);
    }
    template [[host_name("mix_float")]] kernel void mix_k<float>(device const float*, device float*, uint);
    template [[host_name("mix_half")]] kernel void mix_k<half>(device const half*, device half*, uint);
    """
    lib = ShaderLibrary(src)
    geometry = LaunchGeometry((4, 1, 1), (4, 1, 1))
    lib.kernel("mix_float").launch({0: f32(4), 1: np.zeros(4, np.float32)}, geometry)
    half = np.arange(4, dtype=np.float16)
    res = lib.kernel("mix_half").launch({0: half, 1: np.zeros(4, np.float16)}, geometry)
    np.testing.assert_array_equal(res.outputs[0], (half.astype(np.float32) * 0.5 + 1).astype(np.float16))


def test_a_template_without_an_instantiation_is_no_kernel_and_names_are_suggested() -> None:
    lib = ShaderLibrary(TEMPLATED)
    with pytest.raises(ArgumentError, match="did you mean 'scale_half'"):
        lib.kernel("scale_hal")
    with pytest.raises(ArgumentError, match="no kernel named 'scale'"):
        lib.kernel("scale")


def test_an_instantiation_without_host_name_or_of_an_unknown_kernel_does_not_compile() -> None:
    base = "template <typename T> kernel void k(device T* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {}\n"
    with pytest.raises(CompileError, match="needs \\[\\[host_name"):
        ShaderLibrary(base + "template kernel void k<float>(device float*, uint);")
    with pytest.raises(CompileError, match="names no templated kernel"):
        ShaderLibrary(base + 'template [[host_name("f")]] kernel void other<float>(device float*, uint);')


def test_kernel_attribute_spelling_and_max_total_threads() -> None:
    src = """
    [[kernel, max_total_threads_per_threadgroup(64)]] void k(device float* a [[buffer(0)]],
                                                             uint i [[thread_position_in_grid]]) {
      a[i] = 1.0f;
    }"""
    kernel = ShaderLibrary(src).kernel("k")
    assert kernel.max_total_threads == 64
    kernel.launch({0: np.zeros(128, np.float32)}, LaunchGeometry((128, 1, 1), (64, 1, 1)))
    with pytest.raises(ArgumentError, match="allows at most 64"):
        kernel.launch({0: np.zeros(128, np.float32)}, LaunchGeometry((128, 1, 1), (128, 1, 1)))


def test_several_kernels_helpers_and_constants_in_one_shader() -> None:
    src = """
    constant float OFFSET = 0.5f;
    struct Pair { float a; float b; };
    inline float mix2(Pair p) { return p.a * 2.0f + p.b + OFFSET; }
    kernel void first(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      Pair p = {float(i), 1.0f};
      out[i] = mix2(p);
    }
    kernel void second(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = -float(i); }
    """
    lib = ShaderLibrary(src)
    out = launch(src, "first", {0: np.zeros(8, np.float32)}).outputs[0]
    np.testing.assert_array_equal(out, f32(8) * 2 + 1.5)
    np.testing.assert_array_equal(launch(src, "second", {0: np.zeros(8, np.float32)}).outputs[0], -f32(8))
    assert lib.kernel_names == ["first", "second"]


# ------------------------------------------------------------------------------ what a body run gives
COPY = """
kernel void copy(device const float* a [[buffer(0)]], device float* out [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
  for (int k = 0; k < 3; k++) {
    out[i] += a[i];
  }
}"""



def test_a_shader_larger_than_a_kernel_body_compiles() -> None:
    """A shader file carries its headers (PyTorch's c10/metal ones expand to tens of thousands of
    tokens): past the 50,000 tokens a kernel body may have, it still compiles and runs."""
    helpers = "".join(f"inline float helper{k}(float x) {{ return x + {k}.0f; }}\n" for k in range(4000))
    src = helpers + """
    kernel void use(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      out[i] = helper3999(float(i));
    }"""
    res = launch(src, "use", {0: np.zeros(8, np.float32)})
    np.testing.assert_array_equal(res.outputs[0], f32(8) + 3999)


def test_counts_trace_steps_and_cost_profile() -> None:
    res = launch(COPY, "copy", {0: f32(8), 1: np.zeros(8, np.float32)}, trace=True, steps=True, cost=None)
    np.testing.assert_array_equal(res.outputs[0], f32(8) * 3)
    np.testing.assert_array_equal(res.counts.global_reads, np.full(8, 6))  # a[i] and out[i], three times
    np.testing.assert_array_equal(res.counts.global_writes, np.full(8, 3))
    assert res.trace is not None and res.trace.element_accesses()
    assert res.steps and any("k" in step.values for step in res.steps)
    from metal_puzzles.msl.observe.gpu_models import DEFAULT_GPU
    costed = launch(COPY, "copy", {0: f32(8), 1: np.zeros(8, np.float32)}, cost=DEFAULT_GPU)
    assert costed.cost is not None


def test_the_step_budget_stops_a_whole_kernel() -> None:
    src = """
    kernel void spin(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      while (out[i] >= 0.0f) { out[i] += 1.0f; }
    }"""
    with pytest.raises(SanitizerError, match="after 500 steps") as info:
        launch(src, "spin", {0: np.zeros(8, np.float32)}, max_steps=500)
    assert info.value.result.stopped == StopReason.STEP_BUDGET


def test_c_semantics_hold_in_a_whole_kernel() -> None:
    """Unsigned wrap-around and integer division toward zero, as in the body path."""
    src = """
    kernel void k(device int* out [[buffer(0)]], device uint* wrapped [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
      out[i] = (int(i) - 4) / 3;
      wrapped[i] = i - 4u;
    }"""
    res = launch(src, "k", {0: np.zeros(8, np.int32), 1: np.zeros(8, np.uint32)})
    np.testing.assert_array_equal(res.outputs[0], np.trunc((np.arange(8) - 4) / 3).astype(np.int32))
    np.testing.assert_array_equal(res.outputs[1], (np.arange(8, dtype=np.uint32) - np.uint32(4)))


# ------------------------------------------------------------------------------ device references
def test_device_references_are_one_writable_object_in_a_buffer() -> None:
    """'device float& total' and 'device atomic_uint& count' bind one-element buffers the kernel
    updates; 'constant int& limit' stays read-only. 3 of the 6 values exceed 0.5; thread 0 adds
    limit (7) to total (1.5)."""
    src = """
    #include <metal_stdlib>
    using namespace metal;
    kernel void tally(device const float* x [[buffer(0)]], device atomic_uint& count [[buffer(1)]],
                      device float& total [[buffer(2)]], constant int& limit [[buffer(3)]],
                      uint i [[thread_position_in_grid]]) {
      if (x[i] > 0.5f) atomic_fetch_add_explicit(&count, 1u, memory_order_relaxed);
      if (i == 0) total += float(limit);
    }"""
    res = launch(src, "tally", {0: np.array([1, -2, 0.75, 0.5, 3, 0], np.float32), 1: np.zeros(1, np.uint32),
                                2: np.array([1.5], np.float32), 3: np.array(7, np.int32)},
                 threads=(6, 1, 1), group=(6, 1, 1))
    assert res.output_names == ["count", "total"]
    assert res.outputs[0].tolist() == [3] and res.outputs[1].tolist() == [8.5]


@pytest.mark.parametrize(("param", "message"), [
    ("device const float& total [[buffer(1)]]", "read-only"),
    ("constant float& total [[buffer(1)]]", "read-only reference to constant memory"),
    ("threadgroup float& total [[threadgroup(0)]]", "threadgroup reference"),
])
def test_what_a_reference_parameter_cannot_do_is_a_compile_error(param: str, message: str) -> None:
    src = f"""
    kernel void k(device const float* x [[buffer(0)]], {param}, uint i [[thread_position_in_grid]]) {{
      total = x[i];
    }}"""
    with pytest.raises(CompileError, match=message):
        ShaderLibrary(src).kernel("k")


def test_a_race_inside_one_simdgroup_of_a_larger_group_mentions_the_simdgroup_barrier() -> None:
    """Each SIMD-group of a 64-thread group works on its own 32-element tile: the race between
    lanes of SIMD-group 0 needs only a SIMD-group barrier, which the advice says beside the
    threadgroup barrier; in a group of one SIMD-group (the puzzles') the advice stays as it was."""
    src = """
    kernel void k(device float* out [[buffer(0)]], uint lid [[thread_position_in_threadgroup]],
                  uint sg [[simdgroup_index_in_threadgroup]], uint sl [[thread_index_in_simdgroup]]) {
      threadgroup float tile[64];
      tile[sg * 32 + sl] = float(lid);
      out[lid] = tile[sg * 32 + (sl + 1) % 32];
    }"""
    with pytest.raises(SanitizerError) as info:
        launch(src, "k", {0: np.zeros(64, np.float32)}, threads=(64, 1, 1), group=(64, 1, 1))
    message = info.value.findings[0].message
    assert "threadgroup_barrier(mem_flags::mem_threadgroup)" in message
    assert "one SIMD-group (0)" in message and "simdgroup_barrier(mem_flags::mem_threadgroup) is enough" in message
    with pytest.raises(SanitizerError) as small:
        launch(src, "k", {0: np.zeros(64, np.float32)}, threads=(32, 1, 1), group=(32, 1, 1))
    assert "simdgroup_barrier" not in small.value.findings[0].message


# ------------------------------------------------------------------------------ forms PyTorch's shaders use
def test_the_kernel_specifier_after_the_return_type() -> None:
    """'void kernel f(...)' is the same kernel as 'kernel void f(...)' (PyTorch's SpecialOps.metal
    writes it so), templated and instantiated too."""
    src = """
    void kernel twice(device float* out [[buffer(0)]], constant float* a [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) { out[i] = 2.0f * a[i]; }
    template <typename T0, typename T1>
    void kernel cvt(device T0* out, constant T1* a, uint i [[thread_position_in_grid]]) { out[i] = T0(a[i]) + T0(1); }
    template [[host_name("cvt_float_int")]] void kernel cvt<float, int>(device float*, constant int*, uint);
    """
    lib = ShaderLibrary(src)
    assert lib.kernel_names == ["twice", "cvt_float_int"]
    geometry = LaunchGeometry((4, 1, 1), (4, 1, 1))
    res = lib.kernel("twice").launch({0: np.zeros(4, np.float32), 1: f32(4)}, geometry)
    np.testing.assert_array_equal(res.outputs[0], [0, 2, 4, 6])
    res = lib.kernel("cvt_float_int").launch({0: np.zeros(4, np.float32), 1: np.array([7, -8, 9, 0], np.int32)},
                                             geometry)
    np.testing.assert_array_equal(res.outputs[0], [8, -7, 10, 1])


DEDUCED = """
template <typename T0, typename T1 = T0>
kernel void scaled(constant T0* input [[buffer(0)]], device T1* output [[buffer(1)]],
                   constant int64_t& k [[buffer(2)]], uint id [[thread_position_in_grid]]) {
  output[id] = static_cast<T1>(input[id] * T0(k));
}
#define INSTANTIATE(DTYPE0, DTYPE1)                                                        \\
  template [[host_name("scaled_" #DTYPE0 "_" #DTYPE1)]] kernel void scaled(                 \\
      constant DTYPE0* input [[buffer(0)]], device DTYPE1* output [[buffer(1)]],           \\
      constant int64_t& k [[buffer(2)]], uint id [[thread_position_in_grid]]);
INSTANTIATE(int, float)
INSTANTIATE(half, half)
"""


def test_an_instantiation_without_template_arguments_deduces_them_from_its_parameters() -> None:
    """C++ deduces 'template void f(constant int*, device float*, ...)' to f<int, float>, as
    PyTorch's Gamma.metal instantiates its kernels: the int kernel multiplies in int (7 * 3 = 21,
    then converts), the half one in half."""
    lib = ShaderLibrary(DEDUCED)
    assert lib.kernel_names == ["scaled_int_float", "scaled_half_half"]
    geometry = LaunchGeometry((4, 1, 1), (4, 1, 1))
    res = lib.kernel("scaled_int_float").launch(
        {0: np.array([7, -1, 2**30, 0], np.int32), 1: np.zeros(4, np.float32), 2: np.array(3, np.int64)}, geometry)
    np.testing.assert_array_equal(res.outputs[0], [21, -3, np.float32(np.int32(-2**30)), 0])  # 3 * 2^30 wraps in int
    half = np.array([0.5, 1000, 30000, -2], np.float16)
    res = lib.kernel("scaled_half_half").launch({0: half, 1: np.zeros(4, np.float16), 2: np.array(3, np.int64)},
                                                geometry)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(res.outputs[0], half * np.float16(3))


@pytest.mark.parametrize(("instantiation", "message"), [
    ('template [[host_name("g")]] kernel void g(device float* out, uint i);',
     "does not say what 'T' is"),
    ('template [[host_name("g")]] kernel void g(device float* out);', "declares 1 parameter"),
])
def test_an_instantiation_that_deduces_nothing_says_what_is_missing(instantiation: str, message: str) -> None:
    src = f"""
    template <typename T, typename U>
    kernel void g(device U* out, uint i [[thread_position_in_grid]]) {{ out[i] = U(T(i)); }}
    {instantiation}"""
    with pytest.raises(CompileError, match=message):
        ShaderLibrary(src).kernel("g")


def test_a_constant_reference_passes_on_to_a_helper_taking_one() -> None:
    """A helper's 'constant array<float, 3>& v' binds the kernel's own constant reference (PyTorch's
    RangeFactories.metal): constant memory is read-only whether or not the reference says const,
    and the helper may not write through it."""
    src = """
    #include <metal_array>
    using namespace metal;
    inline float at(uint i, constant array<float, 3>& v) { return v[0] + v[1] * float(i); }
    kernel void lin(device float* out [[buffer(0)]], constant array<float, 3>& v [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) { out[i] = at(i, v); }
    """
    res = launch(src, "lin", {0: np.zeros(4, np.float32), 1: np.array([1, 0.5, 9], np.float32)},
                 threads=(4, 1, 1), group=(4, 1, 1))
    np.testing.assert_array_equal(res.outputs[0], [1, 1.5, 2, 2.5])
    writes = src.replace("return v[0]", "v[0] = 2.0f; return v[0]")
    with pytest.raises(CompileError, match="read-only"):
        ShaderLibrary(writes).kernel("lin")


# ------------------------------------------------------------------------------ one checked header per shader
def test_kernels_share_the_checked_header_but_not_their_template_arguments() -> None:
    """The shader's declarations are checked once and serve every kernel; a kernel's template
    parameter 'T' is its own name: the helper below means the file's 'T' (int), as in C++, for
    every instantiation, whichever compiled first."""
    src = """
    typedef int T;
    inline T halve(T x) { return x / 2; }           // the file's T: integer division
    template <typename S>
    inline S twice(S x) { return x + x; }
    template <typename T>
    kernel void k(device T* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      out[i] = T(halve(int(i) + 1)) + twice(T(i));
    }
    template [[host_name("k_float")]] kernel void k<float>(device float*, uint);
    template [[host_name("k_int")]] kernel void k<int>(device int*, uint);
    """
    lib = ShaderLibrary(src)
    geometry = LaunchGeometry((4, 1, 1), (4, 1, 1))
    expected = [(i + 1) // 2 + 2 * i for i in range(4)]
    out_float = lib.kernel("k_float").launch({0: np.zeros(4, np.float32)}, geometry).outputs[0]
    out_int = lib.kernel("k_int").launch({0: np.zeros(4, np.int32)}, geometry).outputs[0]
    assert out_float.tolist() == expected and out_int.tolist() == expected
    assert out_float.dtype == np.float32 and out_int.dtype == np.int32


def test_a_kernel_that_does_not_compile_leaves_the_others_compiling() -> None:
    """The shared checked header is made anew after a kernel fails part-way (a helper instance
    half-checked must not serve the next kernel as if it were fine)."""
    src = """
    template <typename T>
    inline T bad(T x) { return x.missing; }  // no member on a scalar: fails when instantiated
    template <typename T>
    inline T good(T x) { return x * T(3); }
    template <typename T>
    kernel void uses_bad(device T* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = bad(T(i)); }
    template <typename T>
    kernel void uses_good(device T* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = good(T(i)); }
    template [[host_name("bad_float")]] kernel void uses_bad<float>(device float*, uint);
    template [[host_name("good_float")]] kernel void uses_good<float>(device float*, uint);
    """
    lib = ShaderLibrary(src)
    for _ in range(2):  # the failure is reported each time it is asked for, never cached as a kernel
        with pytest.raises(CompileError, match="missing"):
            lib.kernel("bad_float")
    res = lib.kernel("good_float").launch({0: np.zeros(4, np.float32)}, LaunchGeometry((4, 1, 1), (4, 1, 1)))
    np.testing.assert_array_equal(res.outputs[0], [0, 3, 6, 9])


def test_a_shader_with_an_argument_buffer_compiles_and_only_its_kernel_is_refused() -> None:
    """PyTorch's Amp.metal declares an argument buffer (a struct of device pointers with
    [[id(n)]]) beside plain kernels: the library builds, the plain kernels run, and the kernel that
    takes the argument buffer is a precise error naming it (the simulator has no pointers in structs)."""
    src = """
    template <typename T>
    struct Tensors { metal::array<device T*, 4> data [[id(0)]]; };
    template <typename T>
    kernel void scale_all(constant Tensors<T>& tensors [[buffer(0)]], constant T& s [[buffer(1)]],
                          uint2 pos [[thread_position_in_grid]]) { tensors.data[pos.y][pos.x] *= s; }
    template <typename T>
    kernel void scale_one(device T* data [[buffer(0)]], constant T& s [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) { data[i] *= s; }
    template [[host_name("scale_all_float")]] kernel void scale_all<float>(constant Tensors<float>&, constant float&, uint2);
    template [[host_name("scale_one_float")]] kernel void scale_one<float>(device float*, constant float&, uint);
    """
    lib = ShaderLibrary(src)
    res = lib.kernel("scale_one_float").launch({0: f32(4), 1: np.array(2, np.float32)},
                                               LaunchGeometry((4, 1, 1), (4, 1, 1)))
    np.testing.assert_array_equal(res.outputs[0], [0, 2, 4, 6])
    with pytest.raises(CompileError, match=r"'Tensors' is an argument buffer \(its members carry \[\[id\(n\)\]\], "
                                           r"line 3\)"):
        lib.kernel("scale_all_float")
