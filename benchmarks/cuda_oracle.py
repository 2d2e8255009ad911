"""The simulator's real-GPU oracle (issue 39, section 3): N random multi-thread kernels run on the
simulator and, translated to CUDA, on an NVIDIA GPU with CuPy; every output compared bit for bit.

    python benchmarks/cuda_oracle.py --count 1000 --seed 0 --out DIR [--jobs 8] [--timeout 120]
                                     [--budget 540] [--device cupy|simulator]

Needs CuPy and a GPU (no MLX): the kernels come from ``tests/differential/multithread.py``
(barriers, threadgroup memory, SIMD-group functions, atomics, half, partial threadgroups: race-free
and deterministic by construction, so the simulator's output is the GPU's), the translation from
``metal_puzzles.msl.cuda``, the launch from ``tests/differential/cuda_launch.py`` (compiled with
``--fmad=false``: the kernels use no ``fast::`` math, so no tolerance applies; two NaNs agree
whatever their payloads).

Writes ``DIR/cuda_oracle.json`` (per kernel: seed, status, first difference, seconds; the source,
and the CUDA unit where NVRTC refused it, for every kernel that did not agree) and prints a
one-line summary. Kernels run in ``--jobs`` worker processes: a kernel past ``--timeout`` seconds,
or one whose launch fails, costs that kernel (its worker is replaced), never the run.
``--budget`` stops starting kernels after that many seconds (the rest are reported 'not run'),
so a run fits a machine's time limit; ``--start`` continues a run in another call. Exit status 1
when any kernel differs or fails (not for the translator's located refusals).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO / "lib", REPO / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from differential.oracle import (  # noqa: E402
    DeviceUnavailable,
    KernelRecord,
    OracleRun,
    feature_table,
    run_oracle,
)

REPORT_NAME = "cuda_oracle.json"


def write_json_atomically(path: Path, data: object) -> None:
    """Write to a new file beside ``path``, then rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def report(run: OracleRun, args: argparse.Namespace) -> dict:
    return {
        "tool": "benchmarks/cuda_oracle.py",
        "device": run.device,
        "device_kind": args.device,
        "seed_start": args.start,
        "count": args.count,
        "jobs": args.jobs,
        "timeout_s": args.timeout,
        "seconds": round(run.seconds, 1),
        "summary": run.summary_line(),
        "counts": run.counts(),
        "features": feature_table(run.records),
        "kernels": [r.to_json() for r in run.records],
    }


def read_report(path: Path) -> list[KernelRecord]:
    """The records of a report this script wrote (read back as untrusted: a located error)."""
    try:
        data = json.loads(path.read_text())
        return [KernelRecord.from_json(d) for d in data["kernels"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a cuda_oracle report ({type(exc).__name__}: {exc})") from None


def show(seed: int) -> int:
    """Kernel ``seed`` as the report shows it, and its translation (what the GPU ran)."""
    from differential.multithread import generate
    from differential.oracle import Refused, translate

    k = generate(seed)
    print(k.listing())
    try:
        print(translate(k).unit)
    except Refused as exc:
        print(f"refused by the translator: {exc}")
    return 0


def reduce(seed: int, device_spec: str) -> int:
    """Kernel ``seed`` shrunk on the device (in this process) while it still differs."""
    from differential.multithread import generate, simulate_kernel
    from differential.oracle import compare_outputs, make_device, reduce_kernel

    device = make_device(device_spec)
    small = reduce_kernel(generate(seed), device, log=lambda line: print(line, file=sys.stderr, flush=True))
    expected = [o for o in simulate_kernel(small).outputs]
    diff = compare_outputs(small, expected, device.run(small).outputs)
    print(small.listing())
    if diff is None:
        print(f"kernel {seed} does not differ on {device.describe()}")
        return 0
    print(f"first difference: {diff.output}[{diff.index}] ({diff.where}): simulator {diff.expected}, "
          f"device {diff.got}; {diff.differing} element(s) differ (outputs zero-filled first)")
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=1000, help="kernels to check")
    p.add_argument("--seed", "--start", dest="start", type=int, default=0, help="first kernel's seed")
    p.add_argument("--out", type=Path, help="directory for cuda_oracle.json (required unless --show)")
    p.add_argument("--jobs", type=int, default=max(1, min(16, (os.cpu_count() or 2) - 1)),
                   help="worker processes (0: in this process, no wall limit); NVRTC's compiles are the CPU work")
    p.add_argument("--timeout", type=float, default=120.0, help="wall limit per kernel, seconds")
    p.add_argument("--budget", type=float, default=None, help="stop starting kernels after this many seconds")
    p.add_argument("--device", default="cupy", help="cupy (the GPU), nvrtc (translate and compile only, no GPU) or simulator (a stand-in, for testing)")
    p.add_argument("--quiet", action="store_true", help="no line per failing kernel")
    p.add_argument("--show", type=int, metavar="SEED", help="print kernel SEED and its CUDA unit, and stop")
    p.add_argument("--reduce", type=int, metavar="SEED",
                   help="shrink kernel SEED, which differs on the device, to the lines that still differ; print it")
    args = p.parse_args(argv)
    if args.show is not None:
        return show(args.show)
    if args.reduce is not None:
        return reduce(args.reduce, args.device)
    if args.out is None:
        p.error("--out is required")

    done: list[KernelRecord] = []
    t0 = last_write = time.perf_counter()

    def save(run: OracleRun, complete: bool) -> None:
        data = report(run, args)
        data["complete"] = complete
        write_json_atomically(args.out / REPORT_NAME, data)

    def progress(rec: KernelRecord) -> None:
        nonlocal last_write
        done.append(rec)
        if rec.status.failed and not args.quiet:
            what = rec.difference.output if rec.difference else rec.message.splitlines()[0][:120] if rec.message else ""
            print(f"seed {rec.seed}: {rec.status.value} {what}", file=sys.stderr, flush=True)
        if time.perf_counter() - last_write > 30:  # a run cut short still leaves its results
            save(OracleRun(args.device, sorted(done, key=lambda r: r.seed), time.perf_counter() - t0), False)
            last_write = time.perf_counter()

    # SIGTERM (a machine's time limit) ends the run as Ctrl-C does: workers killed, report written.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        run = run_oracle(range(args.start, args.start + args.count), args.device, jobs=args.jobs,
                         timeout=args.timeout, budget=args.budget, progress=progress)
    except DeviceUnavailable as exc:
        print(f"cuda_oracle: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        run = OracleRun(args.device, sorted(done, key=lambda r: r.seed), time.perf_counter() - t0)
        save(run, False)
        print(run.summary_line() + " (interrupted)")
        return 130
    run.seconds = time.perf_counter() - t0
    save(run, True)
    print(run.summary_line())
    return 1 if any(r.status.failed for r in run.records) else 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
