"""Every reference kernel of the book on an NVIDIA GPU, through its CUDA translation, compared
with the simulator: the real-GPU check of the translator (and the simulator's oracle).

For each puzzle (the wired finales excepted: they wire other puzzles' kernels in Python) and each
of its test cases (the visible one and the hidden ones), the reference solution runs on the
simulator (``checking.run_case``) and, translated by ``to_cuda``, on the GPU: the ``.unit`` compiled
as the oracle's launcher compiles it (``tests/differential/cuda_launch.py``: the project's NVRTC,
no FMA contraction, denormals kept; CuPy's own ``RawKernel`` would flush them to zero), launched as
MLX's ``cuda_kernel`` launches a Metal grid (``launch_dims``). Each case's GPU output is judged as
``check()`` judges a learner's kernel (``puzzle_comparison``: the puzzle's error model, its atol and
rtol as the floor, its ``Allowance`` and the stored dtype's rounding), and compared with the
simulator's bit for bit beside: every case is ``bit for bit``, ``within the error model`` (other
bits that ``check()`` accepts: CUDA's ``sinf``/``cosf``/``expf`` round their own way, and RoPE's
float32 angle at position 7581 rounds differently, 2e-3 off, inside its 96-ulp angle allowance)
or ``outside the error model``. The warm launch is timed with CUDA events.

Needs CuPy and a GPU (cupy is imported only when this runs). Writes DIR/cuda_book_run.json:

    python benchmarks/cuda_book_run.py --out DIR [--only PUZZLE_ID ...] [--repeat N]

Whole shaders are bound as their puzzle's host binds them (the array its layout names at each
buffer index). A pipeline of several kernels (the radix sort) runs stage by stage on the GPU, each
stage reading the previous GPU stage's output (``pipeline_on_gpu``), every stage compared bit for
bit and the last one's output judged as above.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
import traceback
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(ROOT / "tests"))  # differential.cuda_launch: the oracle's compile
sys.path.insert(0, str(ROOT / "benchmarks"))  # cuda_wild_run: a pipeline's stages doubled on the GPU

from metal_puzzles.checking.case_runner import buffer_layout, launched_case, run_case  # noqa: E402
from metal_puzzles.checking.tolerance import Comparison, compare_with_spec  # noqa: E402
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


class Agreement(str, Enum):
    """How the GPU's output of one case stands against the simulator's and the puzzle's spec."""

    BIT_EXACT = "bit for bit"  # the same bits as the simulator's output (two NaNs alike)
    WITHIN_MODEL = "within the error model"  # other bits, but check() would accept the GPU's output
    OUTSIDE_MODEL = "outside the error model"  # check() would call the GPU's output wrong


def pipeline_on_gpu(puzzle: Any, kernel: Any) -> list[dict[str, Any]]:
    """A pipeline of a whole shader's kernels, stage by stage on the GPU: each stage's launch is
    doubled on the GPU (``cuda_wild_run.GpuAlongside``: the bytes the simulator bound, compared bit
    for bit) and the next stage reads the GPU's output, so the last stage's output is the GPU's
    chain, judged as ``check()`` judges it beside the simulator's own chain."""
    from cuda_wild_run import GpuAlongside

    plugin = GpuAlongside(launcher())
    plugin.install()
    try:
        return _pipeline_cases(puzzle, kernel, plugin)
    finally:
        plugin.uninstall()


def _pipeline_cases(puzzle: Any, kernel: Any, plugin: Any) -> list[dict[str, Any]]:
    from cuda_wild_run import LaunchStatus

    options = puzzle.launch_options
    records = []
    for case in puzzle.cases():
        case = launched_case(kernel, case, options)
        rec: dict[str, Any] = {"puzzle": puzzle.id, "case": case.label, "grid": list(case.grid),
                               "threadgroup": list(case.threadgroup), "dtype": case.output_dtype or options.output_dtype}
        try:
            plugin.active = False
            simulated = run_case(kernel, case, options).outputs[0]
            plugin.active, first = True, len(plugin.records)
            gpu = run_case(kernel, case, options).outputs[0]
            stages = plugin.records[first:]
            rec["stages"] = [{k: r.get(k) for k in ("kernel", "status", "reason", "outputs")} for r in stages]
            ran = all(r.get("status") in (LaunchStatus.BIT_EXACT.value, LaunchStatus.DIFFER.value) for r in stages)
            if not stages or not ran:
                rec.update(status="error", error="a stage did not run on the GPU: " + "; ".join(
                    f"{r['kernel']}: {r.get('status')} {str(r.get('reason', ''))[:200]}" for r in stages))
            else:
                rec.update(compare(gpu, simulated, puzzle_comparison(puzzle, case)), status="ran")
        except Exception as exc:  # noqa: BLE001 - recorded per case
            rec.update(status="error", error=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc()[-2000:])
        finally:
            plugin.active = False
        records.append(rec)
        print(f"{puzzle.id:28s} {case.label[:30]:30s} {rec['status']:6s} {rec.get('agreement', '')} (pipeline of "
              f"{len(rec.get('stages', []))} launches) {rec.get('error', '')[:80]}", flush=True)
    return records


def puzzle_comparison(puzzle: Any, case: Any) -> Comparison:
    """The spec's output for ``case`` and the error allowed at each element, exactly as ``check()``
    judges a learner's kernel (``checking.run.run_one``): the puzzle's error model, its atol and
    rtol as the floor, its own ``Allowance`` (RoPE's float32 angles) and the stored dtype's rounding."""
    return compare_with_spec(puzzle.spec, case.inputs, case.output_shape, puzzle.error_model, puzzle.atol,
                             puzzle.rtol, puzzle.allowance, case.output_dtype)


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Whether two outputs hold the same values bit for bit (two NaNs agree whatever their payloads)."""
    if got.shape != want.shape:
        return False
    if want.dtype.kind != "f":
        return bool(np.array_equal(got, want))
    g, w = got.astype(want.dtype), want
    unsigned = np.dtype(f"u{w.dtype.itemsize}")
    both_nan = np.isnan(g) & np.isnan(w)
    return bool(np.all((g.view(unsigned) == w.view(unsigned)) | both_nan))


def compare(got: np.ndarray, simulated: np.ndarray, comparison: Comparison) -> dict[str, Any]:
    """The GPU's output judged as ``check()`` judges a kernel (``comparison``: the puzzle's full
    error model), and beside it against the simulator's output bit for bit. ``agree``: the GPU's
    output passes the puzzle's check; ``agreement`` says whether it did so with the simulator's
    very bits. ``worst_share``: the largest |GPU - spec| as a share of what the model allows there
    (above 1 outside the model); ``simulator_passes``: the simulator's own output under the same rule."""
    want = np.asarray(simulated)
    got = np.asarray(got).reshape(want.shape)
    bit_exact = same_bits(got, want)
    gpu_off = comparison.mismatch(got)
    sim_off = comparison.mismatch(want)
    agreement = (Agreement.BIT_EXACT if bit_exact and not gpu_off.any() else
                 Agreement.OUTSIDE_MODEL if gpu_off.any() else Agreement.WITHIN_MODEL)
    g64, w64 = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.abs(g64 - w64)
        off_spec = np.abs(g64 - comparison.expected) / np.where(comparison.allowed > 0, comparison.allowed, np.nan)
    finite = diff[np.isfinite(diff)]
    share = off_spec[np.isfinite(off_spec)]
    return {"agree": agreement is not Agreement.OUTSIDE_MODEL, "bit_exact": bit_exact,
            "agreement": agreement.value, "max_abs_diff": float(finite.max()) if finite.size else 0.0,
            "worst_share": float(share.max()) if share.size else 0.0,
            "elements_outside_model": int(gpu_off.sum()), "simulator_passes": not bool(sim_off.any())}


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    """How many cases ran, agreed (within the puzzle's tolerance), agreed bit for bit, failed."""
    ran = [r for r in records if r["status"] == "ran"]
    return {"cases_ran": len(ran), "agree": sum(r["agree"] for r in ran),
            "bit_exact": sum(r["bit_exact"] for r in ran),
            **{kind.value: sum(r["agreement"] == kind.value for r in ran) for kind in Agreement},
            "within_model_cases": [f"{r['puzzle']}: {r['case']}" for r in ran
                                   if r["agreement"] == Agreement.WITHIN_MODEL.value],
            "outside_model_cases": [f"{r['puzzle']}: {r['case']}" for r in ran
                                    if r["agreement"] == Agreement.OUTSIDE_MODEL.value],
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
            records.extend(pipeline_on_gpu(puzzle, kernel))
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
                rec.update(compare(got, want, puzzle_comparison(puzzle, case)), status="ran", gpu_ms=ms, translate_ms=translate_ms)
            except Exception as exc:  # noqa: BLE001 - recorded per case
                rec.update(status="error", error=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc()[-2000:])
            records.append(rec)
            print(f"{puzzle.id:28s} {case.label[:30]:30s} {rec['status']:6s} {rec.get('agreement', '')} "
                  f"{rec.get('error', '')[:80]}", flush=True)
    summary = {**summarise(records), "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
               "cupy": cp.__version__}
    write_report(Path(args.out) / "cuda_book_run.json", summary, records)
    return 0 if summary["agree"] == summary["cases_ran"] and not summary["errors"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
