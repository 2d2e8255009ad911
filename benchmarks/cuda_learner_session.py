"""A learner's session on an NVIDIA GPU, from the installed package (issue 39, section 2): what
`metal-puzzles backends` says, then, for a few puzzles of the book, the notebook's cell as a learner
runs it (`MetalProblem(...)`, `check()`, `show()`) with the reference solution, printed as
the learner would read it. Where MLX has CUDA, `check()` runs the visible test on the GPU too and
says whether it agrees with the simulator, and `show()` puts the measured time beside the cost
model's estimate. This is the Colab recipe of the README run on whatever NVIDIA GPU is at hand.

    python benchmarks/cuda_learner_session.py --out DIR [--puzzle map dot_product rms_norm ...]

Writes DIR/cuda_learner_session.json (per puzzle: passed, the GPU's sentence in check(), the
measured time in show(), the printed text) and prints a summary; exit status 1 when a puzzle's
check() fails, or, where MLX has CUDA, check() says nothing of the GPU or a cost table in show()
has no measured time beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import platform
import re
import subprocess
import sys
from pathlib import Path

DEFAULT_PUZZLES = ("map", "dot_product", "block_sum", "rms_norm", "decode_attention")


def cell(pid: str):
    """The book's cell for a puzzle, as the learner runs it with the reference solution."""
    import mlx.core as mx

    from metal_puzzles import MetalKernel, MetalProblem
    from metal_puzzles.puzzles import entry_of, get_puzzle

    p = get_puzzle(pid)
    entry = entry_of(p)

    def kernel(*arrays):
        return MetalKernel(name=p.kernel_name, input_names=list(p.input_names), output_names=list(p.output_names),
                           source=entry.solution_source(), header=entry.solution_header())

    scope: dict = {"mx": mx}
    exec(entry.setup, scope)  # the book's own lines for the visible test
    return MetalProblem(p.title, kernel, [scope[n] for n in p.input_names], scope["output_shape"],
                        grid=p.visible.grid, threadgroup=p.visible.threadgroup, spec=p.spec)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--puzzle", nargs="*", default=list(DEFAULT_PUZZLES))
    args = ap.parse_args()
    import mlx.core as mx

    import metal_puzzles

    backends = subprocess.run([sys.executable, "-m", "metal_puzzles.cli", "backends"], capture_output=True,
                              text=True).stdout
    cuda = bool(mx.cuda.is_available())
    record: dict = {"machine": platform.node(), "python": platform.python_version(), "mlx": mx.__version__,
                    "package": str(Path(metal_puzzles.__file__).parent), "cuda_available": cuda,
                    "backends": backends, "puzzles": []}
    print(backends)
    failed = 0
    for pid in args.puzzle:
        problem = cell(pid)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            result = problem.check()
            problem.show()
        text = printed.getvalue()
        gpu_check = next((line for line in text.splitlines() if "NVIDIA GPU" in line and "simulator" in line), None)
        measured = re.search(r"Measured on this NVIDIA GPU[^:]*: ([0-9]+) us a call", text)
        # show() prints a cost table (the model's estimate, the measured time beside it) where the
        # puzzle's budget uses the cost model, or asked with show(cost=True): Part I's map has none.
        costed = "Cost on a model of an Apple GPU" in text
        row = {"puzzle": pid, "passed": bool(result.passed), "gpu_check": gpu_check, "cost_table": costed,
               "measured_us": int(measured.group(1)) if measured else None, "printed": text}
        record["puzzles"].append(row)
        failed += (not result.passed) or (cuda and (gpu_check is None or (costed and measured is None)))
        print(f"{pid:18} passed={row['passed']!s:5} gpu: {gpu_check or '-'} measured: {row['measured_us']} us")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cuda_learner_session.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
