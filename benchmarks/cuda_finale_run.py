"""Part V's finale on a GPU: the reference kernels of its eight stages launched through MLX's own
CUDA back end (``backend="cuda"``, ``mx.fast.cuda_kernel``), each output still compared with its
puzzle's spec within its error model, the sampled tokens and logits with the model written with
MLX operations. Needs ``mlx[cuda13]`` (or cuda12) and an NVIDIA GPU. Writes DIR/cuda_finale_run.json:

    python benchmarks/cuda_finale_run.py --out DIR

The same check on the simulator is ``benchmarks/bench_decode_step.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

import mlx.core as mx  # noqa: E402

from metal_puzzles.puzzles.composition.decode_model import PROMPTS, STAGE_ORDER, DecodeKernels  # noqa: E402
from metal_puzzles.puzzles.part5.decode_step import PUZZLE  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--backend", default="cuda", help="'cuda' (default) or 'simulator', to compare")
    args = parser.parse_args()
    print(f"mlx {mx.__version__}; CUDA available: {mx.cuda.is_available()}", flush=True)
    reference = DecodeKernels.reference()
    kernels = DecodeKernels.wire({name: getattr(reference, name) for name in STAGE_ORDER}, backend=args.backend)
    start = time.perf_counter()
    result = PUZZLE.check_wired(kernels)
    seconds = time.perf_counter() - start
    print(result.report(), flush=True)
    record = {"backend": args.backend, "mlx": mx.__version__, "passed": result.passed, "seconds": round(seconds, 2),
              "prompts": [{"label": o.case.label, "status": o.status.value, "quantity": o.quantity, "error": o.error}
                          for o in result.outcomes],
              "prompt_count": len(PROMPTS)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    target = out / "cuda_finale_run.json"
    partial = target.with_suffix(".json.tmp")
    partial.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, target)  # a reader never sees half a record
    print(f"wrote {target} ({seconds:.1f} s)", flush=True)
    return 0 if result.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
