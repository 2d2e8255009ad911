"""Fake devices for tests/differential/test_cuda_oracle.py: importable by name in a worker process
('differential.oracle_fakes:Corrupting'), as the oracle's ``--device module:factory`` takes them."""

from __future__ import annotations

import os
import re
import sys
import threading

import numpy as np

from .multithread import MultiThreadKernel
from .oracle import DeviceError, DeviceRun, Refused, SimulatorDevice


class Corrupting(SimulatorDevice):
    """The simulator, with the lowest bit of thread 1's first float slot flipped (a NaN there
    becomes 1.0 instead: NaNs agree whatever their bits)."""

    def run(self, k: MultiThreadKernel) -> DeviceRun:
        run = super().run(k)
        out_f = run.outputs[k.output_names.index("out_f")].reshape(-1)
        slots = out_f.size // k.n_threads
        if np.isnan(out_f[slots]):
            out_f[slots] = np.float32(1.0)
        else:
            out_f.view(np.uint32)[slots] ^= np.uint32(1)
        return run


class FailsOnOddSeeds(SimulatorDevice):
    """Odd seeds: a sticky device error; seeds divisible by 4: the translator refuses."""

    def run(self, k: MultiThreadKernel) -> DeviceRun:
        if k.seed % 2:
            raise DeviceError("an illegal memory access was encountered", fatal=True)
        if k.seed % 4 == 0:
            raise Refused("source:3:5: error: 'x' is not supported on CUDA")
        return super().run(k)


class HangsOnSeedOne(SimulatorDevice):
    """Seed 1 never finishes (a kernel that loops forever on the GPU); it says on stderr when it
    starts, with the worker's pid, so a test can wait for that state."""

    def run(self, k: MultiThreadKernel) -> DeviceRun:
        if k.seed == 1:
            print(f"worker busy with seed 1 (pid {os.getpid()})", file=sys.stderr, flush=True)
            threading.Event().wait()
        return super().run(k)


class NoDevice:
    """A machine without the GPU: making the device fails."""

    def __init__(self) -> None:
        raise ImportError("No module named 'cupy'")


class CorruptsWhenSimd(Corrupting):
    """Differs only on kernels that call a SIMD-group reduction, shuffle or scan (a translator bug
    in those, as the reducer would meet it)."""

    def run(self, k: MultiThreadKernel) -> DeviceRun:
        if re.search(r"\bsimd_(sum|max|min|and|or|xor|product|shuffle\w*|broadcast\w*|prefix\w*)\(", k.source):
            return super().run(k)
        return SimulatorDevice.run(self, k)
