"""Simulated memory: device/constant buffers, threadgroup arrays (one region per threadgroup)
and thread-private arrays (one region per thread), with bounds checks and access counting.

Every memory object is a flat NumPy array. A pointer is a memory object plus a per-thread
element offset *within the thread's region* (its threadgroup's block of a threadgroup array,
its own block of a thread array, or the whole buffer for device memory).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lang.types import BFLOAT, ScalarType

GLOBAL = "global"
SHARED = "shared"


class Memory:
    """One addressable object.

    ``category`` says which per-thread counter an access increments: 'global' (kernel buffers),
    'shared' (threadgroup memory) or None (free: thread-private arrays, program constants, shape
    and stride parameters).
    """

    def __init__(self, name: str, space: str, scalar: ScalarType, data: np.ndarray, region_size: int,
                 lane_region: np.ndarray | None, category: str | None, writable: bool,
                 role: str = "") -> None:
        self.name = name
        self.space = space
        self.scalar = scalar
        self.data = data
        self.region_size = region_size
        self.lane_region = lane_region  # (N,) region index per lane, or None for one shared region
        self.lane_base = None if lane_region is None else lane_region.astype(np.int64) * region_size
        self.category = category
        self.writable = writable
        self.role = role  # 'input', 'output', 'threadgroup', 'thread', 'constant', 'meta'
        self.shadow = None  # the sanitizer's per-element bookkeeping (sanitizer.Shadow), when enabled

    def __repr__(self) -> str:
        return f"Memory({self.name}, {self.space}, {self.scalar}, size={self.data.size})"

    @property
    def is_bfloat(self) -> bool:
        return self.scalar == BFLOAT


@dataclass
class Ptr:
    """A pointer value: memory object + element offset (uniform scalar or one per thread)."""

    mem: Memory | None
    off: object  # np.int64 scalar or (N,) int64 array

    def moved(self, delta) -> Ptr:
        return Ptr(self.mem, self.off + delta)
