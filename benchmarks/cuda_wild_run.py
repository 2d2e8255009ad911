"""Every kernel of the wild corpora on an NVIDIA GPU, beside the simulator, judged by the tests
that hold the simulator to them.

The wild kernels live in test modules (``WILD_MODULES``: MLX's custom-kernel guide and the kernels
MLX projects write, the drop-in on production kernels, whole shaders, ``compile_shader`` with NumPy
and with torch tensors); ``tools/record_cuda_corpus.py`` records their sources for the suite, which
translates and compiles them without a GPU. This script runs those test modules under pytest with
every simulator launch doubled on the GPU: each time a kernel instance (``CompiledKernel.launch``)
or a whole shader's kernel (``ShaderKernel.launch``) finishes on the simulator, the same instance is
translated (``translate_kernel`` / ``translate_shader_kernel``), compiled as the oracle compiles it
(``tests/differential/cuda_launch.py``: the project's NVRTC, no FMA contraction, denormals kept)
and launched with CuPy on the very bytes the simulator bound (strided views with their strides,
bfloat16 as its bits, constant values as one-element buffers, threadgroup memory sized at launch);
outputs start as MLX leaves them (``init_value`` or poison, every byte 0xA5). Each launch records

* ``bit for bit``: every output holds the simulator's bits (two NaNs agree whatever their payloads);
* ``differ``: the first differing element of each output, both values, the largest difference in
  units in the last place, and what the simulator's sanitizer said of the run;
* ``refused``: the translator's located refusal (source line and column), or the launch's (SIMD-group
  functions in a partial threadgroup of more than one row), never counted as agreeing;
* ``compile error`` / ``launch error``: NVRTC's log or CUDA's error (a translator bug). An error
  that leaves the CUDA context unusable stops the GPU runs; the rest are ``not run``, said so.

and then hands the test the GPU's outputs instead of the simulator's: each test's own assertion
(its reference in NumPy or MLX ops, with its own tolerance) judges what the GPU computed. A test
that passes so is the test's verdict on the GPU; one that fails is listed with its message.

Needs CuPy, pytest and a GPU (torch for the torch module; without torch that module is skipped, as
in the suite). Writes DIR/cuda_wild_run.json and prints its summary:

    python benchmarks/cuda_wild_run.py --out DIR [--modules test_x.py ...] [-k EXPR]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(ROOT / "tests"))  # differential.cuda_launch: the oracle's compile
sys.path.insert(0, str(ROOT / "benchmarks"))  # cuda_book_run.same_bits: one bit-for-bit rule

#: The test modules that hold the simulator to kernels from the wild (the suite's CUDA corpus is
#: recorded from the first three: tools/record_cuda_corpus.py), by file name: found wherever under
#: tests/ they live.
WILD_MODULES = ("test_wild_kernels.py", "test_dropin_real_kernels.py", "test_whole_shader_kernels.py",
                "test_compile_shader.py", "test_compile_shader_torch.py")

#: Every byte of an output that has no ``init_value``: what an unwritten element shows.
POISON_BYTE = 0xA5


class LaunchStatus(str, Enum):
    BIT_EXACT = "bit for bit"
    DIFFER = "differ"
    REFUSED_BY_TRANSLATOR = "refused by the translator"
    REFUSED_AT_LAUNCH = "refused at launch"
    COMPILE_ERROR = "compile error"
    LAUNCH_ERROR = "launch error"
    NOT_RUN = "not run"


@dataclasses.dataclass
class DeviceBuffer:
    """One buffer of a launch as the simulator bound it: its bytes, and the memory object that
    turns bytes back into the values the simulator reports (``Memory.values``)."""

    memory: Any
    output: bool


def uploaded(cp: Any, memory: Any, poison: bool) -> Any:
    """A buffer's bytes on the device (at least one byte: CUDA takes no empty allocation)."""
    raw = np.array(memory.raw[: max(memory.nbytes, 1)], copy=True)
    if poison:
        raw[:] = POISON_BYTE
    return cp.asarray(raw)


def read_back(cp: Any, device: Any, memory: Any) -> np.ndarray:
    """The values the device buffer holds, decoded as the simulator decodes its own memory."""
    saved = memory.raw.copy()
    memory.raw[: max(memory.nbytes, 1)] = cp.asnumpy(device)[: max(memory.nbytes, 1)]
    try:
        return memory.values()
    finally:
        memory.raw[:] = saved


def ulps_apart(got: np.ndarray, want: np.ndarray) -> float:
    """The largest distance in units in the last place between two float arrays (of want's type)."""
    if want.dtype.kind != "f" or not want.size:
        return 0.0
    bits = np.dtype(f"i{want.dtype.itemsize}")
    g = got.astype(want.dtype).view(bits).astype(np.int64)
    w = want.view(bits).astype(np.int64)
    # Ordered as integers: a negative float is minus its magnitude's bits (so -0.0 and 0.0 are both 0).
    top = np.int64(1) << (8 * want.dtype.itemsize - 1)
    g = np.where(g < 0, -(g + top), g)
    w = np.where(w < 0, -(w + top), w)
    finite = np.isfinite(got.astype(np.float64)) & np.isfinite(want.astype(np.float64))
    return float(np.abs(g - w)[finite].max()) if finite.any() else 0.0


def compare_outputs(gpu: Sequence[np.ndarray], simulated: Sequence[np.ndarray], names: Sequence[str]) -> dict[str, Any]:
    """Each output bit for bit, and where it is not, the first difference and the largest."""
    from cuda_book_run import same_bits

    outputs = []
    for name, got, want in zip(names, gpu, simulated, strict=True):
        got, want = np.asarray(got).reshape(np.shape(want)), np.asarray(want)
        entry: dict[str, Any] = {"output": name, "dtype": str(want.dtype), "bit_exact": same_bits(got, want)}
        if not entry["bit_exact"]:
            with np.errstate(invalid="ignore", over="ignore"):
                g64, w64 = got.astype(np.float64), want.astype(np.float64)
                differs = ~((g64 == w64) | (np.isnan(g64) & np.isnan(w64)))
                if want.dtype.kind == "f":  # -0.0 against 0.0: other bits
                    differs |= np.signbit(g64) != np.signbit(w64)
                index = np.unravel_index(int(np.argmax(differs.reshape(-1))), want.shape) if want.ndim else ()
                diff = np.abs(g64 - w64)[differs]
            entry.update(differing=int(differs.sum()), first_index=[int(i) for i in index],
                         simulator=repr(want[index].item()), gpu=repr(got[index].item()),
                         max_abs_diff=float(diff[np.isfinite(diff)].max()) if np.isfinite(diff).any() else None,
                         max_ulps=ulps_apart(got, want))
        outputs.append(entry)
    return {"outputs": outputs}


class GpuAlongside:
    """A pytest plugin: every simulator launch of the tests runs on the GPU too (see the module)."""

    def __init__(self, launcher: Any) -> None:
        self.launcher = launcher
        self.cp = launcher.cp
        self.records: list[dict[str, Any]] = []
        self.tests: dict[str, dict[str, Any]] = {}
        self.current = "(collection)"
        self.broken: str | None = None  # why the CUDA context can no longer be used
        self._compiled: dict[str, Any] = {}
        #: Whether launches run on the GPU too (a caller outside pytest turns it off to get the
        #: simulator's own chain of results).
        self.active = True
        self._restore: list[tuple[type, str, Any]] = []

    # ------------------------------------------------------------------ pytest hooks
    def pytest_sessionstart(self, session: Any) -> None:  # patch once the package imports
        self.install()

    def install(self) -> None:
        """Double every simulator launch from now on (in this process) on the GPU."""
        from metal_puzzles.msl import program, shader_program

        plugin = self
        real_init = program.CompiledKernel.__init__
        real_launch = program.CompiledKernel.launch
        real_shader_launch = shader_program.ShaderKernel.launch

        def init(kernel, name, input_names, output_names, source, header, inputs, output_dtypes, template,
                 atomic_outputs):
            real_init(kernel, name, input_names, output_names, source, header, inputs, output_dtypes, template,
                      atomic_outputs)
            # What translate_kernel needs to translate this very instance.
            kernel._wild_instance = (name, list(input_names), list(output_names), source, header, list(inputs),
                                     list(output_dtypes), list(template), atomic_outputs)

        def launch(kernel, inputs, input_dtypes, output_shapes, output_dtypes, grid, threadgroup, init_value,
                   ensure_row_contiguous, *args, **kwargs):
            result = real_launch(kernel, inputs, input_dtypes, output_shapes, output_dtypes, grid, threadgroup,
                                 init_value, ensure_row_contiguous, *args, **kwargs)
            if plugin.active:
                    plugin.body_launch(kernel, result, inputs, input_dtypes, output_dtypes, init_value,
                                   ensure_row_contiguous)
            return result

        def shader_launch(kernel, values, geometry, *args, **kwargs):
            result = real_shader_launch(kernel, values, geometry, *args, **kwargs)
            if plugin.active:
                plugin.shader_launch(kernel, result, values, kwargs.get("dtypes") or {},
                                     kwargs.get("threadgroup_memory") or {})
            return result

        self._restore = [(program.CompiledKernel, "__init__", real_init), (program.CompiledKernel, "launch", real_launch),
                         (shader_program.ShaderKernel, "launch", real_shader_launch)]
        program.CompiledKernel.__init__ = init
        program.CompiledKernel.launch = launch
        shader_program.ShaderKernel.launch = shader_launch

    def uninstall(self) -> None:
        """The simulator's launches as they were (the test session is over)."""
        for owner, name, real in self._restore:
            setattr(owner, name, real)
        self._restore = []

    def pytest_sessionfinish(self, session: Any, exitstatus: int) -> None:
        self.uninstall()

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.current = nodeid

    def pytest_runtest_logreport(self, report: Any) -> None:
        entry = self.tests.setdefault(report.nodeid, {"outcome": "passed", "gpu_launches": 0})
        if report.failed:
            entry["outcome"] = "failed"
            entry["message"] = str(report.longrepr)[-1500:]
        elif report.skipped and report.when in ("setup", "call"):
            entry["outcome"] = "skipped"

    # ------------------------------------------------------------------ the GPU's run of a launch
    def body_launch(self, kernel: Any, result: Any, inputs: Sequence[Any], input_dtypes: Sequence[str],
                    output_dtypes: Sequence[str], init_value: Any, row_contiguous: bool) -> None:
        """A custom kernel's instance: its inputs bound as the simulator bound them."""
        from metal_puzzles.msl.abi.signature import MAX_CONSTANT_ARRAY_SIZE, ParamRole
        from metal_puzzles.msl.cuda import GRID_CONSTANTS, translate_kernel
        from metal_puzzles.msl.executor.memory import Memory
        from metal_puzzles.msl.lang.types import DTYPE_NAMES, INT, LONG, AddressSpace
        from metal_puzzles.msl.program import _buffer_of

        record = self._record(kernel.name, "kernel body", result)

        def translate() -> Any:
            return translate_kernel(*kernel._wild_instance)

        def buffers(tr: Any) -> tuple[list[Any], list[tuple[Any, Any]]]:
            args: list[Any] = []
            outs: list[tuple[Any, Any]] = []
            values = dict(zip(kernel.input_names, inputs, strict=True))
            dtypes = dict(zip(kernel.input_names, input_dtypes, strict=True))
            out_dtypes = dict(zip(kernel.output_names, output_dtypes, strict=True))
            shapes = dict(zip(kernel.output_names, (np.shape(o) for o in result.outputs), strict=True))
            grid = iter(result.grid)
            for p in tr.params:
                if p.role == ParamRole.INPUT:
                    arr = np.asarray(values[p.name])
                    scalar = DTYPE_NAMES[dtypes[p.name]]
                    if arr.ndim == 0:
                        mem = Memory.of_values(p.name, AddressSpace.CONSTANT, scalar, [arr])
                    else:
                        data, _ = _buffer_of(arr, scalar, row_contiguous)
                        space = AddressSpace.CONSTANT if arr.size < MAX_CONSTANT_ARRAY_SIZE else AddressSpace.DEVICE
                        mem = Memory.of_values(p.name, space, scalar, data)
                    args.append(uploaded(self.cp, mem, poison=False))
                elif p.role in (ParamRole.SHAPE, ParamRole.STRIDES):
                    base = p.name.rsplit("_", 1)[0]
                    arr = np.asarray(values[base])
                    if p.role == ParamRole.SHAPE:
                        mem = Memory.of_values(p.name, AddressSpace.CONSTANT, INT, np.array(arr.shape or (1,)))
                    else:
                        _, strides = _buffer_of(arr, DTYPE_NAMES[dtypes[base]], row_contiguous) if arr.ndim else (0, [1])
                        mem = Memory.of_values(p.name, AddressSpace.CONSTANT, LONG, np.array(strides or [1]))
                    args.append(uploaded(self.cp, mem, poison=False))
                elif p.role == ParamRole.NDIM:
                    args.append(np.int32(np.ndim(values[p.name[: -len("_ndim")]])))
                elif p.role == ParamRole.OUTPUT:
                    scalar = DTYPE_NAMES[out_dtypes[p.name]]
                    size = int(np.prod(shapes[p.name], dtype=np.int64))
                    fill = np.zeros(size) if init_value is None else np.full(size, init_value)
                    mem = Memory.of_values(p.name, AddressSpace.DEVICE, scalar, fill.astype(scalar.dtype))
                    device = uploaded(self.cp, mem, poison=init_value is None)
                    args.append(device)
                    outs.append((device, mem))
                elif p.name in GRID_CONSTANTS:
                    args.append(np.uint32(next(grid)))
                else:
                    raise ValueError(f"parameter '{p.name}' ({p.ctype}) is not one a custom kernel's launch fills")
            return args, outs

        self._run(record, translate, buffers, result, lambda tr: 0)

    def shader_launch(self, kernel: Any, result: Any, values: Mapping[int, Any], dtypes: Mapping[int, str],
                      threadgroup_memory: Mapping[int, int]) -> None:
        """A whole shader's kernel: each buffer index bound to the bytes the simulator bound there."""
        from metal_puzzles.msl.cuda import GRID_CONSTANTS
        from metal_puzzles.msl.cuda.kernel import translate_shader_kernel
        from metal_puzzles.msl.shader_program import _buffer_memory

        record = self._record(kernel.host_name, "whole shader", result)
        by_name = {p.name: p for p in kernel.params}

        def translate() -> Any:
            return translate_shader_kernel(kernel.host_name, kernel.params, kernel.checked, kernel.library.registry)

        def buffers(tr: Any) -> tuple[list[Any], list[tuple[Any, Any]]]:
            args: list[Any] = []
            outs: list[tuple[Any, Any]] = []
            grid = iter(result.grid)
            sizes = {f"{name}_bytes": int(threadgroup_memory[by_name[name].index]) for name in tr.threadgroup_memory}
            for p in tr.params:
                if p.name in GRID_CONSTANTS:
                    args.append(np.uint32(next(grid)))
                elif p.name in sizes:
                    args.append(np.uint32(sizes[p.name]))
                else:
                    param = by_name[p.name]
                    mem = _buffer_memory(kernel.host_name, param, np.asarray(values[param.index]),
                                         dtypes.get(param.index))
                    device = uploaded(self.cp, mem, poison=False)  # a host's buffer holds its data
                    args.append(device)
                    if param.writable:
                        outs.append((device, mem))
            return args, outs

        def shared(tr: Any) -> int:
            return tr.dynamic_shared_bytes([threadgroup_memory[by_name[n].index] for n in tr.threadgroup_memory])

        self._run(record, translate, buffers, result, shared)

    # ------------------------------------------------------------------ shared steps
    def _record(self, name: str, kind: str, result: Any) -> dict[str, Any]:
        record: dict[str, Any] = {"test": self.current, "kernel": name, "kind": kind, "grid": list(result.grid),
                                  "threadgroup": list(result.threadgroup)}
        findings = [f"{f.kind.value}: {f.message[:200]}" for f in result.findings]
        if findings:  # what the simulator's sanitizer said (a race explains a difference)
            record["simulator_findings"] = findings[:5]
        self.records.append(record)
        self.tests.setdefault(self.current, {"outcome": "passed", "gpu_launches": 0})["gpu_launches"] += 1
        return record

    def _run(self, record: dict[str, Any], translate: Callable[[], Any], buffers: Callable[[Any], Any],
             result: Any, shared: Callable[[Any], int]) -> None:
        from differential.cuda_launch import CudaCompileError
        from metal_puzzles.msl import CompileError
        from metal_puzzles.msl.cuda import launch_dims
        from metal_puzzles.msl.lang.errors import CompileWarning

        if self.broken is not None:
            record.update(status=LaunchStatus.NOT_RUN.value, reason=self.broken)
            return
        try:
            with warnings.catch_warnings():  # the simulator's compile already said them to the test
                warnings.simplefilter("ignore", CompileWarning)
                tr = translate()
        except CompileError as err:
            record.update(status=LaunchStatus.REFUSED_BY_TRANSLATOR.value, reason=str(err)[:1500])
            return
        try:
            tr.check_launch(result.grid, result.threadgroup)
        except ValueError as err:
            record.update(status=LaunchStatus.REFUSED_AT_LAUNCH.value, reason=str(err))
            return
        try:
            compiled = self._compiled.get(tr.unit)
            if compiled is None:
                compiled = self._compiled[tr.unit] = self.launcher.compile(tr)
        except CudaCompileError as err:
            record.update(status=LaunchStatus.COMPILE_ERROR.value, reason=str(err)[-3000:])
            return
        cp = self.cp
        try:
            args, outs = buffers(tr)
            blocks, threads = launch_dims(result.grid, result.threadgroup)
            t0 = time.perf_counter()
            compiled(blocks, threads, tuple(args), shared_mem=shared(tr))
            cp.cuda.Device().synchronize()
            record["gpu_s"] = time.perf_counter() - t0
            gpu = [read_back(cp, device, mem) for device, mem in outs]
        except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError) as err:
            self.broken = f"the CUDA context was lost at {self.current} ({record['kernel']}): {err}"
            record.update(status=LaunchStatus.LAUNCH_ERROR.value, reason=str(err))
            return
        except Exception as err:  # noqa: BLE001 - this script's own binding failed: recorded, never silent
            record.update(status=LaunchStatus.LAUNCH_ERROR.value,
                          reason=f"{type(err).__name__}: {err}\n{traceback.format_exc()[-1500:]}")
            return
        simulated = [np.asarray(o) for o in result.outputs]
        gpu = [np.asarray(g).reshape(np.shape(s)).astype(s.dtype, copy=False) for g, s in zip(gpu, simulated, strict=True)]
        record.update(compare_outputs(gpu, simulated, result.output_names))
        exact = all(o["bit_exact"] for o in record["outputs"])
        record["status"] = (LaunchStatus.BIT_EXACT if exact else LaunchStatus.DIFFER).value
        # The test judges the GPU's outputs from here on (its own reference and tolerance).
        result.outputs = gpu


def summarise(plugin: GpuAlongside, exit_code: int) -> dict[str, Any]:
    by_status = {s.value: sum(r.get("status") == s.value for r in plugin.records) for s in LaunchStatus}
    with_gpu = {k: v for k, v in plugin.tests.items() if v["gpu_launches"]}
    differing_tests = {r["test"] for r in plugin.records if r.get("status") == LaunchStatus.DIFFER.value}
    return {
        "launches": len(plugin.records), **by_status,
        "distinct_kernels": len({(r["kernel"], r["kind"]) for r in plugin.records}),
        "tests": len(plugin.tests), "tests_with_gpu_launches": len(with_gpu),
        "tests_passed_on_gpu_outputs": sum(v["outcome"] == "passed" for v in with_gpu.values()),
        # A test with GPU launches that fails is the GPU's failure; one without any fails for its
        # own reasons (a package this machine lacks), listed apart.
        "tests_failed_on_gpu_outputs": sorted(k for k, v in with_gpu.items() if v["outcome"] == "failed"),
        "tests_failed_without_gpu_launches": sorted(k for k, v in plugin.tests.items()
                                                    if v["outcome"] == "failed" and not v["gpu_launches"]),
        "tests_skipped": sorted(k for k, v in plugin.tests.items() if v["outcome"] == "skipped"),
        "differing_launches_in_passing_tests": sum(
            r.get("status") == LaunchStatus.DIFFER.value and plugin.tests.get(r["test"], {}).get("outcome") == "passed"
            for r in plugin.records),
        "tests_with_differences": sorted(differing_tests),
        "refusals": sorted({f"{r['kernel']}: {r['reason'].splitlines()[0]}" for r in plugin.records
                            if r.get("status") in (LaunchStatus.REFUSED_BY_TRANSLATOR.value,
                                                   LaunchStatus.REFUSED_AT_LAUNCH.value)}),
        "cuda_context_lost": plugin.broken,
        "pytest_exit": int(exit_code),
    }


def find_test_module(name: str) -> Path:
    """A test module by its path, or by its file name wherever under tests/ it is."""
    given = Path(name)
    if given.exists():
        return given
    found = sorted((ROOT / "tests").rglob(given.name))
    if not found:
        raise SystemExit(f"cuda_wild_run: no test module {name} (nor {given.name} anywhere under {ROOT / 'tests'})")
    return found[0]


def main(argv: Sequence[str] | None = None, launcher: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="directory for cuda_wild_run.json")
    parser.add_argument("--modules", nargs="*", default=list(WILD_MODULES),
                        help="test modules, by path or file name (default: the wild ones)")
    parser.add_argument("-k", dest="keyword", default=None, help="pytest's -k: only the tests it selects")
    args = parser.parse_args(argv)
    import pytest

    if launcher is None:
        from differential.cuda_launch import CudaLauncher

        launcher = CudaLauncher()
    plugin = GpuAlongside(launcher)
    modules = [str(find_test_module(m)) for m in args.modules]
    pytest_args = ["-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT), *modules]
    if args.keyword:
        pytest_args += ["-k", args.keyword]
    t0 = time.perf_counter()
    try:
        code = pytest.main(pytest_args, plugins=[plugin])
    finally:
        plugin.uninstall()
    summary = {**summarise(plugin, code), "seconds": round(time.perf_counter() - t0, 1),
               "device": launcher.device_name(),
               "modules": [str(Path(m).relative_to(ROOT)) if Path(m).is_absolute() else m for m in modules]}
    target = Path(args.out) / "cuda_wild_run.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps({"summary": summary, "records": plugin.records, "tests": plugin.tests}, indent=1,
                              default=str) + "\n")
    os.replace(tmp, target)
    print(json.dumps(summary, indent=1))
    ok = not summary["tests_failed_on_gpu_outputs"] and not summary[LaunchStatus.COMPILE_ERROR.value] \
        and not summary[LaunchStatus.LAUNCH_ERROR.value] and not summary[LaunchStatus.NOT_RUN.value]
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
