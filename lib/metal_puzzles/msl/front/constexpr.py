"""Compile-time evaluation of constant expressions: #if conditions, array sizes, template value
arguments, `constant` globals and `constexpr` values. A checked expression folds in its own C
types (float arithmetic rounds to float, conversions wrap and truncate, `as_type` reinterprets
bits), as clang folds it; an unchecked one (#if, a size) folds over Python integers."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeGuard

import numpy as np

from ..lang.errors import CompileError, Pos, warn_compile
from ..lang.lane_values import round_bfloat
from ..lang.types import BFLOAT, BOOL, FLOAT, ScalarType, Type
from . import ast
from .ast import BinaryOp, CastStyle, UnaryOp
from .lexer import EOF, NUM, Token
from .literals import is_floating
from .parser import Parser


class NotConstant(Exception):
    """The expression depends on something only known at run time."""


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _is_float(ty: Type | None) -> TypeGuard[ScalarType]:
    return isinstance(ty, ScalarType) and ty.is_float


def _typed(value: float, ty: Type | None) -> float:
    """A float value rounded to the float type of the expression it is (unchecked: as it is)."""
    if not _is_float(ty):
        return value
    with np.errstate(all="ignore"):  # 1e39f is an infinity in float, as clang folds it
        x = np.float64(value).astype(np.float32 if ty in (FLOAT, BFLOAT) else ty.dtype)
    return float(round_bfloat(x) if ty == BFLOAT else x)


def _converted(value: int | float, src: ScalarType, dst: ScalarType) -> int | float:
    """C's conversion of a folded value: to a float type it rounds, to an integer type a float
    truncates and an integer wraps to the type's width."""
    if dst.is_float:
        return _typed(float(value), dst)
    if dst == BOOL:
        return int(value != 0)
    if src.is_float:
        if not math.isfinite(value):
            raise NotConstant("an infinity or NaN converted to an integer")  # undefined in C
        value = math.trunc(value)
    v = int(value) & ((1 << dst.bits) - 1)
    return v - (1 << dst.bits) if dst.signed and v >= 1 << (dst.bits - 1) else v


def _integer(value: int | float, expr: ast.Unary | ast.Binary) -> int:
    """An operand of ``~ & | ^ << >>``, which C defines on integers alone ('1 << NAN' as an array
    size raised ValueError)."""
    if isinstance(value, float):
        raise CompileError(f"invalid operands to '{expr.op}': a floating-point value where an integer is needed",
                           expr.pos)
    return int(value)


def _truncated(value: int | float) -> int:
    """A value converted to an integer: an infinity or a NaN has none (undefined in C, so not a
    constant: '(int)NAN' as an array size is an error, not a Python ValueError)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise NotConstant("an infinity or NaN converted to an integer")
    return int(value)


def _reinterpret(value: int | float, src: Type | None, dst: Type | None) -> int | float:
    """``as_type<dst>(value)``: the same bits read as another type of the same size."""
    if not (isinstance(src, ScalarType) and isinstance(dst, ScalarType)) or BFLOAT in (src, dst) \
            or src.size != dst.size:
        raise NotConstant("as_type")
    bits = np.asarray(value).astype(src.dtype).view(dst.dtype)
    return float(bits) if dst.is_float else int(bits)


#: Bits of the widest integer a constant expression has (long, and #if's intmax_t).
_WIDEST_BITS = 64


def _shift(expr: ast.Binary, a: int, count: int, preprocessor: bool) -> int:
    """``a << count`` or ``a >> count`` folded. A count that is negative or not less than the width
    is undefined in C: in #if clang folds it as its 64-bit arithmetic does (``<<`` gives 0, ``>>``
    shifts by 63) and warns; in a C++ constant expression it is an error, as in clang."""
    if 0 <= count < _WIDEST_BITS:
        return a << count if expr.op == BinaryOp.SHL else a >> count
    if not preprocessor:
        problem = "is negative" if count < 0 else f">= width of type ({count} >= {_WIDEST_BITS} bits)"
        raise CompileError(f"shift count {problem} in a constant expression", expr.pos)
    warn_compile("integer overflow in preprocessor expression", expr.pos)
    return 0 if expr.op == BinaryOp.SHL else a >> (_WIDEST_BITS - 1)


def evaluate(expr: ast.Expr, lookup: Callable[..., int | float | bool] | None = None,
             size_of: Callable[[ast.SizeOf], int] | None = None,
             call: Callable[[ast.Call | ast.Construct], int | float | bool] | None = None,
             preprocessor: bool = False) -> int | float | bool:
    """Evaluate an integral (or float) constant expression over Python numbers.

    Only used where C requires a constant (sizes, #if), so the values are small and the
    subtleties of wrap-around do not arise; the runtime executor handles those. ``lookup(name,
    pos)`` gives a name's value; a name with template arguments (``is_same_v<T, float>``) is
    looked up as ``lookup(name, pos, template_args)``. ``size_of`` gives a ``sizeof``'s value
    (it needs the types, which only the checker knows), ``call`` a call of a ``constexpr``
    function. ``preprocessor``: an #if condition, whose out-of-range shifts clang folds with a
    warning (a C++ constant expression's are errors).
    """
    ev = lambda e: evaluate(e, lookup, size_of, call, preprocessor)  # noqa: E731
    if isinstance(expr, ast.IntLit):
        return expr.value
    if isinstance(expr, ast.FloatLit):
        return _typed(expr.value, expr.ty)
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
        ops = {UnaryOp.NEG: lambda x: -x, UnaryOp.PLUS: lambda x: x, UnaryOp.NOT: lambda x: int(not x),
               UnaryOp.BIT_NOT: lambda x: ~_integer(x, expr)}
        if expr.op not in ops:
            raise NotConstant(expr.op)
        return ops[expr.op](v)
    if isinstance(expr, ast.Binary):
        if expr.op == BinaryOp.LOGICAL_AND:
            return int(bool(ev(expr.left)) and bool(ev(expr.right)))
        if expr.op == BinaryOp.LOGICAL_OR:
            return int(bool(ev(expr.left)) or bool(ev(expr.right)))
        a, b = ev(expr.left), ev(expr.right)
        if expr.op == BinaryOp.DIV and _is_float(expr.ty):  # IEEE division: x / 0 is an infinity or NaN
            with np.errstate(all="ignore"):
                return _typed(float(np.float64(a) / np.float64(b)), expr.ty)
        if expr.op in (BinaryOp.DIV, BinaryOp.MOD):
            if b == 0:
                raise CompileError("division by zero in a constant expression", expr.pos)
            if isinstance(a, float) or isinstance(b, float):
                return a / b
            return _c_div(a, b) if expr.op == BinaryOp.DIV else a - _c_div(a, b) * b
        table = {
            BinaryOp.ADD: lambda: a + b, BinaryOp.SUB: lambda: a - b, BinaryOp.MUL: lambda: a * b,
            BinaryOp.SHL: lambda: _shift(expr, _integer(a, expr), _integer(b, expr), preprocessor),
            BinaryOp.SHR: lambda: _shift(expr, _integer(a, expr), _integer(b, expr), preprocessor),
            BinaryOp.BIT_AND: lambda: _integer(a, expr) & _integer(b, expr),
            BinaryOp.BIT_OR: lambda: _integer(a, expr) | _integer(b, expr),
            BinaryOp.BIT_XOR: lambda: _integer(a, expr) ^ _integer(b, expr),
            BinaryOp.EQ: lambda: int(a == b), BinaryOp.NE: lambda: int(a != b), BinaryOp.LT: lambda: int(a < b),
            BinaryOp.GT: lambda: int(a > b), BinaryOp.LE: lambda: int(a <= b), BinaryOp.GE: lambda: int(a >= b),
        }
        if _is_float(expr.ty) and expr.op in (BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL):
            # In the expression's own type: float arithmetic rounds every result to float (exact
            # in double first, so one rounding gives the float result).
            with np.errstate(all="ignore"):
                x, y = np.float64(a), np.float64(b)
                value = {BinaryOp.ADD: x + y, BinaryOp.SUB: x - y, BinaryOp.MUL: x * y}[expr.op]
            return _typed(float(value), expr.ty)
        return table[expr.op]()
    if isinstance(expr, ast.Ternary):
        return ev(expr.then) if ev(expr.cond) else ev(expr.other)
    if isinstance(expr, ast.Construct) and expr.type_spec.member:
        if call is None:
            raise NotConstant("call")
        return call(expr)  # 'Max<T>::size()': a static member function of a struct template's instance
    if isinstance(expr, ast.Cast | ast.Construct):
        operand = expr.operand if isinstance(expr, ast.Cast) else (expr.args[0] if len(expr.args) == 1 else None)
        if operand is None:
            raise NotConstant("constructor")
        v = ev(operand)
        if isinstance(expr, ast.Cast) and expr.style == CastStyle.AS_TYPE:
            return _reinterpret(v, operand.ty, expr.ty)
        if isinstance(expr.ty, ScalarType) and isinstance(operand.ty, ScalarType):  # checked: C's conversion
            return _converted(v, operand.ty, expr.ty)
        if isinstance(expr.ty, ScalarType):  # the type as resolved ('T(x)' in a template)
            return float(v) if expr.ty.is_float else _truncated(v)
        name = expr.type_spec.name
        if name in ("float", "half", "bfloat"):
            return float(v)
        return _truncated(v)
    if isinstance(expr, ast.Convert):
        v = ev(expr.operand)
        if isinstance(expr.ty, ScalarType) and isinstance(expr.operand.ty, ScalarType):
            return _converted(v, expr.operand.ty, expr.ty)
        return v
    if isinstance(expr, ast.SizeOf) and size_of is not None:
        return size_of(expr)
    if isinstance(expr, ast.Call) and call is not None:
        return call(expr)
    raise NotConstant(type(expr).__name__)


def eval_preprocessor_expression(tokens: list[Token], pos: Pos) -> int:
    if not tokens:
        raise CompileError("#if with no expression", pos)
    # #if computes in intmax_t alone. A floating literal is refused before its value is read (as
    # clang does), so a too large one ('#if 1e999f') is not also warned about.
    floating = next((t for t in tokens if t.kind == NUM and is_floating(t.text)), None)
    if floating is not None:
        raise CompileError("floating point literal in preprocessor expression", floating.pos)
    p = Parser(tokens)
    expr = p.parse_expression()
    if p.tok.kind != EOF:
        raise CompileError(f"unexpected '{p.tok.text}' in preprocessor expression", p.tok.pos)
    try:
        return int(evaluate(expr, preprocessor=True))
    except NotConstant:
        raise CompileError("invalid preprocessor expression", pos) from None
