"""Compact SVG text for chalk diagrams.

chalk's own SVG backend writes every shape inside two nested groups with a full transform
matrix, full-precision coordinates and a long inline style, which made a book diagram 1-2 MB
and an executed notebook tens of megabytes. This writer walks the same diagram tree and writes
what a browser needs: transforms folded into the coordinates, numbers rounded to a tenth of a
pixel (a diagram unit is one pixel, so nothing visible moves), presentation attributes instead
of style strings, and the text defaults set once on the root group.

It paints exactly what chalk's backend paints for the shapes our diagrams use (paths made of
line segments, circular arcs and text); the diagram keeps its natural size: one unit, one pixel.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from chalk.core import ApplyName, ApplyStyle, ApplyTransform, Compose, Empty, Primitive
from chalk.shapes import ArcSegment, Path, Spacer, Text
from chalk.shapes.shape import Shape
from chalk.style import Style, WidthType
from chalk.transform import P2, V2, Affine, BoundingBox
from chalk.types import Diagram
from chalk.visitor import A, ShapeVisitor

from metal_puzzles.compat import StrEnum

#: Room around the diagram, as a fraction of each side (chalk's renderer uses the same).
MARGIN = 0.025
#: Stroke width of a shape that sets none, as chalk computes it for a drawing of this size.
_CHALK_LW = 0.1 * 15 / 500

TEXT_DEFAULTS = ("font-family='sans-serif' font-weight='bold' text-anchor='middle' "
                 "dominant-baseline='middle'")


class Anchor(StrEnum):
    """Which point of a text its position names (SVG's text-anchor)."""

    START = "start"
    MIDDLE = "middle"
    END = "end"


@dataclass
class AnchoredText(Text):
    """Text placed by its start or its end. chalk only centres text, so the layout centres it on an
    estimate of its width (``half_width`` from the true end); this writer puts the end back and
    anchors the text there, so that a left-aligned label starts exactly where it should whatever
    the width of the reader's font."""

    anchor: Anchor = Anchor.MIDDLE
    half_width: float = 0.0


def anchored_text(s: str, size: float, anchor: Anchor, half_width: float) -> Diagram:
    """A chalk text primitive that remembers its anchor (see ``AnchoredText``)."""
    return Primitive.from_shape(AnchoredText(s, size, anchor, half_width))


#: A path as pieces, each starting where the one before it ends: a straight line (its two end
#: points) or a cubic Bézier curve (its start, two control points and end).
Pieces = tuple[tuple[tuple[float, float], ...], ...]


@dataclass
class PathBatch(Shape):
    """Open paths of lines and curves (``Pieces``) stroked alike, as one chalk primitive: written as
    one group that sets their stroke around one SVG path each (an arrow's shaft: arrows stay
    countable), or, ``joined``, as one path of many (dots). ``round_caps``: round line ends, which
    make a path of zero length a dot. The layout gives the bounding box (``box``)."""

    paths: tuple[Pieces, ...] = ()
    box: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    joined: bool = False
    round_caps: bool = False

    def get_bounding_box(self) -> BoundingBox:
        x0, y0, x1, y1 = self.box
        return BoundingBox([P2(x0, y0), P2(x1, y1)])

    def accept(self, visitor: ShapeVisitor[A], **kwargs: Any) -> A:
        return visitor.visit_spacer(Spacer(0, 0), **kwargs)


def path_batch(paths: Sequence[Pieces], box: tuple[float, float, float, float], joined: bool = False,
               round_caps: bool = False) -> Diagram:
    """A chalk primitive drawing ``paths`` (see ``PathBatch``); style its stroke as any shape's."""
    return Primitive.from_shape(PathBatch(tuple(paths), box, joined, round_caps))


@dataclass(frozen=True)
class PlacedText:
    """One text of a ``TextBatch``: ``x`` is where its anchor lies (its start, middle or end)."""

    text: str
    x: float
    y: float
    size: float
    fill: str  # '#rrggbb'
    anchor: Anchor = Anchor.MIDDLE


@dataclass
class TextBatch(Shape):
    """Many texts as one chalk primitive. A diagram of a 1,024-thread threadgroup has a few
    thousand texts (cell values, indices, thread labels); as one chalk primitive each, building
    and walking them took most of a second, which the explorer paid on every click. This writer
    writes a batch's texts straight out, exactly as it writes a single text; chalk only needs
    the batch's bounding box (``box``: x0, y0, x1, y1), given by the layout that placed them."""

    items: tuple[PlacedText, ...] = ()
    box: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)

    def get_bounding_box(self) -> BoundingBox:
        x0, y0, x1, y1 = self.box
        return BoundingBox([P2(x0, y0), P2(x1, y1)])

    def accept(self, visitor: ShapeVisitor[A], **kwargs: Any) -> A:
        # chalk's own backends (a sized render_svg) see an empty spacer: they cannot draw a batch.
        return visitor.visit_spacer(Spacer(0, 0), **kwargs)


@dataclass
class BoxPath(Shape):
    """Axis-aligned rectangles (x0, y0, x1, y1) as one path: filled (``closed``) or their
    outlines. A diagram's cell fills and grid lines are thousands of rectangles; as a general
    chalk path each took a quarter of a millisecond to build and as long to write."""

    boxes: tuple[tuple[float, float, float, float], ...] = ()
    closed: bool = True

    def get_bounding_box(self) -> BoundingBox:
        if not self.boxes:
            return BoundingBox([P2(0, 0), P2(0, 0)])
        return BoundingBox([P2(min(b[0] for b in self.boxes), min(b[1] for b in self.boxes)),
                            P2(max(b[2] for b in self.boxes), max(b[3] for b in self.boxes))])

    def accept(self, visitor: ShapeVisitor[A], **kwargs: Any) -> A:
        return visitor.visit_spacer(Spacer(0, 0), **kwargs)


@dataclass
class CellTargets(Shape):
    """Invisible rectangles over an array's cells, one per element, that say which element they
    cover (``data-index``) under a group that says which array (``attributes``: name -> value,
    written as ``data-`` attributes). They are what a click on a diagram's cell finds: a page
    script reads the attributes (the explorer selects the threads that touched the element)."""

    attributes: tuple[tuple[str, str], ...] = ()
    cells: tuple[tuple[int, tuple[float, float, float, float]], ...] = ()  # (element index, box)

    def get_bounding_box(self) -> BoundingBox:
        boxes = [b for _, b in self.cells] or [(0.0, 0.0, 0.0, 0.0)]
        return BoundingBox([P2(min(b[0] for b in boxes), min(b[1] for b in boxes)),
                            P2(max(b[2] for b in boxes), max(b[3] for b in boxes))])

    def accept(self, visitor: ShapeVisitor[A], **kwargs: Any) -> A:
        return visitor.visit_spacer(Spacer(0, 0), **kwargs)


#: Class of the group of a ``CellTargets`` (page scripts and tests find the cells by it).
CELL_TARGETS_CLASS = "mp-cells"


def cell_targets(attributes: dict[str, str],
                 cells: list[tuple[int, tuple[float, float, float, float]]]) -> Diagram:
    """A chalk primitive of clickable cells (see ``CellTargets``)."""
    return Primitive.from_shape(CellTargets(tuple(attributes.items()), tuple(cells)))


def box_path(boxes: Sequence[tuple[float, float, float, float]], closed: bool) -> Diagram:
    """A chalk primitive drawing ``boxes`` as one path (see ``BoxPath``); style it as any shape."""
    return Primitive.from_shape(BoxPath(tuple(boxes), closed))


def text_batch(items: list[PlacedText], box: tuple[float, float, float, float]) -> Diagram:
    """A chalk primitive drawing ``items`` (see ``TextBatch``)."""
    return Primitive.from_shape(TextBatch(tuple(items), box))


def text_element(s: str, x: float, y: float, size: float, fill: str, anchor: Anchor = Anchor.MIDDLE) -> str:
    """The SVG element of one text (the root group sets the font, the middle anchor and the
    baseline): the one way this module writes a text."""
    attr = "" if anchor == Anchor.MIDDLE else f" text-anchor='{anchor}'"
    return (f"<text x='{num(x)}' y='{num(y)}' font-size='{num(size)}' fill='{fill}'{attr}>"
            f"{escape(s, quote=False)}</text>")


def num(x: float) -> str:
    """A coordinate rounded to a tenth of a pixel, without trailing zeros ('12', '3.5', '-0.2')."""
    if x == int(x):  # a whole pixel, the common case, without formatting a float
        return str(int(x))
    s = f"{x:.1f}"
    if s.endswith(".0"):
        s = s[:-2]
    return "0" if s == "-0" else s


def _scale(t: Affine) -> float:
    a, b, _, d, e, _ = t[:6]
    return math.sqrt(abs(a * e - b * d)) or 1.0


def _tenths(x: float, y: float) -> tuple[int, int]:
    """A point in whole tenths of a pixel: relative steps between rounded points add up exactly."""
    return round(x * 10), round(y * 10)


def _tenth_str(v: int) -> str:
    """``num(v / 10)`` for a whole number of tenths, from its digits (exact, and no float to format)."""
    whole, tenth = divmod(abs(v), 10)
    sign = "-" if v < 0 else ""
    return f"{sign}{whole}" if tenth == 0 else f"{sign}{whole}.{tenth}"


#: How far (in tenths of a pixel) a simplified polyline may pass from a point it leaves out.
SIMPLIFY_TOLERANCE = 2.5


def _simplify(points: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Douglas-Peucker: the fewest of the points such that every point left out lies within
    SIMPLIFY_TOLERANCE of the line drawn (an arrow sampled as a curve that is nearly straight
    becomes one or two steps, a curve keeps its shape to a quarter of a pixel)."""
    if len(points) < 3:
        return points
    (x0, y0), (x1, y1) = points[0], points[-1]
    length = math.hypot(x1 - x0, y1 - y0)
    worst, far = -1.0, 0
    for k in range(1, len(points) - 1):
        px, py = points[k]
        if length == 0:
            dist = math.hypot(px - x0, py - y0)
        else:
            dist = abs((x1 - x0) * (y0 - py) - (x0 - px) * (y1 - y0)) / length
        if dist > worst:
            worst, far = dist, k
    if worst <= SIMPLIFY_TOLERANCE:
        return [points[0], points[-1]]
    left = _simplify(points[:far + 1])
    return left[:-1] + _simplify(points[far:])


def _flush_lines(commands: list[str], here: tuple[int, int], run: list[tuple[int, int]]) -> tuple[int, int]:
    """Write a polyline as relative steps, simplified (``_simplify``)."""
    points = [here]
    for q in run:
        if q != points[-1]:
            points.append(q)
    kept = _simplify(points)
    steps = [f"{_tenth_str(q[0] - p[0])} {_tenth_str(q[1] - p[1])}" for p, q in zip(kept, kept[1:], strict=False)]
    if steps:
        commands.append("l" + " ".join(steps))
    run.clear()
    return kept[-1]


class _Writer:
    def __init__(self, output_size: float, separated: bool = False) -> None:
        self.output_size = output_size
        self.separated = separated
        self.parts: list[str] = []

    def walk(self, d, t: Affine, style: Style) -> None:
        # A style applied further out wins over one applied further in, as in chalk's backend.
        if isinstance(d, Primitive):
            self.primitive(d, t * d.transform, d.style.merge(style))
        elif isinstance(d, Compose):
            for child in d.diagrams:
                self.walk(child, t, style)
        elif isinstance(d, ApplyTransform):
            self.walk(d.diagram, t * d.transform, style)
        elif isinstance(d, ApplyStyle):
            self.walk(d.diagram, t, d.style.merge(style))
        elif isinstance(d, ApplyName):
            self.walk(d.diagram, t, style)
        elif isinstance(d, Empty):
            return
        else:  # pragma: no cover - a chalk node kind our diagrams do not make
            raise TypeError(f"cannot write a {type(d).__name__} as SVG")

    def stroke_width(self, style: Style) -> float:
        if style.line_width_ is None:
            return _CHALK_LW * self.output_size
        kind, width = style.line_width_
        return width * self.output_size * 15 / 500 if kind == WidthType.NORMALIZED else width

    def primitive(self, p: Primitive, t: Affine, style: Style) -> None:
        shape = p.shape
        if isinstance(shape, TextBatch):
            self.batch(shape, t)
        elif isinstance(shape, BoxPath):
            self.box_path(shape, t, style)
        elif isinstance(shape, CellTargets):
            self.cell_targets(shape, t)
        elif isinstance(shape, PathBatch):
            self.path_batch(shape, t, style)
        elif isinstance(shape, Text):
            self.text(shape, t, style)
        elif isinstance(shape, Path):
            self.path(shape, t, style)
        elif isinstance(shape, Spacer):
            return
        else:  # pragma: no cover
            raise TypeError(f"cannot write a {type(shape).__name__} shape as SVG")

    def text(self, shape: Text, t: Affine, style: Style) -> None:
        c, f = t[2], t[5]  # where the text's centre lands
        scale = _scale(t)
        size = (shape.font_size or 12.0) * scale
        fill = style.fill_color_.hex_l if style.fill_color_ is not None else "#ffffff"
        anchor = Anchor.MIDDLE
        if isinstance(shape, AnchoredText) and shape.anchor != Anchor.MIDDLE:
            c += (-1 if shape.anchor == Anchor.START else 1) * shape.half_width * scale
            anchor = shape.anchor
        self.parts.append(text_element(shape.text, c, f, size, fill, anchor))

    def batch(self, shape: TextBatch, t: Affine) -> None:
        # Separated (the explorer's page), each text is an element of its own, which the page
        # replaces alone when it changes; otherwise the texts that share a colour and an anchor
        # are grouped under one element that sets them (a diagram has thousands of texts).
        if self.separated:
            self.parts += _batch_elements(tuple(shape.items), tuple(t[:6]))
        else:
            self.parts += _grouped_batch(tuple(shape.items), tuple(t[:6]))

    def box_path(self, shape: BoxPath, t: Affine, style: Style) -> None:
        # Outlines of several boxes are written as their sides' lines; square ends close the
        # corners as a rectangle's joins do.
        caps = "" if shape.closed or len(shape.boxes) < 2 else " stroke-linecap='square'"
        self.parts.append(f"<path d='{_box_path_d(tuple(shape.boxes), shape.closed, tuple(t[:6]))}' "
                          f"{self.stroke_attrs(style, shape.closed, _scale(t))}{caps}/>")

    def cell_targets(self, shape: CellTargets, t: Affine) -> None:
        self.parts.append(_cell_targets_element(tuple(shape.attributes), tuple(shape.cells), tuple(t[:6])))

    def path_batch(self, shape: PathBatch, t: Affine, style: Style) -> None:
        if not shape.paths:
            return
        t6 = tuple(t[:6])
        attrs = self.stroke_attrs(style, closed=False, scale=_scale(t))
        if shape.round_caps:
            attrs += " stroke-linecap='round'"
        if shape.joined:
            self.parts.append(f"<path d='{''.join(_pieces_d(p, t6) for p in shape.paths)}' {attrs}/>")
        else:
            paths = "".join(f"<path d='{_pieces_d(p, t6)}'/>" for p in shape.paths)
            self.parts.append(f"<g {attrs}>{paths}</g>")

    def stroke_attrs(self, style: Style, closed: bool, scale: float = 1.0) -> str:
        """Fill and stroke; a line width is in the shape's own units, so it scales with the shape
        (as it does in chalk's backend, where it sits inside the scaled group)."""
        attrs = []
        if closed:
            fill = style.fill_color_.hex_l if style.fill_color_ is not None else "#ffffff"
            attrs.append(f"fill='{fill}'")
            if style.fill_opacity_ is not None:
                attrs.append(f"fill-opacity='{style.fill_opacity_:g}'")
        else:
            attrs.append("fill='none'")
        width = round(self.stroke_width(style) * scale, 3)
        if width > 0:
            colour = style.line_color_.hex_l if style.line_color_ is not None else "#000000"
            attrs.append(f"stroke='{colour}' stroke-width='{width:g}'")
            if style.dashing_ is not None:
                dashes = " ".join(f"{x:g}" for x in style.dashing_[0])
                attrs.append(f"stroke-dasharray='{dashes}'")
        return " ".join(attrs)

    def path(self, shape: Path, t: Affine, style: Style) -> None:
        scale = _scale(t)
        commands = []
        closed = False
        for loc_trail in shape.loc_trails:
            start = t * loc_trail.location
            here = _tenths(start.x, start.y)
            commands.append(f"M{_tenth_str(here[0])} {_tenth_str(here[1])}")
            run: list[tuple[int, int]] = []  # the line segments' end points since the last arc
            for seg, p in loc_trail.located_segments():
                q = t * (seg.q + p)
                if isinstance(seg, ArcSegment):
                    here = _flush_lines(commands, here, run)
                    large = 1 if abs(seg.dangle) > 180 else 0
                    # Affine.determinant is a property (chalk's types read it as a method).
                    sweep = 1 if seg.t.determinant * seg.dangle > 0 else 0  # type: ignore[operator]
                    commands.append(f"A{num(seg.r_x * scale)} {num(seg.r_y * scale)} {num(seg.rot)} {large} "
                                    f"{sweep} {num(q.x)} {num(q.y)}")
                    here = _tenths(q.x, q.y)
                else:
                    run.append(_tenths(q.x, q.y))
            _flush_lines(commands, here, run)
            if loc_trail.trail.closed:
                commands.append("Z")
                closed = True
        self.parts.append(f"<path d='{''.join(commands)}' {self.stroke_attrs(style, closed, scale)}/>")


#: The margin of a ``separated`` diagram, in pixels.
SEPARATED_MARGIN_PX = 12

#: What ``diagram_svg(..., separated=True)`` puts between its elements: a character XML does not
#: allow in a document, so it can appear in none of them.
PART_SEPARATOR = "\x1e"


# The batches are written by pure functions of their content and placement, remembered: the
# explorer redraws a 1,024-thread threadgroup's diagram at every click, and most of its batches
# (the thread swatches, the cells of arrays the step did not change, the click targets) are the
# same as at the click before. Hashing a batch's tuples costs a small share of writing it.
_BATCHES_REMEMBERED = 256


@functools.lru_cache(maxsize=_BATCHES_REMEMBERED)
def _batch_elements(items: tuple[PlacedText, ...], t6: tuple[float, ...]) -> tuple[str, ...]:
    a, b, c, d, e, f = t6
    scale = math.sqrt(abs(a * e - b * d)) or 1.0
    return tuple(text_element(p.text, a * p.x + b * p.y + c, d * p.x + e * p.y + f, p.size * scale, p.fill, p.anchor)
                 for p in items)


@functools.lru_cache(maxsize=_BATCHES_REMEMBERED)
def _grouped_batch(items: tuple[PlacedText, ...], t6: tuple[float, ...]) -> tuple[str, ...]:
    """A batch's texts, those with one colour and one anchor in a group that sets them; the groups
    in the order their first texts come in the batch (a cell's small index before its value, so
    that the value stays on top where they meet; texts of one kind do not overlap)."""
    a, b, c, d, e, f = t6
    scale = math.sqrt(abs(a * e - b * d)) or 1.0
    groups: dict[tuple[str, Anchor], list[str]] = {}
    for p in items:
        groups.setdefault((p.fill, p.anchor), []).append(
            f"<text x='{num(a * p.x + b * p.y + c)}' y='{num(d * p.x + e * p.y + f)}' "
            f"font-size='{num(p.size * scale)}'>{escape(p.text, quote=False)}</text>")
    out = []
    for (fill, anchor), texts in groups.items():
        anchored = "" if anchor == Anchor.MIDDLE else f" text-anchor='{anchor}'"
        out.append(f"<g fill='{fill}'{anchored}>{''.join(texts)}</g>")
    return tuple(out)


@functools.lru_cache(maxsize=_BATCHES_REMEMBERED)
def _box_path_d(boxes: tuple[tuple[float, float, float, float], ...], closed: bool, t6: tuple[float, ...]) -> str:
    """Path data of rectangles: filled ones (``closed``) merged where they touch into larger
    rectangles, outlines as the lines of their sides, each side shared by two cells drawn once
    (a grid of cells is a few lines, not a square a cell)."""
    a, b, c, d, e, f = t6
    corners = []
    for x0, y0, x1, y1 in boxes:
        # Corners in whole tenths, as path() writes them: the sides are exact differences.
        left, top = _tenths(a * x0 + b * y0 + c, d * x0 + e * y0 + f)
        right, bottom = _tenths(a * x1 + b * y1 + c, d * x1 + e * y1 + f)
        corners.append((left, top, right, bottom))
    if closed:
        return "".join(f"M{_tenth_str(x0)} {_tenth_str(y0)}h{_tenth_str(x1 - x0)}v{_tenth_str(y1 - y0)}"
                       f"h{_tenth_str(x0 - x1)}Z" for x0, y0, x1, y1 in _merged_rectangles(corners))
    if len(corners) == 1:  # a frame: one line around
        x0, y0, x1, y1 = corners[0]
        return (f"M{_tenth_str(x0)} {_tenth_str(y0)}l{_tenth_str(x1 - x0)} 0 0 {_tenth_str(y1 - y0)} "
                f"{_tenth_str(x0 - x1)} 0 0 {_tenth_str(y0 - y1)}")
    across: dict[int, list[tuple[int, int]]] = {}  # y -> the x spans of horizontal sides on it
    down: dict[int, list[tuple[int, int]]] = {}  # x -> the y spans of vertical sides on it
    for x0, y0, x1, y1 in corners:
        across.setdefault(y0, []).append((x0, x1))
        across.setdefault(y1, []).append((x0, x1))
        down.setdefault(x0, []).append((y0, y1))
        down.setdefault(x1, []).append((y0, y1))
    lines = [f"M{_tenth_str(s)} {_tenth_str(y)}h{_tenth_str(e - s)}"
             for y in sorted(across) for s, e in _joined_spans(across[y])]
    lines += [f"M{_tenth_str(x)} {_tenth_str(s)}v{_tenth_str(e - s)}"
              for x in sorted(down) for s, e in _joined_spans(down[x])]
    return "".join(lines)


def _joined_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans on one line, those that overlap or touch joined."""
    out: list[list[int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _merged_rectangles(boxes: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Rectangles (in tenths) covering the same area: boxes side by side in a row joined, then
    rows of the same span one under the other (a block of cells of one colour is one rectangle).
    Boxes that overlap stay as they are."""
    rows: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for x0, y0, x1, y1 in boxes:
        rows.setdefault((y0, y1), []).append((x0, x1))
    runs = []
    for (y0, y1), spans in rows.items():
        spans.sort()
        if any(b[0] < a[1] for a, b in zip(spans, spans[1:], strict=False)):  # overlapping: keep
            runs += [(x0, y0, x1, y1) for x0, x1 in spans]
            continue
        for s, e in _joined_spans(spans):
            runs.append((s, y0, e, y1))
    by_span: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for x0, y0, x1, y1 in runs:
        by_span.setdefault((x0, x1), []).append((y0, y1))
    out = []
    for (x0, x1), ys in by_span.items():
        ys.sort()
        if any(b[0] < a[1] for a, b in zip(ys, ys[1:], strict=False)):
            out += [(x0, y0, x1, y1) for y0, y1 in ys]
            continue
        out += [(x0, s, x1, e) for s, e in _joined_spans(ys)]
    return out


@functools.lru_cache(maxsize=_BATCHES_REMEMBERED)
def _cell_targets_element(attributes: tuple[tuple[str, str], ...],
                          cells: tuple[tuple[int, tuple[float, float, float, float]], ...],
                          t6: tuple[float, ...]) -> str:
    a, b, c, d, e, f = t6
    data = "".join(f" data-{name}='{escape(value, quote=True)}'" for name, value in attributes)
    # Transparent, not 'none': a transparent fill is painted, so the rectangle takes the click.
    rects = []
    for index, (x0, y0, x1, y1) in cells:
        left, top = _tenths(a * x0 + b * y0 + c, d * x0 + e * y0 + f)
        right, bottom = _tenths(a * x1 + b * y1 + c, d * x1 + e * y1 + f)
        rects.append(f"<rect x='{_tenth_str(left)}' y='{_tenth_str(top)}' width='{_tenth_str(right - left)}' "
                     f"height='{_tenth_str(bottom - top)}' data-index='{index}'/>")
    return f"<g class='{CELL_TARGETS_CLASS}'{data} fill='transparent' style='cursor:pointer'>{''.join(rects)}</g>"


def _pieces_d(pieces: Pieces, t6: tuple[float, ...]) -> str:
    """Path data of one path of pieces: each point relative to its piece's start, in whole tenths
    of a pixel (a curve in 'c', a line in 'l')."""
    a, b, c, d, e, f = t6

    def tenths(x: float, y: float) -> tuple[int, int]:
        return _tenths(a * x + b * y + c, d * x + e * y + f)

    here = tenths(*pieces[0][0])
    commands = [f"M{_tenth_str(here[0])} {_tenth_str(here[1])}"]
    for piece in pieces:
        start = here
        points = [tenths(x, y) for x, y in piece[1:]]
        steps = " ".join(f"{_tenth_str(x - start[0])} {_tenth_str(y - start[1])}" for x, y in points)
        commands.append(("c" if len(piece) == 4 else "l") + steps)
        here = points[-1]
    return "".join(commands)


def diagram_svg(diagram: Diagram, separated: bool = False) -> str:
    """SVG text of a chalk diagram at its natural size (one diagram unit = one pixel), with a
    viewBox so that a page may still scale it.

    ``separated``: ``PART_SEPARATOR`` before and after each drawn element (a shape, a batch of
    texts or boxes, a group of click targets), for a page that redraws only the elements that
    changed (the explorer's diagram: explorer/page.py); such text is not SVG until they are removed.
    Its margin is then a fixed ``SEPARATED_MARGIN_PX``, not a share of the size, so that an element
    keeps its coordinates (and its text) when the diagram grows or shrinks elsewhere."""
    env = diagram.get_envelope()
    if separated:
        width = max(1, math.ceil(env.width + 2 * SEPARATED_MARGIN_PX))
        height = max(1, math.ceil(env.height + 2 * SEPARATED_MARGIN_PX))
    else:
        width = max(1, math.ceil(env.width * (1 + 2 * MARGIN)))
        height = max(1, math.ceil(env.height * (1 + 2 * MARGIN)))
    left = -env(V2(-1, 0))  # the envelope gives the extent in a direction: minus the leftmost x
    top = -env(V2(0, -1))
    if separated:
        shift = Affine.translation(V2(SEPARATED_MARGIN_PX - left, SEPARATED_MARGIN_PX - top))
    else:
        shift = Affine.translation(V2((width - env.width) / 2 - left, (height - env.height) / 2 - top))
    writer = _Writer(output_size=max(width, height), separated=separated)
    writer.walk(diagram, shift, Style.root(output_size=max(width, height)))
    sep = PART_SEPARATOR if separated else ""
    # Attributes in single quotes: JSON, the notebook's format, escapes every double quote.
    return ('<?xml version="1.0" encoding="utf-8" ?>\n'
            f"<svg xmlns='http://www.w3.org/2000/svg' version='1.1' width='{width}' height='{height}' "
            f"viewBox='0 0 {width} {height}'>"
            f"<rect width='{width}' height='{height}' fill='#ffffff'/>"
            f"<g {TEXT_DEFAULTS}>{sep}{sep.join(writer.parts)}{sep}</g></svg>\n")


__all__ = ["diagram_svg", "PART_SEPARATOR", "num", "MARGIN", "PathBatch", "path_batch", "Pieces", "AnchoredText", "Anchor", "anchored_text", "PlacedText",
           "TextBatch", "BoxPath", "box_path",
           "CellTargets", "cell_targets", "CELL_TARGETS_CLASS", "text_batch", "text_element"]
