"""Operators compiled: unary and binary arithmetic (counted in the cost model's variant),
increments, assignments, '&&' and '||' (the right side only for the lanes that need it), '?:'
(each side for its own lanes), the comma, and pointer arithmetic."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...front import ast
from ...front.ast import BinaryOp, UnaryOp
from ...lang.errors import CompileError, KernelRuntimeError, Pos
from ...lang.lane_values import cast, round_bfloat, type_ndim
from ...lang.types import (
    BFLOAT,
    ArrayType,
    MatrixType,
    PointerType,
    ScalarType,
    VectorType,
    units_in,
)
from .. import matrix_arithmetic
from ..memory import Ptr, view_of
from ..runtime import Ctx
from .arithmetic import arith_fn, binary_op
from .codegen_state import CodeGenPart
from .interfaces import Fn
from .locations import MemLoc
from .masks import Mask, and_mask, andnot_mask, empty, merge_ptr
from .pointers import deref

#: The prefix operators that are one NumPy function of the operand's value ('+' is the value itself).
_UNARY_UFUNCS: dict[UnaryOp, np.ufunc] = {UnaryOp.NEG: np.negative, UnaryOp.BIT_NOT: np.invert,
                                          UnaryOp.NOT: np.logical_not}


class Operators(CodeGenPart):
    def x_Unary(self, e: ast.Unary) -> Fn:
        op = e.op
        if op.is_increment:
            return self.incdec(e.operand, op, prefix=True, pos=e.pos)
        if op == UnaryOp.ADDRESS:
            lv = self.gen.places.lvalue(e.operand)

            def address(c: Ctx, m: Mask) -> Any:
                loc = lv(c, m)
                if not isinstance(loc, MemLoc):
                    raise KernelRuntimeError("cannot take the address of this value", e.pos)
                return Ptr(loc.mem, loc.off)
            return address
        if op == UnaryOp.DEREF:
            ptr = self.gen.exprs.expr(e.operand)
            ty = e.ty
            pos = e.pos
            if isinstance(ty, ArrayType):
                return ptr
            view = view_of(ty)
            return lambda c, m: deref(c, ptr(c, m), m, view, pos)
        f = self.gen.exprs.expr(e.operand)
        if op == UnaryOp.PLUS:
            return f
        if op not in _UNARY_UFUNCS:
            raise CompileError(f"unsupported operator '{op}'", e.pos)
        ufunc = _UNARY_UFUNCS[op]
        return lambda c, m: ufunc(f(c, m))

    def x_Postfix(self, e: ast.Postfix) -> Fn:
        return self.incdec(e.operand, e.op, prefix=False, pos=e.pos)

    def incdec(self, target: ast.Expr, op: UnaryOp, prefix: bool, pos: Pos) -> Fn:
        """'++' or '--' on ``target``, giving the new value (prefix) or the old one."""
        lv = self.gen.places.lvalue(target)
        ty = target.ty
        if isinstance(ty, PointerType):
            stride = units_in(ty.pointee)
            delta = np.int64(stride if op == UnaryOp.INC else -stride)

            def ptr_step(c: Ctx, m: Mask) -> Any:
                loc = lv(c, m)
                old = loc.load(c, m)
                new = old.moved(delta)
                loc.store(c, new, m)
                return new if prefix else old
            return ptr_step
        elem = ty.elem if isinstance(ty, VectorType) else ty
        one = elem.dtype.type(1)
        f = np.add if op == UnaryOp.INC else np.subtract
        rnd = round_bfloat if elem == BFLOAT else None

        def step(c: Ctx, m: Mask) -> Any:
            loc = lv(c, m)
            old = loc.load(c, m)
            new = f(old, one)
            if rnd is not None:
                new = rnd(new)
            loc.store(c, new, m)
            return new if prefix else old
        return self.gen.binary_counted(step, BinaryOp.ADD, ty, pos)

    def x_Binary(self, e: ast.Binary) -> Fn:
        op = e.op
        if op.is_logical:
            return self._logical(e)
        lt, rt = e.left.ty, e.right.ty
        if isinstance(lt, PointerType) or isinstance(rt, PointerType):
            return self._pointer_binary(e)
        a, b = self.gen.exprs.expr(e.left), self.gen.exprs.expr(e.right)
        if e.matrix_op is not None:
            mf = matrix_arithmetic.binary(e.matrix_op, op)
            return lambda c, m: mf(a(c, m), b(c, m))
        f = binary_op(op, e.op_ty, e.pos)
        return self.gen.binary_counted(lambda c, m: f(c, m, a(c, m), b(c, m)), op, e.op_ty, e.pos, e.right)

    def _logical(self, e: ast.Binary) -> Fn:
        a, b = self.gen.exprs.expr(e.left), self.gen.exprs.expr(e.right)
        is_and = e.op == BinaryOp.LOGICAL_AND

        def logical(c: Ctx, m: Mask) -> Any:
            x = a(c, m)
            if np.ndim(x) == 0:
                if bool(x) != is_and:
                    return np.bool_(not is_and)
                return b(c, m)
            sub = and_mask(c, m, x) if is_and else andnot_mask(c, m, x)
            if empty(sub):
                return x
            y = b(c, sub)
            if is_and:
                return x & y
            return x | y
        return logical

    def _pointer_binary(self, e: ast.Binary) -> Fn:
        a, b = self.gen.exprs.expr(e.left), self.gen.exprs.expr(e.right)
        op = e.op
        if isinstance(e.ty, PointerType):
            stride = np.int64(units_in(e.ty.pointee))
            sign = -1 if op == BinaryOp.SUB else 1

            def ptr_add(c: Ctx, m: Mask) -> Any:
                p = a(c, m)
                k = b(c, m)
                return p.moved(sign * np.asarray(k, dtype=np.int64) * stride)
            return ptr_add
        stride = np.int64(units_in(e.left.ty.pointee))
        if op == BinaryOp.SUB:
            return lambda c, m: (a(c, m).off - b(c, m).off) // stride
        f = arith_fn(op, ScalarType("long", "int", 64, True, 4))
        return lambda c, m: f(a(c, m).off, b(c, m).off)

    def x_Assign(self, e: ast.Assign) -> Fn:
        lv = self.gen.places.lvalue(e.target)
        val = self.gen.exprs.expr(e.value)
        tt = e.target.ty
        op = e.op.binary
        if op is None or isinstance(tt, MatrixType):  # a matrix's 'a op= b': the checker made the value 'a op b'
            def assign(c: Ctx, m: Mask) -> Any:
                v = val(c, m)
                lv(c, m).store(c, v, m)
                return v
            return assign
        if isinstance(tt, PointerType):
            stride = np.int64(units_in(tt.pointee))
            sign = -1 if op == BinaryOp.SUB else 1

            def ptr_compound(c: Ctx, m: Mask) -> Any:
                loc = lv(c, m)
                p = loc.load(c, m)
                new = p.moved(sign * np.asarray(val(c, m), dtype=np.int64) * stride)
                loc.store(c, new, m)
                return new
            return ptr_compound
        op_ty = e.op_ty
        f = binary_op(op, op_ty, e.pos)
        cur_t = tt
        rhs_t = e.value.ty
        shift = op.is_shift

        def compound(c: Ctx, m: Mask) -> Any:
            loc = lv(c, m)
            cur = loc.load(c, m)
            rhs = val(c, m)
            res = f(c, m, cast(cur, cur_t, op_ty), rhs if shift else cast(rhs, rhs_t, op_ty))
            new = cast(res, op_ty, cur_t)
            loc.store(c, new, m)
            return new
        return self.gen.binary_counted(compound, op, op_ty, e.pos, e.value)

    def x_Ternary(self, e: ast.Ternary) -> Fn:
        cond, a, b = self.gen.exprs.expr(e.cond), self.gen.exprs.expr(e.then), self.gen.exprs.expr(e.other)
        vec = type_ndim(e.ty)

        def ternary(c: Ctx, m: Mask) -> Any:
            k = cond(c, m)
            if np.ndim(k) == 0:
                return a(c, m) if k else b(c, m)
            mt = and_mask(c, m, k)
            mf = andnot_mask(c, m, k)
            if empty(mf):
                return a(c, mt)
            if empty(mt):
                return b(c, mf)
            x, y = a(c, mt), b(c, mf)
            if isinstance(x, Ptr):
                return merge_ptr(k, x, y)
            return np.where(k.reshape(k.shape + (1,) * vec) if vec else k, x, y)
        return ternary

    def x_Comma(self, e: ast.Comma) -> Fn:
        fns = [self.gen.exprs.expr(x) for x in e.exprs]

        def comma(c: Ctx, m: Mask) -> Any:
            v = None
            for f in fns:
                v = f(c, m)
            return v
        return comma


#: The operator nodes this part compiles, each to its handler (``CodeGen`` joins the parts' tables and binds
#: them to its parts; the joined table is checked complete when the package is imported).
EXPRESSION_HANDLERS: dict[type[ast.Expr], Callable[[Operators, Any], Fn]] = {
    ast.Unary: Operators.x_Unary, ast.Postfix: Operators.x_Postfix, ast.Binary: Operators.x_Binary,
    ast.Assign: Operators.x_Assign, ast.Ternary: Operators.x_Ternary, ast.Comma: Operators.x_Comma,
}
