"""Numeric and character literals: their values and types as clang gives them, or clang's error.

Every malformed or out-of-range literal is a located ``CompileError`` (or, where clang only
warns, a ``CompileWarning`` and clang's value), never a Python exception from ``int``,
``float.fromhex`` or a codec.
"""

from __future__ import annotations

import math

import numpy as np

from ..lang.errors import CompileError, Pos, warn_compile
from . import ast
from .lexer import Token

#: Digits (leading zeros aside) that a literal of each radix needs for 2**64: one with more is too
#: large for any integer type, and reading it is refused before Python's int() (which refuses
#: decimal strings past 4,300 digits, and would spend time on huge ones) sees it.
_MAX_DIGITS = {2: 64, 8: 22, 10: 20, 16: 16}

_FLOAT_TYPES = {  # a floating literal's suffix: its type, whose limits clang's warnings print
    "": ("float", np.float32, "3.40282347E+38", "1.40129846E-45"),
    "f": ("float", np.float32, "3.40282347E+38", "1.40129846E-45"),
    "h": ("half", np.float16, "6.5504E+4", "5.96046448E-8"),
}

_SIMPLE_ESCAPES = {"n": 10, "t": 9, "v": 11, "b": 8, "r": 13, "f": 12, "a": 7, "\\": 92, "?": 63, "'": 39,
                   '"': 34, "e": 27, "E": 27}
_OCTAL = "01234567"
_HEX = "0123456789abcdefABCDEF"


def is_floating(number: str) -> bool:
    """Whether a numeric token spells a floating literal (``1.5``, ``1e3f``, ``0x1p-3``), not an integer."""
    lower = number.lower()
    if lower.startswith("0x"):
        return "p" in lower or "." in lower
    return "." in lower or "e" in lower.rstrip("fh")


def parse_number(t: Token) -> ast.Expr:
    """The literal a numeric token spells (``1``, ``0x1Fu``, ``1.5e3f``, ``0x1p-3h``, ``1'000``)."""
    text = t.text.replace("'", "")
    lower = text.lower()
    is_hex = lower.startswith("0x")
    if is_floating(t.text):
        return _float_literal(t, text, lower, is_hex)
    body = lower
    suffix = ""
    while body and body[-1] in "ul":
        suffix = body[-1] + suffix
        body = body[:-1]
    if suffix not in ("", "u", "l", "ul", "lu", "ll", "ull", "llu"):
        raise CompileError(f"invalid suffix '{suffix}' on integer constant", t.pos)
    if is_hex:
        digits, radix = body[2:], 16
    elif body.startswith("0b"):
        digits, radix = body[2:], 2
    elif len(body) > 1 and body.startswith("0"):
        digits, radix = body[1:], 8
    else:
        digits, radix = body, 10
    valid = "0123456789abcdef"[:radix]
    if not digits or any(c not in valid for c in digits):
        if lower.endswith("f") or lower.endswith("h"):
            raise CompileError(f"invalid digit in integer constant '{t.text}' (write {text[:-1]}.0{text[-1]} for a "
                               "floating constant)", t.pos)
        raise CompileError(f"invalid integer constant '{t.text}'", t.pos)
    if len(digits.lstrip("0")) > _MAX_DIGITS[radix] or int(digits, radix) >= 2**64:
        raise CompileError("integer literal is too large to be represented in any integer type", t.pos)
    return ast.IntLit(t.pos, int(digits, radix), suffix, radix)


def _float_literal(t: Token, text: str, lower: str, is_hex: bool) -> ast.FloatLit:
    suffix = ""
    while lower and lower[-1] in "fh" and not (is_hex and "p" not in lower):
        suffix = lower[-1] + suffix
        lower = lower[:-1]
        text = text[:-1]
    if len(suffix) > 1:
        raise CompileError(f"invalid suffix '{suffix}' on floating constant", t.pos)
    try:
        value = float.fromhex(text) if is_hex else float(text)
    except ValueError:
        raise CompileError(f"invalid floating constant '{t.text}'", t.pos) from None
    except OverflowError:  # float.fromhex past double's range; float() gives an infinity instead
        value = math.inf
    name, dtype, largest, smallest = _FLOAT_TYPES[suffix]
    with np.errstate(over="ignore", under="ignore"):
        rounded = float(np.array(value).astype(dtype))
    if math.isinf(rounded):
        # clang warns (-Wliteral-range) and the constant is an infinity.
        warn_compile(f"magnitude of floating-point constant too large for type '{name}'; maximum is {largest}",
                     t.pos)
        value = math.inf
    elif rounded == 0.0 and value != 0.0:
        warn_compile(f"magnitude of floating-point constant too small for type '{name}'; minimum is {smallest}",
                     t.pos)
    return ast.FloatLit(t.pos, value, suffix)


def parse_char(t: Token) -> ast.IntLit:
    """An ordinary character literal. One character is a ``char`` (signed, as on Apple GPUs); more
    are a multi-character constant, an ``int`` of the last four bytes, with clang's warning."""
    units = _char_units(t.text[1:-1], t.pos)
    if not units:
        raise CompileError("empty character constant", t.pos)
    if len(units) == 1:
        value = units[0]
        return ast.IntLit(t.pos, value - 256 if value >= 128 else value, "", 0)
    if len(units) > 4:
        warn_compile("character constant too long for its type", t.pos)
    elif len(units) < 4:  # four is a warning clang leaves off by default (-Wfour-char-constants)
        warn_compile("multi-character character constant", t.pos)
    value = 0
    for unit in units[-4:]:
        value = (value << 8) | unit
    return ast.IntLit(t.pos, value - 2**32 if value >= 2**31 else value, "", 10)


def _char_units(body: str, pos: Pos) -> list[int]:
    """The bytes a character literal's text stands for, escapes decoded as clang decodes them."""
    units: list[int] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            units.extend(c.encode("utf-8", "surrogatepass"))
            i += 1
            continue
        at = Pos(pos.file, pos.line, pos.col + 1 + i)
        if i + 1 >= len(body):
            raise CompileError("incomplete escape sequence", at)
        e = body[i + 1]
        i += 2
        if e in _SIMPLE_ESCAPES:
            units.append(_SIMPLE_ESCAPES[e])
        elif e in _OCTAL:
            j = i
            while j < len(body) and j < i + 2 and body[j] in _OCTAL:
                j += 1
            value = int(e + body[i:j], 8)
            if value > 255:
                raise CompileError("octal escape sequence out of range", at)
            units.append(value)
            i = j
        elif e == "x":
            j = i
            while j < len(body) and body[j] in _HEX:
                j += 1
            if j == i:
                raise CompileError("\\x used with no following hex digits", at)
            if len(body[i:j].lstrip("0")) > 2:
                raise CompileError("hex escape sequence out of range", at)
            units.append(int(body[i:j], 16))
            i = j
        elif e in "uU":
            width = 4 if e == "u" else 8
            digits = body[i:i + width]
            if len(digits) < width or any(d not in _HEX for d in digits):
                raise CompileError(f"incomplete universal character name (\\{e} takes {width} hex digits)", at)
            code = int(digits, 16)
            if code > 0x7F:
                raise CompileError("character too large for enclosing character literal type", at)
            units.append(code)
            i += width
        else:
            warn_compile(f"unknown escape sequence '\\{e}'", at)
            units.extend(e.encode("utf-8", "surrogatepass"))
    return units
