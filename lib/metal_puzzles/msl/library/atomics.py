"""Atomic read-modify-write functions on ``atomic<T>`` objects in device and threadgroup memory."""

from __future__ import annotations

from typing import Any

from ..counting.op_kinds import BuiltinCost
from ..executor.codegen.codegen_state import CodeGenState
from ..executor.codegen.interfaces import Fn
from ..executor.codegen.masks import Mask
from ..executor.runtime import Ctx
from ..front import ast
from ..front.checker.checker_state import CheckerState
from ..lang.errors import CompileError
from ..lang.types import (
    BOOL,
    FLOAT,
    INT,
    MEMORY_ORDER,
    VOID,
    AtomicType,
    PointerType,
    Type,
)
from .base import Builtin, TemplateArgs, register


# ============================================================================ atomics
class Atomic(Builtin):
    """atomic_*_explicit on a pointer to atomic<T> (device or threadgroup memory)."""

    def __init__(self, name: str, op: str, cost: BuiltinCost) -> None:
        super().__init__(name, cost)
        self.op = op
        if op == "cas":
            self.lvalue_args = (1,)

    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:
        op = self.op
        nvals = {"load": 0, "store": 1, "cas": 2}.get(op, 1)
        orders = {"cas": 2}.get(op, 1)
        if len(args) not in (1 + nvals, 1 + nvals + orders) and not (op == "cas" and len(args) in (3, 4, 5)):
            raise CompileError(f"'{self.name}' takes a pointer to an atomic, {nvals} value(s) and a memory order",
                               call.pos)
        p = ck.conversions.rvalue(args[0])
        if not (isinstance(p.ty, PointerType) and isinstance(p.ty.pointee, AtomicType)):
            hint = ""
            if isinstance(p.ty, PointerType):
                hint = (f"; the buffer holds plain '{p.ty.pointee}': declare the kernel with atomic_outputs=True "
                        f"or cast, e.g. (device atomic_{'float' if p.ty.pointee == FLOAT else 'int' if p.ty.pointee == INT else 'uint'}*)&out[i]")
            raise CompileError(f"'{self.name}' needs a pointer to an atomic object, got '{p.ty}'{hint}", p.pos)
        elem = p.ty.pointee.elem
        if op in ("min", "max", "and", "or", "xor") and elem.is_float:
            raise CompileError(f"'{self.name}' is not available for atomic<float> (only for int and uint)", call.pos)
        conv = [p]
        if op == "cas":
            exp = args[1]
            if not (isinstance(exp, ast.Unary) and exp.op == ast.UnaryOp.ADDRESS):
                raise CompileError("the second argument of atomic_compare_exchange_weak_explicit must be the "
                                   "address of a local variable, e.g. &expected", exp.pos)
            target = exp.operand
            if not target.lvalue or target.ty != elem:
                raise CompileError(f"'expected' must be a '{elem}' variable", exp.pos)
            conv.append(target)
            conv.append(ck.conversions.convert(args[2], elem, "desired value"))
            rest = args[3:]
        else:
            vals = [ck.conversions.convert(a, elem, f"value of '{self.name}'") for a in args[1:1 + nvals]]
            conv.extend(vals)
            rest = args[1 + nvals:]
        for r in rest:
            if r.ty != MEMORY_ORDER:
                raise CompileError(f"expected a memory order such as memory_order_relaxed, got '{r.ty}'", r.pos)
        call.args = conv
        call.atomic_elem = elem
        if op == "store":
            return VOID
        if op == "cas":
            return BOOL
        return elem

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:
        op = self.op
        pos = call.pos
        elem = call.atomic_elem
        used = not call.value_unused
        p_fn = fns[0]
        if op == "load":
            return lambda c, m: c.atomic(p_fn(c, m), m, "load", None, pos, elem, True)
        if op == "cas":
            exp_fn, des_fn = fns[1], fns[2]

            def cas(c: Ctx, m: Mask) -> Any:
                loc = exp_fn(c, m)
                expected = loc.load(c, m)
                ok, old = c.atomic_cas(p_fn(c, m), m, expected, des_fn(c, m), pos, elem)
                # On failure 'expected' receives the current value.
                loc.store(c, old, m)
                return ok
            return cas
        v_fn = fns[1]
        return lambda c, m: c.atomic(p_fn(c, m), m, op, v_fn(c, m), pos, elem, used)


for _op in ("add", "sub", "min", "max", "and", "or", "xor"):
    register(Atomic(f"atomic_fetch_{_op}_explicit", _op, BuiltinCost.NOT_ARITHMETIC))
    register(Atomic(f"atomic_fetch_{_op}", _op, BuiltinCost.NOT_ARITHMETIC))
register(Atomic("atomic_exchange_explicit", "exchange", BuiltinCost.NOT_ARITHMETIC))
register(Atomic("atomic_exchange", "exchange", BuiltinCost.NOT_ARITHMETIC))
register(Atomic("atomic_load_explicit", "load", BuiltinCost.NOT_ARITHMETIC))
register(Atomic("atomic_load", "load", BuiltinCost.NOT_ARITHMETIC))
register(Atomic("atomic_store_explicit", "store", BuiltinCost.NOT_ARITHMETIC))
register(Atomic("atomic_store", "store", BuiltinCost.NOT_ARITHMETIC))
register(Atomic("atomic_compare_exchange_weak_explicit", "cas", BuiltinCost.NOT_ARITHMETIC))
register(Atomic("atomic_compare_exchange_strong_explicit", "cas", BuiltinCost.NOT_ARITHMETIC))
