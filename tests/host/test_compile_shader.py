"""``compile_shader``, the drop-in for ``torch.mps.compile_shader`` (issue 23, item 2), with
NumPy and MLX arrays and a foreign array seen only through DLPack. PyTorch's rules (from
``torch/csrc/mps/Module.cpp`` and ``MetalKernelFunction::dispatch``): argument i binds to
buffer i; a float is set as float32, an int as int64, a list as an array of those; ``threads``
defaults to the first array's element count; without ``group_size`` a 1-D launch uses
min(threads, the maximum threadgroup size) and a 2-D one that maximum along x."""

from __future__ import annotations

import os
import subprocess
import sys

import mlx.core as mx
import numpy as np
import pytest

from metal_puzzles import SanitizerError, compile_shader
from metal_puzzles.msl import ArgumentError, CompileError
from support.msl_snippets import BYTE_OFFSET_ACCESS

SHADER = """
#include <metal_stdlib>
using namespace metal;

kernel void full(device float* out, constant float& val, uint idx [[thread_position_in_grid]]) {
  out[idx] = val;
}

kernel void where_am_i(device uint* out [[buffer(0)]], uint3 pos [[thread_position_in_grid]],
                       uint3 group [[threads_per_threadgroup]], uint3 grid [[threads_per_grid]]) {
  if (pos.x == 0 && pos.y == 0) {
    out[0] = group.x; out[1] = group.y; out[2] = grid.x; out[3] = grid.y;
  }
}

kernel void take_long(device long* out [[buffer(0)]], constant long& big [[buffer(1)]],
                      constant int& small [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  out[0] = big;
  out[1] = small;
}

kernel void dot3(device float* out [[buffer(0)]], constant float* w [[buffer(1)]],
                 device const float* x [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  out[i] = w[0] * x[3 * i] + w[1] * x[3 * i + 1] + w[2] * x[3 * i + 2];
}

kernel void pick(device int* out [[buffer(0)]], constant int* idx [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  out[i] = idx[i];
}

template <typename T>
kernel void add(device const T* a [[buffer(0)]], device const T* b [[buffer(1)]], device T* c [[buffer(2)]],
                uint i [[thread_position_in_grid]]) {
  c[i] = a[i] + b[i];
}
#define ADD(T) template [[host_name("add_" #T)]] kernel void add<T>(device const T*, device const T*, device T*, uint);
ADD(float)
ADD(half)
ADD(bfloat)
ADD(int)
"""


@pytest.fixture(scope="module")
def lib():
    return compile_shader(SHADER)


def test_kernels_are_attributes_by_host_name(lib) -> None:
    assert sorted(dir(lib)) == sorted(["full", "where_am_i", "take_long", "dot3", "pick", "add_float", "add_half",
                                       "add_bfloat", "add_int"])


def test_numpy_arrays_are_written_in_place_and_threads_default_to_the_first_arrays_size(lib) -> None:
    x = np.zeros(16, np.float32)
    assert lib.full(x, 3.14) is None  # as PyTorch's call, it returns nothing
    np.testing.assert_array_equal(x, np.full(16, 3.14, np.float32))
    assert lib.full.last_run.grid == (16, 1, 1) and lib.full.last_run.threadgroup == (16, 1, 1)


def test_group_size_defaults_as_pytorch_dispatches(lib) -> None:
    out = np.zeros(4, np.uint32)
    lib.where_am_i(out, threads=2000)  # 1-D: min(threads, max threads per threadgroup)
    np.testing.assert_array_equal(out, [1024, 1, 2000, 1])
    lib.where_am_i(out, threads=(48, 6))  # 2-D: the maximum along x (here no wider than the grid)
    np.testing.assert_array_equal(out, [48, 1, 48, 6])
    lib.where_am_i(out, threads=(8, 8), group_size=(4, 2))
    np.testing.assert_array_equal(out, [4, 2, 8, 8])
    lib.where_am_i(out, threads=[5], group_size=5)
    np.testing.assert_array_equal(out, [5, 1, 5, 1])


def test_python_ints_bind_as_int64_and_floats_as_float32(lib) -> None:
    out = np.zeros(2, np.int64)
    lib.take_long(out, 2**40 + 7, 123, threads=1)
    np.testing.assert_array_equal(out, [2**40 + 7, 123])  # 'constant int&' reads the low half of the int64
    with pytest.raises(ArgumentError, match="is a float32 value"):
        lib.take_long(out, 1.5, 1, threads=1)


def test_sequences_bind_as_constant_arrays(lib) -> None:
    x = np.arange(12, dtype=np.float32)
    out = np.zeros(4, np.float32)
    lib.dot3(out, [1.0, 10.0, 100.0], x)
    np.testing.assert_array_equal(out, x.reshape(4, 3) @ np.array([1, 10, 100], np.float32))


def test_a_list_of_ints_is_int64_unless_cast(lib) -> None:
    out = np.zeros(3, np.int32)
    with pytest.raises(ArgumentError, match="holds int64 elements; the kernel reads int"):
        lib.pick(out, [7, 8, 9])
    lib.pick(out, [7, 8, 9], arg_casts={1: "int32"})
    np.testing.assert_array_equal(out, [7, 8, 9])
    out[:] = 0
    lib.pick(out, [4, 5, 6], arg_casts="int32")
    np.testing.assert_array_equal(out, [4, 5, 6])


def test_mlx_arrays_are_written_in_place(lib) -> None:
    a = mx.arange(8, dtype=mx.float32)
    c = mx.zeros(8, dtype=mx.float32)
    lib.add_float(a, a, c)
    np.testing.assert_array_equal(np.array(c), np.arange(8) * 2)
    hb = mx.array([1.5, 2.25, 3.0], dtype=mx.bfloat16)
    out = mx.zeros(3, dtype=mx.bfloat16)
    lib.add_bfloat(hb, hb, out)
    assert out.dtype == mx.bfloat16
    np.testing.assert_array_equal(np.array(out.astype(mx.float32)), [3.0, 4.5, 6.0])


def test_half_kernels_with_numpy_half(lib) -> None:
    a = np.array([0.5, 1000, 65504], np.float16)
    c = np.zeros(3, np.float16)
    lib.add_half(a, np.ones(3, np.float16), c)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(c, a + np.float16(1))


class ForeignArray:
    """An array from another library, reachable only through DLPack (as a CPU torch.Tensor is)."""

    def __init__(self, data: np.ndarray) -> None:
        self._data = data

    def __dlpack__(self, **kwargs):
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape


def test_arrays_are_taken_and_written_through_dlpack(lib) -> None:
    storage = np.zeros(6, np.int32)
    a = ForeignArray(np.arange(6, dtype=np.int32))
    lib.add_int(a, a, ForeignArray(storage))
    np.testing.assert_array_equal(storage, np.arange(6) * 2)


def test_wrong_argument_count(lib) -> None:
    with pytest.raises(ArgumentError, match=r"takes 3 argument\(s\) \(a \[\[buffer\(0\)\]\], b .*; 2 were given"):
        lib.add_float(np.zeros(4, np.float32), np.zeros(4, np.float32))
    with pytest.raises(RuntimeError, match="2 were given"):  # what PyTorch raises, for code written against it
        lib.add_float(np.zeros(4, np.float32), np.zeros(4, np.float32))


def test_dtype_that_does_not_match_the_buffer(lib) -> None:
    with pytest.raises(ArgumentError, match=r"argument 1 \('b', device const float\*\) holds float64 elements"):
        lib.add_float(np.zeros(4, np.float32), np.zeros(4), np.zeros(4, np.float32))


def test_unknown_kernel_name_suggests_the_closest(lib) -> None:
    with pytest.raises(AttributeError, match="no kernel named 'add_flot'; did you mean 'add_float'"):
        _ = lib.add_flot
    with pytest.raises(RuntimeError, match="no kernel named"):  # PyTorch's error type; hasattr still works
        _ = lib.add_flot
    assert not hasattr(lib, "add_flot") and getattr(lib, "add_flot", None) is None


def test_threads_and_group_size_rules(lib) -> None:
    out = np.zeros(4, np.uint32)
    with pytest.raises(ArgumentError, match="same number of dimensions"):
        lib.where_am_i(out, threads=(4, 4), group_size=4)
    with pytest.raises(ArgumentError, match="1 to 3 dimensions"):
        lib.where_am_i(out, threads=(1, 2, 3, 4))
    with pytest.raises(ArgumentError, match="number of threads is undefined"):
        lib.take_long([1, 2], 1, 2)
    with pytest.raises(ArgumentError, match="empty list"):
        lib.pick(np.zeros(3, np.int32), [])


def test_sanitize_cost_and_the_run_record(lib) -> None:
    a = np.zeros(4, np.float32)
    with pytest.raises(SanitizerError, match="out-of-bounds"):
        lib.full(a, 1.0, threads=8, sanitize="error")
    with pytest.warns(RuntimeWarning, match="out-of-bounds"):
        lib.add_float(np.zeros(4, np.float32), np.zeros(4, np.float32), np.zeros(4, np.float32), threads=6)
    lib.full(a, 2.0, cost=True)
    assert lib.full.last_run.cost is not None
    np.testing.assert_array_equal(lib.full.last_run.counts.global_writes, np.ones(4))


def test_replay_for_the_explorer_does_not_write_again(lib) -> None:
    a = np.zeros(4, np.float32)
    lib.full(a, 2.0)
    a[:] = -1
    replayed = lib.full.replay(trace=True, steps=True)
    np.testing.assert_array_equal(a, -np.ones(4))
    np.testing.assert_array_equal(replayed.outputs[0], np.full(4, 2.0))
    assert replayed.trace is not None and replayed.steps


def test_a_shader_that_does_not_compile_raises_with_the_line_when_compiled() -> None:
    """As torch.mps.compile_shader does, errors in a kernel, and in a helper function it calls or a
    constant, are reported by compile_shader itself, not at the first call."""
    with pytest.raises(CompileError, match="source:2"):
        compile_shader("kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
                       "  a[i] = undefined_name;\n}")
    with pytest.raises(CompileError, match="source:1:.*'int' to 'thread float\\*'"):
        compile_shader("inline float helper(float x) { thread float* p = 1; return x; }\n"
                       "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) "
                       "{ a[i] = helper(1.0f); }")
    with pytest.raises(CompileError, match="source:1"):
        compile_shader("constant float table[2] = {1.0f, no_such_constant};\n"
                       "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] = 1; }")


def test_a_template_kernel_compiles_for_its_instantiation_when_first_used() -> None:
    lib = compile_shader("template <typename T> kernel void k(device T* a [[buffer(0)]], uint i "
                         "[[thread_position_in_grid]]) {\n  a[i] = T(undefined_name);\n}\n"
                         "template [[host_name(\"k_float\")]] kernel void k<float>(device float*, uint);")
    with pytest.raises(CompileError, match="source:2"):
        _ = lib.k_float


def test_running_a_shader_imports_neither_torch_nor_mlx() -> None:
    """Arrays come through the protocols (DLPack, __array__): a PyTorch developer needs neither."""
    code = ("import sys, numpy as np, metal_puzzles as mp\n"
            "lib = mp.compile_shader('kernel void k(device float* a, uint i [[thread_position_in_grid]]) { a[i] = 1; }')\n"
            "a = np.zeros(4, np.float32); lib.k(a); assert a.tolist() == [1, 1, 1, 1]\n"
            "print('torch' in sys.modules, 'mlx' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False False"


def test_explore_opens_the_explorer_on_a_shader_kernels_last_call(lib) -> None:
    from metal_puzzles import explore
    from metal_puzzles.explorer.widgets import Explorer

    a = np.zeros(8, np.float32)
    lib.full(a, 1.5)
    explorer = explore(lib.full)
    assert isinstance(explorer, Explorer)
    np.testing.assert_array_equal(a, np.full(8, 1.5))  # exploring ran the kernel again without writing


STRIDED = BYTE_OFFSET_ACCESS + """
kernel void negate_strided(device void* out [[buffer(0)]], constant void* in [[buffer(1)]],
                           constant long* sizes [[buffer(2)]], constant long* out_strides [[buffer(3)]],
                           constant long* in_strides [[buffer(4)]], uint i [[thread_position_in_grid]]) {
  long r = i / sizes[1], c = i % sizes[1];
  element_at<float>(out, (r * out_strides[0] + c * out_strides[1]) * 4) =
      -load_at<float>(in, (r * in_strides[0] + c * in_strides[1]) * 4);
}
"""


@pytest.mark.parametrize("wrap", [lambda a: a, ForeignArray], ids=["numpy", "dlpack"])
def test_a_strided_view_binds_its_storage_as_pytorch_binds_a_tensor(wrap) -> None:
    """A transposed, sliced view reaches the kernel as its storage from its first element, so
    element strides address it; the kernel's writes through another view land in that view's
    storage, and storage between the view's elements keeps its values."""
    lib = compile_shader(STRIDED)
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = base[:, 1:4].T                      # 3 x 4, element strides (1, 6), first element base[0, 1]
    out_base = np.full((4, 5), 7.0, np.float32)
    out = out_base[:, :3].T                    # 3 x 4, element strides (1, 5)
    lib.negate_strided(wrap(out), wrap(view), list(view.shape), [s // 4 for s in out.strides],
                       [s // 4 for s in view.strides], threads=view.size)
    np.testing.assert_array_equal(out, -view)
    np.testing.assert_array_equal(out_base[:, 3:], 7.0)  # storage between the view's rows is untouched


def test_bfloat16_arrays_through_dlpack_are_read_and_written_as_their_bits(lib) -> None:
    """NumPy has no bfloat16, so a bfloat16 DLPack capsule (a CPU torch tensor, here an MLX array
    behind the protocol alone) is read as its 16-bit patterns: the sums are bfloat sums (1.0 +
    0.00390625 rounds to 1.0 in bfloat, whose significand has 8 bits) and land in the caller's
    memory."""
    a = mx.array([1.0, 2.5, -3.0, 1.0], dtype=mx.bfloat16)
    b = mx.array([0.5, 0.25, 8.0, 0.00390625], dtype=mx.bfloat16)
    c = mx.zeros((4,), dtype=mx.bfloat16)
    lib.add_bfloat(ForeignArray(a), ForeignArray(b), ForeignArray(c))
    assert c.dtype == mx.bfloat16
    assert c.astype(mx.float32).tolist() == [1.5, 2.75, 5.0, 1.0]


def test_a_strided_bfloat16_view_through_dlpack_binds_its_storage() -> None:
    lib = compile_shader("""
    kernel void twice(device bfloat* x [[buffer(0)]], constant long& stride [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
      x[i * stride] = x[i * stride] * bfloat(2.0f);
    }""")
    base = mx.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]], dtype=mx.bfloat16)
    column = ForeignArray(base[:, 0])           # every other element of the storage
    lib.twice(column, 2, threads=3)
    assert base.astype(mx.float32).tolist() == [[2.0, 10.0], [4.0, 20.0], [6.0, 30.0]]


def test_complex64_arrays_bind_as_float2_pairs_and_are_written_back() -> None:
    lib = compile_shader("""
    kernel void rotate(device float2* z [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      z[i] = float2(-z[i].y, z[i].x);   // times i
    }""")
    z = np.array([1 + 2j, -3 - 0.5j, 4j], np.complex64)
    want = z * 1j
    lib.rotate(z)
    np.testing.assert_array_equal(z, want)


# ------------------------------------------------------------------------------ #include, as PyTorch embeds headers
HELPERS_H = """#pragma once
#include <metal_stdlib>
#include <mine/more.h>
namespace mine {
template <typename T> inline T twice(T x) { return x + x; }
}
"""
MORE_H = """#pragma once
#define MINE_OFFSET 5
namespace mine { inline float shifted(float x) { return x + MINE_OFFSET; } }
"""


@pytest.fixture
def include_dir(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "helpers.h").write_text(HELPERS_H)
    (tmp_path / "mine" / "more.h").write_text(MORE_H)
    return tmp_path


def test_include_reads_header_files_once_from_the_include_folders(include_dir) -> None:
    """'#include <mine/helpers.h>' reads the file (and what it includes) as PyTorch's compile_shader
    embeds torch's c10/metal headers: each file once, however often it is included; its macros
    reach the shader."""
    lib = compile_shader("#include <mine/helpers.h>\n#include <mine/more.h>\n#include <mine/helpers.h>\n"
                         "kernel void k(device float* a, uint i [[thread_position_in_grid]]) {\n"
                         "  a[i] = mine::shifted(mine::twice(a[i])) + MINE_OFFSET;\n}\n", include_dirs=[include_dir])
    a = np.arange(4, dtype=np.float32)
    lib.k(a)
    assert a.tolist() == [10, 12, 14, 16]


def test_an_error_inside_an_included_header_quotes_the_header(include_dir) -> None:
    (include_dir / "mine" / "broken.h").write_text("#pragma once\ninline float broken(float x) {\n  return x + nope;\n}\n")
    with pytest.raises(CompileError) as info:
        lib = compile_shader("#include <mine/broken.h>\nkernel void k(device float* a, uint i "
                             "[[thread_position_in_grid]]) { a[i] = broken(a[i]); }", include_dirs=[include_dir])
        _ = lib.k
    assert str(info.value).startswith("mine/broken.h:3:14: error: use of undeclared identifier 'nope'")
    assert "  return x + nope;\n             ^" in str(info.value)


def test_a_header_in_no_include_folder_says_where_it_looked(include_dir) -> None:
    with pytest.raises(CompileError, match=r"'mine/absent\.h' file not found \((looked in|PyTorch's c10/metal)"):
        compile_shader("#include <mine/absent.h>\nkernel void k(device float* a) {}", include_dirs=[include_dir])


def test_c10_headers_come_from_torchs_include_folder_without_importing_torch(tmp_path) -> None:
    """A (stand-in) torch package on the path: its include folder serves '#include <c10/metal/...>'
    as torch.mps.compile_shader's does, and torch is never imported."""
    fake = tmp_path / "torch"
    (fake / "include" / "c10" / "metal").mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('the stand-in torch must not be imported')\n")
    (fake / "include" / "c10" / "metal" / "utils.h").write_text(
        "#pragma once\nnamespace c10 { namespace metal {\n"
        "template <typename T> inline T safe_mod(T a, T b) { T r = a % b; return r < 0 ? r + b : r; }\n}}\n")
    code = ("import sys, numpy as np, metal_puzzles as mp\n"
            "lib = mp.compile_shader('#include <c10/metal/utils.h>\\n"
            "kernel void k(device int* a, uint i [[thread_position_in_grid]]) "
            "{ a[i] = c10::metal::safe_mod(a[i], 3); }')\n"
            "a = np.array([-4, -1, 5, 7], np.int32); lib.k(a)\n"
            "print(a.tolist(), 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[2, 2, 2, 1] False"


# ------------------------------------------------------------------------------ buffers declared with another type
HALF_ATOMIC = """
#include <metal_stdlib>
using namespace metal;
// c10/metal/atomic.h's way to add halves atomically: the half buffer is declared 'atomic<uint>',
// each thread swaps the word holding its half with the sum written into it.
template <typename T>
kernel void add_into(device atomic<uint>* words [[buffer(0)]], constant T* inc [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
  uint k = i & 3;  // threads 0, 4, 8... add into element 0; 1, 5, 9... into element 1...
  device atomic<uint>* word = words + k / 2;
  uint old = atomic_load_explicit(word, memory_order_relaxed);
  union { uint w; T t[2]; } val;
  do {
    val.w = old;
    val.t[k & 1] += inc[i];
  } while (!atomic_compare_exchange_weak_explicit(word, &old, val.w, memory_order_relaxed, memory_order_relaxed));
}
template [[host_name("add_into_half")]] kernel void add_into<half>(device atomic<uint>*, constant half*, uint);
template [[host_name("add_into_bfloat")]] kernel void add_into<bfloat>(device atomic<uint>*, constant bfloat*, uint);
"""


def test_a_half_array_bound_to_an_atomic_uint_buffer_is_read_and_written_as_its_bytes() -> None:
    """Metal binds bytes: the kernel sees the 8 halves as 4 words and its sums land in the
    halves (element k gets the increments of threads k, k+4, k+8, k+12)."""
    lib = compile_shader(HALF_ATOMIC)
    out = np.arange(8, dtype=np.float16)
    inc = np.arange(16, dtype=np.float16)
    lib.add_into_half(out, inc, threads=16, sanitize="error")  # not the first array's 8
    want = np.arange(8, dtype=np.float16)
    want[:4] += np.array([sum(range(k, 16, 4)) for k in range(4)], np.float16)
    np.testing.assert_array_equal(out, want)


def test_an_mlx_bfloat16_array_bound_to_an_atomic_uint_buffer_keeps_its_bits() -> None:
    lib = compile_shader(HALF_ATOMIC)
    out = mx.zeros((4,), dtype=mx.bfloat16)
    lib.add_into_bfloat(out, mx.ones((16,), dtype=mx.bfloat16), threads=16, sanitize="error")
    assert out.astype(mx.float32).tolist() == [4.0, 4.0, 4.0, 4.0]


def test_a_float64_scalar_array_binds_as_a_float_as_pytorch_takes_a_cpu_scalar_tensor(lib) -> None:
    x = np.zeros(4, np.float32)
    lib.full(x, np.array(2.5))  # float64, 0-d: a Python float's value, set as float32
    assert x.tolist() == [2.5] * 4
    with pytest.raises(ArgumentError, match="holds float64 elements"):
        lib.full(x, np.array([2.5]))  # a float64 buffer is still refused


def test_a_shader_that_does_not_compile_is_a_syntax_error_as_in_pytorch() -> None:
    """PyTorch raises SyntaxError; the error keeps the compiler's text and gives tracebacks the
    file, line and column to point at."""
    with pytest.raises(SyntaxError) as info:
        compile_shader("kernel void k(device float* a, uint i [[thread_position_in_grid]]) {\n  a[i] = nope;\n}")
    err = info.value
    assert isinstance(err, CompileError)
    assert str(err).startswith("source:2:10: error: use of undeclared identifier 'nope'")
    assert (err.filename, err.lineno, err.offset, err.text, err.msg) == (
        "source", 2, 10, "  a[i] = nope;", "use of undeclared identifier 'nope'")
