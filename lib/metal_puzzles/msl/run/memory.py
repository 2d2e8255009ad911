"""Simulated memory: device/constant buffers, threadgroup arrays (one region per threadgroup)
and thread-private arrays (one region per thread), with bounds checks and access counting.

Every memory object is a flat NumPy array. A pointer is a memory object plus a per-thread
element offset *within the thread's region* (its threadgroup's block of a threadgroup array,
its own block of a thread array, or the whole buffer for device memory).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from ..lang.types import BFLOAT, AddressSpace, ScalarType


class Counted(StrEnum):
    """Which per-thread counters an access to a memory object increments (the score table's
    'global' and 'shared' columns). Memory that is free to use has none."""

    GLOBAL = "global"  # the kernel's input and output buffers
    SHARED = "shared"  # threadgroup memory

    @property
    def reads(self) -> str:
        return f"{self.value}_reads"

    @property
    def writes(self) -> str:
        return f"{self.value}_writes"


class AccessKind(StrEnum):
    """What an access does to an element."""

    READ = "read"
    WRITE = "write"
    ATOMIC = "atomic"  # a read-modify-write


class Memory:
    """One addressable object.

    ``counted`` says which per-thread counters an access increments, or None for free memory
    (thread-private arrays, program constants, shape and stride parameters).
    """

    def __init__(self, name: str, space: AddressSpace, scalar: ScalarType, data: np.ndarray, *,
                 region_size: int | None = None, lane_region: np.ndarray | None = None,
                 counted: Counted | None = None, writable: bool = False) -> None:
        self.name = name
        self.space = space
        self.scalar = scalar
        self.data = data
        self.region_size = data.size if region_size is None else region_size
        self.lane_region = lane_region  # (N,) region index per lane, or None for one shared region
        self.lane_base = None if lane_region is None else lane_region.astype(np.int64) * self.region_size
        self.counted = counted
        self.writable = writable
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
