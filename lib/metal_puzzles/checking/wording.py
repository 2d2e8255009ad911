"""Small helpers for the English of verdicts: counts with the right plural, and long sentences
broken into lines at word boundaries (never inside a word or a number)."""

from __future__ import annotations

import textwrap

#: Width of a report's prose lines: fits a notebook's output area and an 100-column terminal.
REPORT_WIDTH = 100

#: Plurals that are not the word plus 's'.
_IRREGULAR = {"thread does": "threads do", "it does": "they do", "fails": "fail", "was": "were", "is": "are"}


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 test', '2 tests', '0 tests'; ``many`` for words whose plural is not word + 's'."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {many if many is not None else _IRREGULAR.get(word, word + 's')}"


def wrap(text: str, indent: str = "", hanging: str = "  ", width: int = REPORT_WIDTH) -> list[str]:
    """``text`` as lines no wider than ``width``, broken only between words: the first line starts
    with ``indent``, the others with ``indent + hanging``. Words longer than a line stay whole."""
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent + hanging,
                         break_long_words=False, break_on_hyphens=False) or [indent]


__all__ = ["plural", "wrap", "REPORT_WIDTH"]
