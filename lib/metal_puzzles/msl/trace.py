"""The run record's trace: which thread read or wrote which element, in which barrier phase,
from which source line. Recorded only when asked (small launches), since it grows with every
access."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class AccessEvent:
    kind: str  # 'read', 'write' or 'atomic'
    buffer: str
    space: str  # 'device', 'constant', 'threadgroup', 'thread'
    lanes: np.ndarray  # lane ids of the threads that accessed
    index: np.ndarray  # element index within the buffer (threadgroup: within the threadgroup's copy)
    group: np.ndarray  # threadgroup (linear) of each access
    phase: np.ndarray  # barrier phase of each access
    line: int
    file: str
    seq: int  # order of the statement in lock-step execution


@dataclass
class BarrierEvent:
    groups: np.ndarray
    line: int
    file: str
    seq: int


class Recorder:
    def __init__(self) -> None:
        self.events: list = []
        self.seq = 0

    def access(self, kind, mem, mask, flat, pos, ctx, val) -> None:
        n = ctx.n
        lanes = np.arange(n) if mask is None else np.flatnonzero(mask)
        flat = np.broadcast_to(np.asarray(flat), (n,) + np.shape(flat)[1:] if np.ndim(flat) >= 1 and np.shape(flat)[0] == n else (n,) + np.shape(flat))
        idx = flat[lanes]
        if mem.lane_base is not None:
            idx = idx - mem.lane_base[lanes][(...,) + (None,) * (idx.ndim - 1)]
        if idx.ndim > 1:  # vector accesses: one event entry per component
            lanes = np.repeat(lanes, idx.shape[1])
            idx = idx.reshape(-1)
        group = ctx.lanes.group[lanes]
        self.events.append(AccessEvent(kind, mem.name, mem.space, lanes, idx.astype(np.int64), group,
                                       ctx.phase[group].copy(), pos.line, pos.file, self.seq))
        self.seq += 1

    def barrier(self, ctx, mask, pos) -> None:
        groups = np.arange(ctx.lanes.n_groups) if mask is None else np.unique(ctx.lanes.group[mask])
        self.events.append(BarrierEvent(groups, pos.line, pos.file, self.seq))
        self.seq += 1

    def accesses(self, kind: str | None = None, buffer: str | None = None) -> list[AccessEvent]:
        return [e for e in self.events if isinstance(e, AccessEvent)
                and (kind is None or e.kind == kind) and (buffer is None or e.buffer == buffer)]
