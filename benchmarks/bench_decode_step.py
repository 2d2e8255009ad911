"""How long Part V's finale takes to check, on one core (issue 40: a 32-token prompt prefilled on
the kernels, then four tokens sampled and three decoded, from position 0 and after a cached
conversation of 2,064 tokens, over a cache that long).

Run: python benchmarks/bench_decode_step.py [--repeat 2]

Pins the process to one CPU (where the OS allows it) and checks the finale with the reference
kernels, as ``check()`` and the grader do: every prompt generated on the kernels (each stage
compared with its puzzle's spec within that puzzle's error model) and with MLX operations. Prints,
per check, the wall and CPU seconds: the first check compiles the eight kernels and prefills the
cached conversation with MLX; later ones find both done.
Side by side, the same decode without the per-stage comparisons, to show what naming a failing
stage costs. CPU seconds are the figure to read on a shared machine (wall time waits for others).
"""

from __future__ import annotations

import argparse
import os
import time

from metal_puzzles.puzzles.composition.decode_model import (
    PROMPTS,
    DecodeKernels,
    KernelOps,
    TinyModel,
    generate,
    generate_with_mlx,
)
from metal_puzzles.puzzles.part5.decode_step import MODEL_SEED, PUZZLE


def _pin_to_one_core() -> str:
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    return "not pinned (no sched_setaffinity here)"


def _timed(fn) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


class _LaunchOnly(KernelOps):
    """The kernels' stages without the comparison with each puzzle's spec (not how the finale
    checks: for the side-by-side figure only)."""

    def _stage(self, kernel, where, run, *inputs):
        return run(getattr(self.kernels, kernel), *inputs, **self.kernels.options)


def _generate_without_comparisons(kernels: DecodeKernels) -> None:
    model = TinyModel.from_seed(MODEL_SEED)
    for prompt in PROMPTS:
        generate(model, prompt, _LaunchOnly(kernels))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2, help="checks after the first (warm)")
    args = ap.parse_args()
    prefilled = sum(len(p.prompt) for p in PROMPTS)
    decoded = sum(p.generate - 1 for p in PROMPTS)
    cached = sum(p.cached for p in PROMPTS)
    print(f"{PUZZLE.number} check, {len(PROMPTS)} prompts ({prefilled} tokens prefilled and {decoded} decoded on the "
          f"kernels, {cached} cached by MLX first, attention over at most {max(p.t_max for p in PROMPTS)} "
          f"positions), {_pin_to_one_core()}")
    kernels = DecodeKernels.reference()
    for n in range(1 + args.repeat):
        wall, cpu, result = _timed(lambda: PUZZLE.check_wired(kernels))
        assert result.passed, result.report()
        print(f"  check {n} ({'cold' if n == 0 else 'warm'}): {wall:6.2f} s wall, {cpu:6.2f} s CPU")
    wall, cpu, _ = _timed(lambda: [generate_with_mlx(TinyModel.from_seed(MODEL_SEED), p) for p in PROMPTS])
    print(f"  the MLX model alone:           {wall:6.2f} s wall, {cpu:6.2f} s CPU")
    wall, cpu, _ = _timed(lambda: _generate_without_comparisons(kernels))
    print(f"  the kernels, no stage compare: {wall:6.2f} s wall, {cpu:6.2f} s CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
