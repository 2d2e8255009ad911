"""Lane masks: which threads of the grid a compiled expression or statement runs for. A mask is a
boolean array over the lanes, or None for all of them; a condition may be uniform (a NumPy
scalar) or one value per lane."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ..memory import Ptr, SplitPtr, merge_pointers
from ..runtime import Ctx

#: The lanes an operation runs for: one flag per lane, or None for every lane.
Mask = np.ndarray | None


def and_mask(ctx: Ctx, m: Mask, c: Any) -> Mask:
    """Lanes of m for which the (bool) condition c holds; c may be uniform."""
    if np.ndim(c) == 0:
        if c:
            return m
        return np.zeros(ctx.n, dtype=bool)
    return c if m is None else (m & c)


def andnot_mask(ctx: Ctx, m: Mask, c: Any) -> Mask:
    """Lanes of m for which the (bool) condition c does not hold; c may be uniform."""
    if np.ndim(c) == 0:
        if not c:
            return m
        return np.zeros(ctx.n, dtype=bool)
    return ~c if m is None else (m & ~c)


def empty(m: Mask) -> bool:
    """No lane is set (None means all lanes, never empty)."""
    return m is not None and not m.any()


def with_lanes(ctx: Ctx, a: np.ndarray | None, m: Mask) -> np.ndarray:
    """The lanes of ``a`` (None: none yet) and those of ``m`` (None: all)."""
    if m is None:
        return ctx.full()
    return m.copy() if a is None else (a | m)


def mark_init(init: np.ndarray, m: Mask) -> None:
    """Record that the lanes of ``m`` have assigned the variable whose flags ``init`` holds."""
    if m is None:
        init[:] = True
    else:
        init |= m


def merge(m: Mask, new: Any, old: Any, ndim: int) -> Any:
    """Per-lane select: new where the mask is set, old elsewhere (``ndim``: the value's axes
    besides the lanes, see ``values.type_ndim``)."""
    if m is None:
        return new
    if isinstance(new, Ptr) or isinstance(old, Ptr):
        return merge_ptr(m, new, old)
    return np.where(m.reshape(m.shape + (1,) * ndim) if ndim else m, new, old)


def merge_ptr(m: np.ndarray, new: Ptr, old: Any) -> Ptr:
    """Per-lane select of pointers: ``new`` for the lanes of ``m``, ``old`` elsewhere."""
    if old is None or not isinstance(old, Ptr):
        return new
    if isinstance(new, SplitPtr) or isinstance(old, SplitPtr):
        return merge_pointers(m, new, old)
    if new.mem is not old.mem:
        if old.mem is None:
            return new
        return merge_pointers(m, new, old)
    return Ptr(new.mem, np.where(m, cast(Any, new.off), cast(Any, old.off)))
