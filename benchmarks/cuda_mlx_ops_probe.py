"""Which of MLX's own operations fail on its CUDA back end in the decode step's reference model.

On the H200 (MLX 0.32.4, mlx-cuda-13) the first finale's reference (a decode step, MLX operations
only, no kernel of ours) raised "IndexError: SmallVector out of range" when its argmax was read;
the finale's reference now prefills and samples (``decode_model.generate_with_mlx``). This runs the reference on the default device (the GPU) with every stage evaluated as it
is made, so the first stage that fails is named with its operation and shapes; a stage that fails
is computed again on the CPU so the run goes on. Prints one line a distinct failure and a summary:

    python benchmarks/cuda_mlx_ops_probe.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

import mlx.core as mx  # noqa: E402

from metal_puzzles.puzzles.composition import decode_model  # noqa: E402

STAGES = ("rms_norm", "rope", "matmul", "append", "prefill_attention", "gated_mlp", "decode_attention", "sample")


def main() -> int:
    print(f"mlx {mx.__version__}; default device {mx.default_device()}", flush=True)
    failures: dict[str, str] = {}
    calls = {name: 0 for name in STAGES}
    real = {name: getattr(decode_model.MlxOps, name) for name in STAGES}

    def checked(name: str) -> Any:
        def run(self: Any, *args: Any) -> Any:
            calls[name] += 1
            shapes = [tuple(getattr(a, "shape", ())) for a in args if hasattr(a, "shape")]
            try:
                out = real[name](self, *args)
                if isinstance(out, mx.array):
                    mx.eval(out)
                return out
            except Exception as exc:  # noqa: BLE001 - the probe's finding
                key = f"{name} {shapes}"
                if key not in failures:
                    failures[key] = f"{type(exc).__name__}: {exc}"
                    print(f"FAILS on the GPU: {key}: {failures[key]}", flush=True)
                with mx.stream(mx.cpu):
                    out = real[name](self, *args)
                    if isinstance(out, mx.array):
                        mx.eval(out)
                return out
        return run

    for name in STAGES:
        setattr(decode_model.MlxOps, name, checked(name))
    model = decode_model.TinyModel.from_seed(decode_model.SEED)
    for prompt in decode_model.PROMPTS:
        generation = decode_model.generate_with_mlx(model, prompt)
        print(f"prompt of {len(prompt.prompt)} tokens: sampled {generation.tokens}", flush=True)
    print(f"calls {calls}; {len(failures)} distinct failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
