"""The online softmax merged across tiles of keys, as a picture (V.9's text): one query's scores
arrive a tile at a time; after each tile the running maximum ``m``, the sum ``l`` of
``exp(s - m)`` and the weighted sum ``acc`` of values are rescaled by ``c = exp(m_old - m)`` and
the tile's keys added. The numbers drawn are computed here from the example, so the picture is
true by construction: its last line is the softmax over all keys at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

import numpy as np

#: The example: one query's scores and one dimension of the values, in tiles of four keys. The
#: maximum rises in the second tile (every earlier number is rescaled) and not in the third.
SCORES = (1.0, 2.5, 0.5, 1.5, 3.0, 4.0, 2.0, 1.0, 0.5, 3.5)
VALUES = (1.0, -1.0, 2.0, 0.0, 1.0, 2.0, -2.0, 1.0, 3.0, -1.0)
TILE = 4

COLUMN = 262  # one tile's column
GAP = 22  # between columns (the arrow carrying the state)
MARGIN = 12
NUMBER_W = 52  # the room of one key's score or value
WIDTH = 2 * MARGIN + 3 * COLUMN + 2 * GAP
FONT = 13
LINE = 20
INK = "#1d1d1f"
MUTED = "#6e6e73"
TILE_FILL = "#eef4fb"
STATE_FILL = "#fdf3e3"
RESCALE = "#b3261e"


@dataclass(frozen=True)
class TileStep:
    """The state after one tile: what the tile brought and what the merge made of it."""

    first: int  # index of the tile's first key
    scores: tuple[float, ...]
    values: tuple[float, ...]
    m_old: float
    m: float
    c: float  # exp(m_old - m): how much the earlier numbers shrink
    p_sum: float  # the tile's sum of exp(s - m)
    pv_sum: float  # and of exp(s - m) * v
    l: float  # noqa: E741 (the name every flash-attention text gives the running sum)
    acc: float


def merge_steps(scores: tuple[float, ...] = SCORES, values: tuple[float, ...] = VALUES,
                tile: int = TILE) -> list[TileStep]:
    """The online softmax's state after each tile of ``tile`` keys, in float64."""
    m, l, acc = -np.inf, 0.0, 0.0  # noqa: E741
    steps = []
    for first in range(0, len(scores), tile):
        s = np.asarray(scores[first:first + tile], dtype=np.float64)
        v = np.asarray(values[first:first + tile], dtype=np.float64)
        m_new = max(m, float(s.max()))
        c = float(np.exp(m - m_new))
        p = np.exp(s - m_new)
        l, acc = l * c + float(p.sum()), acc * c + float(p @ v)  # noqa: E741
        steps.append(TileStep(first, tuple(s), tuple(v), m, m_new, c, float(p.sum()), float(p @ v), l, acc))
        m = m_new
    return steps


def softmax_output(scores: tuple[float, ...] = SCORES, values: tuple[float, ...] = VALUES) -> float:
    """The softmax over all keys at once, weighted values summed: what the merge must end at."""
    s = np.asarray(scores, dtype=np.float64)
    p = np.exp(s - s.max())
    return float(p @ np.asarray(values, dtype=np.float64) / p.sum())


def _n(x: float) -> str:
    """A number as the picture writes it: three significant digits, -inf as the text does."""
    if np.isinf(x):
        return "-∞" if x < 0 else "∞"
    return f"{x:.3g}"


def _text(x: float, y: float, s: str, *, size: int = FONT, fill: str = INK, weight: str = "normal",
          anchor: str = "start") -> str:
    return (f"<text x='{x:.1f}' y='{y:.1f}' font-size='{size}' fill='{fill}' font-weight='{weight}' "
            f"text-anchor='{anchor}'>{escape(s)}</text>")


def _box(x: float, y: float, w: float, h: float, fill: str) -> str:
    return f"<rect x='{x:.1f}' y='{y:.1f}' width='{w:.1f}' height='{h:.1f}' rx='6' fill='{fill}' stroke='{MUTED}'/>"


def _arrow(x1: float, y: float, x2: float, colour: str) -> str:
    return (f"<path d='M{x1:.1f} {y:.1f}H{x2 - 7:.1f}' stroke='{colour}' stroke-width='1.6' fill='none'/>"
            f"<path d='M{x2:.1f} {y:.1f}l-8 -4v8z' fill='{colour}'/>")


def online_softmax_svg(scores: tuple[float, ...] = SCORES, values: tuple[float, ...] = VALUES,
                       tile: int = TILE) -> str:
    """The picture: a column per tile (its keys' scores and values, then the merged state), arrows
    carrying the state from tile to tile with its rescale, and the output at the end."""
    steps = merge_steps(scores, values, tile)
    x0, top = float(MARGIN), 58.0
    parts = [_text(x0, 24, "The online softmax across tiles: one query, one dimension of v, tiles of "
                   f"{tile} keys", size=15, weight="bold"),
             _text(x0, 44, "After each tile: m = max(m, tile's scores); c = exp(m_old − m) rescales what came "
                   "before; l = l·c + Σ exp(s − m); acc = acc·c + Σ exp(s − m)·v", fill=MUTED)]
    tile_h, state_h = 3 * LINE + 12, 4 * LINE + 12
    for k, st in enumerate(steps):
        x = x0 + k * (COLUMN + GAP)
        last = st.first + len(st.scores) - 1
        parts.append(_box(x, top, COLUMN, tile_h, TILE_FILL))
        parts.append(_text(x + 10, top + LINE, f"tile {k + 1}: keys {st.first} to {last}", weight="bold"))
        for row, (name, numbers) in enumerate((("s", st.scores), ("v", st.values)), start=2):
            parts.append(_text(x + 10, top + row * LINE, name, fill=MUTED))
            parts += [_text(x + 30 + j * NUMBER_W, top + row * LINE, _n(n)) for j, n in enumerate(numbers)]
        y = top + tile_h + 14
        parts.append(_box(x, y, COLUMN, state_h, STATE_FILL))
        grew = st.m > st.m_old
        parts.append(_text(x + 10, y + LINE, f"m = max({_n(st.m_old)}, {_n(max(st.scores))}) = {_n(st.m)}",
                           weight="bold"))
        parts.append(_text(x + 10, y + 2 * LINE, f"c = exp({_n(st.m_old)} − {_n(st.m)}) = {_n(st.c)}",
                           fill=RESCALE if grew and k else INK))
        l_old, acc_old = (steps[k - 1].l, steps[k - 1].acc) if k else (0.0, 0.0)
        parts.append(_text(x + 10, y + 3 * LINE, f"l = {_n(l_old)}·c + {_n(st.p_sum)} = {_n(st.l)}"))
        parts.append(_text(x + 10, y + 4 * LINE, f"acc = {_n(acc_old)}·c + {_n(st.pv_sum)} = {_n(st.acc)}"))
        if k + 1 < len(steps):
            nxt = steps[k + 1]
            ay = y + state_h / 2
            colour = RESCALE if nxt.m > st.m else MUTED
            parts.append(_arrow(x + COLUMN + 2, ay, x + COLUMN + GAP - 2, colour))
    bottom = top + tile_h + 14 + state_h + 30
    last_step = steps[-1]
    rising = [k + 1 for k, st in enumerate(steps) if k and st.m > st.m_old]
    note = (f"The maximum rose in tile {', '.join(map(str, rising))}: c < 1 shrank the earlier l and acc (red). "
            "Where it did not, c = 1." if rising else "The maximum never rose after the first tile: c = 1.")
    parts.append(_text(x0, bottom, note, fill=MUTED))
    parts.append(_text(x0, bottom + LINE + 4, f"out = acc / l = {_n(last_step.acc)} / {_n(last_step.l)} = "
                       f"{_n(last_step.acc / last_step.l)}: the softmax over all {len(scores)} keys at once gives "
                       f"{_n(softmax_output(scores, values))}", weight="bold"))
    height = bottom + LINE + 20
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height:.0f}' "
            f"viewBox='0 0 {WIDTH} {height:.0f}' font-family='Helvetica, Arial, sans-serif'>"
            f"<rect width='{WIDTH}' height='{height:.0f}' fill='white'/>" + "".join(parts) + "</svg>\n")


__all__ = ["online_softmax_svg", "merge_steps", "softmax_output", "TileStep"]
