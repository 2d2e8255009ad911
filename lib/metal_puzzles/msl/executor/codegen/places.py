"""Lvalues compiled: ``f(ctx, mask) -> location`` (see ``locations``) for what can be assigned,
bound to a reference or have its address taken: variables, elements, dereferences, struct
members, vector components and matrix columns."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...findings.advice import wraparound_explainer
from ...findings.modes import SanitizeMode
from ...front import ast
from ...front.ast import ConvertKind
from ...front.symbols import FuncInstance, Var, VarKind
from ...lang.errors import CompileError, KernelRuntimeError
from ...lang.lane_values import type_ndim
from ...lang.types import ArrayType, MatrixType, unit_of, units_in
from ..memory import SplitPtr, view_of
from ..runtime import Ctx
from .codegen_state import CodeGenPart, slot_of
from .interfaces import Fn
from .locations import ColumnLoc, CompLoc, MemLoc, SlotLoc, temporary_object
from .masks import Mask
from .pointers import member_offset, pointee
from .subscript_checks import check_subscript, checked_component


class Places(CodeGenPart):
    def lvalue(self, e: ast.Expr) -> Fn:
        if isinstance(e, ast.Name):
            return self._name_loc(e)
        if isinstance(e, ast.TemporaryObject):  # 'P(1, 2).a', 'P(1, 2).get()': the temporary itself
            return self._temporary_loc(e)
        if isinstance(e, ast.Index) and e.matrix_index:
            return self.column_loc(e)
        if isinstance(e, ast.Index):
            return self._element_loc(e)
        if isinstance(e, ast.Unary) and e.op == ast.UnaryOp.DEREF:
            return self._deref_loc(e)
        if isinstance(e, ast.Member) and e.field is not None:
            return self._member_loc(e)
        if isinstance(e, ast.Member):
            base = self.lvalue(e.base)
            comps = e.comps
            single = len(comps) == 1
            key = comps[0] if single else np.array(comps)
            return lambda c, m: CompLoc(base(c, m), key, single)
        if isinstance(e, ast.Convert) and e.kind in (ConvertKind.LOAD, ConvertKind.DECAY, ConvertKind.PTR):
            return self.lvalue(e.operand)
        if isinstance(e, ast.Call) and isinstance(e.target, FuncInstance) and e.target.ret_ref:
            return self.gen.calls.call_function(e, e.target)  # the object the returned reference designates
        if isinstance(e, ast.Call) and e.lvalue:  # m.thread_elements(): this thread's part of the matrix
            return self.lvalue(e.args[0])
        raise CompileError("expression is not assignable", e.pos)

    def _name_loc(self, e: ast.Name) -> Fn:
        sym: Var = e.symbol
        if sym.kind in (VarKind.LOCAL, VarKind.ARRAY):
            k = slot_of(sym)
            vec = type_ndim(sym.ty)
            if sym.maybe_uninit:
                name, pos = sym.name, e.pos
                return lambda c, m: SlotLoc(c.slots, k, vec, pos, name)
            return lambda c, m: SlotLoc(c.slots, k, vec)
        if sym.kind == VarKind.REF:
            k = slot_of(sym)
            return lambda c, m: c.slots[k]
        if sym.kind in (VarKind.TGVAR, VarKind.MEMVAR):
            k = slot_of(sym)
            view = view_of(sym.ty)
            ty = sym.ty
            return lambda c, m: MemLoc(c.slots[k].mem, c.slots[k].off, view, e.pos, ty)
        if sym.kind == VarKind.SCALAR_INPUT:
            name = sym.name
            view = view_of(sym.ty)
            return lambda c, m: MemLoc(c.memories[name], np.int64(0), view, e.pos, sym.ty)
        raise CompileError(f"'{sym.name}' is not assignable", e.pos)

    def _temporary_loc(self, e: ast.TemporaryObject) -> Fn:
        return temporary_object(e, self.gen.exprs.expr(e.construct), self.lvalue(e.value))

    def _element_loc(self, e: ast.Index) -> Fn:
        """An element of an array or pointer, or a component of a vector."""
        pos = e.pos
        if e.vector_index:
            base = self.lvalue(e.base)
            idx = self.gen.exprs.expr(e.index)
            n = e.base.ty.n

            def vloc(c: Ctx, m: Mask) -> Any:
                return CompLoc(base(c, m), checked_component(c, idx(c, m), n, m, pos), True)
            return vloc
        addr = self.address(e)
        view = view_of(e.ty)
        ty = e.ty

        def mloc(c: Ctx, m: Mask) -> Any:
            mem, off = addr(c, m)
            return MemLoc(mem, off, view, pos, ty)
        return mloc

    def _deref_loc(self, e: ast.Unary) -> Fn:
        ptr = self.gen.exprs.expr(e.operand)
        view = view_of(e.ty)
        ty = e.ty
        pos = e.pos

        def dloc(c: Ctx, m: Mask) -> Any:
            p = ptr(c, m)
            return MemLoc(pointee(p, m, pos, "dereference of an uninitialised pointer"), p.off, view, pos, ty)
        return dloc

    def address(self, e: ast.Index) -> Fn:
        """(memory, offset) of an element of an array or pointer."""
        base = self.gen.exprs.expr(e.base)
        idx = self.gen.exprs.expr(e.index)
        stride = np.int64(units_in(e.ty))
        unit = unit_of(e.ty)
        bt = e.base.ty
        bound = bt.n if isinstance(bt, ArrayType) else None
        pos = e.pos
        # Most indices have no unsigned subtraction, and get no explainer.
        explain = wraparound_explainer(e.index, pos, self.gen.exprs.expr)

        def address(c: Ctx, m: Mask) -> Any:
            p = base(c, m)
            k = idx(c, m)
            if isinstance(p, SplitPtr):
                p = p.for_threads(m, pos)
            if explain is not None and c.sanitize != SanitizeMode.OFF:
                explain(c, m, k if bound is None or stride == 1 else np.asarray(k, dtype=np.int64) * stride, p,
                        p.mem.nbytes // unit if p.mem is not None else 0)
            if bound is not None and bound * stride != p.mem.nbytes // unit:
                check_subscript(c, p.mem, k, bound, m, pos, p.off, stride, unit)
            if stride == 1:
                return p.mem, p.off + k.astype(np.int64) if np.ndim(k) else p.off + np.int64(k)
            return p.mem, p.off + np.asarray(k, dtype=np.int64) * stride
        return address

    def _member_loc(self, e: ast.Member) -> Fn:
        """Where a struct member is: a place in the memory its struct is in."""
        field = e.field
        ty = field.ty
        view = view_of(ty)
        unit = unit_of(ty)
        offset = field.offset
        pos = e.pos
        if e.arrow:
            ptr = self.gen.exprs.expr(e.base)

            def through_pointer(c: Ctx, m: Mask) -> Any:
                p = ptr(c, m)
                mem = pointee(p, m, pos, "member access through an uninitialised pointer")
                return MemLoc(mem, member_offset(c, m, mem, p.off, offset, unit, pos), view, pos, ty)
            return through_pointer
        base = self.lvalue(e.base)
        base_unit = unit_of(e.base.ty)

        def member(c: Ctx, m: Mask) -> Any:
            loc = base(c, m)
            if not isinstance(loc, MemLoc):
                raise KernelRuntimeError("this struct is not in memory", pos)
            return MemLoc(loc.mem, member_offset(c, m, loc.mem, loc.off * base_unit, offset, unit, pos), view, pos, ty)
        return member

    def column_loc(self, e: ast.Index) -> Fn:
        """A matrix column as a place: in memory, the column's own vector; in a register, a
        read-modify-write of the matrix."""
        base = self.lvalue(e.base)
        idx = self.gen.exprs.expr(e.index)
        mt: MatrixType = e.base.ty
        col = mt.column
        view = view_of(col)
        stride = np.int64(units_in(col))
        pos = e.pos

        def column(c: Ctx, m: Mask) -> Any:
            loc = base(c, m)
            k = checked_component(c, idx(c, m), mt.cols, m, pos)
            if isinstance(loc, MemLoc):
                return MemLoc(loc.mem, loc.off + np.asarray(k, dtype=np.int64) * stride, view, pos, col)
            return ColumnLoc(loc, k)
        return column
