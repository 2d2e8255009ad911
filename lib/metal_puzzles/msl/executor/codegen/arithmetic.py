"""C's arithmetic on lane values: binary operators in the operands' common type (integer
division by zero reported, shift counts masked as the GPU does, bfloat rounded), and
``as_type`` reinterpreting bits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...findings.finding import FindingKind
from ...findings.registry import kind_entry
from ...front import ast
from ...front.ast import BinaryOp
from ...front.symbols import VarKind
from ...lang.errors import Pos
from ...lang.lane_values import c_divmod, round_bfloat
from ...lang.types import BFLOAT, BOOL, ScalarType, Type, VectorType
from ..runtime import Ctx
from .masks import Mask


def _scalar(ty: Type) -> ScalarType:
    """The scalar type of a scalar or of a vector's components."""
    return ty.elem if isinstance(ty, VectorType) else cast(ScalarType, ty)


#: Each arithmetic, bitwise and comparison operator as one NumPy function (the division and
#: remainder of integers, and the shifts, are ``binary_op``'s own).
_UFUNCS: dict[BinaryOp, np.ufunc] = {
    BinaryOp.ADD: np.add, BinaryOp.SUB: np.subtract, BinaryOp.MUL: np.multiply, BinaryOp.DIV: np.divide,
    BinaryOp.BIT_AND: np.bitwise_and, BinaryOp.BIT_OR: np.bitwise_or, BinaryOp.BIT_XOR: np.bitwise_xor,
    BinaryOp.EQ: np.equal, BinaryOp.NE: np.not_equal, BinaryOp.LT: np.less, BinaryOp.GT: np.greater,
    BinaryOp.LE: np.less_equal, BinaryOp.GE: np.greater_equal,
}
#: '&', '|' and '^' on bools are logical.
_BOOL_UFUNCS: dict[BinaryOp, np.ufunc] = {
    BinaryOp.BIT_AND: np.logical_and, BinaryOp.BIT_OR: np.logical_or, BinaryOp.BIT_XOR: np.logical_xor}
#: The operators whose bfloat result is rounded to bfloat (comparisons give bools).
_ROUNDED = frozenset({BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL, BinaryOp.DIV})


def arith_fn(op: BinaryOp, ty: Type) -> Callable[[Any, Any], Any]:
    """The NumPy function computing ``x op y`` for operands of type ``ty`` (no checks)."""
    elem = _scalar(ty)
    if elem == BOOL and op.is_bitwise:
        return _BOOL_UFUNCS[op]
    f = _UFUNCS[op]
    if elem == BFLOAT and op in _ROUNDED:
        return lambda a, b: round_bfloat(f(a, b))
    return f


def binary_op(op: BinaryOp, ty: Type, pos: Pos) -> Callable[[Ctx, Mask, Any, Any], Any]:
    """f(ctx, mask, x, y) computing 'x op y' in type ty (both operands already converted)."""
    elem = _scalar(ty)
    if op in (BinaryOp.DIV, BinaryOp.MOD) and elem.is_int:
        def intdiv(c: Ctx, m: Mask, x: Any, y: Any) -> Any:
            out, zero_b = c_divmod(x, y, op)
            if np.any(zero_b):
                zb = np.any(zero_b, axis=-1) if np.ndim(zero_b) > 1 or (isinstance(ty, VectorType) and np.ndim(zero_b) == 1) else zero_b
                _report_div_zero(c, m, zb, pos, op)
            return out
        return intdiv
    if op.is_shift:
        left_dtype = elem.dtype
        mask_bits = np.int64(elem.bits - 1)
        sh = np.left_shift if op == BinaryOp.SHL else np.right_shift

        def shift(c: Ctx, m: Mask, x: Any, y: Any) -> Any:
            s = (np.asarray(y).astype(np.int64) & mask_bits).astype(left_dtype)
            r = sh(x, s)
            return r.astype(left_dtype) if np.ndim(r) else left_dtype.type(r)
        return shift
    f = arith_fn(op, ty)
    return lambda c, m, x, y: f(x, y)


def _report_div_zero(c: Ctx, m: Mask, zero_b: Any, pos: Pos, op: BinaryOp) -> None:
    lanes = zero_b if m is None else (np.broadcast_to(zero_b, (c.n,)) & m)
    if np.ndim(lanes) == 0:
        lanes = c.full() if (lanes and m is None) else (m if lanes else None)
    if lanes is not None and np.any(lanes):
        lane = int(np.flatnonzero(lanes)[0])
        what = "division" if op == BinaryOp.DIV else "remainder"
        c.report(FindingKind.DIVISION_BY_ZERO, pos, lanes, f"{c.lanes.label(lane)} computes an integer {what} by zero "
                 f"(undefined on the GPU; the simulator uses 0): {kind_entry(FindingKind.DIVISION_BY_ZERO).fix}")


def constant_int(e: ast.Expr | None) -> int | None:
    """The value of an integer literal or named integer constant (through conversions), else None."""
    while isinstance(e, ast.Convert | ast.Cast):
        e = e.operand
    if isinstance(e, ast.IntLit):
        return e.value
    if isinstance(e, ast.Name) and e.symbol is not None and e.symbol.kind == VarKind.CONST:
        v = e.symbol.const_value
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    return None


def bitcast(v: Any, src: Type, dst: Type) -> Any:
    """``as_type<dst>(v)``: the bits of ``v`` (of type ``src``, per lane or uniform) read as ``dst``."""
    s_elem = _scalar(src)
    d_elem = _scalar(dst)
    a = np.asarray(v)
    if s_elem == BFLOAT:
        a = (a.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    s_n = src.n if isinstance(src, VectorType) else 1
    d_n = dst.n if isinstance(dst, VectorType) else 1
    lanes = a.shape[0] if a.ndim > (1 if s_n > 1 else 0) else None
    a = np.ascontiguousarray(a.reshape((lanes if lanes is not None else 1), s_n))
    target = np.uint16 if d_elem == BFLOAT else d_elem.dtype
    out: np.ndarray = a.view(target).reshape((lanes if lanes is not None else 1), d_n)
    if d_elem == BFLOAT:
        out = (out.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if d_n == 1:
        out = out[:, 0]
    if lanes is None:
        out = out[0]
        return out if d_n > 1 else out[()]
    return out
