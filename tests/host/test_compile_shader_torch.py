"""``compile_shader`` with CPU ``torch.Tensor`` arguments, taken through DLPack / ``__array__``
without the package importing torch. Runs only where torch is importable (CI has no torch:
PyPI's Linux wheels pull gigabytes of CUDA libraries); the GPU machine has it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from metal_puzzles import compile_shader  # noqa: E402
from support.msl_snippets import BYTE_OFFSET_ACCESS  # noqa: E402

SHADER = """
kernel void full(device float* out, constant float& val, uint idx [[thread_position_in_grid]]) {
  out[idx] = val;
}
template <typename T>
kernel void mul(device const T* a [[buffer(0)]], device const T* b [[buffer(1)]], device T* c [[buffer(2)]],
                uint i [[thread_position_in_grid]]) {
  c[i] = a[i] * b[i];
}
template [[host_name("mul_float")]] kernel void mul<float>(device const float*, device const float*, device float*, uint);
template [[host_name("mul_half")]] kernel void mul<half>(device const half*, device const half*, device half*, uint);
template [[host_name("mul_int")]] kernel void mul<int>(device const int*, device const int*, device int*, uint);
"""


def test_pytorch_docstring_example_on_a_cpu_tensor() -> None:
    lib = compile_shader(SHADER)
    x = torch.zeros(16)
    lib.full(x, 3.14)
    assert torch.allclose(x, torch.full((16,), 3.14))


@pytest.mark.parametrize(("kernel", "dtype"), [("mul_float", torch.float32), ("mul_half", torch.float16),
                                               ("mul_int", torch.int32)])
def test_elementwise_results_agree_with_torch_on_cpu(kernel: str, dtype) -> None:
    lib = compile_shader(SHADER)
    a = (torch.arange(10) - 4).to(dtype)
    b = (torch.arange(10) % 3 + 1).to(dtype)
    c = torch.empty(10, dtype=dtype)
    getattr(lib, kernel)(a, b, c)
    assert torch.equal(c, a * b)


def test_a_wrong_tensor_dtype_is_refused() -> None:
    lib = compile_shader(SHADER)
    with pytest.raises(Exception, match="holds float64 elements"):
        lib.mul_float(torch.zeros(4, dtype=torch.float64), torch.zeros(4), torch.zeros(4))


STRIDED = BYTE_OFFSET_ACCESS + """
// out = a * b over 2-D views, each with its own element strides (sizes and strides as PyTorch's host code
// passes them: longs, strides in elements, turned into bytes here).
template <typename T>
kernel void mul_strided(device void* out [[buffer(0)]], constant void* a [[buffer(1)]], constant void* b [[buffer(2)]],
                        constant long* sizes [[buffer(3)]], constant long* strides [[buffer(4)]],
                        uint i [[thread_position_in_grid]]) {
  long r = i / sizes[1], c = i % sizes[1];
  long o = (r * strides[0] + c * strides[1]) * sizeof(T);
  long x = (r * strides[2] + c * strides[3]) * sizeof(T);
  long y = (r * strides[4] + c * strides[5]) * sizeof(T);
  element_at<T>(out, o) = load_at<T>(a, x) * load_at<T>(b, y);
}
#define MUL(T) template [[host_name("mul_strided_" #T)]] kernel void mul_strided<T>( \\
    device void*, constant void*, constant void*, constant long*, constant long*, uint);
MUL(float)
MUL(bfloat)
MUL(half)
"""


@pytest.mark.parametrize(("kernel", "dtype"), [("mul_strided_float", torch.float32),
                                               ("mul_strided_bfloat", torch.bfloat16),
                                               ("mul_strided_half", torch.float16)])
def test_strided_tensors_bind_their_storage_and_agree_with_torch(kernel: str, dtype) -> None:
    """A transposed tensor, a column slice and a contiguous output view: the kernel addresses each
    through its own strides, as PyTorch's strided MPS kernels do; bfloat16 comes through DLPack
    as its bits."""
    lib = compile_shader(STRIDED)
    a = (torch.arange(20, dtype=torch.float32).reshape(4, 5) / 4).to(dtype).t()    # 5 x 4, strides (1, 5)
    b = (torch.arange(30, dtype=torch.float32).reshape(5, 6) - 7).to(dtype)[:, 1:5]  # 5 x 4, strides (6, 1)
    out_storage = torch.full((4, 5), -1.0, dtype=dtype)
    out = out_storage.t()                                                          # 5 x 4, strides (1, 5)
    strides = list(out.stride()) + list(a.stride()) + list(b.stride())
    getattr(lib, kernel)(out, a, b, list(out.shape), strides, threads=out.numel())
    assert torch.equal(out, a * b)


def test_a_bfloat16_tensor_through_dlpack_is_written_in_place() -> None:
    lib = compile_shader("""
    kernel void halve(device bfloat* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      x[i] = x[i] * bfloat(0.5f);
    }""")
    x = torch.tensor([3.0, -1.5, 1024.0, 0.375], dtype=torch.bfloat16)
    want = x / 2
    lib.halve(x)
    assert x.dtype == torch.bfloat16 and torch.equal(x, want)


def test_complex_tensors_are_float2_pairs() -> None:
    lib = compile_shader("""
    kernel void conj(device float2* z [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      z[i] = float2(z[i].x, -z[i].y);
    }""")
    z = torch.tensor([1 + 2j, -3 - 0.5j, 4j], dtype=torch.complex64)
    want = z.conj().resolve_conj()
    lib.conj(z)
    assert torch.equal(z, want)


def test_c10_metal_headers_come_from_this_torchs_include_folder() -> None:
    """'#include <c10/metal/utils.h>' is read from the installed torch (PyTorch's own
    test_metal_compiler_bug_workaround: (idx / 65536) % 6 through c10's safe_mod)."""
    lib = compile_shader("""
    #include <c10/metal/utils.h>
    kernel void func(device int* out, uint idx [[thread_position_in_grid]]) {
        out[idx] = c10::metal::safe_mod(int(idx / 65536), 6);
    }""")
    out = torch.full((128,), -1, dtype=torch.int32)
    lib.func(out)
    assert torch.equal(out, torch.zeros(128, dtype=torch.int32))


def test_a_float64_scalar_tensor_binds_as_a_float() -> None:
    """PyTorch's test_metal_arange_with_arg_and_scalar_tensor_float64: a CPU scalar tensor of
    float64 for 'constant float& step'."""
    lib = compile_shader("""
    kernel void arange(device float* x, constant float& start, constant float& step,
                       uint idx [[thread_position_in_grid]]) { x[idx] = start + idx * step; }""")
    x = torch.zeros(12)
    lib.arange(x, 3.14, torch.tensor(0.5, dtype=torch.float64))
    assert torch.allclose(x, torch.arange(3.14, 8.66, 0.5))


@pytest.mark.parametrize(("metal", "dtype"), [("half", torch.float16), ("bfloat", torch.bfloat16)])
def test_half_tensors_added_through_a_32_bit_atomic_as_c10_does(metal: str, dtype) -> None:
    """PyTorch's test_atomic_add: AtomicType<half>::type is atomic<uint>; the tensor's bytes are
    the words the kernel swaps, and its results come back as the tensor's halves."""
    lib = compile_shader(f"""
    #include <c10/metal/atomic.h>
    using namespace c10::metal;
    kernel void atomic_add(device AtomicType<{metal}>::type* out, constant {metal}* inc,
                           uint idx [[thread_position_in_grid]]) {{
        AtomicType<{metal}>::atomic_add(out, idx & 1 ? 3 : 4, inc[idx]);
    }}""")
    x = torch.arange(16, dtype=dtype)
    lib.atomic_add(x, torch.arange(16, dtype=dtype), sanitize="error")
    assert (x[3].item(), x[4].item()) == (67.0, 60.0)  # 3 + (1 + 3 + ... + 15), 4 + (0 + 2 + ... + 14)
