"""The small tables ``show()`` prints (the score table, the cost table): text for a terminal,
an HTML table in Jupyter, from one description.

Text tables wrap into garbage in a narrow notebook output; an HTML table reflows and scrolls like
the page. In Jupyter ``show_table`` hands the table to the display machinery (which keeps both
forms, ``text/plain`` and ``text/html``); elsewhere it prints the text.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

#: How an over-budget figure is set off in HTML (the findings' red of the diagrams).
OVER_STYLE = "color:#c1121f;font-weight:bold"


@dataclass(frozen=True)
class TableRow:
    label: str  # 'yours', 'budget'
    cells: tuple[str, ...]
    over: frozenset[int] = frozenset()  # columns whose figure breaks the budget


@dataclass(frozen=True)
class Table:
    """A table with a label column: lines of text above it and below it, one row per source of
    figures (yours, the budget)."""

    columns: tuple[str, ...]
    rows: tuple[TableRow, ...]
    above: tuple[str, ...] = ()  # a heading, a caption
    below: tuple[str, ...] = field(default=())  # notes under the table

    def text(self) -> str:
        """Monospace text: columns separated by '|', figures right-aligned under their labels."""
        label_w = max((len(r.label) for r in self.rows), default=0)
        widths = [max([len(c), *(len(r.cells[k]) for r in self.rows)]) for k, c in enumerate(self.columns)]
        lines = list(self.above)
        lines.append(" " * label_w + " | " + " | ".join(c.rjust(w) for c, w in zip(self.columns, widths,
                                                                                  strict=True)) + " |")
        for r in self.rows:
            lines.append(r.label.ljust(label_w) + " | "
                         + " | ".join(v.rjust(w) for v, w in zip(r.cells, widths, strict=True)) + " |")
        lines += self.below
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        esc = html.escape
        head = "".join(f"<th style='text-align:right'>{esc(c)}</th>" for c in self.columns)
        body = []
        for r in self.rows:
            cells = "".join(f"<td style='text-align:right{';' + OVER_STYLE if k in r.over else ''}'>{esc(v)}</td>"
                            for k, v in enumerate(r.cells))
            body.append(f"<tr><th style='text-align:left'>{esc(r.label)}</th>{cells}</tr>")
        above = "".join(_html_line(s) for s in self.above)
        below = "".join(_html_line(s) for s in self.below)
        return (f"<div class='mp-table'>{above}<table><thead><tr><th></th>{head}</tr></thead>"
                f"<tbody>{''.join(body)}</tbody></table>{below}</div>")


def _html_line(s: str) -> str:
    if not s:
        return ""
    if s.startswith("# "):
        return f"<h4 style='margin:0.2em 0'>{html.escape(s[2:])}</h4>"
    return f"<div>{html.escape(s)}</div>"


def show_table(table: Table, rich: bool) -> None:
    """Print the table's text, or in Jupyter (``rich``) display it: HTML with the text beside it."""
    if not rich:
        print(table.text())
        return
    from IPython.display import display  # only in Jupyter, where IPython is present

    display(table)


def row(label: str, cells: Sequence[str], over: Sequence[int] = ()) -> TableRow:
    return TableRow(label, tuple(cells), frozenset(over))


__all__ = ["Table", "TableRow", "row", "show_table", "OVER_STYLE"]
