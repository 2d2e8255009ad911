"""Compile-time evaluation of integral constant expressions: #if conditions, array sizes,
template value arguments and `constant` globals used as sizes."""

from __future__ import annotations

from collections.abc import Callable

from ..lang.errors import CompileError, Pos
from ..lang.types import ScalarType
from . import ast
from .lexer import Token
from .parser import Parser


class NotConstant(Exception):
    """The expression depends on something only known at run time."""


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def evaluate(expr: ast.Expr, lookup: Callable[..., object] | None = None,
             size_of: Callable[[ast.SizeOf], int] | None = None,
             call: Callable[[ast.Call], object] | None = None) -> int | float | bool:
    """Evaluate an integral (or float) constant expression over Python numbers.

    Only used where C requires a constant (sizes, #if), so the values are small and the
    subtleties of wrap-around do not arise; the runtime executor handles those. ``lookup(name,
    pos)`` gives a name's value; a name with template arguments (``is_same_v<T, float>``) is
    looked up as ``lookup(name, pos, template_args)``. ``size_of`` gives a ``sizeof``'s value
    (it needs the types, which only the checker knows), ``call`` a call of a ``constexpr``
    function.
    """
    ev = lambda e: evaluate(e, lookup, size_of, call)  # noqa: E731
    if isinstance(expr, ast.IntLit):
        return expr.value
    if isinstance(expr, ast.FloatLit):
        return expr.value
    if isinstance(expr, ast.BoolLit):
        return int(expr.value)
    if isinstance(expr, ast.Name):
        if lookup is None:
            raise NotConstant(expr.ident)
        if expr.template_args is not None:
            return lookup(expr.ident, expr.pos, expr.template_args)
        return lookup(expr.ident, expr.pos)
    if isinstance(expr, ast.Unary):
        v = ev(expr.operand)
        ops = {"-": lambda x: -x, "+": lambda x: x, "!": lambda x: int(not x), "~": lambda x: ~int(x)}
        if expr.op not in ops:
            raise NotConstant(expr.op)
        return ops[expr.op](v)
    if isinstance(expr, ast.Binary):
        if expr.op == "&&":
            return int(bool(ev(expr.left)) and bool(ev(expr.right)))
        if expr.op == "||":
            return int(bool(ev(expr.left)) or bool(ev(expr.right)))
        a, b = ev(expr.left), ev(expr.right)
        if expr.op in ("/", "%"):
            if b == 0:
                raise CompileError("division by zero in a constant expression", expr.pos)
            if isinstance(a, float) or isinstance(b, float):
                return a / b
            return _c_div(a, b) if expr.op == "/" else a - _c_div(a, b) * b
        table = {
            "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
            "<<": lambda: int(a) << int(b), ">>": lambda: int(a) >> int(b),
            "&": lambda: int(a) & int(b), "|": lambda: int(a) | int(b), "^": lambda: int(a) ^ int(b),
            "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
            ">": lambda: int(a > b), "<=": lambda: int(a <= b), ">=": lambda: int(a >= b),
        }
        return table[expr.op]()
    if isinstance(expr, ast.Ternary):
        return ev(expr.then) if ev(expr.cond) else ev(expr.other)
    if isinstance(expr, ast.Cast | ast.Construct):
        operand = expr.operand if isinstance(expr, ast.Cast) else (expr.args[0] if len(expr.args) == 1 else None)
        if operand is None:
            raise NotConstant("constructor")
        v = ev(operand)
        if isinstance(expr.ty, ScalarType):  # checked: the type as resolved ('T(x)' in a template)
            return float(v) if expr.ty.is_float else int(v)
        name = expr.type_spec.name
        if name in ("float", "half", "bfloat"):
            return float(v)
        return int(v)
    if isinstance(expr, ast.Convert):
        return ev(expr.operand)
    if isinstance(expr, ast.SizeOf) and size_of is not None:
        return size_of(expr)
    if isinstance(expr, ast.Call) and call is not None:
        return call(expr)
    raise NotConstant(type(expr).__name__)


def eval_preprocessor_expression(tokens: list[Token], pos: Pos) -> int:
    if not tokens:
        raise CompileError("#if with no expression", pos)
    p = Parser(tokens)
    expr = p.parse_expression()
    if p.tok.kind != "eof":
        raise CompileError(f"unexpected '{p.tok.text}' in preprocessor expression", p.tok.pos)
    try:
        return int(evaluate(expr))
    except NotConstant:
        raise CompileError("invalid preprocessor expression", pos) from None
