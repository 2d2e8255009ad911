"""``compile_shader`` with CPU ``torch.Tensor`` arguments, taken through DLPack / ``__array__``
without the package importing torch. Runs only where torch is importable (CI has no torch:
PyPI's Linux wheels pull gigabytes of CUDA libraries); the GPU machine has it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from metal_puzzles import compile_shader  # noqa: E402

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
