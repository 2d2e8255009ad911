"""Occupancy and a roofline estimate of a kernel's time on a GPU model.

This is a model, not a measurement. It knows what the simulator counted (device-memory
segments, threadgroup-memory wavefronts, arithmetic by kind, the launch's shape) and a GPU's
published or measured rates (``gpu_models``), and says which of five things bounds the kernel:

* **device-memory traffic**: every segment a SIMD-group touches is charged in full, as if it
  came from DRAM. Caches absorb part of the excess on real GPUs (on an H100 a strided copy that
  touches 8x the sectors ran 1.43x slower, not 8x), so this ceiling overstates uncoalesced
  kernels; it ranks them right;
* **threadgroup memory**: one pass over the banks per wavefront, so an n-way bank conflict costs
  n passes;
* **arithmetic**: every issued SIMD-group instruction occupies all 32 lanes, idle or not, at the
  rate of its kind (a divergent branch pays for both sides);
* **barrier waits**: at every threadgroup barrier a threadgroup's SIMD-groups stop until the last
  arrives and the barrier releases them, ``barrier_cycles`` per barrier. The threadgroups resident
  on a core wait side by side, so a launch waits that long per barrier once per *wave* of
  threadgroups (the threadgroups a core runs one after another, over those it holds at once);
* **launch overhead**: a fixed cost per dispatch, which dominates small launches.

Throughput is scaled by the cores the launch keeps busy and, below the SIMD-groups per core
needed to hide latency, by the occupancy. The first four are the *kernel time*
(``TimeEstimate.kernel_seconds``): what the kernel's own code costs, and what ranks two kernels
doing the same work; the launch overhead is added once, whatever the kernel does. Atomics are
counted, not priced: no cost for them is public.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ...compat import StrEnum
from ..counting.op_kinds import OpKind
from .gpu_models import GpuModel

REGISTERS_UNKNOWN = ("registers per thread are unknown to the simulator (the Metal compiler allocates them), "
                     "so they never limit occupancy here; a kernel with many live values may fit fewer SIMD-groups")


class OccupancyLimit(StrEnum):
    """What stops more threadgroups from being resident on a core."""

    SIMDGROUPS = "SIMD-groups per core"
    THREADGROUP_MEMORY = "threadgroup memory per core"
    THREADGROUPS = "threadgroups per core"


@dataclass(frozen=True)
class Occupancy:
    """How many SIMD-groups of this launch fit on one core at once."""

    threads_per_threadgroup: int
    simdgroups_per_threadgroup: int
    #: Threadgroup memory one threadgroup holds, as allocated (rounded up, plus any reserve).
    threadgroup_memory: int
    threadgroups_per_core: int
    simdgroups_per_core: int
    max_simdgroups_per_core: int
    limited_by: OccupancyLimit

    @property
    def fraction(self) -> float:
        return self.simdgroups_per_core / self.max_simdgroups_per_core

    def describe(self) -> str:
        return (f"{self.threadgroups_per_core} threadgroup(s) of {self.threads_per_threadgroup} threads "
                f"({self.simdgroups_per_core} of {self.max_simdgroups_per_core} SIMD-groups, "
                f"{self.fraction:.0%}) per core, limited by {self.limited_by}")


def occupancy(gpu: GpuModel, threads_per_threadgroup: int, threadgroup_memory: int) -> Occupancy:
    """Resident threadgroups and SIMD-groups per core for a threadgroup size and the threadgroup
    memory the kernel declares (registers: see ``REGISTERS_UNKNOWN``)."""
    width = gpu.memory.simd_width
    simds = max(1, -(-threads_per_threadgroup // width))
    granule = gpu.threadgroup_memory_granule
    allocated = -(-threadgroup_memory // granule) * granule + gpu.threadgroup_memory_reserved
    limits = {OccupancyLimit.SIMDGROUPS: gpu.max_simdgroups_per_core // simds}
    if allocated:
        limits[OccupancyLimit.THREADGROUP_MEMORY] = gpu.threadgroup_memory_per_core // allocated
    if gpu.max_threadgroups_per_core is not None:
        limits[OccupancyLimit.THREADGROUPS] = gpu.max_threadgroups_per_core
    # Ties go to the first listed: a kernel at the SIMD-group limit is not limited by anything else.
    limited_by = min(limits, key=lambda k: limits[k])
    groups = limits[limited_by]
    return Occupancy(threads_per_threadgroup, simds, allocated, groups, groups * simds,
                     gpu.max_simdgroups_per_core, limited_by)


class Bound(StrEnum):
    """The resource whose time the estimate is."""

    MEMORY = "device-memory traffic"
    THREADGROUP_MEMORY = "threadgroup memory"
    COMPUTE = "arithmetic"
    BARRIERS = "barrier waits"
    LAUNCH = "launch overhead"


@dataclass(frozen=True)
class Workload:
    """What one launch asks of the GPU, as the simulator counted it."""

    threads_per_threadgroup: int
    threadgroups: int
    threadgroup_memory: int
    #: Device-memory traffic: segments touched x segment size, loads, stores and atomics.
    bytes_moved: int
    #: Threadgroup-memory passes over the banks (an n-way conflict is n passes).
    wavefronts: int
    #: Lane-operations issued per kind of arithmetic, idle lanes of an issuing SIMD-group included.
    lane_slots: Mapping[OpKind, int]
    #: Threadgroup barriers the threadgroup that passed the most passed.
    barriers_per_threadgroup: int = 0


@dataclass(frozen=True)
class TimeEstimate:
    """A roofline estimate of one launch's time on one GPU model."""

    gpu: str
    #: Launch overhead plus the largest ceiling.
    seconds: float
    bound: Bound
    #: Seconds each resource would need for this launch, on the cores it keeps busy.
    ceilings: Mapping[Bound, float]
    active_cores: int
    #: Resident SIMD-groups per core over those needed to hide latency (at most 1).
    latency_hiding: float
    launch_overhead: float

    @property
    def kernel_seconds(self) -> float:
        """The kernel time, without the fixed launch overhead: what ranks two kernels doing the
        same work (a launch of a few threadgroups costs the overhead many times over)."""
        return max(self.ceilings.values())

    #: The older name of ``kernel_seconds``.
    throughput_seconds = kernel_seconds

    @property
    def kernel_bound(self) -> Bound:
        """The resource the kernel time is (never the launch overhead)."""
        return max(self.ceilings, key=lambda b: self.ceilings[b])

    def describe(self) -> str:
        """The kernel time first, what bounds it and every ceiling, then the launch overhead and
        the total: at a puzzle's sizes the overhead is most of the total and never changes with
        the kernel, so the kernel time is the figure that moves with the code."""
        parts = ", ".join(f"{b}: {_fmt_time(t)}" for b, t in self.ceilings.items())
        total = (f"plus the launch overhead of {_fmt_time(self.launch_overhead)}: ~{_fmt_time(self.seconds)} in all"
                 if self.launch_overhead else "no launch overhead")
        return (f"kernel ~{_fmt_time(self.kernel_seconds)} on {self.gpu}, bound by {self.kernel_bound} ({parts}; "
                f"{self.active_cores} core(s) busy, latency hidden {self.latency_hiding:.0%}); {total}")


def estimate_time(work: Workload, gpu: GpuModel, *, whole_gpu: bool = False) -> TimeEstimate:
    """The roofline time of ``work`` on ``gpu``.

    ``whole_gpu`` prices the work as part of a launch large enough to fill every core with as
    many threadgroups as fit (and leaves out the launch overhead): how two kernels doing the same
    work at a larger size compare. Otherwise the launch keeps only as many cores busy as it has
    threadgroups.
    """
    occ = occupancy(gpu, work.threads_per_threadgroup, work.threadgroup_memory)
    groups = max(work.threadgroups, 1)
    if whole_gpu:
        active = gpu.cores
        resident = occ.simdgroups_per_core
        overhead = 0.0
        # A share of a larger launch: its threadgroups make a fraction of the waves.
        waves = groups / (active * max(occ.threadgroups_per_core, 1))
    else:
        active = min(gpu.cores, groups)
        per_core = math.ceil(groups / active)
        at_once = max(min(occ.threadgroups_per_core, per_core), 1)
        resident = at_once * occ.simdgroups_per_threadgroup
        overhead = gpu.launch_overhead
        waves = math.ceil(per_core / at_once)
    hiding = min(1.0, resident / gpu.saturating_simdgroups_per_core)
    busy = active / gpu.cores * hiding
    cycles = sum(n / gpu.op_rates[kind] for kind, n in work.lane_slots.items())
    ceilings = {
        Bound.MEMORY: work.bytes_moved / (gpu.dram_bandwidth * gpu.memory_efficiency * busy),
        Bound.THREADGROUP_MEMORY: work.wavefronts / (gpu.threadgroup_wavefronts_per_cycle * active * gpu.clock_hz
                                                     * hiding),
        Bound.COMPUTE: cycles / (active * gpu.clock_hz * gpu.alu_efficiency * hiding),
        Bound.BARRIERS: waves * work.barriers_per_threadgroup * gpu.barrier_cycles / gpu.clock_hz,
    }
    bound = max(ceilings, key=lambda b: ceilings[b])
    top = ceilings[bound]
    if overhead > top:
        bound = Bound.LAUNCH
    return TimeEstimate(gpu.name, overhead + top, bound, ceilings, active, hiding, overhead)


def _fmt_time(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.3g} us"
    return f"{seconds * 1e9:.3g} ns"
