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
"""

from __future__ import annotations

import functools
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from chalk import Diagram
from chalk.core import ApplyTransform, Compose
from chalk.envelope import Envelope
from chalk.shapes import Path
from chalk.transform import P2, Affine, BoundingBox
from colour import Color

from ..msl import FindingKind, RunResult
from ..msl.lang.types import AddressSpace
from ..msl.observe.trace import BarrierEvent, ElementAccess
from ..msl.run.finding_kinds import ElementMark, ThreadMark, kind_entry
from ..msl.run.memory import AccessKind
from .marks import (
    FINDING_RED,
    FindingSite,
    Place,
    drawn_place,
    finding_sites,
    marks_legend,
    stray_accesses,
)
from .svg_text import (
    Anchor,
    CubicPath,
    PlacedText,
    anchored_text,
    box_path,
    cell_targets,
    diagram_svg,
    num,
    text_batch,
)

# ----------------------------------------------------------------------------- constants
CELL = 34  # side of one array element, in pixels
SMALL_CELL = 28  # used instead when a panel would be too wide (big 2D arrays)
MIN_CELL_FONT = 8.5  # a value is never written smaller: its array's cells widen instead
MAX_PANEL_W = 720  # beyond this width a panel switches to SMALL_CELL
WRAP = 32  # a 1D array longer than this wraps onto several rows
MAX_CELLS = 512  # an array with more elements shows only its first rows
INDEX_H = 22  # height of the line of column numbers above 2D grids (clear of arrow heads)
BLOCK_GAP = 14  # space between the 2D blocks of an array of three or more dimensions
ARRAY_GAP = 30  # horizontal gap between arrays of one section
SECTION_GAP = 34  # vertical gap between sections (room for the arrows to be seen)
PANEL_PAD = 14
PANEL_GAP = 24
MAX_SECTION_W = 900  # arrays of a section wrap onto a new line past this width
MAX_DIAGRAM_W = 1500  # panels go side by side while the diagram stays narrower than this
MIN_HEADER_W = 560  # the header's explanations wrap at the panels' width, or at this for narrow ones
CELL_OPACITY = 0.7  # how much a cell hides the arrows passing beneath it
ARROW_W = 1.25  # arrow shaft width; also how tests recognise arrows in the SVG
HEAD_LEN, HEAD_HALF = 7.0, 3.2
LEGEND_LABEL = "thread_position_in_grid:"
MARK_W = 2.5  # line width of the marks of findings; also how tests recognise them in the SVG
GHOST_GAP = 26  # room between an array's end and the cells of its out-of-bounds accesses
MAX_GHOSTS = 6  # out-of-bounds cells drawn per array (the rest are counted)
NOTE_H = 16  # height of a line of a panel's list of findings
MAX_NOTES = 8  # findings listed under a panel (all of them are marked)
GHOST_FILL = "#fdecec"

INK = "#222222"
MUTED = "#8a8a8a"
GRID_LINE = "#555555"
READ_FILL = "#fff1b8"  # input elements this threadgroup read
SHARED_WRITE_FILL = "#e4e4e4"  # written by several threads of the group (a race, or atomics)
PANEL_LINE = "#c8c8c8"
# Distinct colours for lines on white; neighbouring threads get contrasting hues. None is a red:
# red is the findings' colour (marks.FINDING_RED), and a thread drawn in it would read as a finding.
PALETTE = ("#1f77b4", "#bcbd22", "#2ca02c", "#ff7f0e", "#9467bd", "#8c6d31", "#e377c2", "#17becf",
           "#393b79", "#637939", "#3a7d7c", "#7b4173", "#3182bd", "#bd9e39", "#31a354", "#756bb1",
           "#636363", "#a55194", "#5254a3", "#6b6ecf")


# ----------------------------------------------------------------------------- public API
def draw_run(result, title: str | None = None, max_groups: int = 4, only_group: int | None = None,
             selected_lane: int | None = None, clickable: bool = False, steady_gaps: bool = False) -> Diagram:
    """The diagram of a traced run: a header and one panel per threadgroup (the first
    ``max_groups`` of them, or just threadgroup ``only_group``, a linear index). Works without a
    trace too, showing only the arrays.

    For the explorer: ``selected_lane`` frames that thread's swatch (the thread it shows), and
    ``clickable`` lays invisible targets over the cells that name their array and element
    (``svg_text.CellTargets``), for a click on a cell to select the threads that touched it;
    ``steady_gaps`` opens the gaps between lines of arrays for the farthest an arrow could travel
    rather than for the arrows drawn, so that the diagrams of one run's threads share one layout
    (a thread change moves no array: the explorer redraws only what changed)."""
    n_groups = int(result.lanes.n_groups)
    if only_group is not None:
        if not 0 <= only_group < n_groups:
            raise ValueError(f"only_group={only_group} but the launch has {n_groups} threadgroup(s)")
        shown = [only_group]
    else:
        shown = list(range(min(n_groups, max(1, max_groups))))
    sites = finding_sites(result)
    panels = [_build_panel(result, g, sites, first_group=shown[0], steady_gaps=steady_gaps) for g in shown]
    for p in panels:
        p.selected_lane = selected_lane
        p.clickable = clickable
    header = _header(result, title, shown, n_groups, sites,
                     wrap_w=max(MIN_HEADER_W, max((p.width for p in panels), default=0.0)))
    body, width, height = _arrange(panels, header.height)
    width = max(width, header.width)
    return RunDiagram(Affine.identity(), _group([*_paint_header(header), body], (0, 0, width, height)))


def to_svg(diagram: Diagram, separated: bool = False) -> str:
    """SVG text of a diagram at its natural size (one diagram unit = one pixel), written compactly
    (``svg_text``): a book diagram is tens of kilobytes, not megabytes. ``separated``: with
    ``svg_text.PART_SEPARATOR`` around each element, for the explorer's page script."""
    return diagram_svg(diagram, separated)


#: How small a diagram's text may be drawn, in CSS pixels, when the diagram is scaled down to fit
#: the room it is given: its typical text (the median size: the values in the cells) no smaller
#: than LEGIBLE_TEXT_PX, its smallest (the indices in the cells' corners) no smaller than
#: SMALLEST_TEXT_PX. Narrower than that, a diagram keeps that scale and scrolls sideways instead.
LEGIBLE_TEXT_PX = 7.0
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
    return int(natural.group(1)), int(natural.group(2))


def sized_svg(svg: str, width: float | None = None, height: float | None = None) -> str:
    """The SVG text of ``to_svg`` shown at another size: a width or height alone keeps the
    proportions; neither keeps the natural size."""
    if width is None and height is None:
        return svg
    head = svg.index("<svg")
    w0, h0 = _natural_size(svg)
    if width is None:
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


# ----------------------------------------------------------------------------- small helpers
# Advance widths (in ems) of a bold sans-serif font, measured on DejaVu Sans Bold and bucketed.
_GLYPH_EMS = {0.3: "'", 0.35: " /IJ\\ijl|", 0.4: ",-.:;·", 0.45: "!()[]f", 0.5: '"*_`rt', 0.6: "?csz",
              0.65: "Lakvxy", 0.75: "ABCKPRVXZ", 0.8: "GU", 0.85: "#&+<=>DHNOQ^~", 0.9: "w", 1.0: "%@M",
              1.05: "m", 1.1: "W"}
_GLYPH_WIDTH = {ch: w for w, chars in _GLYPH_EMS.items() for ch in chars}


@functools.lru_cache(maxsize=8192)  # the same values and labels, diagram after diagram
def text_width(s: str, size: float) -> float:
    """Estimated width of a text in pixels: chalk neither measures text nor aligns it other
    than centred, so left-aligned labels are placed from this estimate. Summed with math.fsum,
    correctly rounded on every Python (3.12's sum() of floats compensates, earlier ones do not,
    which moved labels by 0.1 px and made the drawn images differ by Python version)."""
    return math.fsum(_GLYPH_WIDTH.get(ch, 0.7) for ch in s) * size


def fmt_value(v) -> str:
    """A short, cell-sized rendering of one element."""
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, bool | np.bool_):
        return "1" if v else "0"
    f = float(v)
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if f == int(f) and abs(f) < 1e5:
        return str(int(f))
    return f"{f:.3g}"


def thread_color(index_in_group: int) -> str:
    return PALETTE[index_in_group % len(PALETTE)]


@functools.lru_cache(maxsize=256)
def tint(color: str, amount: float = 0.72) -> str:
    """The colour mixed with white: a cell background that still reads as the thread's hue."""
    c = Color(color)
    r, g, b = (x + (1 - x) * amount for x in c.rgb)
    return Color(rgb=(r, g, b)).hex_l


def _pos_text(p: Sequence[int], dims: int) -> str:
    return ",".join(str(int(x)) for x in p[:dims])


def _dims(size3: Sequence[int]) -> int:
    """How many dimensions of a launch size matter (trailing 1s dropped)."""
    return 3 if size3[2] > 1 else 2 if size3[1] > 1 else 1


# ----------------------------------------------------------------------------- the trace of one group
def group_accesses(result: RunResult, group: int) -> list[ElementAccess]:
    """Every access by the threads of ``group`` in execution order, thread-private ones left out."""
    return [] if result.trace is None else result.trace.element_accesses(group=group)


@dataclass
class Snapshot:
    """A threadgroup array as it stood at the end of one barrier phase."""

    phase: int
    values: dict[int, object]  # element -> value (absent: never written)
    writers: dict[int, set[int]]  # elements written in this phase -> the lanes that wrote them


def shared_snapshots(accesses: Iterable[ElementAccess], name: str) -> list[Snapshot]:
    """Replay the writes to one threadgroup array, phase by phase. Only phases with writes get a
    snapshot. Atomic updates do not record the resulting value, so they show as '?'."""
    by_phase: dict[int, list[ElementAccess]] = defaultdict(list)
    for a in accesses:
        if a.buffer == name and a.space == AddressSpace.THREADGROUP and a.kind != AccessKind.READ:
            by_phase[a.phase].append(a)
    state: dict[int, object] = {}
    snaps = []
    for phase in sorted(by_phase):
        writers: dict[int, set[int]] = defaultdict(set)
        for a in sorted(by_phase[phase], key=lambda x: x.seq):
            state[a.index] = a.value if a.kind == AccessKind.WRITE else "?"
            writers[a.index].add(a.lane)
        snaps.append(Snapshot(phase, dict(state), dict(writers)))
    return snaps


# ----------------------------------------------------------------------------- arrays as drawn
@dataclass
class Ghost:
    """An element an access asked for outside its array: drawn as a dashed cell past the end,
    labelled with its index."""

    index: int
    color: str  # the thread's colour, or red for several threads
    number: int  # the finding it belongs to
    gap_before: bool  # not right after the previous cell (or the array's end): a gap, then the cell

    @property
    def width(self) -> float:
        return max(CELL, text_width(str(self.index), 10) * 1.15 + 12)


@dataclass
class ArrayView:
    """One array as drawn: a name (and a grey line saying what it is) left of a grid of cells.
    1D arrays carry their indices inside the cells and 2D ones only column numbers above, so the
    arrows between sections cross (almost) no text."""

    key: tuple  # ('in', name) | ('out', name) | ('tg', name, phase)
    name: str
    note: str  # e.g. 'input (8,)', 'after phase 1'
    rows: int
    cols: int
    size: int  # elements in the array (those past rows*cols are not drawn)
    texts: list[str]
    fills: list[str | None]
    faint: list[bool]  # grey text: not touched by this threadgroup
    wrapped: bool = False  # a long 1D array folded onto rows
    two_d: bool = False
    # Arrays of three or more dimensions: one rows x cols block per index of the leading
    # dimensions, side by side, each labelled with that index.
    blocks: int = 1
    block_labels: list[str] = field(default_factory=list)
    x: float = 0.0
    y: float = 0.0
    label_w: float = 0.0  # width of the name column, shared by the arrays of a panel
    cell: float = CELL
    #: Accesses outside the array, drawn as cells past its end (see the marks layer).
    ghosts: list[Ghost] = field(default_factory=list)
    ghosts_hidden: int = 0  # out-of-bounds indices beyond MAX_GHOSTS

    @property
    def drawn(self) -> int:
        return min(self.size, self.blocks * self.rows * self.cols)

    def row_of(self, i: int) -> int:
        return (i % max(self.rows * self.cols, 1)) // max(self.cols, 1)

    @property
    def own_label_w(self) -> float:
        return max(text_width(self.name, 12), text_width(self.note, 10)) + 10

    @property
    def margin(self) -> float:
        """Room between the name column and the grid for row numbers (2D and wrapped arrays)."""
        if not (self.two_d or self.wrapped):
            return 0.0
        last = (self.rows - 1) * (self.cols if self.wrapped else 1)
        return 6 + text_width(str(max(last, 0)), 9)

    @property
    def top(self) -> float:
        """Height of the column-number line above 2D grids (and the block labels above that)."""
        return (INDEX_H if self.two_d else 0.0) + (INDEX_H if self.blocks > 1 else 0.0)

    @property
    def block_w(self) -> float:
        return self.cols * self.cell + BLOCK_GAP

    @property
    def grid_right(self) -> float:
        """x of the right edge of the grid of cells."""
        return self.x + self.label_w + self.margin + self.blocks * self.block_w - BLOCK_GAP

    @property
    def ghost_w(self) -> float:
        if not self.ghosts:
            return 0.0
        more = 10 + text_width(f"+{self.ghosts_hidden}", 10) if self.ghosts_hidden else 0.0
        return GHOST_GAP + math.fsum(g.width + (14 if g.gap_before else 2) for g in self.ghosts) + more

    @property
    def width(self) -> float:
        return self.label_w + self.margin + self.blocks * self.block_w - BLOCK_GAP + self.ghost_w

    def ghost_box(self, k: int) -> tuple[float, float, float, float]:
        """Where the k-th out-of-bounds cell sits: past the end of the grid's last row."""
        x = self.grid_right + GHOST_GAP
        for g in self.ghosts[:k]:
            x += g.width + (14 if g.gap_before else 2)
        if self.ghosts[k].gap_before:
            x += 12
        y = self.y + self.top + max(self.rows - 1, 0) * self.cell
        return (x, y, x + self.ghosts[k].width, y + self.cell)

    @property
    def height(self) -> float:
        return max(self.top + self.rows * self.cell, 30.0)

    def cell_boxes(self) -> tuple[tuple[float, float, float, float], ...]:
        """``cell_box`` of every drawn element, in order (the painter's loop: the grid's origin
        is worked out once rather than per cell)."""
        return _cell_boxes(self.drawn, max(self.rows * self.cols, 1), max(self.cols, 1),
                           self.x + self.label_w + self.margin, self.y + self.top, self.cell, self.block_w)

    def cell_box(self, i: int) -> tuple[float, float, float, float] | None:
        if i < 0 or i >= self.drawn:
            return None
        b, rest = divmod(i, max(self.rows * self.cols, 1))
        r, c = divmod(rest, self.cols)
        x0 = self.x + self.label_w + self.margin + b * self.block_w + c * self.cell
        y0 = self.y + self.top + r * self.cell
        return (x0, y0, x0 + self.cell, y0 + self.cell)


@functools.lru_cache(maxsize=64)  # the same grids at every redraw of the explorer's diagram
def _cell_boxes(drawn: int, per_block: int, cols: int, gx: float, gy: float, cell: float,
                block_w: float) -> tuple[tuple[float, float, float, float], ...]:
    out = []
    for i in range(drawn):
        b, rest = divmod(i, per_block)
        r, c = divmod(rest, cols)
        x0, y0 = gx + b * block_w + c * cell, gy + r * cell
        out.append((x0, y0, x0 + cell, y0 + cell))
    return tuple(out)


def grid_shape(shape: Sequence[int]) -> tuple[int, int, bool, bool]:
    """(rows, cols, wrapped, two_d) of the grid an array of this shape is drawn as. Arrays of
    three or more dimensions are drawn as 2D with their leading dimensions merged."""
    shape = tuple(int(s) for s in shape)
    size = int(np.prod(shape)) if shape else 1
    if len(shape) <= 1:
        if size <= WRAP:
            return 1, max(size, 1), False, False
        return -(-size // WRAP), WRAP, True, False
    cols = max(shape[-1], 1)
    rows = size // cols if shape[-1] else 0
    return rows, cols, False, True


def make_view(key: tuple, name: str, note: str, shape: Sequence[int], values: dict[int, object] | np.ndarray,
              fills: dict[int, str], touched: set[int] | None = None) -> ArrayView:
    """Build the drawn form of an array from its element values (a flat array or a sparse dict).
    With ``touched`` given, the other elements' values are greyed."""
    rows, cols, wrapped, two_d = grid_shape(shape)
    size = int(np.prod(shape)) if len(shape) else 1
    blocks, labels = 1, []
    if len(shape) >= 3:
        lead = tuple(int(d) for d in shape[:-2])
        rows = int(shape[-2])
        blocks = int(np.prod(lead))
        if blocks * rows * cols > MAX_CELLS:
            blocks = max(1, MAX_CELLS // max(rows * cols, 1))
            note = f"{note}, first {blocks} blocks shown"
        labels = ["[" + ",".join(str(int(k)) for k in np.unravel_index(b, lead)) + ",:,:]" for b in range(blocks)]
    max_rows = max(1, MAX_CELLS // max(cols, 1))
    if blocks == 1 and rows > max_rows:
        note = f"{note}, first {max_rows * cols} shown"
        rows = max_rows
    n = min(size, blocks * rows * cols)
    if isinstance(values, np.ndarray):
        flat = values.reshape(-1)
        texts = [fmt_value(flat[i]) for i in range(n)]
    else:
        texts = [fmt_value(values.get(i)) for i in range(n)]
    faint = [touched is not None and i not in touched for i in range(n)]
    return ArrayView(key, name, note, rows, cols, size, texts, [fills.get(i) for i in range(n)], faint,
                     wrapped, two_d, blocks, labels)


# ----------------------------------------------------------------------------- one panel
@dataclass
class Arrow:
    """A thread's write traced back to one element its value came from."""

    lane: int
    color: str
    source: tuple[tuple, int]  # (view key, element)
    target: tuple[tuple, int]
    points: list[tuple[float, float]] = field(default_factory=list)  # the curve, sampled
    curve: tuple[tuple[float, float], ...] = ()  # the same as a cubic Bézier: start, controls, end


@dataclass(frozen=True)
class Ring:
    """A finding's ring on one drawn element; ``badged``: this ring carries the finding's number
    (an output's unwritten elements are all ringed, the first one numbered)."""

    key: tuple  # the view
    element: int
    number: int
    badged: bool = True


@dataclass
class PanelMarks:
    """The findings layer of one panel: rings on elements, marked thread swatches and the list of
    findings under the arrays. (Out-of-bounds cells belong to their arrays: ``ArrayView.ghosts``.)"""

    rings: list[Ring]
    swatches: dict[int, tuple[int, bool]]  # lane -> (finding number, misses a barrier)
    notes: list[str]  # one line per finding, numbered
    notes_y: float = 0.0


@dataclass
class Panel:
    group: int
    title: str
    legend: list[tuple[str, str]]  # (label, colour) per thread
    sections: list[list[ArrayView]]
    arrows: list[Arrow]
    width: float = 0.0
    height: float = 0.0
    legend_rows: list[list[tuple[str, str, float, float]]] = field(default_factory=list)
    #: The threads of the legend, in its order (lane ids).
    legend_lanes: list[int] = field(default_factory=list)
    #: The findings of this threadgroup, drawn over the diagram.
    marks: PanelMarks | None = None
    #: The thread the explorer shows: its swatch is framed.
    selected_lane: int | None = None
    #: Whether the cells carry click targets naming their array and element (the explorer's).
    clickable: bool = False


def _lanes_of(result, group: int) -> np.ndarray:
    return np.flatnonzero(np.asarray(result.lanes.group) == group)


def _lane_colors(result, group: int) -> dict[int, str]:
    idx = result.lanes.index_in_group
    return {int(l): thread_color(int(idx[l])) for l in _lanes_of(result, group)}


def _fill_for(writers: set[int], colors: dict[int, str]) -> str:
    """A cell written by one thread takes that thread's tint; by several, a neutral grey."""
    if len(writers) == 1:
        return tint(colors.get(next(iter(writers)), MUTED))
    return SHARED_WRITE_FILL


def _input_views(result, accesses: list[ElementAccess]) -> list[ArrayView]:
    read = defaultdict(set)
    for a in accesses:
        if a.kind == AccessKind.READ and a.space in ("device", "constant"):
            read[a.buffer].add(a.index)
    views = []
    for name, arr in zip(result.input_names, result.inputs, strict=False):
        arr = np.asarray(arr)
        shape = arr.shape
        note = f"input {'scalar' if arr.ndim == 0 else _shape_text(shape)}"
        fills = {i: READ_FILL for i in read.get(name, ())}
        views.append(make_view(("in", name), name, note, shape, arr, fills, touched=read.get(name, set())))
    return views


def _shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _output_views(result, accesses: list[ElementAccess], colors: dict[int, str],
                  unwritten: dict[str, set[int]]) -> list[ArrayView]:
    writers: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    for a in accesses:
        if a.kind != AccessKind.READ and a.space == AddressSpace.DEVICE:
            writers[a.buffer][a.index].add(a.lane)
    views = []
    for name, arr in zip(result.output_names, result.outputs, strict=False):
        arr = np.asarray(arr)
        w = writers.get(name, {})
        fills = {i: _fill_for(lanes, colors) for i, lanes in w.items()}
        note = f"output {_shape_text(arr.shape)}"
        view = make_view(("out", name), name, note, arr.shape, arr, fills, touched=set(w))
        for i in unwritten.get(name, ()):
            if i < view.drawn:  # no thread wrote it: its "value" is whatever the memory held
                view.texts[i] = ""
        views.append(view)
    return views


def unwritten_elements(result, sites: Sequence[FindingSite]) -> dict[str, set[int]]:
    """The elements of each output that the sanitizer found no thread of the launch wrote."""
    names = {s.buffer for s in sites if s.kind == FindingKind.UNWRITTEN_OUTPUT and s.buffer is not None}
    if not names or result.trace is None:
        return {}
    written: dict[str, set[int]] = {name: set() for name in names}
    for a in result.trace.element_accesses():
        if a.buffer in written and a.kind != AccessKind.READ and a.space == AddressSpace.DEVICE:
            written[a.buffer].add(a.index)
    sizes = {name: int(np.asarray(arr).size) for name, arr in zip(result.output_names, result.outputs, strict=False)}
    return {name: set(range(sizes.get(name, 0))) - done for name, done in written.items()}


def _shared_names(result, accesses: list[ElementAccess]) -> list[str]:
    """Threadgroup arrays in the order this group first wrote them."""
    names: list[str] = []
    for a in accesses:
        if a.space == AddressSpace.THREADGROUP and a.kind != AccessKind.READ and a.buffer not in names:
            names.append(a.buffer)
    return names


def _shared_sections(result, accesses: list[ElementAccess], colors: dict[int, str]) -> tuple[list[list[ArrayView]], dict]:
    """One section per barrier phase in which threadgroup memory was written, with a snapshot of
    each array written in that phase; also {name: [phases with a snapshot]}."""
    by_phase: dict[int, list[ArrayView]] = defaultdict(list)
    phases: dict[str, list[int]] = {}
    for name in _shared_names(result, accesses):
        shape = result.threadgroup_shapes.get(name)
        snaps = shared_snapshots(accesses, name)
        if shape is None:
            shape = (max(max(s.values) for s in snaps) + 1,)
        phases[name] = [s.phase for s in snaps]
        for s in snaps:
            fills = {i: _fill_for(lanes, colors) for i, lanes in s.writers.items()}
            view = make_view(("tg", name, s.phase), name, f"after phase {s.phase}", shape, s.values, fills)
            by_phase[s.phase].append(view)
    return [by_phase[p] for p in sorted(by_phase)], phases


def _panel_title(result, group: int) -> str:
    # The threadgroup named as the findings and the explorer name it (Lanes.group_label).
    n = len(_lanes_of(result, group))
    return f"{result.lanes.group_label(group)}  ·  {n} thread{'s' if n != 1 else ''}"


def _legend(result, group: int) -> list[tuple[str, str]]:
    dims = _dims(result.grid)
    lanes = result.lanes
    members = sorted(_lanes_of(result, group), key=lambda l: int(lanes.index_in_group[l]))
    return [(_pos_text(lanes.pos[l], dims), thread_color(int(lanes.index_in_group[l]))) for l in members]


def _build_panel(result, group: int, sites: Sequence[FindingSite] = (), first_group: int = 0,
                 steady_gaps: bool = False) -> Panel:
    accesses = group_accesses(result, group)
    colors = _lane_colors(result, group)
    shared, phases = _shared_sections(result, accesses, colors)
    unwritten = unwritten_elements(result, sites)
    sections = [_input_views(result, accesses), *shared, _output_views(result, accesses, colors, unwritten)]
    panel = Panel(group, _panel_title(result, group), _legend(result, group), sections,
                  trace_arrows(accesses, colors, result, phases),
                  legend_lanes=sorted(_lanes_of(result, group), key=lambda l: int(result.lanes.index_in_group[l])))
    panel.marks = _panel_marks(result, group, sites, panel, phases, colors, first_group, unwritten)
    _layout_panel(panel)
    _route_arrows(panel)
    _relayout_for_arrows(panel, steady_gaps)
    _route_arrows(panel)
    _layout_notes(panel)
    return panel


# ----------------------------------------------------------------------------- findings: the marks layer
def _shown_in(site: FindingSite, group: int, first_group: int) -> bool:
    """A finding shows in the panels of its threads' threadgroups; one of the whole launch (an
    output never written) in the first panel."""
    return group in site.groups if site.groups else group == first_group


def _snapshot_for(phases: dict[str, list[int]], name: str, phase: int | None) -> tuple | None:
    """The view of a threadgroup array as a thread saw it in ``phase``: its latest snapshot up to
    that phase (or the first one)."""
    snaps = phases.get(name)
    if not snaps:
        return None
    seen = [q for q in snaps if phase is None or q <= phase]
    return ("tg", name, seen[-1] if seen else snaps[0])


def _view_key(place: Place, name: str, phase: int | None, phases: dict[str, list[int]]) -> tuple | None:
    if place == Place.THREADGROUP:
        return _snapshot_for(phases, name, phase)
    if place in (Place.INPUT, Place.OUTPUT):
        return (place.value, name)
    return None


def _panel_marks(result, group: int, sites: Sequence[FindingSite], panel: Panel, phases: dict[str, list[int]],
                 colors: dict[int, str], first_group: int, unwritten: dict[str, set[int]]) -> PanelMarks:
    views = _views_by_key(panel)
    mine = [s for s in sites if _shown_in(s, group, first_group)]
    rings: list[Ring] = []
    swatches: dict[int, tuple[int, bool]] = {}
    members = set(panel.legend_lanes)
    for site in mine:
        key = None if site.buffer is None else _view_key(site.place, site.buffer, site.phase, phases)
        view = views.get(key) if key is not None else None
        if view is not None and kind_entry(site.kind).element == ElementMark.UNWRITTEN:
            missing = sorted(i for i in unwritten.get(site.buffer, ()) if i < view.drawn)
            rings += [Ring(key, i, site.number, badged=k == 0) for k, i in enumerate(missing)]
        elif view is not None and site.index is not None and 0 <= site.index < view.drawn:
            rings.append(Ring(key, site.index, site.number))
        thread_mark = kind_entry(site.kind).threads
        struck = thread_mark == ThreadMark.STRUCK
        involved = list(site.lanes) if thread_mark in (ThreadMark.STRUCK, ThreadMark.RINGED_ALL) else \
            [lane for lane in (site.lane, site.other_lane) if lane is not None]
        for lane in involved:
            if lane in members and lane not in swatches:
                swatches[lane] = (site.number, struck)
    _add_ghosts(result, group, mine, views, phases, colors)
    notes = [s.label for s in mine[:MAX_NOTES]]
    if len(mine) > MAX_NOTES:
        notes.append(f"... and {len(mine) - MAX_NOTES} more findings (check() lists them)")
    return PanelMarks(rings, swatches, notes)


def _add_ghosts(result, group: int, sites: Sequence[FindingSite], views: dict[tuple, ArrayView],
                phases: dict[str, list[int]], colors: dict[int, str]) -> None:
    """Out-of-bounds accesses of this threadgroup's threads, as cells past the end of their arrays."""
    numbers = {(s.buffer, s.line): s.number for s in sites if kind_entry(s.kind).element == ElementMark.GHOST}
    by_view: dict[tuple, dict[int, tuple[set[int], int]]] = defaultdict(dict)
    for a in stray_accesses(result, group):
        key = _view_key(drawn_place(a, result), a.buffer, a.phase, phases)
        if key is None or key not in views:
            continue
        lanes, number = by_view[key].get(a.index, (set(), numbers.get((a.buffer, a.line), 0)))
        lanes.add(a.lane)
        by_view[key][a.index] = (lanes, number)
    for key, cells in by_view.items():
        view = views[key]
        ordered = sorted(cells)
        previous = view.size - 1
        for index in ordered[:MAX_GHOSTS]:
            lanes, number = cells[index]
            color = colors.get(next(iter(lanes)), FINDING_RED) if len(lanes) == 1 else FINDING_RED
            view.ghosts.append(Ghost(index, color, number, gap_before=index != previous + 1))
            previous = index
        view.ghosts_hidden = max(0, len(ordered) - MAX_GHOSTS)


def _layout_notes(panel: Panel) -> None:
    """The numbered list of the panel's findings, under its arrays."""
    marks = panel.marks
    if marks is None or not marks.notes:
        return
    marks.notes_y = panel.height - PANEL_PAD + 8
    panel.height += len(marks.notes) * NOTE_H + 8
    panel.width = max(panel.width, max(text_width(n, 10.5) for n in marks.notes) + 2 * PANEL_PAD)


# ----------------------------------------------------------------------------- arrows: what came from where
class _SharedIndex:
    """Lookups over one group's threadgroup accesses: who read which element when, and when
    each element was written."""

    def __init__(self, accesses: list[ElementAccess], phases: dict[str, list[int]]) -> None:
        self.phases = phases
        self.reads: dict[tuple, list[tuple[int, int]]] = defaultdict(list)  # (lane, name, i) -> (seq, phase)
        self.writes: dict[tuple, list[int]] = defaultdict(list)  # (name, i, phase) -> seqs
        for a in accesses:
            if a.space != "threadgroup":
                continue
            if a.kind == AccessKind.READ:
                self.reads[(a.lane, a.buffer, a.index)].append((a.seq, a.phase))
            else:
                self.writes[(a.buffer, a.index, a.phase)].append(a.seq)

    def seen_snapshot(self, lane: int, name: str, index: int, before_seq: int, write_phase: int) -> int | None:
        """The phase of the snapshot holding the value ``lane`` read from ``name[index]`` for a
        write at ``before_seq``: its last such read decides. A read sees writes made earlier in
        its own phase; otherwise the latest snapshot of an earlier phase."""
        seq, phase = before_seq, write_phase
        for s, p in self.reads.get((lane, name, index), ()):
            if s < before_seq:
                seq, phase = s, p
        if any(s < seq for s in self.writes.get((name, index, phase), ())):
            return phase
        earlier = [q for q in self.phases.get(name, []) if q < phase]
        return earlier[-1] if earlier else None


def trace_arrows(accesses: list[ElementAccess], colors: dict[int, str], result, phases: dict[str, list[int]]) -> list[Arrow]:
    """One arrow per (thread, written element, element its value came from), deduplicated."""
    inputs, outputs = set(result.input_names), set(result.output_names)
    arrows: dict[tuple, Arrow] = {}
    shared = _SharedIndex(accesses, phases)
    for w in accesses:
        if w.kind == AccessKind.READ:
            continue
        if w.space == AddressSpace.THREADGROUP:
            target = (("tg", w.buffer, w.phase), w.index)
        elif w.buffer in outputs:
            target = (("out", w.buffer), w.index)
        else:
            continue
        for name, grp, idx in sorted(w.sources, key=str):
            if grp == -1:
                kind = "in" if name in inputs else "out" if name in outputs else None
                if kind is None:
                    continue
                source = ((kind, name), idx)
            else:
                snap = shared.seen_snapshot(w.lane, name, idx, w.seq, w.phase)
                if snap is None:
                    continue
                source = (("tg", name, snap), idx)
            if source == target:
                continue
            key = (w.lane, source, target)
            if key not in arrows:
                arrows[key] = Arrow(w.lane, colors.get(w.lane, MUTED), source, target)
    return list(arrows.values())


# ----------------------------------------------------------------------------- layout
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
    x0 = PANEL_PAD
    y = PANEL_PAD + 20  # title line
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


def _views_by_key(panel: Panel) -> dict[tuple, ArrayView]:
    return {v.key: v for s in panel.sections for v in s}


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
    views = _views_by_key(panel)
    out: list[tuple[_End, _End, str] | None] = []
    for arrow in panel.arrows:
        (skey, si), (tkey, ti) = arrow.source, arrow.target
        sv, tv = views.get(skey), views.get(tkey)
        sb = sv.cell_box(si) if sv else None
        tb = tv.cell_box(ti) if tv else None
        if sb is None or tb is None:
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


Point = tuple[float, float]


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


def _arrange(panels: list[Panel], top: float) -> tuple[Diagram, float, float]:
    """Panels in a grid, as many side by side as fit in MAX_DIAGRAM_W."""
    if not panels:
        return _group([], (0, top, 1, top + 1)), 1.0, top
    widest = max(p.width for p in panels)
    ncols = max(1, min(len(panels), int((MAX_DIAGRAM_W + PANEL_GAP) // (widest + PANEL_GAP))))
    parts, y, width = [], top, 0.0
    for r in range(0, len(panels), ncols):
        row = panels[r:r + ncols]
        x = 0.0
        for p in row:
            parts.append(_paint_panel(p).translate(x, y))
            x += widest + PANEL_GAP
        width = max(width, x - PANEL_GAP)
        y += max(p.height for p in row) + PANEL_GAP
    return _group(parts, (0, top, width, y - PANEL_GAP)), width, y - PANEL_GAP


# ----------------------------------------------------------------------------- header
@dataclass
class Header:
    lines: list[tuple[str, float, str]]  # (text, font size, colour)
    width: float
    height: float


def wrap_to_width(s: str, size: float, max_w: float) -> list[str]:
    """A line of text broken at spaces into lines at most ``max_w`` pixels wide (a word longer
    than that keeps a line of its own)."""
    lines: list[str] = []
    for word in s.split(" "):
        if lines and text_width(lines[-1] + " " + word, size) <= max_w:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def _header(result, title: str | None, groups: Sequence[int], n_groups: int,
            sites: Sequence[FindingSite] = (), wrap_w: float = MAX_SECTION_W) -> Header:
    """The diagram's title, launch facts and what its arrows and marks mean; the explanations
    wrap at ``wrap_w`` so that they never make a diagram wider than its panels."""
    shown = len(groups)
    title = title or result.kernel_name or "kernel"
    dims = _dims(result.grid)
    grid = "(" + ", ".join(str(int(x)) for x in result.grid[:max(dims, 1)]) + ")"
    tg = "(" + ", ".join(str(int(x)) for x in result.threadgroup[:max(dims, 1)]) + ")"
    facts = f"grid {grid}  ·  threadgroup {tg}  ·  {n_groups} threadgroup{'s' if n_groups != 1 else ''}"
    if shown < n_groups:
        facts += f"  ·  showing {shown} of {n_groups} threadgroups"
    lines = [(title, 20.0, INK), (facts, 12.0, INK)]
    if result.trace is None:
        lines.append(("no trace was recorded: arrays only", 11.0, MUTED))
    else:
        lines += [(part, 11.0, MUTED) for part in wrap_to_width(
            "an arrow runs from each element a value was computed from to the element it was "
            "written to, in the colour of the thread that wrote it", 11.0, wrap_w)]
        if any(isinstance(e, BarrierEvent) for e in result.trace.events):
            lines += [(part, 11.0, MUTED) for part in wrap_to_width(
                "phase n: what the threads did between their n-th and (n+1)-th threadgroup_barrier", 11.0, wrap_w)]
    if sites:
        unseen = [s for s in sites if s.groups and not s.groups & set(groups)]
        legend = marks_legend(list(sites)) + (f" ({len(unseen)} in threadgroups not shown)" if unseen else "")
        lines += [(part, 11.0, FINDING_RED) for part in wrap_to_width(legend, 11.0, wrap_w)]
    width = max(text_width(s, size) for s, size, _ in lines)
    height = math.fsum(size + 8 for _, size, _ in lines) + 10
    return Header(lines, width, height)


# ----------------------------------------------------------------------------- painting (chalk)
Box = tuple[float, float, float, float]


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


def _outlined(boxes: list[Box], line: str, width: float = 1.0) -> Diagram:
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
    name_y = gy + min(cell, v.rows * cell or cell) / 2
    labels = [PlacedText(v.name, v.x, name_y - 7, 12, INK, Anchor.START),
              PlacedText(v.note, v.x, name_y + 8, 10, MUTED, Anchor.START)]
    if v.two_d:
        for b in range(v.blocks):
            bx = gx + b * v.block_w
            for c in range(v.cols if v.rows else 0):
                labels.append(PlacedText(str(c), bx + (c + 0.5) * cell, gy - INDEX_H + 6, 9, MUTED))
            if v.blocks > 1:
                labels.append(PlacedText(v.block_labels[b], bx + v.cols * cell / 2, gy - 2 * INDEX_H + 6, 9, INK))
    if v.margin:
        step = v.cols if v.wrapped else 1
        for r in range(v.rows):
            labels.append(PlacedText(str(r * step), gx - 4, gy + (r + 0.5) * cell, 9, MUTED, Anchor.END))
    extent = (v.x, v.y, v.x + v.width, v.y + v.height)
    out = [text_batch(labels, extent)]
    boxes = v.cell_boxes()
    if boxes:
        out.append(_outlined(boxes, GRID_LINE))
    cells = []
    for i, (x0, y0, x1, y1) in enumerate(boxes):
        if not v.two_d:  # the element's index, small in the corner
            cells.append(PlacedText(str(i % v.cols if v.wrapped else i), x0 + 2.5, y0 + 6, 7.5, MUTED, Anchor.START))
        s = v.texts[i]
        if s:
            cells.append(PlacedText(s, (x0 + x1) / 2, (y0 + y1) / 2 + 2, _cell_font(s, cell),
                                    MUTED if v.faint[i] else INK))
    if v.size == 0:
        cells.append(PlacedText("(empty)", gx, gy + cell / 2, 10, MUTED, Anchor.START))
    if cells:
        out.append(text_batch(cells, extent))
    return out


def _arrow_parts(a: Arrow) -> tuple[list[Point], list[Point], list[Point]]:
    """Shaft polyline, head triangle and start dot of one arrow."""
    pts = a.points
    (xa, ya), (xb, yb) = pts[-2], pts[-1]
    n = math.hypot(xb - xa, yb - ya) or 1.0
    ux, uy = (xb - xa) / n, (yb - ya) / n
    # The shaft stops inside the head so that its end does not poke through the tip.
    shaft = [*pts[:-1], (xb - ux * HEAD_LEN * 0.8, yb - uy * HEAD_LEN * 0.8)]
    bx, by = xb - ux * HEAD_LEN, yb - uy * HEAD_LEN
    head = [(xb, yb), (bx - uy * HEAD_HALF, by + ux * HEAD_HALF), (bx + uy * HEAD_HALF, by - ux * HEAD_HALF)]
    x0, y0 = pts[0]
    r = 2.2
    dot = [(x0 + r * math.cos(k * math.pi / 4), y0 + r * math.sin(k * math.pi / 4)) for k in range(8)]
    return shaft, head, dot


def _paint_arrows(arrows: list[Arrow]) -> tuple[list[Diagram], list[Diagram]]:
    """Shafts (one SVG path each, so arrows can be counted) and marks (heads and start dots, one
    path per colour), painted in separate layers."""
    shafts = []
    marks: dict[str, list[list[tuple[float, float]]]] = defaultdict(list)
    for a in sorted(arrows, key=lambda a: a.lane):
        shaft, head, dot = _arrow_parts(a)
        shape = Path.from_points([P2(x, y) for x, y in shaft])
        if a.curve:  # the SVG writer draws the curve itself; the shaft ends where the polyline does
            shape = CubicPath(shape.loc_trails, curve=(*a.curve[:3], shaft[-1]))
        shafts.append(shape.stroke().line_color(Color(a.color)).line_width_local(ARROW_W))
        marks[a.color] += [head, dot]
    heads = []
    for color, shapes in marks.items():
        c = Color(color)
        heads.append(_path(shapes, closed=True).fill_color(c).line_color(c).line_width_local(0))
    return shafts, heads


def _paint_legend(p: Panel) -> list[Diagram]:
    """The thread swatches: one path per colour and one batch of labels, however many threads."""
    by_color: dict[str, list[Box]] = defaultdict(list)
    labels = []
    for y, row in _legend_rows_y(p):
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
        slots = [(x, y_row, w) for y_row, row in _legend_rows_y(p) for _, _, x, w in row]
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


def _legend_rows_y(p: Panel) -> list[tuple[float, list]]:
    y = PANEL_PAD + 20
    out = []
    for row in p.legend_rows:
        out.append((y, row))
        y += 22
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
    slots = [(x, y, w) for y, row in _legend_rows_y(p) for _, _, x, w in row]
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
    swatches = [(k, (x, y, x + w, y + 18)) for k, (x, y, w) in
                enumerate((x, y, w) for y, row in _legend_rows_y(p) for _, _, x, w in row)]
    if swatches:
        out.append(cell_targets({"buffer": "", "space": "thread", "group": str(p.group)}, swatches))
    return out


__all__ = ["draw_run", "to_svg", "save_svg", "save_png", "RunDiagram", "trace_arrows", "group_accesses",
           "shared_snapshots", "fmt_value", "text_width", "wrap_to_width", "Arrow", "Snapshot", "ArrayView"]
