"""The access map: what one SIMD-group's accesses cost, drawn. A companion of ``draw.py``'s run
diagram for Part III, from a run recorded with both a trace and a cost profile.

For every place in the kernel that touches memory (a source line, a buffer, load or store) it
picks the SIMD-group whose access there cost the most and draws:

* a strip of its 32 lanes, each coloured by the **segment** (device memory) or the **bank**
  (threadgroup memory) its address falls in;
* the memory itself: for device memory one row per segment the SIMD-group touched (a row holds
  one segment's elements), for threadgroup memory one row per 32 words (a column is a bank),
  with the touched elements in the same colours.

One colour for all 32 lanes of a device access means one segment (coalesced); one colour for all
lanes of a threadgroup access with different words means they queue on one bank (a conflict).
"""

from __future__ import annotations

import colorsys
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from chalk import Diagram
from chalk.core import Compose
from chalk.envelope import Envelope
from chalk.transform import P2, Affine, BoundingBox
from colour import Color

from metal_puzzles.compat import StrEnum

from ..msl import RunResult
from ..msl.counting.access_kind import AccessKind
from ..msl.lang.types import AddressSpace
from ..msl.observe.cost import CostProfile, conflict_ways, segments_touched
from ..msl.observe.trace import AccessEvent, Recorder
from .draw import RunDiagram
from .style import text_width, wrap_to_width
from .svg_text import Anchor, PlacedText, anchored_text, box_path, text_batch


class ColourBy(StrEnum):
    """What the access map colours: device accesses by segment, threadgroup accesses by bank."""

    SEGMENT = "segment"
    BANK = "bank"


LANE = 19  # one lane of the strip, and one column of memory under it (lane k sits over bank k)
CELL = 14  # the height of one row of memory
LABEL_W = 72  # the column of row labels (at least)
SITE_GAP = 26
PAD = 12
MIN_TEXT = 9.0  # no text smaller than this (the diagram scrolls sideways rather than shrinking)
MAX_ROWS = 32  # memory rows drawn per site
INK = "#222222"
MUTED = "#8a8a8a"
UNTOUCHED = "#f2f2f2"
GRID = "#c8c8c8"
WIDTH = 32


def colours(n: int) -> list[str]:
    """``n`` colours far apart on the hue circle, alternating in lightness so neighbours differ."""
    out = []
    for k in range(n):
        hue = (k * 0.61803398875) % 1.0
        light = 0.55 if k % 2 == 0 else 0.70
        r, g, b = colorsys.hls_to_rgb(hue, light, 0.65)
        out.append(Color(rgb=(r, g, b)).hex_l)
    return out


PALETTE = colours(WIDTH)


@dataclass
class Site:
    """One SIMD-group's access at one place of the kernel, as drawn."""

    line: int
    buffer: str
    kind: AccessKind
    space: AddressSpace
    simd: int
    group: int
    lanes: np.ndarray  # lane of the SIMD-group (0-31) of each element touched
    elements: np.ndarray  # element index within the buffer (threadgroup memory: the group's copy)
    keys: np.ndarray  # segment (device) or word (threadgroup) of each element
    cost: int  # segments touched, or the n-way conflict
    caption: str


def draw_access_map(result: RunResult, colour_by: ColourBy | str | None = None, title: str | None = None,
                    max_sites: int = 8) -> RunDiagram:
    """The access map of a run recorded with ``trace=True`` and ``cost=...``: device accesses
    coloured by segment, threadgroup accesses by bank (``colour_by`` keeps one of the two)."""
    if result.trace is None or result.cost is None:
        raise ValueError("the access map needs a run recorded with trace=True and cost=True")
    only = None if colour_by is None else ColourBy(colour_by)
    sites = [s for s in _sites(result) if only is None
             or (only == ColourBy.SEGMENT) == (s.space != AddressSpace.THREADGROUP)][:max_sites]
    m = result.cost.gpu.memory
    head = [(title or result.kernel_name, 18.0, INK),
            (f"the costliest SIMD-group at each access, on the {result.cost.gpu.name} model: device memory in "
             f"segments of {m.segment_bytes} B, threadgroup memory in {m.banks} banks of {m.bank_width} B", 11.0, MUTED),
            ("device: one row per segment touched, lanes coloured by segment; threadgroup: rows of "
             f"{m.banks} words, a column is a bank, lanes coloured by bank", 11.0, MUTED)]
    profile = result.cost
    head.append((f"whole kernel: SIMD efficiency {profile.kernel.simd_efficiency:.0%}, "
                 f"{profile.barriers_per_threadgroup} barrier(s) per threadgroup; occupancy "
                 f"{profile.occupancy.describe()}", 11.0, INK))
    if not sites:
        head.append(("no access of this kind was recorded", 11.0, MUTED))
    parts: list[Diagram] = []
    y: float = PAD
    # Lines wrap to the width of the memory grid, so no caption makes the diagram wider than it.
    text_w = LABEL_W + WIDTH * LANE
    head = [(line, size, colour) for s, size, colour in head for line in wrap_to_width(s, size, text_w)]
    for s, size, colour in head:
        parts.append(_text(s, PAD, y + size / 2, size, colour))
        y += size + 8
    width = max(text_width(s, size) for s, size, _ in head) + 2 * PAD
    for site in sites:
        y += SITE_GAP / 2
        drawn, w, h = _paint_site(result, site, y)
        parts += drawn
        width = max(width, w)
        y += h + SITE_GAP / 2
    box = (0.0, 0.0, width, y + PAD)
    env = Envelope.from_bounding_box(BoundingBox([P2(box[0], box[1]), P2(box[2], box[3])]))
    return RunDiagram(Affine.identity(), Compose(env, parts))


# ----------------------------------------------------------------------------- choosing the sites
def _cost(result: RunResult) -> CostProfile:
    """The cost profile of a run access_map drew (it refuses a run without one)."""
    assert result.cost is not None
    return result.cost


def _trace(result: RunResult) -> Recorder:
    """The trace of a run access_map drew (it refuses a run without one)."""
    assert result.trace is not None
    return result.trace


def _sites(result: RunResult) -> list[Site]:
    """For each (line, buffer, kind), the SIMD-group execution that cost the most."""
    lanes = result.lanes
    cost = _cost(result)
    m = cost.gpu.memory
    best: dict[tuple, Site] = {}
    for e in _trace(result).accesses():
        if e.space == AddressSpace.THREAD or e.file != "source" or e.space == AddressSpace.CONSTANT:
            continue
        simd = lanes.simd_global[e.lanes]
        key = (e.line, e.buffer, e.kind)
        for sg in np.unique(simd):
            sel = simd == sg
            site = _site(result, e, int(sg), sel, m)
            if site is not None and (key not in best or site.cost > best[key].cost):
                best[key] = site
    return [best[k] for k in sorted(best, key=lambda k: (k[0], k[1], str(k[2])))]


def _site(result: RunResult, e: AccessEvent, sg: int, sel: np.ndarray, m) -> Site | None:
    lanes = result.lanes
    who = e.lanes[sel]
    elements = e.index[sel]
    simd_lane = lanes.simd_lane[who]
    group = int(lanes.group[who[0]])
    verb = {AccessKind.READ: "load from", AccessKind.WRITE: "store to", AccessKind.ATOMIC: "atomic on"}[e.kind]
    where = f"SIMD-group {int(lanes.simd_in_group[who[0]])} of {lanes.group_label(group)}"
    if e.space == AddressSpace.THREADGROUP:
        base, item = _cost(result).threadgroup_layout.get(e.buffer, (0, 4))
        words = (base + elements * item) // m.bank_width
        ways = conflict_ways(words, simd_lane, len(elements) // max(np.unique(who).size, 1) * item, m)
        bank = int(np.argmax(np.bincount(words % m.banks)))
        what = ("no bank conflict" if ways <= 1 else
                f"a {ways}-way bank conflict: {ways} lanes need different words of one bank (bank {bank})")
        return Site(e.line, e.buffer, e.kind, e.space, sg, group, simd_lane, elements, words, ways,
                    f"line {e.line}: {verb} {e.buffer} (threadgroup memory), {where}: {what}")
    size = _cost(result).item_sizes.get(e.buffer)
    if size is None:
        return None
    segments = elements * size // m.segment_bytes
    n = segments_touched(elements, size, m.segment_bytes)
    useful = int(np.unique(elements).size) * size
    what = f"{n} segment{'s' if n != 1 else ''} of {m.segment_bytes} B for {useful} useful bytes"
    return Site(e.line, e.buffer, e.kind, e.space, sg, group, simd_lane, elements, segments, n,
                f"line {e.line}: {verb} {e.buffer}, {where}: {what}")


# ----------------------------------------------------------------------------- painting
def _paint_site(result: RunResult, site: Site, y0: float) -> tuple[list[Diagram], float, float]:
    m = _cost(result).gpu.memory
    parts = []
    y = y0
    caption = wrap_to_width(site.caption, 12.0, LABEL_W + WIDTH * LANE)
    for line in caption:
        parts.append(_text(line, PAD, y + 7, 12.0, INK))
        y += 18
    y += 2
    device = site.space != AddressSpace.THREADGROUP
    # Colours: device segments by order of first touch; threadgroup words by bank.
    if device:
        order = {k: i for i, k in enumerate(dict.fromkeys(site.keys.tolist()))}
        colour_of = {k: PALETTE[i % len(PALETTE)] for k, i in order.items()}
    else:
        colour_of = {k: PALETTE[k % m.banks % len(PALETTE)] for k in site.keys.tolist()}
    # The memory: one row per segment (device) or per bank-width row of words (threadgroup).
    if device:
        per_row = max(1, m.segment_bytes // _cost(result).item_sizes.get(site.buffer, 4))
        rows = sorted(set(site.keys.tolist()))
        row_of = {k: r for r, k in enumerate(rows)}
        cells = {(row_of[k], e % per_row): colour_of[k] for e, k in zip(site.elements.tolist(), site.keys.tolist(),
                                                                         strict=True)}
        labels = [f"{site.buffer}[{k * per_row}]" for k in rows]
        columns = per_row
        note = f"each row is one {m.segment_bytes}-byte segment ({per_row} elements)"
    else:
        rows = sorted({k // m.banks for k in site.keys.tolist()})
        row_of = {k: r for r, k in enumerate(rows)}
        cells = {(row_of[w // m.banks], w % m.banks): colour_of[w] for w in site.keys.tolist()}
        labels = [f"word {r * m.banks}" for r in rows]
        columns = m.banks
        note = f"each row is {m.banks} words of threadgroup memory; column k is bank k"
    shown = rows[:MAX_ROWS]
    # The row labels' column: wide enough for the longest label.
    label_w = max(LABEL_W, max((text_width(t, MIN_TEXT) for t in labels[:MAX_ROWS]), default=0.0) + 8)
    # The lane strip.
    parts.append(_text("lanes", PAD, y + LANE / 2, 11.0, MUTED))
    strip_at = len(parts)  # the strip's fills go under its numbers
    lane_key: dict[int, int] = {}
    for lane, key in zip(site.lanes.tolist(), site.keys.tolist(), strict=True):
        lane_key.setdefault(lane, key)
    fills: dict[str, list] = defaultdict(list)
    numbers = []
    for lane in range(WIDTH):
        x = PAD + label_w + lane * LANE
        b = (x, y, x + LANE - 2, y + LANE - 2)
        fills[colour_of[lane_key[lane]] if lane in lane_key else UNTOUCHED].append(b)
        numbers.append(PlacedText(str(lane), x + (LANE - 2) / 2, y + (LANE - 2) / 2, MIN_TEXT,
                                  INK if lane in lane_key else MUTED))
    parts.append(text_batch(numbers, (PAD + label_w, y, PAD + label_w + WIDTH * LANE, y + LANE)))
    parts[strip_at:strip_at] = [_filled(bs, f) for f, bs in fills.items()]
    y += LANE + 8
    parts.append(_text(note, PAD + label_w, y + 6, 10.0, MUTED))
    y += 14
    fills = defaultdict(list)
    outline = []
    # A column under its lane (its bank, for threadgroup memory); rows of more elements than
    # lanes (a segment of 2-byte elements) are drawn narrower.
    col_w = LANE if columns <= WIDTH else CELL
    row_labels = [PlacedText(labels[r], PAD, y + r * CELL + CELL / 2, MIN_TEXT, MUTED, Anchor.START)
                  for r in range(len(shown))]
    parts.append(text_batch(row_labels, (PAD, y, PAD + label_w, y + len(shown) * CELL)))
    for r, _ in enumerate(shown):
        for c in range(columns):
            x = PAD + label_w + c * col_w
            b = (x, y + r * CELL, x + col_w - (2 if col_w == LANE else 0), y + (r + 1) * CELL)
            fills[cells.get((r, c), UNTOUCHED)].append(b)
            outline.append(b)
    parts += [_filled(bs, f) for f, bs in fills.items()]
    parts.append(_outlined(outline, GRID, 0.5))
    y += len(shown) * CELL
    if len(rows) > len(shown):
        parts.append(_text(f"... and {len(rows) - len(shown)} more rows", PAD + label_w, y + 8, 10.0, MUTED))
        y += 16
    width = PAD + label_w + max(WIDTH * LANE, columns * col_w) + PAD
    width = max([width, *(PAD + text_width(line, 12.0) + PAD for line in caption)])
    return parts, width, y - y0


def _text(s: str, x: float, y: float, size: float, colour: str = INK, anchor: Anchor = Anchor.START) -> Diagram:
    """Text starting at x (or centred on it), centred on y."""
    c = Color(colour)
    half = text_width(s, size) / 2
    centre = x + half if anchor == Anchor.START else x
    return anchored_text(s, size, anchor, half).fill_color(c).line_color(c).line_width_local(0).translate(centre, y)


def _filled(boxes, fill: str) -> Diagram:
    c = Color(fill)
    return box_path(boxes, closed=True).fill_color(c).line_color(c).line_width_local(0)


def _outlined(boxes, line: str, width: float) -> Diagram:
    return box_path(boxes, closed=False).line_color(Color(line)).line_width_local(width)
