"""A laid-out run diagram painted with chalk, layer by layer (frame, arrow shafts, cell fills,
arrow heads, grids and texts, findings, selection, click targets); ``svg_text`` writes the result.
Thousands of cells and texts go out as a few batched primitives, not one chalk shape each."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from chalk import Diagram
from chalk.core import Compose
from chalk.envelope import Envelope
from chalk.shapes import Path
from chalk.transform import P2, BoundingBox
from colour import Color

from .layout import legend_rows_y, panel_grid, swatch_slots
from .marks import FINDING_RED
from .scene import ArrayView, Arrow, Box, Header, Panel, Point, RunDrawing
from .style import (
    ARROW_W,
    CELL_OPACITY,
    GHOST_FILL,
    GRID_LINE,
    HEAD_HALF,
    HEAD_LEN,
    INK,
    LEGEND_LABEL,
    MARK_W,
    MUTED,
    NOTE_H,
    PANEL_LINE,
    PANEL_PAD,
    text_width,
)
from .svg_text import (
    Anchor,
    PlacedText,
    anchored_text,
    box_path,
    cell_targets,
    path_batch,
    text_batch,
)


def paint_run(drawing: RunDrawing) -> Diagram:
    """The whole diagram: the header over the panels in their grid."""
    header = drawing.header
    body, width, height = _arrange(drawing.panels, header.height)
    width = max(width, header.width)
    return _group([*_paint_header(header), body], (0, 0, width, height))


def _arrange(panels: list[Panel], top: float) -> tuple[Diagram, float, float]:
    """The panels painted in their places (``layout.panel_grid``), under ``top``."""
    positions, width, bottom = panel_grid(panels, top)
    if not panels:
        return _group([], (0, top, 1, top + 1)), width, bottom
    parts = [_paint_panel(p).translate(x, y) for p, (x, y) in zip(panels, positions, strict=True)]
    return _group(parts, (0, top, width, bottom)), width, bottom


# ----------------------------------------------------------------------------- chalk primitives

def _group(parts: list[Diagram], box: Box) -> Diagram:
    """Diagrams composed under a known bounding box. chalk would otherwise derive the envelope
    by querying every primitive, which dominates the time for a few thousand of them."""
    x0, y0, x1, y1 = box
    env = Envelope.from_bounding_box(BoundingBox([P2(x0, y0), P2(x1, y1)]))
    return Compose(env, list(parts))


def _text(s: str, x: float, y: float, size: float, color: str = INK, anchor: str = "middle") -> Diagram:
    """Text centred on (x, y), or starting (anchor='start') or ending ('end') at x."""
    half = text_width(s, size) / 2
    if anchor == "start":
        x += half
    elif anchor == "end":
        x -= half
    c = Color(color)
    return anchored_text(s, size, Anchor(anchor), half).fill_color(c).line_color(c).line_width_local(0) \
        .translate(x, y)


def _path(point_lists: list[list[tuple[float, float]]], closed: bool) -> Diagram:
    """One chalk path made of several polylines (one SVG element for many shapes)."""
    path = Path.empty()
    for pts in point_lists:
        path = path + Path.from_points([P2(x, y) for x, y in pts], closed)
    return path.stroke()


def _filled(boxes: list[Box], fill: str) -> Diagram:
    c = Color(fill)
    return box_path(boxes, closed=True).fill_color(c).line_color(c).line_width_local(0)


def _outlined(boxes: Sequence[Box], line: str, width: float = 1.0) -> Diagram:
    return box_path(boxes, closed=False).line_color(Color(line)).line_width_local(width)


def _paint_header(h: Header) -> list[Diagram]:
    parts, y = [], 6.0
    for s, size, color in h.lines:
        y += size / 2 + 4
        parts.append(_text(s, 2, y, size, color, "start"))
        y += size / 2 + 4
    return parts


def _cell_font(s: str, cell: float) -> float:
    return min(12.0, (cell - 6) / max(0.1, text_width(s, 1.0)))


def _paint_view_background(v: ArrayView) -> list[Diagram]:
    """Cell fills, slightly translucent: painted over the arrow shafts, they let an arrow that
    passes beneath other cells show faintly, while values stay readable."""
    by_fill: dict[str, list[Box]] = defaultdict(list)
    for fill, box in zip(v.fills, v.cell_boxes(), strict=False):
        by_fill[fill or "#ffffff"].append(box)
    return [_filled(boxes, fill).fill_opacity(CELL_OPACITY) for fill, boxes in by_fill.items()]


def _paint_view_foreground(v: ArrayView) -> list[Diagram]:
    """The array's name, its column and row numbers, its grid and its cells' indices and values.
    The texts (thousands for a big array) go out as two batches around the grid lines, which
    keeps the painting order (grid over fills, texts over grid) without one chalk primitive each."""
    cell = v.cell
    gx = v.x + v.label_w + v.margin
    gy = v.y + v.top
    extent = (v.x, v.y, v.x + v.width, v.y + v.height)
    out = [text_batch([label.text for label in v.labels()], extent)]
    boxes = v.cell_boxes()
    if boxes:
        out.append(_outlined(boxes, GRID_LINE))
    cells = []
    for i, (x0, y0, x1, y1) in enumerate(boxes):
        if not v.two_d:  # the element's index, small in the corner
            corner = v.locate(i)[2] if v.wrapped or v.fold else i  # a line's first index is left of it
            cells.append(PlacedText(str(corner), x0 + 2.5, y0 + 6, 7.5, MUTED, Anchor.START))
        s = v.texts[i]
        if s:
            cells.append(PlacedText(s, (x0 + x1) / 2, (y0 + y1) / 2 + 2, _cell_font(s, cell),
                                    MUTED if v.faint[i] else INK))
    if v.size == 0:
        cells.append(PlacedText("(empty)", gx, gy + cell / 2, 10, MUTED, Anchor.START))
    if cells:
        out.append(text_batch(cells, extent))
    return out


DOT_R = 2.2  # radius of the dot an arrow starts from


def _arrow_parts(a: Arrow) -> tuple[list[Point], list[Point]]:
    """Shaft polyline and head triangle of one arrow."""
    pts = a.points
    (xa, ya), (xb, yb) = pts[-2], pts[-1]
    n = math.hypot(xb - xa, yb - ya) or 1.0
    ux, uy = (xb - xa) / n, (yb - ya) / n
    # The shaft stops inside the head so that its end does not poke through the tip.
    shaft = [*pts[:-1], (xb - ux * HEAD_LEN * 0.8, yb - uy * HEAD_LEN * 0.8)]
    bx, by = xb - ux * HEAD_LEN, yb - uy * HEAD_LEN
    head = [(xb, yb), (bx - uy * HEAD_HALF, by + ux * HEAD_HALF), (bx + uy * HEAD_HALF, by - ux * HEAD_HALF)]
    return shaft, head


def _extent(points: list[Point], pad: float = 0.0) -> Box:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return (min(xs) - pad, min(ys) - pad, max(xs) + pad, max(ys) + pad)


def _drawn_once(shapes: list[list[Point]]) -> list[list[Point]]:
    """The shapes without repeats (to a tenth of a pixel): the arrows of one thread that join at a
    cell's edge have one head there, those that leave one cell's edge one dot."""
    seen: dict[tuple, list[Point]] = {}
    for shape in shapes:
        seen.setdefault(tuple((round(x, 1), round(y, 1)) for x, y in shape), shape)
    return list(seen.values())


def _paint_arrows(arrows: list[Arrow]) -> tuple[list[Diagram], list[Diagram]]:
    """Shafts (one group per colour holding one SVG path an arrow, so arrows can be counted) and
    marks (heads, and the dots arrows start from: one path of each per colour), painted in
    separate layers."""
    shafts: dict[str, list] = defaultdict(list)
    heads: dict[str, list[list[Point]]] = defaultdict(list)
    dots: dict[str, list[list[Point]]] = defaultdict(list)
    points: dict[str, list[Point]] = defaultdict(list)
    for a in sorted(arrows, key=lambda a: a.lane):
        shaft, head = _arrow_parts(a)
        # The shaft ends short of the head's tip, so that its end does not poke through.
        shafts[a.color].append((*a.pieces[:-1], (*a.pieces[-1][:-1], shaft[-1])))
        heads[a.color].append(head)
        dots[a.color].append([a.points[0], a.points[0]])
        points[a.color] += a.points
    shaft_layer, mark_layer = [], []
    for color, paths in shafts.items():
        c = Color(color)
        shaft_layer.append(path_batch(paths, _extent(points[color])).line_color(c).line_width_local(ARROW_W))
        triangles = _drawn_once(heads[color])
        mark_layer.append(_path(triangles, closed=True).fill_color(c).line_color(c).line_width_local(0))
        starts = [(tuple(dot),) for dot in _drawn_once(dots[color])]  # a line of zero length, round ends: a dot
        mark_layer.append(path_batch(starts, _extent(points[color], DOT_R), joined=True, round_caps=True)
                          .line_color(c).line_width_local(2 * DOT_R))
    return shaft_layer, mark_layer


def _paint_legend(p: Panel) -> list[Diagram]:
    """The thread swatches: one path per colour and one batch of labels, however many threads."""
    by_color: dict[str, list[Box]] = defaultdict(list)
    labels = []
    for y, row in legend_rows_y(p):
        if row is p.legend_rows[0]:
            labels.append(PlacedText(LEGEND_LABEL, PANEL_PAD, y + 9, 11, MUTED, Anchor.START))
        for name, color, x, w in row:
            by_color[color].append((x, y, x + w, y + 18))
            labels.append(PlacedText(name, x + w / 2, y + 9, min(10.0, (w - 4) / max(0.1, text_width(name, 1.0))),
                                     "#ffffff"))
    if not labels:
        return []
    swatches = [_filled(boxes, color) for color, boxes in by_color.items()]
    return [*swatches, text_batch(labels, (0, 0, p.width, p.height))]


def _ring(box: Box, inset: float = 1.5) -> list[tuple[float, float]]:
    x0, y0, x1, y1 = box
    return [(x0 + inset, y0 + inset), (x1 - inset, y0 + inset), (x1 - inset, y1 - inset), (x0 + inset, y1 - inset),
            (x0 + inset, y0 + inset)]


BADGE_R = 6.5  # radius of a finding's numbered disc


def badge_spot(box: Box, k: int) -> tuple[float, float]:
    """Where the ``k``-th badge on a cell goes: the first on its top right corner, the next ones
    beside it to the left, then a row lower, so that no badge covers another."""
    step = 2 * BADGE_R + 1
    per_row = max(1, int((box[2] - box[0]) // step))
    return box[2] - 1 - (k % per_row) * step, box[1] + 1 + (k // per_row) * step


def _badge_parts(number: int, x: float, y: float) -> list[Diagram]:
    """A finding's number in a red disc centred on (x, y)."""
    r = BADGE_R
    disc = [(x + r * math.cos(k * math.pi / 8), y + r * math.sin(k * math.pi / 8)) for k in range(16)]
    c = Color(FINDING_RED)
    label = str(number)
    return [_path([disc], closed=True).fill_color(c).line_color(c).line_width_local(0),
            _text(label, x, y + 0.5, 8.5 if len(label) == 1 else 7.0, "#ffffff")]


def _mark_line(points: list[list[tuple[float, float]]], dashed: bool = False) -> Diagram:
    d = _path(points, closed=False).line_color(Color(FINDING_RED)).line_width_local(MARK_W)
    return d.dashing([4.0, 3.0], 0) if dashed else d


def _paint_marks(p: Panel, views: list[ArrayView]) -> list[Diagram]:
    """The findings layer, over everything else: rings on elements, out-of-bounds cells with the
    arrow that leaves the array, marked swatches, and the numbered list of findings."""
    out: list[Diagram] = []
    marks = p.marks
    by_key = {v.key: v for v in views}
    if marks is not None:
        badges_on: dict[tuple, int] = defaultdict(int)  # badges already on a cell
        ringed: set[tuple] = set()
        for ring in marks.rings:
            box = by_key[ring.key].cell_box(ring.element)
            if box is None:
                continue
            cell = (ring.key, ring.element)
            if cell not in ringed:
                out.append(_mark_line([_ring(box)]))
                ringed.add(cell)
            if ring.badged:
                out += _badge_parts(ring.number, *badge_spot(box, badges_on[cell]))
                badges_on[cell] += 1
    for v in views:
        if not v.ghosts:
            continue
        boxes = [v.ghost_box(k) for k in range(len(v.ghosts))]
        y_mid = (boxes[0][1] + boxes[0][3]) / 2
        start, end = (v.grid_right + 3, y_mid), (boxes[0][0] - 2, y_mid)
        out.append(_mark_line([[start, (end[0] - HEAD_LEN * 0.8, end[1])]]))
        c = Color(FINDING_RED)
        head = [(end[0], end[1]), (end[0] - HEAD_LEN, end[1] - HEAD_HALF), (end[0] - HEAD_LEN, end[1] + HEAD_HALF)]
        out.append(_path([head], closed=True).fill_color(c).line_color(c).line_width_local(0))
        out.append(_filled(boxes, GHOST_FILL))
        out.append(_mark_line([_ring(b, 0.0) for b in boxes], dashed=True))
        for k, (g, box) in enumerate(zip(v.ghosts, boxes, strict=True)):
            if g.gap_before and k:
                out.append(_text("\u2026", box[0] - 7, y_mid, 11, FINDING_RED))
            out.append(_text(str(g.index), (box[0] + box[2]) / 2, y_mid + 1, 10.0,
                             g.color if g.color != FINDING_RED else INK))
            last_of_its_finding = k + 1 == len(v.ghosts) or v.ghosts[k + 1].number != g.number
            if g.number and last_of_its_finding:
                out += _badge_parts(g.number, box[2] - 1, box[1] + 1)
        if v.ghosts_hidden:
            out.append(_text(f"+{v.ghosts_hidden}", boxes[-1][2] + 6, y_mid, 10, FINDING_RED, "start"))
    if marks is not None:
        slots = swatch_slots(p)
        for lane, (_number, struck) in marks.swatches.items():
            if lane not in p.legend_lanes:
                continue
            k = p.legend_lanes.index(lane)
            if k >= len(slots):
                continue
            x, y, w = slots[k]
            box = (x - 2, y - 2, x + w + 2, y + 20)
            out.append(_mark_line([_ring(box, 0.0)]))
            if struck:
                out.append(_mark_line([[(box[0], box[3]), (box[2], box[1])]]))
        for k, note in enumerate(marks.notes):
            out.append(_text(note, PANEL_PAD, marks.notes_y + (k + 0.5) * NOTE_H, 10.5, FINDING_RED, "start"))
    return out



def _paint_panel(p: Panel) -> Diagram:
    """Layers, bottom to top: frame, arrow shafts, cell fills, arrow heads, cell borders and
    texts (so values stay readable where arrows cross them)."""
    views = [v for s in p.sections for v in s]
    parts = [_filled([(0, 0, p.width, p.height)], "#ffffff"), _outlined([(0, 0, p.width, p.height)], PANEL_LINE),
             _text(p.title, PANEL_PAD, PANEL_PAD + 8, 13, INK, "start")]
    parts += _paint_legend(p)
    shafts, heads = _paint_arrows(p.arrows)
    parts += shafts
    for v in views:
        parts += _paint_view_background(v)
    parts += heads
    for v in views:
        parts += _paint_view_foreground(v)
    parts += _paint_marks(p, views)
    parts += _paint_selection(p)
    if p.clickable:
        parts += _paint_cell_targets(p, views)
    return _group(parts, (0, 0, p.width, p.height))


SELECTED_W = 2.0  # the frame of the selected thread's swatch (finding marks are MARK_W, red)


def _paint_selection(p: Panel) -> list[Diagram]:
    """A dark frame around the swatch of the thread the explorer shows."""
    if p.selected_lane is None or p.selected_lane not in p.legend_lanes:
        return []
    slots = swatch_slots(p)
    k = p.legend_lanes.index(p.selected_lane)
    if k >= len(slots):
        return []
    x, y, w = slots[k]
    return [_outlined([(x - 3.5, y - 3.5, x + w + 3.5, y + 21.5)], INK, SELECTED_W)]


def _paint_cell_targets(p: Panel, views: list[ArrayView]) -> list[Diagram]:
    """Click targets over every drawn cell and out-of-bounds cell, by array: device arrays by
    name, threadgroup arrays by name and threadgroup (each threadgroup has its own copy); and
    over the thread swatches, by threadgroup."""
    out = []
    for v in views:
        where, name = v.key[0], v.key[1]
        attributes = {"buffer": name, "space": "threadgroup" if where == "tg" else "device"}
        if where == "tg":
            attributes["group"] = str(p.group)
        cells = list(enumerate(v.cell_boxes()))
        cells += [(g.index, v.ghost_box(k)) for k, g in enumerate(v.ghosts)]
        if cells:
            out.append(cell_targets(attributes, cells))
    # The swatches: the legend lists the threadgroup's threads by their index in it, so the k-th
    # swatch is thread k.
    swatches = [(k, (x, y, x + w, y + 18)) for k, (x, y, w) in enumerate(swatch_slots(p))]
    if swatches:
        out.append(cell_targets({"buffer": "", "space": "thread", "group": str(p.group)}, swatches))
    return out


