"""An expression of the checked syntax tree written back as MSL source, for messages that quote
the learner's own code (a hint naming the subtraction that wrapped an index around)."""

from __future__ import annotations

from . import ast
from .ast import CastStyle

# Binding strength of C's binary operators, for parentheses when writing an expression back.
_PRECEDENCE = {"*": 10, "/": 10, "%": 10, "+": 9, "-": 9, "<<": 8, ">>": 8, "<": 7, "<=": 7, ">": 7, ">=": 7,
               "==": 6, "!=": 6, "&": 5, "^": 4, "|": 3, "&&": 2, "||": 1}


def unparse(e: ast.Expr) -> str | None:
    """The expression written back as MSL (implicit conversions left out), or None for forms a
    hint does not quote."""
    if isinstance(e, ast.IntLit):
        return (hex(e.value) if e.radix == 16 else str(e.value)) + e.suffix
    if isinstance(e, ast.FloatLit):
        return f"{e.value:g}{e.suffix}"
    if isinstance(e, ast.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, ast.Name):
        return e.ident
    if isinstance(e, ast.Member):
        base = unparse(e.base)
        return None if base is None else f"{base}{'->' if e.arrow else '.'}{e.name}"
    if isinstance(e, ast.Convert):
        return unparse(e.operand)
    if isinstance(e, ast.Cast):
        inner = unparse(e.operand)
        if inner is None:
            return None
        name = e.type_spec.name
        if e.style == CastStyle.C:  # '(T)x', and 'T(x)', which the parser records as the same cast
            return f"({name}){_wrap(e.operand, inner, 11)}"
        return f"{e.style}<{name}>({inner})"
    if isinstance(e, ast.Unary):
        inner = unparse(e.operand)
        return None if inner is None else f"{e.op}{_wrap(e.operand, inner, 11)}"
    if isinstance(e, ast.Binary):
        left, right = unparse(e.left), unparse(e.right)
        if left is None or right is None:
            return None
        p = _PRECEDENCE.get(e.op, 0)
        return f"{_wrap(e.left, left, p)} {e.op} {_wrap(e.right, right, p + 1)}"
    return None


def _wrap(e: ast.Expr, text: str, at_least: int) -> str:
    inner = e.operand if isinstance(e, ast.Convert) else e
    if isinstance(inner, ast.Binary) and _PRECEDENCE.get(inner.op, 0) < at_least:
        return f"({text})"
    if isinstance(inner, ast.Ternary):
        return f"({text})"
    return text


__all__ = ["unparse"]
