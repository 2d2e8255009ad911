"""How long translating a kernel to CUDA takes (the target: under 50 ms a kernel), and how long
NVRTC takes to compile the translations, alone and in batches: every reference kernel of the book.

    python benchmarks/bench_cuda_translate.py

Translation is timed twice per kernel: the whole ``to_cuda`` (the simulator's front end for the
instance, then the renderer) and the renderer alone on the already checked tree. Prints the
median and the largest; NVRTC's figures need the ``test`` extra (nvidia-cuda-nvrtc).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from metal_puzzles.checking.case_runner import launched_case  # noqa: E402
from metal_puzzles.checking.wired import WiredPuzzle  # noqa: E402
from metal_puzzles.host.kernel import dtype_name, to_numpy  # noqa: E402
from metal_puzzles.msl.abi.signature import InputDesc  # noqa: E402
from metal_puzzles.msl.cuda.kernel import translate_body  # noqa: E402
from metal_puzzles.msl.program import CompiledKernel  # noqa: E402
from metal_puzzles.msl.shader_program import declares_kernels  # noqa: E402
from metal_puzzles.puzzles import PUZZLES, solution_kernel  # noqa: E402
from msl.cuda.corpus import batch_unit  # noqa: E402


def main() -> int:
    whole, render, units, names = [], [], [], []
    for puzzle in PUZZLES:
        if isinstance(puzzle, WiredPuzzle):
            continue
        kernel = solution_kernel(puzzle)
        options = puzzle.launch_options
        if options.pipeline is not None or declares_kernels(kernel.source):
            continue
        case = launched_case(kernel, puzzle.visible, options)
        dtype = case.output_dtype or options.output_dtype
        t0 = time.perf_counter()
        tr = kernel.to_cuda(inputs=list(case.inputs), output_shapes=[case.output_shape], output_dtypes=[dtype])
        whole.append(time.perf_counter() - t0)
        units.append(tr)
        names.append(puzzle.id)
        descs = []
        for name, x in zip(kernel.input_names, case.inputs, strict=True):
            arr, override = to_numpy(x)
            descs.append(InputDesc(name, override or dtype_name(arr.dtype), arr.ndim, int(arr.size)))
        compiled = CompiledKernel(kernel.name, kernel.input_names, kernel.output_names, kernel.source, kernel.header,
                                  descs, [dtype], [], kernel.atomic_outputs)
        t0 = time.perf_counter()
        translate_body(kernel.name, compiled.generated, compiled.checked, compiled.registry,
                       [d.dtype for d in descs], [dtype], kernel.input_names, kernel.output_names, [])
        render.append(time.perf_counter() - t0)
    ms = 1000.0
    print(f"{len(whole)} reference kernels of the book")
    print(f"to_cuda (front end + renderer): median {statistics.median(whole) * ms:.1f} ms, "
          f"max {max(whole) * ms:.1f} ms (target: under 50 ms)")
    worst = max(range(len(whole)), key=whole.__getitem__)
    print(f"slowest: {names[worst]} ({whole[worst] * ms:.1f} ms; the first call also imports and warms caches)")
    print(f"renderer alone:                 median {statistics.median(render) * ms:.2f} ms, "
          f"max {max(render) * ms:.2f} ms")
    try:
        from metal_puzzles.host.nvrtc import compile_to_ptx
    except ImportError:
        return 0
    t0 = time.perf_counter()
    for tr in units:
        compile_to_ptx(tr.unit)
    alone = time.perf_counter() - t0
    t0 = time.perf_counter()
    compile_to_ptx(batch_unit(units))
    batched = time.perf_counter() - t0
    print(f"NVRTC to PTX (compute_75): {alone / len(units) * ms:.0f} ms a unit alone, "
          f"{batched / len(units) * ms:.0f} ms a unit in one program of {len(units)}")
    return 0  # it reports; timings on a shared machine are not a verdict


if __name__ == "__main__":
    raise SystemExit(main())
