"""Builtins as the checker and the executor see them: the ``Builtin`` interface (a type rule and a
vectorised implementation), generic elementwise functions, argument unification and the registry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..counting.op_kinds import BuiltinCost
from ..executor.codegen.codegen_state import CodeGenState
from ..executor.codegen.interfaces import Fn
from ..front import ast
from ..front.checker.checker_state import CheckerState
from ..front.checker.helpers import callee_name
from ..lang.errors import CompileError
from ..lang.lane_values import round_bfloat
from ..lang.types import (
    BFLOAT,
    BOOL,
    FLOAT,
    Type,
    VectorType,
    is_arith,
    scalar_of,
    usual_arithmetic,
    vector,
    with_elem,
)

#: A call's explicit template arguments as the parser gives them ('f<T, 4>(x)'), or None.
TemplateArgs = list[Any] | None


# ============================================================================ checking helpers
def is_int_literal(e: ast.Expr) -> bool:
    while isinstance(e, ast.Convert):
        e = e.operand
    if isinstance(e, ast.Unary) and e.op == ast.UnaryOp.NEG:
        return is_int_literal(e.operand)
    return isinstance(e, ast.IntLit | ast.FloatLit | ast.BoolLit)


def unify(ck: CheckerState, call: ast.Call, args: list[ast.Expr], *, floats_only: bool = False, ints_only: bool = False) -> Type:
    """Find the common argument type of a generic builtin and convert the arguments to it.

    Vectors must agree; a scalar next to a vector is splatted. Mixed scalar types follow C's
    usual arithmetic conversions only when one side is a literal or an int meets a float;
    'min(uint, int)' on variables is ambiguous in Metal and reported as such.
    """
    name = callee_name(call).ident
    args = [ck.conversions.rvalue(a) for a in args]
    for a in args:
        if not is_arith(a.ty):
            raise CompileError(f"no matching function for call to '{name}': argument of type '{a.ty}'", a.pos)
    vecs = [a.ty for a in args if isinstance(a.ty, VectorType)]
    if vecs:
        vt = vecs[0]
        for v in vecs[1:]:
            if v.n != vt.n or v.elem != vt.elem:
                raise CompileError(f"no matching function for call to '{name}': vector types '{vt}' and '{v}' differ",
                                   call.pos)
        target: Type = vector(vt.elem, vt.n)
    else:
        scalars = [scalar_of(a.ty) for a in args]  # no vectors: all are scalars
        nonlit = [scalar_of(a.ty) for a in args if not is_int_literal(a)]
        pool = nonlit or scalars
        common = pool[0]
        for t in pool[1:]:
            if t == common:
                continue
            if t.is_int and common.is_int and t.kind == common.kind:
                raise CompileError(
                    f"call to '{name}' is ambiguous: arguments have types '{common}' and '{t}'; "
                    f"cast one so both have the same type", call.pos)
            common = usual_arithmetic(common, t)
        if pool is not scalars and all(not t.is_float for t in pool) and any(
                scalar_of(a.ty).is_float for a in args if is_int_literal(a)):
            common = FLOAT if common.bits <= 32 else FLOAT
        target = common
    elem = scalar_of(target)
    if floats_only and not elem.is_float:
        target = with_elem(target, FLOAT)
    if ints_only and not elem.is_int:
        raise CompileError(f"'{name}' needs integer arguments, got '{target}'", call.pos)
    call.args = [ck.conversions.convert(a, target, f"argument of '{name}'") for a in args]
    return target


def nargs(call: ast.Call, args: list[ast.Expr], n: int | tuple[int, ...]) -> None:
    ok = (n,) if isinstance(n, int) else n
    if len(args) not in ok:
        want = " or ".join(str(k) for k in ok)
        raise CompileError(f"'{callee_name(call).ident}' takes {want} argument(s), {len(args)} given", call.pos)


def rounded(f: Callable, ty: Type) -> Callable:
    if scalar_of(ty) == BFLOAT:
        return lambda *xs: round_bfloat(f(*xs))
    return f


class Builtin:
    """One builtin function, all of it in its row (its registration): its name, what one call
    costs the cost model (``cost``, a ``BuiltinCost``), its type rule (``check``: run by the
    checker, it converts the arguments and declares on the call what ``emit`` needs) and its
    vectorised implementation (``emit``: run by the code generator, a closure over the compiled
    arguments)."""

    #: Arguments passed as places, not values (an out-parameter: 'sincos(x, c)').
    lvalue_args: tuple[int, ...] = ()

    def __init__(self, name: str, cost: BuiltinCost) -> None:
        self.name = name
        self.cost = cost

    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:  # pragma: no cover
        raise NotImplementedError

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:  # pragma: no cover
        raise NotImplementedError


class Elementwise(Builtin):
    """A function applied component by component to arguments of one common type."""

    def __init__(self, name: str, nargs: int, impl: Callable, *, cost: BuiltinCost, floats_only: bool = False,
                 ints_only: bool = False, result: str = "same", per_type: bool = False) -> None:
        super().__init__(name, cost)
        self.nargs = nargs
        #: ``impl(*values)``, or with ``per_type`` a factory ``impl(elem)`` returning it for an element type.
        self.impl = impl
        self.per_type = per_type
        self.floats_only = floats_only
        self.ints_only = ints_only
        self.result = result  # 'same' or 'bool'

    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:
        nargs(call, args, self.nargs)
        t = unify(ck, call, args, floats_only=self.floats_only, ints_only=self.ints_only)
        call.arg_ty = t
        if self.result == "bool":
            return with_elem(t, BOOL)
        return t

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:
        ty = call.arg_ty
        elem = scalar_of(ty)
        impl = self.impl(elem) if self.per_type else self.impl
        f = rounded(impl, ty) if self.result == "same" else impl
        dtype = elem.dtype if self.result == "same" else np.dtype(bool)
        if len(fns) == 1:
            a = fns[0]
            return lambda c, m: as_dtype(f(a(c, m)), dtype)
        if len(fns) == 2:
            a, b = fns
            return lambda c, m: as_dtype(f(a(c, m), b(c, m)), dtype)
        return lambda c, m: as_dtype(f(*[g(c, m) for g in fns]), dtype)


def as_dtype(v: Any, dtype: Any) -> Any:
    if np.ndim(v) == 0:
        return dtype.type(v)
    return v.astype(dtype, copy=False)




# ============================================================================ math


#: Every builtin function by name (without metal::/precise::/fast:: prefixes).
BUILTINS: dict[str, Builtin] = {}


def register(b: Builtin) -> None:
    BUILTINS[b.name] = b


def unsigned_of_width(bits: int) -> Any:
    return {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
