"""What a run diagram draws: arrays as grids of cells, arrows from a written element to the
elements its value came from, the marks of findings, panels (one per threadgroup) and the
header. Plain data: ``build`` fills it from a traced run, ``layout`` places it (the fields
that say where: ``x``, ``y``, ``width``, an arrow's curve), ``paint`` draws it."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .style import (
    BLOCK_GAP,
    CELL,
    FOLD_GAP,
    GHOST_GAP,
    INDEX_H,
    INK,
    MAX_BLOCKS_W,
    MAX_CELLS,
    MUTED,
    WRAP,
    fmt_value,
    text_width,
)
from .svg_text import Anchor, PlacedText

#: A rectangle (x0, y0, x1, y1) and a point, in pixels.
Box = tuple[float, float, float, float]
Point = tuple[float, float]


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


@functools.lru_cache(maxsize=64)  # the same grids at every redraw of the explorer's diagram
def _cell_boxes(drawn: int, per_block: int, cols: int, gx: float, gy: float, cell: float,
                block_w: float, fold: int = 0, fold_lines: int = 1,
                stacked: bool = False) -> tuple[tuple[float, float, float, float], ...]:
    out = []
    for i in range(drawn):
        if fold:  # a folded row: its lines one under another, a gap before the next row's
            a, c = divmod(i, fold)
            r, col = a * fold_lines + c // cols, c % cols
            x0, y0 = gx + col * cell, gy + r * cell + a * FOLD_GAP
        elif stacked:  # blocks one under another, a gap between them
            b, rest = divmod(i, per_block)
            r, col = divmod(rest, cols)
            x0, y0 = gx + col * cell, gy + (b * (per_block // cols) + r) * cell + b * BLOCK_GAP
        else:
            b, rest = divmod(i, per_block)
            r, col = divmod(rest, cols)
            x0, y0 = gx + b * block_w + col * cell, gy + r * cell
        out.append((x0, y0, x0 + cell, y0 + cell))
    return tuple(out)


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
    #: A 2D array whose rows are longer than WRAP: the length of its rows, each folded onto lines
    #: of ``cols`` cells (``rows`` counts the lines drawn), as a long 1D array is; 0: not folded.
    #: So a (2, 200) array is a block of 14 lines, not a grid 200 cells wide.
    fold: int = 0
    # Arrays of three or more dimensions: one rows x cols block per index of the leading
    # dimensions, side by side, each labelled with that index.
    blocks: int = 1
    block_labels: list[str] = field(default_factory=list)
    #: The blocks go one under another instead, sharing the column numbers above the first, each
    #: labelled left of its first row (where no arrow passes: arrows reach a cell straight down or
    #: up its column). Set by ``narrow`` where side by side they would be wider than MAX_BLOCKS_W.
    stacked: bool = False
    x: float = 0.0
    y: float = 0.0
    label_w: float = 0.0  # width of the name column, shared by the arrays of a panel
    cell: float = CELL
    #: Accesses outside the array, drawn as cells past its end (see the marks layer).
    ghosts: list[Ghost] = field(default_factory=list)
    ghosts_hidden: int = 0  # out-of-bounds indices beyond MAX_GHOSTS

    @property
    def drawn(self) -> int:
        if self.fold:
            return min(self.size, (self.rows // self.fold_lines) * self.fold)
        return min(self.size, self.blocks * self.rows * self.cols)

    @property
    def fold_lines(self) -> int:
        """Lines each row of a folded 2D array takes (1 for any other array)."""
        return -(-self.fold // max(self.cols, 1)) if self.fold else 1

    @property
    def lines(self) -> int:
        """Lines of cells drawn one under another (a stacked array's blocks' rows all count)."""
        return self.blocks * self.rows if self.stacked else self.rows

    def narrow(self, max_w: float) -> None:
        """Fold a wrapped or folded grid onto lines of half as many cells (down to 8) while its
        grid is wider than ``max_w`` at its cell size: values wide enough to widen the cells would
        otherwise make lines of 32 far wider than a laptop's screen. Blocks wider than ``max_w``
        side by side stack (V.4's two (5, 32) blocks of k made a diagram 2,217 px wide)."""
        if self.blocks > 1 and self.blocks * self.block_w - BLOCK_GAP > MAX_BLOCKS_W:
            self.stacked = True
        if self.two_d and self.blocks == 1 and self.cols > 8 and self.cols * self.cell > max_w:
            # A 2D grid of rows of 32 or fewer whose values widen its cells past max_w folds as
            # a longer row would (V.4's out, (4, 32) of cells 48.5 px wide, was 1,659 px).
            self.fold, self.two_d = self.cols, False
        if not (self.wrapped or self.fold):
            return
        n = len(self.texts)
        while self.cols > 8 and self.cols * self.cell > max_w:
            self.cols //= 2
            self.rows = (n // self.fold) * self.fold_lines if self.fold else -(-n // self.cols)

    def locate(self, i: int) -> tuple[int, int, int]:
        """(block, line, column) of element ``i``'s cell in the grid as drawn."""
        cols = max(self.cols, 1)
        if self.fold:
            a, c = divmod(i, self.fold)
            return 0, a * self.fold_lines + c // cols, c % cols
        block, rest = divmod(i, max(self.rows * self.cols, 1))
        row, column = divmod(rest, cols)
        return block, block * self.rows + row if self.stacked else row, column

    def row_of(self, i: int) -> int:
        return self.locate(i)[1]

    def line_y(self, line: int) -> float:
        """How far below the grid's top the line ``line`` of cells starts."""
        if self.fold:
            return line * self.cell + (line // self.fold_lines) * FOLD_GAP
        if self.stacked:  # past the gap after each block above this line's
            return line * self.cell + (line // max(self.rows, 1)) * BLOCK_GAP
        return line * self.cell

    def line_label(self, line: int) -> str:
        """The number left of a line of a wrapped or folded grid (its first element's index: for a
        folded 2D array, its row and first column) or of a 2D grid's row (of a stacked array's
        rows, the block's leading index and the row: ``1,0`` is ``k[1, 0, :]``)."""
        if self.fold:
            row, part = divmod(line, self.fold_lines)
            return f"{row}, {part * self.cols}"
        if self.stacked:
            block, row = divmod(line, max(self.rows, 1))
            return f"{self.block_labels[block][1:-5]},{row}"  # the block's '[1,:,:]' gives 1
        return str(line * (self.cols if self.wrapped else 1))

    @property
    def own_label_w(self) -> float:
        return max(text_width(self.name, 12), text_width(self.note, 10)) + 10

    @property
    def margin(self) -> float:
        """Room between the name column and the grid for row numbers (2D and wrapped arrays)."""
        if not (self.two_d or self.wrapped or self.fold):
            return 0.0
        return 6 + text_width(self.line_label(max(self.lines - 1, 0)), 9)  # the last line's: the longest

    @property
    def top(self) -> float:
        """Height of the column-number line above 2D grids (and the block labels above that,
        for blocks side by side)."""
        return (INDEX_H if self.two_d else 0.0) + (INDEX_H if self.blocks > 1 and not self.stacked else 0.0)

    @property
    def block_w(self) -> float:
        return self.cols * self.cell + BLOCK_GAP

    @property
    def grid_w(self) -> float:
        """Width of the grid of cells (its blocks side by side, or one of stacked ones)."""
        return (1 if self.stacked else self.blocks) * self.block_w - BLOCK_GAP

    @property
    def grid_right(self) -> float:
        """x of the right edge of the grid of cells."""
        return self.x + self.label_w + self.margin + self.grid_w

    @property
    def ghost_w(self) -> float:
        if not self.ghosts:
            return 0.0
        more = 10 + text_width(f"+{self.ghosts_hidden}", 10) if self.ghosts_hidden else 0.0
        return GHOST_GAP + math.fsum(g.width + (14 if g.gap_before else 2) for g in self.ghosts) + more

    @property
    def width(self) -> float:
        return self.label_w + self.margin + self.grid_w + self.ghost_w

    def ghost_box(self, k: int) -> tuple[float, float, float, float]:
        """Where the k-th out-of-bounds cell sits: past the end of the grid's last row."""
        x = self.grid_right + GHOST_GAP
        for g in self.ghosts[:k]:
            x += g.width + (14 if g.gap_before else 2)
        if self.ghosts[k].gap_before:
            x += 12
        y = self.y + self.top + self.line_y(max(self.lines - 1, 0))
        return (x, y, x + self.ghosts[k].width, y + self.cell)

    @property
    def grid_h(self) -> float:
        """Height of the grid of cells (a folded array's rows with the gaps between them, a
        stacked array's blocks with the gaps between them)."""
        if self.stacked:
            return self.line_y(self.lines) - BLOCK_GAP
        return self.line_y(self.rows) - (FOLD_GAP if self.fold and self.rows else 0.0)

    @property
    def height(self) -> float:
        return max(self.top + self.grid_h, 30.0)

    def cell_boxes(self) -> tuple[tuple[float, float, float, float], ...]:
        """``cell_box`` of every drawn element, in order (the painter's loop: the grid's origin
        is worked out once rather than per cell)."""
        return _cell_boxes(self.drawn, max(self.rows * self.cols, 1), max(self.cols, 1),
                           self.x + self.label_w + self.margin, self.y + self.top, self.cell, self.block_w,
                           self.fold, self.fold_lines, self.stacked)

    def labels(self) -> list[Label]:
        """The texts beside an array's grid, placed: its name and what it is, left of the grid; the
        column numbers of a 2D grid above it (and its blocks' indices above those); the row numbers of
        a 2D or wrapped grid left of it."""
        cell = self.cell
        gx = self.x + self.label_w + self.margin
        gy = self.y + self.top
        name_y = gy + min(cell, self.rows * cell or cell) / 2
        labels = [Label(PlacedText(self.name, self.x, name_y - 7, 12, INK, Anchor.START), self.key),
                  Label(PlacedText(self.note, self.x, name_y + 8, 10, MUTED, Anchor.START), self.key)]
        if self.two_d and self.stacked:  # one line of column numbers, for every block under it
            for c in range(self.cols if self.rows else 0):
                labels.append(Label(PlacedText(str(c), gx + (c + 0.5) * cell, gy - INDEX_H + 6, 9, MUTED),
                                    self.key, column=c))
        elif self.two_d:
            for b in range(self.blocks):
                bx = gx + b * self.block_w
                for c in range(self.cols if self.rows else 0):
                    labels.append(Label(PlacedText(str(c), bx + (c + 0.5) * cell, gy - INDEX_H + 6, 9, MUTED),
                                        self.key, block=b, column=c))
                if self.blocks > 1:
                    labels.append(Label(PlacedText(self.block_labels[b], bx + self.cols * cell / 2, gy - 2 * INDEX_H + 6, 9, INK),
                                        self.key, block=b))
        if self.margin:
            for r in range(self.lines):
                labels.append(Label(PlacedText(self.line_label(r), gx - 4, gy + self.line_y(r) + 0.5 * cell, 9, MUTED,
                                               Anchor.END), self.key, row=r))
        return labels

    def cell_box(self, i: int) -> tuple[float, float, float, float] | None:
        if i < 0 or i >= self.drawn:
            return None
        b, r, c = self.locate(i)
        x0 = self.x + self.label_w + self.margin + (0 if self.stacked else b) * self.block_w + c * self.cell
        y0 = self.y + self.top + self.line_y(r)
        return (x0, y0, x0 + self.cell, y0 + self.cell)


@dataclass(frozen=True)
class Label:
    """A text beside an array's grid (its name, what it is, a column, row or block number) and
    what it labels: the array ``key``, and within it the ``block``, ``column`` or ``row`` of
    cells it names (None: any)."""

    text: PlacedText
    key: tuple
    block: int | None = None
    column: int | None = None
    row: int | None = None

    @property
    def box(self) -> Box:
        """Where its text lies (from the estimated width; the text is centred on its y)."""
        t = self.text
        w = text_width(t.text, t.size)
        x0 = t.x if t.anchor == Anchor.START else t.x - w if t.anchor == Anchor.END else t.x - w / 2
        return (x0, t.y - t.size / 2, x0 + w, t.y + t.size / 2)

    def names(self, view: ArrayView, element: int) -> bool:
        """Whether this label is about the element ``element`` of ``view`` (its array, its block,
        its column or its row)."""
        if view.key != self.key:
            return False
        block, row, column = view.locate(element)
        return ((self.block is None or self.block == block) and (self.column is None or self.column == column)
                and (self.row is None or self.row == row))


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
    fold = 0
    if len(shape) == 2 and cols > WRAP:  # long rows fold onto lines of WRAP cells, one row under another
        fold, cols, two_d = cols, WRAP, False
        shown = min(rows, max(1, MAX_CELLS // fold))
        if shown < rows:
            note = f"{note}, first {shown * fold} shown"
        rows = shown * -(-fold // WRAP)
    if len(shape) >= 3:
        lead = tuple(int(d) for d in shape[:-2])
        rows = int(shape[-2])
        blocks = int(np.prod(lead))
        if blocks * rows * cols > MAX_CELLS:
            blocks = max(1, MAX_CELLS // max(rows * cols, 1))
            note = f"{note}, first {blocks} blocks shown"
        labels = ["[" + ",".join(str(int(k)) for k in np.unravel_index(b, lead)) + ",:,:]" for b in range(blocks)]
    max_rows = max(1, MAX_CELLS // max(cols, 1))
    if blocks == 1 and not fold and rows > max_rows:
        note = f"{note}, first {max_rows * cols} shown"
        rows = max_rows
    n = min(size, (rows // -(-fold // cols)) * fold if fold else blocks * rows * cols)
    if isinstance(values, np.ndarray):
        flat = values.reshape(-1)
        texts = [fmt_value(flat[i]) for i in range(n)]
    else:
        texts = [fmt_value(values.get(i)) for i in range(n)]
    faint = [touched is not None and i not in touched for i in range(n)]
    return ArrayView(key, name, note, rows, cols, size, texts, [fills.get(i) for i in range(n)], faint,
                     wrapped, two_d, fold, blocks, labels)


# ----------------------------------------------------------------------------- a panel
@dataclass
class Arrow:
    """A thread's write traced back to one element its value came from."""

    lane: int
    color: str
    source: tuple[tuple, int]  # (view key, element)
    target: tuple[tuple, int]
    points: list[tuple[float, float]] = field(default_factory=list)  # the whole arrow, sampled
    #: Its path from source to target: straight lines (two points) and cubic Béziers (start, two
    #: control points, end), each starting where the one before it ends.
    pieces: tuple[tuple[Point, ...], ...] = ()


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
    """One threadgroup's part of the diagram: its threads' legend, its arrays in sections (inputs,
    threadgroup memory phase by phase, outputs), the arrows between them and its findings."""

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


# ----------------------------------------------------------------------------- the header
@dataclass
class Header:
    """The lines above the panels: the title, the launch, what arrows and marks mean."""

    lines: list[tuple[str, float, str]]  # (text, font size, colour)
    width: float
    height: float


@dataclass
class RunDrawing:
    """A whole run diagram before it is painted: the header over one panel per threadgroup shown."""

    header: Header
    panels: list[Panel]


def views_by_key(panel: Panel) -> dict[tuple, ArrayView]:
    """The panel's arrays as drawn, by their keys (what arrows and marks name)."""
    return {v.key: v for s in panel.sections for v in s}
