"""What a 60-line macro doubling chain costs to refuse (issue 27, section 3): before and after.

Run: python benchmarks/bench_macro_chain.py [--before /work/main/lib] [--after lib] [--timeout 120]

The kernel: ``#define A0 x``, then ``#define Ak A(k-1) A(k-1)`` for k = 1..59 and one use of A59
(2**59 tokens if it were expanded). Two paths read it: a kernel body (``simulate``, a 50,000 token
budget) and the check the kernel layer makes of every source, whether it is a whole shader
(``declares_kernels``, the shader budget of a million tokens). Each runs in a fresh process
with the package imported from ``--before`` and from ``--after``, side by side; a process is
killed after ``--timeout`` seconds. Peak memory is the growth of the process's peak resident
memory (VmHWM, reset after imports and a warm-up compile) while the kernel is read. The script
prints figures and never judges them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHAIN = "#define A0 x\n" + "".join(f"#define A{k} A{k - 1} A{k - 1}\n" for k in range(1, 60))
KERNEL = CHAIN + "out[0] = 1.0f;\nint A59;\n"

# Runs in the child: imports the package from sys.path[0], warms up, resets the peak, reads KERNEL.
CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from metal_puzzles.msl import CompileError, simulate
from metal_puzzles.msl.shader_program import declares_kernels

def run_body(src):
    simulate("chain", [], ["out"], src, inputs=[], output_shapes=[(1,)], output_dtypes=["float32"],
             grid=(1, 1, 1), threadgroup=(1, 1, 1))

def peak_kib():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

path, kernel = sys.argv[1], sys.stdin.read()
run_body("out[0] = 1.0f;")  # compile the prelude once: not part of the figure
declares_kernels("out[0] = 1.0f;")
try:
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current resident size
except OSError:
    pass
base = peak_kib()
start = time.perf_counter()
try:
    if path == "body":
        run_body(kernel)
        outcome = "ran"
    else:
        outcome = f"declares_kernels -> {declares_kernels(kernel)}"
except CompileError as err:
    outcome = "CompileError: " + err.message
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak_mib": (peak_kib() - base) / 1024, "outcome": outcome}))
"""


def measure(lib: Path, path: str, timeout: float) -> dict:
    env = dict(os.environ, PYTHONPATH=str(lib))
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, path], input=KERNEL, env=env, capture_output=True,
                              text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"seconds": float("inf"), "peak_mib": float("nan"), "outcome": f"killed after {timeout:.0f} s"}
    if done.returncode != 0:
        return {"seconds": float("nan"), "peak_mib": float("nan"),
                "outcome": "failed: " + done.stderr.strip().splitlines()[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    root = Path(__file__).resolve().parents[1]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, default=Path("/work/main/lib"), help="package folder before")
    parser.add_argument("--after", type=Path, default=root / "lib", help="package folder after")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    print(f"{'path':<38} {'version':<7} {'seconds':>8} {'peak MiB':>9}  outcome")
    for path, title in (("body", "kernel body (simulate)"), ("shader", "whole-shader check (declares_kernels)")):
        for label, lib in (("before", args.before), ("after", args.after)):
            r = measure(lib, path, args.timeout)
            print(f"{title:<38} {label:<7} {r['seconds']:>8.2f} {r['peak_mib']:>9.1f}  {r['outcome'][:90]}",
                  flush=True)


if __name__ == "__main__":
    main()
