"""Text that came from a submission, made safe for each place the grader writes it.

Anything a student controls (a file name, a student id taken from it, a kernel's source, a message
quoting either) may hold bytes that are not UTF-8, control characters, spreadsheet formulas,
HTML or terminal markup. Each writer passes such text through the function for its format:

- ``printable``: every character shown, none acting (controls and undecodable bytes escaped);
- ``csv_cell``: a cell no spreadsheet evaluates (the OWASP convention: a leading quote);
- ``md_inline`` / ``md_code_block``: Markdown that renders as the literal text, no HTML;
- ``markup``: text for a rich console, with rich's markup escaped;
- ``report_file_name``: a file name unique per student by construction.
"""

from __future__ import annotations

import re

from rich.markup import escape

#: Characters that make a spreadsheet treat a cell as a formula (OWASP "CSV injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")

#: ASCII punctuation that means something in Markdown; a backslash makes each literal.
_MD_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")


def _escape_char(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (os.fsdecode's surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if ch in _NAMED:
        return _NAMED[ch]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: object, *, keep_newlines: bool = False, limit: int | None = None) -> str:
    """``text`` with every character that does not print (controls, bidirectional overrides,
    lone surrogates, bytes that were not UTF-8) written as a backslash escape. The result
    always encodes as UTF-8 and shows every character without acting on the terminal.

    ``keep_newlines`` keeps newlines and tabs (for multi-line text such as a kernel's report);
    ``limit`` keeps that many characters of the text and says how many more there were."""
    s = clip(str(text), limit) if limit is not None else str(text)
    if s.isprintable():
        return s
    keep = "\n\t" if keep_newlines else ""
    return "".join(ch if ch.isprintable() or ch in keep else _escape_char(ch) for ch in s)


def clip(text: str, limit: int) -> str:
    """At most ``limit`` characters of ``text``, then how many were left out (so a name or
    message from a submission cannot make a record, a report or a line any size it likes)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def clean_strings(value: object) -> object:
    """A copy of a JSON-ready structure whose strings all encode as UTF-8 (newlines kept)."""
    if isinstance(value, str):
        return printable(value, keep_newlines=True)
    if isinstance(value, dict):
        return {printable(k) if isinstance(k, str) else k: clean_strings(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_strings(v) for v in value]
    return value


def csv_cell(text: object) -> str:
    """A CSV cell that a spreadsheet shows as text: a leading quote before a formula character.

    Negative numbers are quoted too; the grader's own numbers (points) are never negative and
    are written without this function."""
    s = printable(text)
    return "'" + s if s.startswith(_FORMULA_START) else s


def md_inline(text: object) -> str:
    """Markdown that renders as exactly ``text`` on one line: no emphasis, links, table breaks or HTML."""
    s = printable(text)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_PUNCTUATION.sub(r"\\\1", s)


def md_code_block(text: object) -> str:
    """A fenced code block showing ``text`` verbatim (a fence longer than any run of backticks
    inside, so the text cannot close it; code blocks render no HTML)."""
    s = printable(text, keep_newlines=True)
    longest = max((len(run) for run in re.findall(r"`+", s)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{s}\n{fence}"


def markup(text: object) -> str:
    """Text for a rich console: controls escaped and rich's ``[...]`` markup made literal."""
    return escape(printable(text))


def slug(text: object, limit: int = 40) -> str:
    """An ASCII file-name part: letters, digits, '-', '_' and '.', no leading dot."""
    s = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in str(text))
    s = s.lstrip(".")[:limit]
    return s or "student"


def report_file_name(seq: int, student_id: str, width: int = 3) -> str:
    """``NNN-slug.md``: the sequence number makes it unique whatever the id sanitises to."""
    return f"{seq:0{width}d}-{slug(student_id)}.md"
