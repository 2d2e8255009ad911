"""The cost profile of a run: what a GPU would spend on it, per source line and per kernel.

A GPU runs threads in SIMD-groups of 32 lanes that execute one instruction at a time. The
simulator runs every thread in lock-step and sees each lane's mask and addresses, so it can
count what decides a kernel's speed on real hardware:

* **SIMD efficiency**: for every statement a SIMD-group executes, the fraction of its 32 lanes
  that are active. A SIMD-group with no active lane skips the statement (GPUs jump over such
  blocks); one with a single active lane pays as much as one with 32;
* **device-memory transactions**: for every SIMD-group access to a device buffer, the distinct
  aligned segments its active lanes touch (``MemoryModel.segment_bytes``: 128 bytes on Apple GPUs,
  32 on NVIDIA's). Thirty-two neighbouring floats fill one 128-byte segment; thirty-two floats a
  row apart touch thirty-two. Bytes requested by the lanes against bytes moved in segments;
* **threadgroup-memory bank conflicts**: threadgroup memory is spread over banks (``banks`` of
  ``bank_width`` bytes, word ``k`` in bank ``k % banks``). A SIMD-group's access takes as many
  passes (*wavefronts*) as the largest number of distinct words it addresses in one bank; lanes
  reading one word share it (a broadcast). Accesses wider than 4 bytes are served in phases of
  ``banks x bank_width`` bytes (8-byte accesses by half SIMD-groups, 16-byte by quarters), as
  NVIDIA documents. A conflict is a wavefront beyond the minimum;
* barriers executed (priced as a wait each), arithmetic by kind (``counting.op_kinds.OpKind``), unique bytes read and written;
* occupancy from the threadgroup size and threadgroup memory, and a roofline estimate of the
  time on a GPU model, naming the bound (``roofline``).

It is a model: the parameters of Apple GPUs that it needs are partly unknown
(``gpu_models``), compilers merge and remove accesses, and caches absorb traffic the counts
charge in full. ``benchmarks/bench_cost_model.py`` compares it with an NVIDIA H100.

The recorder is attached only when a profile is asked for (``simulate(..., cost=True)``), and
the program then runs a separately compiled, instrumented copy of the kernel; runs without it
pay nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..counting.access_kind import AccessKind
from ..counting.counters import Counted
from ..counting.op_kinds import OpKind
from ..executor.codegen.masks import Mask
from ..executor.memory import Memory
from ..executor.runtime import Ctx
from ..lang.errors import Pos
from ..lang.types import AddressSpace
from ..thread_grid import Lanes
from .gpu_models import GpuModel, MemoryModel
from .roofline import REGISTERS_UNKNOWN, Occupancy, TimeEstimate, Workload, estimate_time, occupancy

#: Where a line of code is: (file, line), file being 'source', 'header' or the MLX utilities.
LineKey = tuple[str, int]

MODEL_NOTE = ("This is a model, not a measurement: segments and bank conflicts are counted per SIMD-group "
              "from the simulator's addresses with the parameters of the GPU model; caches absorb part "
              "of the extra traffic on real GPUs; the Metal compiler may merge, vectorise or remove "
              "accesses; Apple's threadgroup-memory banks and partial-line transfers are not public. Arguments in "
              "the constant address space (scalars, inputs under 8 elements) are left to the constant cache "
              "and not counted. "
              "Barriers are priced as a fixed wait each (an assumption for Apple GPUs); atomics are counted, not "
              "priced. " + REGISTERS_UNKNOWN[0].upper() + REGISTERS_UNKNOWN[1:] + ".")


# ============================================================================ per-line figures
@dataclass(frozen=True)
class DeviceTraffic:
    """Device-memory accesses of one kind (loads, stores or atomics)."""

    requests: int = 0  # SIMD-group accesses with at least one active lane
    segments: int = 0  # distinct aligned segments those requests touched
    bytes_requested: int = 0  # what the active lanes asked for
    max_segments: int = 0  # the worst single request
    segment_bytes: int = 0

    @property
    def segments_per_request(self) -> float:
        return self.segments / self.requests if self.requests else 0.0

    @property
    def bytes_moved(self) -> int:
        return self.segments * self.segment_bytes

    @property
    def efficiency(self) -> float:
        """Bytes requested over bytes moved (1.0: every byte of every segment was used)."""
        return self.bytes_requested / self.bytes_moved if self.bytes_moved else 1.0

    def __add__(self, o: DeviceTraffic) -> DeviceTraffic:
        return DeviceTraffic(self.requests + o.requests, self.segments + o.segments,
                             self.bytes_requested + o.bytes_requested, max(self.max_segments, o.max_segments),
                             self.segment_bytes or o.segment_bytes)


@dataclass(frozen=True)
class BankTraffic:
    """Threadgroup-memory accesses of one kind."""

    requests: int = 0  # SIMD-group accesses with at least one active lane
    wavefronts: int = 0  # passes over the banks they took
    phases: int = 0  # the fewest passes they could have taken
    max_ways: int = 0  # the worst n-way conflict of a single pass (1: none)

    @property
    def conflicts(self) -> int:
        """Wavefronts beyond the minimum (what Nsight Compute calls bank conflicts)."""
        return self.wavefronts - self.phases

    def __add__(self, o: BankTraffic) -> BankTraffic:
        return BankTraffic(self.requests + o.requests, self.wavefronts + o.wavefronts, self.phases + o.phases,
                           max(self.max_ways, o.max_ways))


@dataclass(frozen=True)
class OpCount:
    """Arithmetic instructions of one kind."""

    instructions: int = 0  # SIMD-group instructions issued
    lane_ops: int = 0  # operations done by active lanes (vector components counted)
    lane_slots: int = 0  # lane-operations issued, idle lanes included

    def __add__(self, o: OpCount) -> OpCount:
        return OpCount(self.instructions + o.instructions, self.lane_ops + o.lane_ops, self.lane_slots + o.lane_slots)


@dataclass(frozen=True)
class LineCost:
    """Everything one line of code cost, summed over the launch."""

    file: str
    line: int
    simd_issues: int = 0  # statements executed by SIMD-groups (a loop's iterations included)
    active_lanes: int = 0  # active lanes summed over those
    loads: DeviceTraffic = DeviceTraffic()
    stores: DeviceTraffic = DeviceTraffic()
    atomics: DeviceTraffic = DeviceTraffic()
    #: The most lanes of one SIMD-group that updated one address in one atomic instruction.
    atomic_contention: int = 0
    tg_loads: BankTraffic = BankTraffic()
    tg_stores: BankTraffic = BankTraffic()
    tg_atomics: BankTraffic = BankTraffic()
    #: Threadgroups that passed a threadgroup barrier here, summed over the barrier's executions.
    barriers: int = 0
    ops: Mapping[OpKind, OpCount] = field(default_factory=dict)

    @property
    def simd_efficiency(self) -> float:
        width = 32
        return self.active_lanes / (width * self.simd_issues) if self.simd_issues else 1.0

    @property
    def flops(self) -> int:
        return sum(c.lane_ops * k.flops for k, c in self.ops.items())

    @property
    def device(self) -> DeviceTraffic:
        return self.loads + self.stores + self.atomics

    @property
    def threadgroup(self) -> BankTraffic:
        return self.tg_loads + self.tg_stores + self.tg_atomics

    def __add__(self, o: LineCost) -> LineCost:
        ops = dict(self.ops)
        for k, c in o.ops.items():
            ops[k] = ops.get(k, OpCount()) + c
        return LineCost(self.file, self.line, self.simd_issues + o.simd_issues, self.active_lanes + o.active_lanes,
                        self.loads + o.loads, self.stores + o.stores, self.atomics + o.atomics,
                        max(self.atomic_contention, o.atomic_contention), self.tg_loads + o.tg_loads,
                        self.tg_stores + o.tg_stores, self.tg_atomics + o.tg_atomics, self.barriers + o.barriers, ops)


# ============================================================================ the figures budgets use
@dataclass(frozen=True)
class WorstAccess:
    """The worst value of a figure over a run, and the source line it happened on."""

    value: float
    line: int | None = None


@dataclass(frozen=True)
class CostFigures:
    """The handful of figures a puzzle's budget can limit, from one run."""

    load_segments: WorstAccess  # segments per SIMD-group device load, worst request
    store_segments: WorstAccess  # segments per SIMD-group device store, worst request
    bank_conflict: WorstAccess  # n-way conflict of the worst threadgroup-memory pass (1: none)
    active_lanes: int  # lanes active in the statements SIMD-groups executed
    issued_lanes: int  # 32 per statement a SIMD-group executed
    reads_per_element: float  # device elements loaded over distinct device elements loaded
    occupancy: float  # resident SIMD-groups over the most a core holds
    occupancy_limit: str
    barriers: int  # threadgroup barriers one threadgroup passes (the most of any threadgroup)

    @property
    def simd_efficiency(self) -> float:
        """Active lanes over issued lanes (over every run these figures sum up)."""
        return self.active_lanes / self.issued_lanes if self.issued_lanes else 1.0


def worst_figures(figures: Sequence[CostFigures]) -> CostFigures | None:
    """Several runs' figures as one, for a verdict over several tests: the worst of each (most
    segments, conflicts, reads and barriers, least occupancy), except SIMD efficiency, which is
    over all the runs' statements together (so a tiny test's idle lanes weigh what they cost)."""
    if not figures:
        return None

    def most(get: Any) -> WorstAccess:
        return max((get(f) for f in figures), key=lambda w: w.value)

    least_occupied = min(figures, key=lambda f: f.occupancy)
    return CostFigures(
        load_segments=most(lambda f: f.load_segments), store_segments=most(lambda f: f.store_segments),
        bank_conflict=most(lambda f: f.bank_conflict), active_lanes=sum(f.active_lanes for f in figures),
        issued_lanes=sum(f.issued_lanes for f in figures),
        reads_per_element=max(f.reads_per_element for f in figures), occupancy=least_occupied.occupancy,
        occupancy_limit=least_occupied.occupancy_limit, barriers=max(f.barriers for f in figures))


# ============================================================================ the profile
@dataclass(frozen=True)
class CostProfile:
    """The cost profile of one run on one GPU model (``RunResult.cost``).

    ``lines`` holds each source line's figures (keyed by (file, line)); ``kernel`` their sum;
    ``occupancy`` and ``estimate`` the launch's occupancy and roofline time. ``text()`` is the
    report a learner reads; it says what the model assumes.
    """

    gpu: GpuModel
    lines: Mapping[LineKey, LineCost]
    kernel: LineCost
    occupancy: Occupancy
    estimate: TimeEstimate
    workload: Workload
    threadgroups: int
    threads: int
    #: Distinct device bytes read and written (each counted once however often it was touched).
    unique_bytes_read: int
    unique_bytes_written: int
    #: Threadgroup barriers passed by the threadgroup that passed the most.
    barriers_per_threadgroup: int
    source_lines: Sequence[str] = ()
    caveats: str = MODEL_NOTE
    #: Where each threadgroup array lies in threadgroup memory: (first byte, element size).
    threadgroup_layout: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    #: The element size of each device buffer the kernel accessed, bytes.
    item_sizes: Mapping[str, int] = field(default_factory=dict)

    @property
    def reads_per_element(self) -> float:
        """How many times each device element read was read, on average (1.0: once)."""
        return self.kernel.loads.bytes_requested / self.unique_bytes_read if self.unique_bytes_read else 0.0

    def estimate_on(self, gpu: GpuModel, *, whole_gpu: bool = False) -> TimeEstimate:
        """The roofline time on another GPU model with the same segments and banks (the counts
        depend on those; a model with others needs a new run)."""
        if gpu.memory != self.gpu.memory:
            raise ValueError(f"this profile counted {self.gpu.memory}; {gpu.name} counts {gpu.memory}: "
                             "run the kernel again with cost=that model")
        return estimate_time(self.workload, gpu, whole_gpu=whole_gpu)

    def figures(self) -> CostFigures:
        def worst(get: Any) -> WorstAccess:
            best = WorstAccess(0)
            for (file, line), c in self.lines.items():
                v = get(c)
                if v > best.value:
                    best = WorstAccess(v, line if file == "source" else None)
            return best

        return CostFigures(
            load_segments=worst(lambda c: c.loads.max_segments),
            store_segments=worst(lambda c: c.stores.max_segments),
            bank_conflict=worst(lambda c: c.threadgroup.max_ways),
            active_lanes=self.kernel.active_lanes,
            issued_lanes=32 * self.kernel.simd_issues,
            reads_per_element=self.reads_per_element,
            occupancy=self.occupancy.fraction,
            occupancy_limit=str(self.occupancy.limited_by),
            barriers=self.barriers_per_threadgroup,
        )

    def text(self, max_lines: int = 40) -> str:
        """The profile as a learner reads it: per line, then the kernel, then what it assumes."""
        k = self.kernel
        m = self.gpu.memory
        rows = [("line", "code", "SIMD eff", "load seg/SG", "store seg/SG", "bank ways", "barriers", "ops")]
        for (file, line), c in list(self.lines.items())[:max_lines]:
            code = ""
            if file == "source" and 0 < line <= len(self.source_lines):
                code = self.source_lines[line - 1].strip()
            code = code if len(code) <= 38 else code[:37] + "\u2026"
            rows.append((str(line) if file == "source" else f"{file}:{line}", code,
                         f"{c.simd_efficiency:.0%}" if c.simd_issues else "",
                         _per(c.loads), _per(c.stores),
                         f"{c.threadgroup.max_ways}-way" if c.threadgroup.requests else "",
                         str(c.barriers) if c.barriers else "",
                         _ops_text(c.ops)))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        table = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
        dev = k.device
        out = [
            f"Cost profile on {self.gpu.name} (a model; segments of {m.segment_bytes} B, "
            f"{m.banks} banks x {m.bank_width} B):",
            *table,
            "",
            f"SIMD efficiency: {k.simd_efficiency:.0%} of issued lanes were active.",
            f"Device memory: {k.loads.requests} SIMD-group loads touching {k.loads.segments} segments "
            f"({k.loads.segments_per_request:.1f} per load), {k.stores.requests} stores touching "
            f"{k.stores.segments} ({k.stores.segments_per_request:.1f} per store); "
            f"{_bytes(dev.bytes_requested)} requested, {_bytes(dev.bytes_moved)} moved "
            f"({dev.efficiency:.0%} used); {_bytes(self.unique_bytes_read)} distinct read "
            f"({self.reads_per_element:.2g} reads per element), {_bytes(self.unique_bytes_written)} written.",
            f"Threadgroup memory: {k.threadgroup.requests} SIMD-group accesses in {k.threadgroup.wavefronts} "
            f"wavefronts ({k.threadgroup.conflicts} from bank conflicts; worst {k.threadgroup.max_ways}-way).",
            f"Barriers: {self.barriers_per_threadgroup} per threadgroup.",
            f"Arithmetic: {_ops_text(k.ops) or 'none'}; {k.flops} FLOP.",
            f"Occupancy: {self.occupancy.describe()}.",
            f"Time: {self.estimate.describe()}.",
            "",
            "Model: " + self.caveats,
        ]
        if self.gpu.dynamic_occupancy:
            out.append(f"On {self.gpu.family} GPUs (M3, M4) Dynamic Caching allocates registers and threadgroup "
                       "memory at run time, so the occupancy limits above are soft.")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.text()


def _per(t: DeviceTraffic) -> str:
    if not t.requests:
        return ""
    return f"{t.segments_per_request:.3g} (max {t.max_segments})"


def _ops_text(ops: Mapping[OpKind, OpCount]) -> str:
    return ", ".join(f"{c.lane_ops} {k}" for k, c in ops.items() if c.lane_ops)


def _bytes(n: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


# ============================================================================ one SIMD-group's access
def segments_touched(elements: np.ndarray, item_size: int, segment_bytes: int) -> int:
    """Distinct segments one SIMD-group touches reading or writing these elements of a buffer."""
    return int(np.unique(np.asarray(elements) * item_size // segment_bytes).size)


def conflict_ways(words: np.ndarray, simd_lanes: np.ndarray, access_bytes: int, memory: MemoryModel) -> int:
    """The worst n-way bank conflict of one SIMD-group's threadgroup access: ``words`` the
    bank-width words touched, ``simd_lanes`` the lane (0-31) touching each, ``access_bytes`` what
    one lane accesses (wide accesses are served in phases, as ``CostRecorder`` counts them)."""
    words = np.asarray(words)
    simd_lanes = np.asarray(simd_lanes)
    per_phase = min(memory.simd_width, max(1, memory.banks * memory.bank_width // max(access_bytes, memory.bank_width)))
    worst = 0
    for phase in np.unique(simd_lanes // per_phase):
        distinct = np.unique(words[simd_lanes // per_phase == phase])
        worst = max(worst, int(np.max(np.bincount(distinct % memory.banks))))
    return worst


# ============================================================================ the recorder
def _distinct(keys: np.ndarray, bound: int) -> np.ndarray:
    """The distinct values of ``keys`` (all in ``[0, bound)``), sorted. Keys built from lanes in
    order are usually sorted already (lanes are numbered SIMD-group by SIMD-group, and most
    accesses go up with the lane): then a difference finds them in linear time. Otherwise a
    presence table does, when ``bound`` is small enough, and a sort when it is not."""
    if keys.size < 2:
        return keys
    step = np.diff(keys)
    if (step >= 0).all():
        return keys[np.r_[True, step != 0]]
    if bound <= max(1 << 16, 8 * keys.size):
        present = np.zeros(bound, dtype=bool)
        present[keys] = True
        return np.flatnonzero(present)
    return np.unique(keys)


def _runs(sorted_ids: np.ndarray) -> int:
    """How many distinct values a sorted array holds (SIMD-groups among lanes in order)."""
    return int(np.count_nonzero(np.diff(sorted_ids))) + 1 if sorted_ids.size else 0


class _Tally:
    """A line's running totals while the kernel runs (mutable; frozen into a LineCost after)."""

    __slots__ = ("simd_issues", "active_lanes", "device", "contention", "banks", "barriers", "ops")

    def __init__(self) -> None:
        self.simd_issues = 0
        self.active_lanes = 0
        self.device: dict[AccessKind, list[int]] = {}  # requests, segments, bytes, max segments
        self.contention = 0
        self.banks: dict[AccessKind, list[int]] = {}  # requests, wavefronts, phases, max ways
        self.barriers = 0
        self.ops: dict[OpKind, list[int]] = {}  # instructions, lane ops, lane slots


class CostRecorder:
    """Watches a run for the cost profile: the runtime calls ``access`` for every memory access,
    the instrumented code ``statement`` for every statement and ``op`` for every arithmetic
    instruction, and barriers arrive through the context's barrier hooks."""

    def __init__(self, lanes: Lanes, gpu: GpuModel) -> None:
        self.lanes = lanes
        self.gpu = gpu
        self.memory = gpu.memory
        self.width = gpu.memory.simd_width
        self.simd = lanes.simd_global
        self.n_simds = lanes.n_simds
        self.tallies: dict[LineKey, _Tally] = {}
        self._all = self._stats_of(None)
        self.all_lanes = np.arange(lanes.n)
        self._last_mask: np.ndarray | None = None
        self._last_stats = (0, 0)
        self.tg_base: dict[str, int] = {}  # byte offset of each threadgroup array
        self.tg_item: dict[str, int] = {}
        self.tg_bytes = 0
        #: Device elements touched, per (buffer, kind of access), and each buffer's element size.
        self.touched: dict[tuple[str, AccessKind], np.ndarray] = {}
        self.item_size: dict[str, int] = {}
        self.barriers_per_group = np.zeros(lanes.n_groups, dtype=np.int64)

    # ------------------------------------------------------------------ setup
    def attach(self, ctx: Ctx) -> None:
        """Start watching a launch (after its threadgroup arrays are allocated)."""
        ctx.cost = self
        ctx.barrier_hooks.append(self.barrier)
        offset = 0
        for mem in ctx.memories.values():
            if mem.space == AddressSpace.THREADGROUP:
                # Arrays are laid out in declaration order, each aligned to 16 bytes.
                offset = -(-offset // 16) * 16
                self.tg_base[mem.name] = offset
                self.tg_item[mem.name] = mem.scalar.size
                offset += mem.region_size * mem.scalar.size
        self.tg_bytes = offset

    def _tally(self, pos: Pos) -> _Tally:
        key = (pos.file, pos.line)
        t = self.tallies.get(key)
        if t is None:
            t = self.tallies[key] = _Tally()
        return t

    def _stats_of(self, m: Mask) -> tuple[int, int]:
        """(SIMD-groups with an active lane, active lanes) for a mask."""
        if m is None:
            return self.n_simds, self.lanes.n
        counts = np.bincount(self.simd[m], minlength=self.n_simds)
        return int(np.count_nonzero(counts)), int(counts.sum())

    def _stats(self, m: Mask) -> tuple[int, int]:
        if m is None:
            return self._all
        if m is not self._last_mask:  # the statements of one mask share it: count it once
            self._last_mask = m
            self._last_stats = self._stats_of(m)
        return self._last_stats

    # ------------------------------------------------------------ statements
    def statement(self, pos: Pos, m: Mask) -> None:
        issued, active = self._stats(m)
        t = self._tally(pos)
        t.simd_issues += issued
        t.active_lanes += active

    def op(self, kind: OpKind, per_lane: int, m: Mask, pos: Pos) -> None:
        issued, active = self._stats(m)
        if not issued:
            return
        acc = self._tally(pos).ops.setdefault(kind, [0, 0, 0])
        acc[0] += issued * per_lane
        acc[1] += active * per_lane
        acc[2] += issued * self.width * per_lane

    def barrier(self, ctx: Ctx, m: Mask, pos: Pos) -> None:
        groups = np.arange(self.lanes.n_groups) if m is None else np.unique(self.lanes.group[m])
        self.barriers_per_group[groups] += 1
        self._tally(pos).barriers += len(groups)

    # -------------------------------------------------------------- accesses
    def access(self, kind: AccessKind, mem: Memory, flat: Any, m: Mask, width: int, unit: int, base: Any, pos: Pos) -> None:
        """One access by every active lane: ``flat`` the first element each lane touches, in
        elements of ``unit`` bytes (the view the kernel accesses memory through, which may
        reinterpret it), ``width`` the elements each touches, ``base`` each lane's region start in
        the same elements (threadgroup memory; None for one shared region)."""
        if mem.counted is None or mem.space == AddressSpace.CONSTANT:
            return  # free memory (thread-private, shapes, program constants) and the constant cache
        lanes = np.flatnonzero(m) if m is not None else self.all_lanes
        if lanes.size == 0:
            return
        first = np.broadcast_to(np.asarray(flat, dtype=np.int64), (self.lanes.n,))[lanes]
        if mem.counted == Counted.SHARED:
            local = first - base[lanes] if base is not None else first
            self._banks(kind, self.tg_base.get(mem.name, 0) + local * unit, width * unit, lanes, pos)
        else:
            self._segments(kind, mem, first, width, unit, lanes, pos)

    def _segments(self, kind: AccessKind, mem: Memory, first: np.ndarray, width: int, size: int,
                  lanes: np.ndarray, pos: Pos) -> None:
        seg = self.memory.segment_bytes
        start = first * size
        lo = start // seg
        hi = (start + width * size - 1) // seg
        simd = self.simd[lanes]
        per_buffer = mem.raw.size // seg + 2
        span = int((hi - lo).max()) + 1
        keys = simd * per_buffer + lo
        if span > 1:  # a lane's access crosses segments: it touches each of them
            extra = [simd * per_buffer + np.minimum(lo + j, hi) for j in range(1, span)]
            keys = np.concatenate([keys, *extra])
        touched = _distinct(keys, (int(simd[-1]) + 1) * per_buffer)
        per_simd = np.bincount(touched // per_buffer, minlength=self.n_simds)
        acc = self._tally(pos).device.setdefault(kind, [0, 0, 0, 0])
        acc[0] += _runs(simd)
        acc[1] += int(touched.size)
        acc[2] += int(lanes.size * width * size)
        acc[3] = max(acc[3], int(np.max(per_simd)))
        # Bytes moved are counted in the buffer's own elements (a view may be narrower or wider).
        native = mem.unit
        mark = self.touched.get((mem.name, kind))
        if mark is None:
            mark = self.touched[(mem.name, kind)] = np.zeros(mem.raw.size // native, dtype=bool)
            self.item_size[mem.name] = native
        lo_el = start // native
        hi_el = (start + width * size - 1) // native
        for j in range(int((hi_el - lo_el).max()) + 1):
            mark[np.minimum(lo_el + j, hi_el)] = True
        if kind == AccessKind.ATOMIC:
            _, counts = np.unique(simd * mem.raw.size + start, return_counts=True)
            t = self._tally(pos)
            t.contention = max(t.contention, int(np.max(counts)))

    def _banks(self, kind: AccessKind, start: np.ndarray, nbytes: int, lanes: np.ndarray, pos: Pos) -> None:
        mm = self.memory
        word = mm.bank_width
        lanes_per_phase = min(self.width, max(1, mm.banks * word // max(nbytes, word)))
        phases_per_simd = -(-self.width // lanes_per_phase)
        every = lanes is self.all_lanes
        simd = self.simd if every else self.simd[lanes]
        if phases_per_simd == 1:
            group = simd
        else:
            lane = self.lanes.simd_lane if every else self.lanes.simd_lane[lanes]
            group = simd * phases_per_simd + lane // lanes_per_phase
        first_word = start // word
        n_words = 1 if nbytes <= word else int(((start + nbytes - 1) // word - first_word).max()) + 1
        if n_words > 1:  # lanes whose access ends before word j touch only up to their last word
            last_word = (start + nbytes - 1) // word
            words = np.concatenate([np.minimum(first_word + j, last_word) for j in range(n_words)])
            groups = np.tile(group, n_words)
        else:
            words, groups = first_word, group
        # Words of threadgroup memory: every array lies within the first tg_bytes.
        span = -(-max(self.tg_bytes, int(words.max()) * word + word) // word)
        pairs = _distinct(groups * span + words, (int(group[-1]) + 1) * span)  # distinct (pass, word)
        per_bank = np.bincount((pairs // span) * mm.banks + (pairs % span) % mm.banks)
        per_bank = np.pad(per_bank, (0, -per_bank.size % mm.banks))
        ways = per_bank.reshape(-1, mm.banks).max(axis=1)
        ways = ways[ways > 0]
        acc = self._tally(pos).banks.setdefault(kind, [0, 0, 0, 0])
        acc[0] += _runs(simd)
        acc[1] += int(ways.sum())
        acc[2] += int(ways.size)
        acc[3] = max(acc[3], int(np.max(ways)))

    # ---------------------------------------------------------------- result
    def profile(self, threads_per_threadgroup: int, source: str = "") -> CostProfile:
        """Freeze the counts into the run's profile."""
        seg = self.memory.segment_bytes
        lines: dict[LineKey, LineCost] = {}
        for key in sorted(self.tallies, key=lambda k: (k[0] != "source", k)):
            t = self.tallies[key]

            def dev(kind: AccessKind, t: Any = t) -> DeviceTraffic:
                r = t.device.get(kind)
                return DeviceTraffic(r[0], r[1], r[2], r[3], seg) if r else DeviceTraffic(segment_bytes=seg)

            def tg(kind: AccessKind, t: Any = t) -> BankTraffic:
                r = t.banks.get(kind)
                return BankTraffic(*r) if r else BankTraffic()

            lines[key] = LineCost(
                key[0], key[1], t.simd_issues, t.active_lanes, dev(AccessKind.READ), dev(AccessKind.WRITE),
                dev(AccessKind.ATOMIC), t.contention, tg(AccessKind.READ), tg(AccessKind.WRITE),
                tg(AccessKind.ATOMIC), t.barriers, {k: OpCount(*v) for k, v in t.ops.items()})
        kernel = LineCost("kernel", 0, loads=DeviceTraffic(segment_bytes=seg), stores=DeviceTraffic(segment_bytes=seg),
                          atomics=DeviceTraffic(segment_bytes=seg))
        for c in lines.values():
            kernel = kernel + c
        read = self._unique_bytes(AccessKind.READ)
        written = self._unique_bytes(AccessKind.WRITE) + self._unique_bytes(AccessKind.ATOMIC)
        work = Workload(
            threads_per_threadgroup=threads_per_threadgroup, threadgroups=self.lanes.n_groups,
            threadgroup_memory=self.tg_bytes, bytes_moved=kernel.device.bytes_moved,
            wavefronts=kernel.threadgroup.wavefronts,
            lane_slots={k: c.lane_slots for k, c in kernel.ops.items()},
            barriers_per_threadgroup=int(np.max(self.barriers_per_group, initial=0)))
        return CostProfile(
            gpu=self.gpu, lines=lines, kernel=kernel,
            occupancy=occupancy(self.gpu, threads_per_threadgroup, self.tg_bytes),
            estimate=estimate_time(work, self.gpu), workload=work, threadgroups=self.lanes.n_groups,
            threads=self.lanes.n, unique_bytes_read=read, unique_bytes_written=written,
            barriers_per_threadgroup=int(np.max(self.barriers_per_group, initial=0)),
            source_lines=tuple(source.split("\n")),
            threadgroup_layout={k: (v, self.tg_item[k]) for k, v in self.tg_base.items()},
            item_sizes=dict(self.item_size))

    def _unique_bytes(self, kind: AccessKind) -> int:
        return sum(int(mark.sum()) * self.item_size[name] for (name, k), mark in self.touched.items() if k == kind)
