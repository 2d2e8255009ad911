"""Which of MLX's own operations fail on its CUDA back end in the decode step's reference model.

On the H200 (MLX 0.32.4, mlx-cuda-13) the finale's reference (``decode_step.decode_with_mlx``, MLX
operations only, no kernel of ours) raised "IndexError: SmallVector out of range" when its argmax
was read. This runs the reference on the default device (the GPU) with every stage evaluated as it
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

try:  # the decode step's reference model, wherever the catalogue keeps it
    from metal_puzzles.puzzles import decode_step  # noqa: E402
except ImportError:
    from metal_puzzles.puzzles.composition import decode_model as decode_step  # type: ignore[no-redef]  # noqa: E402

STAGES = ("rms_norm", "rope", "matvec", "attention", "argmax")


def main() -> int:
    print(f"mlx {mx.__version__}; default device {mx.default_device()}", flush=True)
    failures: dict[str, str] = {}
    calls = {name: 0 for name in STAGES}
    real = {name: getattr(decode_step.MlxOps, name) for name in STAGES}

    def checked(name: str) -> Any:
        def run(self: Any, *args: Any) -> Any:
            calls[name] += 1
            shapes = [tuple(getattr(a, "shape", ())) for a in args if hasattr(a, "shape")]
            try:
                out = real[name](self, *args)
                mx.eval(out)
                return out
            except Exception as exc:  # noqa: BLE001 - the probe's finding
                key = f"{name} {shapes}"
                if key not in failures:
                    failures[key] = f"{type(exc).__name__}: {exc}"
                    print(f"FAILS on the GPU: {key}: {failures[key]}", flush=True)
                with mx.stream(mx.cpu):
                    out = real[name](self, *args)
                    mx.eval(out)
                return out
        return run

    for name in STAGES:
        setattr(decode_step.MlxOps, name, checked(name))
    model = decode_step.TinyModel.from_seed(0)
    for tokens in ([5, 17, 42], [60, 0, 31, 31, 9]):
        _, token = decode_step.decode_with_mlx(model, tokens)
        print(f"prompt {tokens}: next token {token}", flush=True)
    print(f"calls {calls}; {len(failures)} distinct failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
