"""How does a CUDA GPU treat threads that return before a __syncthreads() the others reach?

The CUDA translation never relies on it (threads past a partial threadgroup wait in mp_drain,
meeting every barrier of the threads that run), but MLX kernels written for CUDA by hand often
do. This probe launches, in a child process with a timeout (a hang is an answer too), a block
of 64 threads where the threads from ``cut`` up return at once and the others meet at two
barriers, exchanging values through shared memory between them, and records whether the
kernel finished and whether the exchange saw every value (the translation's own guard runs in
cuda_book_run.py's partial-threadgroup cases). Compiled for each ``--arch`` (PTX, JIT-compiled
by the driver for the GPU at hand).

    python benchmarks/cuda_barrier_probe.py --out DIR [--arch compute_75 compute_90]

Needs CuPy and a GPU; writes DIR/cuda_barrier_probe.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

EARLY_RETURN = r"""
extern "C" __global__ void probe(int* out, int cut) {
  __shared__ int slots[64];
  int t = threadIdx.x;
  if (t >= cut) return;
  slots[t] = t + 1;
  __syncthreads();
  out[t] = slots[(t + 1) % cut];
  __syncthreads();
  out[64 + t] = 1;
}
"""


def child(arch: str, cut: int) -> None:
    import cupy as cp
    import numpy as np

    k = cp.RawKernel(EARLY_RETURN, "probe", options=(f"--gpu-architecture={arch}",))
    out = cp.zeros(128, dtype=cp.int32)
    k((1,), (64,), (out, np.int32(cut)))
    cp.cuda.Device().synchronize()
    host = cp.asnumpy(out)
    want = np.array([((t + 1) % cut) + 1 for t in range(cut)])
    print(json.dumps({"finished": True, "exchange_right": bool((host[:cut] == want).all()),
                      "after_second_barrier": int(host[64:64 + cut].sum())}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--arch", nargs="*", default=["compute_75", "compute_90"])
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    results = []
    for arch in args.arch:
        for cut in (64, 36, 17):
            try:
                done = subprocess.run([sys.executable, __file__, "--out", args.out, "--child", arch, str(cut)],
                                      capture_output=True, text=True, timeout=60)
                rec = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else \
                    {"finished": False, "error": done.stderr[-1000:]}
            except subprocess.TimeoutExpired:
                rec = {"finished": False, "error": "hung for 60 s (threads that returned blocked the barrier)"}
            rec.update(arch=arch, cut=cut)
            results.append(rec)
            print(rec, flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "cuda_barrier_probe.json.tmp"
    tmp.write_text(json.dumps(results, indent=1) + "\n")
    os.replace(tmp, out / "cuda_barrier_probe.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
