"""The sanitizer on a phase of many threadgroup updates (issue 20): a correct kernel whose
threads each add to their own threadgroup slot N times, with no barrier between. Each update
is a read then a write of threadgroup memory, so the write-after-read check needs the phase's
readers on every write; building them from scratch each time made the run quadratic in N.

Run: python benchmarks/bench_sanitizer_updates.py [--updates 500 1000 2500 5000]
Prints, per N: seconds for one sanitized launch, seconds per update, and the queued reads folded
into reader tables (at most one fold per read; the update's read is the same read every time, so
since issue 27 it is queued and folded once).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from metal_puzzles.msl import simulate
from metal_puzzles.msl.observe import sanitizer as sanitizer_module

THREADS = 32


def updates_kernel(n: int) -> str:
    return (f"uint t = thread_position_in_threadgroup.x;\nthreadgroup float s[{THREADS}];\ns[t] = 0.0f;\n"
            f"for (int k = 0; k < {n}; k++) {{\n    s[t] += a[t];\n}}\nout[t] = s[t];\n")


def run(n: int, counter: list | None = None) -> np.ndarray:
    real = sanitizer_module.Sanitizer.__init__

    def spy(self) -> None:
        real(self)
        if counter is not None:
            counter.append(self)

    sanitizer_module.Sanitizer.__init__ = spy
    try:
        res = simulate("updates", ["a"], ["out"], updates_kernel(n), "",
                       inputs=[np.ones(THREADS, dtype=np.float32)], output_shapes=[(THREADS,)],
                       output_dtypes=["float32"], grid=(THREADS, 1, 1), threadgroup=(THREADS, 1, 1),
                       init_value=None, sanitize="error", max_steps=10 * n + 100)
    finally:
        sanitizer_module.Sanitizer.__init__ = real
    return res.outputs[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--updates", type=int, nargs="+", default=[500, 1000, 2500, 5000])
    args = ap.parse_args()
    print(f"{'updates':>8} {'seconds':>8} {'us/update':>10} {'reads folded':>13}")
    for n in args.updates:
        seen: list = []
        start = time.perf_counter()
        out = run(n, seen)
        took = time.perf_counter() - start
        assert np.all(out == n), "wrong result"
        folded = sum(getattr(s, "reads_folded", 0) for s in seen)
        print(f"{n:>8} {took:>8.2f} {1e6 * took / n:>10.0f} {folded:>13}")


if __name__ == "__main__":
    main()
