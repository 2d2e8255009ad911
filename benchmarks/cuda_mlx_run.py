"""Every reference kernel of the book through MLX's own CUDA back end (``mx.fast.cuda_kernel``),
as a learner's ``backend="cuda"`` runs it, compared with the simulator.

``cuda_book_run.py`` runs the translated ``.unit`` with CuPy; this script takes the path a learner
takes: the drop-in kernel called with ``backend="cuda"``, translated to MLX's body ABI and compiled
by MLX's NVRTC JIT. Each case is judged as ``cuda_book_run`` judges it (``compare``: the puzzle's
full error model, as ``check()`` applies it, and the simulator's bits beside). Needs ``mlx[cuda13]`` (or cuda12) and an NVIDIA GPU; MLX is imported as the
package imports it. Writes DIR/cuda_mlx_run.json:

    python benchmarks/cuda_mlx_run.py --out DIR [--only PUZZLE_ID ...] [--jobs N]

Whole shaders (a kernel function with its own parameters) are listed as not run: ``cuda_kernel``
takes a body, as ``metal_kernel`` does. Pipelines likewise. The finales (Part II's differentiable
functions, Part V's decode step) are wired on the reference kernels of the puzzles they wire, every
launch on the GPU (``wire(kernels, backend="cuda")``), and judged by the finale's own check: a
finale that passes counts as agreeing within the error model (its outcomes are recorded), never
bit for bit.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import sys
import time
import traceback
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

import mlx.core as mx  # noqa: E402

from metal_puzzles.checking.case_runner import launched_case, run_case  # noqa: E402
from metal_puzzles.checking.wired import WiredPuzzle  # noqa: E402
from metal_puzzles.msl.shader_program import declares_kernels  # noqa: E402
from metal_puzzles.puzzles import PUZZLES, solution_kernel  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from cuda_book_run import Agreement, compare, puzzle_comparison, summarise, write_report  # noqa: E402


def call_on_cuda(kernel: Any, inputs: list[Any], case: Any, dtype: str, init_value: Any) -> Any:
    """One launch of the drop-in kernel on MLX's CUDA back end, evaluated."""
    outs = kernel.kernel(inputs=inputs, output_shapes=[tuple(case.output_shape)],
                         output_dtypes=[getattr(mx, dtype)], grid=tuple(case.grid),
                         threadgroup=tuple(case.threadgroup), init_value=init_value, backend="cuda")
    mx.eval(*outs)
    return outs[0]


@contextlib.contextmanager
def references_on_cpu() -> Iterator[None]:
    """The finales' reference models written in MLX ops alone (``decode_with_mlx``) evaluated on
    the CPU stream while this lasts."""
    from metal_puzzles.puzzles import decode_step, t08_decode_step

    real = decode_step.decode_with_mlx

    def on_cpu(*args: Any, **kwargs: Any) -> Any:
        with mx.stream(mx.cpu):
            logits, token = real(*args, **kwargs)
            mx.eval(logits)
            return logits, token

    patched = [(m, "decode_with_mlx") for m in (decode_step, t08_decode_step) if hasattr(m, "decode_with_mlx")]
    for module, name in patched:
        setattr(module, name, on_cpu)
    try:
        yield
    finally:
        for module, name in patched:
            setattr(module, name, real)


def run_finale(puzzle: WiredPuzzle) -> dict[str, Any]:
    """A finale wired on GPU kernels: the reference kernels of the puzzles it wires, every launch
    with ``backend="cuda"``, judged by the finale's own check (its values, gradients or decoded
    tokens against its spec), as a learner's ``check()`` judges their wiring."""
    rec: dict[str, Any] = {"puzzle": puzzle.id, "case": "the finale's own check, every kernel on the GPU",
                           "finale": True, "kernels": list(puzzle.kernels)}
    try:
        kernels = {owner.kernel_name: solution_kernel(owner) for owner in puzzle.kernel_puzzles}
        assert puzzle.wire is not None, f"{puzzle.id} has no reference wiring"
        t0 = time.perf_counter()
        try:
            verdict = puzzle.check_wired(puzzle.wire(kernels, backend="cuda"))
        except (IndexError, RuntimeError, ValueError) as exc:
            # MLX's own ops failing on CUDA in the finale's reference model (the H200: the decode
            # step's decode_with_mlx raised "SmallVector out of range" at its argmax's item()),
            # not our kernels: recorded, and the check run again with the MLX-only reference
            # models on the CPU, the kernels still on the GPU.
            rec["reference_error_on_gpu"] = f"{type(exc).__name__}: {exc}"
            with references_on_cpu():
                verdict = puzzle.check_wired(puzzle.wire(kernels, backend="cuda"))
        passed = bool(verdict)
        rec.update(status="ran", agree=passed, bit_exact=False, agreement=(
            Agreement.WITHIN_MODEL if passed else Agreement.OUTSIDE_MODEL).value, seconds=time.perf_counter() - t0,
            outcomes=[{"test": o.case.label, "quantity": o.quantity, "status": o.status.value,
                       "error": (o.error or "")[:300]} for o in verdict.outcomes])
    except Exception as exc:  # noqa: BLE001 - recorded per finale
        rec.update(status="error", error=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc()[-1500:])
    print(f"{puzzle.id:26s} {'(finale)':34s} {rec['status']:6s} {rec.get('agreement', '')} "
          f"{rec.get('error', '')[:100]}", flush=True)
    return rec


def run_puzzles(ids: list[str]) -> list[dict[str, Any]]:
    """Every case of these puzzles on MLX's CUDA back end, each judged (one worker's share)."""
    records: list[dict[str, Any]] = []
    for puzzle in PUZZLES:
        if puzzle.id not in ids:
            continue
        if isinstance(puzzle, WiredPuzzle):
            records.append(run_finale(puzzle))
            continue
        kernel = solution_kernel(puzzle)
        options = puzzle.launch_options
        if options.pipeline is not None or declares_kernels(kernel.source):
            records.append({"puzzle": puzzle.id, "status": "not run",
                            "why": "a pipeline or a whole shader: cuda_kernel takes a kernel body"})
            continue
        for case in puzzle.cases():
            case = launched_case(kernel, case, options)
            dtype = case.output_dtype or options.output_dtype
            rec: dict[str, Any] = {"puzzle": puzzle.id, "case": case.label, "grid": list(case.grid),
                                   "threadgroup": list(case.threadgroup), "dtype": dtype}
            try:
                want = run_case(kernel, case, options).outputs[0]
                inputs = [mx.array(np.asarray(x)) for x in case.inputs]

                t0 = time.perf_counter()
                got = call_on_cuda(kernel, inputs, case, dtype, options.init_value)
                first_s = time.perf_counter() - t0
                times = []
                for _ in range(10):
                    t0 = time.perf_counter()
                    call_on_cuda(kernel, inputs, case, dtype, options.init_value)
                    times.append(time.perf_counter() - t0)
                rec.update(compare(np.array(got.astype(mx.float32) if dtype == "bfloat16" else got), want,
                                   puzzle_comparison(puzzle, case)),
                           status="ran", first_call_s=first_s, warm_call_us=float(np.median(times)) * 1e6)
            except Exception as exc:  # noqa: BLE001 - recorded per case
                rec.update(status="error", error=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc()[-1500:])
            records.append(rec)
            print(f"{puzzle.id:26s} {case.label[:34]:34s} {rec['status']:6s} {rec.get('agreement', '')} "
                  f"{rec.get('error', '')[:100]}", flush=True)
    return records


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--jobs", type=int, default=1,
                        help="worker processes, puzzles dealt out among them: MLX compiles each case's kernel "
                             "(about 2.5 s, the grid is a template constant), and NVRTC's compiles run side by side")
    args = parser.parse_args()
    print(f"mlx {mx.__version__}; CUDA available: {mx.cuda.is_available()}", flush=True)
    # Every catalogue entry: a kernel's cases, a finale's check of its wiring (--only: those named).
    ids = [p.id for p in PUZZLES if not args.only or p.id in args.only]
    if args.jobs <= 1:
        records = run_puzzles(ids)
    else:
        # One puzzle a task, so a long one (the decode step) does not hold up a share of others.
        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            done = list(pool.map(run_puzzles, [[pid] for pid in ids], chunksize=1))
        by_puzzle: dict[str, list[dict[str, Any]]] = {}  # the report keeps the catalogue's order
        for part in done:
            for r in part:
                by_puzzle.setdefault(r["puzzle"], []).append(r)
        records = [r for pid in ids for r in by_puzzle.get(pid, [])]
    summary = {**summarise(records), "mlx": mx.__version__}
    write_report(Path(args.out) / "cuda_mlx_run.json", summary, records)
    return 0 if summary["agree"] == summary["cases_ran"] and not summary["errors"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
