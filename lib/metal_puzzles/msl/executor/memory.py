"""Simulated memory: byte-addressed objects seen through typed views.

Every memory object (a device or constant buffer, a threadgroup array with one region per
threadgroup, a thread-private array with one region per thread) is a flat array of bytes,
little-endian as on Apple GPUs. An access site reads or writes it through a ``View``: the scalar
type the code uses there (from the static type of the pointer), how many scalars in a row (a
vector, a matrix, a struct's bytes) and how the stored bits become a register value (bfloat is
two bytes in memory and a float32 rounded to bfloat in registers).

A pointer (``Ptr``) is a memory object plus an offset per thread, counted in *units* of its
static pointee type (``types.unit_of``: the size of its scalars, one byte for structs) within the
thread's region. So the common access, a pointer of the memory's own element type, is a plain
NumPy gather on the typed view with no byte arithmetic; a cast to a pointer of another scalar
size rescales the offset once, where the cast happens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from ..counting.counters import Counted
from ..lang.errors import KernelRuntimeError, Pos
from ..lang.lane_values import round_bfloat
from ..lang.types import (
    BFLOAT,
    AddressSpace,
    ArrayType,
    AtomicType,
    MatrixType,
    ScalarType,
    SimdgroupMatrixType,
    StructType,
    Type,
    VectorType,
    size_of,
    storage_scalar,
    unit_of,
)

#: Regions (one per threadgroup or thread) start at multiples of this many bytes, so every
#: scalar view of a memory object addresses each region with whole units.
REGION_ALIGN = 8


def memory_dtype(scalar: ScalarType) -> np.dtype:
    """How a scalar is stored: its own dtype, except bfloat, whose bits are kept as uint16."""
    return np.dtype(np.uint16) if scalar == BFLOAT else scalar.dtype


def bfloat_bits(values: Any) -> np.ndarray:
    """float32 values (already bfloat, or rounded here) to their 16 stored bits."""
    rounded = np.asarray(round_bfloat(values), dtype=np.float32)
    return (rounded.view(np.uint32) >> np.uint32(16)).astype(np.uint16)


def bfloat_values(bits: Any) -> np.ndarray:
    """16 stored bfloat bits to float32 register values."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


@dataclass(frozen=True)
class View:
    """How one access site sees memory: ``width`` consecutive scalars of ``scalar`` (``unit``
    bytes each; a struct's view is its bytes), and the shape of the register value they make."""

    scalar: ScalarType | None  # None: raw bytes (a struct)
    width: int
    unit: int
    dtype: np.dtype
    #: Elements one access counts in the score table (a vector's components, a struct's scalars).
    count: int = 1
    #: A matrix: (columns, rows, scalars per column in memory); the value is (columns, rows).
    matrix: tuple[int, int, int] | None = None

    def __str__(self) -> str:
        return "uchar" if self.scalar is None else self.scalar.name

    #: Stored scalars are the register value as they are (no decoding): set from the fields.
    identity: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "identity", self.scalar != BFLOAT and self.matrix is None)

    def decode(self, raw: Any) -> Any:
        """Stored scalars (one per lane, or (lanes, width)) to a register value."""
        out = bfloat_values(raw) if self.scalar == BFLOAT else raw
        if self.matrix is not None:
            cols, rows, stride = self.matrix
            out = np.asarray(out).reshape(np.shape(out)[:-1] + (cols, stride))[..., :rows]
        return out

    def encode(self, value: Any) -> Any:
        """A register value to the scalars stored (the inverse of ``decode``)."""
        if self.matrix is not None:
            cols, rows, stride = self.matrix
            v = np.asarray(value)
            if stride != rows:
                pad = np.zeros(v.shape[:-1] + (stride - rows,), dtype=v.dtype)
                v = np.concatenate([v, pad], axis=-1)
            value = v.reshape(v.shape[:-2] + (cols * stride,))
        if self.scalar == BFLOAT:
            return bfloat_bits(value)
        return value


@cache
def view_of(ty: Type) -> View:
    """The view an access to an object of type ``ty`` uses."""
    if isinstance(ty, ScalarType):
        return View(ty, 1, ty.size, memory_dtype(ty))
    if isinstance(ty, AtomicType):
        return View(ty.elem, 1, ty.elem.size, memory_dtype(ty.elem))
    if isinstance(ty, VectorType):
        return View(ty.elem, ty.n, ty.elem.size, memory_dtype(ty.elem), ty.n)
    if isinstance(ty, SimdgroupMatrixType):
        return View(ty.elem, 2, ty.elem.size, memory_dtype(ty.elem), 2)
    if isinstance(ty, MatrixType):
        stride = ty.column.stride
        return View(ty.elem, ty.cols * stride, ty.elem.size, memory_dtype(ty.elem), ty.cols * ty.rows,
                    (ty.cols, ty.rows, stride))
    if isinstance(ty, StructType):
        return View(None, ty.size, 1, np.dtype(np.uint8), scalar_count(ty))
    if isinstance(ty, ArrayType):  # an array's first element (arrays are read element by element)
        return view_of(ty.elem)
    raise TypeError(f"no memory view for {ty}")


@cache
def span_view(ty: Type) -> View:
    """A view of a whole object (an array's every element and padding) as its units: what
    filling or copying all of it uses."""
    unit = unit_of(ty)
    scalar = storage_scalar(ty)
    if isinstance(_innermost(ty), StructType):
        return View(None, size_of(ty), 1, np.dtype(np.uint8), scalar_count(ty))
    return View(scalar, size_of(ty) // unit, unit, memory_dtype(scalar), scalar_count(ty))


def _innermost(ty: Type) -> Type:
    while isinstance(ty, ArrayType):
        ty = ty.elem
    return ty


def scalar_count(ty: Type) -> int:
    """How many scalars an object holds (what reading all of it counts)."""
    if isinstance(ty, StructType):
        return sum(scalar_count(f.ty) for f in ty.fields)
    if isinstance(ty, ArrayType):
        return ty.n * scalar_count(ty.elem)
    return view_of(ty).count


def rescale(flat: Any, unit: int, to_unit: int, n: int) -> Any:
    """Element indices in units of ``unit`` bytes as indices in units of ``to_unit`` bytes, each
    covering what it covered: (lanes,) or (lanes, k) in (a uniform index stands for all ``n``
    lanes), (lanes,) or (lanes, k') out."""
    if unit == to_unit:
        return flat
    flat = np.asarray(flat)
    if flat.ndim == 0:
        flat = np.broadcast_to(flat, (n,))
    if unit > to_unit:
        f = unit // to_unit
        out = flat[..., None] * f + np.arange(f)
        return out.reshape(out.shape[:1] + (-1,))
    return (flat * unit) // to_unit


def to_bytes(value: Any, ty: Type) -> np.ndarray:
    """A register value of type ``ty`` as the bytes it occupies: (bytes,) for a uniform value,
    (lanes, bytes) for a varying one. Padding (a float3's fourth scalar) is not included."""
    view = view_of(ty)
    raw = np.ascontiguousarray(view.encode(value), dtype=view.dtype)
    if view.scalar is None:
        return raw
    if view.width == 1:
        raw = raw[..., None]
    return raw.view(np.uint8).reshape(raw.shape[:-1] + (view.width * view.unit,))


def from_bytes(blob: np.ndarray, offset: int, ty: Type) -> Any:
    """The register value of type ``ty`` stored at ``offset`` in a struct's bytes."""
    view = view_of(ty)
    part = np.ascontiguousarray(blob[..., offset: offset + view.width * view.unit])
    if view.scalar is None:
        return part
    raw = part.view(view.dtype)
    if view.width == 1:
        raw = raw[..., 0]
        if raw.ndim == 0:
            raw = raw[()]
    return view.decode(raw)


class Memory:
    """One addressable object: ``regions`` copies of ``nbytes`` bytes (one per threadgroup or per
    thread when ``lane_region`` maps each lane to its region; otherwise one shared region).

    ``scalar`` is the element type it was declared with (what its ``values`` are and what the
    diagrams index by). ``counted`` says which per-thread counters an access increments, or None
    for free memory (thread-private arrays, program constants, shape and stride parameters).
    """

    def __init__(self, name: str, space: AddressSpace, scalar: ScalarType, nbytes: int, *, regions: int = 1,
                 lane_region: np.ndarray | None = None, counted: Counted | None = None,
                 writable: bool = False, ty: Type | None = None) -> None:
        self.name = name
        #: The declared type of each region's object, where it has members to name (structs).
        self.ty = ty
        self.space = space
        self.scalar = scalar
        self.nbytes = nbytes
        self.regions = regions
        self.region_bytes = -(-max(nbytes, 1) // REGION_ALIGN) * REGION_ALIGN
        self.raw = np.zeros(self.region_bytes * regions, dtype=np.uint8)
        self.lane_region = lane_region  # (N,) region index per lane, or None for one shared region
        self.counted = counted
        self.writable = writable
        # The sanitizer's bookkeeping (observe.sanitizer.Shadow, a layer above this one), when enabled.
        self.shadow: object | None = None
        #: A traced run's record of where each element's stored value came from (thread-private
        #: memory, whose loads carry no provenance of their own: observe.provenance.remember).
        self.provenance: np.ndarray | None = None
        self._typed: dict[np.dtype, tuple[np.ndarray, np.ndarray | None, int]] = {}
        self.unit = scalar.size
        #: The view of the declared element type, its lane bases and region length (in elements).
        self.data, self.lane_base, self.region_size = self.typed(memory_dtype(scalar))

    @classmethod
    def of_values(cls, name: str, space: AddressSpace, scalar: ScalarType, values: Any, **kw: Any) -> Memory:
        """A one-region object holding ``values`` (register values of ``scalar``)."""
        flat = np.asarray(values).reshape(-1)
        mem = cls(name, space, scalar, flat.size * scalar.size, **kw)
        mem.data[: flat.size] = view_of(scalar).encode(flat.astype(scalar.dtype, copy=False))
        return mem

    def __repr__(self) -> str:
        return f"Memory({self.name}, {self.space}, {self.scalar}, {self.nbytes} bytes x {self.regions})"

    def typed(self, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray | None, int]:
        """The bytes as an array of ``dtype``, each lane's region start in its elements (or None),
        and a region's declared length in its elements."""
        got = self._typed.get(dtype)
        if got is None:
            size = dtype.itemsize
            base = None
            if self.lane_region is not None:
                base = self.lane_region.astype(np.int64) * (self.region_bytes // size)
            got = self._typed[dtype] = (self.raw.view(dtype), base, self.nbytes // size)
        return got

    def place(self, byte: int) -> str | None:
        """The member a byte of a region lies in, as code names it ('acc.lo', 'part[3].hi'), for a
        memory object holding structs; None otherwise."""
        ty = self.ty
        if ty is None or not isinstance(_innermost(ty), StructType):
            return None
        name = self.name
        while True:
            if isinstance(ty, ArrayType):
                k = byte // size_of(ty.elem)
                name += f"[{k}]"
                byte -= k * size_of(ty.elem)
                ty = ty.elem
            elif isinstance(ty, StructType):
                f = [x for x in ty.fields if x.offset <= byte][-1]
                name += f".{f.name}"
                byte -= f.offset
                ty = f.ty
            else:
                return name

    def values(self) -> np.ndarray:
        """The declared elements as register values: (regions, elements), or (elements,) for one region."""
        count = self.nbytes // self.unit
        per_region = self.region_bytes // self.unit
        rows = self.data.reshape(self.regions, per_region)[:, :count]
        out = view_of(self.scalar).decode(rows)
        return np.array(out[0] if self.regions == 1 else out, copy=True)


@dataclass
class Ptr:
    """A pointer value: memory object + offset in units of its static pointee type (uniform
    scalar or one per thread), within the thread's region."""

    mem: Memory | None
    off: object  # np.int64 scalar or (N,) int64 array

    def moved(self, delta: Any) -> Ptr:
        return Ptr(self.mem, self.off + delta)


class SplitPtr(Ptr):
    """A pointer variable whose threads point into different memories. Lock-step execution makes
    one while a pointer is set differently on the two sides of a branch (PyTorch's ``ratevl``:
    ``if (absx > 1) p = num + M; else p = num;`` and then ``p = denom``); it is whole again once
    every thread has its new target. It may be moved while split; using it (an access through
    it) while its threads still disagree is what the simulator cannot do, and says so."""

    def __init__(self, mems: tuple[Memory | None, ...], which: np.ndarray, off: Any) -> None:
        self.mems = mems
        self.which = which  # per thread: its memory's index in mems
        self.off = off

    def for_threads(self, m: np.ndarray | None, pos: Pos | None = None) -> Ptr:
        """The pointer as the threads of mask ``m`` (None: all) hold it, if they all point into
        one memory (threads outside the mask may point elsewhere)."""
        used = self.which if m is None else self.which[m]
        kinds = np.unique(used)
        if len(kinds) > 1:
            raise KernelRuntimeError(self.split_message(), pos)
        return Ptr(self.mems[int(kinds[0]) if len(kinds) else 0], self.off)

    def split_message(self) -> str:
        names = " and ".join(_memory_name(m) for m in self.mems)
        return (f"a pointer is used while its threads point into different memories ({names}); the simulator "
                "needs the threads that use a pointer to point into one memory")

    @property
    def mem(self) -> Memory | None:  # type: ignore[override]
        raise KernelRuntimeError(self.split_message())

    def moved(self, delta: Any) -> Ptr:
        return SplitPtr(self.mems, self.which, self.off + delta)

    def __repr__(self) -> str:
        return f"SplitPtr({[_memory_name(m) for m in self.mems]}, {self.which!r}, {self.off!r})"


def _memory_name(mem: Memory | None) -> str:
    """How a message names the memory a pointer points into: a pointer never assigned has none."""
    return "no memory (a pointer never assigned)" if mem is None else f"'{mem.name}'"


def merge_pointers(m: np.ndarray, new: Ptr, old: Ptr) -> Ptr:
    """Per thread: ``new`` where ``m`` is set, ``old`` elsewhere; a split pointer while they point
    into different memories, a plain one again when all threads agree."""
    mems: list[Memory | None] = []  # a null pointer has no memory

    def indices(p: Ptr) -> np.ndarray:
        parts = p.mems if isinstance(p, SplitPtr) else (p.mem,)
        local = []
        for mem in parts:
            found = next((k for k, known in enumerate(mems) if known is mem), None)
            if found is None:
                mems.append(mem)
                found = len(mems) - 1
            local.append(found)
        table = np.asarray(local, dtype=np.int64)
        return table[p.which] if isinstance(p, SplitPtr) else np.full(m.shape, table[0])

    which = np.where(m, indices(new), indices(old))
    off = np.where(m, new.off, old.off)  # type: ignore[call-overload, unused-ignore]  # an int64 scalar or array each (Ptr.off); NumPy 2.5 types it, 2.4 does not
    if (which == which[0]).all():
        return Ptr(mems[int(which[0])], off)
    return SplitPtr(tuple(mems), which, off)
