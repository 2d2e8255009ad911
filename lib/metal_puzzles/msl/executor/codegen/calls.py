"""Calls compiled: a builtin emits its own code (counted in the cost model's variant); a header
function's body is compiled once per variant and run in a frame of its own, its reference
parameters bound to places and its by-value structs copied into thread memory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...counting.op_kinds import builtin_kind, elem_of
from ...front import ast
from ...front.symbols import FuncInstance, Var, VarKind
from ...lang.errors import KernelRuntimeError
from ...lang.types import VoidType
from ..memory import view_of
from ..runtime import Ctx, Frame
from .codegen_state import CodeGenPart
from .interfaces import Fn
from .locations import materialised, thread_object
from .masks import Mask

#: How deeply calls may nest at run time (recursion compiles, as in Metal since MSL 2.4; a GPU
#: thread's stack is small, and a recursion that does not end must stop with a message).
MAX_CALL_DEPTH = 64


class Calls(CodeGenPart):
    def x_Call(self, e: ast.Call) -> Fn:
        target = e.target
        if isinstance(target, FuncInstance):
            call = self.call_function(e, target)
            if target.ret_ref:  # the value of the object the returned reference designates
                return lambda c, m: call(c, m).load(c, m)
            return call
        places, exprs = self.gen.places, self.gen.exprs
        arg_fns = [places.lvalue(a) if i in target.lvalue_args else exprs.expr(a) for i, a in enumerate(e.args)]
        fn = target.emit(self.gen, e, arg_fns)
        if self.gen.cost:
            found = builtin_kind(target.cost, e.arg_ty if e.arg_ty is not None else e.ty)
            if found is not None:
                kind, steps = found
                fn = self.gen.counted(fn, kind, steps * elem_of(e.arg_ty if e.arg_ty is not None else e.ty)[1], e.pos)
        return fn

    def _arguments(self, e: ast.Call, inst: FuncInstance) -> list[Fn]:
        """Each argument compiled as its parameter takes it: a place for a reference, else a value."""
        arg_fns = []
        for p, a in zip(inst.params, e.args, strict=True):
            if p.kind == VarKind.REF and not a.lvalue:  # a member function called on a temporary object
                arg_fns.append(materialised(self.gen.exprs.expr(a), a.ty, a.pos))
            else:
                arg_fns.append(self.gen.places.lvalue(a) if p.kind == VarKind.REF else self.gen.exprs.expr(a))
        return arg_fns

    def call_function(self, e: ast.Call, inst: FuncInstance) -> Fn:
        arg_fns = self._arguments(e, inst)
        key = id(inst)
        bodies = self.gen.bodies
        if key not in bodies:
            bodies[key] = None  # compiling: a recursive call finds it here and calls it once it is compiled
            bodies[key], _ = self.gen.stmts.stmt(inst.body)
        params = inst.params
        nslots = inst.nslots
        ret_void = isinstance(inst.ret, VoidType)
        param_slots = [_slot_of(p) for p in params]
        # Structs passed by value: copied into the callee's own thread memory.
        copies = [(_slot_of(p), p.name, p.ty, view_of(p.ty)) for p in params if p.kind == VarKind.MEMVAR]

        def call(c: Ctx, m: Mask) -> Any:
            c.step(e.pos)
            vals = [f(c, m) for f in arg_fns]
            saved = (c.slots, c.frame, c.loop)
            slots: list[Any] = [None] * nslots
            for k, v in zip(param_slots, vals, strict=True):
                slots[k] = v
            c.slots, c.frame, c.loop = slots, Frame(), None
            for k, name, ty, view in copies:
                value, slots[k] = slots[k], None
                mem = thread_object(c, k, name, ty)
                c.store(mem, np.int64(0), value, m, view, e.pos)
            c.call_depth += 1
            if c.call_depth > MAX_CALL_DEPTH:
                raise KernelRuntimeError(f"'{inst.name}' is called more than {MAX_CALL_DEPTH} calls deep: a recursion "
                                         "that does not end? (a GPU thread's call stack is small)", e.pos)
            try:
                bodies[key](c, m)
                result = c.frame.ret_val
            finally:
                c.slots, c.frame, c.loop = saved
                c.call_depth -= 1
            if ret_void:
                return None
            if result is None:
                raise KernelRuntimeError(f"function '{inst.name}' ended without returning a value", e.pos)
            return result
        return call

#: The call nodes this part compiles, each to its handler (``CodeGen`` joins the parts' tables and binds
#: them to its parts; the joined table is checked complete when the package is imported).
EXPRESSION_HANDLERS: dict[type[ast.Expr], Callable[[Calls, Any], Fn]] = {
    ast.Call: Calls.x_Call,
}



def _slot_of(param: Var) -> int:
    """A parameter's frame slot (the checker gives every parameter one)."""
    assert param.slot is not None
    return param.slot
