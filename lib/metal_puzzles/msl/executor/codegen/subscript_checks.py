"""Subscripts checked at run time: an array index past its dimension and a vector component out of
range are reported (the first lane that does it), as the sanitizer's out-of-bounds finding."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...findings.finding import FindingKind
from ...lang.errors import Pos
from ..memory import Memory
from ..runtime import Ctx
from .masks import Mask


def check_subscript(c: Ctx, mem: Memory, k: Any, bound: int, m: Mask, pos: Pos, off: Any = 0, stride: Any = 1,
                    unit: int | None = None) -> None:
    """Report the lanes of ``m`` whose index ``k`` is outside ``[0, bound)`` on a dimension of
    array ``mem`` (``off`` and ``stride`` locate the element reached, in units of ``unit``)."""
    bad = (k < 0) | (k >= bound)
    if np.ndim(bad) == 0:
        if bad:
            bad_lanes = c.full() if m is None else m
        else:
            return
    else:
        bad_lanes = bad if m is None else (bad & m)
    if np.any(bad_lanes):
        lane = int(np.flatnonzero(bad_lanes)[0])
        idx = int(k[lane] if np.ndim(k) else k)
        flat = int((off[lane] if np.ndim(off) else off) + idx * stride)
        c.report(FindingKind.OUT_OF_BOUNDS, pos, bad_lanes,
                 f"{c.lanes.label(lane)} uses index {idx} on a dimension of size {bound} of '{mem.name}' "
                 f"(element {flat} of its {mem.nbytes // (unit or mem.unit)}): check the loop bounds of this subscript",
                 buffer=mem.name, index=flat)


def checked_component(c: Ctx, k: Any, n: int, m: Mask, pos: Pos) -> Any:
    """A vector subscript, reported when out of range and clamped to a valid component."""
    _check_component(c, k, n, m, pos)
    return np.clip(k, 0, n - 1) if np.ndim(k) else min(max(int(k), 0), n - 1)


def _check_component(c: Ctx, k: Any, n: int, m: Mask, pos: Pos) -> None:
    bad = (np.asarray(k) < 0) | (np.asarray(k) >= n)
    if np.ndim(bad) == 0:
        if bad:
            c.report(FindingKind.OUT_OF_BOUNDS, pos, c.full() if m is None else m, f"vector component index {int(k)} is out of range for a {n}-vector")
        return
    lanes = bad if m is None else (bad & m)
    if lanes.any():
        lane = int(np.flatnonzero(lanes)[0])
        c.report(FindingKind.OUT_OF_BOUNDS, pos, lanes, f"{c.lanes.label(lane)} uses vector component index {int(k[lane])} "
                 f"on a {n}-vector")
