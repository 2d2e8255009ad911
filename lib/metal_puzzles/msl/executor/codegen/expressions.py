"""Expressions compiled to ``f(ctx, mask) -> value``: literals, names, conversions and casts,
constructors, subscripts, members, struct values and temporaries. Operators are in
``operators``, calls in ``calls``; each node this part compiles is named in its table
(``EXPRESSION_HANDLERS``) with its ``x_<Node>`` method, and ``expr`` dispatches any expression to
the part that compiles it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...front import ast
from ...front.ast import CastStyle, ConvertKind
from ...front.symbols import DeferredConstant, Var, VarKind
from ...lang.errors import CompileError
from ...lang.kernel_parameters import ParamRole
from ...lang.lane_values import cast, is_varying, splat
from ...lang.types import (
    BOOL,
    ULONG,
    AddressSpace,
    ArrayType,
    EnumType,
    MatrixType,
    PointerType,
    ScalarType,
    SimdgroupMatrixType,
    VectorType,
    VoidType,
    storage_scalar,
    unit_of,
    units_in,
    vector,
)
from .. import matrix_arithmetic
from ..memory import Memory, Ptr, from_bytes, to_bytes, view_of
from ..runtime import Ctx
from .arithmetic import bitcast
from .codegen_state import CodeGenPart, slot_of
from .initializers import flatten
from .interfaces import Fn
from .locations import check_initialised, column, component, temporary_object
from .masks import Mask
from .pointers import as_pointer, pointer_cast
from .subscript_checks import checked_component


class Expressions(CodeGenPart):
    def expr(self, e: ast.Expr) -> Fn:
        self.gen.work += 1
        return self.gen.expression_dispatch[type(e)](e)

    def x_IntLit(self, e: ast.IntLit) -> Fn:
        v = e.ty.dtype.type(e.value)
        return lambda c, m: v

    def x_FloatLit(self, e: ast.FloatLit) -> Fn:
        with np.errstate(over="ignore"):  # 1e39f: too large for float, an infinity (clang warns, as the checker may)
            v = e.ty.dtype.type(e.value)
        return lambda c, m: v

    def x_BoolLit(self, e: ast.BoolLit) -> Fn:
        v = np.bool_(e.value)
        return lambda c, m: v

    def x_Name(self, e: ast.Name) -> Fn:
        sym: Var = e.symbol
        kind = sym.kind
        if kind in (VarKind.LOCAL, VarKind.ARRAY, VarKind.REF, VarKind.TGVAR, VarKind.MEMVAR):
            return self._variable(e, sym)
        if kind == VarKind.CONST:
            return self._constant(sym)
        name = sym.name
        if kind == VarKind.ATTR:
            return lambda c, m: c.attrs[name]
        if kind == VarKind.SCALAR_INPUT:
            return self._scalar_input(e, sym)
        raise CompileError(f"cannot read '{sym.name}'", e.pos)

    def _variable(self, e: ast.Name, sym: Var) -> Fn:
        """A variable the kernel declared: in a register slot, bound by reference or in memory."""
        kind = sym.kind
        k = slot_of(sym)
        if kind == VarKind.LOCAL and sym.maybe_uninit:
            name, pos = sym.name, e.pos

            def read_checked(c: Ctx, m: Mask) -> Any:
                if c.sanitizer is not None:
                    check_initialised(c, c.slots, k, m, name, pos)
                return c.slots[k]
            return read_checked
        if kind == VarKind.LOCAL or kind == VarKind.ARRAY:
            return lambda c, m: c.slots[k]
        if kind == VarKind.REF:
            return lambda c, m: c.slots[k].load(c, m)
        view = view_of(sym.ty)  # a variable in memory (threadgroup, or a local whose address is taken)
        pos = e.pos

        def read_tgvar(c: Ctx, m: Mask) -> Any:
            p = c.slots[k]
            return c.load(p.mem, p.off, m, view, pos)
        return read_tgvar

    def _constant(self, sym: Var) -> Fn:
        v = sym.const_value
        if isinstance(v, DeferredConstant):  # a deferred constant: its expression
            return self.expr(v.expr)
        if isinstance(sym.ty, ArrayType):
            mem = self._const_memory(sym)
            p = Ptr(mem, np.int64(0))
            return lambda c, m: p
        if isinstance(sym.ty, ScalarType):
            v = sym.ty.dtype.type(v)
        return lambda c, m: v

    def _scalar_input(self, e: ast.Name, sym: Var) -> Fn:
        name = sym.name
        if sym.role in (ParamRole.INPUT, ParamRole.OUTPUT):  # an object in a buffer (0-d input, 'device T&')
            view = view_of(sym.ty)
            pos = e.pos

            def read_scalar(c: Ctx, m: Mask) -> Any:
                mem = c.memories[name]
                return c.load(mem, np.int64(0), m, view, pos)
            return read_scalar
        return lambda c, m: c.scalars[name]

    def _const_memory(self, sym: Var) -> Memory:
        key = id(sym)
        if key not in self.gen.const_memories:
            flat = np.array(flatten(sym.const_value, sym.ty), dtype=storage_scalar(sym.ty).dtype)
            full = np.zeros(units_in(sym.ty), dtype=flat.dtype)
            full[: flat.size] = flat
            self.gen.const_memories[key] = Memory.of_values(sym.name, AddressSpace.CONSTANT, storage_scalar(sym.ty),
                                                            full)
        return self.gen.const_memories[key]

    def x_Convert(self, e: ast.Convert) -> Fn:
        inner = self.expr(e.operand)
        kind = e.kind
        src, dst = e.operand.ty, e.ty
        if kind == ConvertKind.PTR and isinstance(dst, PointerType) and isinstance(src, PointerType) \
                and unit_of(src.pointee) != unit_of(dst.pointee):
            return pointer_cast(inner, src, dst, e.pos)  # to 'void*': the offset counts bytes
        if kind in (ConvertKind.DECAY, ConvertKind.PTR, ConvertKind.LOAD):
            return inner
        if kind == ConvertKind.SPLAT:
            assert isinstance(dst, VectorType)
            return lambda c, m: splat(inner(c, m), dst)
        if isinstance(src, PointerType) and dst == BOOL:
            return lambda c, m: np.bool_(True)
        return lambda c, m: cast(inner(c, m), src, dst)

    def x_Cast(self, e: ast.Cast) -> Fn:
        inner = self.expr(e.operand)
        src, dst = e.operand.ty, e.ty
        if isinstance(dst, VoidType):
            return inner
        if e.style == CastStyle.AS_TYPE and isinstance(dst, PointerType):
            return pointer_cast(inner, src, dst, e.pos)
        if e.style == CastStyle.AS_TYPE:
            return lambda c, m: bitcast(inner(c, m), src, dst)
        if isinstance(dst, PointerType):
            return pointer_cast(inner, src, dst, e.pos)
        if isinstance(src, PointerType):
            if not (isinstance(dst, ScalarType) and dst.is_int and dst != BOOL):
                raise CompileError(f"a pointer converts only to an integer type, not to '{dst}'", e.pos)
            unit = unit_of(src.pointee)
            pos = e.pos
            return lambda c, m: cast(c.address_of(inner(c, m), unit, m, pos), ULONG, dst)
        if isinstance(src, EnumType):
            return lambda c, m: cast(np.int32(inner(c, m)), ScalarType("int", "int", 32, True, 3), dst)
        if isinstance(dst, VectorType) and isinstance(src, ScalarType):
            return lambda c, m: splat(cast(inner(c, m), src, dst.elem), dst)
        return lambda c, m: cast(inner(c, m), src, dst)

    def x_Construct(self, e: ast.Construct) -> Fn:
        if isinstance(e.ty, MatrixType):
            return self._matrix_construct(e)
        if isinstance(e.ty, SimdgroupMatrixType):  # every element one value: two per thread
            f = self.expr(e.args[0])
            pair = vector(e.ty.elem, 2)
            return lambda c, m: splat(f(c, m), pair)
        ty: VectorType = e.ty
        fns = [self.expr(a) for a in e.args]
        if e.splat:
            f = fns[0]
            return lambda c, m: splat(f(c, m), ty)
        widths = [a.ty.n if isinstance(a.ty, VectorType) else 1 for a in e.args]
        dtype = ty.elem.dtype

        def construct(c: Ctx, m: Mask) -> Any:
            parts = [f(c, m) for f in fns]
            varying = any(np.ndim(p) > (1 if w > 1 else 0) for p, w in zip(parts, widths, strict=True))
            if not varying:
                return np.concatenate([np.atleast_1d(p) for p in parts]).astype(dtype)
            cols = []
            for p, w in zip(parts, widths, strict=True):
                if w == 1:
                    cols.append(np.broadcast_to(p, (c.n,))[:, None])
                else:
                    cols.append(np.broadcast_to(p, (c.n, w)))
            return np.concatenate(cols, axis=1).astype(dtype, copy=False)
        return construct

    def _matrix_construct(self, e: ast.Construct) -> Fn:
        ty: MatrixType = e.ty
        fns = [self.expr(a) for a in e.args]
        if e.splat:
            f = fns[0]
            return lambda c, m: matrix_arithmetic.diagonal(f(c, m), ty)
        by_columns = isinstance(e.args[0].ty, VectorType)
        build = matrix_arithmetic.from_columns if by_columns else matrix_arithmetic.from_scalars
        return lambda c, m: build([f(c, m) for f in fns], ty)

    def x_Index(self, e: ast.Index) -> Fn:
        pos = e.pos
        if e.matrix_index and e.base.memory:  # a matrix in memory: read that column only
            loc = self.gen.places.column_loc(e)
            return lambda c, m: loc(c, m).load(c, m)
        if e.matrix_index:
            base = self.expr(e.base)
            idx = self.expr(e.index)
            cols = e.base.ty.cols
            return lambda c, m: column(c, base(c, m), checked_component(c, idx(c, m), cols, m, pos))
        if e.vector_index:
            base = self.expr(e.base)
            idx = self.expr(e.index)
            n = e.base.ty.n

            def vindex(c: Ctx, m: Mask) -> Any:
                return component(c, base(c, m), checked_component(c, idx(c, m), n, m, pos))
            return vindex
        addr = self.gen.places.address(e)
        ty = e.ty
        if isinstance(ty, ArrayType):
            return lambda c, m: Ptr(*addr(c, m))
        view = view_of(ty)

        def load(c: Ctx, m: Mask) -> Any:
            mem, off = addr(c, m)
            return c.load(mem, off, m, view, pos)
        return load

    def x_Member(self, e: ast.Member) -> Fn:
        if e.field is not None:
            return self._struct_member(e)
        base = self.expr(e.base)
        comps = e.comps
        if len(comps) == 1:
            k = comps[0]
            return lambda c, m: base(c, m)[..., k]
        idx = np.array(comps)
        return lambda c, m: base(c, m)[..., idx]

    def _struct_member(self, e: ast.Member) -> Fn:
        """A struct member's value: read from memory where the struct is (only the member is
        read and counted), or taken from the bytes of a struct value."""
        field = e.field
        if e.arrow or e.base.lvalue:
            loc = self.gen.places.lvalue(e)
            if isinstance(field.ty, ArrayType):
                return lambda c, m: as_pointer(loc(c, m))
            return lambda c, m: loc(c, m).load(c, m)
        base = self.expr(e.base)
        off, ty = field.offset, field.ty
        return lambda c, m: from_bytes(base(c, m), off, ty)

    def x_StructInit(self, e: ast.StructInit) -> Fn:
        size = e.ty.size
        parts = [(off, self.expr(x), x.ty) for off, x in e.parts]

        def build(c: Ctx, m: Mask) -> Any:
            values = [(off, f(c, m), ty) for off, f, ty in parts]
            varying = any(is_varying(v, ty) for _, v, ty in values)
            blob = np.zeros((c.n, size) if varying else size, dtype=np.uint8)
            for off, v, ty in values:
                b = to_bytes(v, ty)
                blob[..., off: off + b.shape[-1]] = b
            return blob
        return build

    def x_TemporaryObject(self, e: ast.TemporaryObject) -> Fn:
        return temporary_object(e, self.expr(e.construct), self.expr(e.value))

    def x_SizeOf(self, e: ast.SizeOf) -> Fn:  # pragma: no cover - folded by the checker
        raise CompileError("sizeof", e.pos)

    def x_InitList(self, e: ast.InitList) -> Fn:
        raise CompileError("unexpected initializer list", e.pos)


#: The expression nodes this part compiles, each to its handler (``CodeGen`` joins the parts' tables and binds
#: them to its parts; the joined table is checked complete when the package is imported).
EXPRESSION_HANDLERS: dict[type[ast.Expr], Callable[[Expressions, Any], Fn]] = {
    ast.IntLit: Expressions.x_IntLit, ast.FloatLit: Expressions.x_FloatLit, ast.BoolLit: Expressions.x_BoolLit,
    ast.Name: Expressions.x_Name, ast.Convert: Expressions.x_Convert, ast.Cast: Expressions.x_Cast,
    ast.Construct: Expressions.x_Construct, ast.Index: Expressions.x_Index, ast.Member: Expressions.x_Member,
    ast.StructInit: Expressions.x_StructInit, ast.TemporaryObject: Expressions.x_TemporaryObject,
    ast.SizeOf: Expressions.x_SizeOf, ast.InitList: Expressions.x_InitList,
}
