"""Pointers at run time: what memory an access through one reaches, a pointer seen as a pointer
to another type, and a struct member's place (misaligned ones are reported)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...findings.finding import FindingKind
from ...findings.registry import kind_entry
from ...lang.errors import KernelRuntimeError, Pos
from ...lang.types import PointerType, unit_of
from ..memory import Memory, Ptr, SplitPtr, View
from ..runtime import Ctx
from .locations import MemLoc
from .masks import Mask


def pointee(p: Ptr, m: Mask, pos: Pos, uninitialised: str) -> Memory:
    """The memory an access through ``p`` by the threads of mask ``m`` reaches, or the error (at
    ``pos``) why there is none."""
    if isinstance(p, SplitPtr):
        p = p.for_threads(m, pos)
    if p.mem is None:
        raise KernelRuntimeError(uninitialised, pos)
    return p.mem


def deref(c: Ctx, p: Ptr, m: Mask, view: View, pos: Pos) -> Any:
    """The value ``*p`` for the lanes of ``m``."""
    return c.load(pointee(p, m, pos, "dereference of an uninitialised pointer"), p.off, m, view, pos)


def as_pointer(loc: MemLoc) -> Ptr:
    """A pointer to the object at ``loc`` (an array member decays to one)."""
    return Ptr(loc.mem, loc.off)


def pointer_cast(inner: Callable[[Ctx, Mask], Any], src: PointerType, dst: PointerType,
                 pos: Pos) -> Callable[[Ctx, Mask], Any]:
    """A pointer seen as a pointer to another type: the same address, its offset counted in the
    new type's units. A cast to a wider scalar must land on a multiple of its size."""
    s_unit, d_unit = unit_of(src.pointee), unit_of(dst.pointee)
    if s_unit == d_unit:
        return inner
    if s_unit > d_unit:
        factor = np.int64(s_unit // d_unit)
        return lambda c, m: rescaled(inner(c, m), factor, 1)
    factor = np.int64(d_unit // s_unit)

    def narrow(c: Ctx, m: Mask) -> Any:
        p = inner(c, m)
        if p.mem is None:
            return p
        rest = p.off % factor
        if np.any(rest):
            bad = np.broadcast_to(rest != 0, (c.n,)) & (c.full() if m is None else m)
            if bad.any():
                lane = int(np.flatnonzero(bad)[0])
                at = int(np.broadcast_to(p.off, (c.n,))[lane]) * s_unit
                c.report(FindingKind.MISALIGNED, pos, bad,
                         f"{c.lanes.label(lane)} casts a pointer to byte {at} of '{p.mem.name}' to '{dst}', which "
                         f"needs {d_unit}-byte alignment (a misaligned access is undefined on the GPU): "
                         f"{kind_entry(FindingKind.MISALIGNED).fix}",
                         buffer=p.mem.name, index=at // d_unit)
        return rescaled(p, 1, factor)
    return narrow


def rescaled(p: Ptr, mul: Any, div: Any) -> Ptr:
    """``p`` with its offset counted in units ``mul / div`` times as many."""
    off = p.off * mul // div if div != 1 else p.off * mul
    if isinstance(p, SplitPtr):
        return SplitPtr(p.mems, p.which, off)
    if p.mem is None:
        return p
    return Ptr(p.mem, off)


def member_offset(c: Ctx, m: Mask, mem: Memory, byte: Any, offset: int, unit: int, pos: Pos) -> Any:
    """A member's offset in its own units, from its struct's byte offset; a struct placed where
    its members are misaligned (e.g. cast from a byte pointer) is reported."""
    byte = byte + offset
    if unit == 1:
        return byte
    rest = byte % unit
    if np.any(rest):
        bad = np.broadcast_to(rest != 0, (c.n,)) & (c.full() if m is None else m)
        if bad.any():
            lane = int(np.flatnonzero(bad)[0])
            at = int(np.broadcast_to(byte, (c.n,))[lane])
            c.report(FindingKind.MISALIGNED, pos, bad,
                     f"{c.lanes.label(lane)} accesses a member at byte {at} of '{mem.name}', which needs "
                     f"{unit}-byte alignment (the struct is not at an aligned address): {kind_entry(FindingKind.MISALIGNED).fix}",
                     buffer=mem.name,
                     index=at // unit)
    return byte // unit
