"""Random multi-thread MSL kernels whose simulator output is the one right answer on any GPU.

``gen.py`` makes one-thread-at-a-time kernels for the g++ comparison; this module makes kernels
whose threads talk to each other: threadgroup memory and barriers, SIMD-group reductions, scans,
shuffles and ballots, ``simdgroup_barrier`` exchanges, atomics on device and threadgroup memory,
``half`` arithmetic, 2-D grids, template constants, and grids that are not a multiple of the
threadgroup (partial threadgroups, partial SIMD-groups). The scalar work between the exchanges is
``gen.BodyGenerator``'s (every C type, guarded divisions, masked shifts, range-tested casts), so
the statements are as well-defined as in the g++ test.

Race-free and deterministic by construction, so that the simulator's output *is* what a GPU must
produce (``benchmarks/cuda_oracle.py`` compares the two bit for bit):

* threadgroup memory is used in phases: in a phase each thread writes only its own slots
  (``tgN[lid * K + j]``) of arrays nobody reads in that phase, and reads only arrays completed
  before the last ``threadgroup_barrier``, at slots of threads that exist: indices are reduced
  modulo ``live``, the threadgroup's actual size (``threads_per_threadgroup``, partial at the
  grid's edge), so no thread reads a slot of a thread that never ran;
* ``simdgroup_barrier`` exchanges use a fresh array each, and read only lanes of the thread's own
  SIMD-group that exist (modulo ``simd_live``);
* SIMD-group functions are called at the top level of the body (every live thread takes part);
  floating-point sums, scans, minima and maxima only see small whole numbers, exact in any order
  of evaluation (a GPU's tree and the simulator's sequence agree), and never -0.0 or NaN; a
  shuffle's result is used only where the lane it reads exists;
* atomics never return values that are used (their order is the GPU's choice); each region of the
  device accumulator takes one commutative operation (integer add, min, max, or, and, xor, or a
  float add of whole numbers), and threadgroup counters are read after a barrier;
* every output element is written (per-thread slots by their thread, per-threadgroup slots by its
  thread 0), or the output is filled with ``init_value`` first (the accumulators).

``generate(seed)`` is reproducible: the same seed gives the same kernel and inputs.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from metal_puzzles.compat import StrEnum

from .gen import (
    FLOAT,
    INT,
    INT_TYPES,
    UINT,
    ULONG,
    VALUE_TYPES,
    BodyGenerator,
    Buffer,
    CType,
    Var,
    float_literal,
    int_literal,
    make_structs,
    random_values,
)


class Feature(StrEnum):
    """What a generated kernel exercises (for coverage tests and the oracle's report)."""

    THREADGROUP_MEMORY = "threadgroup memory"
    BARRIER = "threadgroup_barrier"
    SIMD_REDUCTION = "SIMD reduction"
    SIMD_SCAN = "SIMD prefix sum"
    SIMD_SHUFFLE = "SIMD shuffle"
    SIMD_BALLOT = "SIMD ballot/vote"
    SIMDGROUP_BARRIER = "simdgroup_barrier"
    QUAD = "quad-group function"
    VECTORS = "vector types"
    DEVICE_ATOMIC = "device atomic"
    THREADGROUP_ATOMIC = "threadgroup atomic"
    ATOMIC_OUTPUTS = "atomic_outputs"
    HALF = "half"
    PARTIAL_THREADGROUP = "partial threadgroup"
    PARTIAL_SIMDGROUP = "partial SIMD-group"
    TWO_D = "2-D grid"
    TEMPLATE = "template constant"
    STRUCTS = "structs in the header"


HALF_DTYPE = "float16"
#: Scalar types a threadgroup array may hold (besides half).
TG_TYPES = (*INT_TYPES, FLOAT)
#: Accumulator regions: the atomic operation each region of the device accumulator takes.
INT_ATOMIC_OPS = ("add", "min", "max", "or", "and", "xor")
ACC_REGION = 8  # elements per region


@dataclass
class OutputSpec:
    """One output of a generated kernel: name, NumPy dtype and shape."""

    name: str
    dtype: str
    shape: tuple[int, ...]


@dataclass
class MultiThreadKernel:
    """A generated kernel with everything needed to launch it as ``mx.fast.metal_kernel`` would."""

    name: str
    seed: int
    source: str
    header: str
    input_names: list[str]
    inputs: list[np.ndarray]
    outputs: list[OutputSpec]
    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int]
    template: list[tuple[str, Any]] = field(default_factory=list)
    #: None: every element is written by the kernel; a number: outputs are filled with it first.
    init_value: float | None = None
    atomic_outputs: bool = False
    features: frozenset[Feature] = frozenset()

    @property
    def output_names(self) -> list[str]:
        return [o.name for o in self.outputs]

    @property
    def output_shapes(self) -> list[tuple[int, ...]]:
        return [o.shape for o in self.outputs]

    @property
    def output_dtypes(self) -> list[str]:
        return [o.dtype for o in self.outputs]

    @property
    def n_threads(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def describe(self) -> str:
        """A header line: name, seed, geometry and features."""
        feats = ", ".join(sorted(f.value for f in self.features)) or "none"
        return (f"kernel {self.name} (seed {self.seed}; grid {self.grid}, threadgroup {self.threadgroup}; "
                f"{feats})")

    def listing(self) -> str:
        """The kernel's header and source with line numbers, as a report shows them."""
        lines = [self.describe()]
        if self.header:
            lines += ["  header:", *[f"     | {line}" for line in self.header.splitlines()]]
        lines += ["  source:", *[f"  {i + 1:3d}| {line}" for i, line in enumerate(self.source.splitlines())]]
        return "\n".join(lines)


# ----------------------------------------------------------------------------------------
# Geometry


@dataclass(frozen=True)
class Geometry:
    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int]

    @property
    def two_d(self) -> bool:
        return self.grid[1] > 1 or self.threadgroup[1] > 1

    @property
    def tg_size(self) -> int:
        return self.threadgroup[0] * self.threadgroup[1]

    @property
    def n_groups(self) -> tuple[int, int]:
        return (-(-self.grid[0] // self.threadgroup[0]), -(-self.grid[1] // self.threadgroup[1]))

    @property
    def partial(self) -> bool:
        return self.grid[0] % self.threadgroup[0] != 0 or self.grid[1] % self.threadgroup[1] != 0

    def group_sizes(self) -> list[int]:
        """The actual thread count of every threadgroup."""
        (gx, gy, _), (tx, ty, _) = self.grid, self.threadgroup
        nx, ny = self.n_groups
        return [min(tx, gx - x * tx) * min(ty, gy - y * ty) for y in range(ny) for x in range(nx)]

    @property
    def partial_simd(self) -> bool:
        return any(size % 32 for size in self.group_sizes())


def _geometry(rng: random.Random) -> Geometry:
    """A launch of at least 8 threads: MLX passes a smaller input as a ``constant`` pointer, which
    ``BodyGenerator``'s ``const device T*`` views of the inputs cannot point at."""
    while True:
        geo = _any_geometry(rng)
        if geo.grid[0] * geo.grid[1] >= 8:
            return geo


def _any_geometry(rng: random.Random) -> Geometry:
    if rng.random() < 0.2:
        tx, ty = rng.choice(((8, 4), (16, 2), (16, 4), (32, 2), (8, 8), (32, 4)))
        nx, ny = rng.randint(1, 3), rng.randint(1, 3)
        gx = nx * tx - (rng.randrange(tx) if rng.random() < 0.4 else 0)
        gy = ny * ty - (rng.randrange(ty) if rng.random() < 0.5 else 0)
        return Geometry((gx, gy, 1), (tx, ty, 1))
    tg = rng.choice((32, 64, 64, 128, 256, 48, 96, 40))
    groups = rng.randint(1, 4) if tg <= 128 else rng.randint(1, 2)
    grid = groups * tg
    if rng.random() < 0.55:
        grid -= rng.randint(1, tg - 1)
    return Geometry((grid, 1, 1), (tg, 1, 1))


# ----------------------------------------------------------------------------------------
# The generator


@dataclass
class TgArray:
    """A threadgroup array written one phase at a time, ``K`` slots per thread."""

    name: str
    ctype: CType | None  # None: half
    slots: int
    written_in: int = -1  # the phase that last wrote it (-1: not yet)

    @property
    def type_name(self) -> str:
        return "half" if self.ctype is None else self.ctype.name


class KernelBuilder:
    """Builds one multi-thread kernel: a prologue naming the thread, phases, final stores."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = rng = random.Random(f"msl-mt:{seed}")
        self.data_rng = np.random.default_rng([seed, 0x6D74])
        self.geo = _geometry(rng)
        self.n = self.geo.grid[0] * self.geo.grid[1]
        self.features: set[Feature] = set()
        if self.geo.partial:
            self.features.add(Feature.PARTIAL_THREADGROUP)
        if self.geo.partial_simd:
            self.features.add(Feature.PARTIAL_SIMDGROUP)
        if self.geo.two_d:
            self.features.add(Feature.TWO_D)
        self.inputs = [Buffer(f"in{i}", rng.choice(VALUE_TYPES)) for i in range(rng.randint(1, 3))]
        if rng.random() < 0.25:
            self.inputs.append(Buffer("s0", rng.choice(VALUE_TYPES), scalar=True))
        self.header, structs = make_structs(rng, "m") if rng.random() < 0.15 else ("", [])
        if structs:
            self.features.add(Feature.STRUCTS)
        self.gen = BodyGenerator(rng, self.n, self.inputs, structs)
        self.template: list[tuple[str, Any]] = []
        self.tg_size_text = str(self.geo.tg_size)
        if rng.random() < 0.3:
            self.template = [("TGS", self.geo.tg_size)]
            self.tg_size_text = "TGS"
            self.features.add(Feature.TEMPLATE)
        self.atomic_outputs = rng.random() < 0.12
        # A 2-D threadgroup cut short in x numbers its threads by its partial width, so its
        # SIMD-groups are not CUDA's warps and the translator refuses SIMD-group functions there:
        # most such kernels leave them out, so that the GPU checks the rest of their launch.
        partial_x = self.geo.grid[0] % self.geo.threadgroup[0] != 0
        self.simd_allowed = not (self.geo.two_d and partial_x and rng.random() < 0.7)
        self.decls: list[str] = []  # threadgroup declarations, at the top of the body
        self.arrays: list[TgArray] = []
        self.halves: list[str] = []
        self.phase = 0
        self.read_this_phase: set[str] = set()
        self.acc_ops: list[str] = []
        self.acc_dtype = rng.choice(("int32", "uint32"))
        self.accf_used = False
        self.counter = 0

    # -- small helpers ------------------------------------------------------------------

    def fresh(self, prefix: str) -> str:
        # The underscore keeps these apart from BodyGenerator's names (v1, q2, ...).
        self.counter += 1
        return f"{prefix}_{self.counter}"

    def emit(self, line: str) -> None:
        self.gen.emit(line)

    def local(self, name: str, ctype: CType) -> None:
        """Make a top-level local visible to later expressions and statements (half of them may
        also change it), and stored to an output at the end."""
        self.gen.scopes[0].append(Var(name, ctype, assignable=self.rng.random() < 0.5))

    def int_expr(self, depth: int = 2) -> str:
        return self.gen.expr("int", depth).render()

    def exact_int(self, bits: int = 6) -> str:
        """A small whole number in [-2^(bits-1), 2^(bits-1)) as an int, from any expression."""
        mask = (1 << bits) - 1
        return f"((int)({self.int_expr()}) & {mask}) - {1 << (bits - 1)}"

    def exact_float(self, bits: int = 6) -> str:
        """A whole number as a float: sums of 1024 of them stay exact, and it is never -0.0."""
        return f"float({self.exact_int(bits)})"

    # -- the prologue -------------------------------------------------------------------

    def prologue(self) -> None:
        rng, geo = self.rng, self.geo
        if geo.two_d:
            width = rng.choice((str(geo.grid[0]) + "u", "threads_per_grid.x"))
            self.emit(f"uint tid = thread_position_in_grid.y * {width} + thread_position_in_grid.x;")
            self.emit("uint live = threads_per_threadgroup.x * threads_per_threadgroup.y;")
            groups = rng.choice((f"{geo.n_groups[0]}u", "threadgroups_per_grid.x"))
            self.emit(f"uint tgid = threadgroup_position_in_grid.y * {groups} + threadgroup_position_in_grid.x;")
        else:
            self.emit(rng.choice(("uint tid = thread_position_in_grid.x;", "const uint tid = thread_position_in_grid.x;")))
            self.emit("uint live = threads_per_threadgroup.x;")
            self.emit("uint tgid = threadgroup_position_in_grid.x;")
        if geo.two_d or rng.random() < 0.5:
            self.emit("uint lid = thread_index_in_threadgroup;")
        else:
            self.emit("uint lid = thread_position_in_threadgroup.x;")
        self.emit("uint lane = thread_index_in_simdgroup;")
        self.emit("uint sg = simdgroup_index_in_threadgroup;")
        self.emit("uint simd_live = min(32u, live - sg * 32u);")
        for name in ("lid", "live", "lane", "sg", "simd_live", "tgid"):
            self.gen.scopes[0].append(Var(name, UINT, assignable=False))
        for ctype in rng.sample(VALUE_TYPES, rng.randint(2, 4)):
            self.gen.declare(ctype)

    # -- threadgroup memory ---------------------------------------------------------------

    def new_array(self) -> TgArray:
        rng = self.rng
        ctype: CType | None = None if rng.random() < 0.15 else rng.choice(TG_TYPES)
        if ctype is None:
            self.features.add(Feature.HALF)
        arr = TgArray(self.fresh("tg"), ctype, rng.choice((1, 1, 2)))
        size = self.tg_size_text if arr.slots == 1 else f"{self.tg_size_text} * {arr.slots}"
        self.decls.append(f"threadgroup {arr.type_name} {arr.name}[{size}];")
        self.arrays.append(arr)
        self.features.add(Feature.THREADGROUP_MEMORY)
        return arr

    def value_of(self, ctype: CType | None) -> str:
        """An expression to store into an element of ``ctype`` (None: half) with no UB."""
        if ctype is None:
            return f"half({self.gen.expr('float', 2).render()})"
        return self.gen.value_for(ctype, self.gen.depth()).render()

    def write_phase(self) -> None:
        """Each thread writes its own slots of one array nobody reads in this phase."""
        rng = self.rng
        old = [a for a in self.arrays if a.name not in self.read_this_phase and a.written_in < self.phase]
        arr = rng.choice(old) if old and rng.random() < 0.3 else self.new_array()
        for j in range(arr.slots):
            index = "lid" if arr.slots == 1 else f"lid * {arr.slots}u + {j}"
            self.emit(f"{arr.name}[{index}] = {self.value_of(arr.ctype)};")
        arr.written_in = self.phase

    def barrier(self) -> None:
        flags = self.rng.choice(("mem_flags::mem_threadgroup", "mem_flags::mem_threadgroup",
                                 "mem_flags::mem_device | mem_flags::mem_threadgroup"))
        self.emit(f"threadgroup_barrier({flags});")
        self.features.add(Feature.BARRIER)
        self.phase += 1
        self.read_this_phase = set()

    def live_slot(self, arr: TgArray) -> str:
        """The index of a slot some thread of this threadgroup wrote."""
        rng = self.rng
        form = rng.random()
        if form < 0.3:
            who = f"(lid + {rng.randint(1, 300)}u) % live"
        elif form < 0.5:
            who = "live - 1u - lid"
        elif form < 0.65:
            who = "0u"
        elif form < 0.8:
            who = f"((uint)({self.int_expr(1)})) % live"
        else:
            mask = rng.choice((1, 2, 5, 16, 31, 33))
            who = f"((lid ^ {mask}u) < live ? (lid ^ {mask}u) : lid)"
        if arr.slots == 1:
            return who
        return f"({who}) * {arr.slots}u + {rng.randrange(arr.slots)}u"

    def read_phase(self) -> None:
        """Read another thread's slot, or fold every live slot in a loop, into a new local."""
        rng = self.rng
        ready = [a for a in self.arrays if 0 <= a.written_in < self.phase]
        if not ready:
            return
        arr = rng.choice(ready)
        self.read_this_phase.add(arr.name)
        name = self.fresh("r")
        if arr.ctype is None:  # half: read as float
            self.emit(f"float {name} = float({arr.name}[{self.live_slot(arr)}]);")
            self.local(name, FLOAT)
            return
        if rng.random() < 0.3 and arr.ctype in (INT, UINT, FLOAT):
            k = self.fresh("k")
            step = f"{k} * {arr.slots}u" if arr.slots > 1 else k
            op = "+=" if arr.ctype == FLOAT else rng.choice(("+=", "^=", "|=", "+="))
            self.emit(f"{arr.ctype.name} {name} = 0;")
            self.emit(f"for (uint {k} = 0; {k} < live; {k}++) {name} {op} {arr.name}[{step}];")
        else:
            self.emit(f"{arr.ctype.name} {name} = {arr.name}[{self.live_slot(arr)}];")
        self.local(name, arr.ctype)

    # -- SIMD-groups -----------------------------------------------------------------------

    def simd_op(self) -> None:
        rng = self.rng
        name = self.fresh("q")
        kind = rng.choice(("reduce", "reduce", "scan", "shuffle", "shuffle", "ballot", "exchange", "quad"))
        if kind == "reduce":
            op = rng.choice(("sum", "max", "min", "and", "or", "xor", "product"))
            ctype = rng.choice((INT, UINT, FLOAT)) if op in ("sum", "max", "min", "product") else rng.choice((INT, UINT))
            if op == "product":
                # Products of 32 values overflow: ints wrap (exact), floats get only 1 and -1 and 2.
                arg = (f"float(({self.int_expr(1)}) % 2 == 0 ? 1 : -1)" if ctype == FLOAT
                       else f"({ctype.name})({self.int_expr()})")
            elif ctype == FLOAT:
                arg = self.exact_float(rng.choice((4, 8, 12)))
            else:
                arg = f"({ctype.name})({self.int_expr()})"
            if ctype == FLOAT and op == "sum" and rng.random() < 0.3:
                self.features.add(Feature.HALF)
                self.emit(f"half {name}h = simd_sum(half({self.exact_int(5)}));")
                self.emit(f"float {name} = float({name}h);")
            else:
                self.emit(f"{ctype.name} {name} = simd_{op}({arg});")
            self.local(name, ctype)
            self.features.add(Feature.SIMD_REDUCTION)
        elif kind == "scan":
            which = rng.choice(("inclusive", "exclusive"))
            ctype = rng.choice((INT, UINT, FLOAT))
            arg = self.exact_float(8) if ctype == FLOAT else f"({ctype.name})({self.int_expr()})"
            self.emit(f"{ctype.name} {name} = simd_prefix_{which}_sum({arg});")
            self.local(name, ctype)
            self.features.add(Feature.SIMD_SCAN)
        elif kind == "shuffle":
            self.shuffle(name)
        elif kind == "ballot":
            cond = self.gen.expr("any", 2).render()
            form = rng.random()
            if form < 0.4:
                self.emit(f"ulong {name} = static_cast<ulong>(simd_ballot({cond}));")
                self.local(name, ULONG)
            elif form < 0.5:
                # Every live lane is active here: the mask of the SIMD-group's live lanes.
                self.emit(f"ulong {name} = static_cast<ulong>(simd_active_threads_mask()) ^ "
                          f"(simd_is_first() ? {rng.randint(1, 9)}ul : 0ul);")
                self.local(name, ULONG)
            else:
                fn = rng.choice(("simd_all", "simd_any"))
                self.emit(f"int {name} = {fn}({cond}) ? {rng.randint(1, 99)} : {rng.randint(-9, 0)};")
                self.local(name, INT)
            self.features.add(Feature.SIMD_BALLOT)
        elif kind == "quad":
            self.quad(name)
        else:
            self.exchange(name)

    def quad(self, name: str) -> None:
        """Quad-group functions (4 consecutive threads of a threadgroup; the last quad of a
        partial threadgroup may be partial): a reduction, or a shuffle kept where its lane exists."""
        rng = self.rng
        ctype = rng.choice((INT, UINT))
        value = f"({ctype.name})({self.int_expr()})"
        if rng.random() < 0.5:
            op = rng.choice(("sum", "max", "min", "or", "xor"))
            self.emit(f"{ctype.name} {name} = quad_{op}({value});")
        else:
            src = self.fresh("x")
            self.emit(f"{ctype.name} {src} = {value};")
            form = rng.choice(("xor", "down", "broadcast"))
            if form == "xor":
                mask = rng.choice((1, 2, 3))
                call, lane = f"quad_shuffle_xor({src}, {mask}u)", f"(lid & ~3u) + ((lid & 3u) ^ {mask}u)"
            elif form == "down":
                delta = rng.choice((1, 2))
                call, lane = f"quad_shuffle_down({src}, {delta}u)", f"((lid & 3u) + {delta}u > 3u ? lid : lid + {delta}u)"
            else:
                call, lane = f"quad_broadcast({src}, 0)", "(lid & ~3u)"
            self.emit(f"{ctype.name} {name}s = {call};")
            self.emit(f"{ctype.name} {name} = {lane} < live ? {name}s : {src};")
        self.local(name, ctype)
        self.features.add(Feature.QUAD)

    def shuffle(self, name: str) -> None:
        """A shuffle whose result is kept only where the lane it reads exists."""
        rng = self.rng
        ctype = rng.choice((INT, UINT, FLOAT, ULONG, INT)) if rng.random() < 0.9 else None
        if ctype is None:
            self.features.add(Feature.HALF)
            value, tname = f"half({self.gen.expr('float', 1).render()})", "half"
        else:
            value, tname = self.value_of(ctype), ctype.name
            if ctype == FLOAT:
                value = f"(float)({value})"
            elif ctype == ULONG:
                value = f"(ulong)({value})"
        src = self.fresh("x")
        self.emit(f"{tname} {src} = {value};")
        form = rng.choice(("xor", "down", "up", "shuffle", "broadcast", "first", "rotate"))
        if form == "xor":
            mask = rng.choice((1, 2, 4, 8, 16, 3, 31))
            call, lane = f"simd_shuffle_xor({src}, {mask}u)", f"(lane ^ {mask}u)"
        elif form == "down":
            delta = rng.choice((1, 2, 4, 8, 16, 5))
            call, lane = f"simd_shuffle_down({src}, {delta}u)", f"(lane + {delta}u >= 32u ? lane : lane + {delta}u)"
        elif form == "up":
            delta = rng.choice((1, 2, 4, 8, 16, 3))
            call, lane = f"simd_shuffle_up({src}, {delta}u)", "lane"  # reads a lower lane, or keeps its own
        elif form == "shuffle":
            k = rng.randint(0, 40)
            call, lane = f"simd_shuffle({src}, (lane + {k}u) % simd_live)", "0u"
        elif form == "broadcast":
            call, lane = f"simd_broadcast({src}, 0)", "0u"
        elif form == "rotate":
            delta = rng.choice((1, 3, 8, 31))
            call, lane = f"simd_shuffle_rotate_down({src}, {delta}u)", f"((lane + {delta}u) % 32u)"
        else:
            call, lane = f"simd_broadcast_first({src})", "0u"
        self.emit(f"{tname} {name}s = {call};")
        self.emit(f"{tname} {name} = {lane} < simd_live ? {name}s : {src};")
        if ctype is None:
            self.emit(f"float {name}f = float({name});")
            self.local(f"{name}f", FLOAT)
        else:
            self.local(name, ctype)
        self.features.add(Feature.SIMD_SHUFFLE)

    def exchange(self, name: str) -> None:
        """Own slot, ``simdgroup_barrier``, then another lane of the same SIMD-group's slot."""
        rng = self.rng
        ctype = rng.choice((INT, UINT, FLOAT, INT_TYPES[0]))
        arr = self.fresh("sx")
        self.decls.append(f"threadgroup {ctype.name} {arr}[{self.tg_size_text}];")
        self.emit(f"{arr}[lid] = {self.value_of(ctype)};")
        self.emit("simdgroup_barrier(mem_flags::mem_threadgroup);")
        shift = rng.randint(1, 40)
        self.emit(f"{ctype.name} {name} = {arr}[sg * 32u + (lane + {shift}u) % simd_live];")
        self.local(name, ctype)
        self.features |= {Feature.SIMDGROUP_BARRIER, Feature.THREADGROUP_MEMORY}

    # -- atomics ---------------------------------------------------------------------------

    def device_atomic(self) -> None:
        rng = self.rng
        self.features.add(Feature.DEVICE_ATOMIC)
        if rng.random() < 0.25:
            self.accf_used = True
            index = f"((uint)({self.int_expr(1)})) % {ACC_REGION}u"
            target = "&accf[" + index + "]" if self.atomic_outputs else f"(device atomic_float*)&accf[{index}]"
            self.emit(f"atomic_fetch_add_explicit({target}, {self.exact_float(6)}, memory_order_relaxed);")
            return
        op = rng.choice(INT_ATOMIC_OPS)
        if op not in self.acc_ops:
            self.acc_ops.append(op)
        region = self.acc_ops.index(op)
        tname = "int" if self.acc_dtype == "int32" else "uint"
        where = rng.choice(("tid", "lid", "tgid", f"(uint)({self.int_expr(1)})"))
        index = f"{region * ACC_REGION}u + ({where}) % {ACC_REGION}u"
        target = f"&acc[{index}]" if self.atomic_outputs else f"(device atomic_{tname}*)&acc[{index}]"
        value = f"({tname})({self.int_expr()})"
        self.emit(f"atomic_fetch_{op}_explicit({target}, {value}, memory_order_relaxed);")

    def threadgroup_atomic(self) -> None:
        """Thread 0 zeroes a counter array, barrier, every thread updates, barrier, all read."""
        rng = self.rng
        tname = rng.choice(("int", "uint"))
        op = rng.choice(INT_ATOMIC_OPS)
        name = self.fresh("ta")
        self.decls.append(f"threadgroup atomic_{tname} {name}[4];")
        self.emit(f"if (lid == 0) {{ for (uint k = 0; k < 4; k++) atomic_store_explicit(&{name}[k], "
                  f"{'-1' if op == 'and' else '0'}, memory_order_relaxed); }}")
        self.barrier()
        value = f"({tname})({self.int_expr()})"
        self.emit(f"atomic_fetch_{op}_explicit(&{name}[lid % 4u], {value}, memory_order_relaxed);")
        self.barrier()
        out = self.fresh("c")
        self.emit(f"{tname} {out} = atomic_load_explicit(&{name}[{rng.randrange(4)}], memory_order_relaxed);")
        self.local(out, INT if tname == "int" else UINT)
        self.features.add(Feature.THREADGROUP_ATOMIC)

    # -- half -------------------------------------------------------------------------------

    def half_work(self) -> None:
        """A few half operations, each rounded to half as Metal does."""
        rng = self.rng
        a, b = self.fresh("h"), self.fresh("h")
        self.emit(f"half {a} = half({self.gen.expr('float', 2).render()});")
        self.emit(f"half {b} = half({self.gen.expr('float', 1).render()});")
        for _ in range(rng.randint(1, 3)):
            op = rng.choice(("+", "-", "*"))
            x, y = rng.choice((a, b)), rng.choice((a, b, "half(0.5f)", "half(3)"))
            self.emit(f"{a} = {x} {op} {y};")
        if rng.random() < 0.5:
            self.emit(f"{b} = {a} < {b} ? {b} - {a} : -{b};")
        self.halves += [a, b]
        name = self.fresh("hf")
        self.emit(f"float {name} = float({a}) + float({b});")
        self.local(name, FLOAT)
        self.features.add(Feature.HALF)

    # -- vectors -----------------------------------------------------------------------------

    def vector_work(self) -> None:
        """A vector built from expressions, changed by Metal's vector operators and swizzles
        (read and assigned), maybe through a SIMD-group sum or shuffle, its components copied to
        scalars. Float vectors hold small whole numbers (exact whatever the order of a sum)."""
        rng = self.rng
        n = rng.choice((2, 3, 4))
        base = rng.choice((INT, UINT, FLOAT))
        tname = f"{base.name}{n}"
        name = self.fresh("w")
        if base == FLOAT:
            comps = [self.exact_float(rng.choice((4, 8))) for _ in range(n)]
        else:
            comps = [f"({base.name})({self.int_expr(1)})" for _ in range(n)]
        init = f"{tname}({comps[0]})" if rng.random() < 0.25 else f"{tname}({', '.join(comps)})"
        self.emit(f"{tname} {name} = {init};")
        swizzles = {2: ("yx", "xx", "yy"), 3: ("zxy", "yzx", "xzy"), 4: ("wzyx", "yxwz", "zwxy", "xxyy")}[n]
        pairs = {2: ("yx",), 3: ("zx", "yz"), 4: ("wx", "zy", "yw")}[n]
        for _ in range(rng.randint(1, 3)):
            form = rng.random()
            if form < 0.3:
                self.emit(f"{name} = {name}.{rng.choice(swizzles)};")
            elif form < 0.5:
                dst = rng.choice(pairs)
                self.emit(f"{name}.{dst} = {name}.{dst[::-1]};")  # a swizzle assigned from its reverse
            elif base == FLOAT:
                k = rng.choice(("2.0f", "0.5f", "-1.0f"))
                op = rng.choice(("*", "+", "-"))
                self.emit(f"{name} = {name} {op} {k if op == '*' else f'{tname}({self.exact_float(4)})'};")
            else:
                op = rng.choice(("+", "-", "*", "^", "&", "|"))
                scalar = f"({base.name})({self.int_expr(1)})"
                other = f"{tname}({scalar})" if rng.random() < 0.5 else scalar  # a scalar widens
                self.emit(f"{name} = {name} {op} {other};")
        if self.simd_allowed and rng.random() < 0.5:
            if rng.random() < 0.5:
                self.emit(f"{tname} {name}r = simd_sum({name});")
                self.features.add(Feature.SIMD_REDUCTION)
            else:
                mask = rng.choice((1, 2, 16))
                self.emit(f"{tname} {name}s = simd_shuffle_xor({name}, {mask}u);")
                self.emit(f"{tname} {name}r = (lane ^ {mask}u) < simd_live ? {name}s : {name};")
                self.features.add(Feature.SIMD_SHUFFLE)
            name = f"{name}r"
        for c in "xyzw"[:n]:
            scalar = self.fresh("c")
            self.emit(f"{base.name} {scalar} = {name}.{c};")
            self.local(scalar, base)
        self.features.add(Feature.VECTORS)

    # -- the whole kernel -------------------------------------------------------------------

    def body_phases(self) -> None:
        rng = self.rng
        table = [
            (3.0, lambda: self.gen.statement()),
            (2.0, self.write_phase),
            (2.0, self.read_phase),
            (1.2, self.barrier),
            (2.0 if self.simd_allowed else 0.0, self.simd_op),
            (1.0, self.device_atomic),
            (0.3, self.threadgroup_atomic),
            (0.5, self.half_work),
            (0.6, self.vector_work),
        ]
        for _ in range(rng.randint(8, 18)):
            rng.choices([f for _, f in table], [w for w, _ in table])[0]()
        # At least one exchange through threadgroup memory.
        if not any(a.written_in >= 0 for a in self.arrays):
            self.write_phase()
        if not any(0 <= a.written_in < self.phase for a in self.arrays):
            self.barrier()
        self.read_phase()

    def store(self, buf: str, slot_count: dict[str, int], value: str, ctype: str) -> None:
        slot = slot_count[buf]
        slot_count[buf] += 1
        where = f"{buf}[tid * @{buf}@ + {slot}]"
        if self.atomic_outputs:
            self.emit(f"atomic_store_explicit(&{where}, {ctype}({value}), memory_order_relaxed);")
        else:
            self.emit(f"{where} = {value};")

    def final_stores(self) -> tuple[dict[str, int], int]:
        """Every top-level local to a per-thread slot; thread 0 of each group stores to out_g."""
        rng = self.rng
        slots = {"out_u": 0, "out_f": 0, "out_h": 0}
        int_out = "uint" if self.atomic_outputs else "ulong"
        for v in self.gen.scopes[0]:
            if v.kind != "scalar":
                continue
            if v.ctype.is_float:
                self.store("out_f", slots, v.name, "float")
            else:
                self.store("out_u", slots, v.name, int_out)
        for _ in range(rng.randint(1, 2)):
            self.store("out_u", slots, self.gen.expr("int", 2).render(), int_out)
            self.store("out_f", slots, self.gen.expr("float", 2).render(), "float")
        if not self.atomic_outputs:
            for h in self.halves:
                self.store("out_h", slots, h, "half")
        group_slots = rng.randint(1, 3)
        values = [self.gen.expr("int", 2).render() for _ in range(group_slots)]
        if self.atomic_outputs:
            stores = [f"atomic_store_explicit(&out_g[tgid * {group_slots}u + {j}], uint({v}), memory_order_relaxed);"
                      for j, v in enumerate(values)]
        else:
            stores = [f"out_g[tgid * {group_slots}u + {j}] = {v};" for j, v in enumerate(values)]
        self.emit("if (lid == 0) {")
        for s in stores:
            self.emit("    " + s)
        self.emit("}")
        return slots, group_slots

    def build(self) -> MultiThreadKernel:
        self.prologue()
        self.body_phases()
        slots, group_slots = self.final_stores()
        if self.atomic_outputs:
            self.features.add(Feature.ATOMIC_OUTPUTS)
        body = "\n".join(self.gen.lines) + "\n"
        for buf, count in slots.items():
            body = body.replace(f"@{buf}@", str(count))
        decls = "".join(f"    {d}\n" for d in self.decls)
        source = decls + body
        n, n_groups = self.n, self.geo.n_groups[0] * self.geo.n_groups[1]
        outputs = [OutputSpec("out_u", "uint32" if self.atomic_outputs else "uint64", (n * slots["out_u"],)),
                   OutputSpec("out_f", "float32", (n * slots["out_f"],))]
        if slots["out_h"]:
            outputs.append(OutputSpec("out_h", HALF_DTYPE, (n * slots["out_h"],)))
        outputs.append(OutputSpec("out_g", "uint32" if self.atomic_outputs else "int32", (n_groups * group_slots,)))
        init_value: float | None = None
        if self.acc_ops:
            outputs.append(OutputSpec("acc", self.acc_dtype, (len(self.acc_ops) * ACC_REGION,)))
        if self.accf_used:
            outputs.append(OutputSpec("accf", "float32", (ACC_REGION,)))
        if self.acc_ops or self.accf_used:
            # min/max/and start from 0 as well: deterministic, whatever the start.
            init_value = 0
        inputs = [random_values(self.data_rng, b.ctype, 1).reshape(()) if b.scalar
                  else random_values(self.data_rng, b.ctype, n) for b in self.inputs]
        return MultiThreadKernel(
            name=f"mt{self.seed}",
            seed=self.seed,
            source=source,
            header=self.header,
            input_names=[b.name for b in self.inputs],
            inputs=inputs,
            outputs=outputs,
            grid=self.geo.grid,
            threadgroup=self.geo.threadgroup,
            template=list(self.template),
            init_value=init_value,
            atomic_outputs=self.atomic_outputs,
            features=frozenset(self.features),
        )


def generate(seed: int) -> MultiThreadKernel:
    """Kernel number ``seed``: the same seed always gives the same kernel and inputs."""
    return KernelBuilder(seed).build()


def simulate_kernel(k: MultiThreadKernel, sanitize: str = "error", **options: Any):
    """Run a generated kernel on the simulator (a ``RunResult``); ``sanitize='error'`` raises on
    any race, out-of-bounds access, uninitialised read or unwritten output."""
    from metal_puzzles.msl import simulate

    return simulate(k.name, k.input_names, k.output_names, k.source, k.header, inputs=list(k.inputs),
                    output_shapes=k.output_shapes, output_dtypes=k.output_dtypes, grid=k.grid,
                    threadgroup=k.threadgroup, template=k.template, init_value=k.init_value,
                    atomic_outputs=k.atomic_outputs, sanitize=sanitize, **options)


def feature_counts(kernels: Sequence[MultiThreadKernel]) -> dict[Feature, int]:
    """How many of the kernels exercise each feature."""
    return {f: sum(f in k.features for k in kernels) for f in Feature}


__all__ = ["Feature", "MultiThreadKernel", "OutputSpec", "feature_counts", "generate", "simulate_kernel",
           "float_literal", "int_literal"]
