"""Part III on a real GPU (issue 39, section 3): each lesson's slow and taught kernels timed on an
NVIDIA GPU at sizes where the effect shows, and the real ranking set beside the cost model's.

    python benchmarks/cuda_lessons.py --out DIR [--lessons III.1 III.3] [--repeats 20]   # on the GPU
    python benchmarks/cuda_lessons.py plan                                                # here, with MLX

Two steps, because the GPU machine has CuPy but no MLX (the puzzles import MLX):

* ``plan`` (any machine with the package) writes ``benchmarks/cuda_lessons_plan.json``: for every
  lesson its kernels (the slow one the text describes, the taught one, the variants
  ``tests/puzzles/part3/test_part3_lessons.py`` tests), the cost model's figures and kernel time for each on the
  puzzle's visible test (an Apple M1, as the lessons state them), and the simulator's output there.
  ``tests/benchmark_scripts/test_cuda_lessons.py`` fails when the committed plan no longer matches the book.
* the GPU run reads the plan; needs NumPy, CuPy and ``metal_puzzles.msl`` (NumPy only). For each
  kernel: the CUDA translation (``metal_puzzles.msl.cuda``) run on the visible test and compared
  with the simulator's output, then timed with CUDA events at a large size (the recipes below,
  in NumPy), each lesson in a worker process with a wall limit. The slow kernels' large outputs
  are checked against the taught kernel's. Writes ``DIR/cuda_lessons.json`` and
  ``DIR/cuda_lessons.md`` (the table) and prints the table.

The model prices an Apple GPU and the GPU here is not one: a ranking that disagrees is evidence
about what transfers (memory segments, divergence) and what does not (Apple's barrier cost,
threadgroup-memory banks, occupancy limits), to be written into the cost model's evidence.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
for _path in (REPO / "lib", REPO / "tests", REPO / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

PLAN = Path(__file__).with_name("cuda_lessons_plan.json")
REPORT_NAME = "cuda_lessons"

# ----------------------------------------------------------------------------------------
# Arrays in JSON


def encode_array(a: np.ndarray) -> dict[str, Any]:
    a = np.ascontiguousarray(a)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": base64.b64encode(a.tobytes()).decode()}


def decode_array(d: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(d["data"]), dtype=d["dtype"]).reshape(d["shape"]).copy()


# ----------------------------------------------------------------------------------------
# The plan (needs the package and MLX)

#: (lesson, puzzle, recipe, kernels): each kernel (label, role, source key, header key); keys name
#: tests/support/part3_kernels.py constants, 'solution' (the reference solution) or 'solution:<puzzle>'.
LESSONS: tuple[tuple[str, str, str, tuple[tuple[str, str, str, str | None], ...]], ...] = (
    ("III.1", "tiled_transpose", "transpose", (
        ("naive transpose", "slow", "NAIVE_TRANSPOSE", None),
        ("tile written by column", "variant", "TILE_WRITTEN_BY_COLUMN", None),
        ("tiled (taught)", "taught", "solution", None))),
    ("III.2", "padded_transpose", "transpose", (
        ("tile[32][32], 32-way conflict", "slow", "solution:tiled_transpose", None),
        ("tile[32][33] (taught)", "taught", "solution", None))),
    ("III.3", "block_sum", "block_sum", (
        ("barrier tree", "slow", "TREE", None),
        ("simd_sum, serial partials", "variant", "SERIAL_PARTIALS", None),
        ("simd_sum twice (taught)", "taught", "solution", None))),
    ("III.4", "uniform_branches", "uniform_branches", (
        ("in order, divergent", "slow", "IN_ORDER", None),
        ("remapped (taught)", "taught", "solution", None))),
    ("III.5", "lookup_occupancy", "lookup", (
        ("TG = 64", "slow", "solution", "TG=64"),
        ("TG = 256", "variant", "solution", "TG=256"),
        ("TG = 1024 (taught)", "taught", "solution", "solution"))),
    ("III.6", "fused_softmax", "softmax", (
        ("three passes", "slow", "THREE_PASS", None),
        ("two passes", "variant", "TWO_PASS", None),
        ("fused (taught)", "taught", "solution", None))),
    ("III.7", "simdgroup_matmul", "matmul", (
        ("lane by lane", "slow", "LANE_BY_LANE", None),
        ("simdgroup matrices (taught)", "taught", "solution", None))),
)


def _source(puzzle: Any, key: str) -> str:
    from metal_puzzles.puzzles import get_puzzle, solution_source

    if key == "solution":
        return solution_source(puzzle)
    if key.startswith("solution:"):
        return solution_source(get_puzzle(key.split(":", 1)[1]))
    from support import part3_kernels

    return str(getattr(part3_kernels, key))


def _header(puzzle: Any, key: str | None) -> str:
    from metal_puzzles.puzzles import solution_header

    if key is None:
        return puzzle.header
    if key == "solution":
        return solution_header(puzzle) or puzzle.header
    name, value = key.split("=")
    return puzzle.header.replace(f"{name} = {puzzle.header.split(f'{name} = ')[1].split(';')[0]};",
                                 f"{name} = {value};")


def build_plan() -> dict[str, Any]:
    """Every lesson's kernels with the cost model's figures and the simulator's output on the
    puzzle's visible test."""
    from metal_puzzles.checking import run_case
    from metal_puzzles.checking.case_runner import launched_case
    from metal_puzzles.puzzles import get_puzzle

    lessons = []
    for lesson, pid, recipe, kernels in LESSONS:
        p = get_puzzle(pid)
        variants = []
        for label, role, source_key, header_key in kernels:
            source, header = _source(p, source_key), _header(p, header_key)
            kernel = p.kernel(source, header)
            case = launched_case(kernel, p.visible, p.launch_options)
            run = run_case(kernel, p.visible, p.launch_options, cost=True)
            assert run.cost is not None and run.stopped is None, (lesson, label)
            f = run.cost.figures()
            estimate = run.cost.estimate
            variants.append({
                "label": label, "role": role, "source": source, "header": header,
                "grid": list(case.grid), "threadgroup": list(case.threadgroup),
                "model": {"gpu": run.cost.gpu.name,
                          "kernel_seconds": estimate.kernel_seconds, "bound": estimate.kernel_bound.value,
                          "load_segments": f.load_segments.value, "store_segments": f.store_segments.value,
                          "bank_conflict": f.bank_conflict.value, "simd_efficiency": round(f.simd_efficiency, 4),
                          "reads_per_element": f.reads_per_element, "occupancy": f.occupancy,
                          "barriers": f.barriers},
                "findings": [str(x) for x in run.findings],
                "expected": encode_array(np.asarray(run.outputs[0])),
            })
        lessons.append({
            "lesson": lesson, "puzzle": pid, "title": p.title, "recipe": recipe, "kernel_name": p.kernel_name,
            "input_names": list(p.input_names), "output_names": list(p.output_names),
            "output_dtype": p.output_dtype, "init_value": p.init_value, "atomic_outputs": p.atomic_outputs,
            "atol": p.atol, "rtol": p.rtol,
            "visible": {"inputs": [encode_array(np.asarray(a)) for a in p.visible.inputs],
                        "output_shape": list(p.visible.output_shape)},
            "variants": variants,
        })
    return {"about": "benchmarks/cuda_lessons.py plan: Part III's kernels, the cost model's figures (visible "
                     "tests) and the simulator's outputs; regenerate with 'python benchmarks/cuda_lessons.py plan'",
            "lessons": lessons}


# ----------------------------------------------------------------------------------------
# Large launches (NumPy only): where the effect shows on a GPU


def _padded(n: int, k: int) -> int:
    return -(-n // k) * k


#: (inputs, output shape, grid, threadgroup). ``scale`` divides the sizes, down to a floor that
#: still has partial tiles or threadgroups (the suite runs them on the simulator at the floor).
Launch = tuple[list[np.ndarray], tuple[int, ...], tuple[int, int, int], tuple[int, int, int]]


def recipe_transpose(rng: np.random.Generator, scale: int, tg: Sequence[int]) -> Launch:
    rows, cols = max(40, 8192 // scale), max(72, 8192 // scale)
    a = rng.standard_normal((rows, cols), dtype=np.float32)
    return [a], (cols, rows), (_padded(cols, 32), _padded(rows, 32), 1), (32, 32, 1)


def recipe_block_sum(rng: np.random.Generator, scale: int, tg: Sequence[int]) -> Launch:
    n = max(1000, (1 << 26) // scale)
    a = rng.integers(-8, 9, n).astype(np.float32)  # whole numbers: sums exact in any order
    return [a], (-(-n // 256),), (_padded(n, 256), 1, 1), (256, 1, 1)


def recipe_uniform_branches(rng: np.random.Generator, scale: int, tg: Sequence[int]) -> Launch:
    n = max(200, (1 << 24) // scale)
    a = (rng.integers(-8, 9, n) / 2).astype(np.float32)
    return [a], (n,), (_padded(n, 64), 1, 1), (128, 1, 1)


def recipe_lookup(rng: np.random.Generator, scale: int, tg: Sequence[int]) -> Launch:
    n = max(3000, (1 << 24) // scale)
    idx = rng.integers(0, 4096, n).astype(np.int32)
    table = rng.standard_normal(4096, dtype=np.float32)
    return [idx, table], (n,), (n, 1, 1), (int(tg[0]), 1, 1)  # the header's TG


def recipe_softmax(rng: np.random.Generator, scale: int, tg: Sequence[int]) -> Launch:
    rows, cols = max(3, 32768 // scale), 1000
    x = (rng.standard_normal((rows, cols), dtype=np.float32) * 4).astype(np.float32)
    return [x], (rows, cols), (256, rows, 1), (256, 1, 1)


def recipe_matmul(rng: np.random.Generator, scale: int, tg: Sequence[int]) -> Launch:
    n = max(16, 2048 // scale // 8 * 8)
    a = rng.integers(-2, 3, (n, n)).astype(np.float32)  # small whole numbers: exact products and sums
    b = rng.integers(-2, 3, (n, n)).astype(np.float32)
    return [a, b], (n, n), (32 * n // 8, n // 8, 1), (32, 1, 1)


RECIPES: dict[str, Callable[[np.random.Generator, int, Sequence[int]], Launch]] = {
    "transpose": recipe_transpose, "block_sum": recipe_block_sum, "uniform_branches": recipe_uniform_branches,
    "lookup": recipe_lookup, "softmax": recipe_softmax, "matmul": recipe_matmul,
}


# ----------------------------------------------------------------------------------------
# Devices: the GPU through CuPy, or the simulator standing in (tests)


def translate_variant(lesson: dict, variant: dict, inputs: Sequence[np.ndarray]) -> Any:
    """A lesson kernel's CUDA translation (``metal_puzzles.msl.cuda``) for these inputs."""
    from metal_puzzles.msl.abi.signature import describe_input
    from metal_puzzles.msl.cuda import translate_kernel

    descs = [describe_input(n, a, None) for n, a in zip(lesson["input_names"], inputs, strict=True)]
    return translate_kernel(lesson["kernel_name"], lesson["input_names"], lesson["output_names"],
                            variant["source"], variant["header"], descs, [lesson["output_dtype"]], (),
                            lesson["atomic_outputs"])


class CupyLessonDevice:
    def __init__(self) -> None:
        from differential.cuda_launch import CudaLauncher

        self.launcher = CudaLauncher()

    def describe(self) -> str:
        return self.launcher.device_name()

    def prepare(self, lesson: dict, variant: dict, inputs: Sequence[np.ndarray]) -> Any:
        """The translation for these inputs, compiled: (translation, kernel)."""
        tr = translate_variant(lesson, variant, inputs)
        return tr, self.launcher.compile(tr)

    def run(self, prepared: Any, lesson: dict, inputs: Sequence[np.ndarray], output_shape: Sequence[int],
            grid: Sequence[int], tg: Sequence[int]) -> np.ndarray:
        from differential.cuda_launch import initial_outputs

        tr, kernel = prepared
        tr.check_launch(grid, tg)
        init = initial_outputs([output_shape], [lesson["output_dtype"]], lesson["init_value"])
        return self.launcher.run(tr, kernel, dict(zip(lesson["input_names"], inputs, strict=True)), init, grid,
                                 tg)[0]

    def time(self, prepared: Any, lesson: dict, inputs: Sequence[np.ndarray], output_shape: Sequence[int],
             grid: Sequence[int], tg: Sequence[int], repeats: int) -> list[float]:
        from differential.cuda_launch import initial_outputs

        tr, kernel = prepared
        init = initial_outputs([output_shape], [lesson["output_dtype"]], lesson["init_value"])
        return self.launcher.time_kernel(tr, kernel, dict(zip(lesson["input_names"], inputs, strict=True)), init,
                                         grid, tg, repeats=repeats)


class SimulatorLessonDevice:
    """The simulator in the GPU's place (wall-clock 'times'): for testing this script anywhere."""

    def describe(self) -> str:
        return "the simulator (a stand-in device)"

    def prepare(self, lesson: dict, variant: dict, inputs: Sequence[np.ndarray]) -> Any:
        return variant

    def run(self, prepared: Any, lesson: dict, inputs: Sequence[np.ndarray], output_shape: Sequence[int],
            grid: Sequence[int], tg: Sequence[int]) -> np.ndarray:
        from metal_puzzles.msl import simulate

        res = simulate(lesson["kernel_name"], lesson["input_names"], lesson["output_names"], prepared["source"],
                       prepared["header"], inputs=list(inputs), output_shapes=[tuple(output_shape)],
                       output_dtypes=[lesson["output_dtype"]], grid=tuple(grid), threadgroup=tuple(tg),
                       init_value=lesson["init_value"], atomic_outputs=lesson["atomic_outputs"], sanitize="off")
        return np.asarray(res.outputs[0])

    def time(self, prepared: Any, lesson: dict, inputs: Sequence[np.ndarray], output_shape: Sequence[int],
             grid: Sequence[int], tg: Sequence[int], repeats: int) -> list[float]:
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            self.run(prepared, lesson, inputs, output_shape, grid, tg)
            times.append(time.perf_counter() - t0)
        return times


DEVICES: dict[str, Callable[[], Any]] = {"cupy": CupyLessonDevice, "simulator": SimulatorLessonDevice}


# ----------------------------------------------------------------------------------------
# Measuring one lesson (in a worker process)


def _close(a: np.ndarray, b: np.ndarray, atol: float, rtol: float) -> dict[str, Any]:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return {"bitwise": False, "close": False, "max_abs_diff": None, "note": f"shape {a.shape} vs {b.shape}"}
    diff = np.abs(a - b)
    return {"bitwise": bool(np.array_equal(a, b, equal_nan=True)),
            "close": bool(np.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True)),
            "max_abs_diff": float(np.nanmax(diff)) if diff.size else 0.0}


def measure_lesson(payload: dict[str, Any]) -> dict[str, Any]:
    """One lesson on the device: every kernel checked on the visible test, then timed large."""
    lesson, device_name, repeats, scale = payload["lesson"], payload["device"], payload["repeats"], payload["scale"]
    device = DEVICES[device_name]()
    visible_inputs = [decode_array(a) for a in lesson["visible"]["inputs"]]
    out: dict[str, Any] = {"lesson": lesson["lesson"], "device": device.describe(), "variants": []}
    large_outputs: dict[str, np.ndarray] = {}
    for v in lesson["variants"]:
        rec: dict[str, Any] = {"label": v["label"], "role": v["role"], "model_kernel_seconds": v["model"]["kernel_seconds"],
                               "model_bound": v["model"]["bound"]}
        out["variants"].append(rec)
        try:
            prepared = device.prepare(lesson, v, visible_inputs)
            got = device.run(prepared, lesson, visible_inputs, lesson["visible"]["output_shape"], v["grid"],
                             v["threadgroup"])
            rec["visible"] = _close(decode_array(v["expected"]), got, lesson["atol"], lesson["rtol"])
            rng = np.random.default_rng(39)
            inputs, shape, grid, tg = RECIPES[lesson["recipe"]](rng, scale, v["threadgroup"])
            prepared = device.prepare(lesson, v, inputs)
            large_outputs[v["label"]] = device.run(prepared, lesson, inputs, shape, grid, tg)
            times = device.time(prepared, lesson, inputs, shape, grid, tg, repeats)
            rec["large"] = {"grid": list(grid), "threadgroup": list(tg), "output_shape": list(shape),
                            "median_seconds": statistics.median(times), "min_seconds": min(times),
                            "repeats": len(times)}
        except Exception as exc:  # recorded; the lesson's other kernels still run
            rec["error"] = f"{type(exc).__name__}: {exc}"[:4000]
            rec["traceback"] = "".join(traceback.format_exception(exc))[-3000:]
    taught = next((v["label"] for v in lesson["variants"] if v["role"] == "taught"), None)
    if taught in large_outputs:
        for rec in out["variants"]:
            if rec["label"] in large_outputs and rec["label"] != taught:
                rec["large"]["vs_taught"] = _close(large_outputs[taught], large_outputs[rec["label"]], 1e-3, 1e-4)
    return out


def rankings(result: dict[str, Any]) -> dict[str, Any]:
    """The model's and the GPU's orders (fastest first) and whether they agree."""
    timed = [v for v in result["variants"] if "large" in v]
    model = [v["label"] for v in sorted(timed, key=lambda v: v["model_kernel_seconds"])]
    gpu = [v["label"] for v in sorted(timed, key=lambda v: v["large"]["median_seconds"])]
    slow = next((v for v in timed if v["role"] == "slow"), None)
    taught = next((v for v in timed if v["role"] == "taught"), None)
    headline = None
    model_ratio = gpu_ratio = None
    if slow and taught:
        model_ratio = slow["model_kernel_seconds"] / taught["model_kernel_seconds"]
        gpu_ratio = slow["large"]["median_seconds"] / taught["large"]["median_seconds"]
        headline = (model_ratio > 1) == (gpu_ratio > 1)
    # Pairs the model tells apart (by more than 2%) must come out in the same order on the GPU.
    pairs = [(a, b) for a in timed for b in timed
             if a["model_kernel_seconds"] * 1.02 < b["model_kernel_seconds"]]
    order = all(a["large"]["median_seconds"] < b["large"]["median_seconds"] for a, b in pairs)
    return {"model_order": model, "gpu_order": gpu, "order_agrees": order if timed else None,
            "taught_faster_in_model": None if model_ratio is None else model_ratio > 1,
            "taught_faster_on_gpu": None if gpu_ratio is None else gpu_ratio > 1,
            "headline_agrees": headline, "model_slow_over_taught": model_ratio, "gpu_slow_over_taught": gpu_ratio}


def table(results: Sequence[dict[str, Any]]) -> str:
    lines = ["| lesson | kernel | model kernel time (M1, visible test) | GPU median (large) | visible test on GPU | "
             "large output vs taught |",
             "|---|---|---|---|---|---|"]
    for r in results:
        for v in r.get("variants", []):
            large = v.get("large", {})
            vis = v.get("visible")
            vis_text = ("bitwise" if vis["bitwise"] else f"close (max diff {vis['max_abs_diff']:.3g})" if vis["close"]
                        else f"DIFFERS (max diff {vis['max_abs_diff']})") if vis else "-"
            vt = large.get("vs_taught")
            vt_text = "-" if not vt else "bitwise" if vt["bitwise"] else "close" if vt["close"] else "DIFFERS"
            gpu = f"{large['median_seconds'] * 1e6:.1f} us" if large else v.get("error", "-").splitlines()[0][:60]
            lines.append(f"| {r['lesson']} | {v['label']} | {v['model_kernel_seconds'] * 1e9:.0f} ns | {gpu} | "
                         f"{vis_text} | {vt_text} |")
        rk = r.get("ranking", {})
        if rk.get("headline_agrees") is not None:
            lines.append(f"| {r['lesson']} | **ranking** | slow/taught {rk['model_slow_over_taught']:.2f}x | "
                         f"slow/taught {rk['gpu_slow_over_taught']:.2f}x | "
                         f"{'agrees' if rk['headline_agrees'] else 'DISAGREES'} | order "
                         f"{'agrees' if rk['order_agrees'] else 'differs'} |")
        elif "error" in r:
            lines.append(f"| {r['lesson']} | (lesson failed) | | {r['error'].splitlines()[0][:80]} | | |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------
# Running


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_plan(path: Path = PLAN) -> dict[str, Any]:
    """The committed plan, read as untrusted input: a located error when it is not one."""
    try:
        plan = json.loads(path.read_text())
        for lesson in plan["lessons"]:
            for key in ("lesson", "recipe", "kernel_name", "input_names", "output_names", "variants", "visible"):
                lesson[key]  # noqa: B018
            if lesson["recipe"] not in RECIPES:
                raise ValueError(f"lesson {lesson['lesson']}: unknown recipe '{lesson['recipe']}'")
        return plan
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a cuda_lessons plan ({type(exc).__name__}: {exc}); regenerate it with "
                         "'python benchmarks/cuda_lessons.py plan'") from None


def run_lessons(plan: dict[str, Any], device: str, *, lessons: Sequence[str] | None = None, repeats: int = 20,
                scale: int = 1, timeout: float = 300.0, isolate: bool = True,
                results: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Each lesson measured (in a worker process unless ``isolate`` is False); the results are
    appended to ``results`` as they come, so a caller keeps them if the run is cut short."""
    from differential.cuda_launch import run_isolated

    results = [] if results is None else results
    for lesson in plan["lessons"]:
        if lessons and lesson["lesson"] not in lessons:
            continue
        payload = {"lesson": lesson, "device": device, "repeats": repeats, "scale": scale}
        if isolate:
            status, value = run_isolated("cuda_lessons:measure_lesson", payload, timeout)
        else:
            status, value = "ok", measure_lesson(payload)
        result = value if status == "ok" else {"lesson": lesson["lesson"], "variants": [], "error": f"{status}: {value}"}
        result["title"] = lesson["title"]
        result["ranking"] = rankings(result) if status == "ok" else {}
        results.append(result)
        print(f"{lesson['lesson']} {lesson['title']}: {status}", file=sys.stderr, flush=True)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["plan"]:
        p = argparse.ArgumentParser(description="write the plan (needs the package and MLX)")
        p.add_argument("plan")
        p.add_argument("--to", type=Path, default=PLAN)
        args = p.parse_args(argv)
        write_atomically(args.to, json.dumps(build_plan(), indent=1) + "\n")
        print(f"wrote {args.to}")
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--plan", type=Path, default=PLAN)
    p.add_argument("--lessons", nargs="*", help="only these lessons (e.g. III.1 III.3)")
    p.add_argument("--repeats", type=int, default=20, help="timed launches per kernel (after 3 warm-up launches)")
    p.add_argument("--scale", type=int, default=1, help="divide the large sizes by this (testing)")
    p.add_argument("--timeout", type=float, default=300.0, help="wall limit per lesson, seconds")
    p.add_argument("--device", default="cupy", choices=sorted(DEVICES))
    p.add_argument("--in-process", action="store_true", help="no worker processes (no wall limit)")
    args = p.parse_args(argv)
    try:
        plan = read_plan(args.plan)
    except ValueError as exc:
        print(f"cuda_lessons: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    results: list[dict[str, Any]] = []
    # SIGTERM (a machine's time limit) ends the run as Ctrl-C does: the lessons done are reported.
    signal.signal(signal.SIGTERM, _interrupt)
    complete = True
    try:
        run_lessons(plan, args.device, lessons=args.lessons, repeats=args.repeats, scale=args.scale,
                    timeout=args.timeout, isolate=not args.in_process, results=results)
    except KeyboardInterrupt:
        complete = False
    text = table(results)
    device = next((r["device"] for r in results if "device" in r), args.device)
    agree = [r for r in results if r.get("ranking", {}).get("headline_agrees")]
    summary = (f"cuda_lessons: {len(results)} lessons on {device}: the taught kernel's rank agrees with the model "
               f"in {len(agree)}; {time.perf_counter() - t0:.0f} s{'' if complete else ' (interrupted)'}")
    report = {"tool": "benchmarks/cuda_lessons.py", "device": device, "scale": args.scale, "repeats": args.repeats,
              "summary": summary, "complete": complete, "lessons": results}
    write_atomically(args.out / f"{REPORT_NAME}.json", json.dumps(report, indent=1) + "\n")
    write_atomically(args.out / f"{REPORT_NAME}.md", f"{summary}\n\n{text}\n")
    print(text)
    print(summary)
    if not complete:
        return 130
    failed = any("error" in r or any("error" in v for v in r["variants"]) for r in results)
    return 1 if failed else 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
