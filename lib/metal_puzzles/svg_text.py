"""SVG text of a chalk diagram, written as strings.

chalk's own SVG backend builds an svgwrite element per node, validates every attribute and
serialises the tree through ElementTree: for the diagram of a 1024-thread threadgroup (a few
thousand shapes) that takes seconds, longer than drawing the diagram itself. This writer walks
the same tree and writes the same bytes (``tests/test_images.py`` compares every image of the
book with its committed copy), several times faster. A shape it does not know (LaTeX, images,
arrow heads: none of which the diagrams use) makes ``svg_text`` return None, and the caller
falls back to chalk's backend.
"""

from __future__ import annotations

from chalk.backend.svg import tx_to_svg
from chalk.core import ApplyName, ApplyStyle, ApplyTransform, Compose, Empty, Primitive
from chalk.shapes import Path, Segment, Spacer, Text
from chalk.style import Style
from chalk.transform import unit_x, unit_y
from chalk.types import Diagram

#: What chalk's backend writes before the diagram: the XML declaration, the root element's
#: attributes (svgwrite sorts them) and the arrow marker it always defines.
_HEAD = ('<?xml version="1.0" encoding="utf-8" ?>\n<svg baseProfile="full" height="{height}" version="1.1" '
         'width="{width}" xmlns="http://www.w3.org/2000/svg" xmlns:ev="http://www.w3.org/2001/xml-events" '
         'xmlns:xlink="http://www.w3.org/1999/xlink"><defs><marker id="arrow" markerHeight="3.5" markerWidth="5" '
         'orient="auto" refX="5.0" refY="1.7"><polygon points="0,0 5,1.75 0,3.5" /></marker></defs>'
         '<g style="fill:white;">')
_TAIL = "</g></svg>"
_PAD = 0.05  # chalk's renderer leaves 5% around the diagram


class _Unsupported(Exception):
    """A node or shape this writer does not know: chalk's backend writes the diagram instead."""


def svg_text(diagram: Diagram, height: int, width: int) -> str | None:
    """The SVG document chalk's ``render(diagram, path, height, width)`` would write, or None
    when the diagram holds a shape this writer does not know."""
    envelope = diagram.get_envelope()
    if envelope.width - width <= envelope.height - height:
        alpha = height / ((1 + _PAD) * envelope.height)
    else:
        alpha = width / ((1 + _PAD) * envelope.width)
    placed = diagram.center_xy().pad(1 + _PAD).scale(alpha)
    e = placed.get_envelope()
    placed = placed.translate(e(-unit_x), e(-unit_y))
    out: list[str] = [_HEAD.format(height=height, width=width)]
    try:
        _write(placed, Style.root(output_size=max(height, width)), out)
    except _Unsupported:
        return None
    out.append(_TAIL)
    return "".join(out)


def _write(d: Diagram, style: Style, out: list[str]) -> None:
    if isinstance(d, Primitive):
        merged = d.style.merge(style)
        out.append(f'<g style="{_attr(merged.to_svg() or ";")}" transform="{tx_to_svg(d.transform)}">')
        _shape(d.shape, out)
        out.append("</g>")
    elif isinstance(d, Compose):
        if not d.diagrams:
            out.append("<g />")
            return
        out.append("<g>")
        for part in d.diagrams:
            _write(part, style, out)
        out.append("</g>")
    elif isinstance(d, ApplyTransform):
        out.append(f'<g transform="{tx_to_svg(d.transform)}">')
        _write(d.diagram, style, out)
        out.append("</g>")
    elif isinstance(d, ApplyStyle):
        _write(d.diagram, d.style.merge(style), out)
    elif isinstance(d, ApplyName):
        out.append("<g>")
        _write(d.diagram, style, out)
        out.append("</g>")
    elif isinstance(d, Empty):
        out.append("<g />")
    else:
        raise _Unsupported(type(d).__name__)


def _shape(shape, out: list[str]) -> None:
    if isinstance(shape, Path):
        commands = []
        for loc_trail in shape.loc_trails:
            p = loc_trail.location
            commands.append(f"M {p.x} {p.y}")
            for seg, q in loc_trail.located_segments():
                if not isinstance(seg, Segment):  # arcs: chalk's backend writes them
                    raise _Unsupported("arc")
                end = seg.q + q
                commands.append(f"L {end.x} {end.y}")
            if loc_trail.trail.closed:
                commands.append("Z")
        extra = "" if shape.loc_trails[0].trail.closed else "fill:none;"
        out.append(f'<path d="{_attr(" ".join(commands))}" style="vector-effect: non-scaling-stroke;{extra}" />')
    elif isinstance(shape, Text):
        dx = -(shape.get_bounding_box().width / 2)
        style = ("text-align:center; text-anchor:middle; dominant-baseline:middle;&#10;"
                 "                      font-family:sans-serif; font-weight: bold;&#10;"
                 f"                      font-size:{shape.font_size}px;&#10;"
                 "                      vector-effect: non-scaling-stroke;")
        out.append(f'<text style="{style}" transform="translate({dx}, 0)">{_text(shape.text)}</text>')
    elif isinstance(shape, Spacer):
        out.append("<g />")
    else:
        raise _Unsupported(type(shape).__name__)


def _text(s: str) -> str:
    """Character data as ElementTree escapes it."""
    if "&" in s:
        s = s.replace("&", "&amp;")
    if "<" in s:
        s = s.replace("<", "&lt;")
    if ">" in s:
        s = s.replace(">", "&gt;")
    return s


def _attr(s: str) -> str:
    """An attribute value as ElementTree escapes it."""
    s = _text(s)
    if '"' in s:
        s = s.replace('"', "&quot;")
    if "\n" in s:
        s = s.replace("\n", "&#10;")
    if "\r" in s:
        s = s.replace("\r", "&#13;")
    if "\t" in s:
        s = s.replace("\t", "&#09;")
    return s
