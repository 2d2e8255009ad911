"""The sanitizer: what a GPU would hide, the simulator reports.

It shadows every writable memory object (threadgroup arrays, outputs, thread-private arrays)
with who last wrote and read each element and in which barrier phase, and checks each access:

* data races: two threads of a threadgroup touching one threadgroup element in one barrier phase,
  at least one writing; two threads writing one device element without atomics, or one reading
  what another wrote, unless both are in one threadgroup with a barrier between them;
* reads of memory nobody initialised (threadgroup memory, thread-private arrays and variables,
  outputs launched without ``init_value``), and output elements never written;

Out-of-bounds accesses, barrier divergence, division by zero and the step budget are checked
where they happen (runtime/executor); all findings go through ``Ctx.report``.
"""

from __future__ import annotations

import numpy as np

from ..lang.errors import Pos
from ..lang.types import AddressSpace
from ..run.findings import FindingKind, RaceKind
from ..run.hints import Audience, partial_group_fix, uninitialized_fix
from ..run.memory import Memory


class Shadow:
    """Per-element bookkeeping for one memory object.

    Writes are recorded eagerly (last writer, when, where). Reads of threadgroup memory are only
    queued until the next barrier: a read can race only with a write in the same phase, and most
    phases (e.g. the compute phase of a tiled matmul) never write after reading, so the queue is
    usually dropped unexamined. Device memory spans threadgroups that never synchronise, so its
    readers are recorded eagerly.
    """

    def __init__(self, size: int, initialized: bool, track_races: bool, device: bool) -> None:
        self.init = np.full(size, initialized, dtype=bool)
        self.all_init = bool(initialized) or size == 0
        self.track_races = track_races
        self.device = device
        self.last_write_epoch = -1
        if track_races:
            self.w_lane = np.full(size, -1, dtype=np.int64)
            self.w_epoch = np.full(size, -1, dtype=np.int64)  # barrier count (threadgroup) / phase (device)
            self.w_group = np.zeros(size, dtype=np.int64)
            self.w_pos = np.zeros(size, dtype=np.int32)
            if device:
                self.r_lane = np.full(size, -1, dtype=np.int64)
                self.r_group = np.zeros(size, dtype=np.int64)
                self.r_phase = np.full(size, -1, dtype=np.int64)
                self.r_pos = np.zeros(size, dtype=np.int32)
                self.r_multi = np.zeros(size, dtype=bool)
            else:
                self.pending: list[tuple[np.ndarray, np.ndarray, int]] = []
                self.pending_epoch = -1
                self.reader_table: tuple | None = None


class Sanitizer:
    def __init__(self) -> None:
        self.positions: list[Pos] = []
        self._pos_ids: dict[Pos, int] = {}
        self.reported: set[tuple] = set()

    def pos_id(self, pos: Pos) -> int:
        k = self._pos_ids.get(pos)
        if k is None:
            k = self._pos_ids[pos] = len(self.positions)
            self.positions.append(pos)
        return k

    # ---------------------------------------------------------------- setup
    def watch(self, mem: Memory, initialized: bool) -> None:
        mem.shadow = Shadow(mem.data.size, initialized, track_races=mem.space in (AddressSpace.THREADGROUP, AddressSpace.DEVICE),
                            device=mem.space == AddressSpace.DEVICE)

    # ------------------------------------------------------------- accesses
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

    def on_read(self, ctx, mem: Memory, flat, mask, pos: Pos) -> None:
        sh = mem.shadow
        lanes, f = self._lanes_and_flat(ctx, flat, mask)
        if lanes.size == 0:
            return
        if not sh.all_init:
            bad = ~sh.init[f]
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                self._uninit(ctx, mem, lanes[bad], int(f[k]), lanes[k], pos)
        if not sh.track_races:
            return
        if sh.device:
            self._device_read(ctx, sh, mem, lanes, f, pos)
            return
        # Phases are per threadgroup; an element belongs to one threadgroup, so comparing the phase
        # recorded with the element against the accessing lane's phase is exact.
        phase = ctx.lane_phase if lanes is ctx.all_lanes else ctx.lane_phase[lanes]
        if sh.last_write_epoch == ctx.sync_epoch:  # else every group passed a barrier since the last write
            wl = sh.w_lane[f]
            raw = (wl >= 0) & (wl != lanes) & (sh.w_epoch[f] == phase)
            if raw.any():
                k = int(np.flatnonzero(raw)[0])
                self._race(ctx, mem, RaceKind.READ_AFTER_WRITE, int(lanes[k]), int(wl[k]), int(f[k]), pos,
                           self.positions[sh.w_pos[f[k]]], lanes[raw])
        if sh.pending_epoch != ctx.sync_epoch:
            sh.pending = []
            sh.pending_epoch = ctx.sync_epoch
        sh.pending.append((f, lanes, self.pos_id(pos), phase))
        sh.reader_table = None

    def _readers(self, sh: Shadow, size: int):
        """Who read each element in the current phase: (lane or -1, several readers?, position)."""
        if sh.reader_table is None:
            reader = np.full(size, -1, dtype=np.int64)
            where = np.zeros(size, dtype=np.int32)
            when = np.full(size, -1, dtype=np.int64)
            multi = np.zeros(size, dtype=bool)
            for f, lanes, pid, phase in sh.pending:
                prev = reader[f]
                same = (prev >= 0) & (when[f] == phase)
                multi[f[same & (prev != lanes)]] = True
                multi[f[~same]] = False
                reader[f] = lanes
                where[f] = pid
                when[f] = phase
                multi[f[reader[f] != lanes]] = True  # two lanes of this access read one element
            sh.reader_table = (reader, multi, where, when)
        return sh.reader_table

    def _device_read(self, ctx, sh: Shadow, mem: Memory, lanes, f, pos: Pos) -> None:
        group = ctx.lanes.group[lanes]
        phase = ctx.phase[group]
        wl = sh.w_lane[f]
        raw = (wl >= 0) & (wl != lanes) & ((sh.w_group[f] != group) | (sh.w_epoch[f] == phase))
        if raw.any():
            k = int(np.flatnonzero(raw)[0])
            self._race(ctx, mem, RaceKind.READ_AFTER_WRITE, int(lanes[k]), int(wl[k]), int(f[k]), pos,
                       self.positions[sh.w_pos[f[k]]], lanes[raw])
        old = sh.r_lane[f]
        current = (old >= 0) & ((sh.r_group[f] != group) | (sh.r_phase[f] == phase))
        multi = current & ((old != lanes) | sh.r_multi[f])
        sh.r_lane[f] = lanes
        sh.r_group[f] = group
        sh.r_phase[f] = phase
        sh.r_pos[f] = self.pos_id(pos)
        sh.r_multi[f] = multi
        sh.r_multi[f[sh.r_lane[f] != lanes]] = True

    def on_write(self, ctx, mem: Memory, flat, mask, pos: Pos) -> None:
        sh = mem.shadow
        lanes, f = self._lanes_and_flat(ctx, flat, mask)
        if lanes.size == 0:
            return
        if sh.track_races:
            if sh.device:
                group = ctx.lanes.group[lanes]
                epoch = ctx.phase[group]
                w_same = (sh.w_group[f] != group) | (sh.w_epoch[f] == epoch)
                rl = sh.r_lane[f]
                war = (rl >= 0) & ((rl != lanes) | sh.r_multi[f]) & ((sh.r_group[f] != group) | (sh.r_phase[f] == epoch))
                r_pos = sh.r_pos
            else:
                group = None
                epoch = ctx.lane_phase if lanes is ctx.all_lanes else ctx.lane_phase[lanes]
                w_same = sh.w_epoch[f] == epoch
                war = None
                if sh.pending and sh.pending_epoch == ctx.sync_epoch:
                    reader, multi, where, when = self._readers(sh, mem.data.size)
                    rl = reader[f]
                    war = (rl >= 0) & ((rl != lanes) | multi[f]) & (when[f] == epoch)
                    r_pos = where
            wl = sh.w_lane[f]
            waw = (wl >= 0) & (wl != lanes) & w_same
            if waw.any():
                k = int(np.flatnonzero(waw)[0])
                self._race(ctx, mem, RaceKind.WRITE_AFTER_WRITE, int(lanes[k]), int(wl[k]), int(f[k]), pos,
                           self.positions[sh.w_pos[f[k]]], lanes[waw])
            if war is not None and war.any():
                k = int(np.flatnonzero(war)[0])
                other = int(rl[k])
                if other == int(lanes[k]):
                    other = -1  # several readers; the recorded one is this thread
                self._race(ctx, mem, RaceKind.WRITE_AFTER_READ, int(lanes[k]), other, int(f[k]), pos,
                           self.positions[r_pos[f[k]]], lanes[war])
            sh.w_lane[f] = lanes
            # Two lanes of this very statement writing one element: the survivor differs from a writer.
            clash = sh.w_lane[f] != lanes
            if clash.any():
                k = int(np.flatnonzero(clash)[0])
                self._race(ctx, mem, RaceKind.WRITE_AFTER_WRITE, int(lanes[k]), int(sh.w_lane[f[k]]), int(f[k]), pos, pos,
                           lanes[clash])
            sh.w_epoch[f] = epoch
            if group is not None:
                sh.w_group[f] = group
            sh.w_pos[f] = self.pos_id(pos)
            sh.last_write_epoch = ctx.sync_epoch
        if not sh.all_init:
            sh.init[f] = True
            sh.all_init = bool(sh.init.all())

    def on_atomic(self, ctx, mem: Memory, flat, lanes) -> None:
        sh = mem.shadow
        if not sh.all_init:
            sh.init[np.asarray(flat)[lanes]] = True
            sh.all_init = bool(sh.init.all())

    # ------------------------------------------------------------- findings
    def _element(self, ctx, mem: Memory, f: int, lane: int) -> int:
        if mem.lane_base is None:
            return f
        return f - int(mem.lane_base[lane])

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
        mask = np.zeros(ctx.n, dtype=bool)
        mask[lane] = True
        mask[lanes] = True
        ctx.report_first(FindingKind.UNINITIALIZED_READ, pos, lane, mask,
                         f"{ctx.lanes.name(int(lane))} reads {mem.name}[{idx}], {what}: {fix}",
                         buffer=mem.name, index=idx)

    def _race(self, ctx, mem: Memory, kind: RaceKind, lane: int, other: int, f: int, pos: Pos, other_pos: Pos,
              lanes) -> None:
        key = ("race", mem.name, pos, other_pos)
        if key in self.reported:
            return
        self.reported.add(key)
        idx = self._element(ctx, mem, f, lane)
        me = ctx.lanes.name(lane)
        them = ctx.lanes.name(other) if other >= 0 else "other threads"
        verb = {"read-after-write": "reads", "write-after-read": "writes", "write-after-write": "writes"}[kind]
        earlier = {"read-after-write": "written by", "write-after-read": "read by", "write-after-write": "also written by"}[kind]
        if mem.space == AddressSpace.THREADGROUP:
            fix = ("add threadgroup_barrier(mem_flags::mem_threadgroup) between the two accesses (line "
                   f"{other_pos.line} and line {pos.line})" if other_pos != pos else
                   "make each thread write its own element")
            where = "in the same barrier phase"
        else:
            same_group = other >= 0 and ctx.lanes.group[other] == ctx.lanes.group[lane]
            where = "in the same barrier phase" if same_group else "in another threadgroup during the same dispatch"
            misplaced = None if same_group else partial_group_fix(ctx)
            if misplaced is not None:  # the thread's position is wrong, not its way of writing
                fix = misplaced
            elif kind == "write-after-write":
                fix = "make each output element written by one thread, or use atomics (atomic_outputs=True)"
            elif same_group:
                fix = ("several threads update one element: accumulate with atomics, or combine the values in "
                       "threadgroup memory and let one thread write the result")
            else:
                fix = ("threads of different threadgroups cannot synchronise within a kernel: read only what this "
                       "thread wrote, use atomics, or split the work into two kernels")
        message = f"{me} {verb} {mem.name}[{idx}], {earlier} {them} {where} (line {other_pos.line}): {fix}"
        mask = np.zeros(ctx.n, dtype=bool)
        mask[lanes] = True
        ctx.report_first(FindingKind.RACE, pos, lane, mask, message, buffer=mem.name, index=idx, race=kind,
                         other_pos=other_pos, other_thread=ctx.lanes.describe(other) if other >= 0 else None)

    # ------------------------------------------------------------- the end
    def finish(self, ctx, outputs: list[Memory], init_value) -> None:
        if init_value is not None:
            return
        for mem in outputs:
            sh = mem.shadow
            if sh is None or sh.init.all():
                continue
            missing = np.flatnonzero(~sh.init)
            hint = partial_group_fix(ctx)
            shown = ", ".join(str(int(i)) for i in missing[:8]) + (", ..." if missing.size > 8 else "")
            ctx.report(FindingKind.UNWRITTEN_OUTPUT, None, None,
                       f"{missing.size} of the {sh.init.size} elements of output '{mem.name}' are never written "
                       f"(indices {shown}); a GPU would leave garbage there. Make sure some thread writes every "
                       "element" + ("" if ctx.audience == Audience.PUZZLE else
                                    " (for your own kernels, passing init_value to the call also fills them)")
                       + ("; this launch ends in a partial threadgroup, where threads_per_threadgroup is smaller: "
                          "positions computed from it go wrong there (dispatch_threads_per_threadgroup does not)"
                          if hint else ""),
                       buffer=mem.name, index=int(missing[0]), count=int(missing.size))
