"""The simulator's real-GPU oracle: generated multi-thread kernels (``multithread.py``) run on the
simulator and, translated to CUDA, on a GPU; outputs compared bit for bit.

A *device* runs one kernel and returns its outputs: ``CupyDevice`` (the translation through
CuPy's RawKernel on an NVIDIA GPU) or ``SimulatorDevice`` (the simulator once more, so that the
driver, the comparison and the report can be tested on any machine). ``run_oracle`` runs kernels
in worker processes, so a kernel that hangs the GPU or poisons its CUDA context (an illegal
address is sticky) costs that kernel, never the run: a worker past the per-kernel wall limit is
killed and replaced, one that reports a device error exits and is replaced.

``benchmarks/cuda_oracle.py`` is the command line; ``tests/differential/test_cuda_oracle.py`` tests all of
this with fake devices.
"""

from __future__ import annotations

import importlib
import multiprocessing
import multiprocessing.connection
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

from metal_puzzles.compat import StrEnum

from .multithread import MultiThreadKernel, generate, simulate_kernel


class Status(StrEnum):
    """How one kernel came out."""

    AGREE = "agree"
    DIFFER = "differ"
    #: The translator gave a located error (no faithful CUDA form), or refused the launch.
    REFUSED = "refused by the translator"
    #: NVRTC could not compile the translation: a translator bug.
    COMPILE_ERROR = "compile error"
    DEVICE_ERROR = "device error"
    SIMULATOR_ERROR = "simulator error"
    #: Translated and compiled to PTX, not run (the ``nvrtc`` device: a pre-flight without a GPU).
    COMPILED = "compiled, not run"
    TIMEOUT = "timeout"
    CRASHED = "worker crashed"
    NOT_RUN = "not run (time budget spent)"

    @property
    def failed(self) -> bool:
        """A result someone must explain and fix (a refusal is the translator's documented answer)."""
        return self not in (Status.AGREE, Status.REFUSED, Status.NOT_RUN, Status.COMPILED)


class Refused(Exception):
    """The translator has no faithful CUDA form for this kernel or launch."""


class DeviceError(Exception):
    """The device failed to run the kernel; ``fatal``: its context cannot be trusted after."""

    def __init__(self, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.fatal = fatal


@dataclass
class DeviceRun:
    outputs: list[np.ndarray]
    seconds: dict[str, float] = field(default_factory=dict)


class Device(Protocol):
    def describe(self) -> str: ...

    def run(self, k: MultiThreadKernel) -> DeviceRun: ...


class SimulatorDevice:
    """The simulator standing in for a GPU (sanitizer off, as a GPU has none)."""

    def describe(self) -> str:
        return "the simulator (a stand-in device)"

    def run(self, k: MultiThreadKernel) -> DeviceRun:
        t0 = time.perf_counter()
        outputs = [np.asarray(o) for o in simulate_kernel(k, sanitize="off").outputs]
        return DeviceRun(outputs, {"run_s": time.perf_counter() - t0})


def translate(k: MultiThreadKernel) -> Any:
    """The kernel's CUDA translation for its launch; raises Refused with the translator's
    located error (or its refusal of the launch geometry)."""
    from metal_puzzles.msl.abi.signature import describe_input
    from metal_puzzles.msl.cuda import translate_kernel
    from metal_puzzles.msl.lang.errors import CompileError

    try:
        descs = [describe_input(n, a, None) for n, a in zip(k.input_names, k.inputs, strict=True)]
        tr = translate_kernel(k.name, k.input_names, k.output_names, k.source, k.header, descs,
                              k.output_dtypes, k.template, k.atomic_outputs)
        tr.check_launch(k.grid, k.threadgroup)
    except (CompileError, ValueError) as exc:
        raise Refused(str(exc)) from None
    return tr


class CupyDevice:
    """The kernel translated (``metal_puzzles.msl.cuda``) and run with CuPy's RawKernel."""

    def __init__(self) -> None:
        from .cuda_launch import CudaLauncher

        self.launcher = CudaLauncher()

    def describe(self) -> str:
        return self.launcher.device_name()

    def run(self, k: MultiThreadKernel) -> DeviceRun:
        from .cuda_launch import CudaCompileError, CudaLaunchError, Timing, initial_outputs

        t0 = time.perf_counter()
        tr = translate(k)
        seconds = {"translate_s": time.perf_counter() - t0}
        timing = Timing()
        t0 = time.perf_counter()
        try:
            kernel = self.launcher.compile(tr)
        except CudaCompileError as exc:
            raise CompileFailed(str(exc), tr.unit) from None
        seconds["compile_s"] = time.perf_counter() - t0
        try:
            outputs = self.launcher.run(tr, kernel, dict(zip(k.input_names, k.inputs, strict=True)),
                                        initial_outputs(k.output_shapes, k.output_dtypes, k.init_value),
                                        k.grid, k.threadgroup, timing)
        except CudaLaunchError as exc:
            raise DeviceError(str(exc), fatal=True) from None
        seconds["run_s"] = timing.run_s
        return DeviceRun(outputs, seconds)


class CompiledOnly(Exception):
    """The device compiled the kernel and has nothing to run it on."""


class NvrtcDevice:
    """No GPU: translate and compile to PTX with the project's NVRTC (``host/nvrtc``, the pip
    wheels), for the oldest target MLX's CUDA back end runs (sm_75). A pre-flight that finds the
    translator's refusals and NVRTC's errors before a GPU is at hand."""

    def __init__(self) -> None:
        from metal_puzzles.host.nvrtc import load_nvrtc

        self.nvrtc = load_nvrtc()

    def describe(self) -> str:
        major, minor = self.nvrtc.version()
        return f"NVRTC {major}.{minor} (compile only, compute_75)"

    def run(self, k: MultiThreadKernel) -> DeviceRun:
        from metal_puzzles.host.nvrtc import NvrtcError, compile_to_ptx

        from .cuda_launch import NVRTC_OPTIONS

        tr = translate(k)
        try:
            # compile_to_ptx adds its own --std and target.
            compile_to_ptx(tr.unit, f"{k.name}.cu", options=[o for o in NVRTC_OPTIONS if not o.startswith("--std")])
        except NvrtcError as exc:
            raise CompileFailed(exc.log or str(exc), tr.unit) from None
        raise CompiledOnly()


class CompileFailed(Exception):
    """NVRTC refused the translation unit (kept for the report)."""

    def __init__(self, message: str, unit: str) -> None:
        super().__init__(message)
        self.unit = unit


DEVICES: dict[str, Callable[[], Device]] = {"simulator": SimulatorDevice, "cupy": CupyDevice, "nvrtc": NvrtcDevice}


def make_device(spec: str) -> Device:
    """'cupy', 'nvrtc', 'simulator', or 'module:factory' (a test's fake device, importable in a worker)."""
    if spec in DEVICES:
        return DEVICES[spec]()
    module, sep, attr = spec.partition(":")
    if not sep:
        raise ValueError(f"unknown device '{spec}': use one of {', '.join(DEVICES)} or module:factory")
    return getattr(importlib.import_module(module), attr)()


# ----------------------------------------------------------------------------------------
# Comparison


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind in "fc" else a


def _hex(a: np.ndarray, i: int) -> str:
    b = a.reshape(-1)[i : i + 1]
    raw = int(b.view(f"u{b.dtype.itemsize}")[0]) if b.dtype.itemsize in (1, 2, 4, 8) else 0
    return f"0x{raw:0{b.dtype.itemsize * 2}x}"


@dataclass
class Difference:
    """The first output element where the device's bits differ from the simulator's."""

    output: str
    index: int
    expected: str  # simulator: value and bits
    got: str  # device
    differing: int  # elements of this output that differ
    where: str = ""  # which thread (or threadgroup, or accumulator) stores it


def compare_outputs(k: MultiThreadKernel, expected: Sequence[np.ndarray],
                    got: Sequence[np.ndarray]) -> Difference | None:
    """Bit-for-bit comparison; two NaNs agree whatever their payloads (neither IEEE 754 nor
    Metal fixes which NaN an operation returns)."""
    for spec, want, have in zip(k.outputs, expected, got, strict=True):
        want, have = np.asarray(want).reshape(-1), np.asarray(have).reshape(-1)
        if want.dtype != have.dtype or want.shape != have.shape:
            return Difference(spec.name, -1, f"{want.dtype}{want.shape}", f"{have.dtype}{have.shape}",
                              max(want.size, have.size), "shape or dtype")
        differ = _bits(want) != _bits(have)
        if want.dtype.kind == "f":
            differ &= ~(np.isnan(want) & np.isnan(have))
        if differ.any():
            i = int(np.flatnonzero(differ)[0])
            return Difference(spec.name, i, f"{want[i]!r} ({_hex(want, i)})", f"{have[i]!r} ({_hex(have, i)})",
                              int(differ.sum()), _where(k, spec.name, i, want.size))
    return None


def _where(k: MultiThreadKernel, output: str, index: int, size: int) -> str:
    n = k.n_threads
    if output in ("out_u", "out_f", "out_h") and size % n == 0:
        slots = size // n
        return f"thread {index // slots} (linear), slot {index % slots}"
    if output == "out_g":
        groups = -(-k.grid[0] // k.threadgroup[0]) * -(-k.grid[1] // k.threadgroup[1])
        return f"threadgroup {index // (size // groups)} (linear), slot {index % (size // groups)}"
    return f"element {index}"


# ----------------------------------------------------------------------------------------
# One kernel


@dataclass
class KernelRecord:
    """What one kernel did: the report's entry (``source`` only where it did not agree)."""

    seed: int
    status: Status
    grid: tuple[int, int, int] = (0, 0, 0)
    threadgroup: tuple[int, int, int] = (0, 0, 0)
    features: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    difference: Difference | None = None
    message: str = ""
    source: str = ""
    cuda_unit: str = ""

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["status"] = self.status.value
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> KernelRecord:
        d = dict(d)
        d["status"] = Status(d["status"])
        d["grid"], d["threadgroup"] = tuple(d["grid"]), tuple(d["threadgroup"])
        if d.get("difference"):
            d["difference"] = Difference(**d["difference"])
        return cls(**d)


def check_kernel(seed: int, device: Device) -> KernelRecord:
    """Generate kernel ``seed``, run it on the simulator and on the device, compare."""
    k = generate(seed)
    rec = KernelRecord(seed, Status.AGREE, k.grid, k.threadgroup, sorted(f.value for f in k.features))
    t0 = time.perf_counter()
    try:
        expected = [np.asarray(o) for o in simulate_kernel(k).outputs]
    except Exception as exc:  # a crash or a finding: the generator promised neither
        return _failed(rec, k, Status.SIMULATOR_ERROR, f"{type(exc).__name__}: {exc}")
    rec.seconds["simulate_s"] = time.perf_counter() - t0
    try:
        run = device.run(k)
    except Refused as exc:
        rec.status, rec.message = Status.REFUSED, str(exc)
        return rec
    except CompiledOnly:
        rec.status = Status.COMPILED
        return rec
    except CompileFailed as exc:
        rec = _failed(rec, k, Status.COMPILE_ERROR, str(exc))
        rec.cuda_unit = exc.unit
        return rec
    except DeviceError as exc:
        return _failed(rec, k, Status.DEVICE_ERROR, str(exc))
    except Exception as exc:
        return _failed(rec, k, Status.DEVICE_ERROR, "".join(traceback.format_exception(exc))[-3000:])
    rec.seconds.update(run.seconds)
    diff = compare_outputs(k, expected, run.outputs)
    if diff is not None:
        rec = _failed(rec, k, Status.DIFFER, "")
        rec.difference = diff
    return rec


def _failed(rec: KernelRecord, k: MultiThreadKernel, status: Status, message: str) -> KernelRecord:
    rec.status, rec.message, rec.source = status, message, k.listing()
    return rec


# ----------------------------------------------------------------------------------------
# Workers and the run


def worker_main(conn: multiprocessing.connection.Connection, device_spec: str) -> None:
    """A worker process: make the device, then check the seeds the parent sends, one by one."""
    try:
        device = make_device(device_spec)
        # Import the simulator before the first kernel's clock starts.
        import metal_puzzles.msl.api  # noqa: F401

        conn.send(("ready", device.describe()))
    except Exception as exc:
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        seed = conn.recv()
        if seed is None:
            return
        rec = check_kernel(seed, device)
        conn.send(("record", rec.to_json()))
        if rec.status == Status.DEVICE_ERROR:
            return  # a CUDA error is sticky: the parent starts a fresh worker


class DeviceUnavailable(RuntimeError):
    """No worker could make the device (no CuPy, no GPU): a setup problem, not a kernel's."""


@dataclass
class OracleRun:
    device: str
    records: list[KernelRecord]
    seconds: float

    def counts(self) -> dict[str, int]:
        return {s.value: sum(r.status == s for r in self.records) for s in Status if any(r.status == s for r in self.records)}

    def summary_line(self) -> str:
        seeds = [r.seed for r in self.records]
        span = f"seeds {min(seeds)}..{max(seeds)}" if seeds else "no seeds"
        parts = ", ".join(f"{n} {s}" for s, n in self.counts().items())
        return f"cuda_oracle: {len(self.records)} kernels ({span}) on {self.device}: {parts}; {self.seconds:.0f} s"


@dataclass
class _Worker:
    proc: Any
    conn: multiprocessing.connection.Connection
    ready: bool = False
    seed: int | None = None
    deadline: float = 0.0


def run_oracle(seeds: Iterable[int], device_spec: str = "cupy", *, jobs: int = 1, timeout: float = 120.0,
               budget: float | None = None, start_timeout: float = 300.0,
               progress: Callable[[KernelRecord], None] | None = None) -> OracleRun:
    """Check every seed; ``jobs`` worker processes (0: in this process, with no wall limit)."""
    t_start = time.perf_counter()
    pending = deque(seeds)
    records: list[KernelRecord] = []

    def done(rec: KernelRecord) -> None:
        records.append(rec)
        if progress is not None:
            progress(rec)

    if jobs <= 0:
        device = make_device(device_spec)
        while pending:
            if budget is not None and time.perf_counter() - t_start > budget:
                break
            done(check_kernel(pending.popleft(), device))
        for seed in pending:
            done(KernelRecord(seed, Status.NOT_RUN))
        return OracleRun(device.describe(), sorted(records, key=lambda r: r.seed), time.perf_counter() - t_start)

    ctx = multiprocessing.get_context("spawn")
    workers: list[_Worker] = []
    described = ""

    def spawn() -> _Worker:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=worker_main, args=(child, device_spec), daemon=True)
        proc.start()
        child.close()
        return _Worker(proc, parent, deadline=time.perf_counter() + start_timeout)

    def retire(w: _Worker) -> None:
        if w.proc.is_alive():
            w.proc.kill()
        w.proc.join(5)
        w.conn.close()
        workers.remove(w)

    try:
        for _ in range(max(1, min(jobs, len(pending)))):
            workers.append(spawn())
        while workers:
            out_of_time = budget is not None and time.perf_counter() - t_start > budget
            for w in list(workers):
                if w.ready and w.seed is None:
                    if pending and not out_of_time:
                        w.seed = pending.popleft()
                        w.deadline = time.perf_counter() + timeout
                        w.conn.send(w.seed)
                    else:
                        w.conn.send(None)
                        retire(w)
            if not workers:
                break
            wait = max(0.0, min(w.deadline for w in workers) - time.perf_counter())
            ready = multiprocessing.connection.wait([w.conn for w in workers], timeout=wait)
            for w in [w for w in workers if w.conn in ready]:
                try:
                    kind, payload = w.conn.recv()
                except (EOFError, OSError):
                    if w.seed is not None:
                        done(_lost(w.seed, Status.CRASHED, f"the worker died (exit code {w.proc.exitcode})"))
                    elif not w.ready:
                        raise DeviceUnavailable(f"a worker died while starting (exit code {w.proc.exitcode})") from None
                    retire(w)
                    if pending:
                        workers.append(spawn())
                    continue
                if kind == "failed":
                    raise DeviceUnavailable(f"the device '{device_spec}' is not available: {payload}")
                if kind == "ready":
                    w.ready, described = True, payload
                    continue
                rec = KernelRecord.from_json(payload)
                done(rec)
                w.seed = None
                if rec.status == Status.DEVICE_ERROR:
                    retire(w)
                    if pending:
                        workers.append(spawn())
            now = time.perf_counter()
            for w in [w for w in workers if now > w.deadline and w.conn not in ready]:
                if w.seed is None and not w.ready:
                    raise DeviceUnavailable(f"a worker did not start within {start_timeout:.0f} s")
                if w.seed is not None:
                    done(_lost(w.seed, Status.TIMEOUT, f"no result within the {timeout:.0f} s limit; worker killed"))
                    retire(w)
                    if pending:
                        workers.append(spawn())
    finally:
        for w in list(workers):
            retire(w)
    for seed in pending:
        done(KernelRecord(seed, Status.NOT_RUN))
    return OracleRun(described, sorted(records, key=lambda r: r.seed), time.perf_counter() - t_start)


def _lost(seed: int, status: Status, message: str) -> KernelRecord:
    k = generate(seed)
    rec = KernelRecord(seed, status, k.grid, k.threadgroup, sorted(f.value for f in k.features))
    return _failed(rec, k, status, message)


def feature_table(records: Sequence[KernelRecord]) -> dict[str, dict[str, int]]:
    """Per feature: kernels exercising it, and how many of those agree, differ, were refused."""
    table: dict[str, dict[str, int]] = {}
    for r in records:
        for f in r.features:
            row = table.setdefault(f, {"kernels": 0})
            row["kernels"] += 1
            row[r.status.value] = row.get(r.status.value, 0) + 1
    return dict(sorted(table.items()))


# ----------------------------------------------------------------------------------------
# Reducer: shrink a kernel that differs to the few lines that still make it differ


def still_differs(k: MultiThreadKernel, device: Device) -> bool:
    """The kernel runs clean on the simulator (no finding: still race-free and defined) and the
    device's output differs from it."""
    try:
        expected = [np.asarray(o) for o in simulate_kernel(k).outputs]
        got = device.run(k).outputs
    except Exception:  # a deletion that broke the kernel, or one the device cannot take
        return False
    return compare_outputs(k, expected, got) is not None


def reduce_kernel(k: MultiThreadKernel, device: Device, log: Callable[[str], None] | None = None
                  ) -> MultiThreadKernel:
    """Delete statements, and unwrap blocks, while the kernel still differs on the device. The
    outputs are zero-filled first on both sides (``init_value=0``), so deleting a store leaves a
    defined element, not a finding."""
    import dataclasses

    from .runner import shrink_lines

    k = dataclasses.replace(k, init_value=0)
    if not still_differs(k, device):
        return k

    def with_lines(lines: list[str]) -> MultiThreadKernel:
        return dataclasses.replace(k, source="\n".join(lines) + "\n")

    def say(lines: list[str]) -> None:
        if log is not None:
            log(f"{k.name}: {len(lines)} lines")

    lines = shrink_lines(k.source.splitlines(), lambda c: still_differs(with_lines(c), device), say)
    return with_lines(lines) if lines != k.source.splitlines() else k
