"""Tokenizer for the C++14-based subset of the Metal Shading Language that kernels use."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...compat import StrEnum
from ..lang.errors import CompileError, Pos


class TokenKind(StrEnum):
    """What a token is (its value is the name of its pattern in the tokenizer)."""

    ID = "id"
    NUM = "num"
    STR = "str"
    CHAR = "char"
    OP = "op"  # an operator or punctuator, digraphs read as the token they spell
    EOF = "eof"


#: Each pattern's kind (a dictionary: cheaper than calling the enum on every token).
_KINDS: dict[str, TokenKind] = {k.value: k for k in TokenKind}
#: The kinds as module names, for the lexer's, preprocessor's and parser's tests of every token:
#: reading a member off its enum class costs several times a module global on Python 3.11.
ID, NUM, STR, CHAR, OP, EOF = TokenKind.ID, TokenKind.NUM, TokenKind.STR, TokenKind.CHAR, TokenKind.OP, TokenKind.EOF


@dataclass
class Token:
    kind: TokenKind
    text: str
    pos: Pos
    # Macro names that must not be expanded again inside this token's own expansion.
    hide: frozenset[str] = field(default_factory=frozenset)

    def is_op(self, *ops: str) -> bool:
        return self.kind is OP and self.text in ops

    def __repr__(self) -> str:
        return f"Token({self.kind}, {self.text!r}, {self.pos})"


_OPERATORS = [
    "<<=", ">>=", "...", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "::", "##",
    "+", "-", "*", "/", "%", "<", ">", "=", "!", "~", "&", "|", "^", "?", ":", ";", ",", ".",
    "(", ")", "[", "]", "{", "}", "#",
]

#: C++'s alternative tokens (digraphs), and the tokens they are. ``<::`` not followed by ``:`` or
#: ``>`` is ``<`` then ``::`` (C++11 [lex.pptoken]), so ``vector<::T>`` keeps its meaning.
DIGRAPHS = {"%:%:": "##", "<:": "[", ":>": "]", "<%": "{", "%>": "}", "%:": "#"}
_DIGRAPH_RE = r"%:%:|<:(?!:(?![:>]))|:>|<%|%>|%:"

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\f\v]+)
  | (?P<num>(?:0[bB][01']+[uUlL]*|0[xX][0-9a-fA-F']+(?:\.[0-9a-fA-F]*)?(?:[pP][+-]?\d+)?
            |\d[\d']*\.?\d*(?:[eE][+-]?\d+)?
            |\.\d+(?:[eE][+-]?\d+)?)[a-zA-Z_]*)
  | (?P<id>(?:[A-Za-z_]|[^\x00-\x7f])(?:[A-Za-z_0-9]|[^\x00-\x7f])*)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<char>'(?:[^'\\\n]|\\.)+')
  | (?P<digraph>"""
    + _DIGRAPH_RE
    + r""")
  | (?P<op>"""
    + "|".join(re.escape(op) for op in _OPERATORS)
    + r""")
    """,
    re.VERBOSE,
)


def strip_comments(text: str, file: str = "source") -> str:
    """Blank out comments, keeping every other character (and every newline) in place.

    Keeping positions lets a token's column be read straight off the original line. A ``/*``
    with no ``*/`` after it is an error at the ``/*`` (it would swallow the rest of the file).
    """
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            # A line comment ending in a backslash goes on into the next line: lines are
            # spliced before comments are removed (C++ translation phases 2 and 3).
            while j < n and text[i:j].rstrip().endswith("\\"):
                k = text.find("\n", j + 1)
                j = n if k < 0 else k
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            if j < 0:
                line = text.count("\n", 0, i) + 1
                col = i - (text.rfind("\n", 0, i) + 1) + 1
                raise CompileError("unterminated /* comment (no */ closes it)", Pos(file, line, col))
            j += 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c in "\"'":
            # Skip string and character literals so '//' inside them is not a comment.
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def tokenize_line(line: str, file: str, lineno: int, col0: int = 1) -> list[Token]:
    """Tokenize one physical line (comments already blanked)."""
    tokens: list[Token] = []
    i = 0
    while i < len(line):
        m = _TOKEN_RE.match(line, i)
        if m is None:
            raise CompileError(f"unexpected character '{line[i]}'", Pos(file, lineno, col0 + i))
        kind = m.lastgroup
        assert kind is not None  # every alternative of _TOKEN_RE is a named group
        text = m.group()
        if kind == "digraph":
            kind, text = OP, DIGRAPHS[text]
        elif kind == "id" and not text.isascii():
            _check_identifier(text, Pos(file, lineno, col0 + i))
        if kind != "ws":
            tokens.append(Token(_KINDS[kind], text, Pos(file, lineno, col0 + i)))
        i = m.end()
    return tokens


def _check_identifier(text: str, pos: Pos) -> None:
    """An identifier with characters beyond ASCII ('lokál'): each must be one Unicode allows in
    identifiers (XID_Start first, XID_Continue after, as clang requires), or it is an error at it."""
    for k, c in enumerate(text):
        if not (c if k == 0 else "a" + c).isidentifier():
            where = Pos(pos.file, pos.line, pos.col + k)
            if k == 0 and ("a" + c).isidentifier():
                raise CompileError(f"character <U+{ord(c):04X}> not allowed at the start of an identifier", where)
            if k == 0:
                raise CompileError(f"unexpected character <U+{ord(c):04X}> '{c}'", where)
            raise CompileError(f"character <U+{ord(c):04X}> not allowed in an identifier", where)
