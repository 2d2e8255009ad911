"""Diagrams of a traced kernel run: what every thread of a threadgroup read and wrote.

``draw_run(result)`` turns a ``RunResult`` recorded with ``trace=True`` into a chalk diagram:
one panel per threadgroup holding the input arrays, the threadgroup memory as it stood after
each barrier phase, and the outputs, with an arrow from every element a thread wrote back to
each element its value was computed from, coloured by thread.

The geometry is worked out in plain Python first (so arrow end points are known exactly) and
only then painted with chalk. Everything is placed with absolute coordinates and translations,
never scaled: cairosvg (the PNG route) ignores SVG's ``non-scaling-stroke``, so one diagram
unit must be one pixel for line widths and font sizes to agree between the SVG a notebook shows
and the PNG.

The work is done in stages, one module each: ``build`` makes the model (``scene``: what is
drawn) from the run's trace (``data_flow``: what came from where), ``layout`` places it
(``routing``: where the arrows run), ``paint`` paints it with chalk and ``svg_text`` writes the SVG; ``style`` holds the sizes,
colours and text metrics they share. This module ties them together and shows the result.
"""

from __future__ import annotations

import math
import re

from chalk import Diagram
from chalk.core import ApplyTransform
from chalk.transform import Affine

from .build import build_header, build_panel
from .layout import lay_out_panel
from .marks import finding_sites
from .paint import paint_run
from .scene import RunDrawing
from .style import MIN_HEADER_W
from .svg_text import diagram_svg, num


# ----------------------------------------------------------------------------- public API
def draw_run(result, title: str | None = None, max_groups: int = 4, only_group: int | None = None,
             selected_lane: int | None = None, clickable: bool = False, steady_gaps: bool = False) -> RunDiagram:
    """The diagram of a traced run: a header and one panel per threadgroup (the first
    ``max_groups`` of them, or just threadgroup ``only_group``, a linear index). Works without a
    trace too, showing only the arrays.

    For the explorer: ``selected_lane`` frames that thread's swatch (the thread it shows), and
    ``clickable`` lays invisible targets over the cells that name their array and element
    (``svg_text.CellTargets``), for a click on a cell to select the threads that touched it;
    ``steady_gaps`` opens the gaps between lines of arrays for the farthest an arrow could travel
    rather than for the arrows drawn, so that the diagrams of one run's threads share one layout
    (a thread change moves no array: the explorer redraws only what changed)."""
    drawing = lay_out_run(result, title, max_groups, only_group, steady_gaps)
    for p in drawing.panels:
        p.selected_lane = selected_lane
        p.clickable = clickable
    return RunDiagram(Affine.identity(), paint_run(drawing))


def lay_out_run(result, title: str | None = None, max_groups: int = 4, only_group: int | None = None,
                steady_gaps: bool = False) -> RunDrawing:
    """What ``draw_run`` paints, built and laid out: the header and the panels, every array,
    label and arrow in place (in each panel's own coordinates)."""
    n_groups = int(result.lanes.n_groups)
    if only_group is not None:
        if not 0 <= only_group < n_groups:
            raise ValueError(f"only_group={only_group} but the launch has {n_groups} threadgroup(s)")
        shown = [only_group]
    else:
        shown = list(range(min(n_groups, max(1, max_groups))))
    sites = finding_sites(result)
    panels = [build_panel(result, g, sites, first_group=shown[0]) for g in shown]
    for p in panels:
        lay_out_panel(p, steady_gaps)
    header = build_header(result, title, shown, n_groups, sites,
                          wrap_w=max(MIN_HEADER_W, max((p.width for p in panels), default=0.0)))
    return RunDrawing(header, panels)


def to_svg(diagram: Diagram, separated: bool = False) -> str:
    """SVG text of a diagram at its natural size (one diagram unit = one pixel), written compactly
    (``svg_text``): a book diagram is tens of kilobytes, not megabytes. ``separated``: with
    ``svg_text.PART_SEPARATOR`` around each element, for the explorer's page script."""
    return diagram_svg(diagram, separated)


#: How small a diagram's text may be drawn, in CSS pixels, when the diagram is scaled down to fit
#: the room it is given: its typical text (the median size: the values in the cells) no smaller
#: than LEGIBLE_TEXT_PX, its smallest (the indices in the cells' corners) no smaller than
#: SMALLEST_TEXT_PX. Narrower than that, a diagram keeps that scale and scrolls sideways instead.
#: (At 7 px, Pooling's diagram was fitted down to 0.69 of its size at 1400x900 beside JupyterLab's
#: file browser: too small to read; issue 36.)
LEGIBLE_TEXT_PX = 8.0
SMALLEST_TEXT_PX = 5.0

_FONT_SIZE = re.compile(r"font-size='([0-9.]+)'")


def legible_min_width(svg: str) -> int:
    """The narrowest width, in CSS pixels, at which ``svg`` (``to_svg``'s output) keeps its text
    legible (``LEGIBLE_TEXT_PX``, ``SMALLEST_TEXT_PX``); its natural width if its text is that small already."""
    width = _natural_size(svg)[0]
    sizes = sorted(float(size) for size in _FONT_SIZE.findall(svg))
    if not sizes:
        return width
    scale = max(LEGIBLE_TEXT_PX / sizes[len(sizes) // 2], SMALLEST_TEXT_PX / sizes[0])
    return math.ceil(width * min(1.0, scale))


def fitting_svg(svg: str) -> str:
    """``to_svg``'s SVG (without its XML declaration) sized by the page: as wide as the room it
    is given, never wider than its natural size, and never narrower than ``legible_min_width``;
    the page rescales it when the room changes. Its box must scroll what is wider than the room
    (``fitting_html``; the explorer's diagram panel). JupyterLab's ``max-width: 100%`` for SVGs is
    overridden, so that the page cannot shrink it past the legible minimum."""
    body = svg[svg.index("<svg"):]
    width = _natural_size(svg)[0]
    style = (f"width:100%;height:auto;max-width:{width}px;min-width:{legible_min_width(svg)}px;"
             "display:block")
    return body.replace("<svg ", f"<svg style='{style}' ", 1)


def fitting_html(svg: str) -> str:
    """The SVG for a notebook page (``fitting_svg``) in a box that scrolls sideways what does not
    fit even at the legible minimum."""
    return f"<div style='overflow-x:auto;max-width:100%'>{fitting_svg(svg)}</div>"


def _natural_size(svg: str) -> tuple[int, int]:
    natural = re.match(r"<svg [^>]*?width='(\d+)' height='(\d+)'", svg[svg.index("<svg"):])
    if natural is None:
        raise ValueError("not an SVG written by to_svg: its <svg> element has no width and height")
    return int(natural.group(1)), int(natural.group(2))


def sized_svg(svg: str, width: float | None = None, height: float | None = None) -> str:
    """The SVG text of ``to_svg`` shown at another size: a width or height alone keeps the
    proportions; neither keeps the natural size."""
    if width is None and height is None:
        return svg
    head = svg.index("<svg")
    w0, h0 = _natural_size(svg)
    if width is None:
        assert height is not None  # one of them is given
        width = w0 * height / h0
    elif height is None:
        height = h0 * width / w0
    size = f"width='{num(width)}' height='{num(height)}'"
    return svg[:head] + svg[head:].replace(f"width='{w0}' height='{h0}'", size, 1)


def save_svg(diagram: Diagram, path: str) -> None:
    """Write the diagram as an SVG file."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(to_svg(diagram))


def save_png(diagram: Diagram, path: str, width: int | None = None) -> None:
    """Write the diagram as a PNG, ``width`` pixels wide (default: its natural size).

    Renders the SVG with cairosvg (pure Python over the system's libcairo); pycairo, which
    chalk's own PNG backend needs, has no Linux wheels and needs cairo's headers to build.
    """
    try:
        import cairosvg
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError("saving PNGs needs cairosvg: pip install cairosvg") from exc
    svg = to_svg(diagram).encode("utf-8")
    cairosvg.svg2png(bytestring=svg, write_to=path, output_width=width, background_color="white")


class RunDiagram(ApplyTransform):
    """A chalk diagram that shows itself in Jupyter at its natural size (chalk's default
    rendering squeezes every diagram to 200 pixels high; a page narrower than the diagram
    scrolls it sideways), and saves itself the same way outside Jupyter: ``render_svg(path)``,
    ``render_png(path)``."""

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        # HTML alone: the same picture again as image/svg+xml would double a notebook's size.
        return {"text/html": fitting_html(to_svg(self)), "text/plain": repr(self)}

    def __repr__(self) -> str:
        return "<diagram: show it in Jupyter, or save it with render_svg(path) or render_png(path)>"

    # chalk's own notebook forms (a diagram squeezed to 200 px high, as SVG and again as HTML):
    # None tells IPython to leave them out, so the notebook keeps the one form above.
    def _repr_svg_(self) -> None:  # type: ignore[override]
        return None

    def _repr_html_(self) -> None:  # type: ignore[override]
        return None

    def render_svg(self, path: str, height: int | None = None, width: int | None = None,
                   draw_height: int | None = None) -> None:
        """Write the diagram as an SVG file, at its natural size unless a size is given (a
        height alone or a width alone keeps the proportions). chalk's own backend cannot draw
        this module's batched texts and rectangles, so a sized file is the same SVG with its
        size changed (its viewBox scales the drawing); ``draw_height``, chalk's margin control,
        is accepted for compatibility and has no effect."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(sized_svg(to_svg(self), width, height))

    def render_png(self, path: str, height: int | None = None, width: int | None = None,
                   draw_height: int | None = None) -> None:
        """Write the diagram as a PNG file, ``width`` pixels wide (default: its natural size)."""
        save_png(self, path, width)


__all__ = ["draw_run", "lay_out_run", "to_svg", "save_svg", "save_png", "sized_svg", "fitting_svg", "fitting_html",
           "legible_min_width", "RunDiagram", "LEGIBLE_TEXT_PX", "SMALLEST_TEXT_PX"]
