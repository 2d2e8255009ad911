"""The run diagram's look: its sizes and colours in pixels, a thread's colour, and text measured
and wrapped without a font at hand (chalk measures no text)."""

from __future__ import annotations

import functools
import math

import numpy as np
from colour import Color

from ..msl.lang.lane_values import hex_word

# ----------------------------------------------------------------------------- sizes and colours
CELL = 34  # side of one array element, in pixels
SMALL_CELL = 28  # used instead when a panel would be too wide (big 2D arrays)
MIN_CELL_FONT = 8.5  # a value is never written smaller: its array's cells widen instead
MAX_PANEL_W = 720  # beyond this width a panel switches to SMALL_CELL
WRAP = 32  # a 1D array longer than this wraps onto several rows; a 2D array's longer rows fold so
FOLD_GAP = 8  # between the lines of one folded row of a 2D array and those of the next row
MAX_CELLS = 512  # an array with more elements shows only its first rows
INDEX_H = 22  # height of the line of column numbers above 2D grids (clear of arrow heads)
BLOCK_GAP = 14  # space between the 2D blocks of an array of three or more dimensions
MAX_BLOCKS_W = 1200  # blocks wider than this side by side go one under another
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


# ----------------------------------------------------------------------------- text and colour helpers
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
    word = hex_word(v)  # a 32-bit word of packed bits (V.3's 4-bit values) reads in hex, not as 1.39e+09
    if word is not None:
        return word
    f = float(v)
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if f == int(f) and abs(f) < 1e5:
        return str(int(f))
    return f"{f:.3g}"


def thread_color(index_in_group: int) -> str:
    """The colour of the thread with this index in its threadgroup (neighbours contrast)."""
    return PALETTE[index_in_group % len(PALETTE)]


@functools.lru_cache(maxsize=256)
def tint(color: str, amount: float = 0.72) -> str:
    """The colour mixed with white: a cell background that still reads as the thread's hue."""
    c = Color(color)
    r, g, b = (x + (1 - x) * amount for x in c.rgb)
    return Color(rgb=(r, g, b)).hex_l


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

