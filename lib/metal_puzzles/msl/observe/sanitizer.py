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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ...compat import StrEnum
from ..executor.codegen.masks import Mask
from ..executor.memory import Memory, View, rescale
from ..executor.runtime import Ctx
from ..findings.advice import (
    Audience,
    atomic_plain_race_fix,
    barrier_flags_fix,
    benign_race_fix,
    device_update_race_fix,
    device_write_race_fix,
    in_loop,
    more_elements,
    partial_group_fix,
    simdgroup_barrier_fix,
    threadgroup_race_fix,
    uninitialized_fix,
)
from ..findings.finding import FindingKind, RaceKind, Severity
from ..findings.registry import kind_entry
from ..lang.errors import Pos
from ..lang.types import AddressSpace, ArrayType, StructType, Type, VectorType, size_of
from ..thread_grid import SIMD_WIDTH

_NONE = np.int64(-1)


def _shadow(mem: Memory) -> Shadow:
    """The shadow of a memory the sanitizer watches (the executor calls its hooks only for those)."""
    return cast(Shadow, mem.shadow)


def _made(phases: np.ndarray | None) -> np.ndarray:
    """One of a shadow's arrays made on first need, where it is known made: the SIMD-group phases
    once ``Sanitizer._now`` has given a SIMD-group phase (it calls ``Shadow.ensure_simd`` first),
    the atomics' after ``Shadow.ensure_atomics``."""
    assert phases is not None
    return phases


class Shadow:
    """Per-granule bookkeeping for one memory object.

    Writes are recorded eagerly (last writer, its memory phase, where). Reads of threadgroup
    memory are only queued until a barrier: a read can race only with a write in the same phase,
    and most phases (e.g. the compute phase of a tiled matmul) never write after reading, so the
    queue is usually dropped unexamined. Device memory spans threadgroups that never synchronise,
    so its readers are recorded eagerly. Atomic updates and SIMD-group phases get their arrays
    the first time a kernel uses them.

    What a kernel's loops cost stays about what their plain accesses cost: a read that repeats
    the last one (a loop reading one place) is neither queued nor recorded again, since doing it
    twice leaves the readers as doing it once does; and a queue past ``queue_limit`` granules is
    folded into the reader table and dropped, so memory stays bounded by the memory shadowed.
    """

    def __init__(self, mem: Memory, initialized: bool, track_races: bool) -> None:
        self.granule = mem.unit
        size = mem.raw.size // self.granule
        self.init = np.full(size, initialized, dtype=bool)
        #: Whether the memory held values before the kernel ran (an output launched with init_value):
        #: what decides whether atomic adds into it can give the right sum.
        self.preset = initialized
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
                self.last_read: tuple | None = None  # the last read recorded, to tell a repeat of it
            else:
                self.pending: list[tuple] = []
                self.pending_epoch = -1
                # Built from ``pending`` on the first write that needs it, then extended with each
                # read queued after (``reader_folded`` of them are in it): a phase that alternates
                # reads and writes costs each read once, not once per later write.
                self.reader_table: tuple | None = None
                self.reader_folded = 0
                # Granules the queue holds: past ``queue_limit`` the queue is folded into the
                # table and dropped, so a phase of many reads keeps memory bounded.
                self.queued = 0
                self.queue_limit = max(QUEUE_GRANULES_PER_GRANULE * size, QUEUE_MIN_GRANULES)

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
            self.queued *= factor
            self.queue_limit *= factor
            if self.reader_table is not None:
                # Each smaller granule was read by whoever read the granule it splits.
                self.reader_table = tuple(np.repeat(x, factor) for x in self.reader_table)
        if self.device and self.track_races:
            self.last_read = None
        self.granule = granule

    def entries(self, flat: Any, view: View, n: int) -> Any:
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
                self.a_sph: np.ndarray | None = np.zeros_like(self.a_lane)

    def ensure_atomics(self) -> None:
        if self.a_lane is None:
            size = self.w_lane.size
            self.a_lane = np.full(size, _NONE, dtype=np.int64)
            self.a_phase = np.full(size, _NONE, dtype=np.int64)
            self.a_pos = np.zeros(size, dtype=np.int32)
            self.a_write = np.zeros(size, dtype=bool)
            self.a_multi = np.zeros(size, dtype=bool)
            self.a_sph = np.zeros(size, dtype=np.int64) if self.w_sph is not None else None


#: A threadgroup memory's queue of reads is folded into its reader table once it holds this many
#: granules per granule of the memory (or ``QUEUE_MIN_GRANULES``, if more).
QUEUE_GRANULES_PER_GRANULE = 8
QUEUE_MIN_GRANULES = 1 << 20


def _same_read(a: tuple, b: tuple) -> bool:
    """Whether two queued reads (granules, lanes, position, phases, SIMD-group phases) are the same."""
    fa, fb = a[0], b[0]
    if a[2] != b[2] or fa.size != fb.size or (fa.size and fa.flat[0] != fb.flat[0]):
        return False  # the common miss (a loop moving through memory), told cheaply
    return _same(a[1], b[1]) and _same(fa, fb) and _same(a[3], b[3]) and _same(a[4], b[4])


def _same(x: Any, y: Any) -> bool:
    return x is y or (x is not None and y is not None and np.shape(x) == np.shape(y) and bool(np.array_equal(x, y)))


def _split(f: np.ndarray, factor: int) -> np.ndarray:
    return (np.asarray(f)[:, None] * factor + np.arange(factor)).reshape(-1)


def _per_lane(x: Any, n: int, base_ndim: int) -> Any:
    """A per-lane array (lanes, ...) from a value that may be uniform."""
    a = np.asarray(x)
    if a.ndim == base_ndim:
        return np.broadcast_to(a, (n,) + a.shape)
    return a


class Sanitizer:
    def __init__(self) -> None:
        self.positions: list[Pos] = []
        self._pos_ids: dict[Pos, int] = {}
        #: Queued threadgroup reads folded into reader tables so far: at most one fold per read
        #: (what keeps a phase of many read-then-write updates linear; a test counts it).
        self.reads_folded = 0
        # What every access of a launch would otherwise build anew: all lanes, each repeated k
        # times (an access covering k granules a lane), by k; and the phases of the last lanes
        # looked up, while no barrier changed them. Read-only, so sharing them is safe.
        self._all_repeated: dict[int, np.ndarray] = {}
        self._last_phases: tuple | None = None

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
    def _lanes_and_flat(self, ctx: Ctx, flat: Any, mask: Mask) -> tuple[np.ndarray, np.ndarray]:
        f = np.asarray(flat)
        lanes: np.ndarray | None
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
            if mask is None:
                lanes = self._all_repeated.get(f.shape[1])
                if lanes is None:
                    lanes = self._all_repeated[f.shape[1]] = np.repeat(ctx.all_lanes, f.shape[1])
                    lanes.flags.writeable = False
            else:
                lanes = np.repeat(lanes, f.shape[1])
            f = f.reshape(-1)
        assert lanes is not None
        return lanes, f

    def _now(self, ctx: Ctx, sh: Shadow, lanes: Any) -> Any:
        """The memory phase of each accessing lane's threadgroup, and its SIMD-group's phase (or
        None while no simdgroup_barrier has ordered this kind of memory)."""
        if sh.device:
            phase = ctx.dev_phase[ctx.lanes.group[lanes]]
        else:
            phase = ctx.lane_phase if lanes is ctx.all_lanes else self._phases_of(ctx, lanes)
        simd = ctx.simd_phase.get(sh.space)
        if simd is None:
            return phase, None
        sh.ensure_simd()
        return phase, simd[ctx.lanes.simd_global[lanes]]

    def _phases_of(self, ctx: Ctx, lanes: Any) -> Any:
        """The threadgroup-memory phase of each of ``lanes`` (ctx.lane_phase is replaced, never
        changed, at a barrier, so the same two arrays give the same answer)."""
        last = self._last_phases
        if last is not None and last[0] is lanes and last[1] is ctx.lane_phase:
            return last[2]
        phase = ctx.lane_phase[lanes]
        phase.flags.writeable = False
        self._last_phases = (lanes, ctx.lane_phase, phase)
        return phase

    @staticmethod
    def _unordered(ctx: Ctx, sh: Shadow, other: Any, other_phase: Any, other_sph: Any, lanes: Any, phase: Any, sph: Any, many_simds: Any = None) -> Any:
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

    def _unless_ordered(self, ctx: Ctx, sh: Shadow, candidates: Any, other: Any, other_phases: Any, other_sphs: Any, f: Any, lanes: Any, phase: Any, sph: Any,
                        many_simds: Any = None) -> Any:
        """``candidates`` (accesses that would conflict with the earlier ones by ``other``) less
        those a barrier ordered; the earlier accesses' phases are looked up only when there is a
        candidate, which in a race-free kernel there mostly is not."""
        if not candidates.any():
            return candidates
        return candidates & self._unordered(ctx, sh, other, other_phases[f], None if sph is None else other_sphs[f],
                                            lanes, phase, sph, None if many_simds is None else many_simds[f])

    # ------------------------------------------------------------- accesses
    def _plain_access(self, ctx: Ctx, mem: Memory, flat: Any, view: View, mask: Mask
                      ) -> tuple[Shadow, np.ndarray, np.ndarray] | None:
        """The shadow, lanes and shadow entries a plain read or write touches, or None when there is
        nothing to check or record: thread-private memory every part of which holds a value (no
        race is possible there, and no read of it is uninitialised), or no lane in the mask."""
        sh = _shadow(mem)
        if sh.all_init and not sh.track_races:
            return None
        lanes, f = self._lanes_and_flat(ctx, sh.entries(flat, view, ctx.n), mask)
        if lanes.size == 0:
            return None
        return sh, lanes, f

    def _report_uninitialised(self, ctx: Ctx, mem: Memory, sh: Shadow, lanes: Any, f: Any, pos: Pos) -> None:
        """A read by ``lanes`` of shadow entries ``f``: reports the lanes that read a value nobody
        wrote (named by the first of them), as plain reads and value-reading atomics both must."""
        bad = ~sh.init[f]
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            self._uninit(ctx, mem, lanes[bad], int(f[k]), lanes[k], pos)

    def _unordered_writes(self, ctx: Ctx, sh: Shadow, lanes: Any, f: Any, phase: Any, sph: Any
                          ) -> tuple[Any, Any]:
        """Earlier plain writes of these granules by other threads that nothing orders before now:
        (mask over the accesses, the writer lanes). What every access races with."""
        wl = sh.w_lane[f]
        return self._unless_ordered(ctx, sh, (wl >= 0) & (wl != lanes), wl, sh.w_phase, sh.w_sph, f, lanes,
                                    phase, sph), wl

    def _unordered_atomics(self, ctx: Ctx, sh: Shadow, a_lane: np.ndarray, lanes: Any, f: Any, phase: Any,
                           sph: Any, *, writes_only: bool) -> tuple[Any, Any]:
        """Earlier atomics on these granules by another thread (or by several) that nothing orders
        before now: (mask over the accesses, the atomics' lanes). A plain read races only with
        atomics that wrote (``writes_only``); a plain write with any."""
        al = a_lane[f]
        candidates = (al >= 0) & ((al != lanes) | sh.a_multi[f])
        if writes_only:
            candidates &= sh.a_write[f]
        return self._unless_ordered(ctx, sh, candidates, al, sh.a_phase, sh.a_sph, f, lanes, phase, sph), al

    def on_read(self, ctx: Ctx, mem: Memory, flat: Any, view: View, mask: Mask, pos: Pos) -> None:
        touched = self._plain_access(ctx, mem, flat, view, mask)
        if touched is None:
            return
        sh, lanes, f = touched
        if not sh.all_init:
            self._report_uninitialised(ctx, mem, sh, lanes, f, pos)
        if not sh.track_races:
            return
        phase, sph = self._now(ctx, sh, lanes)
        # A threadgroup read races only with a write no barrier ordered; skip the lookup when
        # every threadgroup passed an ordering barrier since the last write.
        if sh.device or sh.last_write_epoch == ctx.sync_epoch:
            raw, wl = self._unordered_writes(ctx, sh, lanes, f, phase, sph)
            self._conflict(ctx, mem, RaceKind.READ_AFTER_WRITE, raw, lanes, f, wl, pos, sh.w_pos)
        if sh.a_lane is not None:
            hit, al = self._unordered_atomics(ctx, sh, sh.a_lane, lanes, f, phase, sph, writes_only=True)
            self._conflict(ctx, mem, RaceKind.READ_AFTER_WRITE, hit, lanes, f, al, pos, sh.a_pos,
                           atomic=AtomicSide.EARLIER)
        if sh.device:
            read = (f, lanes, self.pos_id(pos), phase, sph)
            if sh.last_read is not None and _same_read(sh.last_read, read):
                return  # the same read again: recording it twice leaves what recording it once does
            sh.last_read = read
            self._device_read(ctx, sh, lanes, f, pos, phase, sph)
            return
        if sh.pending_epoch != ctx.sync_epoch:
            sh.pending = []
            sh.pending_epoch = ctx.sync_epoch
            sh.reader_table = None
            sh.queued = 0
        read = (f, lanes, self.pos_id(pos), phase, sph)
        if sh.pending and _same_read(sh.pending[-1], read):
            # The same read again (a loop reading one place): folding it twice leaves the table
            # as folding it once does, so it is not queued twice.
            return
        sh.pending.append(read)
        sh.queued += f.size
        if sh.queued > sh.queue_limit:
            self._readers(ctx, sh)
            sh.pending = [read]  # the last read stays, for telling a repeat of it
            sh.reader_folded = 1
            sh.queued = f.size

    def _device_read(self, ctx: Ctx, sh: Shadow, lanes: Any, f: Any, pos: Pos, phase: Any, sph: Any) -> None:
        old = sh.r_lane[f]
        simd = ctx.lanes.simd_global
        current = (old >= 0) & self._unordered(ctx, sh, old, sh.r_phase[f], None if sph is None else _made(sh.r_sph)[f],
                                               lanes, phase, sph)
        multi = current & ((old != lanes) | sh.r_multi[f])
        msimd = current & ((simd[np.where(old >= 0, old, 0)] != simd[lanes]) | sh.r_msimd[f])
        sh.r_lane[f] = lanes
        sh.r_phase[f] = phase
        if sph is not None:
            _made(sh.r_sph)[f] = sph
        sh.r_pos[f] = self.pos_id(pos)
        sh.r_multi[f] = multi
        sh.r_msimd[f] = msimd
        dup = sh.r_lane[f] != lanes  # two lanes of this access read one granule
        sh.r_multi[f[dup]] = True
        sh.r_msimd[f[dup & (simd[sh.r_lane[f]] != simd[lanes])]] = True

    def _readers(self, ctx: Ctx, sh: Shadow) -> Any:
        """Who read each granule of threadgroup memory in the current phase: (lane or -1, other
        unordered readers?, readers in several SIMD-groups?, position, phase, SIMD phase, and the
        last reader before the current one that was another thread, with its position). That
        other reader names a race whose writer also read the element itself (``tmp[b] += v``
        after another thread's ``tmp[b - s]``): the race is with the other thread's line."""
        if sh.reader_table is None:
            size = sh.w_lane.size
            sh.reader_table = (np.full(size, _NONE, dtype=np.int64), np.zeros(size, dtype=bool),
                               np.zeros(size, dtype=bool), np.zeros(size, dtype=np.int32),
                               np.full(size, _NONE, dtype=np.int64), np.zeros(size, dtype=np.int64),
                               np.full(size, _NONE, dtype=np.int64), np.zeros(size, dtype=np.int32))
            sh.reader_folded = 0
        if sh.reader_folded < len(sh.pending):
            simd = ctx.lanes.simd_global
            reader, multi, msimd, where, when, rsph, other_reader, other_where = sh.reader_table
            for f, lanes, pid, phase, sph in sh.pending[sh.reader_folded:]:
                prev = reader[f]
                same = (prev >= 0) & (when[f] == phase)
                displaced = same & (prev != lanes)
                other_where[f] = np.where(displaced, where[f], other_where[f])
                other_reader[f] = np.where(displaced, prev, np.where(same, other_reader[f], _NONE))
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

    def _plain_readers(self, ctx: Ctx, sh: Shadow, lanes: Any, f: Any, phase: Any, sph: Any) -> Any:
        """Earlier reads of these granules by other threads that nothing orders before now:
        (mask over the accesses, the reader lanes, the position table, and for threadgroup
        memory the reader before each of those that was another thread with its position table)."""
        if sh.device:
            rl = sh.r_lane[f]
            return self._unless_ordered(ctx, sh, (rl >= 0) & ((rl != lanes) | sh.r_multi[f]), rl, sh.r_phase,
                                        sh.r_sph, f, lanes, phase, sph, sh.r_msimd), rl, sh.r_pos, None
        if not sh.pending or sh.pending_epoch != ctx.sync_epoch:
            return None, None, None, None  # no read in this phase (the queue is never emptied within one)
        reader, multi, msimd, where, when, rsph, other_reader, other_where = self._readers(ctx, sh)
        rl = reader[f]
        return self._unless_ordered(ctx, sh, (rl >= 0) & ((rl != lanes) | multi[f]), rl, when, rsph, f, lanes, phase,
                                    sph, msimd), rl, where, (other_reader[f], other_where)

    def on_write(self, ctx: Ctx, mem: Memory, flat: Any, view: View, mask: Mask, pos: Pos, raw: Any) -> None:
        """A plain write of ``raw`` (the stored scalars) at ``flat``, checked before it lands."""
        touched = self._plain_access(ctx, mem, flat, view, mask)
        if touched is None:
            return
        sh, lanes, f = touched
        if sh.track_races:
            phase, sph = self._now(ctx, sh, lanes)
            waw, wl = self._unordered_writes(ctx, sh, lanes, f, phase, sph)
            self._conflict(ctx, mem, RaceKind.WRITE_AFTER_WRITE, waw, lanes, f, wl, pos, sh.w_pos,
                           same_value=lambda writers: self._same_value(ctx, mem, flat, view, raw, writers, None))
            war, rl, r_pos, displaced = self._plain_readers(ctx, sh, lanes, f, phase, sph)
            self._conflict(ctx, mem, RaceKind.WRITE_AFTER_READ, war, lanes, f, rl, pos, r_pos, several_readers=True,
                           displaced=displaced)
            if sh.a_lane is not None:
                hit, al = self._unordered_atomics(ctx, sh, sh.a_lane, lanes, f, phase, sph, writes_only=False)
                self._conflict(ctx, mem, RaceKind.WRITE_AFTER_WRITE, hit, lanes, f, al, pos, sh.a_pos,
                               atomic=AtomicSide.EARLIER)
            sh.w_lane[f] = lanes
            # Two lanes of this very statement writing one granule: the survivor differs from a writer.
            survivors = sh.w_lane[f]
            clash = survivors != lanes
            self._conflict(ctx, mem, RaceKind.WRITE_AFTER_WRITE, clash, lanes, f, survivors, pos, pos,
                           same_value=lambda writers: self._same_value(ctx, mem, flat, view, raw, writers,
                                                                       survivors[clash]))
            sh.w_phase[f] = phase
            if sph is not None:
                _made(sh.w_sph)[f] = sph
            sh.w_pos[f] = self.pos_id(pos)
            sh.last_write_epoch = ctx.sync_epoch
        if not sh.all_init:
            sh.init[f] = True
            sh.all_init = bool(sh.init.all())

    def on_atomic(self, ctx: Ctx, mem: Memory, flat: Any, view: View, lanes: Any, pos: Pos, writes: bool,
                  reads_old: bool = True) -> None:
        """An atomic operation by ``lanes`` on the elements at ``flat`` (one per lane): atomics
        never race with each other, but do with plain accesses nothing orders against them.
        ``reads_old``: the operation's result depends on what the element held (an add, a load, a
        compare), so an element nobody initialised is an uninitialised read, as a plain one is."""
        sh = _shadow(mem)
        f_all = sh.entries(flat if lanes is ctx.all_lanes else np.asarray(flat)[lanes], view, lanes.size)
        if np.ndim(f_all) > 1:
            lanes = np.repeat(lanes, f_all.shape[1])
            f_all = f_all.reshape(-1)
        f = f_all
        if lanes.size == 0:
            return
        if not sh.all_init:
            if reads_old:
                self._report_uninitialised(ctx, mem, sh, lanes, f, pos)
            sh.init[f] = True
            sh.all_init = bool(sh.init.all())
        if not sh.track_races:
            return
        sh.ensure_atomics()
        phase, sph = self._now(ctx, sh, lanes)
        hit, wl = self._unordered_writes(ctx, sh, lanes, f, phase, sph)
        self._conflict(ctx, mem, RaceKind.WRITE_AFTER_WRITE if writes else RaceKind.READ_AFTER_WRITE, hit, lanes, f,
                       wl, pos, sh.w_pos, atomic=AtomicSide.NOW)
        if writes:
            war, rl, r_pos, displaced = self._plain_readers(ctx, sh, lanes, f, phase, sph)
            self._conflict(ctx, mem, RaceKind.WRITE_AFTER_READ, war, lanes, f, rl, pos, r_pos, several_readers=True,
                           atomic=AtomicSide.NOW, displaced=displaced)
        a_lane = _made(sh.a_lane)
        old = a_lane[f]
        current = (old >= 0) & self._unordered(ctx, sh, old, sh.a_phase[f], None if sph is None else _made(sh.a_sph)[f],
                                               lanes, phase, sph)
        sh.a_multi[f] = current & ((old != lanes) | sh.a_multi[f])
        sh.a_write[f] = np.where(current, sh.a_write[f] | writes, writes)
        a_lane[f] = lanes
        sh.a_multi[f[a_lane[f] != lanes]] = True
        sh.a_phase[f] = phase
        if sph is not None:
            _made(sh.a_sph)[f] = sph
        sh.a_pos[f] = self.pos_id(pos)
        if writes:
            sh.last_write_epoch = ctx.sync_epoch

    # -------------------------------------------------------- same-value writes
    @staticmethod
    def _same_value(ctx: Ctx, mem: Memory, flat: Any, view: View, raw: Any, lanes: Any, survivors: Any) -> bool:
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
        byte = entry * _shadow(mem).granule
        if mem.lane_region is not None:
            byte -= int(mem.lane_region[lane]) * mem.region_bytes
        return byte

    def _element(self, mem: Memory, entry: int, lane: int) -> int:
        """A granule as the index of the memory's element it lies in (within the lane's region)."""
        return self._byte(mem, entry, lane) // mem.unit

    def _place(self, mem: Memory, entry: int, lane: int) -> str:
        """How a message names the place: 'buf[3]', or a struct member 'acc.lo'."""
        return mem.place(self._byte(mem, entry, lane)) or f"{mem.name}[{self._element(mem, entry, lane)}]"

    def _uninit(self, ctx: Ctx, mem: Memory, lanes: Any, f: int, lane: int, pos: Pos) -> None:
        if ctx.is_reported(FindingKind.UNINITIALIZED_READ, pos, mem.name):
            return
        idx = self._element(mem, f, lane)
        member = mem.space == AddressSpace.THREAD and mem.place(0) is not None
        what = "a member that was never assigned" if member else _UNINITIALIZED[mem.space]
        if mem.space == AddressSpace.DEVICE and ctx.audience != Audience.PUZZLE:
            what += " (the launch has no init_value)"
        fix = uninitialized_fix(mem.space, ctx.audience, member=member)
        mask = np.zeros(ctx.n, dtype=bool)
        mask[lane] = True
        mask[lanes] = True
        ctx.report_first(FindingKind.UNINITIALIZED_READ, pos, lane, mask,
                         f"{ctx.lanes.label(int(lane))} reads {self._place(mem, f, lane)}, {what}: {fix}",
                         buffer=mem.name, index=idx)

    def _conflict(self, ctx: Ctx, mem: Memory, kind: RaceKind, hit: Any, lanes: Any, f: Any, others: Any, pos: Pos, earlier: Any, *,
                  several_readers: bool = False, same_value: Callable[[np.ndarray], bool] | None = None,
                  atomic: AtomicSide | None = None, displaced: tuple | None = None) -> None:
        """Report the first of the accesses ``hit`` marks (over ``lanes`` and their granules ``f``)
        that conflict with an earlier access by ``others`` (a lane per access), made at ``earlier``
        (a position id per granule, or one position). ``several_readers``: the earlier readers
        recorded may include this very thread, which then stands for other threads, or for the
        reader before it that was another thread (``displaced``: a lane per access and a position
        id per granule), when one is known; ``same_value``: whether the writers store what is
        already there (a benign race)."""
        if hit is None or not hit.any():
            return
        k = int(np.flatnonzero(hit)[0])
        if _shadow(mem).device:
            # A pair from different threadgroups, where there is one, is the one to report: its
            # cure (no barrier orders threadgroups) also cures the pairs within a threadgroup,
            # while a barrier, the cure of those, would leave it racing.
            group = ctx.lanes.group
            apart = np.flatnonzero(hit & (others >= 0) & (group[np.where(others >= 0, others, 0)] != group[lanes]))
            if apart.size:
                k = int(apart[0])
        lane, other = int(lanes[k]), int(others[k])
        other_pos = earlier if isinstance(earlier, Pos) else self.positions[earlier[f[k]]]
        if several_readers and other == lane:
            other = -1  # several readers; the recorded one is this thread
            if displaced is not None:
                before_lanes, before_where = displaced
                before = int(before_lanes[k])
                before_pos = self.positions[before_where[f[k]]] if before >= 0 else None
                if before >= 0 and before != lane and before_pos != other_pos:
                    # The thread read the element itself before writing it ('tmp[b] += v'): the race is
                    # with the other thread's read, at its own line, which is where the barrier goes.
                    other, other_pos = before, before_pos
        writers = lanes[hit]
        same = same_value(writers) if same_value is not None else False
        self._race(ctx, mem, kind, lane, other, int(f[k]), pos, other_pos, writers, entries=f[hit], same_value=same,
                   atomic=atomic)

    def _race(self, ctx: Ctx, mem: Memory, kind: RaceKind, lane: int, other: int, f: int, pos: Pos, other_pos: Pos,
              lanes: Any, *, entries: Any = None, same_value: bool = False, atomic: AtomicSide | None = None) -> None:
        """Report a race. ``atomic``: which of the two accesses is the atomic one, if one is;
        ``same_value``: both writes store the same bits (a benign race, a note)."""
        severity = Severity.NOTE if same_value else Severity.ERROR
        if ctx.is_reported(FindingKind.RACE, pos, mem.name, severity):
            return
        place = self._place(mem, f, lane)
        if entries is not None:  # how many elements (distinct places in memory) race the same way
            place += more_elements(int(np.unique(np.asarray(entries) * _shadow(mem).granule // mem.unit).size))
        race = _RacePair(kind, _shadow(mem).space, lane, other, pos, other_pos, place,
                         same_group=other >= 0 and ctx.lanes.group[other] == ctx.lanes.group[lane],
                         preset=_shadow(mem).preset)
        if atomic is not None:
            message = _atomic_race_message(ctx, race, atomic)
        elif same_value:
            message = _benign_race_message(ctx, race)
        else:
            message = _race_message(ctx, race)
        mask = np.zeros(ctx.n, dtype=bool)
        mask[lanes] = True
        ctx.report_first(FindingKind.RACE, pos, lane, mask, message, buffer=mem.name,
                         index=self._element(mem, f, lane), race=kind, other_pos=other_pos,
                         other_thread=ctx.lanes.describe(other) if other >= 0 else None, severity=severity)

    # ------------------------------------------------------------- the end
    def finish(self, ctx: Ctx, outputs: list[Memory], init_value: Any) -> None:
        if init_value is not None:
            return
        for mem in outputs:
            sh = _shadow(mem)
            if sh is None or sh.init.all():
                continue
            missing = np.unique(np.flatnonzero(~sh.init) * sh.granule // mem.unit)
            total = mem.nbytes // mem.unit
            hint = partial_group_fix(ctx)
            shown = ", ".join(str(int(i)) for i in missing[:8]) + (", ..." if missing.size > 8 else "")
            ctx.report(FindingKind.UNWRITTEN_OUTPUT, None, None,
                       f"{missing.size} of the {total} elements of output '{mem.name}' are never written "
                       f"(indices {shown}); a GPU would leave garbage there. "
                       f"{kind_entry(FindingKind.UNWRITTEN_OUTPUT).fix}" + ("" if ctx.audience == Audience.PUZZLE else
                                    " (for your own kernels, passing init_value to the call also fills them)")
                       + ("; this launch ends in a partial threadgroup, where threads_per_threadgroup is smaller: "
                          "positions computed from it go wrong there (dispatch_threads_per_threadgroup does not)"
                          if hint else ""),
                       buffer=mem.name, index=int(missing[0]), count=int(missing.size))


class AtomicSide(StrEnum):
    """Which access of a race between an atomic and a plain access is the atomic one."""

    NOW = "now"  # the access that found the race
    EARLIER = "earlier"  # the access it races with


#: What a thread read that nobody wrote, by where the memory lives.
_UNINITIALIZED = {AddressSpace.THREADGROUP: "threadgroup memory that no thread has written yet",
                  AddressSpace.THREAD: "a thread-private array element that was never assigned",
                  AddressSpace.DEVICE: "an output element that no thread has written"}

#: How a race's message words the access that found it, and the earlier one it races with.
_LATER = {RaceKind.READ_AFTER_WRITE: "reads", RaceKind.WRITE_AFTER_READ: "writes",
          RaceKind.WRITE_AFTER_WRITE: "writes"}
_EARLIER = {RaceKind.READ_AFTER_WRITE: "written by", RaceKind.WRITE_AFTER_READ: "read by",
            RaceKind.WRITE_AFTER_WRITE: "also written by"}
_EARLIER_THAN_ATOMIC = {**_EARLIER, RaceKind.WRITE_AFTER_WRITE: "written by"}


@dataclass(frozen=True)
class _RacePair:
    """The two accesses of a race, as its message builders need them."""

    kind: RaceKind
    space: AddressSpace  # threadgroup or device memory
    lane: int  # the thread of the access that found the race
    other: int  # the earlier access's thread (-1: several threads)
    pos: Pos
    other_pos: Pos
    place: str  # 'buf[3] (and 2 more elements)'
    same_group: bool  # the two threads are in one threadgroup
    preset: bool  # the memory held values before the kernel ran (an output with init_value)

    def opening(self, ctx: Ctx, verb: str, earlier: str) -> str:
        """'thread 2 writes buf[3], read by thread 5 in the same barrier phase (line 4)'."""
        them = ctx.lanes.label(self.other) if self.other >= 0 else "other threads"
        if self.space == AddressSpace.THREADGROUP or self.same_group:
            where = "in the same barrier phase"
        else:
            where = "in another threadgroup during the same dispatch"
        return f"{ctx.lanes.label(self.lane)} {verb} {self.place}, {earlier} {them} {where} (line {self.other_pos.line})"

    def misplaced(self, ctx: Ctx) -> str | None:
        """Device threads of different threadgroups at one element because a partial threadgroup
        computed its positions wrongly: the fix is the position, not the way of writing."""
        return None if self.same_group or self.space == AddressSpace.THREADGROUP else partial_group_fix(ctx)


def _atomic_race_message(ctx: Ctx, race: _RacePair, atomic: AtomicSide) -> str:
    """An atomic and a plain access to one element that nothing orders."""
    if atomic == AtomicSide.NOW:
        verb, earlier = "atomically updates", _EARLIER_THAN_ATOMIC[race.kind]
    else:
        verb, earlier = _LATER[race.kind], "atomically updated by"
    fix = _weak_barrier_fix(ctx, race) or atomic_plain_race_fix(race.space, race.same_group, race.other_pos, race.pos)
    return f"{race.opening(ctx, verb, earlier)}: {fix}"


def _benign_race_message(ctx: Ctx, race: _RacePair) -> str:
    """Two threads writing the same value to one element: harmless in itself, but where the two
    threads computed one position it is a wrong one."""
    misplaced = race.misplaced(ctx)
    return (f"{race.opening(ctx, 'writes', 'also written by')}, with the same value: "
            + (misplaced if misplaced is not None else benign_race_fix()))


def _race_message(ctx: Ctx, race: _RacePair) -> str:
    return f"{race.opening(ctx, _LATER[race.kind], _EARLIER[race.kind])}: {_race_fix(ctx, race)}"


def _race_fix(ctx: Ctx, race: _RacePair) -> str:
    """What fixes a race of plain accesses: a barrier where it goes, or atomics, or a position."""
    pos, other_pos = race.pos, race.other_pos
    misplaced = race.misplaced(ctx)
    if race.space == AddressSpace.THREADGROUP:
        fix = threadgroup_race_fix(pos, other_pos, later_writes=race.kind != RaceKind.READ_AFTER_WRITE,
                                   in_loop=in_loop(ctx))
        lanes = ctx.lanes
        if race.other >= 0 and race.same_group and lanes.threads_in_group[lanes.group[race.lane]] > SIMD_WIDTH \
                and lanes.simd_in_group[race.other] == lanes.simd_in_group[race.lane]:
            # A tile per SIMD-group (a GEMM's): the cheaper barrier may be all it needs.
            fix += f"; {simdgroup_barrier_fix(lanes.simd_in_group[race.lane])}"
    elif misplaced is not None:  # the thread's position is wrong, not its way of writing
        fix = misplaced
    elif race.kind == RaceKind.WRITE_AFTER_WRITE:
        fix = device_write_race_fix(ctx.audience, ctx.host, race.preset)
    else:
        fix = device_update_race_fix(ctx.audience, ctx.host, race.same_group, race.preset)
    return _weak_barrier_fix(ctx, race) or fix


def _weak_barrier_fix(ctx: Ctx, race: _RacePair) -> str | None:
    """Where a barrier ran between the race's two accesses but its mem_flags left their memory
    unordered, the fix is its flags (whatever the accesses are); else None."""
    pos, other_pos = race.pos, race.other_pos
    weak = ctx.unordered_by.get(race.space)
    between = weak is not None and weak.file == pos.file and min(other_pos.line, pos.line) < weak.line < max(
        other_pos.line, pos.line)
    if weak is not None and between and (race.space == AddressSpace.THREADGROUP or race.same_group):
        return barrier_flags_fix(weak, race.space, other_pos, pos)
    return None


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
