"""Places a compiled lvalue designates: a variable's register slot (``SlotLoc``), an object in
memory (``MemLoc``), components of a vector (``CompLoc``) and a column of a matrix held in a
register (``ColumnLoc``). Each loads and stores the values of the lanes of a mask."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...findings.finding import FindingKind
from ...front import ast
from ...lang.errors import KernelRuntimeError, Pos
from ...lang.types import AddressSpace, Type, VectorType, size_of, storage_scalar
from ..memory import Memory, Ptr, View, view_of
from ..runtime import Ctx
from .masks import Mask, mark_init, merge


def check_initialised(ctx: Ctx, slots: list, k: int, m: Mask, name: str, pos: Pos | None) -> None:
    """Report the first lane of ``m`` that reads local ``name`` (slot ``k``) before assigning it
    (a variable declared without a value; the caller tests ``ctx.sanitizer`` first, as this runs
    at every read)."""
    init = ctx.local_init.get((id(slots), k))
    if init is None:
        return
    missing = ~init if m is None else (m & ~init)
    if missing.any():
        lane = int(np.flatnonzero(missing)[0])
        ctx.report_first(FindingKind.UNINITIALIZED_READ, pos, lane, missing,
                         f"{ctx.lanes.label(lane)} reads variable '{name}' before any value was "
                         "assigned to it: initialise it where it is declared", buffer=name)


class SlotLoc:
    """A local variable's register slot (one value per lane, or a uniform one)."""

    __slots__ = ("slots", "k", "vec", "pos", "name")

    def __init__(self, slots: list, k: int, vec: int, pos: Pos | None = None, name: str | None = None) -> None:
        self.slots, self.k, self.vec, self.pos, self.name = slots, k, vec, pos, name

    def load(self, ctx: Ctx, m: Mask) -> Any:
        if self.name is not None and ctx.sanitizer is not None:
            check_initialised(ctx, self.slots, self.k, m, self.name, self.pos)
        return self.slots[self.k]

    def peek(self, ctx: Ctx, m: Mask) -> Any:
        """The current value without counting as a read (for writing some components)."""
        return self.slots[self.k]

    def store(self, ctx: Ctx, val: Any, m: Mask) -> None:
        self.slots[self.k] = merge(m, val, self.slots[self.k], self.vec)
        if self.name is not None and ctx.sanitizer is not None:
            init = ctx.local_init.get((id(self.slots), self.k))
            if init is not None:
                mark_init(init, m)


class MemLoc:
    """An object in memory: where it is (offset in units of its type) and how it is seen."""

    __slots__ = ("mem", "off", "view", "pos", "ty")

    def __init__(self, mem: Memory, off: Any, view: View, pos: Pos, ty: Type) -> None:
        self.mem, self.off, self.view, self.pos, self.ty = mem, off, view, pos, ty

    def load(self, ctx: Ctx, m: Mask) -> Any:
        return ctx.load(self.mem, self.off, m, self.view, self.pos)

    def store(self, ctx: Ctx, val: Any, m: Mask) -> None:
        if not self.mem.writable:
            raise KernelRuntimeError(f"write to read-only memory '{self.mem.name}'", self.pos)
        ctx.store(self.mem, self.off, val, m, self.view, self.pos)


class CompLoc:
    """Components of a vector lvalue (swizzle or subscript)."""

    __slots__ = ("base", "comps", "single")

    def __init__(self, base: Any, comps: Any, single: bool) -> None:
        self.base, self.comps, self.single = base, comps, single

    def load(self, ctx: Ctx, m: Mask) -> Any:
        v = self.base.load(ctx, m)
        if self.single:
            return component(ctx, v, self.comps)
        return v[..., self.comps]

    def store(self, ctx: Ctx, val: Any, m: Mask) -> None:
        base = self.base
        if isinstance(base, MemLoc):
            one = view_of(cast(VectorType, base.ty).elem)
            if self.single:
                ctx.store(base.mem, base.off + self.comps, val, m, one, base.pos)
            else:
                for j, k in enumerate(self.comps):
                    ctx.store(base.mem, base.off + k, val[..., j], m, one, base.pos)
            return
        old = base.peek(ctx, m) if isinstance(base, SlotLoc | ColumnLoc) else base.load(ctx, m)
        vary = np.ndim(old) > 1 or np.ndim(val) > (0 if self.single else 1) or np.ndim(self.comps) > 0 or m is not None
        new = np.array(np.broadcast_to(old, (ctx.n, old.shape[-1])) if vary else old, copy=True)
        if self.single:
            if np.ndim(self.comps):
                new[np.arange(ctx.n), self.comps] = val
            else:
                new[..., self.comps] = val
        else:
            new[..., self.comps] = val
        base.store(ctx, new, m)


class ColumnLoc:
    """A column of a matrix held in a register (slot or reference)."""

    __slots__ = ("base", "k")

    def __init__(self, base: Any, k: Any) -> None:
        self.base, self.k = base, k

    def load(self, ctx: Ctx, m: Mask) -> Any:
        return column(ctx, self.base.load(ctx, m), self.k)

    def peek(self, ctx: Ctx, m: Mask) -> Any:
        """The column's current value without counting as a read (to write some components)."""
        return column(ctx, self._whole(ctx, m), self.k)

    def _whole(self, ctx: Ctx, m: Mask) -> Any:
        return self.base.peek(ctx, m) if isinstance(self.base, SlotLoc) else self.base.load(ctx, m)

    def store(self, ctx: Ctx, val: Any, m: Mask) -> None:
        old = np.asarray(self._whole(ctx, m))
        new = np.array(np.broadcast_to(old, (ctx.n,) + old.shape[-2:]), copy=True)
        if np.ndim(self.k):
            new[np.arange(ctx.n), self.k] = np.broadcast_to(val, (ctx.n, new.shape[-1]))
        else:
            new[:, self.k] = val
        self.base.store(ctx, new, m)


def column(ctx: Ctx, v: Any, k: Any) -> Any:
    """Column ``k`` (uniform or one per lane) of matrix value ``v``."""
    v = np.asarray(v)
    if np.ndim(k) == 0:
        return v[..., k, :]
    v = np.broadcast_to(v, (ctx.n,) + v.shape[-2:])
    return v[np.arange(ctx.n), k]


def component(ctx: Ctx, v: Any, k: Any) -> Any:
    """Component ``k`` (uniform or one per lane) of vector value ``v``."""
    if np.ndim(k) == 0:
        return v[..., k]
    v = np.broadcast_to(v, (ctx.n, v.shape[-1]))
    return v[np.arange(ctx.n), k]


def thread_memory(c: Ctx, k: int, name: str, ty: Type) -> Ptr:
    """The thread-private memory behind slot k (one object of type ``ty`` per thread),
    allocated the first time its declaration runs in this frame."""
    p = c.slots[k]
    if p is None:
        mem = Memory(name, AddressSpace.THREAD, storage_scalar(ty), size_of(ty), regions=c.n,
                     lane_region=c.all_lanes, writable=True, ty=ty)
        if c.sanitizer is not None:
            c.sanitizer.watch(mem, initialized=False)
        p = c.slots[k] = Ptr(mem, np.int64(0))
    return p


def temporary_object(e: ast.TemporaryObject, construct: Callable[[Ctx, Mask], Any],
                     then: Callable[[Ctx, Mask], Any]) -> Callable[[Ctx, Mask], Any]:
    """A temporary object ``T(args)``: its thread memory, its constructor run on it, then ``then``
    (compiled from ``e.value``), which gives the temporary's value where it is read and the
    place itself where it is one ('T(args).member = ...', 'T(args).get()')."""
    k, ty, name = e.var.slot, e.ty, e.var.name

    def temporary(c: Ctx, m: Mask) -> Any:
        thread_memory(c, k, name, ty)
        construct(c, m)
        return then(c, m)
    return temporary


def thread_object(c: Ctx, k: int, name: str, ty: Type) -> Memory:
    """The memory object behind slot k (``thread_memory``'s pointer always has one)."""
    mem = thread_memory(c, k, name, ty).mem
    assert mem is not None
    return mem


def materialised(value: Callable[[Ctx, Mask], Any], ty: Type, pos: Pos) -> Callable[[Ctx, Mask], MemLoc]:
    """A temporary object in thread memory of its own, so that a member function can be called on
    it ('F()(x)': its 'this' refers to the temporary, which lives until the call ends)."""
    view = view_of(ty)

    def loc(c: Ctx, m: Mask) -> Any:
        mem = Memory("temporary", AddressSpace.THREAD, storage_scalar(ty), size_of(ty), regions=c.n,
                     lane_region=c.all_lanes, writable=True, ty=ty)
        c.store(mem, np.int64(0), value(c, m), m, view, pos)
        return MemLoc(mem, np.int64(0), view, pos, ty)
    return loc


def merged_location(c: Ctx, m: np.ndarray, new: Any, old: Any, pos: Pos) -> MemLoc:
    """Where a returned reference points, per lane: ``new`` for the lanes in ``m``, else ``old``."""
    if isinstance(new, MemLoc) and isinstance(old, MemLoc) and new.mem is old.mem and new.view == old.view:
        off = np.where(m, np.broadcast_to(new.off, (c.n,)), np.broadcast_to(old.off, (c.n,)))
        return MemLoc(new.mem, off, new.view, new.pos, new.ty)
    raise KernelRuntimeError("threads return references to different objects from one function; the simulator "
                             "follows a returned reference only into one array (return a pointer instead)", pos)
