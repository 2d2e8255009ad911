"""The GPUs the cost model can price a run on: Apple's M1 to M4 families and, for the evidence
comparison in ``benchmarks/``, an NVIDIA H100.

Every number is a model parameter with its source, the kind of evidence behind it and how far
it may be off (``GpuModel.sources``). Nothing here was measured on an Apple GPU by this project;
the Apple figures come from Apple's own statements and documents, from third-party
microbenchmarks and from reverse engineering, and where nothing is public the value is an
assumption, said to be one. The H100 figures come from NVIDIA's documents and from a device
query and measurements on the lent machine (``benchmarks/gpu_evidence/results_h100.json``).

Two settings decide what the counters count, and they are the ones least known for Apple GPUs:

* the **segment** a device access is charged for (``segment_bytes``): 128 bytes on Apple GPUs
  (the measured global cache line; whether smaller transfers exist is not public), 32 bytes on
  NVIDIA GPUs (the sector that Nsight Compute counts);
* the **threadgroup-memory banks** (``banks`` x ``bank_width``): documented as 32 x 4 bytes by
  NVIDIA; not public for Apple. The Apple models assume the same 32 x 4 bytes; 16 x 4 bytes,
  a figure once published and later withdrawn by a microbenchmark author, is offered as
  ``APPLE_16_BANKS`` to test whether a lesson depends on the choice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from ...compat import StrEnum
from ..counting.op_kinds import OpKind
from ..lang.errors import ArgumentError


class Evidence(StrEnum):
    """What a parameter rests on."""

    OFFICIAL = "official"  # the vendor says so (documents, specifications, press releases)
    MEASURED = "measured"  # a microbenchmark or profiler on the hardware (third party or ours)
    REVERSE_ENGINEERED = "reverse engineered"  # from the ISA, the driver or the compiler
    DERIVED = "derived"  # computed from other parameters (the formula is given)
    ASSUMED = "assumed"  # not public: a choice, with the reasoning


@dataclass(frozen=True)
class Source:
    """Where a parameter comes from."""

    text: str
    evidence: Evidence
    uncertainty: str


@dataclass(frozen=True)
class MemoryModel:
    """What the per-access counters depend on: the segment a device access is charged for and
    the banks of threadgroup memory."""

    segment_bytes: int
    banks: int
    bank_width: int
    simd_width: int = 32


@dataclass(frozen=True)
class GpuModel:
    """One GPU as the cost model sees it. Rates are per core (Apple GPU core, NVIDIA SM)."""

    name: str
    family: str
    cores: int
    clock_hz: float
    #: FP32 lanes per core (one fused multiply-add per lane per cycle).
    alus_per_core: int
    #: Peak device-memory (DRAM) bandwidth, bytes per second.
    dram_bandwidth: float
    memory: MemoryModel
    max_threads_per_threadgroup: int
    #: Threadgroup memory one threadgroup may allocate.
    max_threadgroup_memory: int
    #: The pool of threadgroup memory the resident threadgroups of one core share.
    threadgroup_memory_per_core: int
    #: Threadgroup memory the system keeps per resident threadgroup besides the kernel's own.
    threadgroup_memory_reserved: int
    #: Threadgroup-memory allocations are rounded up to a multiple of this.
    threadgroup_memory_granule: int
    max_simdgroups_per_core: int
    #: A cap on resident threadgroups per core, if one is known.
    max_threadgroups_per_core: int | None
    #: Resident SIMD-groups per core needed to keep memory and ALUs busy; with fewer, the model
    #: scales throughput down in proportion (latency is no longer hidden).
    saturating_simdgroups_per_core: int
    #: Threadgroup-memory wavefronts (one pass over the banks) a core serves per cycle.
    threadgroup_wavefronts_per_cycle: float
    #: Lane-operations per cycle per core for each kind of arithmetic.
    op_rates: Mapping[OpKind, float]
    #: Fraction of peak DRAM bandwidth and of peak ALU throughput a good kernel reaches.
    memory_efficiency: float
    alu_efficiency: float
    #: Fixed cost of one kernel launch (dispatch, first wave), seconds.
    launch_overhead: float
    #: Register file per core, bytes (registers per thread are not known to the simulator).
    register_file_per_core: int
    #: Occupancy limits are decided at run time by the hardware (Apple's Dynamic Caching).
    dynamic_occupancy: bool
    #: Cycles a threadgroup waits at each threadgroup barrier (the last SIMD-group's arrival and
    #: the release), once per wave of resident threadgroups (``roofline``).
    barrier_cycles: float
    sources: Mapping[str, Source] = field(default_factory=dict, repr=False)

    @property
    def peak_flops(self) -> float:
        """FP32 FLOP/s: cores x lanes x 2 (a fused multiply-add) x clock."""
        return self.cores * self.alus_per_core * 2 * self.clock_hz

    def with_memory(self, memory: MemoryModel, name: str | None = None) -> GpuModel:
        """The same GPU counted with other segment or bank parameters (a sensitivity setting)."""
        return replace(self, memory=memory, name=name or f"{self.name} ({memory.banks} banks)")

    def describe(self) -> str:
        """The parameters with their sources, one per line."""
        lines = [f"{self.name} ({self.family}): {self.cores} cores at {self.clock_hz / 1e6:.0f} MHz, "
                 f"{self.peak_flops / 1e12:.2f} TFLOP/s FP32, {self.dram_bandwidth / 1e9:.0f} GB/s"]
        for key, src in self.sources.items():
            lines.append(f"  {key}: {src.text} [{src.evidence}; uncertainty: {src.uncertainty}]")
        return "\n".join(lines)


KIB = 1024

# ---------------------------------------------------------------------------------------- Apple
_TURNER = "Philip Turner, metal-benchmarks README (github.com/philipturner/metal-benchmarks, 2022-2024)"
_FEATURE_TABLES = "Apple, Metal Feature Set Tables (developer.apple.com/metal/Metal-Feature-Set-Tables.pdf)"

#: Measured on M1 and A15 (Turner, "Operations per Second"); assumed to hold for M2 to M4.
APPLE_OP_RATES = MappingProxyType({
    OpKind.FLOAT_ADD: 128.0,
    OpKind.FLOAT_MUL: 128.0,
    OpKind.FLOAT_FMA: 128.0,
    OpKind.FLOAT_OTHER: 128.0,
    OpKind.INT_ADD: 128.0,
    OpKind.INT_MUL: 32.0,
    # A division is a reciprocal (~21 per core-cycle) and a multiply.
    OpKind.FLOAT_DIV: 1 / (1 / 21 + 1 / 128),
    # exp2/log2 run at 32 per core-cycle; rsqrt 16 and sin 9 are slower: 32 is the optimistic end.
    OpKind.FLOAT_SPECIAL: 32.0,
    OpKind.INT_DIV: 8.0,
    # SIMD shuffles move 256 bytes per core-cycle: 64 lanes of 32 bits.
    OpKind.SIMD: 64.0,
})

_APPLE_COMMON_SOURCES = {
    "memory.segment_bytes": Source(
        f"{_TURNER}, 'Global Cache Line 128 B'; Apple SoC cache lines are 128 B", Evidence.MEASURED,
        "whether the GPU transfers parts of a line (32 or 64 B) is not public"),
    "memory.banks": Source(
        "not public. Turner's table said 16 banks x 4 B (2023-05) and was changed to 'TBD' (2024-06); "
        "32 x 4 B is assumed, as on NVIDIA GPUs, so the two models count alike", Evidence.ASSUMED,
        "unknown: use APPLE_16_BANKS to check a lesson does not depend on it"),
    "memory.simd_width": Source(
        "32 threads per SIMD-group: dougallj/applegpu docs (G13 ISA); Metal reports it as "
        "threadExecutionWidth", Evidence.REVERSE_ENGINEERED, "none"),
    "alus_per_core": Source(
        "128 FP32 ALUs per core: Apple's M1 announcement (2020-11-10, apple.com/newsroom); "
        f"{_TURNER}, 'ALU Layout'", Evidence.OFFICIAL, "none"),
    "max_threads_per_threadgroup": Source(f"{_FEATURE_TABLES}: 1024", Evidence.OFFICIAL,
                                          "lower for pipelines with many registers"),
    "max_threadgroup_memory": Source(f"{_FEATURE_TABLES}: 32 KB per threadgroup", Evidence.OFFICIAL, "none"),
    "threadgroup_memory_per_core": Source(
        f"{_TURNER}, 'On-Chip Memory': ~60 KB per core (M1/M2)", Evidence.MEASURED,
        "+-8 KB; on M3/M4 one on-chip pool is shared dynamically with registers (Dynamic Caching)"),
    "threadgroup_memory_reserved": Source("none published", Evidence.ASSUMED, "unknown"),
    "threadgroup_memory_granule": Source(
        f"{_FEATURE_TABLES}: threadgroup memory length alignment 16 B", Evidence.OFFICIAL, "none"),
    "max_simdgroups_per_core": Source(
        "96 SIMD-groups (3072 threads): Apple's M1 announcement, 24,576 threads on 8 cores; "
        f"{_TURNER} (384-3072 threads per core)", Evidence.OFFICIAL, "assumed the same on M2-M4"),
    "max_threadgroups_per_core": Source("no cap published", Evidence.ASSUMED, "unknown"),
    "saturating_simdgroups_per_core": Source(
        f"{_TURNER}, 'ALU Bottlenecks': about 24 SIMD-groups per core keep the FP32 ALUs busy at ILP 1 "
        "(M1 Max); assumed to hold for memory latency too", Evidence.MEASURED,
        "+-25% for ALUs; for memory an assumption"),
    "threadgroup_wavefronts_per_cycle": Source(
        "Turner (openmm/openmm PR 3911) and DTolm (DTolm/VkFFT issue 91): threadgroup memory is about "
        "half as fast as on other vendors' GPUs; 0.5 pass over the banks per core-cycle", Evidence.MEASURED,
        "+-50%, application-level"),
    "op_rates": Source(
        f"{_TURNER}, 'Operations per Second' (M1, A15): FFMA32 and IADD32 128, IMUL32 32, exp2 32, "
        "recip ~21, rsqrt 16, sin 9, SIMD shuffle 256 B per core-cycle; integer division is assumed "
        "8 (a routine of multiplies)", Evidence.MEASURED, "+-10% measured; M2-M4 assumed the same"),
    "memory_efficiency": Source(
        "assumed 0.8 of peak DRAM bandwidth; one public Metal reduction reached about 73% on an M4 Max "
        "(singhpratech/duckdbgpumetaldbram PR 2)", Evidence.ASSUMED, "+-15%"),
    "alu_efficiency": Source("assumed 0.9 of peak ALU throughput", Evidence.ASSUMED, "+-10%"),
    "launch_overhead": Source("assumed 10 us per dispatch (command encoding and first wave)",
                              Evidence.ASSUMED, "a factor of 3 either way"),
    "register_file_per_core": Source(
        f"{_TURNER}, 'Register File' ~208 KB; consistent with Mesa's agx_performance.c occupancy table",
        Evidence.MEASURED, "+-10%; the simulator does not know a kernel's registers, so they never limit "
                           "occupancy in the model"),
    "barrier_cycles": Source(
        "no Apple figure is public; assumed the H100's 80 cycles (derived from its barrier-tree and simd_sum "
        "reductions, see the H100 model). Apple's threadgroup memory is about half as fast as other vendors' "
        "(threadgroup_wavefronts_per_cycle), so its barriers are unlikely to be cheaper", Evidence.ASSUMED,
        "a factor of 3 either way"),
}


@dataclass(frozen=True)
class _AppleChip:
    name: str
    family: str
    cores: int
    clock_mhz: float
    bandwidth_gbs: float
    clock_source: Source
    bandwidth_source: Source
    dynamic: bool


def _apple(chip: _AppleChip) -> GpuModel:
    sources = {
        "cores": Source(f"Apple Newsroom ({chip.name} announcement): {chip.cores} GPU cores in the top "
                        "configuration", Evidence.OFFICIAL, "none"),
        "clock_hz": chip.clock_source,
        "dram_bandwidth": chip.bandwidth_source,
        **_APPLE_COMMON_SOURCES,
    }
    return GpuModel(
        name=chip.name, family=chip.family, cores=chip.cores, clock_hz=chip.clock_mhz * 1e6,
        alus_per_core=128, dram_bandwidth=chip.bandwidth_gbs * 1e9,
        memory=MemoryModel(segment_bytes=128, banks=32, bank_width=4),
        max_threads_per_threadgroup=1024, max_threadgroup_memory=32 * KIB,
        threadgroup_memory_per_core=60 * KIB, threadgroup_memory_reserved=0, threadgroup_memory_granule=16,
        max_simdgroups_per_core=96, max_threadgroups_per_core=None, saturating_simdgroups_per_core=24,
        threadgroup_wavefronts_per_cycle=0.5, op_rates=APPLE_OP_RATES, memory_efficiency=0.8,
        alu_efficiency=0.9, launch_overhead=10e-6, register_file_per_core=208 * KIB,
        dynamic_occupancy=chip.dynamic, barrier_cycles=80, sources=MappingProxyType(sources))


_M1_CLOCK = Source(f"{_TURNER} and philipturner/applegpuinfo: 1278 MHz (M1), 1296 MHz (Pro, Max, Ultra)",
                   Evidence.MEASURED, "+-1%")
_M2_CLOCK = Source(f"{_TURNER}, applegpuinfo: 1398 MHz; Apple's 27.2 TFLOPS for the 76-core M2 Ultra "
                   "implies the same", Evidence.MEASURED, "+-1%")
_M3_CLOCK = Source("philipturner/applegpuinfo heuristics for M3 (2024-03): 1380 MHz; no official figure",
                   Evidence.ASSUMED, "+-5%")
_M4_CLOCK = Source("Howard Oakley, Eclectic Light Co. (2025-01-22): an M4 Pro GPU at its maximum 1578 MHz "
                   "(powermetrics)", Evidence.MEASURED, "+-1% M4 Pro, +-7% M4 and M4 Max")


def _bandwidth(figure: str) -> Source:
    return Source(f"Apple's specifications ({figure}), via the Newsroom announcements and press reports",
                  Evidence.OFFICIAL, "peak figure; a kernel reaches a fraction (memory_efficiency)")


_CHIPS = [
    _AppleChip("M1", "Apple7", 8, 1278, 68.25, _M1_CLOCK, _bandwidth("68.25 GB/s, LPDDR4X-4266 128-bit"), False),
    _AppleChip("M1 Pro", "Apple7", 16, 1296, 200, _M1_CLOCK, _bandwidth("200 GB/s"), False),
    _AppleChip("M1 Max", "Apple7", 32, 1296, 400, _M1_CLOCK, _bandwidth("400 GB/s"), False),
    _AppleChip("M1 Ultra", "Apple7", 64, 1296, 800, _M1_CLOCK, _bandwidth("800 GB/s"), False),
    _AppleChip("M2", "Apple8", 10, 1398, 100, _M2_CLOCK, _bandwidth("100 GB/s"), False),
    _AppleChip("M2 Pro", "Apple8", 19, 1398, 200, _M2_CLOCK, _bandwidth("200 GB/s"), False),
    _AppleChip("M2 Max", "Apple8", 38, 1398, 400, _M2_CLOCK, _bandwidth("400 GB/s"), False),
    _AppleChip("M2 Ultra", "Apple8", 76, 1398, 800, _M2_CLOCK, _bandwidth("800 GB/s"), False),
    _AppleChip("M3", "Apple9", 10, 1380, 100, _M3_CLOCK, _bandwidth("100 GB/s"), True),
    _AppleChip("M3 Pro", "Apple9", 18, 1380, 150, _M3_CLOCK, _bandwidth("150 GB/s"), True),
    _AppleChip("M3 Max", "Apple9", 40, 1380, 400, _M3_CLOCK, _bandwidth("400 GB/s (40-core)"), True),
    _AppleChip("M3 Ultra", "Apple9", 80, 1380, 819, _M3_CLOCK, _bandwidth("819 GB/s"), True),
    _AppleChip("M4", "Apple9", 10, 1578, 120, _M4_CLOCK, _bandwidth("120 GB/s"), True),
    _AppleChip("M4 Pro", "Apple9", 20, 1578, 273, _M4_CLOCK, _bandwidth("273 GB/s"), True),
    _AppleChip("M4 Max", "Apple9", 40, 1578, 546, _M4_CLOCK, _bandwidth("546 GB/s (40-core)"), True),
]

# ---------------------------------------------------------------------------------------- NVIDIA
_CUDA_GUIDE = "NVIDIA CUDA C++ Programming Guide, compute capability 9.0"
_H100_QUERY = "device query on the lent H100 (benchmarks/gpu_evidence/results_h100.json, 'device')"

#: Results per clock per SM, CUDA C++ Programming Guide, 'Arithmetic Instructions' (CC 9.0).
H100_OP_RATES = MappingProxyType({
    OpKind.FLOAT_ADD: 128.0,
    OpKind.FLOAT_MUL: 128.0,
    OpKind.FLOAT_FMA: 128.0,
    OpKind.FLOAT_OTHER: 64.0,
    OpKind.INT_ADD: 64.0,
    OpKind.INT_MUL: 64.0,
    # A division is a reciprocal on the special-function unit (16) and a few FMAs.
    OpKind.FLOAT_DIV: 1 / (1 / 16 + 3 / 128),
    OpKind.FLOAT_SPECIAL: 16.0,
    OpKind.INT_DIV: 8.0,
    OpKind.SIMD: 32.0,
})

H100 = GpuModel(
    name="H100", family="NVIDIA Hopper (sm_90)", cores=132, clock_hz=1.98e9, alus_per_core=128,
    dram_bandwidth=3.352e12, memory=MemoryModel(segment_bytes=32, banks=32, bank_width=4),
    max_threads_per_threadgroup=1024, max_threadgroup_memory=227 * KIB, threadgroup_memory_per_core=228 * KIB,
    threadgroup_memory_reserved=1 * KIB, threadgroup_memory_granule=128, max_simdgroups_per_core=64,
    max_threadgroups_per_core=32, saturating_simdgroups_per_core=64, threadgroup_wavefronts_per_cycle=1.0,
    op_rates=H100_OP_RATES, memory_efficiency=0.89, alu_efficiency=0.9, launch_overhead=4e-6,
    register_file_per_core=256 * KIB, dynamic_occupancy=False, barrier_cycles=80,
    sources=MappingProxyType({
        "cores": Source(f"132 SMs (H100 SXM5): NVIDIA H100 whitepaper (2022); {_H100_QUERY}", Evidence.OFFICIAL,
                        "none"),
        "clock_hz": Source(f"1980 MHz maximum SM clock: {_H100_QUERY}", Evidence.MEASURED,
                           "sustained clocks under load may be 5-15% lower"),
        "alus_per_core": Source("128 FP32 cores per SM: H100 whitepaper", Evidence.OFFICIAL, "none"),
        "dram_bandwidth": Source(f"3.35 TB/s HBM3 (2 x 2619 MHz x 5120 bit): H100 datasheet; {_H100_QUERY}",
                                 Evidence.OFFICIAL, "none"),
        "memory.segment_bytes": Source(
            "32-byte sectors (L1/L2 lines are 128 B = 4 sectors): CUDA C++ Best Practices Guide, "
            "'Coalesced Access to Global Memory'; Nsight Compute counts sectors per request",
            Evidence.OFFICIAL, "none"),
        "memory.banks": Source(f"32 banks of 4 bytes, broadcast of one word free: {_CUDA_GUIDE}, "
                               "'Shared Memory'", Evidence.OFFICIAL, "none"),
        "memory.simd_width": Source(f"warps of 32 threads: {_CUDA_GUIDE}", Evidence.OFFICIAL, "none"),
        "max_threads_per_threadgroup": Source(f"1024 threads per block: {_H100_QUERY}", Evidence.OFFICIAL, "none"),
        "max_threadgroup_memory": Source("227 KB per block with opt-in (48 KB by default): Hopper Tuning Guide; "
                                         f"{_H100_QUERY}", Evidence.OFFICIAL, "none"),
        "threadgroup_memory_per_core": Source(f"228 KB shared memory per SM: Hopper Tuning Guide; {_H100_QUERY}",
                                              Evidence.OFFICIAL, "none"),
        "threadgroup_memory_reserved": Source(f"1 KB per block reserved by the system (233,472 - 232,448 B in the "
                                              f"{_H100_QUERY})", Evidence.MEASURED, "none"),
        "threadgroup_memory_granule": Source("shared-memory allocation unit of 128 B (CUDA Occupancy Calculator, "
                                             "recalled)", Evidence.OFFICIAL, "not re-read here"),
        "max_simdgroups_per_core": Source(f"64 warps (2048 threads) per SM: {_CUDA_GUIDE}; {_H100_QUERY}",
                                          Evidence.OFFICIAL, "none"),
        "max_threadgroups_per_core": Source(f"32 blocks per SM: {_CUDA_GUIDE}; {_H100_QUERY}", Evidence.OFFICIAL,
                                            "none"),
        "saturating_simdgroups_per_core": Source(
            "assumed 64, all of them: throughput falls in proportion to lost occupancy. No public figure; "
            "this is the simplest assumption and overstates the loss (measured: 1.26x slower at 50% "
            "occupancy, not 2x)", Evidence.ASSUMED, "large"),
        "threadgroup_wavefronts_per_cycle": Source(f"32 banks x 32 bits per clock per SM: {_CUDA_GUIDE}",
                                                   Evidence.OFFICIAL, "none"),
        "op_rates": Source(
            f"{_CUDA_GUIDE}, 'Arithmetic Instructions' throughput table (recalled, not re-read here): FP32 "
            "add/mul/fma 128, int32 add and compare 64, int32 multiply 64, special functions 16, warp "
            "shuffle 32 per clock per SM; division and integer division are assumed routines",
            Evidence.OFFICIAL, "+-0 where official; divisions assumed"),
        "memory_efficiency": Source(
            "0.89: a 1 GiB device-to-device copy reached 2982 GB/s of 3352 on the lent H100 "
            "(results_h100.json, 'ceilings')", Evidence.MEASURED, "+-3%"),
        "alu_efficiency": Source("assumed 0.9 of peak", Evidence.ASSUMED, "+-10%"),
        "launch_overhead": Source("assumed 4 us per launch", Evidence.ASSUMED, "a factor of 2 either way"),
        "register_file_per_core": Source(f"65,536 32-bit registers per SM: {_H100_QUERY}", Evidence.OFFICIAL,
                                         "none; registers per thread are unknown to the simulator"),
        "barrier_cycles": Source(
            "80: the barrier-tree reduction (9 barriers per threadgroup of 256) took 0.2843 ms and the simd_sum one "
            "(1 barrier) 0.2041 ms on the lent H100 (results_h100.json, 'timing': 262,144 threadgroups, 8 resident "
            "per SM, 248 waves); 80.2 us over 8 barriers x 248 waves is 80 cycles at 1.98 GHz", Evidence.MEASURED,
            "an upper bound: the tree also issues twice the instructions (ncu), which the arithmetic ceiling "
            "prices apart"),
    }),
)

#: Every model by name ('M1', 'M3 Max', 'H100', ...).
GPU_MODELS: dict[str, GpuModel] = {m.name: m for m in (*map(_apple, _CHIPS), H100)}

#: The model a run is priced on unless another is named: the first Apple GPU family, whose
#: occupancy rules are static (on M3 and M4 Dynamic Caching makes them soft).
DEFAULT_GPU = GPU_MODELS["M1"]

#: Apple's banks as a once-published, later withdrawn microbenchmark figure had them.
APPLE_16_BANKS = MemoryModel(segment_bytes=128, banks=16, bank_width=4)


def gpu_model(which: GpuModel | str | None) -> GpuModel:
    """A model by name (case and spaces ignored), the model itself, or the default for None."""
    if which is None:
        return DEFAULT_GPU
    if isinstance(which, GpuModel):
        return which
    key = "".join(str(which).lower().split())
    for name, model in GPU_MODELS.items():
        if "".join(name.lower().split()) == key:
            return model
    raise ArgumentError(f"no GPU model named {which!r}; known: {', '.join(GPU_MODELS)}")
