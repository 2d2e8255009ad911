"""Floating-point and generic math: elementwise functions in the argument's own precision, ldexp,
ilogb, the out-parameter functions (sincos, frexp, modf), select, geometric functions, all/any."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..counting.op_kinds import BuiltinCost
from ..executor.codegen.codegen_state import CodeGenState
from ..executor.codegen.interfaces import Fn
from ..executor.codegen.masks import Mask
from ..executor.runtime import Ctx
from ..front import ast
from ..front.checker.checker_state import CheckerState
from ..lang.errors import CompileError
from ..lang.lane_values import round_bfloat
from ..lang.types import (
    BFLOAT,
    BOOL,
    FLOAT,
    INT,
    ScalarType,
    Type,
    VectorType,
    is_arith,
    scalar_of,
    vector,
    with_elem,
)
from .base import (
    Builtin,
    Elementwise,
    TemplateArgs,
    as_dtype,
    nargs,
    register,
    rounded,
    unify,
    unsigned_of_width,
)


def _c_round(x: Any) -> Any:
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _fract(x: Any) -> Any:
    return np.minimum(x - np.floor(x), np.asarray(x).dtype.type(0.99999994) if np.asarray(x).dtype == np.float32
                      else np.asarray(x).dtype.type(0.9995))


def _rsqrt(x: Any) -> Any:
    one = np.asarray(x).dtype.type(1)
    return one / np.sqrt(x)


def _step(edge: Any, x: Any) -> Any:
    return np.where(x < edge, np.zeros_like(x), np.ones_like(x))


def _smoothstep(e0: Any, e1: Any, x: Any) -> Any:
    dt = np.asarray(x).dtype.type
    t = np.clip((x - e0) / (e1 - e0), dt(0), dt(1))
    return t * t * (dt(3) - dt(2) * t)


def _mix(x: Any, y: Any, a: Any) -> Any:
    return x + (y - x) * a


def _clamp_any(x: Any, lo: Any, hi: Any) -> Any:
    if np.asarray(x).dtype.kind == "f":
        return np.fmin(np.fmax(x, lo), hi)
    return np.minimum(np.maximum(x, lo), hi)


def _min(x: Any, y: Any) -> Any:
    return np.fmin(x, y) if np.asarray(x).dtype.kind == "f" else np.minimum(x, y)


def _max(x: Any, y: Any) -> Any:
    return np.fmax(x, y) if np.asarray(x).dtype.kind == "f" else np.maximum(x, y)


def _fma(a: Any, b: Any, c: Any) -> Any:
    # One rounding: the exact product fits in float64; the sum is rounded once more to float32.
    dt = np.asarray(a).dtype
    if dt == np.float32:
        return (np.asarray(a, np.float64) * b + np.asarray(c, np.float64)).astype(np.float32)
    return (np.asarray(a, np.float32) * b + np.asarray(c, np.float32)).astype(dt)


def _exp10(x: Any) -> Any:
    return np.power(np.asarray(x).dtype.type(10), x)


def _sign(x: Any) -> Any:
    return np.sign(x)


def _abs(elem: ScalarType) -> Any:
    return np.abs


def _absdiff(elem: ScalarType) -> Any:
    def absdiff(x: Any, y: Any) -> Any:
        hi, lo = np.maximum(x, y), np.minimum(x, y)
        return (hi.astype(unsigned_of_width(elem.bits)) - lo.astype(unsigned_of_width(elem.bits))).astype(elem.dtype)
    return absdiff


# What one call costs, on each builtin's row (counting/op_kinds.BuiltinCost).
SPECIAL, ELEMENTWISE, FMA = BuiltinCost.SPECIAL, BuiltinCost.ELEMENTWISE, BuiltinCost.FMA
FLOAT_DIVISION, DOT = BuiltinCost.FLOAT_DIVISION, BuiltinCost.DOT

FLOAT_UNARY: dict[str, tuple[Callable, BuiltinCost]] = {
    "sqrt": (np.sqrt, SPECIAL),
    "rsqrt": (_rsqrt, SPECIAL),
    "exp": (np.exp, SPECIAL),
    "exp2": (np.exp2, SPECIAL),
    "exp10": (_exp10, SPECIAL),
    "log": (np.log, SPECIAL),
    "log2": (np.log2, SPECIAL),
    "log10": (np.log10, SPECIAL),
    "sin": (np.sin, SPECIAL),
    "cos": (np.cos, SPECIAL),
    "tan": (np.tan, SPECIAL),
    "asin": (np.arcsin, SPECIAL),
    "acos": (np.arccos, SPECIAL),
    "atan": (np.arctan, SPECIAL),
    "sinh": (np.sinh, SPECIAL),
    "cosh": (np.cosh, SPECIAL),
    "tanh": (np.tanh, SPECIAL),
    "asinh": (np.arcsinh, SPECIAL),
    "acosh": (np.arccosh, SPECIAL),
    "atanh": (np.arctanh, SPECIAL),
    "floor": (np.floor, ELEMENTWISE),
    "ceil": (np.ceil, ELEMENTWISE),
    "round": (_c_round, ELEMENTWISE),
    "rint": (np.rint, ELEMENTWISE),
    "trunc": (np.trunc, ELEMENTWISE),
    "fract": (_fract, ELEMENTWISE),
    "fabs": (np.abs, ELEMENTWISE),
    "sign": (_sign, ELEMENTWISE),
    "saturate": (lambda x: np.clip(x, np.asarray(x).dtype.type(0), np.asarray(x).dtype.type(1)), ELEMENTWISE),
    "log1p": (np.log1p, SPECIAL),
    "expm1": (np.expm1, SPECIAL),
    "cbrt": (np.cbrt, SPECIAL),
    "sinpi": (lambda x: np.sin(np.asarray(x).dtype.type(math.pi) * x), SPECIAL),
    "cospi": (lambda x: np.cos(np.asarray(x).dtype.type(math.pi) * x), SPECIAL),
    "tanpi": (lambda x: np.tan(np.asarray(x).dtype.type(math.pi) * x), SPECIAL),
}
FLOAT_BINARY: dict[str, tuple[Callable, BuiltinCost]] = {
    "pow": (np.power, SPECIAL),
    "powr": (np.power, SPECIAL),
    "atan2": (np.arctan2, SPECIAL),
    "fmod": (np.fmod, FLOAT_DIVISION),
    "fmin": (np.fmin, ELEMENTWISE),
    "fmax": (np.fmax, ELEMENTWISE),
    "copysign": (np.copysign, ELEMENTWISE),
    "step": (_step, ELEMENTWISE),
    "fdim": (lambda x, y: np.maximum(x - y, 0), ELEMENTWISE),
    "nextafter": (np.nextafter, ELEMENTWISE),
    "hypot": (np.hypot, ELEMENTWISE),
}
FLOAT_TERNARY: dict[str, tuple[Callable, BuiltinCost]] = {
    "fma": (_fma, FMA),
    "mad": (_fma, FMA),
    "mix": (_mix, ELEMENTWISE),
    "smoothstep": (_smoothstep, ELEMENTWISE),
}
FLOAT_PREDICATES: dict[str, tuple[Callable, BuiltinCost]] = {
    "isnan": (np.isnan, ELEMENTWISE),
    "isinf": (np.isinf, ELEMENTWISE),
    "isfinite": (np.isfinite, ELEMENTWISE),
    "signbit": (np.signbit, ELEMENTWISE),
    "isnormal": (lambda x: np.isfinite(x) & (np.abs(x) >= np.finfo(np.asarray(x).dtype).tiny), ELEMENTWISE),
}

for _n, (_f, _cost) in FLOAT_UNARY.items():
    register(Elementwise(_n, 1, _f, cost=_cost, floats_only=True))
for _n, (_f, _cost) in FLOAT_BINARY.items():
    register(Elementwise(_n, 2, _f, cost=_cost, floats_only=True))
for _n, (_f, _cost) in FLOAT_TERNARY.items():
    register(Elementwise(_n, 3, _f, cost=_cost, floats_only=True))
for _n, (_f, _cost) in FLOAT_PREDICATES.items():
    register(Elementwise(_n, 1, _f, cost=_cost, floats_only=True, result="bool"))
# Two-argument predicates: whether either argument is NaN (comparisons with it are unordered).
FLOAT_PAIR_PREDICATES = {"isunordered": lambda x, y: np.isnan(x) | np.isnan(y),
                         "isordered": lambda x, y: ~(np.isnan(x) | np.isnan(y))}
for _n, _f in FLOAT_PAIR_PREDICATES.items():
    register(Elementwise(_n, 2, _f, cost=ELEMENTWISE, floats_only=True, result="bool"))
register(Elementwise("min", 2, _min, cost=ELEMENTWISE))
register(Elementwise("max", 2, _max, cost=ELEMENTWISE))
register(Elementwise("clamp", 3, _clamp_any, cost=ELEMENTWISE))
register(Elementwise("abs", 1, _abs, cost=ELEMENTWISE, per_type=True))
register(Elementwise("absdiff", 2, _absdiff, cost=ELEMENTWISE, ints_only=True, per_type=True))


class Ldexp(Builtin):
    """ldexp(x, k) = x * 2^k, with an integer exponent."""

    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:
        nargs(call, args, 2)
        x = ck.conversions.rvalue(args[0])
        t = x.ty if scalar_of(x.ty).is_float else with_elem(x.ty, FLOAT)
        k_t = with_elem(t, INT)
        call.args = [ck.conversions.convert(x, t, "'ldexp'"), ck.conversions.convert(ck.conversions.rvalue(args[1]), k_t, "'ldexp'")]
        call.arg_ty = t
        return t

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:
        a, b = fns
        f = rounded(np.ldexp, call.arg_ty)
        dtype = scalar_of(call.arg_ty).dtype
        return lambda c, m: as_dtype(f(a(c, m), b(c, m)), dtype)


register(Ldexp("ldexp", ELEMENTWISE))


def _median3(a: Any, b: Any, c: Any) -> Any:
    return _max(_min(a, b), _min(_max(a, b), c))


for _n, _f in (("fmax3", lambda a, b, c: np.fmax(np.fmax(a, b), c)), ("fmin3", lambda a, b, c: np.fmin(np.fmin(a, b), c)),
               ("fmedian3", _median3)):
    register(Elementwise(_n, 3, _f, cost=ELEMENTWISE, floats_only=True))
for _n, _f in (("max3", lambda a, b, c: _max(_max(a, b), c)), ("min3", lambda a, b, c: _min(_min(a, b), c)),
               ("median3", _median3)):
    register(Elementwise(_n, 3, _f, cost=ELEMENTWISE))
register(Elementwise("divide", 2, np.divide, cost=FLOAT_DIVISION, floats_only=True))


class Ilogb(Builtin):
    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:
        nargs(call, args, 1)
        t = unify(ck, call, args, floats_only=True)
        call.arg_ty = t
        return with_elem(t, INT)

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:
        (a,) = fns
        return lambda c, m: as_dtype(np.frexp(np.asarray(a(c, m), dtype=np.float32))[1] - 1, np.dtype(np.int32))


register(Ilogb("ilogb", ELEMENTWISE))


class OutParam(Builtin):
    """sincos(x, cosval), frexp(x, exp), modf(x, intpart): a result plus one written through a reference."""

    lvalue_args = (1,)

    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:
        nargs(call, args, 2)
        x = ck.conversions.rvalue(args[0])
        t = x.ty if is_arith(x.ty) and scalar_of(x.ty).is_float else with_elem(x.ty, FLOAT) if is_arith(x.ty) else None
        if t is None:
            raise CompileError(f"'{self.name}' needs a floating-point argument", call.pos)
        out = args[1]
        if isinstance(out, ast.Unary) and out.op == ast.UnaryOp.ADDRESS:
            out = out.operand
        want = with_elem(t, INT) if self.name == "frexp" else t
        if not out.lvalue or out.ty != want:
            raise CompileError(f"the second argument of '{self.name}' must be a '{want}' variable", out.pos)
        ck.exprs.require_modifiable(out)
        call.args = [ck.conversions.convert(x, t, f"'{self.name}'"), out]
        call.arg_ty = t
        return t

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:
        x, loc_fn = fns
        name = self.name
        dtype = scalar_of(call.arg_ty).dtype

        def out_param(c: Ctx, m: Mask) -> Any:
            v = np.asarray(x(c, m))
            if name == "sincos":
                result, other = np.sin(v), np.cos(v)
            elif name == "frexp":
                result, other = np.frexp(v)
                other = other.astype(np.int32)
            else:
                other = np.trunc(v)
                result = np.where(np.isinf(v), np.copysign(np.zeros_like(v), v), v - other)
            loc_fn(c, m).store(c, other if np.ndim(other) else other[()], m)
            return as_dtype(result, dtype)
        return out_param


for _n, _cost in (("sincos", SPECIAL), ("frexp", ELEMENTWISE), ("modf", ELEMENTWISE)):
    register(OutParam(_n, _cost))


class Select(Builtin):
    """select(a, b, c): c ? b : a, per component."""

    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:
        nargs(call, args, 3)
        a, b, c = (ck.conversions.rvalue(x) for x in args)
        fake = ast.Call(call.pos, call.func, [a, b])
        t = unify(ck, fake, [a, b])
        cond_t = with_elem(t, BOOL) if isinstance(c.ty, VectorType) else BOOL
        call.args = fake.args + [ck.conversions.convert(c, cond_t, "condition of 'select'")]
        call.select_per_component = isinstance(t, VectorType) and not isinstance(c.ty, VectorType)
        return t

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:
        a, b, c = fns
        vec = call.select_per_component
        return lambda cx, m: np.where((lambda k: k[..., None] if vec and np.ndim(k) else k)(c(cx, m)), b(cx, m), a(cx, m))


register(Select("select", ELEMENTWISE))


class Geometric(Builtin):
    def __init__(self, name: str, nargs: int, kind: str, cost: BuiltinCost) -> None:
        super().__init__(name, cost)
        self.nargs = nargs
        self.kind = kind

    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:
        nargs(call, args, self.nargs)
        t = unify(ck, call, args, floats_only=self.kind != "dot")
        call.arg_ty = t
        if self.kind in ("dot", "length", "length_squared", "distance", "distance_squared"):
            return scalar_of(t)
        if self.kind == "cross" and not (isinstance(t, VectorType) and t.n == 3):
            raise CompileError("cross() takes two 3-component vectors", call.pos)
        return t

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:
        kind = self.kind
        elem = scalar_of(call.arg_ty)
        rnd = (lambda v: round_bfloat(v)) if elem == BFLOAT else (lambda v: v)

        def dot(x: Any, y: Any) -> Any:
            if np.ndim(x) == 0 and np.ndim(y) == 0:
                return rnd(x * y)
            x = np.asarray(x)
            y = np.asarray(y)
            acc = rnd(x[..., 0] * y[..., 0])
            for k in range(1, x.shape[-1]):
                acc = rnd(acc + rnd(x[..., k] * y[..., k]))
            return acc

        if kind == "dot":
            a, b = fns
            return lambda c, m: dot(a(c, m), b(c, m))
        if kind == "length":
            (a,) = fns
            return lambda c, m: rnd(np.sqrt(dot(a(c, m), a(c, m))))
        if kind == "length_squared":
            (a,) = fns
            return lambda c, m: dot(a(c, m), a(c, m))
        if kind == "distance":
            a, b = fns
            return lambda c, m: (lambda d: rnd(np.sqrt(dot(d, d))))(a(c, m) - b(c, m))
        if kind == "distance_squared":
            a, b = fns
            return lambda c, m: (lambda d: dot(d, d))(a(c, m) - b(c, m))
        if kind == "normalize":
            (a,) = fns

            def normalize(c: Ctx, m: Mask) -> Any:
                x = a(c, m)
                inv = _rsqrt(dot(x, x))
                return rnd(x * (np.asarray(inv)[..., None] if np.ndim(x) > 1 else inv))
            return normalize
        if kind == "cross":
            a, b = fns

            def cross(c: Ctx, m: Mask) -> Any:
                x, y = np.asarray(a(c, m)), np.asarray(b(c, m))
                x0, x1, x2 = x[..., 0], x[..., 1], x[..., 2]
                y0, y1, y2 = y[..., 0], y[..., 1], y[..., 2]
                return np.stack([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0], axis=-1)
            return cross
        raise AssertionError(kind)


for _n, _k, _cost in (("dot", 2, DOT), ("length", 1, SPECIAL), ("length_squared", 1, ELEMENTWISE),
                      ("distance", 2, SPECIAL), ("distance_squared", 2, ELEMENTWISE), ("normalize", 1, SPECIAL),
                      ("cross", 2, DOT)):
    register(Geometric(_n, _k, _n, _cost))


class AllAny(Builtin):
    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:
        nargs(call, args, 1)
        a = ck.conversions.rvalue(args[0])
        if isinstance(a.ty, VectorType):
            call.args = [ck.conversions.convert(a, vector(BOOL, a.ty.n), f"'{self.name}'")]
        else:
            call.args = [ck.conversions.to_bool(a)]
        return BOOL

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:
        (a,) = fns
        vec = isinstance(call.args[0].ty, VectorType)
        f = np.all if self.name == "all" else np.any
        if not vec:
            return a
        return lambda c, m: f(a(c, m), axis=-1)


register(AllAny("all", ELEMENTWISE))
register(AllAny("any", ELEMENTWISE))
