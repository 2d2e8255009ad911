"""The state of one kernel launch while it runs: the threads (lanes), their execution masks,
frames and loops, memory accesses with counting and bounds checks, and findings.

All threads of the grid run in lock-step, one statement at a time; a *mask* says which lanes
execute. ``None`` means every lane. Because threadgroups never communicate except through
device memory, running them together is one of the schedules a GPU may choose.
"""

from __future__ import annotations

import numpy as np

from ..lang.errors import KernelRuntimeError, Pos
from ..lang.types import AddressSpace
from .findings import Finding, FindingKind, SanitizeMode, StopKernel, StopReason
from .lanes import Lanes, fmt_triple
from .memory import AccessKind, Memory, Ptr

#: A run stops once it has this many findings: enough to say what is wrong.
MAX_FINDINGS = 200


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


def _bits_dtype(dt):
    return {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dt).itemsize]


def or_mask(a, b):
    if a is None:
        return b.copy()
    return a | b


#: The per-thread counters of the score table, in its column order.
COUNTERS = ("global_reads", "global_writes", "shared_reads", "shared_writes", "atomics")


class Ctx:
    """Mutable state of one launch."""

    def __init__(self, lanes: Lanes, sanitize: SanitizeMode, max_steps: int, recorder=None) -> None:
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
        self.cost = None  # observe.cost.CostRecorder when a cost profile is asked for
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

    def step(self, pos: Pos) -> None:
        """Count one step of lock-step work: a statement, a call or a loop iteration.

        Counting every statement and call (not only loop iterations) bounds all work a kernel can
        do, including loop-free blow-ups such as a tree of calls or a chain of templates.
        """
        self.steps += 1
        if self.steps > self.max_steps:
            self.out_of_steps(pos)

    def out_of_steps(self, pos: Pos) -> None:
        # Point at the innermost loop being run, where there is one: that is what to look at.
        st = self.loop
        while st is not None and (st.is_switch or st.pos is None):
            st = st.outer
        where = st.pos if st is not None else pos
        # Reported in every sanitize mode: the run did not finish, whatever else is looked for.
        self.findings.append(Finding(
            FindingKind.STEP_BUDGET,
            f"the kernel ran more than {self.max_steps} steps (statements, calls and loop iterations, counted "
            "once for all threads in lock-step); is there an endless loop or runaway recursion? (raise max_steps "
            "if the kernel really needs more)", where))
        raise StopKernel(StopReason.STEP_BUDGET)

    # -------------------------------------------------------------- findings
    def report(self, kind: FindingKind, pos: Pos | None, lanes_mask, message: str, buffer: str | None = None,
               index: int | None = None, first_lane: int | None = None, **details) -> None:
        """Record a finding (once per kind, place and buffer), naming up to 8 of its threads."""
        if self.sanitize == SanitizeMode.OFF:
            return
        key = (kind, pos, buffer)
        if key in self._reported:
            return
        self._reported.add(key)
        threads = []
        if lanes_mask is not None:
            ids = list(np.flatnonzero(lanes_mask)[:8])
            if first_lane is not None:
                ids = [first_lane] + [i for i in ids if i != first_lane][:7]
            threads = [self.lanes.describe(int(i)) for i in ids]
        self.findings.append(Finding(kind, message, pos, threads, buffer, index, **details))
        if len(self.findings) > MAX_FINDINGS:
            raise StopKernel(StopReason.TOO_MANY_FINDINGS)

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
            self.report(FindingKind.OUT_OF_BOUNDS, pos, active_bad,
                        f"{self.lanes.name(lane)} {what} {mem.name}[{idx}], outside the "
                        f"{mem.region_size // max(width, 1) if width > 1 else mem.region_size} elements of "
                        f"'{mem.name}'" + (" (its threadgroup's copy)" if mem.space == AddressSpace.THREADGROUP else ""),
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
        if self.cost is not None:
            self.cost.access(AccessKind.READ, mem, flat, mask, width, pos)
        if width == 1:
            val = mem.data[flat]
        else:
            val = mem.data[np.asarray(flat)[..., None] + np.arange(width)]
        if bad is not None:
            val = np.where(bad if width == 1 else bad[:, None], np.zeros_like(val), val)
        if mem.counted is not None:
            self.count(mem.counted.reads, mask, width)
        if mem.shadow is not None:
            m = mask if bad is None else (~bad if mask is None else mask & ~bad)
            self.sanitizer.on_read(self, mem, flat if width == 1 else np.asarray(flat)[..., None] + np.arange(width),
                                   m, pos)
        if self.recorder is not None:
            self.recorder.access(AccessKind.READ, mem, mask, flat if width == 1 else np.asarray(flat)[..., None] + np.arange(width),
                                 pos, self, None)
            if self.recorder.provenance and mem.counted is not None:
                val = self.recorder.track(self, mem, val, flat, mask, width)
        return val

    def store(self, mem: Memory, off, val, mask, width: int, pos: Pos) -> None:
        safe, bad = self._check_bounds(mem, off, mask, width, pos, "writes")
        if bad is not None:
            mask = ~bad if mask is None else (mask & ~bad)
        base = mem.lane_base
        flat = safe if base is None else base + safe
        if self.cost is not None:
            self.cost.access(AccessKind.WRITE, mem, flat, mask, width, pos)
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
        if mem.counted is not None:
            self.count(mem.counted.writes, mask, width)
        if self.recorder is not None:
            self.recorder.access(AccessKind.WRITE, mem, mask, flat, pos, self, val)
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
                self.report(FindingKind.BARRIER_DIVERGENCE, pos, missing,
                            f"threadgroup {fmt_triple(lanes.group_pos[g])} reaches this barrier with only some of its "
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
        if self.cost is not None:
            self.cost.access(AccessKind.ATOMIC, mem, flat, mask, 1, pos)
        old = np.zeros(self.n, dtype=data.dtype)
        if op == "load":
            old[lanes] = data[flat[lanes]]
            return old
        vals = np.broadcast_to(np.asarray(value, dtype=data.dtype), (self.n,))
        addr = flat[lanes]
        v = vals[lanes]
        if self.recorder is not None:
            self.recorder.access(AccessKind.ATOMIC, mem, mask, flat, pos, self, value)
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
        if self.cost is not None:
            self.cost.access(AccessKind.ATOMIC, mem, flat, mask, 1, pos)
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
            self.recorder.access(AccessKind.ATOMIC, mem, mask, flat, pos, self, desired)
        return ok, old

    def pointer_flat(self, p: Ptr):
        mem = p.mem
        return p.off if mem.lane_base is None else mem.lane_base + p.off


__all__ = ["Ctx", "Frame", "LoopState"]
