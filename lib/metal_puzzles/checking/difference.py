"""How a wrong output is shown: yours above the spec's, row by row whatever the output's rank,
the differing positions marked ``^`` under them; the error at each listed position beside the
error the tolerance allowed there, the worst one, and the rule that allowed it.

Numbers are printed with as many digits as it takes to tell yours from the spec's (at most what
the output's type holds: 9 for float32, whose values ``%.9g`` writes exactly), so that a pair
never reads '1.152' against '1.152'. Unsigned words of 32 bits holding bits (V.3's packed 4-bit
values) are written in hexadecimal (``msl.lang.lane_values.hex_word``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..msl.lang.lane_values import hex_word
from .tolerance import Tolerance
from .wording import table_width, wrap

#: Outputs with at most this many values are shown whole; larger ones by their rows that differ.
MAX_SHOWN_VALUES = 36
#: Rows that differ shown, at most, of a larger output.
MAX_SHOWN_ROWS = 4
#: Differing positions listed with their errors, at most.
MAX_LISTED = 8
#: The fewest significant digits a value is printed with.
MIN_DIGITS = 4


@dataclass(frozen=True)
class Difference:
    """One test's output against the spec's: what a report shows of a wrong output."""

    yours: np.ndarray
    expected: np.ndarray  # float64, the spec's
    mismatch: np.ndarray  # bool, where yours is further from the spec's than allowed
    #: The error allowed at each position (broadcast to the output's shape); None: none was computed.
    allowed: np.ndarray | None = None
    tolerance: Tolerance | None = None

    @property
    def integer(self) -> bool:
        return self.yours.dtype.kind in "iub"

    @property
    def most_digits(self) -> int:
        """Digits that tell any two values of the output's type apart (%.9g is exact for float32)."""
        if self.integer:
            return 0
        return {2: 5, 4: 9}.get(self.yours.dtype.itemsize, 17)

    @property
    def error(self) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            return np.abs(self.yours.astype(np.float64) - self.expected)

    def digits(self, positions: list[tuple[int, ...]]) -> int:
        """The fewest digits (at least ``MIN_DIGITS``) that write yours and the spec's apart at
        every one of ``positions`` where they differ."""
        most = self.most_digits
        pairs = [(float(self.yours[p]), float(self.expected[p])) for p in positions]
        pairs = [(y, e) for y, e in pairs if y != e and math.isfinite(y) and math.isfinite(e)]
        for digits in range(MIN_DIGITS, most):
            if all(f"{y:.{digits}g}" != f"{e:.{digits}g}" for y, e in pairs):
                return digits
        return max(most, MIN_DIGITS)

    def text(self, value, digits: int) -> str:
        """One value as the report writes it: an integer as one (a 32-bit word of bits in hex), a
        float with ``digits`` significant digits (whole numbers without a point)."""
        if self.integer:
            word = hex_word(value) if self.yours.dtype.kind == "u" else None
            if word is None and isinstance(value, float | np.floating) and self.yours.dtype.kind == "u" \
                    and math.isfinite(value) and value == int(value) and value >= 0:
                word = hex_word(self.yours.dtype.type(int(value)))
            return word if word is not None else _plain(value, digits)
        return _plain(value, digits)


def _plain(value, digits: int) -> str:
    v = float(value)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e9:
        return str(int(v))
    return f"{v:.{max(digits, 1)}g}"


def position_text(p: tuple[int, ...]) -> str:
    """'[1, 0]': a position as an index of the output."""
    return "[" + ", ".join(str(i) for i in p) + "]"


def format_difference(d: Difference) -> list[str]:
    """The lines a report shows of a wrong output: the values (marked), the listed positions
    with their errors, the worst, and the tolerance."""
    where = [tuple(int(i) for i in p) for p in np.argwhere(d.mismatch)]
    digits = d.digits(where[:64])
    lines = _values(d, digits)
    lines += _listing(d, where, digits)
    if d.tolerance is not None and not d.integer:
        lines += wrap("Tolerance: " + d.tolerance.describe(), "  ")
    elif d.integer:
        lines.append("  Integer outputs must equal the spec's exactly.")
    return lines


# ----------------------------------------------------------------------------- the values, row by row
def _values(d: Difference, digits: int) -> list[str]:
    """Yours above the spec's, a row of the output at a time (its last axis), with ``^`` under
    the positions that differ: the whole output while it is small, its differing rows otherwise."""
    shape = d.yours.shape
    last = shape[-1] if shape else 1
    rows = max(1, d.yours.size // max(last, 1))
    ys = d.yours.reshape(rows, last)
    es = d.expected.reshape(rows, last)
    ms = d.mismatch.reshape(rows, last)
    differing = [r for r in range(rows) if ms[r].any()]
    if d.yours.ndim <= 1 or d.yours.size <= MAX_SHOWN_VALUES:
        shown = list(range(rows))
    else:
        shown = differing[:MAX_SHOWN_ROWS]
    lines = []
    for r in shown:
        label = "" if d.yours.ndim <= 1 else " " + _row_label(r, shape)
        lines += _row(d, ys[r], es[r], ms[r], digits, label)
    hidden = len(differing) - len([r for r in shown if r in differing])
    if hidden > 0:
        lines.append(f"  (and {hidden} more row{'s' if hidden > 1 else ''} that differ{'s' if hidden == 1 else ''})")
    return lines


def _row_label(r: int, shape: tuple[int, ...]) -> str:
    if len(shape) == 2:
        return f"row {r}"
    index = np.unravel_index(r, shape[:-1])
    return "[" + ", ".join(str(int(i)) for i in index) + ", :]"


def _row(d: Difference, ys: np.ndarray, es: np.ndarray, ms: np.ndarray, digits: int, label: str) -> list[str]:
    """One row: 'Yours<label>: [..]', 'Spec <label>: [..]' and the marks, cut to a window around
    its first difference when the whole row does not fit the report's width."""
    y_texts = [d.text(v, digits) for v in ys]
    e_texts = [d.text(v, digits) for v in es]
    widths = [max(len(a), len(b)) for a, b in zip(y_texts, e_texts, strict=True)]
    head_y, head_e = f"  Yours{label}: [", f"  Spec {label}: ["
    room = table_width() - len(head_y) - 1
    first = int(np.argmax(ms)) if ms.any() else 0
    start, stop = _window(widths, first, room)
    cols = range(start, stop)
    before = "... " if start > 0 else ""
    after = " ..." if stop < len(widths) else ""

    def line(head: str, texts: list[str]) -> str:
        return head + before + " ".join(texts[k].rjust(widths[k]) for k in cols) + after + "]"

    marks = " " * (len(head_y) + len(before)) + " ".join(("^" if ms[k] else " ") * widths[k] for k in cols)
    out = [line(head_y, y_texts), line(head_e, e_texts)]
    return out + [marks.rstrip()] if ms.any() else out


def _window(widths: list[int], first: int, room: int) -> tuple[int, int]:
    """The columns [start, stop) shown: all when they fit in ``room`` characters, else from a
    column before ``first`` on, as many as fit beside the '... ' and ' ...' that say more exist."""
    if sum(widths) + len(widths) - 1 <= room:
        return 0, len(widths)
    start = max(0, first - 1)
    used = 8 if start > 0 else 4  # the ellipses
    stop = start
    while stop < len(widths) and used + widths[stop] + (stop > start) <= room:
        used += widths[stop] + (stop > start)
        stop += 1
    return start, max(stop, start + 1)


# ----------------------------------------------------------------------------- the errors
def _listing(d: Difference, where: list[tuple[int, ...]], digits: int) -> list[str]:
    """The first differing positions, each with yours, the spec's, the error and the error
    allowed there; then the worst position of all."""
    if not where:
        return []
    listed = where[:MAX_LISTED]
    more = f" (first {MAX_LISTED} of {len(where)})" if len(where) > MAX_LISTED else ""
    error = d.error
    allowed = None if d.allowed is None else np.broadcast_to(d.allowed, d.yours.shape)
    cells = []
    for p in listed:
        row = [position_text(p), "yours " + d.text(d.yours[p], digits), "spec " + d.text(d.expected[p], digits),
               "error " + _amount(error[p], d.integer)]
        if allowed is not None and not d.integer:
            row.append(f"allowed {float(allowed[p]):.2g}")
        cells.append(row)
    widths = [max(len(c[k]) for c in cells) for k in range(len(cells[0]))]
    lines = [f"  Differs at{more}:"]
    lines += ["    " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    worst = _worst(d, where, error, allowed, digits)
    if worst:
        lines += wrap(worst, "  ")
    return lines


def _amount(x: float, integer: bool = False) -> str:
    """An error as the report writes it: whole numbers whole, others to two digits."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isfinite(x) and (integer or (x == int(x) and x < 1e9)):
        return str(int(x))
    return f"{x:.2g}"


def _worst(d: Difference, where: list[tuple[int, ...]], error: np.ndarray, allowed: np.ndarray | None,
           digits: int) -> str | None:
    """'Worst: [1, 33], error 0.0081, 4,200 times the allowed 1.9e-06.' (a NaN or an infinity
    first: no ratio says more)."""
    idx = tuple(np.array(where).T)
    errs = error[idx]
    bad = ~np.isfinite(errs)
    if bad.any():
        p = where[int(np.argmax(bad))]
        return (f"Worst: {position_text(p)}, yours {d.text(d.yours[p], digits)} where the spec's is "
                f"{d.text(d.expected[p], digits)}" + (f" ({int(bad.sum())} such positions)." if bad.sum() > 1 else "."))
    if allowed is not None and not d.integer:
        limit = allowed[idx]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(limit > 0, errs / np.where(limit > 0, limit, 1.0), np.inf)
        k = int(np.argmax(ratio))
        p = where[k]
        times = "" if not np.isfinite(ratio[k]) else f", {_times(float(ratio[k]))} the allowed {float(limit[k]):.2g}"
        return f"Worst: {position_text(p)}, error {_amount(errs[k])}{times}."
    if len(where) < 2:
        return None
    k = int(np.argmax(errs))
    return f"Worst: {position_text(where[k])}, error {_amount(errs[k], d.integer)}."


def _times(ratio: float) -> str:
    """'4,200 times', '1.5 times': a ratio as a reader says it."""
    if ratio >= 100:
        return f"{float(f'{ratio:.2g}'):,.0f} times"
    return f"{ratio:.2g} times"
