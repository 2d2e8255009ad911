"""The sanitizer: what a GPU would hide, the simulator reports.

It shadows every writable memory object (threadgroup arrays, outputs, thread-private arrays)
with who last wrote, read and atomically updated each part of it and when, and checks each
access:

* data races: two threads touching one threadgroup element, at least one writing, that no
  barrier orders; two threads writing one device element without atomics, or one reading what
  another wrote, unless both are in one threadgroup with a barrier between them; an atomic and a
  plain access to one element. Barriers order what their ``mem_flags`` say: ``mem_threadgroup``
  threadgroup memory, ``mem_device`` device memory (within the threadgroup), ``mem_none`` no
  memory at all; ``simdgroup_barrier`` the same among the threads of one SIMD-group. Two threads
  writing the same value to one element is a race by the letter and harmless in practice: it is
  reported as a note (``Severity.NOTE``), which never fails a run;
* reads of memory nobody initialised (threadgroup memory, thread-private arrays and variables,
  outputs launched without ``init_value``), and output elements never written.

Memory is shadowed in *granules* of bytes: the object's element size, refined to the smallest
scalar any access uses (a ``uchar`` view of a ``uint`` buffer makes the shadow byte-sized), so
two threads writing different bytes of one word do not race, and an access through a wider
view covers every granule it touches.

Out-of-bounds accesses, barrier divergence, division by zero and the step budget are checked
where they happen (runtime/executor); all findings go through ``Ctx.report``.
"""

from __future__ import annotations

import numpy as np

from ..lang.errors import Pos
from ..lang.types import AddressSpace, ArrayType, StructType, Type, VectorType, size_of
from ..run.findings import FindingKind, RaceKind, Severity
from ..run.hints import (
    Audience,
    in_loop,
    more_elements,
    partial_group_fix,
    threadgroup_race_fix,
    uninitialized_fix,
)
from ..run.lanes import SIMD_WIDTH
from ..run.memory import Memory, View, rescale

_NONE = np.int64(-1)


class Shadow:
    """Per-granule bookkeeping for one memory object.

    Writes are recorded eagerly (last writer, its memory phase, where). Reads of threadgroup
    memory are only queued until a barrier: a read can race only with a write in the same phase,
    and most phases (e.g. the compute phase of a tiled matmul) never write after reading, so the
    queue is usually dropped unexamined. Device memory spans threadgroups that never synchronise,
    so its readers are recorded eagerly. Atomic updates and SIMD-group phases get their arrays
    the first time a kernel uses them.
    """

    def __init__(self, mem: Memory, initialized: bool, track_races: bool) -> None:
        self.granule = mem.unit
        size = mem.raw.size // self.granule
        self.init = np.full(size, initialized, dtype=bool)
        if not initialized:
            self._mark_padding(mem)
        self.all_init = bool(self.init.all())
        self.track_races = track_races
        self.device = mem.space == AddressSpace.DEVICE
        self.space = AddressSpace.DEVICE if self.device else AddressSpace.THREADGROUP
        self.last_write_epoch = -1
        self.w_sph: np.ndarray | None = None  # writer's SIMD-group phase, once those exist
        self.a_lane: np.ndarray | None = None  # atomics, once there are any
        if track_races:
            self.w_lane = np.full(size, _NONE, dtype=np.int64)
            self.w_phase = np.full(size, _NONE, dtype=np.int64)
            self.w_pos = np.zeros(size, dtype=np.int32)
            if self.device:
                self.r_lane = np.full(size, _NONE, dtype=np.int64)
                self.r_phase = np.full(size, _NONE, dtype=np.int64)
                self.r_pos = np.zeros(size, dtype=np.int32)
                self.r_multi = np.zeros(size, dtype=bool)  # other unordered readers
                self.r_msimd = np.zeros(size, dtype=bool)  # ... in another SIMD-group
                self.r_sph: np.ndarray | None = None
            else:
                self.pending: list[tuple] = []
                self.pending_epoch = -1
                # Built from ``pending`` on the first write that needs it, then extended with each
                # read queued after (``reader_folded`` of them are in it): a phase that alternates
                # reads and writes costs each read once, not once per later write.
                self.reader_table: tuple | None = None
                self.reader_folded = 0

    def _mark_padding(self, mem: Memory) -> None:
        """Bytes after each region's declared end exist only for alignment: never uninitialised.
        Nor are the bytes alignment leaves inside structs (and after a 3-vector's third
        component): copying a whole struct reads them, but no kernel reads them as data."""
        per_region = mem.region_bytes // self.granule
        declared = -(-mem.nbytes // self.granule)
        grid = self.init.reshape(mem.regions, per_region)
        if declared < per_region:
            grid[:, declared:] = True
        if self.granule == 1 and mem.ty is not None and size_of(mem.ty) == mem.nbytes:
            holes = interior_padding(mem.ty)
            if holes.any():
                grid[:, : mem.nbytes] |= holes

    # ------------------------------------------------------------------ granules
    _PER_ENTRY = ("init", "w_lane", "w_phase", "w_pos", "w_sph", "r_lane", "r_phase", "r_pos", "r_multi", "r_msimd",
                  "r_sph", "a_lane", "a_phase", "a_pos", "a_write", "a_multi", "a_sph")

    def refine(self, granule: int) -> None:
        """Shadow in smaller granules (each old entry split in ``factor``)."""
        factor = self.granule // granule
        for name in self._PER_ENTRY:
            arr = getattr(self, name, None)
            if arr is not None:
                setattr(self, name, np.repeat(arr, factor))
        if not self.device and self.track_races:
            self.pending = [(_split(f, factor), np.repeat(lanes, factor), pid, np.repeat(ph, factor) if np.ndim(ph) else ph,
                             None if sph is None else np.repeat(sph, factor)) for f, lanes, pid, ph, sph in self.pending]
            self.reader_table = None
        self.granule = granule

    def entries(self, flat, view: View, n: int):
        """The granules an access covers: (lanes,) or (lanes, k) indices."""
        if view.unit < self.granule:
            self.refine(view.unit)
        return rescale(flat, view.unit, self.granule, n)

    def ensure_simd(self) -> None:
        if self.w_sph is None:
            self.w_sph = np.zeros_like(self.w_lane)
            if self.device:
                self.r_sph = np.zeros_like(self.r_lane)
            if self.a_lane is not None:
                self.a_sph = np.zeros_like(self.a_lane)

    def ensure_atomics(self) -> None:
        if self.a_lane is None:
            size = self.w_lane.size
            self.a_lane = np.full(size, _NONE, dtype=np.int64)
            self.a_phase = np.full(size, _NONE, dtype=np.int64)
            self.a_pos = np.zeros(size, dtype=np.int32)
            self.a_write = np.zeros(size, dtype=bool)
            self.a_multi = np.zeros(size, dtype=bool)
            self.a_sph = np.zeros(size, dtype=np.int64) if self.w_sph is not None else None


def _split(f: np.ndarray, factor: int) -> np.ndarray:
    return (np.asarray(f)[:, None] * factor + np.arange(factor)).reshape(-1)


def _per_lane(x, n: int, base_ndim: int):
    """A per-lane array (lanes, ...) from a value that may be uniform."""
    a = np.asarray(x)
    if a.ndim == base_ndim:
        return np.broadcast_to(a, (n,) + a.shape)
    return a


class Sanitizer:
    def __init__(self) -> None:
        self.positions: list[Pos] = []
        self._pos_ids: dict[Pos, int] = {}
        self.reported: set[tuple] = set()
        #: Queued threadgroup reads folded into reader tables so far: at most one fold per read
        #: (what keeps a phase of many read-then-write updates linear; a test counts it).
        self.reads_folded = 0

    def pos_id(self, pos: Pos) -> int:
        k = self._pos_ids.get(pos)
        if k is None:
            k = self._pos_ids[pos] = len(self.positions)
            self.positions.append(pos)
        return k

    # ---------------------------------------------------------------- setup
    def watch(self, mem: Memory, initialized: bool) -> None:
        mem.shadow = Shadow(mem, initialized, track_races=mem.space in (AddressSpace.THREADGROUP, AddressSpace.DEVICE))

    # ------------------------------------------------------------- ordering
    @staticmethod
    def _lanes_and_flat(ctx, flat, mask):
        f = np.asarray(flat)
        if mask is None:
            lanes = ctx.all_lanes
            if f.ndim == 0 or f.shape[0] != ctx.n:
                f = np.broadcast_to(f, (ctx.n,) + f.shape)
        else:
            lanes = np.flatnonzero(mask)
            if f.ndim == 0 or f.shape[0] != ctx.n:
                f = np.broadcast_to(f, (lanes.size,) + f.shape)
            else:
                f = f[lanes]
        if f.ndim > 1:
            lanes = np.repeat(lanes, f.shape[1])
            f = f.reshape(-1)
        return lanes, f

    @staticmethod
    def _now(ctx, sh: Shadow, lanes):
        """The memory phase of each accessing lane's threadgroup, and its SIMD-group's phase (or
        None while no simdgroup_barrier has ordered this kind of memory)."""
        if sh.device:
            phase = ctx.dev_phase[ctx.lanes.group[lanes]]
        else:
            phase = ctx.lane_phase if lanes is ctx.all_lanes else ctx.lane_phase[lanes]
        simd = ctx.simd_phase.get(sh.space)
        if simd is None:
            return phase, None
        sh.ensure_simd()
        return phase, simd[ctx.lanes.simd_global[lanes]]

    @staticmethod
    def _unordered(ctx, sh: Shadow, other, other_phase, other_sph, lanes, phase, sph, many_simds=None):
        """Which earlier accesses (by ``other`` lanes, at their phases) no barrier orders before
        the accesses now (by ``lanes``). ``many_simds``: the earlier accesses came from several
        SIMD-groups, so a SIMD-group barrier orders only some of them (never relied on)."""
        un = other_phase == phase
        if not sh.device and sph is None:
            return un  # one threadgroup's memory, no SIMD-group barriers: the phase says it all
        safe = np.where(other >= 0, other, 0)
        if sh.device:
            un = un | (ctx.lanes.group[safe] != ctx.lanes.group[lanes])
        if sph is not None:
            simd = ctx.lanes.simd_global
            ordered = (simd[safe] == simd[lanes]) & (other_sph != sph)
            if many_simds is not None:
                ordered &= ~many_simds
            un = un & ~ordered
        return un

    # ------------------------------------------------------------- accesses
    def on_read(self, ctx, mem: Memory, flat, view: View, mask, pos: Pos) -> None:
        sh = mem.shadow
        lanes, f = self._lanes_and_flat(ctx, sh.entries(flat, view, ctx.n), mask)
        if lanes.size == 0:
            return
        if not sh.all_init:
            bad = ~sh.init[f]
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                self._uninit(ctx, mem, lanes[bad], int(f[k]), lanes[k], pos)
        if not sh.track_races:
            return
        phase, sph = self._now(ctx, sh, lanes)
        # A threadgroup read races only with a write no barrier ordered; skip the lookup when
        # every threadgroup passed an ordering barrier since the last write.
        if sh.device or sh.last_write_epoch == ctx.sync_epoch:
            wl = sh.w_lane[f]
            raw = (wl >= 0) & (wl != lanes) & self._unordered(
                ctx, sh, wl, sh.w_phase[f], None if sph is None else sh.w_sph[f], lanes, phase, sph)
            if raw.any():
                k = int(np.flatnonzero(raw)[0])
                self._race(ctx, mem, RaceKind.READ_AFTER_WRITE, int(lanes[k]), int(wl[k]), int(f[k]), pos,
                           self.positions[sh.w_pos[f[k]]], lanes[raw], entries=f[raw])
        if sh.a_lane is not None:
            al = sh.a_lane[f]
            hit = (al >= 0) & ((al != lanes) | sh.a_multi[f]) & sh.a_write[f] & self._unordered(
                ctx, sh, al, sh.a_phase[f], None if sph is None else sh.a_sph[f], lanes, phase, sph)
            if hit.any():
                k = int(np.flatnonzero(hit)[0])
                self._race(ctx, mem, RaceKind.READ_AFTER_WRITE, int(lanes[k]), int(al[k]), int(f[k]), pos,
                           self.positions[sh.a_pos[f[k]]], lanes[hit], entries=f[hit], atomic="earlier")
        if sh.device:
            self._device_read(ctx, sh, lanes, f, pos, phase, sph)
            return
        if sh.pending_epoch != ctx.sync_epoch:
            sh.pending = []
            sh.pending_epoch = ctx.sync_epoch
            sh.reader_table = None
        sh.pending.append((f, lanes, self.pos_id(pos), phase, sph))

    def _device_read(self, ctx, sh: Shadow, lanes, f, pos: Pos, phase, sph) -> None:
        old = sh.r_lane[f]
        simd = ctx.lanes.simd_global
        current = (old >= 0) & self._unordered(ctx, sh, old, sh.r_phase[f], None if sph is None else sh.r_sph[f],
                                               lanes, phase, sph)
        multi = current & ((old != lanes) | sh.r_multi[f])
        msimd = current & ((simd[np.where(old >= 0, old, 0)] != simd[lanes]) | sh.r_msimd[f])
        sh.r_lane[f] = lanes
        sh.r_phase[f] = phase
        if sph is not None:
            sh.r_sph[f] = sph
        sh.r_pos[f] = self.pos_id(pos)
        sh.r_multi[f] = multi
        sh.r_msimd[f] = msimd
        dup = sh.r_lane[f] != lanes  # two lanes of this access read one granule
        sh.r_multi[f[dup]] = True
        sh.r_msimd[f[dup & (simd[sh.r_lane[f]] != simd[lanes])]] = True

    def _readers(self, ctx, sh: Shadow):
        """Who read each granule of threadgroup memory in the current phase: (lane or -1, other
        unordered readers?, readers in several SIMD-groups?, position, phase, SIMD phase)."""
        if sh.reader_table is None:
            size = sh.w_lane.size
            sh.reader_table = (np.full(size, _NONE, dtype=np.int64), np.zeros(size, dtype=bool),
                               np.zeros(size, dtype=bool), np.zeros(size, dtype=np.int32),
                               np.full(size, _NONE, dtype=np.int64), np.zeros(size, dtype=np.int64))
            sh.reader_folded = 0
        if sh.reader_folded < len(sh.pending):
            simd = ctx.lanes.simd_global
            reader, multi, msimd, where, when, rsph = sh.reader_table
            for f, lanes, pid, phase, sph in sh.pending[sh.reader_folded:]:
                prev = reader[f]
                same = (prev >= 0) & (when[f] == phase)
                prev_simd = simd[np.where(prev >= 0, prev, 0)]
                cur_simd = simd[lanes]
                unord = same
                if sph is not None:
                    unord = same & ~((prev_simd == cur_simd) & (rsph[f] != sph))
                new_multi = unord & ((prev != lanes) | multi[f])
                new_msimd = unord & ((prev_simd != cur_simd) | msimd[f])
                multi[f] = new_multi
                msimd[f] = new_msimd
                reader[f] = lanes
                where[f] = pid
                when[f] = phase
                if sph is not None:
                    rsph[f] = sph
                dup = reader[f] != lanes  # two lanes of this access read one granule
                multi[f[dup]] = True
                msimd[f[dup & (simd[reader[f]] != cur_simd)]] = True
            self.reads_folded += len(sh.pending) - sh.reader_folded
            sh.reader_folded = len(sh.pending)
        return sh.reader_table

    def _plain_readers(self, ctx, sh: Shadow, lanes, f, phase, sph):
        """Earlier reads of these granules by other threads that nothing orders before now:
        (mask over the accesses, the reader lanes, the position table)."""
        if sh.device:
            rl = sh.r_lane[f]
            multi, msimd = sh.r_multi[f], sh.r_msimd[f]
            un = self._unordered(ctx, sh, rl, sh.r_phase[f], None if sph is None else sh.r_sph[f], lanes, phase, sph,
                                 msimd)
            return (rl >= 0) & ((rl != lanes) | multi) & un, rl, sh.r_pos
        if not sh.pending or sh.pending_epoch != ctx.sync_epoch:
            return None, None, None
        reader, multi, msimd, where, when, rsph = self._readers(ctx, sh)
        rl = reader[f]
        un = self._unordered(ctx, sh, rl, when[f], None if sph is None else rsph[f], lanes, phase, sph, msimd[f])
        return (rl >= 0) & ((rl != lanes) | multi[f]) & un, rl, where

    def on_write(self, ctx, mem: Memory, flat, view: View, mask, pos: Pos, raw) -> None:
        """A plain write of ``raw`` (the stored scalars) at ``flat``, checked before it lands."""
        sh = mem.shadow
        lanes, f = self._lanes_and_flat(ctx, sh.entries(flat, view, ctx.n), mask)
        if lanes.size == 0:
            return
        if sh.track_races:
            phase, sph = self._now(ctx, sh, lanes)
            wl = sh.w_lane[f]
            waw = (wl >= 0) & (wl != lanes) & self._unordered(
                ctx, sh, wl, sh.w_phase[f], None if sph is None else sh.w_sph[f], lanes, phase, sph)
            if waw.any():
                k = int(np.flatnonzero(waw)[0])
                same = self._same_value(ctx, mem, flat, view, raw, lanes[waw], None)
                self._race(ctx, mem, RaceKind.WRITE_AFTER_WRITE, int(lanes[k]), int(wl[k]), int(f[k]), pos,
                           self.positions[sh.w_pos[f[k]]], lanes[waw], entries=f[waw], same_value=same)
            war, rl, r_pos = self._plain_readers(ctx, sh, lanes, f, phase, sph)
            if war is not None and war.any():
                k = int(np.flatnonzero(war)[0])
                other = int(rl[k])
                if other == int(lanes[k]):
                    other = -1  # several readers; the recorded one is this thread
                self._race(ctx, mem, RaceKind.WRITE_AFTER_READ, int(lanes[k]), other, int(f[k]), pos,
                           self.positions[r_pos[f[k]]], lanes[war], entries=f[war])
            if sh.a_lane is not None:
                al = sh.a_lane[f]
                hit = (al >= 0) & ((al != lanes) | sh.a_multi[f]) & self._unordered(
                    ctx, sh, al, sh.a_phase[f], None if sph is None else sh.a_sph[f], lanes, phase, sph)
                if hit.any():
                    k = int(np.flatnonzero(hit)[0])
                    self._race(ctx, mem, RaceKind.WRITE_AFTER_WRITE, int(lanes[k]), int(al[k]), int(f[k]), pos,
                               self.positions[sh.a_pos[f[k]]], lanes[hit], entries=f[hit], atomic="earlier")
            sh.w_lane[f] = lanes
            # Two lanes of this very statement writing one granule: the survivor differs from a writer.
            clash = sh.w_lane[f] != lanes
            if clash.any():
                k = int(np.flatnonzero(clash)[0])
                survivor = sh.w_lane[f[clash]]
                same = self._same_value(ctx, mem, flat, view, raw, lanes[clash], survivor)
                self._race(ctx, mem, RaceKind.WRITE_AFTER_WRITE, int(lanes[k]), int(sh.w_lane[f[k]]), int(f[k]), pos,
                           pos, lanes[clash], entries=f[clash], same_value=same)
            sh.w_phase[f] = phase
            if sph is not None:
                sh.w_sph[f] = sph
            sh.w_pos[f] = self.pos_id(pos)
            sh.last_write_epoch = ctx.sync_epoch
        if not sh.all_init:
            sh.init[f] = True
            sh.all_init = bool(sh.init.all())

    def on_atomic(self, ctx, mem: Memory, flat, view: View, lanes, pos: Pos, writes: bool) -> None:
        """An atomic operation by ``lanes`` on the elements at ``flat`` (one per lane): atomics
        never race with each other, but do with plain accesses nothing orders against them."""
        sh = mem.shadow
        f_all = sh.entries(np.asarray(flat)[lanes], view, lanes.size)
        if np.ndim(f_all) > 1:
            lanes = np.repeat(lanes, f_all.shape[1])
            f_all = f_all.reshape(-1)
        f = f_all
        if lanes.size == 0:
            return
        if not sh.all_init:
            sh.init[f] = True
            sh.all_init = bool(sh.init.all())
        if not sh.track_races:
            return
        sh.ensure_atomics()
        phase, sph = self._now(ctx, sh, lanes)
        wl = sh.w_lane[f]
        hit = (wl >= 0) & (wl != lanes) & self._unordered(
            ctx, sh, wl, sh.w_phase[f], None if sph is None else sh.w_sph[f], lanes, phase, sph)
        if hit.any():
            k = int(np.flatnonzero(hit)[0])
            self._race(ctx, mem, RaceKind.WRITE_AFTER_WRITE if writes else RaceKind.READ_AFTER_WRITE, int(lanes[k]),
                       int(wl[k]), int(f[k]), pos, self.positions[sh.w_pos[f[k]]], lanes[hit], entries=f[hit], atomic="now")
        if writes:
            war, rl, r_pos = self._plain_readers(ctx, sh, lanes, f, phase, sph)
            if war is not None and war.any():
                k = int(np.flatnonzero(war)[0])
                other = int(rl[k])
                self._race(ctx, mem, RaceKind.WRITE_AFTER_READ, int(lanes[k]), other if other != int(lanes[k]) else -1,
                           int(f[k]), pos, self.positions[r_pos[f[k]]], lanes[war], entries=f[war], atomic="now")
        old = sh.a_lane[f]
        current = (old >= 0) & self._unordered(ctx, sh, old, sh.a_phase[f], None if sph is None else sh.a_sph[f],
                                               lanes, phase, sph)
        sh.a_multi[f] = current & ((old != lanes) | sh.a_multi[f])
        sh.a_write[f] = np.where(current, sh.a_write[f] | writes, writes)
        sh.a_lane[f] = lanes
        sh.a_multi[f[sh.a_lane[f] != lanes]] = True
        sh.a_phase[f] = phase
        if sph is not None:
            sh.a_sph[f] = sph
        sh.a_pos[f] = self.pos_id(pos)
        if writes:
            sh.last_write_epoch = ctx.sync_epoch

    # -------------------------------------------------------- same-value writes
    @staticmethod
    def _same_value(ctx, mem: Memory, flat, view: View, raw, lanes, survivors) -> bool:
        """Whether the writers ``lanes`` store bit for bit what is already there (``survivors``
        None) or what the surviving writers of this statement store."""
        base = 1 if view.width > 1 else 0
        lanes = np.asarray(lanes)
        new = _per_lane(raw, ctx.n, base)
        data = mem.typed(view.dtype)[0]
        mine = np.asarray(new[lanes], dtype=data.dtype)
        if survivors is None:
            theirs = data[_per_lane(flat, ctx.n, base)[lanes]]
        else:
            theirs = np.asarray(new[np.asarray(survivors)], dtype=data.dtype)
        return bool(mine.tobytes() == np.ascontiguousarray(theirs).tobytes())

    # ------------------------------------------------------------- findings
    def _byte(self, mem: Memory, entry: int, lane: int) -> int:
        """A granule's first byte within the lane's region."""
        byte = entry * mem.shadow.granule
        if mem.lane_region is not None:
            byte -= int(mem.lane_region[lane]) * mem.region_bytes
        return byte

    def _element(self, ctx, mem: Memory, entry: int, lane: int) -> int:
        """A granule as the index of the memory's element it lies in (within the lane's region)."""
        return self._byte(mem, entry, lane) // mem.unit

    def _place(self, mem: Memory, entry: int, lane: int) -> str:
        """How a message names the place: 'buf[3]', or a struct member 'acc.lo'."""
        return mem.place(self._byte(mem, entry, lane)) or f"{mem.name}[{self._element(None, mem, entry, lane)}]"

    def _uninit(self, ctx, mem: Memory, lanes, f: int, lane: int, pos: Pos) -> None:
        key = ("uninit", mem.name, pos)
        if key in self.reported:
            return
        self.reported.add(key)
        idx = self._element(ctx, mem, f, lane)
        what = {"threadgroup": "threadgroup memory that no thread has written yet",
                "thread": "a thread-private array element that was never assigned",
                "device": "an output element that no thread has written"
                + ("" if ctx.audience == Audience.PUZZLE else " (the launch has no init_value)")}[mem.space]
        fix = uninitialized_fix(mem.space, ctx.audience)
        if mem.space == "thread" and mem.place(0) is not None:
            what = "a member that was never assigned"
            fix = "initialise the struct ('S s = {...};') or give the member a default value in the struct"
        mask = np.zeros(ctx.n, dtype=bool)
        mask[lane] = True
        mask[lanes] = True
        ctx.report_first(FindingKind.UNINITIALIZED_READ, pos, lane, mask,
                         f"{ctx.lanes.label(int(lane))} reads {self._place(mem, f, lane)}, {what}: {fix}",
                         buffer=mem.name, index=idx)

    def _race(self, ctx, mem: Memory, kind: RaceKind, lane: int, other: int, f: int, pos: Pos, other_pos: Pos,
              lanes, *, entries=None, same_value: bool = False, atomic: str | None = None) -> None:
        """Report a race. ``atomic``: 'now' when this access is the atomic one, 'earlier' when the
        other was; ``same_value``: both writes store the same bits (a benign race, a note)."""
        severity = Severity.NOTE if same_value else Severity.ERROR
        key = ("race", mem.name, pos, other_pos, severity)
        if key in self.reported:
            return
        self.reported.add(key)
        idx = self._element(ctx, mem, f, lane)
        place = self._place(mem, f, lane)
        if entries is not None:  # how many elements (distinct places in memory) race the same way
            place += more_elements(int(np.unique(np.asarray(entries) * mem.shadow.granule // mem.unit).size))
        me = ctx.lanes.label(lane)
        them = ctx.lanes.label(other) if other >= 0 else "other threads"
        same_group = other >= 0 and ctx.lanes.group[other] == ctx.lanes.group[lane]
        if mem.space == AddressSpace.THREADGROUP or same_group:
            where = "in the same barrier phase"
        else:
            where = "in another threadgroup during the same dispatch"
        if atomic is not None:
            verb = "atomically updates" if atomic == "now" else {"read-after-write": "reads",
                                                                 "write-after-write": "writes"}.get(kind, "writes")
            earlier = {"now": {"read-after-write": "written by", "write-after-read": "read by",
                               "write-after-write": "written by"}[kind],
                       "earlier": "atomically updated by"}[atomic]
            fix = ("an atomic and a plain access to one element race: access it only through atomic functions "
                   "(atomic_load_explicit / atomic_store_explicit for the plain ones), or order the two with a barrier")
            message = f"{me} {verb} {place}, {earlier} {them} {where} (line {other_pos.line}): {fix}"
        elif same_value:
            misplaced = None if same_group or mem.space == AddressSpace.THREADGROUP else partial_group_fix(ctx)
            message = (f"{me} writes {place}, also written by {them} {where} (line {other_pos.line}), "
                       "with the same value: " + (
                           # Benign in itself, but the two threads computed one position: a wrong one.
                           misplaced if misplaced is not None else
                           "a benign race (GPUs store whole elements, so the result is that value either way); "
                           "let one thread write it to make the kernel race-free"))
        else:
            verb = {"read-after-write": "reads", "write-after-read": "writes", "write-after-write": "writes"}[kind]
            earlier = {"read-after-write": "written by", "write-after-read": "read by",
                       "write-after-write": "also written by"}[kind]
            misplaced = None if same_group or mem.space == AddressSpace.THREADGROUP else partial_group_fix(ctx)
            if mem.space == AddressSpace.THREADGROUP:
                fix = threadgroup_race_fix(pos, other_pos, later_writes=kind != RaceKind.READ_AFTER_WRITE,
                                           in_loop=in_loop(ctx))
                lanes_ = ctx.lanes
                if other >= 0 and same_group and lanes_.threads_in_group[lanes_.group[lane]] > SIMD_WIDTH \
                        and lanes_.simd_in_group[other] == lanes_.simd_in_group[lane]:
                    # A tile per SIMD-group (a GEMM's): the cheaper barrier may be all it needs.
                    fix += (f"; the two threads are in one SIMD-group ({lanes_.simd_in_group[lane]}): if only the "
                            "threads of one SIMD-group share these elements, simdgroup_barrier(mem_flags::"
                            "mem_threadgroup) is enough, and unlike a threadgroup barrier it may sit where SIMD-groups "
                            "take different branches")
            elif misplaced is not None:  # the thread's position is wrong, not its way of writing
                fix = misplaced
            elif kind == "write-after-write":
                fix = "make each output element written by one thread, or use atomics (atomic_outputs=True)"
            elif same_group:
                fix = ("several threads update one element: accumulate with atomics, or combine the values in "
                       "threadgroup memory and let one thread write the result")
            else:
                fix = ("threads of different threadgroups cannot synchronise within a kernel: read only what this "
                       "thread wrote, use atomics, or split the work into two kernels")
            weak = ctx.unordered_by.get(AddressSpace.THREADGROUP if mem.space == AddressSpace.THREADGROUP
                                        else AddressSpace.DEVICE)
            between = weak is not None and weak.file == pos.file and min(other_pos.line, pos.line) < weak.line < max(
                other_pos.line, pos.line)
            if between and (mem.space == AddressSpace.THREADGROUP or same_group):
                # A barrier between the two lines ran, but its mem_flags do not order this memory.
                flag = "mem_threadgroup" if mem.space == AddressSpace.THREADGROUP else "mem_device"
                fix = (f"the barrier at line {weak.line} synchronises execution but does not order {mem.space} "
                       f"memory (its mem_flags lack {flag}): use threadgroup_barrier(mem_flags::{flag}) between the "
                       f"two accesses (line {other_pos.line} and line {pos.line})")
            message = f"{me} {verb} {place}, {earlier} {them} {where} (line {other_pos.line}): {fix}"
        mask = np.zeros(ctx.n, dtype=bool)
        mask[lanes] = True
        ctx.report_first(FindingKind.RACE, pos, lane, mask, message, buffer=mem.name, index=idx, race=kind,
                         other_pos=other_pos, other_thread=ctx.lanes.describe(other) if other >= 0 else None,
                         severity=severity)

    # ------------------------------------------------------------- the end
    def finish(self, ctx, outputs: list[Memory], init_value) -> None:
        if init_value is not None:
            return
        for mem in outputs:
            sh = mem.shadow
            if sh is None or sh.init.all():
                continue
            missing = np.unique(np.flatnonzero(~sh.init) * sh.granule // mem.unit)
            total = mem.nbytes // mem.unit
            hint = partial_group_fix(ctx)
            shown = ", ".join(str(int(i)) for i in missing[:8]) + (", ..." if missing.size > 8 else "")
            ctx.report(FindingKind.UNWRITTEN_OUTPUT, None, None,
                       f"{missing.size} of the {total} elements of output '{mem.name}' are never written "
                       f"(indices {shown}); a GPU would leave garbage there. Make sure some thread writes every "
                       "element" + ("" if ctx.audience == Audience.PUZZLE else
                                    " (for your own kernels, passing init_value to the call also fills them)")
                       + ("; this launch ends in a partial threadgroup, where threads_per_threadgroup is smaller: "
                          "positions computed from it go wrong there (dispatch_threads_per_threadgroup does not)"
                          if hint else ""),
                       buffer=mem.name, index=int(missing[0]), count=int(missing.size))


def interior_padding(ty: Type) -> np.ndarray:
    """One flag per byte of an object of type ``ty``: True where no member's data lies (the holes
    alignment leaves between and after struct members, and a 3-vector's fourth slot)."""
    holes = np.zeros(size_of(ty), dtype=bool)
    if isinstance(ty, StructType):
        holes[:] = True
        for f in ty.fields:
            holes[f.offset : f.offset + size_of(f.ty)] = interior_padding(f.ty)
    elif isinstance(ty, ArrayType):
        holes[:] = np.tile(interior_padding(ty.elem), ty.n)
    elif isinstance(ty, VectorType):
        holes[ty.n * ty.elem.size :] = True
    return holes
