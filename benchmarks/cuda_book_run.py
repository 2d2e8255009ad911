"""Every reference kernel of the book on an NVIDIA GPU, through its CUDA translation, compared
with the simulator: the real-GPU check of the translator (and the simulator's oracle).

For each puzzle (the wired finales excepted: they wire other puzzles' kernels in Python) and each
of its test cases (the visible one and the hidden ones), the reference solution runs on the
simulator (``checking.run_case``) and, translated by ``to_cuda``, on the GPU: the ``.unit`` compiled
as the oracle's launcher compiles it (``tests/differential/cuda_launch.py``: the project's NVRTC,
no FMA contraction, denormals kept; CuPy's own ``RawKernel`` would flush them to zero), launched as
MLX's ``cuda_kernel`` launches a Metal grid (``launch_dims``). Integer outputs must agree bit for
bit; float outputs agree within the puzzle's own declared tolerance (its ``atol`` and ``rtol``,
what ``check()`` allows a learner's kernel), because CUDA's ``sinf``/``cosf``/``expf`` round their
own way (rope at positions 22-27 differed by 8e-6 from the simulator, past a fixed 1e-5
relative comparison and far inside rope's declared 2.4e-4). ``bit_exact`` is recorded beside, and
the warm launch is timed with CUDA events.

Needs CuPy and a GPU (cupy is imported only when this runs). Writes DIR/cuda_book_run.json:

    python benchmarks/cuda_book_run.py --out DIR [--only PUZZLE_ID ...] [--repeat N]

Whole shaders are bound as their puzzle's host binds them (the array its layout names at each
buffer index). Pipelines of several kernels are listed as not run, with the reason, never counted
as agreeing.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(ROOT / "tests"))  # differential.cuda_launch: the oracle's compile

from metal_puzzles.checking.case_runner import buffer_layout, launched_case, run_case  # noqa: E402
from metal_puzzles.checking.wired import WiredPuzzle  # noqa: E402
from metal_puzzles.msl.cuda import CudaTranslation, launch_dims, translate_shader  # noqa: E402
from metal_puzzles.msl.lang.kernel_parameters import ParamRole  # noqa: E402
from metal_puzzles.msl.shader_program import choose_kernel, declares_kernels  # noqa: E402
from metal_puzzles.puzzles import PUZZLES, solution_kernel  # noqa: E402


@functools.lru_cache(maxsize=1)
def launcher() -> Any:
    from differential.cuda_launch import CudaLauncher

    return CudaLauncher()


def compiled(tr: CudaTranslation, cache: dict) -> Any:
    """The unit's entry, compiled once (by the oracle's launcher: denormals kept, see above)."""
    if tr.unit not in cache:
        cache[tr.unit] = launcher().compile(tr)
    return cache[tr.unit]


def device_array(cp: Any, values: np.ndarray, dtype: str) -> Any:
    """A host array as the kernel's buffer holds it (bfloat16 as its 16 bits)."""
    a = np.asarray(values)
    if dtype == "bfloat16":
        bits = np.ascontiguousarray(a.astype(np.float32)).view(np.uint32) >> np.uint32(16)
        return cp.asarray(bits.astype(np.uint16))
    return cp.asarray(np.ascontiguousarray(a.astype(np.dtype(dtype))))


def host_values(cp: Any, arr: Any, dtype: str) -> np.ndarray:
    out = cp.asnumpy(arr)
    if dtype == "bfloat16":
        return (out.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return out


def run_on_gpu(cp: Any, tr: CudaTranslation, inputs: list[np.ndarray], output_shape: tuple[int, ...],
               output_dtype: str, grid: tuple[int, int, int], threadgroup: tuple[int, int, int],
               init_value: float | None, repeat: int, cache: dict) -> tuple[np.ndarray, float]:
    tr.check_launch(grid, threadgroup)
    kernel = compiled(tr, cache)
    by_name = dict(zip(tr.input_names, inputs, strict=False))
    args: list[Any] = []
    out = None
    for p in tr.params:
        if p.role == ParamRole.INPUT:
            args.append(device_array(cp, by_name[p.name], p.dtype))
        elif p.role == ParamRole.SHAPE:
            args.append(cp.asarray(np.array(np.shape(by_name[p.name[:-len("_shape")]]), dtype=np.int32)))
        elif p.role == ParamRole.STRIDES:
            a = np.asarray(by_name[p.name[:-len("_strides")]])
            args.append(cp.asarray(np.array([s // a.itemsize for s in a.strides], dtype=np.int64)))
        elif p.role == ParamRole.NDIM:
            args.append(np.int32(np.ndim(by_name[p.name[:-len("_ndim")]])))
        elif p.role == ParamRole.OUTPUT:
            host = np.full(output_shape, 0 if init_value is None else init_value, dtype=np.float64)
            out = device_array(cp, host, output_dtype)
            args.append(out)
    args.extend(np.uint32(g) for g in grid)
    blocks, threads = launch_dims(grid, threadgroup)
    kernel(blocks, threads, tuple(args))
    cp.cuda.Device().synchronize()
    result = host_values(cp, out, output_dtype)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(repeat):
        kernel(blocks, threads, tuple(args))
    stop.record()
    stop.synchronize()
    return result, cp.cuda.get_elapsed_time(start, stop) * 1000.0 / max(repeat, 1)


def shader_on_gpu(cp: Any, kernel: Any, case: Any, options: Any, dtype: str, repeat: int,
                  cache: dict) -> tuple[np.ndarray, float, float]:
    """A whole shader's kernel as its host binds it: the array ``layout[i]`` at [[buffer(i)]] (the
    unit takes the buffers in index order), a constant value as a one-element buffer."""
    library = kernel.kernel.shader_library()
    layout = buffer_layout(kernel, options) or [*kernel.input_names, *kernel.output_names]
    first = str(np.asarray(case.inputs[0]).dtype) if case.inputs else None
    chosen = choose_kernel(library, kernel.name, first)
    t0 = time.perf_counter()
    tr = translate_shader(library, [chosen.host_name])[chosen.host_name]
    translate_ms = (time.perf_counter() - t0) * 1000
    tr.check_launch(case.grid, case.threadgroup)
    raw = compiled(tr, cache)
    inputs = dict(zip(kernel.input_names, case.inputs, strict=True))
    by_index = {p.bound_index: p for p in chosen.buffers}
    out = None
    args: list[Any] = []
    for index in sorted(by_index):
        name = layout[index]
        if name in inputs:
            value = np.asarray(inputs[name]).reshape(-1)
            args.append(device_array(cp, value, str(value.dtype)))
        else:
            host = np.full(case.output_shape, 0 if options.init_value is None else options.init_value, dtype=np.float64)
            out = device_array(cp, host.reshape(-1), dtype)
            args.append(out)
    args.extend(np.uint32(g) for g in case.grid)
    blocks, threads = launch_dims(case.grid, case.threadgroup)
    raw(blocks, threads, tuple(args))
    cp.cuda.Device().synchronize()
    result = host_values(cp, out, dtype).reshape(case.output_shape)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(repeat):
        raw(blocks, threads, tuple(args))
    stop.record()
    stop.synchronize()
    return result, cp.cuda.get_elapsed_time(start, stop) * 1000.0 / max(repeat, 1), translate_ms


def compare(got: np.ndarray, want: np.ndarray, atol: float, rtol: float) -> dict[str, Any]:
    """The GPU's output against the simulator's: integers bit for bit, floats within the puzzle's
    declared ``atol``/``rtol`` (NaN matching NaN)."""
    got = np.asarray(got).reshape(np.shape(want))
    want = np.asarray(want)
    if want.dtype.kind == "f":
        g32, w32 = got.astype(np.float32), want.astype(np.float32)
        bit_exact = bool(np.array_equal(g32.view(np.uint32), w32.view(np.uint32)))
        close = bool(np.allclose(g32, w32, rtol=rtol, atol=atol, equal_nan=True))
        diff = float(np.nanmax(np.abs(g32.astype(np.float64) - w32))) if g32.size else 0.0
        return {"agree": close, "bit_exact": bit_exact, "max_abs_diff": diff}
    equal = bool(np.array_equal(got, want))
    return {"agree": equal, "bit_exact": equal, "max_abs_diff": 0.0 if equal else None}


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    """How many cases ran, agreed (within the puzzle's tolerance), agreed bit for bit, failed."""
    ran = [r for r in records if r["status"] == "ran"]
    return {"cases_ran": len(ran), "agree": sum(r["agree"] for r in ran),
            "bit_exact": sum(r["bit_exact"] for r in ran),
            "errors": sum(r["status"] == "error" for r in records),
            "not_run": sum(r["status"] == "not run" for r in records)}


def write_report(target: Path, summary: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """The report as JSON, put in place whole, and its summary printed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps({"summary": summary, "records": records}, indent=1) + "\n")
    os.replace(tmp, target)
    print(json.dumps(summary, indent=1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="directory for cuda_book_run.json")
    parser.add_argument("--only", nargs="*", default=None, help="puzzle ids to run (default: all)")
    parser.add_argument("--repeat", type=int, default=20, help="timed launches per case")
    args = parser.parse_args()
    import cupy as cp  # only here: the project never needs CuPy otherwise

    records: list[dict[str, Any]] = []
    cache: dict = {}
    for puzzle in PUZZLES:
        if isinstance(puzzle, WiredPuzzle) or (args.only and puzzle.id not in args.only):
            continue
        kernel = solution_kernel(puzzle)
        options = puzzle.launch_options
        if options.pipeline is not None:
            names = list(translate_shader(kernel.kernel.shader_library()))
            records.append({"puzzle": puzzle.id, "status": "not run",
                            "why": f"a pipeline of a whole shader's kernels ({', '.join(names)}): its stages are "
                                   "not replayed here"})
            continue
        shader = declares_kernels(kernel.source)
        for case in puzzle.cases():
            case = launched_case(kernel, case, options)
            dtype = case.output_dtype or options.output_dtype
            rec: dict[str, Any] = {"puzzle": puzzle.id, "case": case.label, "grid": list(case.grid),
                                   "threadgroup": list(case.threadgroup), "dtype": dtype}
            try:
                want = run_case(kernel, case, options).outputs[0]
                if shader:
                    got, ms, translate_ms = shader_on_gpu(cp, kernel, case, options, dtype, args.repeat, cache)
                else:
                    t0 = time.perf_counter()
                    tr = kernel.to_cuda(inputs=list(case.inputs), output_shapes=[case.output_shape],
                                        output_dtypes=[dtype])
                    translate_ms = (time.perf_counter() - t0) * 1000
                    got, ms = run_on_gpu(cp, tr, [np.asarray(x) for x in case.inputs], tuple(case.output_shape),
                                         dtype, tuple(case.grid), tuple(case.threadgroup), options.init_value,
                                         args.repeat, cache)
                rec.update(compare(got, want, puzzle.atol, puzzle.rtol), status="ran", gpu_ms=ms, translate_ms=translate_ms)
            except Exception as exc:  # noqa: BLE001 - recorded per case
                rec.update(status="error", error=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc()[-2000:])
            records.append(rec)
            print(f"{puzzle.id:28s} {case.label[:30]:30s} {rec['status']:6s} agree={rec.get('agree')} "
                  f"bit_exact={rec.get('bit_exact')} {rec.get('error', '')[:80]}", flush=True)
    summary = {**summarise(records), "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
               "cupy": cp.__version__}
    write_report(Path(args.out) / "cuda_book_run.json", summary, records)
    return 0 if summary["agree"] == summary["cases_ran"] and not summary["errors"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
