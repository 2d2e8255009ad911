"""Run generated kernels through g++ and through the MSL simulator and compare the bits.

g++ side: many kernels go into one C++ file, each body pasted verbatim into a function that
takes the buffers by their kernel names; ``main`` reads every input from stdin, runs each
kernel for thread ids 0..n-1 in order (the kernels have no barriers and each thread writes
only its own slots, so sequential order is a valid schedule), and writes every output to
stdout. Floating point is made exact by the flags in ``CXX_FLAGS``: x86-64 SSE binary32
arithmetic (``FLT_EVAL_METHOD == 0`` is asserted in shim.h), no FMA contraction, no
optimisation, and no compile-time float folding that ignores the sign of zero. ``-fexcess-precision=standard`` is not accepted for C++ by g++ 12 and is not
needed once SSE is the float unit. UBSan (with float-cast-overflow) aborts a kernel that
strays into undefined behaviour, so a mismatch is never the generator's fault silently.

Standalone: ``python -m tests.differential.runner --count 500 --seed 1``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .gen import Kernel, generate_kernel

SHIM = Path(__file__).with_name("shim.h")
# uint3 thread attributes every C++ kernel function takes (unused ones cost nothing).
ATTRIBUTES3 = (
    "thread_position_in_grid",
    "thread_position_in_threadgroup",
    "threadgroup_position_in_grid",
)

CXX_FLAGS = [
    "-std=c++20",  # signed << and narrowing conversions are defined (modular)
    "-O0",
    "-fwrapv",  # signed overflow wraps, as on the GPU and in the simulator
    "-ffp-contract=off",  # no fused multiply-add
    "-msse2",
    "-mfpmath=sse",  # binary32 arithmetic, no x87 excess precision
    "-fsingle-precision-constant",  # belt and braces: every literal already has an f suffix
    # g++ 12 folds `0.0f - (float)i` into `-(float)i` even at -O0, which gives -0.0 where IEEE
    # gives +0.0 (i == 0). -frounding-math turns that folding (and any inexact constant
    # folding) off; the program still runs in round-to-nearest, so results are plain IEEE.
    "-frounding-math",
    # Kernels read buffers through pointers of other element types (MSL allows it); C++'s
    # strict aliasing rule would make that undefined.
    "-fno-strict-aliasing",
    "-w",
]
UBSAN_FLAGS = ["-fsanitize=undefined,float-cast-overflow", "-fno-sanitize-recover=all"]


# ----------------------------------------------------------------------------------------
# C++ side


def _cxx_function(k: Kernel, check: bool) -> str:
    params = [f"const {b.ctype.name}{'&' if b.scalar else '*'} {b.name}" for b in k.inputs]
    params += [f"{b.ctype.name}* {b.name}" for b in k.outputs]
    params += [f"uint3 {a}" for a in ATTRIBUTES3] + ["uint thread_index_in_threadgroup"]
    body = k.check_body if check else k.body
    # #line makes g++ diagnostics point at the kernel's own body lines.
    return f'static void {k.name}({", ".join(params)}) {{\n#line 1 "{k.name}"\n{body}}}\n'


def _cxx_driver(k: Kernel) -> str:
    n = k.n_threads
    lines = [f"    {{  // {k.name}"]
    for b in k.inputs:
        lines.append(f"        static {b.ctype.name} {b.name}{'' if b.scalar else f'[{n}]'};")
        lines.append(f"        read_exact(&{b.name}, sizeof {b.name});")
    for b in k.outputs:
        lines.append(f"        static {b.ctype.name} {b.name}[{n * b.slots}];")
        fill = "0" if k.zero_outputs else "0xA5"  # 0xA5: a slot nobody wrote shows up
        lines.append(f"        memset({b.name}, {fill}, sizeof {b.name});")
    args = ", ".join([b.name for b in k.inputs] + [b.name for b in k.outputs])
    tg = k.threadgroup
    lines.append(f"        for (uint t = 0; t < {n}u; ++t) {{")
    # Grid position, position in threadgroup, threadgroup position; then the linear index.
    attrs = f"uint3{{t, 0, 0}}, uint3{{t % {tg}u, 0, 0}}, uint3{{t / {tg}u, 0, 0}}, t % {tg}u"
    lines.append(f"            {k.name}({args}, {attrs});")
    lines.append("        }")
    for b in k.outputs:
        lines.append(f"        write_exact({b.name}, sizeof {b.name});")
    lines.append("    }")
    return "\n".join(lines)


def cxx_program(kernels: Sequence[Kernel], check: bool = False) -> str:
    """One C++ translation unit holding every kernel and a driver for all of them."""
    parts = ['#include "shim.h"\n']
    parts += [k.header for k in kernels if k.header]
    parts += [_cxx_function(k, check) for k in kernels]
    parts.append("int main() {")
    parts += [_cxx_driver(k) for k in kernels]
    parts.append("    fflush(stdout);\n    return 0;\n}\n")
    return "\n".join(parts)


def _compile(source: str, workdir: Path, stem: str, extra: Sequence[str]) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copy(SHIM, workdir / "shim.h")
    src, exe = workdir / f"{stem}.cpp", workdir / stem
    src.write_text(source)
    cmd = ["g++", *CXX_FLAGS, *extra, str(src), "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"g++ failed on {src}:\n{proc.stderr[-4000:]}")
    return exe


def typecheck(kernels: Sequence[Kernel], workdir: Path) -> None:
    """Compile the ``chk<T>`` variant: fails if the generator's idea of a type is wrong."""
    _compile(cxx_program(kernels, check=True), workdir, "typecheck", ["-fsyntax-only"])


def run_cxx(
    kernels: Sequence[Kernel], workdir: Path, ubsan: bool = True, timeout: float = 60.0
) -> list[list[np.ndarray]]:
    """Outputs of every kernel, computed by the g++ build (one compile, one process).

    A batch runs in well under a second; the timeout catches a loop the reducer broke.
    """
    exe = _compile(cxx_program(kernels), workdir, "batch", UBSAN_FLAGS if ubsan else [])
    stdin = b"".join(np.ascontiguousarray(a).tobytes() for k in kernels for a in k.input_data)
    try:
        proc = subprocess.run([str(exe)], input=stdin, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"C++ batch ran past {timeout}s (infinite loop?)") from exc
    if proc.returncode != 0:
        raise RuntimeError(f"C++ batch failed ({proc.returncode}):\n{proc.stderr.decode()[-4000:]}")
    out, pos, results = proc.stdout, 0, []
    for k in kernels:
        arrays = []
        for b in k.outputs:
            count = k.n_threads * b.slots
            arr = np.frombuffer(out, dtype=b.ctype.dtype, count=count, offset=pos).copy()
            pos += arr.nbytes
            arrays.append(arr)
        results.append(arrays)
    if pos != len(out):
        raise RuntimeError(f"C++ batch wrote {len(out)} bytes, expected {pos}")
    return results


# ----------------------------------------------------------------------------------------
# Simulator side and comparison


def run_simulator(k: Kernel) -> list[np.ndarray]:
    """Outputs of one kernel as the MSL simulator computes them."""
    from metal_puzzles.msl import simulate

    res = simulate(
        k.name,
        [b.name for b in k.inputs],
        [b.name for b in k.outputs],
        k.body,
        k.header,
        inputs=list(k.input_data),
        output_shapes=[(k.n_threads * b.slots,) for b in k.outputs],
        output_dtypes=[b.ctype.dtype for b in k.outputs],
        grid=(k.n_threads, 1, 1),
        threadgroup=(k.threadgroup, 1, 1),
        init_value=0 if k.zero_outputs else None,
    )
    return [np.asarray(o) for o in res.outputs]


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}")


def _hex(value: np.generic) -> str:
    width = value.dtype.itemsize * 2
    return f"0x{int(_bits(np.asarray(value)).item()):0{width}x}"


@dataclass
class Mismatch:
    """One output element whose simulator bits differ from g++'s (or a kernel that failed)."""

    kernel: Kernel
    output: str = ""
    thread: int = -1
    slot: int = -1
    expected: str = ""
    got: str = ""
    error: str = ""

    def report(self, with_source: bool = True) -> str:
        k = self.kernel
        head = f"kernel {k.name} (seed {k.seed}, index {k.index}; grid {k.n_threads}, threadgroup {k.threadgroup})"
        ins = ", ".join(
            f"{b.name}: {b.ctype.name}{'' if b.scalar else f'[{k.n_threads}]'}" for b in k.inputs
        )
        outs = ", ".join(f"{b.name}: {b.ctype.name}[{k.n_threads}*{b.slots}]" for b in k.outputs)
        lines = [head, f"  inputs {ins}; outputs {outs}"]
        if self.error:
            lines.append(f"  simulator raised: {self.error}")
        else:
            lines.append(
                f"  thread {self.thread}, {self.output}[{self.thread * self._slots() + self.slot}]"
                f" (slot {self.slot}): g++ {self.expected}, simulator {self.got}"
            )
            lines.append(f"  stored by: {k.stores.get((self.output, self.slot), '?')}")
            if self.thread >= 0:
                vals = ", ".join(
                    f"{b.name}={d!r}" if b.scalar else f"{b.name}[tid]={d[self.thread]!r}"
                    for b, d in zip(k.inputs, k.input_data, strict=True)
                )
                lines.append(f"  thread inputs: {vals}")
        if with_source:
            if k.header:
                lines += ["  header:", *[f"     | {line}" for line in k.header.splitlines()]]
            numbered = [f"  {i + 1:3d}| {line}" for i, line in enumerate(k.body.splitlines())]
            lines += ["  source:", *numbered]
        return "\n".join(lines)

    def _slots(self) -> int:
        return next(b.slots for b in self.kernel.outputs if b.name == self.output)


def compare(
    k: Kernel, expected: Sequence[np.ndarray], got: Sequence[np.ndarray]
) -> tuple[list[Mismatch], int]:
    """Bitwise comparison; returns the mismatches and the count of NaNs whose payload differs.

    Two NaNs count as equal: neither IEEE 754 nor Metal fixes which NaN an operation returns.
    """
    found: list[Mismatch] = []
    nan_payloads = 0
    for b, want, have in zip(k.outputs, expected, got, strict=True):
        have = np.asarray(have).reshape(-1)
        if have.dtype != want.dtype or have.shape != want.shape:
            found.append(
                Mismatch(
                    k,
                    error=f"{b.name}: got {have.dtype}{have.shape}, want {want.dtype}{want.shape}",
                )
            )
            continue
        differ = _bits(want) != _bits(have)
        if want.dtype.kind == "f":
            both_nan = np.isnan(want) & np.isnan(have)
            nan_payloads += int((differ & both_nan).sum())
            differ &= ~both_nan
        for flat in np.flatnonzero(differ):
            thread, slot = divmod(int(flat), b.slots)
            found.append(Mismatch(k, b.name, thread, slot, _hex(want[flat]), _hex(have[flat])))
    return found, nan_payloads


# ----------------------------------------------------------------------------------------
# Reducer: shrink a failing kernel to the few lines that still show the failure


def _failure_signature(k: Kernel, workdir: Path) -> str | None:
    """ "mismatch", "error:<type>", or None when the kernel agrees (or is not valid C++)."""
    try:
        want = run_cxx([k], workdir, timeout=5.0)[0]
    except RuntimeError:
        return None  # deleting a line broke the C++ side (undeclared name, UB): not a candidate
    try:
        got = run_simulator(k)
    except Exception as exc:
        return f"error:{type(exc).__name__}"
    return "mismatch" if compare(k, want, got)[0] else None


def _units(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line spans of every statement; a block statement spans to its close."""
    spans = []
    for i, line in enumerate(lines):
        if line.lstrip().startswith("}"):
            continue  # closes (or continues, "} else {") a block that starts earlier
        depth, j = 0, i
        while True:
            depth += lines[j].count("{") - lines[j].count("}")
            if depth <= 0:
                break
            j += 1
        spans.append((i, j))
    return spans


def _unwrappings(lines: list[str], first: int, last: int) -> list[list[str]]:
    """The insides of a block statement: its body, or each arm of an if/else."""
    arms: list[list[str]] = [[]]
    depth = 0
    for line in lines[first + 1 : last]:
        if depth == 0 and line.lstrip().startswith("}"):
            arms.append([])  # "} else {" between two arms
        else:
            arms[-1].append(line)
        depth += line.count("{") - line.count("}")
        depth = max(depth, 0)
    return [lines[:first] + arm + lines[last + 1 :] for arm in arms]


def shrink_lines(lines: list[str], keep: Callable[[list[str]], bool],
                 on_step: Callable[[list[str]], None] | None = None) -> list[str]:
    """Delete statements, and unwrap blocks, last first, while ``keep`` holds of what is left;
    again from the end after any change, until a pass changes nothing."""
    progress = True
    while progress:
        progress = False
        cursor = len(lines)
        while True:
            spans = [sp for sp in _units(lines) if sp[0] < cursor]
            if not spans:
                break
            first, last = spans[-1]
            cursor = first
            candidates = [lines[:first] + lines[last + 1 :]]
            if last > first:
                candidates += _unwrappings(lines, first, last)
            for cand in candidates:
                if keep(cand):
                    lines, progress = cand, True
                    if on_step is not None:
                        on_step(lines)
                    break
    return lines


def reduce_kernel(k: Kernel, workdir: Path, log: bool = False) -> Kernel:
    """Delete statements, and unwrap blocks, while the same kind of failure persists."""
    k = dataclasses.replace(k, zero_outputs=True)
    target = _failure_signature(k, workdir)
    if target is None:
        return k

    def with_lines(lines: list[str]) -> Kernel:
        text = "\n".join(lines) + "\n"
        return dataclasses.replace(k, body=text, check_body=text)

    def say(lines: list[str]) -> None:
        if log:
            print(f"  {k.name}: {len(lines)} lines", file=sys.stderr)

    lines = shrink_lines(k.body.splitlines(), lambda c: _failure_signature(with_lines(c), workdir) == target, say)
    return with_lines(lines) if lines != k.body.splitlines() else k


# ----------------------------------------------------------------------------------------
# Driver


@dataclass
class Summary:
    kernels: int = 0
    threads: int = 0
    outputs_compared: int = 0
    nan_payload_differences: int = 0
    seconds: float = 0.0
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def failed_kernels(self) -> list[Kernel]:
        seen: dict[str, Kernel] = {}
        for m in self.mismatches:
            seen.setdefault(m.kernel.name, m.kernel)
        return list(seen.values())

    def text(self) -> str:
        return (
            f"kernels {self.kernels}, threads {self.threads}, outputs compared {self.outputs_compared}, "
            f"mismatching elements {sum(1 for m in self.mismatches if not m.error)}, "
            f"failing kernels {len(self.failed_kernels)}, simulator errors "
            f"{sum(1 for m in self.mismatches if m.error)}, NaN-payload differences "
            f"{self.nan_payload_differences}, time {self.seconds:.1f}s"
        )

    def details(self, max_kernels: int = 5, max_per_kernel: int = 3) -> str:
        """Reports for the first few failing kernels, source included once per kernel."""
        parts = []
        for k in self.failed_kernels[:max_kernels]:
            ms = [m for m in self.mismatches if m.kernel is k]
            parts.append(ms[0].report(with_source=True))
            parts += [m.report(with_source=False) for m in ms[1:max_per_kernel]]
            if len(ms) > max_per_kernel:
                parts.append(
                    f"  ... {len(ms) - max_per_kernel} more mismatching elements in {k.name}"
                )
        return "\n\n".join(parts)


def _batches(seed: int, start: int, count: int, size: int) -> list[list[Kernel]]:
    indices = list(range(start, start + count))
    return [
        [generate_kernel(seed, i) for i in indices[j : j + size]] for j in range(0, count, size)
    ]


def run(
    count: int,
    seed: int = 0,
    *,
    start: int = 0,
    batch: int = 100,
    ubsan: bool = True,
    simulator: bool = True,
    workdir: Path | None = None,
) -> Summary:
    """Generate ``count`` kernels, run both sides, compare. C++ batches compile in the background."""
    t0 = time.perf_counter()
    summary = Summary()
    tmp = tempfile.TemporaryDirectory(prefix="msl-diff-") if workdir is None else None
    root = Path(tmp.name) if tmp is not None else workdir
    assert root is not None
    try:
        batches = _batches(seed, start, count, batch)
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            futures = [
                pool.submit(run_cxx, b, root / f"b{i}", ubsan) for i, b in enumerate(batches)
            ]
            for kernels, fut in zip(batches, futures, strict=True):
                expected = fut.result()
                for k, want in zip(kernels, expected, strict=True):
                    summary.kernels += 1
                    summary.threads += k.n_threads
                    if not simulator:
                        continue
                    try:
                        got = run_simulator(k)
                    except Exception as exc:  # any crash is a finding, reported with the kernel
                        summary.mismatches.append(Mismatch(k, error=f"{type(exc).__name__}: {exc}"))
                        continue
                    found, nan_payloads = compare(k, want, got)
                    summary.outputs_compared += sum(a.size for a in want)
                    summary.nan_payload_differences += nan_payloads
                    summary.mismatches += found
    finally:
        if tmp is not None:
            tmp.cleanup()
    summary.seconds = time.perf_counter() - t0
    return summary


def _describe_failure(k: Kernel, workdir: Path) -> str:
    want = run_cxx([k], workdir)[0]
    try:
        got = run_simulator(k)
    except Exception as exc:
        return Mismatch(k, error=f"{type(exc).__name__}: {exc}").report()
    found, _ = compare(k, want, got)
    if not found:
        return Mismatch(k, error="(no longer fails)").report()
    return "\n".join([found[0].report(), *(m.report(with_source=False) for m in found[1:3])])


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=200, help="number of kernels")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start", type=int, default=0, help="index of the first kernel")
    p.add_argument("--batch", type=int, default=100, help="kernels per C++ file")
    p.add_argument("--no-ubsan", action="store_true", help="build the C++ side without UBSan")
    p.add_argument("--cxx-only", action="store_true", help="run only the C++ side (no simulator)")
    p.add_argument(
        "--typecheck", action="store_true", help="check the generator's type tracking with g++"
    )
    p.add_argument(
        "--show", type=int, metavar="INDEX", help="print kernel INDEX and its g++ outputs"
    )
    p.add_argument("--details", type=int, default=5, help="failing kernels to print in full")
    p.add_argument(
        "--reduce", type=int, default=0, metavar="N", help="shrink the first N failing kernels"
    )
    args = p.parse_args(argv)

    if args.show is not None:
        k = generate_kernel(args.seed, args.show)
        print(Mismatch(k, error="(shown on request)").report())
        with tempfile.TemporaryDirectory(prefix="msl-diff-") as d:
            for b, arr in zip(k.outputs, run_cxx([k], Path(d), not args.no_ubsan)[0], strict=True):
                print(f"{b.name} ({b.ctype.name}, {b.slots} per thread):")
                print(arr.reshape(k.n_threads, b.slots))
        return 0
    if args.typecheck:
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="msl-diff-") as d:
            for i, kernels in enumerate(_batches(args.seed, args.start, args.count, args.batch)):
                typecheck(kernels, Path(d) / f"t{i}")
        print(
            f"type tracking agrees with g++ on {args.count} kernels ({time.perf_counter() - t0:.1f}s)"
        )
        return 0

    summary = run(
        args.count, args.seed, start=args.start, batch=args.batch,
        ubsan=not args.no_ubsan, simulator=not args.cxx_only,
    )  # fmt: skip
    if summary.mismatches:
        print(summary.details(max_kernels=args.details))
        print()
    for k in summary.failed_kernels[: args.reduce]:
        with tempfile.TemporaryDirectory(prefix="msl-reduce-") as d:
            small = reduce_kernel(k, Path(d), log=True)
            print(f"=== {k.name} reduced (outputs zero-filled first) ===")
            print(_describe_failure(small, Path(d)))
            print()
    print(summary.text())
    return 1 if summary.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
