"""Declarations compiled: a local in a register slot (its lanes marked unassigned for the
sanitizer when it has no initial value), a reference bound to a place, and objects in
thread-private memory (arrays, and locals whose address is taken)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...front import ast
from ...front.symbols import Var, VarKind
from ...lang.lane_values import type_ndim, zero
from ...lang.types import AddressSpace, ArrayType, PointerType
from ..memory import Ptr, span_view, view_of
from ..runtime import Ctx
from .codegen_state import CodeGenPart, in_order, slot_of
from .initializers import flatten_init, init_offsets
from .interfaces import Compiled, Fn
from .locations import thread_memory
from .masks import Mask, mark_init, merge


class Declarations(CodeGenPart):
    def s_Decl(self, s: ast.Decl) -> Compiled:
        fns = []
        for d in s.declarators:
            sym: Var = d.symbol
            if sym.kind == VarKind.CONST:
                continue
            if sym.kind in (VarKind.ARRAY, VarKind.TGVAR):
                if sym.space == AddressSpace.THREADGROUP:
                    continue  # allocated once per launch
                fns.append(self._array_decl(d, sym))
            elif sym.kind == VarKind.REF:
                fns.append(self._ref_decl(d, sym))
            elif sym.kind == VarKind.MEMVAR:
                fns.append(self._memvar_decl(d, sym))
            elif d.init is None:
                fns.append(self._uninitialised_decl(sym))
            else:
                fns.append(self._initialised_decl(d.init, sym))
        if not fns:
            return None, False
        return in_order(fns), False

    def s_LocalTypeDef(self, s: ast.LocalTypeDef) -> Compiled:
        # The type is the checker's; its variables are declared as any are.
        return self.s_Decl(s.decl) if s.decl is not None else (None, False)

    def _uninitialised_decl(self, sym: Var) -> Fn:
        """A local declared without a value: a zero in its slot, and under the sanitizer its
        lanes marked unassigned (a read before an assignment is reported)."""
        k = slot_of(sym)
        ty = sym.ty
        z = None if isinstance(ty, PointerType) else zero(ty)

        def declare(c: Ctx, m: Mask) -> None:
            if c.slots[k] is None:
                c.slots[k] = z if z is not None else Ptr(None, np.int64(0))
            if c.sanitizer is not None:
                key = (id(c.slots), k)
                init = c.local_init.get(key)
                if init is None:
                    init = c.local_init[key] = np.zeros(c.n, dtype=bool)
                if m is None:
                    init[:] = False
                else:
                    init[m] = False
        return declare

    def _initialised_decl(self, value: ast.Expr, sym: Var) -> Fn:
        k = slot_of(sym)
        vec = type_ndim(sym.ty)
        ty = sym.ty
        init = self.gen.exprs.expr(value)

        def declare_init(c: Ctx, m: Mask) -> None:
            v = init(c, m)
            old = c.slots[k]
            if m is None or old is None:
                if m is not None and not isinstance(v, Ptr):
                    old = zero(ty)
                    c.slots[k] = merge(m, v, old, vec)
                else:
                    c.slots[k] = v
            else:
                c.slots[k] = merge(m, v, old, vec)
            if c.sanitizer is not None:
                key = (id(c.slots), k)
                if key in c.local_init:
                    mark_init(c.local_init[key], m)
        return declare_init

    def _ref_decl(self, d: ast.Declarator, sym: Var) -> Fn:
        assert d.init is not None  # the checker requires a reference's initializer
        lv = self.gen.places.lvalue(d.init)
        k = slot_of(sym)

        def bind(c: Ctx, m: Mask) -> None:
            c.slots[k] = lv(c, m)
        return bind

    def _memvar_decl(self, d: ast.Declarator, sym: Var) -> Fn:
        """A local whose address is taken: it lives in a one-element thread-private memory."""
        k = slot_of(sym)
        ty = sym.ty
        init = self.gen.exprs.expr(d.init) if d.init is not None else None
        construct = self.gen.exprs.expr(d.construct) if d.construct is not None else None
        view = view_of(ty)
        name, pos = sym.name, d.pos

        def declare(c: Ctx, m: Mask) -> None:
            p = thread_memory(c, k, name, ty)
            assert p.mem is not None
            if init is not None:
                c.store(p.mem, np.int64(0), init(c, m), m, view, pos)
            if construct is not None:  # a constructor initialises it in place
                construct(c, m)
        return declare

    def _array_decl(self, d: ast.Declarator, sym: Var) -> Fn:
        k = slot_of(sym)
        ty = sym.ty
        whole = span_view(ty)
        init_list = cast(ast.InitList, d.init)  # an aggregate's initializer, if any, is a list
        init_items = flatten_init(init_list) if d.init is not None else None
        init_fns = [self.gen.exprs.expr(x) for x in init_items] if init_items else []
        if d.init is not None:  # every run zero-fills the whole array
            self.gen.work += whole.width
        offsets = init_offsets(init_list, cast(ArrayType, sym.ty)) if d.init is not None else []
        item_views = [view_of(x.ty) for x in init_items] if init_items else []
        name = sym.name
        pos = d.pos

        def declare_array(c: Ctx, m: Mask) -> None:
            p = thread_memory(c, k, name, ty)
            assert p.mem is not None
            if d.init is not None:
                # Aggregate initialization zero-fills the elements not listed.
                c.store(p.mem, np.int64(0), np.zeros(whole.width, dtype=whole.dtype), m, whole, pos)
                for off, f, view in zip(offsets, init_fns, item_views, strict=True):
                    c.store(p.mem, np.int64(off), f(c, m), m, view, pos)
        return declare_array


#: The declaration statements this part compiles, each to its handler (``CodeGen`` joins the parts' tables and binds
#: them to its parts; the joined table is checked complete when the package is imported).
STATEMENT_HANDLERS: dict[type[ast.Stmt], Callable[[Declarations, Any], Compiled]] = {
    ast.Decl: Declarations.s_Decl, ast.LocalTypeDef: Declarations.s_LocalTypeDef,
}
