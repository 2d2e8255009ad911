"""Small helpers for the English of verdicts: counts with the right plural, and long sentences
broken into lines at word boundaries (never inside a word or a number), or kept one line a
paragraph for a page that wraps them to the width it has (``report_width``, ``report_html``)."""

from __future__ import annotations

import html
import shutil
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TextIO

#: Width of a report's prose lines: fits a notebook's output area and an 100-column terminal.
REPORT_WIDTH = 100

#: The width ``wrap`` breaks prose at while a report is written (``report_width``); None: one line
#: a paragraph. A context variable, not an argument: the verdict's prose is written by a dozen
#: helpers (verdict.py), each of which would otherwise pass the width on.
_PROSE_WIDTH: ContextVar[int | None] = ContextVar("metal_puzzles_prose_width", default=REPORT_WIDTH)

#: Plurals that are not the word plus 's'.
_IRREGULAR = {"thread does": "threads do", "it does": "they do", "fails": "fail", "was": "were", "is": "are"}


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 test', '2 tests', '0 tests'; ``many`` for words whose plural is not word + 's'."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {many if many is not None else _IRREGULAR.get(word, word + 's')}"


def wrap(text: str, indent: str = "", hanging: str = "  ", width: int | None = None) -> list[str]:
    """``text`` as lines no wider than ``width`` (default: the report's, ``report_width``), broken
    only between words: the first line starts with ``indent``, the others with ``indent +
    hanging``. Words longer than a line stay whole. While a report is written for a page that
    wraps it (``report_width(None)``), one line: the page breaks it, once."""
    width = _PROSE_WIDTH.get() if width is None else width
    return textwrap.wrap(text, width=width or 1 << 30, initial_indent=indent, subsequent_indent=indent + hanging,
                         break_long_words=False, break_on_hyphens=False) or [indent]


#: The widest line of a table (values side by side, their marks under them) in a report for a page:
#: a notebook's output area in a window 900 px wide holds about 95 characters of 13 px code, and a
#: table line the page broke would move its marks off their values.
PAGE_TABLE_WIDTH = 88


def table_width() -> int:
    """How wide a line of a table in a report may be: the prose's width, or for a page that wraps
    prose (``report_width(None)``) ``PAGE_TABLE_WIDTH``."""
    return _PROSE_WIDTH.get() or PAGE_TABLE_WIDTH


@contextmanager
def report_width(width: int | None) -> Iterator[None]:
    """While inside: ``wrap`` breaks prose at ``width`` characters, or (None) keeps each paragraph
    on one line, for a notebook's output, which wraps it to its own width (``report_html``)."""
    token = _PROSE_WIDTH.set(width)
    try:
        yield
    finally:
        _PROSE_WIDTH.reset(token)


def terminal_width(stream: TextIO | None = None) -> int:
    """The width a report printed to ``stream`` (default: standard output) is wrapped at: a
    terminal's, at most ``REPORT_WIDTH``; ``REPORT_WIDTH`` when it is not a terminal (a file, a
    pipe, a test's capture)."""
    stream = sys.stdout if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    if isatty is None or not isatty():
        return REPORT_WIDTH
    return max(20, min(shutil.get_terminal_size((REPORT_WIDTH, 24)).columns, REPORT_WIDTH))


def report_text(report: str, width: int) -> str:
    """A report written one line a paragraph (``report_width(None)``) broken at ``width``, each
    line under its paragraph's first as ``wrap`` hangs them: a terminal's counterpart of
    ``report_html``, so that a console narrower than ``REPORT_WIDTH`` wraps the prose once."""
    folded = []
    for line in report.split("\n"):
        text = line.lstrip(" ")
        folded += wrap(text, " " * (len(line) - len(text)), width=width) if text else [""]
    return "\n".join(folded)


#: A report as HTML: monospace like the text it replaces; each line a block that wraps to the
#: output's width between words (``pre-wrap`` keeps the spaces that align tables and carets), and
#: whose later lines hang under the first, as ``wrap`` indents them.
_REPORT_STYLE = ("font-family: var(--jp-code-font-family, monospace); font-size: var(--jp-code-font-size, 13px); "
                 "line-height: var(--jp-code-line-height, 1.3); padding: 2px 0")
_LINE_STYLE = "white-space: pre-wrap; overflow-wrap: break-word; padding-left: {pad}ch; text-indent: -2ch"


def report_html(report: str) -> str:
    """A report written one line a paragraph (``report_width(None)``) as HTML whose paragraphs
    wrap to the width of the output they are shown in, and only there."""
    rows = []
    for line in report.split("\n"):
        text = line.lstrip(" ")
        lead = len(line) - len(text)
        rows.append(f"<div class='mp-report-line' style='{_LINE_STYLE.format(pad=lead + 2)}'>"
                    f"{html.escape(text) if text else '&#160;'}</div>")
    return f"<div class='mp-report' style='{_REPORT_STYLE}'>{''.join(rows)}</div>"


__all__ = ["plural", "wrap", "table_width", "report_width", "report_html", "report_text", "terminal_width", "REPORT_WIDTH"]
