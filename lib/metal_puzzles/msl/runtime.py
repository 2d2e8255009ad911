"""The state of one kernel launch while it runs: the threads (lanes), their execution masks,
frames and loops, memory accesses with counting and bounds checks, and findings.

All threads of the grid run in lock-step, one statement at a time; a *mask* says which lanes
execute. ``None`` means every lane. Because threadgroups never communicate except through
device memory, running them together is one of the schedules a GPU may choose.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import KernelRuntimeError, Pos
from .memory import GLOBAL, SHARED, Memory, Ptr

SIMD_WIDTH = 32


class StopKernel(Exception):
    """Raised inside the executor to abandon the run (step budget exhausted, fatal finding)."""


@dataclass
class Finding:
    """Something a GPU would hide and the simulator reports."""

    kind: str  # 'out-of-bounds', 'division-by-zero', 'step-budget', 'race', ...
    message: str
    pos: Pos | None
    threads: list[dict] = field(default_factory=list)  # [{'grid': (x,y,z), 'group': ..., 'local': ...}]
    buffer: str | None = None
    index: int | None = None
    extra: dict = field(default_factory=dict)

    def __str__(self) -> str:
        where = f"{self.pos}: " if self.pos is not None else ""
        return f"{where}{self.kind}: {self.message}"


class Frame:
    """A function activation: which lanes have returned, and the value they returned."""

    __slots__ = ("ret", "ret_val")

    def __init__(self) -> None:
        self.ret = None  # bool (N,) or None
        self.ret_val = None


class LoopState:
    __slots__ = ("brk", "cont", "is_switch", "outer", "pos")

    def __init__(self, pos: Pos | None = None, outer: LoopState | None = None) -> None:
        self.brk = None
        self.cont = None
        self.is_switch = False
        self.outer = outer
        self.pos = pos  # where the loop (or switch) starts, for step-budget findings


def or_mask(a, b):
    if a is None:
        return b.copy()
    return a | b


class Lanes:
    """Geometry of the launch: for every lane its grid position, threadgroup, and SIMD lane."""

    def __init__(self, grid: tuple[int, int, int], tg: tuple[int, int, int]) -> None:
        gx, gy, gz = grid
        tx, ty, tz = tg
        self.grid = grid
        self.tg = tg
        ngx, ngy, ngz = -(-gx // tx), -(-gy // ty), -(-gz // tz)
        self.groups = (ngx, ngy, ngz)
        self.n_groups = ngx * ngy * ngz
        # Enumerate lanes threadgroup by threadgroup (so each group's lanes are contiguous).
        g = np.arange(self.n_groups, dtype=np.int64)
        gpx, gpy, gpz = g % ngx, (g // ngx) % ngy, g // (ngx * ngy)
        l = np.arange(tx * ty * tz, dtype=np.int64)
        lpx, lpy, lpz = l % tx, (l // tx) % ty, l // (tx * ty)
        px = (gpx[:, None] * tx + lpx[None, :]).ravel()
        py = (gpy[:, None] * ty + lpy[None, :]).ravel()
        pz = (gpz[:, None] * tz + lpz[None, :]).ravel()
        inside = (px < gx) & (py < gy) & (pz < gz)
        self.group = np.repeat(g, tx * ty * tz)[inside]
        self.pos = np.stack([px[inside], py[inside], pz[inside]], axis=1)
        self.local = np.stack([np.tile(lpx, self.n_groups)[inside], np.tile(lpy, self.n_groups)[inside],
                               np.tile(lpz, self.n_groups)[inside]], axis=1)
        self.group_pos = np.stack([gpx, gpy, gpz], axis=1)
        self.n = int(inside.sum())
        # Actual size of each threadgroup (edge groups of a dispatchThreads grid are partial).
        gsize = np.stack([np.minimum(tx, gx - gpx * tx), np.minimum(ty, gy - gpy * ty),
                          np.minimum(tz, gz - gpz * tz)], axis=1)
        self.group_size = gsize
        lsize = gsize[self.group]
        # Linear index within the threadgroup, dense over the threadgroup's actual extent.
        self.index_in_group = (self.local[:, 0] + self.local[:, 1] * lsize[:, 0]
                               + self.local[:, 2] * lsize[:, 0] * lsize[:, 1])
        self.threads_in_group = np.prod(gsize, axis=1)
        # SIMD groups: consecutive runs of 32 lanes of one threadgroup.
        simds_per_group = -(-self.threads_in_group // SIMD_WIDTH)
        first_simd = np.concatenate([[0], np.cumsum(simds_per_group)[:-1]])
        self.simd_in_group = self.index_in_group // SIMD_WIDTH
        self.simd_lane = self.index_in_group % SIMD_WIDTH
        self.simd_global = first_simd[self.group] + self.simd_in_group
        self.n_simds = int(simds_per_group.sum())
        self.simds_per_group = simds_per_group
        # Order lanes by (simd group, lane) for the padded SIMD layout.
        self.simd_table = np.full((max(self.n_simds, 1), SIMD_WIDTH), -1, dtype=np.int64)
        self.simd_table[self.simd_global, self.simd_lane] = np.arange(self.n)
        # Linear grid index of each lane (the order counts are reported in).
        self.grid_linear = px[inside] + py[inside] * gx + pz[inside] * gx * gy
        self.uniform_groups = bool(np.all(self.threads_in_group == tx * ty * tz))

    def quad_global(self) -> np.ndarray:
        if not hasattr(self, "_quad_global"):
            quads_per_group = -(-self.threads_in_group // 4)
            first = np.concatenate([[0], np.cumsum(quads_per_group)[:-1]])
            self._quad_global = first[self.group] + self.index_in_group // 4
            table = np.full((max(int(quads_per_group.sum()), 1), 4), -1, dtype=np.int64)
            table[self._quad_global, self.index_in_group % 4] = np.arange(self.n)
            self._quad_table = table
        return self._quad_global

    def quad_table(self) -> np.ndarray:
        self.quad_global()
        return self._quad_table

    def describe(self, lane: int) -> dict:
        return {
            "grid": tuple(int(v) for v in self.pos[lane]),
            "group": tuple(int(v) for v in self.group_pos[self.group[lane]]),
            "local": tuple(int(v) for v in self.local[lane]),
        }

    def name(self, lane: int) -> str:
        d = self.describe(lane)
        return f"thread {_fmt(d['local'])} of threadgroup {_fmt(d['group'])}"


def _bits_dtype(dt):
    return {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dt).itemsize]


def _fmt(t) -> str:
    return "(" + ",".join(str(v) for v in t) + ")"


COUNTERS = ("global_reads", "global_writes", "shared_reads", "shared_writes", "atomics")


class Ctx:
    """Mutable state of one launch."""

    def __init__(self, lanes: Lanes, sanitize: str, max_steps: int, recorder=None) -> None:
        self.lanes = lanes
        self.n = lanes.n
        self.slots: list = []
        self.frame = Frame()
        self.loop: LoopState | None = None
        self.counts = {k: np.zeros(self.n, dtype=np.int64) for k in COUNTERS}
        self.sanitize = sanitize
        self.max_steps = max_steps
        self.steps = 0
        self.findings: list[Finding] = []
        self.recorder = recorder
        self.phase = np.zeros(lanes.n_groups, dtype=np.int64)  # barrier phase per threadgroup
        self.memories: dict[str, Memory] = {}
        self.call_depth = 0
        self.attrs: dict[str, object] = {}
        self.buffers: dict[str, Ptr] = {}
        self.scalars: dict[str, object] = {}
        self.sanitizer = None  # sanitizer.Sanitizer when findings are checked
        self.stepper = None  # stepper.Stepper when a step-through record is asked for
        self.local_init: dict = {}  # (id(frame slots), slot) -> lanes whose variable holds a value
        self.root_frame = self.frame
        self._reported: set = set()
        self.barrier_count = 0  # barriers executed so far (any threadgroup)
        self.sync_epoch = 0  # barriers that every threadgroup took: all of them are in a new phase
        self.lane_phase = np.zeros(self.n, dtype=np.int64)  # barrier phase of each lane's threadgroup
        self.all_lanes = np.arange(self.n)
        self.barrier_hooks: list = []

    # ----------------------------------------------------------------- masks
    def live(self, mask):
        """Drop lanes that returned, broke or continued."""
        dead = self.frame.ret
        loop = self.loop
        if loop is not None:
            for extra in (loop.brk, loop.cont):
                if extra is not None:
                    dead = extra if dead is None else (dead | extra)
        if dead is None:
            return mask
        if mask is None:
            return ~dead
        return mask & ~dead

    def full(self):
        return np.ones(self.n, dtype=bool)

    def step(self, pos: Pos, cost: int = 1) -> None:
        """Count one step of lock-step work: a statement, a call or a loop iteration.

        Counting every statement and call (not only loop iterations) bounds all work a kernel can
        do, including loop-free blow-ups such as a tree of calls or a chain of templates. A step
        with a long expression costs more than one (``cost``), so no step is unboundedly large.
        """
        self.steps += cost
        if self.steps > self.max_steps:
            self.out_of_steps(pos)

    def out_of_steps(self, pos: Pos) -> None:
        # Point at the innermost loop being run, where there is one: that is what to look at.
        st = self.loop
        while st is not None and (st.is_switch or st.pos is None):
            st = st.outer
        where = st.pos if st is not None else pos
        self.report("step-budget", where, None,
                    f"the kernel ran more than {self.max_steps} steps (statements, calls and loop iterations, "
                    "counted once for all threads in lock-step; a long expression counts as several); is there an endless loop or runaway recursion? "
                    "(raise max_steps if the kernel really needs more)")
        raise StopKernel()

    # -------------------------------------------------------------- findings
    def report(self, kind: str, pos: Pos | None, lanes_mask, message: str, buffer: str | None = None,
               index: int | None = None, first_lane: int | None = None, **extra) -> None:
        if self.sanitize == "off" and kind != "step-budget":
            return
        key = (kind, pos, buffer)
        if kind != "step-budget" and key in self._reported:
            return
        self._reported.add(key)
        threads = []
        if lanes_mask is not None:
            ids = list(np.flatnonzero(lanes_mask)[:8])
            if first_lane is not None:
                ids = [first_lane] + [i for i in ids if i != first_lane][:7]
            threads = [self.lanes.describe(int(i)) for i in ids]
        self.findings.append(Finding(kind, message, pos, threads, buffer, index, extra))
        if len(self.findings) > 200:
            raise StopKernel()

    def report_first(self, kind: str, pos: Pos | None, lane: int, lanes_mask, message: str, **kw) -> None:
        """Report a finding whose primary thread is ``lane``."""
        self.report(kind, pos, lanes_mask, message, first_lane=int(lane), **kw)

    # ---------------------------------------------------------------- memory
    def count(self, which: str, mask, amount: int = 1) -> None:
        arr = self.counts[which]
        if mask is None:
            arr += amount
        elif amount == 1:
            arr += mask
        else:
            arr += mask * amount

    def _check_bounds(self, mem: Memory, off, mask, width: int, pos: Pos, what: str):
        """Return (offsets safe to index with, lanes that are out of bounds or None)."""
        limit = mem.region_size - width
        bad = (off < 0) | (off > limit)
        if not np.any(bad):
            return off, None
        active_bad = bad if mask is None else (bad & mask) if np.ndim(bad) else (mask if bad else None)
        if np.ndim(active_bad) == 0:
            active_bad = self.full() if (active_bad and mask is None) else None
        if active_bad is not None and np.any(active_bad):
            lane = int(np.flatnonzero(active_bad)[0])
            idx = int(off[lane] if np.ndim(off) else off)
            self.report("out-of-bounds", pos, active_bad,
                        f"{self.lanes.name(lane)} {what} {mem.name}[{idx}], outside the "
                        f"{mem.region_size // max(width, 1) if width > 1 else mem.region_size} elements of "
                        f"'{mem.name}'" + (" (its threadgroup's copy)" if mem.space == "threadgroup" else ""),
                        buffer=mem.name, index=idx)
        else:
            active_bad = None
        safe = np.where(bad, 0, off) if np.ndim(off) else (0 if bad else off)
        return safe, active_bad

    def load(self, mem: Memory, off, mask, width: int, pos: Pos):
        """Read one scalar (width 1) or vector (width n) per active lane."""
        if mem.region_size < width:
            off_arr = off
            safe, bad = self._check_bounds(mem, off_arr, mask, width, pos, "reads")
            return np.zeros((self.n, width) if width > 1 else self.n, dtype=mem.data.dtype)
        safe, bad = self._check_bounds(mem, off, mask, width, pos, "reads")
        base = mem.lane_base
        flat = safe if base is None else base + safe
        if width == 1:
            val = mem.data[flat]
        else:
            val = mem.data[np.asarray(flat)[..., None] + np.arange(width)]
        if bad is not None:
            val = np.where(bad if width == 1 else bad[:, None], np.zeros_like(val), val)
        if mem.category is not None:
            self.count(mem.category + "_reads", mask, width)
        if mem.shadow is not None:
            m = mask if bad is None else (~bad if mask is None else mask & ~bad)
            self.sanitizer.on_read(self, mem, flat if width == 1 else np.asarray(flat)[..., None] + np.arange(width),
                                   m, pos)
        if self.recorder is not None:
            self.recorder.access("read", mem, mask, flat if width == 1 else np.asarray(flat)[..., None] + np.arange(width),
                                 pos, self, None)
            if self.recorder.provenance and mem.category is not None:
                val = self.recorder.track(self, mem, val, flat, mask, width)
        return val

    def store(self, mem: Memory, off, val, mask, width: int, pos: Pos) -> None:
        safe, bad = self._check_bounds(mem, off, mask, width, pos, "writes")
        if bad is not None:
            mask = ~bad if mask is None else (mask & ~bad)
        base = mem.lane_base
        flat = safe if base is None else base + safe
        data = mem.data
        if width > 1:
            flat = np.asarray(flat)[..., None] + np.arange(width)
        if mask is None:
            if np.ndim(flat) == (1 if width > 1 else 0) and np.ndim(val) > (1 if width > 1 else 0):
                # Every lane writes one element: the last lane wins (a race the sanitizer reports).
                data[flat] = val[-1]
            else:
                data[flat] = val
        else:
            if np.ndim(flat) == (1 if width > 1 else 0):
                flat = np.broadcast_to(flat, (self.n,) + np.shape(flat))
            if np.ndim(val) <= (1 if width > 1 else 0):
                data[flat[mask]] = val
            else:
                data[flat[mask]] = val[mask]
        if mem.category is not None:
            self.count(mem.category + "_writes", mask, width)
        if self.recorder is not None:
            self.recorder.access("write", mem, mask, flat, pos, self, val)
        if mem.shadow is not None:
            self.sanitizer.on_write(self, mem, flat, mask, pos)

    # ------------------------------------------------------------- barriers
    def barrier(self, mask, pos: Pos, simd: bool = False) -> None:
        """threadgroup_barrier: in lock-step every live thread is already here; what remains is
        to check that all of them are (barrier divergence) and to open a new phase."""
        if simd:
            return
        lanes = self.lanes
        if mask is None:
            groups = slice(None)
        else:
            exited = self.root_frame.ret
            waiting_for = ~exited if exited is not None else np.ones(self.n, dtype=bool)
            missing = waiting_for & ~mask
            present_groups = np.zeros(lanes.n_groups, dtype=bool)
            present_groups[lanes.group[mask]] = True
            missing &= present_groups[lanes.group]
            if missing.any():
                lane = int(np.flatnonzero(missing)[0])
                g = lanes.group[lane]
                here = np.flatnonzero(mask & (lanes.group == g))
                self.report("barrier-divergence", pos, missing,
                            f"threadgroup {_fmt(lanes.group_pos[g])} reaches this barrier with only some of its "
                            f"threads: {lanes.name(int(here[0]))} waits here but {lanes.name(lane)} never arrives "
                            "(a barrier must be reached by every thread of the threadgroup that has not "
                            "returned; move it out of the branch or loop that only some threads enter)")
            groups = np.unique(lanes.group[mask])
        self.phase[groups] += 1
        self.barrier_count += 1
        if isinstance(groups, slice) or len(groups) == lanes.n_groups:
            self.sync_epoch += 1
        self.lane_phase = self.phase[lanes.group]
        for hook in self.barrier_hooks:
            hook(self, mask, pos)
        if self.recorder is not None:
            self.recorder.barrier(self, mask, pos)

    # --------------------------------------------------------------- atomics
    def _atomic_target(self, p: Ptr, mask, pos: Pos):
        if p.mem is None:
            raise KernelRuntimeError("atomic operation through an uninitialised pointer", pos)
        safe, bad = self._check_bounds(p.mem, p.off, mask, 1, pos, "atomically updates")
        if bad is not None:
            mask = ~bad if mask is None else (mask & ~bad)
        flat = safe if p.mem.lane_base is None else p.mem.lane_base + safe
        flat = np.broadcast_to(flat, (self.n,))
        lanes = np.arange(self.n) if mask is None else np.flatnonzero(mask)
        return p.mem, flat, lanes, mask

    def atomic(self, p: Ptr, mask, op: str, value, pos: Pos, elem, want_old: bool):
        """One atomic read-modify-write per active lane, applied in lane order (one of the orders a
        GPU may pick), returning each lane's old value."""
        mem, flat, lanes, mask = self._atomic_target(p, mask, pos)
        data = mem.data
        self.count("atomics", mask)
        old = np.zeros(self.n, dtype=data.dtype)
        if op == "load":
            old[lanes] = data[flat[lanes]]
            return old
        vals = np.broadcast_to(np.asarray(value, dtype=data.dtype), (self.n,))
        addr = flat[lanes]
        v = vals[lanes]
        if self.recorder is not None:
            self.recorder.access("atomic", mem, mask, flat, pos, self, value)
        if mem.shadow is not None:
            self.sanitizer.on_atomic(self, mem, flat, lanes)
        ufunc = {"add": np.add, "sub": np.subtract, "min": np.minimum, "max": np.maximum,
                 "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}.get(op)
        if ufunc is not None and not want_old:
            ufunc.at(data, addr, v)  # unbuffered, in lane order
            return old
        # Rounds: each round applies the first remaining lane of every address.
        remaining = np.arange(lanes.size)
        while remaining.size:
            _, first = np.unique(addr[remaining], return_index=True)
            pick = remaining[first]
            a = addr[pick]
            old[lanes[pick]] = data[a]
            if op == "exchange" or op == "store":
                data[a] = v[pick]
            else:
                data[a] = ufunc(data[a], v[pick])
            keep = np.ones(remaining.size, dtype=bool)
            keep[first] = False
            remaining = remaining[keep]
        return old

    def atomic_cas(self, p: Ptr, mask, expected, desired, pos: Pos, elem):
        mem, flat, lanes, mask = self._atomic_target(p, mask, pos)
        data = mem.data
        self.count("atomics", mask)
        exp = np.broadcast_to(np.asarray(expected, dtype=data.dtype), (self.n,))
        des = np.broadcast_to(np.asarray(desired, dtype=data.dtype), (self.n,))
        ok = np.zeros(self.n, dtype=bool)
        old = np.array(exp, copy=True)
        addr = flat[lanes]
        remaining = np.arange(lanes.size)
        while remaining.size:
            _, first = np.unique(addr[remaining], return_index=True)
            pick = remaining[first]
            a = addr[pick]
            cur = data[a]
            ln = lanes[pick]
            # Compare bit patterns, as the hardware does (so -0.0 != 0.0 and NaN can match).
            same = cur.view(_bits_dtype(cur.dtype)) == exp[ln].view(_bits_dtype(cur.dtype))
            ok[ln] = same
            old[ln] = cur
            data[a[same]] = des[ln[same]]
            keep = np.ones(remaining.size, dtype=bool)
            keep[first] = False
            remaining = remaining[keep]
        if mem.shadow is not None:
            self.sanitizer.on_atomic(self, mem, flat, lanes)
        if self.recorder is not None:
            self.recorder.access("atomic", mem, mask, flat, pos, self, desired)
        return ok, old

    def pointer_flat(self, p: Ptr):
        mem = p.mem
        return p.off if mem.lane_base is None else mem.lane_base + p.off


__all__ = ["Ctx", "Lanes", "Frame", "LoopState", "Finding", "StopKernel", "GLOBAL", "SHARED", "SIMD_WIDTH"]
