"""Run a kernel's CUDA translation on an NVIDIA GPU through CuPy, as Metal would have run it.

Used by ``benchmarks/cuda_oracle.py`` (random kernels, simulator against GPU) and
``benchmarks/cuda_lessons.py`` (Part III's kernels timed). CuPy is imported when a launcher is
made, never at import, so the suite imports this module on machines without a GPU.

The launch follows the translation's contract (``metal_puzzles.msl.cuda.CudaTranslation``):
blocks are Metal's threadgroups, ``ceil(grid / threadgroup)`` of them; the entry's parameters
are the inputs (each followed by its shape, strides, ndim where the source mentions them), the
outputs, then the Metal grid in threads as three ``unsigned int``.

Compiled without FMA contraction (``--fmad=false``): the simulator rounds every float operation,
and NVRTC's default would fuse ``a * b + c`` into one rounding, so bits would differ where the
kernels agree. Compiled by the project's own NVRTC (``metal_puzzles.host.nvrtc``) to the device's
machine code and loaded as a module, not with CuPy's ``RawKernel``: CuPy appends ``-ftz=true``
after the caller's options (NVRTC honours the last), which flushed float denormals to zero on the
H200 (``-as_type<float>(tid)`` gave -0.0 for -1e-45; 18 of the first 1,000 oracle kernels) where
Metal and the simulator keep them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from metal_puzzles.msl.cuda import GRID_CONSTANTS, CudaTranslation, launch_dims
from metal_puzzles.msl.lang.kernel_parameters import ParamRole

#: NVRTC options for every unit: C++17 (the translator's prelude), IEEE float rounding per operation,
#: denormals kept (``--ftz=false`` is NVRTC's default, said here because CuPy's compile overrides it).
NVRTC_OPTIONS = ("--std=c++17", "--fmad=false", "--ftz=false")


class CudaCompileError(RuntimeError):
    """NVRTC (through CuPy) refused a translation unit: a translator bug, with the compiler log."""


class CudaLaunchError(RuntimeError):
    """The launch itself failed (an illegal address, a launch configuration CUDA refuses)."""


def poison(shape: Sequence[int], dtype: str) -> np.ndarray:
    """An output as MLX leaves it without ``init_value``: here every byte 0xA5, so an element the
    kernel never wrote shows up in a comparison instead of passing as a lucky zero."""
    arr = np.empty(tuple(shape), dtype=dtype)
    arr.view(np.uint8)[...] = 0xA5
    return arr


def initial_outputs(shapes: Sequence[Sequence[int]], dtypes: Sequence[str],
                    init_value: float | None) -> list[np.ndarray]:
    """Outputs before the launch: filled with ``init_value``, or poisoned when there is none."""
    if init_value is None:
        return [poison(s, d) for s, d in zip(shapes, dtypes, strict=True)]
    return [np.full(tuple(s), init_value, dtype=d) for s, d in zip(shapes, dtypes, strict=True)]


@dataclass
class Timing:
    """Seconds spent compiling (NVRTC and module load) and running (launch to synchronise)."""

    compile_s: float = 0.0
    run_s: float = 0.0


class CudaLauncher:
    """Compiles translations with CuPy's RawKernel and launches them on the current device."""

    def __init__(self, options: Sequence[str] = NVRTC_OPTIONS) -> None:
        import cupy  # the one place the oracle needs a GPU

        from metal_puzzles.host.nvrtc import load_nvrtc

        load_nvrtc()  # the compiler too, now, or the device is unavailable with NVRTC's own message
        self.cp = cupy
        self.options = tuple(options)

    def device_name(self) -> str:
        props = self.cp.cuda.runtime.getDeviceProperties(self.cp.cuda.Device().id)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def device_arch(self) -> str:
        """The current device's real architecture for NVRTC (``sm_90`` on an H200)."""
        return f"sm_{self.cp.cuda.Device().compute_capability}"

    def compile(self, tr: CudaTranslation) -> Any:
        """The unit's entry as a loaded CuPy function; raises CudaCompileError with the log.

        NVRTC compiles the unit with exactly ``self.options`` to the device's cubin, which CuPy
        loads as it is: CuPy's own compile would append ``-ftz=true`` (see the module's doc)."""
        from metal_puzzles.host.nvrtc import NvrtcError, compile_to_cubin

        options = [o for o in self.options if not o.startswith("--std")]  # compile_to_cubin sets C++17
        try:
            cubin = compile_to_cubin(tr.unit, arch=self.device_arch(), name=f"{tr.entry}.cu", options=options)
        except NvrtcError as exc:
            raise CudaCompileError(str(exc)) from None
        from cupy.cuda import function as cuda_function

        module = cuda_function.Module()
        module.load(cubin)
        return module.get_function(tr.entry)  # the function keeps its module loaded

    def arguments(self, tr: CudaTranslation, inputs: Mapping[str, np.ndarray], outputs: Mapping[str, Any],
                  grid: Sequence[int]) -> list[Any]:
        """The entry's arguments in order (device arrays already made for ``outputs``)."""
        cp = self.cp
        args: list[Any] = []
        gx, gy, gz = (list(grid) + [1, 1])[:3]
        grid_values = iter((gx, gy, gz))
        for p in tr.params:
            if p.role == ParamRole.INPUT:
                args.append(cp.asarray(np.ascontiguousarray(inputs[p.name])))
            elif p.role == ParamRole.OUTPUT:
                args.append(outputs[p.name])
            elif p.role == ParamRole.SHAPE:
                x = np.asarray(inputs[p.name[: -len("_shape")]])
                args.append(cp.asarray(np.array(x.shape or (1,), dtype=np.int32)))
            elif p.role == ParamRole.STRIDES:
                x = np.asarray(inputs[p.name[: -len("_strides")]])
                strides = [s // x.itemsize for s in np.ascontiguousarray(x).strides] or [1]
                args.append(cp.asarray(np.array(strides, dtype=np.int64)))
            elif p.role == ParamRole.NDIM:
                x = np.asarray(inputs[p.name[: -len("_ndim")]])
                args.append(np.int32(x.ndim))
            elif p.name in GRID_CONSTANTS:  # the Metal grid, three unsigned ints
                args.append(np.uint32(next(grid_values)))
            else:
                raise ValueError(f"'{tr.entry}' has a parameter '{p.name}' ({p.ctype}) that a custom kernel's "
                                 "launch does not fill")
        return args

    def run(self, tr: CudaTranslation, kernel: Any, inputs: Mapping[str, np.ndarray],
            initial: Sequence[np.ndarray], grid: Sequence[int], threadgroup: Sequence[int],
            timing: Timing | None = None) -> list[np.ndarray]:
        """Launch once and return the outputs (as NumPy arrays, in the translation's order)."""
        cp = self.cp
        outs = {name: cp.asarray(a) for name, a in zip(tr.output_names, initial, strict=True)}
        args = self.arguments(tr, inputs, outs, grid)
        blocks, threads = launch_dims(grid, threadgroup)
        t0 = time.perf_counter()
        try:
            kernel(blocks, threads, tuple(args))
            cp.cuda.Device().synchronize()
        except cp.cuda.driver.CUDADriverError as exc:
            raise CudaLaunchError(str(exc)) from None
        except cp.cuda.runtime.CUDARuntimeError as exc:
            raise CudaLaunchError(str(exc)) from None
        if timing is not None:
            timing.run_s = time.perf_counter() - t0
        return [outs[name].get() for name in tr.output_names]

    def time_kernel(self, tr: CudaTranslation, kernel: Any, inputs: Mapping[str, np.ndarray],
                    initial: Sequence[np.ndarray], grid: Sequence[int], threadgroup: Sequence[int],
                    repeats: int = 20, warmup: int = 3) -> list[float]:
        """Seconds per launch, measured with CUDA events around each launch (after warm-up)."""
        cp = self.cp
        outs = {name: cp.asarray(a) for name, a in zip(tr.output_names, initial, strict=True)}
        args = tuple(self.arguments(tr, inputs, outs, grid))
        blocks, threads = launch_dims(grid, threadgroup)
        for _ in range(warmup):
            kernel(blocks, threads, args)
        cp.cuda.Device().synchronize()
        times = []
        for _ in range(repeats):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            kernel(blocks, threads, args)
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
        return times


def _isolated_entry(conn: Any, target: str, payload: Any) -> None:
    import importlib

    module, _, name = target.partition(":")
    try:
        result = getattr(importlib.import_module(module), name)(payload)
        conn.send(("ok", result))
    except BaseException as exc:  # reported to the parent, which carries on
        import traceback

        conn.send(("error", "".join(traceback.format_exception(exc))[-4000:]))


def run_isolated(target: str, payload: Any, timeout: float) -> tuple[str, Any]:
    """``module:function(payload)`` in a fresh process (spawned: a CUDA context of its own):
    ('ok', result), ('error', traceback text), ('timeout', message) when it ran past ``timeout``
    seconds (it is killed), or ('crashed', message) when the process died."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_isolated_entry, args=(child, target, payload), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout):
            return "timeout", f"no result within {timeout:.0f} s; the worker was killed"
        try:
            return parent.recv()
        except (EOFError, OSError):
            proc.join(5)
            return "crashed", f"the worker died (exit code {proc.exitcode})"
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        parent.close()
