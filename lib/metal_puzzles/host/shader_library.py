"""``compile_shader``: a drop-in for ``torch.mps.compile_shader`` that runs on the simulator.

``lib = compile_shader(source)`` compiles a whole Metal shader; ``lib.add_float(x, y, out)``
runs its kernel with host name ``add_float``, binding the i-th argument to ``[[buffer(i)]]``
and writing what the kernel stores back into the arrays passed, as the GPU does. The rules
follow PyTorch's binding (``torch/csrc/mps/Module.cpp`` and ``MetalKernelFunction`` in
``OperationUtils.mm``): arrays bind as buffers; a Python float is set as a float32, an int as an
int64, a list or tuple as an array of those (``arg_casts`` converts them as PyTorch does);
``threads`` defaults to the first array's element count; without ``group_size`` a 1-D launch
uses min(threads, the kernel's maximum threadgroup size) and a 2-D or 3-D one that maximum
along x. Arrays may be NumPy arrays, ``mx.array`` or anything with ``__dlpack__`` or
``__array__`` (a CPU ``torch.Tensor``): neither torch nor MLX is imported here.
"""

from __future__ import annotations

import difflib
import importlib.util
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..msl import ArgumentError, Audience, CompileError, KernelRuntimeError, RunResult
from ..msl.api import cost_model
from ..msl.cuda import CudaTranslation, translate_shader
from ..msl.executor.memory import bfloat_bits, bfloat_values
from ..msl.lang.types import DTYPE_NAMES, ScalarType, Type, VoidType, size_of, storage_scalar
from ..msl.program import NO_STEP_BUDGET, interrupted_message, sanitize_mode
from ..msl.shader_program import LaunchGeometry, ShaderKernel, ShaderLibrary
from .arrays import bfloat16_bits, host_view, storage_of, writable_view

#: PyTorch's ``arg_casts`` names and the NumPy dtype each converts a Python number to.
#: What a shader's author got wrong (not the simulator): raised without the simulator's own frames.
KERNEL_ERRORS = (CompileError, KernelRuntimeError, ArgumentError)

ARG_CASTS = {"fp16": "float16", "bf16": "bfloat16", "int32": "int32", "int16": "int16", "int8": "int8",
             "uint8": "uint8"}


class LaunchArgumentError(ArgumentError, RuntimeError):
    """A call PyTorch would refuse (its TORCH_CHECKs raise RuntimeError; its group-size check
    ValueError, which ArgumentError is too), so ``except RuntimeError`` written for PyTorch holds."""


class ShaderCompileError(CompileError, SyntaxError):
    """A shader that does not compile, raised as PyTorch raises it (SyntaxError), with the
    position where Python's and IPython's tracebacks show a syntax error's file, line and caret;
    its text is the compiler-style diagnostic."""

    def __init__(self, err: CompileError) -> None:
        super().__init__(err.message, err.pos, err.registry, err.where)
        self.msg = err.message
        self.filename = err.pos.file
        self.lineno = err.pos.line
        self.offset = err.pos.col
        self.text = err.registry.line(err.pos) if err.registry is not None else None

    def __str__(self) -> str:
        return str(self.args[0])


class KernelNotFoundError(AttributeError, RuntimeError):
    """A host name the library lacks: RuntimeError as PyTorch raises it, AttributeError as
    Python's attribute protocol (``hasattr``, ``getattr`` with a default) needs."""


class ShaderKernelFunction:
    """One kernel of a compiled shader: call it with the kernel's arguments in buffer order."""

    def __init__(self, library: ShaderLibrary, kernel: ShaderKernel) -> None:
        self.library = library
        self.kernel = kernel
        self.name = kernel.host_name
        self.last_run: RunResult | None = None
        self.last_call: dict | None = None
        self._warned: set = set()

    @property
    def max_threads_per_threadgroup(self) -> int:
        return self.kernel.max_total_threads

    @property
    def thread_execution_width(self) -> int:
        return 32

    @property
    def static_thread_group_memory_length(self) -> int:
        """Bytes of the threadgroup arrays the kernel declares itself."""
        return sum(size_of(v.ty) for v in self.kernel.checked.threadgroup_arrays)

    def __call__(self, *args: Any, threads: int | Sequence[int] | None = None,
                 group_size: int | Sequence[int] | None = None, arg_casts: str | Mapping[int, str] | None = None,
                 threadgroup_memory: Mapping[int, int] | None = None, sanitize: str = "warn",
                 trace: bool | None = None, max_steps: int | None = None, cost: Any = None) -> None:
        """Run the kernel as PyTorch's ``lib.name(*args, threads=..., group_size=...)`` does and
        write the results into the arrays passed. Besides PyTorch's keywords: ``threadgroup_memory``
        ({index: bytes} for ``[[threadgroup(index)]]`` parameters), ``sanitize`` ('warn', 'error',
        'off'), ``trace``, ``max_steps`` (default: none, the kernel runs to its end) and ``cost``."""
        __tracebackhide__ = True
        self.run(*args, threads=threads, group_size=group_size, arg_casts=arg_casts,
                 threadgroup_memory=threadgroup_memory, sanitize=sanitize, trace=trace, max_steps=max_steps,
                 cost=cost)

    def run(self, *args: Any, threads: int | Sequence[int] | None = None,
            group_size: int | Sequence[int] | None = None, arg_casts: str | Mapping[int, str] | None = None,
            threadgroup_memory: Mapping[int, int] | None = None, sanitize: str = "warn",
            trace: bool | None = None, max_steps: int | None = None, steps: bool = False,
            cost: Any = None, write_back: bool = True) -> RunResult:
        """Run on the simulator and return the run record (``write_back``: store the results in the
        arrays passed, as a call does)."""
        __tracebackhide__ = True
        self.last_call = dict(args=args, threads=threads, group_size=group_size, arg_casts=arg_casts,
                              threadgroup_memory=threadgroup_memory, max_steps=max_steps)
        try:
            mode = sanitize_mode(sanitize)
            bound = [_bind(k, a, _cast_for(arg_casts, k)) for k, a in enumerate(args)]
            self._check_count(len(args))
            geometry = _geometry(threads, group_size, args, self.kernel.max_total_threads)
            result = self.kernel.launch(
                {k: b.values for k, b in enumerate(bound)}, geometry,
                dtypes={k: b.dtype for k, b in enumerate(bound) if b.dtype is not None},
                threadgroup_memory=threadgroup_memory, sanitize=mode,
                max_steps=NO_STEP_BUDGET if max_steps is None else max_steps, trace=trace, steps=steps,
                audience=Audience.CALLER, warned=self._warned, cost=cost_model(cost))
        except ArgumentError as err:
            raise LaunchArgumentError(str(err)) from None
        except KERNEL_ERRORS as err:
            raise err.with_traceback(None) from None
        except KeyboardInterrupt:
            raise KeyboardInterrupt(interrupted_message(self.name, max_steps)) from None
        self.last_run = result
        if write_back:
            writable = [p for p in self.kernel.buffers if p.writable]
            for p, values in zip(writable, result.outputs, strict=True):
                assert p.index is not None
                bound[p.index].write(values, p.element)
        return result

    def replay(self, **options: Any) -> RunResult:
        """Run the last call again without writing results (for the explorer: ``trace=True``,
        ``steps=True``...). Arrays the kernel wrote hold its results now, as on a GPU."""
        if self.last_call is None:
            raise RuntimeError("call the kernel once before replaying (or exploring) it")
        call = {**self.last_call, **options}
        args = call.pop("args")
        return self.run(*args, write_back=False, **call)

    def _check_count(self, given: int) -> None:
        buffers = self.kernel.buffers
        needed = max((p.index or 0) + 1 for p in buffers) if buffers else 0
        if given != needed:
            names = ", ".join(f"{p.name} [[buffer({p.index})]]" for p in buffers)
            raise ArgumentError(f"kernel '{self.name}' takes {needed} argument(s) ({names or 'none'}); "
                                f"{given} were given")

    def __repr__(self) -> str:
        return f"<simulated Metal kernel '{self.name}'>"


class SimulatedShaderLibrary:
    """What ``compile_shader`` returns: each kernel is an attribute named by its host name."""

    def __init__(self, source: str, include_dirs: Sequence[str | Path] | None = None) -> None:
        folders = [Path(d) for d in include_dirs or ()]
        torch_headers = _torch_include_folder()
        if torch_headers is not None:
            folders.append(torch_headers)
        hint = f"looked in {', '.join(map(str, folders))}" if folders else "no include folder was given"
        if torch_headers is None:
            hint += ("; PyTorch's c10/metal headers come with torch, which is not installed here (a CPU build is "
                     "enough), or pass include_dirs=[a folder holding them]")
        try:
            self._library = ShaderLibrary(source, include_dirs=folders, include_hint=hint)
        except CompileError as err:
            raise ShaderCompileError(err) from None
        except KERNEL_ERRORS as err:
            raise err.with_traceback(None) from None
        self._functions: dict[str, ShaderKernelFunction] = {}

    def __getattr__(self, name: str) -> ShaderKernelFunction:
        if name.startswith("__") or name == "_library" or name == "_functions":
            raise AttributeError(name)
        found = self._functions.get(name)
        if found is not None:
            return found
        if name not in self._library.kernel_names:
            close = difflib.get_close_matches(name, self._library.kernel_names, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise KernelNotFoundError(f"the shader has no kernel named '{name}'{hint} (kernels: "
                                      f"{', '.join(self._library.kernel_names) or 'none'})")
        try:
            kernel = self._library.kernel(name)
        except CompileError as err:
            raise ShaderCompileError(err) from None
        except KERNEL_ERRORS as err:
            raise err.with_traceback(None) from None
        found = self._functions[name] = ShaderKernelFunction(self._library, kernel)
        return found

    def __dir__(self) -> list[str]:
        return list(self._library.kernel_names)

    def to_cuda(self) -> dict[str, CudaTranslation]:
        """Every kernel of the shader translated to CUDA C++, by host name (each a
        ``CudaTranslation``: ``.unit`` with one ``extern "C" __global__`` function ``.entry``
        taking the kernel's buffers in index order, then the Metal grid's three sizes)."""
        try:
            return translate_shader(self._library)
        except CompileError as err:
            raise ShaderCompileError(err) from None


def compile_shader(source: str, *, include_dirs: Sequence[str | Path] | None = None) -> SimulatedShaderLibrary:
    """Drop-in for ``torch.mps.compile_shader``: compile a Metal shader on the simulator.

    As PyTorch does, ``#include <c10/metal/...>`` reads PyTorch's Metal headers from torch's
    ``include`` folder when torch is installed (found without importing it); ``include_dirs``
    names folders searched first (a checkout's own headers, say)."""
    return SimulatedShaderLibrary(source, include_dirs)


def _torch_include_folder() -> Path | None:
    """torch's ``include`` folder, where ``torch.mps.compile_shader`` finds ``c10/metal/*.h``;
    looked up without importing torch (which is never required)."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "include"
    return folder if folder.is_dir() else None


# ------------------------------------------------------------------------------ binding arguments
class _Bound:
    """An argument as the simulator takes it, and how to give the kernel's results back."""

    def __init__(self, values: np.ndarray, dtype: str | None, target: Any = None,
                 bits: np.ndarray | None = None) -> None:
        self.values = values
        self.dtype = dtype  # a dtype NumPy lacks ('bfloat16'), when values hold it as float32
        self.target = target  # the caller's array, written after the run
        self.bits = bits  # a bfloat16 array's stored bits (uint16), written after the run

    def write(self, values: np.ndarray, element: Type) -> None:
        """Store what the kernel left in the buffer: as values where the kernel's element type is
        the array's own, else as bytes (an 'atomic<uint>' buffer over half data, as
        c10/metal/atomic.h declares it)."""
        target = self.target
        if self.bits is None and target is None:
            raise ArgumentError("the kernel writes into an argument that is a Python number or list; pass an array")
        mx = _mlx()
        is_mlx = mx is not None and isinstance(target, mx.array)
        held = self.dtype or (str(target.dtype).rsplit(".", 1)[-1] if is_mlx else writable_view(target).dtype.name)
        as_bytes = _written_as_bytes(element, DTYPE_NAMES.get(held))
        if self.bits is not None:
            if as_bytes:
                _copy_bytes(values, self.bits)
            else:
                self.bits[...] = bfloat_bits(values.reshape(-1)[: self.bits.size]).reshape(self.bits.shape)
            return
        if is_mlx:
            if as_bytes:
                nbytes = target.nbytes
                raw = np.zeros(nbytes, np.uint8)
                src = np.ascontiguousarray(values).reshape(-1).view(np.uint8)[:nbytes]
                raw[: src.size] = src
                target[...] = mx.view(mx.array(raw), target.dtype).reshape(target.shape)
            else:
                target[...] = mx.array(values.reshape(target.shape)).astype(target.dtype)
            return
        view = writable_view(target)
        flat = values.reshape(-1)
        if as_bytes:
            _copy_bytes(flat, view)
            return
        if view.dtype == np.complex64 and flat.dtype == np.float32:  # complex tensors hold float2 pairs
            view = view.view(np.float32)
        if view.dtype == np.uint8 and flat.dtype == np.uint8:
            view.reshape(-1)[: flat.size] = flat
        else:
            view[...] = flat[: view.size].reshape(view.shape).astype(view.dtype)


def _written_as_bytes(element: Type, held: ScalarType | None) -> bool:
    """Whether the kernel declared the buffer with an element type of another size or kind than
    the array holds, so that what it stored goes back as bytes. A void* buffer keeps the array's
    elements; the other signedness of an integer, and complex pairs, go back as values."""
    if isinstance(element, VoidType) or held is None:
        return False
    kernel = storage_scalar(element)
    return kernel != held and (kernel.size != held.size or kernel.is_float != held.is_float)


def _copy_bytes(values: np.ndarray, target: np.ndarray) -> None:
    """The bytes of ``values`` into ``target``'s elements, in order."""
    src = np.ascontiguousarray(values).reshape(-1).view(np.uint8)
    if target.flags.c_contiguous:
        flat = target.reshape(-1).view(np.uint8)
        flat[: min(src.size, flat.size)] = src[: flat.size]
        return
    staged = np.ascontiguousarray(target).reshape(-1)  # a strided view: through a contiguous copy
    staged.view(np.uint8)[: min(src.size, staged.nbytes)] = src[: staged.nbytes]
    target[...] = staged.reshape(target.shape)


def _bind(index: int, arg: Any, cast: str | None) -> _Bound:
    if isinstance(arg, np.ndarray):
        if arg.ndim == 0 and arg.dtype == np.float64:
            return _number(np.asarray(arg, dtype=np.float32), cast)  # see _array_argument
        return _array_argument(arg, arg)
    mx = _mlx()
    if mx is not None and isinstance(arg, mx.array):
        if arg.dtype == mx.bfloat16:
            return _Bound(np.array(arg.astype(mx.float32)), "bfloat16", arg)
        return _Bound(np.array(arg), None, arg)
    if isinstance(arg, bool | int | float):
        dtype = "float32" if isinstance(arg, float) else "int64"
        return _number(np.asarray(arg, dtype=dtype), cast)
    if isinstance(arg, list | tuple):
        if not arg:
            raise ArgumentError(f"argument {index}: an empty list or tuple cannot be an argument to a Metal kernel")
        if all(isinstance(x, bool | int) for x in arg):
            return _number(np.asarray(arg, dtype=np.int64), cast)
        if all(isinstance(x, bool | int | float) for x in arg):
            return _number(np.asarray(arg, dtype=np.float32), cast)
        raise ArgumentError(f"argument {index}: a list or tuple must hold numbers (all ints, or floats)")
    bits = bfloat16_bits(arg)
    if bits is not None:  # NumPy has no bfloat16: the stored bits, decoded to float32 values
        if not bits.flags.c_contiguous:
            bits = storage_of(bits)
        return _Bound(bfloat_values(bits), "bfloat16", arg, bits)
    if hasattr(arg, "__dlpack__") or hasattr(arg, "__array__"):
        view = host_view(index, arg)
        if view.ndim == 0 and view.dtype == np.float64:
            return _number(np.asarray(view, dtype=np.float32), cast)  # see _array_argument
        return _array_argument(view, arg)
    raise ArgumentError(f"argument {index} has type {type(arg).__name__}: a kernel takes arrays (NumPy, MLX, CPU "
                        "tensors), Python numbers and lists or tuples of numbers")


def _array_argument(view: np.ndarray, arg: Any) -> _Bound:
    """An array bound as PyTorch binds a tensor: its storage from its first element on, so a
    strided view (a transpose, a slice) reaches the kernel as the elements its strides address,
    not as a compacted copy; the kernel's writes land in that storage. (A 0-d float64 array is
    the one exception, bound as a float: only a CPU scalar tensor can be float64 in PyTorch, and
    its test suite passes one where the kernel takes 'constant float&'.)"""
    if view.flags.c_contiguous or view.size == 0:
        return _Bound(view, None, arg)
    if not view.flags.writeable and not isinstance(arg, np.ndarray):
        view = writable_view(arg)
    storage = storage_of(view)
    if storage is None:  # no storage order to bind (a reversed NumPy view): a copy, written back as a view
        return _Bound(np.ascontiguousarray(view), None, arg)
    return _Bound(storage, None, storage)


def _mlx() -> Any:
    """MLX's array module if the program loaded it (an mx.array exists only then): compile_shader
    itself needs neither MLX nor torch."""
    return sys.modules.get("mlx.core")


def _number(values: np.ndarray, cast: str | None) -> _Bound:
    if cast is None:
        return _Bound(values, None)
    if cast not in ARG_CASTS:
        raise ArgumentError(f"unsupported cast {cast!r}; arg_casts takes {', '.join(ARG_CASTS)}")
    dtype = ARG_CASTS[cast]
    if dtype == "bfloat16":
        return _Bound(values.astype(np.float32), "bfloat16")
    return _Bound(values.astype(dtype), None)


def _cast_for(arg_casts: str | Mapping[int, str] | None, index: int) -> str | None:
    if arg_casts is None or isinstance(arg_casts, str):
        return arg_casts
    return arg_casts.get(index)


def _dims(value: int | Sequence[int], what: str) -> tuple[int, ...]:
    if isinstance(value, bool):
        raise ArgumentError(f"{what} must be an int or a sequence of 1 to 3 ints, not {value!r}")
    if isinstance(value, int | np.integer):
        return (int(value),)
    try:
        dims = tuple(int(x) for x in value)
    except TypeError:
        raise ArgumentError(f"{what} must be an int or a sequence of 1 to 3 ints, not {value!r}") from None
    if not 1 <= len(dims) <= 3:
        raise ArgumentError(f"{what} must have 1 to 3 dimensions, not {len(dims)} ({value!r})")
    return dims


def _geometry(threads, group_size, args: Sequence[Any], max_total: int) -> LaunchGeometry:
    if threads is None:
        first = next((a for a in args if not isinstance(a, bool | int | float | list | tuple)), None)
        if first is None:
            raise ArgumentError("the number of threads is undefined: pass threads=... (PyTorch takes it from the "
                                "first tensor argument, and there is none)")
        grid: tuple[int, ...] = (int(np.prod(tuple(first.shape), dtype=np.int64)),)
    else:
        grid = _dims(threads, "threads")
    if group_size is None:
        group: tuple[int, ...] = ((min(grid[0], max_total),) if len(grid) == 1
                                  else (max_total,) + (1,) * (len(grid) - 1))
        group = (max(group[0], 1),) + group[1:]
    else:
        group = _dims(group_size, "group_size")
        if len(group) != len(grid):
            raise ArgumentError(f"threads {grid} and group_size {group} must have the same number of dimensions")
    pad = (1, 1)
    return LaunchGeometry((grid + pad)[:3], (group + pad)[:3])  # type: ignore[arg-type]
