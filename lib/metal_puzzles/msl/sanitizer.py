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

from .errors import Pos
from .memory import Memory


class Shadow:
    """Per-element bookkeeping for one memory object."""

    def __init__(self, size: int, initialized: bool, track_races: bool, device: bool) -> None:
        self.init = np.full(size, initialized, dtype=bool)
        self.track_races = track_races
        self.device = device
        if track_races:
            self.w_lane = np.full(size, -1, dtype=np.int64)
            self.w_group = np.zeros(size, dtype=np.int64)
            self.w_phase = np.zeros(size, dtype=np.int64)
            self.w_pos = np.zeros(size, dtype=np.int32)
            self.r_lane = np.full(size, -1, dtype=np.int64)
            self.r_group = np.zeros(size, dtype=np.int64)
            self.r_phase = np.zeros(size, dtype=np.int64)
            self.r_pos = np.zeros(size, dtype=np.int32)
            self.r_multi = np.zeros(size, dtype=bool)


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
        mem.shadow = Shadow(mem.data.size, initialized, track_races=mem.space in ("threadgroup", "device"),
                            device=mem.space == "device")

    # ------------------------------------------------------------- accesses
    @staticmethod
    def _lanes_and_flat(ctx, flat, mask):
        lanes = np.arange(ctx.n) if mask is None else np.flatnonzero(mask)
        f = np.asarray(flat)
        if f.ndim == 0 or f.shape[0] != ctx.n:
            f = np.broadcast_to(f, (ctx.n,) + f.shape)
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
        bad = ~sh.init[f]
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            self._uninit(ctx, mem, lanes[bad], int(f[k]), lanes[k], pos)
        if not sh.track_races:
            return
        group = ctx.lanes.group[lanes]
        phase = ctx.phase[group]
        wl = sh.w_lane[f]
        same_epoch = (sh.w_group[f] != group) | (sh.w_phase[f] == phase) if sh.device else (sh.w_phase[f] == phase)
        raw = (wl >= 0) & (wl != lanes) & same_epoch
        if raw.any():
            k = int(np.flatnonzero(raw)[0])
            self._race(ctx, mem, "read-after-write", int(lanes[k]), int(wl[k]), int(f[k]), pos,
                       self.positions[sh.w_pos[f[k]]], lanes[raw])
        # Remember readers: one lane per element, and whether several distinct threads read it.
        uniq, first, counts = np.unique(f, return_index=True, return_counts=True)
        ul = lanes[first]
        ug = group[first]
        up = phase[first]
        old_lane = sh.r_lane[uniq]
        old_epoch = (old_lane >= 0) & (((sh.r_group[uniq] != ug) | (sh.r_phase[uniq] == up)) if sh.device
                                       else (sh.r_phase[uniq] == up))
        multi = (counts > 1) | (old_epoch & ((old_lane != ul) | sh.r_multi[uniq]))
        keep_old = old_epoch
        sh.r_multi[uniq] = multi
        sh.r_lane[uniq] = np.where(keep_old, old_lane, ul)
        sh.r_group[uniq] = np.where(keep_old, sh.r_group[uniq], ug)
        sh.r_phase[uniq] = np.where(keep_old, sh.r_phase[uniq], up)
        sh.r_pos[uniq] = np.where(keep_old, sh.r_pos[uniq], self.pos_id(pos))

    def on_write(self, ctx, mem: Memory, flat, mask, pos: Pos) -> None:
        sh = mem.shadow
        lanes, f = self._lanes_and_flat(ctx, flat, mask)
        if lanes.size == 0:
            return
        if sh.track_races:
            group = ctx.lanes.group[lanes]
            phase = ctx.phase[group]
            # Two threads of this very statement writing one element.
            order = np.argsort(f, kind="stable")
            fs, ls = f[order], lanes[order]
            dup = (fs[1:] == fs[:-1]) & (ls[1:] != ls[:-1])
            if dup.any():
                k = int(np.flatnonzero(dup)[0])
                self._race(ctx, mem, "write-after-write", int(ls[k + 1]), int(ls[k]), int(fs[k]), pos, pos,
                           np.unique(np.concatenate([ls[1:][dup], ls[:-1][dup]])))
            wl = sh.w_lane[f]
            if sh.device:
                w_epoch = (sh.w_group[f] != group) | (sh.w_phase[f] == phase)
                r_epoch = (sh.r_group[f] != group) | (sh.r_phase[f] == phase)
            else:
                w_epoch = sh.w_phase[f] == phase
                r_epoch = sh.r_phase[f] == phase
            waw = (wl >= 0) & (wl != lanes) & w_epoch
            if waw.any():
                k = int(np.flatnonzero(waw)[0])
                self._race(ctx, mem, "write-after-write", int(lanes[k]), int(wl[k]), int(f[k]), pos,
                           self.positions[sh.w_pos[f[k]]], lanes[waw])
            rl = sh.r_lane[f]
            war = (rl >= 0) & ((rl != lanes) | sh.r_multi[f]) & r_epoch
            if war.any():
                k = int(np.flatnonzero(war)[0])
                other = int(rl[k])
                if other == int(lanes[k]):
                    other = -1  # several readers; the recorded one is this thread
                self._race(ctx, mem, "write-after-read", int(lanes[k]), other, int(f[k]), pos,
                           self.positions[sh.r_pos[f[k]]], lanes[war])
            sh.w_lane[f] = lanes
            sh.w_group[f] = group
            sh.w_phase[f] = phase
            sh.w_pos[f] = self.pos_id(pos)
        sh.init[f] = True

    def on_atomic(self, ctx, mem: Memory, flat, lanes) -> None:
        sh = mem.shadow
        sh.init[np.asarray(flat)[lanes]] = True

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
                "device": "an output element that no thread has written (the launch has no init_value)"}[mem.space]
        fix = {"threadgroup": "write it first (and put a threadgroup_barrier between the write and this read)",
               "thread": "initialise the array, e.g. 'float x[4] = {0};'",
               "device": "write it before reading it, or launch with init_value"}[mem.space]
        mask = np.zeros(ctx.n, dtype=bool)
        mask[lane] = True
        mask[lanes] = True
        ctx.report_first("uninitialized-read", pos, lane, mask,
                         f"{ctx.lanes.name(int(lane))} reads {mem.name}[{idx}], {what}: {fix}",
                         buffer=mem.name, index=idx)

    def _race(self, ctx, mem: Memory, kind: str, lane: int, other: int, f: int, pos: Pos, other_pos: Pos,
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
        if mem.space == "threadgroup":
            fix = ("add threadgroup_barrier(mem_flags::mem_threadgroup) between the two accesses (line "
                   f"{other_pos.line} and line {pos.line})" if other_pos != pos else
                   "make each thread write its own element")
            where = "in the same barrier phase"
        else:
            same_group = other >= 0 and ctx.lanes.group[other] == ctx.lanes.group[lane]
            where = "in the same barrier phase" if same_group else "in another threadgroup during the same dispatch"
            fix = ("make each output element written by one thread, or use atomics (atomic_outputs=True)"
                   if kind == "write-after-write" else
                   "threads of different threadgroups cannot synchronise within a kernel; read only what this "
                   "thread wrote, or split the work into two kernels")
        message = f"{me} {verb} {mem.name}[{idx}], {earlier} {them} {where} (line {other_pos.line}): {fix}"
        mask = np.zeros(ctx.n, dtype=bool)
        mask[lanes] = True
        extra = {"race": kind, "other_pos": other_pos,
                 "other_thread": ctx.lanes.describe(other) if other >= 0 else None}
        ctx.report_first("race", pos, lane, mask, message, buffer=mem.name, index=idx, **extra)

    # ------------------------------------------------------------- the end
    def finish(self, ctx, outputs: list[Memory], init_value) -> None:
        if init_value is not None:
            return
        for mem in outputs:
            sh = mem.shadow
            if sh is None or sh.init.all():
                continue
            missing = np.flatnonzero(~sh.init)
            shown = ", ".join(str(int(i)) for i in missing[:8]) + (", ..." if missing.size > 8 else "")
            ctx.report("unwritten-output", None, None,
                       f"{missing.size} of the {sh.init.size} elements of output '{mem.name}' are never written "
                       f"(indices {shown}); a GPU would leave garbage there. Write every element, or launch with "
                       "init_value", buffer=mem.name, index=int(missing[0]), count=int(missing.size))
