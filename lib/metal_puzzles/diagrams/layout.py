"""Where a run diagram's parts go: arrays placed in sections under the thread legend, the
arrows routed as curves between cell edges (and the gaps between sections opened for them), the
list of findings under the arrays, and panels side by side. Works on ``model``'s data in place."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from .model import ArrayView, Box, Panel, Point, views_by_key
from .style import (
    ARRAY_GAP,
    LEGEND_LABEL,
    MAX_DIAGRAM_W,
    MAX_PANEL_W,
    MAX_SECTION_W,
    MIN_CELL_FONT,
    NOTE_H,
    PANEL_GAP,
    PANEL_PAD,
    SECTION_GAP,
    SMALL_CELL,
    text_width,
)


def lay_out_panel(panel: Panel) -> None:
    """Place everything in ``panel``: arrays, then the arrows between them; then the sections are
    spaced again for the arrows that travel far sideways, the arrows routed again on the moved
    arrays, and the findings listed under them."""
    _layout_panel(panel)
    _route_arrows(panel)
    _relayout_for_arrows(panel)
    _route_arrows(panel)
    _layout_notes(panel)


# ----------------------------------------------------------------------------- arrays
def _layout_sections(sections: list[list[ArrayView]], x0: float, y0: float,
                     gap_before=None) -> tuple[float, float]:
    """Place arrays left to right (wrapping long sections onto several lines), line under
    line; ``gap_before(line)`` gives the room above a line. Returns (width, bottom y)."""
    lines: list[list[ArrayView]] = []
    width = 0.0
    for views in sections:
        x = x0
        for k, v in enumerate(views):
            if k == 0 or x + v.width - x0 > MAX_SECTION_W:
                lines.append([])
                x = x0
            v.x = x
            lines[-1].append(v)
            x += v.width + ARRAY_GAP
            width = max(width, x - ARRAY_GAP - x0)
    y = y0
    for k, line in enumerate(lines):
        if k:
            y += gap_before(line) if gap_before else SECTION_GAP
        for v in line:
            v.y = y
        y += max(v.height for v in line)
    return width, y


def _relayout_for_arrows(panel: Panel) -> None:
    """Open up the gap above a line of arrays in proportion to how far its incoming arrows
    travel sideways, so that long S-curves do not flatten into horizontal bundles."""
    travel: dict[tuple, float] = defaultdict(float)
    for a in panel.arrows:
        if a.points:
            dx = abs(a.points[-1][0] - a.points[0][0])
            travel[a.target[0]] = max(travel[a.target[0]], dx)

    def gap(line: list[ArrayView]) -> float:
        far = max((travel.get(v.key, 0.0) for v in line), default=0.0)
        return min(SECTION_GAP + 0.1 * far, 3 * SECTION_GAP)

    top = min((v.y for s in panel.sections for v in s), default=0.0)
    _, bottom = _layout_sections(panel.sections, PANEL_PAD, top, gap)
    panel.height = bottom + PANEL_PAD


def _layout_legend(panel: Panel, x0: float, y0: float, max_w: float) -> float:
    """Thread swatches in rows; returns the bottom y."""
    start = x0 + text_width(LEGEND_LABEL, 11) + 8
    x = start
    rows: list[list[tuple[str, str, float, float]]] = [[]]
    for name, color in panel.legend:
        w = max(24.0, text_width(name, 10) + 10)
        if x + w > x0 + max_w and rows[-1]:
            rows.append([])
            x = start
        rows[-1].append((name, color, x, w))
        x += w + 4
    panel.legend_rows = rows
    return y0 + len(rows) * 22


def _layout_panel(panel: Panel) -> None:
    """The legend's rows, the cells' size (small cells for a wide panel; wide enough for every
    value) and the arrays' places; the panel's size."""
    x0 = PANEL_PAD
    y: float = PANEL_PAD + 20  # title line
    views = [v for s in panel.sections for v in s]
    label_w = max((v.own_label_w for v in views), default=0.0)
    for v in views:
        v.label_w = label_w

    def sections_width() -> float:
        return max((math.fsum(v.width + ARRAY_GAP for v in s) - ARRAY_GAP for s in panel.sections), default=0)

    if sections_width() + 2 * PANEL_PAD > MAX_PANEL_W:
        for v in views:
            v.cell = SMALL_CELL
    for v in views:  # cells wide enough for their values at the smallest legible size
        v.cell = max([v.cell, *(text_width(t, MIN_CELL_FONT) + 6 for t in v.texts)])
    sections_w = sections_width()
    legend_w = max(560.0, min(MAX_SECTION_W, sections_w))
    y = _layout_legend(panel, x0, y, legend_w) + 12
    width, bottom = _layout_sections(panel.sections, x0, y)
    legend_right = max((x + w for row in panel.legend_rows for _, _, x, w in row), default=0)
    panel.width = max(width, text_width(panel.title, 13), legend_right - x0) + 2 * PANEL_PAD
    panel.height = bottom + PANEL_PAD


# ----------------------------------------------------------------------------- arrows
@dataclass
class _End:
    """One end of an arrow: a cell's edge, and where the cell sits in its grid."""

    box: Box
    edge: str  # 'top' or 'bottom'
    row: int
    rows: int

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
        src = _End(sb, "bottom" if mode == "down" else "top", sv.row_of(si), sv.rows)
        dst = _End(tb, "top" if mode in ("down", "same") else "bottom", tv.row_of(ti), tv.rows)
        out.append((src, dst, mode))
    return out


def _edge_x(end: _End, j: int, n: int) -> float:
    """Where on its edge the j-th of n arrows meets a cell. A lone arrow of a cell in a grid of
    several rows takes a position set by the cell's row, so that the arrows of the cells of one
    column, which pass over each other, stay apart; several arrows spread along the edge."""
    x0, _, x1, _ = end.box
    w = x1 - x0
    if n == 1 and end.rows > 1:
        return x0 + w * (0.2 + 0.6 * (end.row + 0.5) / end.rows)
    return x0 + w * (0.12 + 0.76 * (j + 1) / (n + 1))


def _route_arrows(panel: Panel) -> None:
    """Give each arrow its curve. An arrow leaves its source cell's bottom (or top) edge and
    enters its target's top (or bottom) edge. The arrows of one thread at one cell edge share a
    point there, so a value computed from several elements shows as curves joining into one
    arrow head; different threads at one edge are spread along it in the order of their other
    ends, so they fan out instead of crossing near the cell."""
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
    for k, e in enumerate(ends):
        lane = panel.arrows[k].lane
        arrow = panel.arrows[k]
        arrow.curve = () if e is None else _bezier(spot[(e[0].slot, lane)], spot[(e[1].slot, lane)], e[2])
        arrow.points = _sampled(arrow.curve) if arrow.curve else []
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


def _sampled(curve: tuple[Point, Point, Point, Point], steps: int = 18) -> list[Point]:
    """The curve as a polyline (for layout, arrow heads and chalk's own backends)."""
    (x0, y0), c1, c2, (x3, y3) = curve
    pts = []
    for i in range(steps + 1):
        t = i / steps
        u = 1 - t
        x = u**3 * x0 + 3 * u * u * t * c1[0] + 3 * u * t * t * c2[0] + t**3 * x3
        y = u**3 * y0 + 3 * u * u * t * c1[1] + 3 * u * t * t * c2[1] + t**3 * y3
        pts.append((x, y))
    return pts


# ----------------------------------------------------------------------------- findings, legend, panels
def _layout_notes(panel: Panel) -> None:
    """The numbered list of the panel's findings, under its arrays."""
    marks = panel.marks
    if marks is None or not marks.notes:
        return
    marks.notes_y = panel.height - PANEL_PAD + 8
    panel.height += len(marks.notes) * NOTE_H + 8
    panel.width = max(panel.width, max(text_width(n, 10.5) for n in marks.notes) + 2 * PANEL_PAD)


def legend_rows_y(p: Panel) -> list[tuple[float, list]]:
    """The rows of thread swatches with the y of their tops."""
    y: float = PANEL_PAD + 20
    out: list[tuple[float, list]] = []
    for row in p.legend_rows:
        out.append((y, row))
        y += 22
    return out


def swatch_slots(p: Panel) -> list[tuple[float, float, float]]:
    """(x, y, width) of every thread swatch, in the legend's order (its k-th is thread k's)."""
    return [(x, y, w) for y, row in legend_rows_y(p) for _, _, x, w in row]


def panel_grid(panels: list[Panel], top: float) -> tuple[list[Point], float, float]:
    """Where each panel goes (its top left corner), in a grid of as many side by side as fit in
    MAX_DIAGRAM_W, under ``top``; with the grid's width and bottom y."""
    if not panels:
        return [], 1.0, top
    widest = max(p.width for p in panels)
    ncols = max(1, min(len(panels), int((MAX_DIAGRAM_W + PANEL_GAP) // (widest + PANEL_GAP))))
    positions: list[Point] = []
    y, width = top, 0.0
    for r in range(0, len(panels), ncols):
        row = panels[r:r + ncols]
        x = 0.0
        for _ in row:
            positions.append((x, y))
            x += widest + PANEL_GAP
        width = max(width, x - PANEL_GAP)
        y += max(p.height for p in row) + PANEL_GAP
    return positions, width, y - PANEL_GAP
