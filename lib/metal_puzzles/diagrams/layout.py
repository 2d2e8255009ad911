"""Where a run diagram's parts go: arrays placed in sections under the thread legend, the
arrows routed as curves between cell edges (and the gaps between sections opened for them), the
list of findings under the arrays, and panels side by side. Works on ``model``'s data in place."""

from __future__ import annotations

import math
from collections import defaultdict

from .routing import route_arrows
from .scene import ArrayView, Panel, Point
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


def lay_out_panel(panel: Panel, steady_gaps: bool = False) -> None:
    """Place everything in ``panel``: arrays, then the arrows between them; then the sections are
    spaced again for the arrows that travel far sideways (``steady_gaps``: as far as any could),
    the arrows routed again on the moved arrays, and the findings listed under them."""
    _layout_panel(panel)
    route_arrows(panel, detours=False)  # only how far they travel sideways, to space the sections
    _relayout_for_arrows(panel, steady_gaps)
    route_arrows(panel)
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


def _relayout_for_arrows(panel: Panel, steady: bool = False) -> None:
    """Open up the gap above a line of arrays in proportion to how far its incoming arrows
    travel sideways, so that long S-curves do not flatten into horizontal bundles; ``steady``:
    as far as any arrow could travel (the panel's arrays' extent), whichever arrows are drawn."""
    travel: dict[tuple, float] = defaultdict(float)
    for a in panel.arrows:
        if a.points:
            dx = abs(a.points[-1][0] - a.points[0][0])
            travel[a.target[0]] = max(travel[a.target[0]], dx)
    views = [v for s in panel.sections for v in s]
    extent = max((v.x + v.width for v in views), default=0.0) - min((v.x for v in views), default=0.0)

    def gap(line: list[ArrayView]) -> float:
        far = extent if steady else max((travel.get(v.key, 0.0) for v in line), default=0.0)
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
        v.narrow(MAX_SECTION_W)
    _order_for_arrows(panel)
    sections_w = sections_width()
    legend_w = max(560.0, min(MAX_SECTION_W, sections_w))
    y = _layout_legend(panel, x0, y, legend_w) + 12
    width, bottom = _layout_sections(panel.sections, x0, y)
    legend_right = max((x + w for row in panel.legend_rows for _, _, x, w in row), default=0)
    panel.width = max(width, text_width(panel.title, 13), legend_right - x0) + 2 * PANEL_PAD
    panel.height = bottom + PANEL_PAD


def _order_for_arrows(panel: Panel) -> None:
    """Order the arrays of a section that wraps onto several lines so that arrows need not cross a
    line of arrays on their way: first those that arrows from earlier sections reach, last those
    that arrows leave for later ones, the others between (in their order: an input's arguments,
    say). A section on one line keeps its order."""
    section_of = {v.key: k for k, s in enumerate(panel.sections) for v in s}
    leaves, reached = set(), set()
    for a in panel.arrows:
        s, t = section_of.get(a.source[0]), section_of.get(a.target[0])
        if s is not None and t is not None and s < t:
            leaves.add(a.source[0])
            reached.add(a.target[0])
    for views in panel.sections:
        if math.fsum(v.width + ARRAY_GAP for v in views) - ARRAY_GAP > MAX_SECTION_W:
            views.sort(key=lambda v: (v.key not in reached) + 2 * (v.key in leaves))


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
