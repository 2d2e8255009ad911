"""Where a run diagram's arrows run: each from its source cell's edge to its target cell's edge,
straight out of the source's grid and into the target's (through the numbers above it), curving
between, and around a line of arrays in between where a curve would cross a label."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .scene import ArrayView, Arrow, Box, Label, Panel, Point, views_by_key

Piece = tuple[Point, ...]  # a line (two points) or a cubic Bézier (four)

@dataclass
class _End:
    """One end of an arrow: a cell's edge, and where the cell sits in its grid."""

    box: Box
    edge: str  # 'top' or 'bottom'
    row: int
    rows: int
    #: How far a straight lead from the edge goes before the curve: out of the grid, below it
    #: (a bottom edge) or above its column numbers (a top edge).
    outer: float
    key: tuple  # the array

    @property
    def slot(self) -> tuple[Box, str]:
        return (self.box, self.edge)


def _arrow_mode(sb: Box, tb: Box) -> str:
    s_mid, t_mid = (sb[1] + sb[3]) / 2, (tb[1] + tb[3]) / 2
    half = (sb[3] - sb[1]) / 2
    return "down" if t_mid > s_mid + half else "up" if t_mid < s_mid - half else "same"


def _arrow_ends(panel: Panel) -> list[tuple[_End, _End, str] | None]:
    views = views_by_key(panel)
    out: list[tuple[_End, _End, str] | None] = []
    for arrow in panel.arrows:
        (skey, si), (tkey, ti) = arrow.source, arrow.target
        sv, tv = views.get(skey), views.get(tkey)
        sb = sv.cell_box(si) if sv is not None else None
        tb = tv.cell_box(ti) if tv is not None else None
        if sv is None or tv is None or sb is None or tb is None:
            out.append(None)
            continue
        mode = _arrow_mode(sb, tb)
        src_edge = "bottom" if mode == "down" else "top"
        dst_edge = "top" if mode in ("down", "same") else "bottom"
        src = _End(sb, src_edge, sv.row_of(si), sv.lines, _outer(sv, src_edge), skey)
        dst = _End(tb, dst_edge, tv.row_of(ti), tv.lines, _outer(tv, dst_edge), tkey)
        out.append((src, dst, mode))
    return out


def _outer(v: ArrayView, edge: str) -> float:
    """The y past which an arrow leaving or entering the array at ``edge`` is out of its grid and
    of the numbers above it (its top, for a top edge; its grid's bottom, for a bottom edge)."""
    return v.y if edge == "top" else v.y + v.top + v.grid_h


def _pieces(src: _End, dst: _End, mode: str, a: Point, b: Point,
            passages: Sequence[tuple[float, float, float]] = ()) -> tuple[Piece, ...]:
    """The path of an arrow from ``a`` to ``b``: straight out of its source's grid and into its
    target's through the numbers above it (vertically, so that it crosses no other column's or
    row's numbers), curving between, through the ``passages`` (x, y in, y out) given, straight
    down (or up) each. Within one array, or where the straight leads would make the curve turn
    back, one curve from end to end."""
    a2, b2 = (a[0], src.outer), (b[0], dst.outer)
    turns_back = (mode == "down" and a2[1] > b2[1]) or (mode == "up" and a2[1] < b2[1])
    if src.key == dst.key or turns_back:
        return (_bezier(a, b, mode),)
    pieces: list[Piece] = [(a, a2)] if a2 != a else []
    here = a2
    for x, y_in, y_out in passages:
        pieces += [_bezier(here, (x, y_in), mode), ((x, y_in), (x, y_out))]
        here = (x, y_out)
    pieces.append(_bezier(here, b2, mode))
    if b2 != b:
        pieces.append((b2, b))
    return tuple(pieces)


def _points(pieces: tuple[Piece, ...]) -> list[Point]:
    """The path as a polyline (for layout, arrow heads, chalk's own backends and tests)."""
    points: list[Point] = []
    for piece in pieces:
        sampled = _sampled(piece) if len(piece) == 4 else list(piece)
        points += sampled[1:] if points else sampled
    return points


def _edge_x(end: _End, j: int, n: int) -> float:
    """Where on its edge the j-th of n arrows meets a cell. A lone arrow of a cell in a grid of
    several rows takes a position set by the cell's row, so that the arrows of the cells of one
    column, which pass over each other, stay apart; several arrows spread along the edge."""
    x0, _, x1, _ = end.box
    w = x1 - x0
    if n == 1 and end.rows > 1:
        return x0 + w * (0.2 + 0.6 * (end.row + 0.5) / end.rows)
    return x0 + w * (0.12 + 0.76 * (j + 1) / (n + 1))


def route_arrows(panel: Panel, detours: bool = True) -> None:
    """Give each arrow its curve. An arrow leaves its source cell's bottom (or top) edge and
    enters its target's top (or bottom) edge. The arrows of one thread at one cell edge share a
    point there, so a value computed from several elements shows as curves joining into one
    arrow head; different threads at one edge are spread along it in the order of their other
    ends, so they fan out instead of crossing near the cell. With ``detours``, an arrow that would
    cross a label not about its ends passes the lines of arrays between its ends beside them."""
    ends = _arrow_ends(panel)
    slots: dict[tuple, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    slot_end: dict[tuple, _End] = {}
    for k, e in enumerate(ends):
        if e is not None:
            src, dst, _ = e
            lane = panel.arrows[k].lane
            slots[src.slot][lane].append((dst.box[0] + dst.box[2]) / 2)
            slots[dst.slot][lane].append((src.box[0] + src.box[2]) / 2)
            slot_end[src.slot], slot_end[dst.slot] = src, dst
    spot: dict[tuple[tuple, int], tuple[float, float]] = {}
    for slot, by_lane in slots.items():
        end = slot_end[slot]
        order = sorted(by_lane, key=lambda lane: (sum(by_lane[lane]) / len(by_lane[lane]), lane))
        y = end.box[3] if end.edge == "bottom" else end.box[1]
        for j, lane in enumerate(order):
            spot[(slot, lane)] = (_edge_x(end, j, len(order)), y)
    views = views_by_key(panel)
    labels = _LabelIndex(views) if detours else None
    for arrow, e in zip(panel.arrows, ends, strict=True):
        if e is None:
            arrow.pieces, arrow.points = (), []
            continue
        src, dst, mode = e
        a, b = spot[(src.slot, arrow.lane)], spot[(dst.slot, arrow.lane)]
        arrow.pieces = _pieces(src, dst, mode, a, b)
        arrow.points = _points(arrow.pieces)
        if labels is not None and mode != "same" and src.key != dst.key and labels.crossed(arrow):
            passages = _passages((a[0], src.outer), (b[0], dst.outer), mode, views, {src.key, dst.key}, panel.width)
            arrow.pieces = _pieces(src, dst, mode, a, b, passages)
            arrow.points = _points(arrow.pieces)
    panel.arrows = [a for a in panel.arrows if a.points]


def _bezier(p0: Point, p3: Point, mode: str) -> tuple[Point, Point, Point, Point]:
    """A cubic Bézier that leaves and enters vertically: start, two control points, end."""
    (x0, y0), (x3, y3) = p0, p3
    if mode == "same":
        lift = 16 + 0.15 * abs(x3 - x0)
        c1, c2 = (x0, y0 - lift), (x3, y3 - lift)
    else:
        d = (y3 - y0) / 2
        c1, c2 = (x0, y0 + d), (x3, y3 - d)
    return p0, c1, c2, p3


def _bernstein(steps: int) -> np.ndarray:
    """The cubic Bernstein weights of the control points at ``steps + 1`` evenly spaced t."""
    t = np.linspace(0.0, 1.0, steps + 1)[:, None]
    u = 1.0 - t
    return np.hstack([u**3, 3 * u * u * t, 3 * u * t * t, t**3])


#: The weights of ``_sampled``'s 19 points: one small matrix product a curve (a V.4 diagram routes
#: a few hundred arrows of several curves each at every thread change; a loop in Python per point
#: was a third of drawing it).
_BERNSTEIN_18 = _bernstein(18)


def _sampled(curve: tuple[Point, Point, Point, Point], steps: int = 18) -> list[Point]:
    """The curve as a polyline (for layout, arrow heads and chalk's own backends)."""
    weights = _BERNSTEIN_18 if steps == 18 else _bernstein(steps)
    return [(x, y) for x, y in (weights @ np.asarray(curve, dtype=float)).tolist()]




# ----------------------------------------------------------------------------- around labels
def segment_meets_box(a: Point, b: Point, box: Box) -> bool:
    """Whether the segment from ``a`` to ``b`` passes through the inside of ``box`` (Liang-Barsky:
    the part of the segment between the box's sides is not empty)."""
    (x0, y0), (x1, y1) = a, b
    bx0, by0, bx1, by1 = box
    lo, hi = 0.0, 1.0
    for p, q in ((x0 - x1, x0 - bx0), (x1 - x0, bx1 - x0), (y0 - y1, y0 - by0), (y1 - y0, by1 - y0)):
        if p == 0:
            if q <= 0:  # parallel to this side and outside it (or on it)
                return False
            continue
        t = q / p
        if p < 0:
            lo = max(lo, t)
        else:
            hi = min(hi, t)
        if lo >= hi:
            return False
    return True


def _segments_meet_boxes(points: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Whether a polyline whose y never decreases (``points``, n x 2) passes through each box
    (k x 4): ``segment_meets_box`` on the few segments at the height of each box, all at once."""
    ys = points[:, 1]
    last = len(points) - 2  # the index of the last segment
    first = np.clip(np.searchsorted(ys, boxes[:, 1], "right") - 1, 0, last)
    upto = np.clip(np.searchsorted(ys, boxes[:, 3], "left"), 0, last)
    idx = np.minimum(first[:, None] + np.arange(int(np.max(upto - first)) + 1), last)  # k x w segments
    a, d = points[idx], points[idx + 1] - points[idx]
    x0, y0, dx, dy = a[..., 0], a[..., 1], d[..., 0], d[..., 1]
    lo, hi = np.zeros(idx.shape), np.ones(idx.shape)
    inside = np.ones(idx.shape, dtype=bool)
    sides = ((-dx, x0 - boxes[:, 0:1]), (dx, boxes[:, 2:3] - x0), (-dy, y0 - boxes[:, 1:2]), (dy, boxes[:, 3:4] - y0))
    with np.errstate(divide="ignore", invalid="ignore"):
        for p, q in sides:
            inside &= (p != 0) | (q > 0)  # parallel to a side and outside it (or on it): no
            t = q / p
            lo = np.where(p < 0, np.maximum(lo, t), lo)
            hi = np.where(p > 0, np.minimum(hi, t), hi)
    return np.asarray((inside & (lo < hi)).any(axis=1))


class _LabelIndex:
    """The labels of a panel's arrays with their boxes, for the question whether an arrow crosses
    one that is not about its own ends; in arrays, so that the question is a few array operations
    (a 1,024-thread diagram has thousands of arrows, its arrays hundreds of labels)."""

    def __init__(self, views: dict[tuple, ArrayView]) -> None:
        self.views = views
        self.keys = {key: k for k, key in enumerate(views)}
        labels: list[Label] = [label for v in views.values() for label in v.labels()]
        self.boxes = np.array([label.box for label in labels], dtype=float).reshape(-1, 4)
        # What each label is about: its array, and its block, row and column (-1: any).
        self.about = np.array([(self.keys[label.key], *(-1 if x is None else x for x in
                                                         (label.block, label.row, label.column)))
                               for label in labels], dtype=int).reshape(-1, 4)
        self._owned: dict[tuple[tuple, int], np.ndarray] = {}

    def _own(self, key: tuple, element: int) -> np.ndarray:
        """Which labels are about the element ``element`` of the array ``key``; remembered, since
        many arrows share an end (a V.4 partial sum comes from 131 elements, each read by
        several threads)."""
        own = self._owned.get((key, element))
        if own is None:
            view = self.views[key]
            block, row, column = view.locate(element)
            a = self.about
            own = ((a[:, 0] == self.keys[key]) & ((a[:, 1] == -1) | (a[:, 1] == block))
                   & ((a[:, 2] == -1) | (a[:, 2] == row)) & ((a[:, 3] == -1) | (a[:, 3] == column)))
            self._owned[(key, element)] = own
        return own

    def crossed(self, arrow: Arrow) -> bool:
        """Whether the arrow, whose path runs one way up or down, crosses a label that is not
        about either of its ends."""
        if not len(self.boxes) or len(arrow.points) < 2:
            return False
        pts = np.asarray(arrow.points, dtype=float)
        if pts[0, 1] > pts[-1, 1]:
            pts = pts[::-1]
        (x0, y0), (x1, y1) = pts.min(axis=0), pts.max(axis=0)
        b = self.boxes
        near = (b[:, 0] < x1) & (b[:, 2] > x0) & (b[:, 1] < y1) & (b[:, 3] > y0)
        near &= ~self._own(*arrow.source) & ~self._own(*arrow.target)
        return bool(near.any()) and bool(_segments_meet_boxes(pts, b[near]).any())


_PASS_MARGIN = 3.0  # room kept between an arrow passing a line of arrays and an array
_PASS_SPREAD = 12.0  # how far apart arrows passing through one gap may be spread


def _passages(a: Point, b: Point, mode: str, views: dict[tuple, ArrayView], ends: set[tuple],
              right: float) -> list[tuple[float, float, float]]:
    """Where an arrow from ``a`` to ``b`` passes each line of arrays between them: straight down
    (or up) beside the arrays of that line rather than over their labels, at an x near where it
    would have passed. (x, y where it enters the line, y where it leaves.)"""
    lo, hi = min(a[1], b[1]), max(a[1], b[1])
    between = sorted((v for v in views.values() if v.key not in ends and v.y < hi - 1 and v.y + v.height > lo + 1),
                     key=lambda v: v.y)
    bands: list[tuple[float, float, list[ArrayView]]] = []
    for v in between:
        if bands and v.y < bands[-1][1]:
            top, bottom, line = bands[-1]
            bands[-1] = (top, max(bottom, v.y + v.height), [*line, v])
        else:
            bands.append((v.y, v.y + v.height, [v]))
    if mode == "up":
        bands.reverse()
    out = []
    for top, bottom, line in bands:
        y_in, y_out = max(top, lo), min(bottom, hi)
        if mode == "up":
            y_in, y_out = y_out, y_in
        share = ((top + bottom) / 2 - a[1]) / (b[1] - a[1])
        natural = a[0] + (b[0] - a[0]) * min(1.0, max(0.0, share))
        blocked = [(v.x - _PASS_MARGIN, v.x + v.width + _PASS_MARGIN) for v in line]
        out.append((_free_x(natural, blocked, 2.0, right - 2.0), y_in, y_out))
    return out


def _free_x(x: float, blocked: list[tuple[float, float]], left: float, right: float) -> float:
    """``x`` if it is not in a blocked interval; else a place in the gap beside that interval on
    the nearer side (or the other, if that gap is too narrow), spread in the gap in the order of
    where the arrows would have passed, so that arrows through one gap stay apart."""
    merged: list[list[float]] = []
    for x0, x1 in sorted(blocked):
        if merged and x0 <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], x1)
        else:
            merged.append([x0, x1])
    for k, (x0, x1) in enumerate(merged):
        if not x0 < x < x1:
            continue
        gap_left = x0 - (merged[k - 1][1] if k else left)
        gap_right = (merged[k + 1][0] if k + 1 < len(merged) else right) - x1
        t = (x - x0) / (x1 - x0)
        room = 2 * _PASS_MARGIN
        if (t < 0.5 or gap_right < room) and gap_left >= room:
            return x0 - _PASS_MARGIN - (0.5 - min(t, 0.5)) * 2 * min(_PASS_SPREAD, gap_left - room)
        if gap_right >= room:
            return x1 + _PASS_MARGIN + (max(t, 0.5) - 0.5) * 2 * min(_PASS_SPREAD, gap_right - room)
        return x
    return x
