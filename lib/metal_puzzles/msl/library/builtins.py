"""Builtin functions and constants of the Metal standard library (and a few of MLX's): type
rules for the checker and NumPy implementations for the executor.

Each builtin checks its arguments (converting them explicitly) and emits a closure. Math runs
in the argument's own precision: float32 stays float32, half stays binary16 (NumPy computes
half functions through float32 and rounds once), bfloat is computed in float32 and rounded.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..abi.signature import METAL_ATTRIBUTES
from ..front import ast
from ..lang.errors import CompileError, KernelRuntimeError
from ..lang.types import (
    BFLOAT,
    BOOL,
    FLOAT,
    HALF,
    INT,
    LONG,
    MEM_FLAGS,
    MEMORY_ORDER,
    SIMD_VOTE,
    UINT,
    ULONG,
    VOID,
    AtomicType,
    PointerType,
    ScalarType,
    Type,
    VectorType,
    is_arith,
    scalar_of,
    usual_arithmetic,
    vector,
    with_elem,
)
from ..lang.values import round_bfloat
from ..run.lanes import SIMD_WIDTH

ATTRIBUTE_NAMES = tuple(name for name, _ in METAL_ATTRIBUTES)


# ============================================================================ checking helpers
def _is_int_literal(e: ast.Expr) -> bool:
    while isinstance(e, ast.Convert):
        e = e.operand
    if isinstance(e, ast.Unary) and e.op == "-":
        return _is_int_literal(e.operand)
    return isinstance(e, ast.IntLit | ast.FloatLit | ast.BoolLit)


def unify(ck, call: ast.Call, args: list[ast.Expr], *, floats_only: bool = False, ints_only: bool = False) -> Type:
    """Find the common argument type of a generic builtin and convert the arguments to it.

    Vectors must agree; a scalar next to a vector is splatted. Mixed scalar types follow C's
    usual arithmetic conversions only when one side is a literal or an int meets a float;
    'min(uint, int)' on variables is ambiguous in Metal and reported as such.
    """
    name = call.func.ident
    args = [ck.rvalue(a) for a in args]
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
        scalars = [a.ty for a in args]
        nonlit = [a.ty for a in args if not _is_int_literal(a)]
        pool = nonlit or scalars
        target = pool[0]
        for t in pool[1:]:
            if t == target:
                continue
            if t.is_int and target.is_int and t.kind == target.kind:
                raise CompileError(
                    f"call to '{name}' is ambiguous: arguments have types '{target}' and '{t}'; "
                    f"cast one so both have the same type", call.pos)
            target = usual_arithmetic(target, t)
        if pool is not scalars and all(not t.is_float for t in pool) and any(
                a.ty.is_float for a in args if _is_int_literal(a)):
            target = FLOAT if target.bits <= 32 else FLOAT
    elem = scalar_of(target)
    if floats_only and not elem.is_float:
        target = with_elem(target, FLOAT)
    if ints_only and not elem.is_int:
        raise CompileError(f"'{name}' needs integer arguments, got '{target}'", call.pos)
    call.args = [ck.convert(a, target, f"argument of '{name}'") for a in args]
    return target


def _nargs(call: ast.Call, args, n: int | tuple[int, ...]) -> None:
    ok = (n,) if isinstance(n, int) else n
    if len(args) not in ok:
        want = " or ".join(str(k) for k in ok)
        raise CompileError(f"'{call.func.ident}' takes {want} argument(s), {len(args)} given", call.pos)


def _rounded(f: Callable, ty: Type) -> Callable:
    if scalar_of(ty) == BFLOAT:
        return lambda *xs: round_bfloat(f(*xs))
    return f


class Builtin:
    lvalue_args: tuple[int, ...] = ()

    def __init__(self, name: str) -> None:
        self.name = name

    def check(self, ck, call: ast.Call, args: list[ast.Expr], targs) -> Type:  # pragma: no cover
        raise NotImplementedError

    def emit(self, cg, call: ast.Call, fns: list[Callable]) -> Callable:  # pragma: no cover
        raise NotImplementedError


class Elementwise(Builtin):
    """A function applied component by component to arguments of one common type."""

    def __init__(self, name: str, nargs: int, impl: Callable, *, floats_only=False, ints_only=False,
                 result: str = "same") -> None:
        super().__init__(name)
        self.nargs = nargs
        self.impl = impl
        self.floats_only = floats_only
        self.ints_only = ints_only
        self.result = result  # 'same' or 'bool'

    def check(self, ck, call, args, targs):
        _nargs(call, args, self.nargs)
        t = unify(ck, call, args, floats_only=self.floats_only, ints_only=self.ints_only)
        call.arg_ty = t
        if self.result == "bool":
            return with_elem(t, BOOL)
        return t

    def emit(self, cg, call, fns):
        ty = call.arg_ty
        elem = scalar_of(ty)
        impl = self.impl(elem) if getattr(self.impl, "typed", False) else self.impl
        f = _rounded(impl, ty) if self.result == "same" else impl
        dtype = elem.dtype if self.result == "same" else np.dtype(bool)
        if len(fns) == 1:
            a = fns[0]
            return lambda c, m: _as(f(a(c, m)), dtype)
        if len(fns) == 2:
            a, b = fns
            return lambda c, m: _as(f(a(c, m), b(c, m)), dtype)
        return lambda c, m: _as(f(*[g(c, m) for g in fns]), dtype)


def _as(v, dtype):
    if np.ndim(v) == 0:
        return dtype.type(v)
    return v.astype(dtype, copy=False)


def typed(f):
    f.typed = True
    return f


# ============================================================================ math
def _c_round(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _fract(x):
    return np.minimum(x - np.floor(x), np.asarray(x).dtype.type(0.99999994) if np.asarray(x).dtype == np.float32
                      else np.asarray(x).dtype.type(0.9995))


def _rsqrt(x):
    one = np.asarray(x).dtype.type(1)
    return one / np.sqrt(x)


def _step(edge, x):
    return np.where(x < edge, np.zeros_like(x), np.ones_like(x))


def _smoothstep(e0, e1, x):
    dt = np.asarray(x).dtype.type
    t = np.clip((x - e0) / (e1 - e0), dt(0), dt(1))
    return t * t * (dt(3) - dt(2) * t)


def _mix(x, y, a):
    return x + (y - x) * a


def _clamp_any(x, lo, hi):
    if np.asarray(x).dtype.kind == "f":
        return np.fmin(np.fmax(x, lo), hi)
    return np.minimum(np.maximum(x, lo), hi)


def _min(x, y):
    return np.fmin(x, y) if np.asarray(x).dtype.kind == "f" else np.minimum(x, y)


def _max(x, y):
    return np.fmax(x, y) if np.asarray(x).dtype.kind == "f" else np.maximum(x, y)


def _fma(a, b, c):
    # One rounding: the exact product fits in float64; the sum is rounded once more to float32.
    dt = np.asarray(a).dtype
    if dt == np.float32:
        return (np.asarray(a, np.float64) * b + np.asarray(c, np.float64)).astype(np.float32)
    return (np.asarray(a, np.float32) * b + np.asarray(c, np.float32)).astype(dt)


def _exp10(x):
    return np.power(np.asarray(x).dtype.type(10), x)


def _sign(x):
    return np.sign(x)


@typed
def _popcount(elem):
    unsigned = _unsigned(elem.bits)
    return lambda x: np.bitwise_count(np.asarray(x).astype(unsigned)).astype(elem.dtype)


@typed
def _clz(elem):
    bits = elem.bits

    def clz(x):
        u = np.asarray(x).astype(_unsigned(elem.bits))
        n = np.zeros(u.shape, dtype=np.int64)
        width = bits
        cur = u.copy()
        shift = bits // 2
        while shift:
            top = cur >> np.asarray(shift, dtype=cur.dtype) if False else cur >> cur.dtype.type(width - shift)
            zero_top = top == 0
            n = np.where(zero_top, n + shift, n)
            cur = np.where(zero_top, cur << cur.dtype.type(shift), cur)
            shift //= 2
        n = np.where(u == 0, bits, n)
        return n.astype(elem.dtype)
    return clz


@typed
def _ctz(elem):
    bits = elem.bits

    def ctz(x):
        u = np.asarray(x).astype(_unsigned(bits))
        low = u & (~u + u.dtype.type(1))  # lowest set bit
        n = np.zeros(u.shape, dtype=np.int64)
        for k in range(bits):
            n = np.where(low == (u.dtype.type(1) << u.dtype.type(k)), k, n)
        n = np.where(u == 0, bits, n)
        return n.astype(elem.dtype)
    return ctz


@typed
def _reverse_bits(elem):
    bits = elem.bits

    def rev(x):
        u = np.asarray(x).astype(_unsigned(bits))
        out = np.zeros_like(u)
        one = u.dtype.type(1)
        for k in range(bits):
            out |= ((u >> u.dtype.type(k)) & one) << u.dtype.type(bits - 1 - k)
        return out.astype(elem.dtype)
    return rev


def _unsigned(bits: int):
    return {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]


@typed
def _abs(elem):
    return np.abs


@typed
def _absdiff(elem):
    def absdiff(x, y):
        hi, lo = np.maximum(x, y), np.minimum(x, y)
        return (hi.astype(_unsigned(elem.bits)) - lo.astype(_unsigned(elem.bits))).astype(elem.dtype)
    return absdiff


FLOAT_UNARY = {
    "sqrt": np.sqrt, "rsqrt": _rsqrt, "exp": np.exp, "exp2": np.exp2, "exp10": _exp10, "log": np.log,
    "log2": np.log2, "log10": np.log10, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "floor": np.floor, "ceil": np.ceil,
    "round": _c_round, "rint": np.rint, "trunc": np.trunc, "fract": _fract, "fabs": np.abs,
    "sign": _sign, "saturate": lambda x: np.clip(x, np.asarray(x).dtype.type(0), np.asarray(x).dtype.type(1)),
    "log1p": np.log1p, "expm1": np.expm1, "cbrt": np.cbrt,
    "sinpi": lambda x: np.sin(np.asarray(x).dtype.type(math.pi) * x),
    "cospi": lambda x: np.cos(np.asarray(x).dtype.type(math.pi) * x),
    "tanpi": lambda x: np.tan(np.asarray(x).dtype.type(math.pi) * x),
}
FLOAT_BINARY = {
    "pow": np.power, "powr": np.power, "atan2": np.arctan2, "fmod": np.fmod, "fmin": np.fmin,
    "fmax": np.fmax, "copysign": np.copysign, "step": _step, "fdim": lambda x, y: np.maximum(x - y, 0),
    "nextafter": np.nextafter, "hypot": np.hypot,
}
FLOAT_TERNARY = {"fma": _fma, "mad": _fma, "mix": _mix, "smoothstep": _smoothstep}
FLOAT_PREDICATES = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit,
                    "isnormal": lambda x: np.isfinite(x) & (np.abs(x) >= np.finfo(np.asarray(x).dtype).tiny)}

BUILTINS: dict[str, Builtin] = {}


def _register(b: Builtin) -> None:
    BUILTINS[b.name] = b


for _n, _f in FLOAT_UNARY.items():
    _register(Elementwise(_n, 1, _f, floats_only=True))
for _n, _f in FLOAT_BINARY.items():
    _register(Elementwise(_n, 2, _f, floats_only=True))
for _n, _f in FLOAT_TERNARY.items():
    _register(Elementwise(_n, 3, _f, floats_only=True))
for _n, _f in FLOAT_PREDICATES.items():
    _register(Elementwise(_n, 1, _f, floats_only=True, result="bool"))
_register(Elementwise("min", 2, _min))
_register(Elementwise("max", 2, _max))
_register(Elementwise("clamp", 3, _clamp_any))
_register(Elementwise("abs", 1, _abs))
_register(Elementwise("absdiff", 2, _absdiff, ints_only=True))
_register(Elementwise("popcount", 1, _popcount, ints_only=True))
_register(Elementwise("clz", 1, _clz, ints_only=True))
_register(Elementwise("ctz", 1, _ctz, ints_only=True))
_register(Elementwise("reverse_bits", 1, _reverse_bits, ints_only=True))


class Ldexp(Builtin):
    """ldexp(x, k) = x * 2^k, with an integer exponent."""

    def check(self, ck, call, args, targs):
        _nargs(call, args, 2)
        x = ck.rvalue(args[0])
        t = x.ty if scalar_of(x.ty).is_float else with_elem(x.ty, FLOAT)
        k_t = with_elem(t, INT)
        call.args = [ck.convert(x, t, "'ldexp'"), ck.convert(ck.rvalue(args[1]), k_t, "'ldexp'")]
        call.arg_ty = t
        return t

    def emit(self, cg, call, fns):
        a, b = fns
        f = _rounded(np.ldexp, call.arg_ty)
        dtype = scalar_of(call.arg_ty).dtype
        return lambda c, m: _as(f(a(c, m), b(c, m)), dtype)


_register(Ldexp("ldexp"))


def _median3(a, b, c):
    return _max(_min(a, b), _min(_max(a, b), c))


def _wide(elem):
    return np.int64 if elem.signed else np.uint64


@typed
def _mulhi(elem):
    bits = elem.bits

    def mulhi(x, y):
        if bits == 64:
            raise KernelRuntimeError("mulhi on 64-bit integers is not supported by the simulator")
        p = np.asarray(x).astype(_wide(elem)) * np.asarray(y).astype(_wide(elem))
        return (p >> _wide(elem)(bits)).astype(elem.dtype)
    return mulhi


@typed
def _madhi(elem):
    hi = _mulhi(elem)
    return lambda x, y, z: (np.asarray(hi(x, y)) + z).astype(elem.dtype)


@typed
def _rotate(elem):
    bits = elem.bits
    u = _unsigned(bits)

    def rotate(x, k):
        xu = np.asarray(x).astype(u)
        s = (np.asarray(k).astype(np.int64) % bits).astype(u)
        back = ((u(bits) - s) % u(bits)).astype(u)
        return ((xu << s) | np.where(s == 0, u(0), xu >> back)).astype(elem.dtype)
    return rotate


@typed
def _saturating(elem, op):
    lo, hi = np.iinfo(elem.dtype).min, np.iinfo(elem.dtype).max

    def sat(x, y):
        if elem.bits == 64:
            wide = np.asarray(x).astype(object) + (np.asarray(y).astype(object) if op == "+" else -np.asarray(y).astype(object))
            return np.clip(wide, lo, hi).astype(elem.dtype)
        wide = np.asarray(x).astype(np.int64)
        wide = wide + np.asarray(y).astype(np.int64) if op == "+" else wide - np.asarray(y).astype(np.int64)
        return np.clip(wide, lo, hi).astype(elem.dtype)
    return sat


@typed
def _addsat(elem):
    return _saturating(elem, "+")


@typed
def _subsat(elem):
    return _saturating(elem, "-")


@typed
def _hadd(elem):
    return lambda x, y: ((np.asarray(x).astype(np.int64) + np.asarray(y).astype(np.int64)) >> 1).astype(elem.dtype)


@typed
def _rhadd(elem):
    return lambda x, y: ((np.asarray(x).astype(np.int64) + np.asarray(y).astype(np.int64) + 1) >> 1).astype(elem.dtype)


@typed
def _mul24(elem):
    return lambda x, y: (np.asarray(x).astype(np.int64) * np.asarray(y).astype(np.int64)).astype(elem.dtype)


@typed
def _mad24(elem):
    return lambda x, y, z: (np.asarray(x).astype(np.int64) * np.asarray(y).astype(np.int64)
                            + np.asarray(z).astype(np.int64)).astype(elem.dtype)


for _n, _f in (("fmax3", lambda a, b, c: np.fmax(np.fmax(a, b), c)), ("fmin3", lambda a, b, c: np.fmin(np.fmin(a, b), c)),
               ("fmedian3", _median3)):
    _register(Elementwise(_n, 3, _f, floats_only=True))
for _n, _f in (("max3", lambda a, b, c: _max(_max(a, b), c)), ("min3", lambda a, b, c: _min(_min(a, b), c)),
               ("median3", _median3)):
    _register(Elementwise(_n, 3, _f))
_register(Elementwise("divide", 2, np.divide, floats_only=True))
for _n, _f, _k in (("mulhi", _mulhi, 2), ("madhi", _madhi, 3), ("rotate", _rotate, 2), ("addsat", _addsat, 2),
                   ("subsat", _subsat, 2), ("hadd", _hadd, 2), ("rhadd", _rhadd, 2), ("mul24", _mul24, 2),
                   ("mad24", _mad24, 3)):
    _register(Elementwise(_n, _k, _f, ints_only=True))


class BitField(Builtin):
    """extract_bits(x, offset, bits) and insert_bits(base, insert, offset, bits)."""

    def check(self, ck, call, args, targs):
        n = 3 if self.name == "extract_bits" else 4
        _nargs(call, args, n)
        values = args[: n - 2]
        fake = ast.Call(call.pos, call.func, values)
        t = unify(ck, fake, values, ints_only=True)
        call.args = fake.args + [ck.convert(ck.rvalue(a), UINT, f"'{self.name}'") for a in args[n - 2:]]
        call.arg_ty = t
        return t

    def emit(self, cg, call, fns):
        elem = scalar_of(call.arg_ty)
        u = _unsigned(elem.bits)

        def field_mask(bits):
            b = np.asarray(bits).astype(np.uint64)
            return np.where(b >= elem.bits, np.uint64(2**elem.bits - 1), (np.uint64(1) << b) - np.uint64(1)).astype(u)

        if self.name == "extract_bits":
            x, off, bits = fns

            def extract(c, m):
                o = np.asarray(off(c, m)).astype(u)
                v = (np.asarray(x(c, m)).astype(u) >> o) & field_mask(bits(c, m))
                if elem.signed:  # sign-extend the field
                    b = np.asarray(bits(c, m)).astype(np.int64)
                    sign = (v.astype(np.uint64) >> np.maximum(b - 1, 0).astype(np.uint64)) & np.uint64(1)
                    v = np.where((sign == 1) & (b < elem.bits), v | ~field_mask(b), v)
                return _as(np.asarray(v).astype(u).astype(elem.dtype), elem.dtype)
            return extract
        base, ins, off, bits = fns

        def insert(c, m):
            o = np.asarray(off(c, m)).astype(u)
            fm = field_mask(bits(c, m)) << o
            v = (np.asarray(base(c, m)).astype(u) & ~fm) | ((np.asarray(ins(c, m)).astype(u) << o) & fm)
            return _as(np.asarray(v).astype(elem.dtype), elem.dtype)
        return insert


_register(BitField("extract_bits"))
_register(BitField("insert_bits"))


class Ilogb(Builtin):
    def check(self, ck, call, args, targs):
        _nargs(call, args, 1)
        t = unify(ck, call, args, floats_only=True)
        call.arg_ty = t
        return with_elem(t, INT)

    def emit(self, cg, call, fns):
        (a,) = fns
        return lambda c, m: _as(np.frexp(np.asarray(a(c, m), dtype=np.float32))[1] - 1, np.dtype(np.int32))


_register(Ilogb("ilogb"))


class OutParam(Builtin):
    """sincos(x, cosval), frexp(x, exp), modf(x, intpart): a result plus one written through a reference."""

    lvalue_args = (1,)

    def check(self, ck, call, args, targs):
        _nargs(call, args, 2)
        x = ck.rvalue(args[0])
        t = x.ty if is_arith(x.ty) and scalar_of(x.ty).is_float else with_elem(x.ty, FLOAT) if is_arith(x.ty) else None
        if t is None:
            raise CompileError(f"'{self.name}' needs a floating-point argument", call.pos)
        out = args[1]
        if isinstance(out, ast.Unary) and out.op == "&":
            out = out.operand
        want = with_elem(t, INT) if self.name == "frexp" else t
        if not out.lvalue or out.ty != want:
            raise CompileError(f"the second argument of '{self.name}' must be a '{want}' variable", out.pos)
        ck.require_modifiable(out)
        call.args = [ck.convert(x, t, f"'{self.name}'"), out]
        call.arg_ty = t
        return t

    def emit(self, cg, call, fns):
        x, loc_fn = fns
        name = self.name
        dtype = scalar_of(call.arg_ty).dtype

        def out_param(c, m):
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
            return _as(result, dtype)
        return out_param


for _n in ("sincos", "frexp", "modf"):
    _register(OutParam(_n))


class Select(Builtin):
    """select(a, b, c): c ? b : a, per component."""

    def check(self, ck, call, args, targs):
        _nargs(call, args, 3)
        a, b, c = (ck.rvalue(x) for x in args)
        fake = ast.Call(call.pos, call.func, [a, b])
        t = unify(ck, fake, [a, b])
        cond_t = with_elem(t, BOOL) if isinstance(c.ty, VectorType) else BOOL
        call.args = fake.args + [ck.convert(c, cond_t, "condition of 'select'")]
        call.vec = isinstance(t, VectorType) and not isinstance(c.ty, VectorType)
        return t

    def emit(self, cg, call, fns):
        a, b, c = fns
        vec = call.vec
        return lambda cx, m: np.where((lambda k: k[..., None] if vec and np.ndim(k) else k)(c(cx, m)), b(cx, m), a(cx, m))


_register(Select("select"))


class Geometric(Builtin):
    def __init__(self, name: str, nargs: int, kind: str) -> None:
        super().__init__(name)
        self.nargs = nargs
        self.kind = kind

    def check(self, ck, call, args, targs):
        _nargs(call, args, self.nargs)
        t = unify(ck, call, args, floats_only=self.kind != "dot")
        call.arg_ty = t
        if self.kind in ("dot", "length", "length_squared", "distance", "distance_squared"):
            return scalar_of(t)
        if self.kind == "cross" and not (isinstance(t, VectorType) and t.n == 3):
            raise CompileError("cross() takes two 3-component vectors", call.pos)
        return t

    def emit(self, cg, call, fns):
        kind = self.kind
        elem = scalar_of(call.arg_ty)
        rnd = (lambda v: round_bfloat(v)) if elem == BFLOAT else (lambda v: v)

        def dot(x, y):
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

            def normalize(c, m):
                x = a(c, m)
                inv = _rsqrt(dot(x, x))
                return rnd(x * (np.asarray(inv)[..., None] if np.ndim(x) > 1 else inv))
            return normalize
        if kind == "cross":
            a, b = fns

            def cross(c, m):
                x, y = np.asarray(a(c, m)), np.asarray(b(c, m))
                x0, x1, x2 = x[..., 0], x[..., 1], x[..., 2]
                y0, y1, y2 = y[..., 0], y[..., 1], y[..., 2]
                return np.stack([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0], axis=-1)
            return cross
        raise AssertionError(kind)


for _n, _k in (("dot", 2), ("length", 1), ("length_squared", 1), ("distance", 2), ("distance_squared", 2),
               ("normalize", 1), ("cross", 2)):
    _register(Geometric(_n, _k, _n))


class AllAny(Builtin):
    def check(self, ck, call, args, targs):
        _nargs(call, args, 1)
        a = ck.rvalue(args[0])
        if isinstance(a.ty, VectorType):
            call.args = [ck.convert(a, vector(BOOL, a.ty.n), f"'{self.name}'")]
        else:
            call.args = [ck.to_bool(a)]
        return BOOL

    def emit(self, cg, call, fns):
        (a,) = fns
        vec = isinstance(call.args[0].ty, VectorType)
        f = np.all if self.name == "all" else np.any
        if not vec:
            return a
        return lambda c, m: f(a(c, m), axis=-1)


_register(AllAny("all"))
_register(AllAny("any"))


# ============================================================================ barriers
class Barrier(Builtin):
    def check(self, ck, call, args, targs):
        _nargs(call, args, (0, 1))
        for a in args:
            if a.ty != MEM_FLAGS:
                raise CompileError(f"'{self.name}' takes mem_flags (e.g. mem_flags::mem_threadgroup), "
                                   f"got '{a.ty}'", a.pos)
        call.args = args
        return VOID

    def emit(self, cg, call, fns):
        pos = call.pos
        simd = self.name == "simdgroup_barrier"
        return lambda c, m: c.barrier(m, pos, simd)


_register(Barrier("threadgroup_barrier"))
_register(Barrier("simdgroup_barrier"))


# ============================================================================ SIMD-group functions
def _padded(c, v, m, fill, width: int):
    """Arrange a per-lane value as (groups, width) rows of one SIMD (or quad) group each."""
    lanes = c.lanes
    if width == SIMD_WIDTH:
        table = lanes.simd_table
    else:
        table = lanes.quad_table()
    v = np.asarray(v)
    full = np.broadcast_to(v, (c.n,) + v.shape[1:] if np.ndim(v) >= 1 and v.shape[0] == c.n else (c.n,) + v.shape)
    valid = table >= 0
    idx = np.where(valid, table, 0)
    rows = full[idx]
    if m is not None:
        valid = valid & m[idx]
    if fill is not None:
        rows = np.where(valid.reshape(valid.shape + (1,) * (rows.ndim - 2)), rows, fill)
    return rows, table, valid


def _scatter_rows(c, rows, table):
    out = np.empty((c.n,) + rows.shape[2:], dtype=rows.dtype)
    valid = table >= 0
    out[table[valid]] = rows[valid]
    return out


def _lane_group_index(c, width):
    if width == SIMD_WIDTH:
        return c.lanes.simd_global, c.lanes.simd_lane
    return c.lanes.quad_global(), c.lanes.index_in_group % 4


class SimdReduce(Builtin):
    def __init__(self, name: str, op: str, width: int = SIMD_WIDTH, scan: str | None = None) -> None:
        super().__init__(name)
        self.op = op
        self.width = width
        self.scan = scan  # None, 'inclusive' or 'exclusive'

    def check(self, ck, call, args, targs):
        _nargs(call, args, 1)
        a = ck.rvalue(args[0])
        if self.op in ("and", "or", "xor") and not scalar_of(a.ty).is_int:
            raise CompileError(f"'{self.name}' needs an integer argument", call.pos)
        if self.op in ("all", "any"):
            a = ck.to_bool(a)
        elif not is_arith(a.ty):
            raise CompileError(f"'{self.name}' needs a scalar or vector argument, got '{a.ty}'", call.pos)
        call.args = [a]
        call.arg_ty = a.ty
        return a.ty

    def emit(self, cg, call, fns):
        (a,) = fns
        op, width, scan = self.op, self.width, self.scan
        ty = call.arg_ty
        elem = scalar_of(ty)
        dtype = elem.dtype
        identity = {"sum": 0, "product": 1, "and": -1, "or": 0, "xor": 0, "all": True, "any": False}
        rnd = round_bfloat if elem == BFLOAT else (lambda v: v)

        def reduce_fn(c, m):
            v = a(c, m)
            if op in ("max", "min"):
                rows, table, valid = _padded(c, v, m, None, width)
                fill = rows[:, :1] if rows.ndim == 2 else rows[:, :1, :]
                # Inactive lanes take the value of some active lane so they never win.
                first_valid = np.argmax(valid, axis=1)
                pick = rows[np.arange(rows.shape[0]), first_valid]
                vmask = valid.reshape(valid.shape + (1,) * (rows.ndim - 2))
                rows = np.where(vmask, rows, pick[:, None] if rows.ndim == 2 else pick[:, None, :])
                del fill
                red = (np.fmax if elem.is_float else np.maximum) if op == "max" else (np.fmin if elem.is_float else np.minimum)
                res = red.reduce(rows, axis=1)
            else:
                ident = dtype.type(identity[op]) if op not in ("all", "any") else identity[op]
                rows, table, valid = _padded(c, v, m, ident, width)
                if scan is not None:
                    res_rows = _scan(rows, op, rnd)
                    if scan == "exclusive":
                        shifted = np.empty_like(res_rows)
                        shifted[:, 1:] = res_rows[:, :-1]
                        shifted[:, 0] = ident
                        res_rows = shifted
                    return _scatter_rows(c, res_rows, table)
                if op == "sum":
                    res = _sequential(rows, np.add, rnd)
                elif op == "product":
                    res = _sequential(rows, np.multiply, rnd)
                elif op == "and":
                    res = np.bitwise_and.reduce(rows, axis=1)
                elif op == "or":
                    res = np.bitwise_or.reduce(rows, axis=1)
                elif op == "xor":
                    res = np.bitwise_xor.reduce(rows, axis=1)
                elif op == "all":
                    res = np.all(rows, axis=1)
                else:
                    res = np.any(rows, axis=1)
            gidx, _ = _lane_group_index(c, width)
            return res[gidx]
        return reduce_fn


def _sequential(rows, ufunc, rnd):
    acc = rows[:, 0]
    for k in range(1, rows.shape[1]):
        acc = rnd(ufunc(acc, rows[:, k]))
    return acc


def _scan(rows, op, rnd):
    out = np.empty_like(rows)
    f = {"sum": np.add, "product": np.multiply}.get(op)
    if f is None:
        raise KernelRuntimeError(f"prefix '{op}' is not supported")
    acc = rows[:, 0]
    out[:, 0] = acc
    for k in range(1, rows.shape[1]):
        acc = rnd(f(acc, rows[:, k]))
        out[:, k] = acc
    return out


for _w, _p in ((SIMD_WIDTH, "simd"), (4, "quad")):
    for _op in ("sum", "product", "max", "min", "and", "or", "xor", "all", "any"):
        _register(SimdReduce(f"{_p}_{_op}", _op, _w))
    _register(SimdReduce(f"{_p}_prod", "product", _w))
    for _op in ("sum", "product"):
        for _kind in ("inclusive", "exclusive"):
            _register(SimdReduce(f"{_p}_prefix_{_kind}_{_op}", _op, _w, _kind))


class SimdShuffle(Builtin):
    """simd_shuffle / _up / _down / _xor / _rotate_* and simd_broadcast."""

    def __init__(self, name: str, kind: str, width: int = SIMD_WIDTH) -> None:
        super().__init__(name)
        self.kind = kind
        self.width = width

    def check(self, ck, call, args, targs):
        want = 1 if self.kind == "broadcast_first" else 2
        _nargs(call, args, want)
        a = ck.rvalue(args[0])
        if not is_arith(a.ty):
            raise CompileError(f"'{self.name}' needs a scalar or vector value, got '{a.ty}'", call.pos)
        conv = [a]
        if want == 2:
            b = ck.rvalue(args[1])
            if not (isinstance(b.ty, ScalarType) and b.ty.is_int):
                raise CompileError(f"'{self.name}' takes an integer lane/delta, got '{b.ty}'", b.pos)
            conv.append(ck.convert(b, UINT, f"'{self.name}'"))
        call.args = conv
        return a.ty

    def emit(self, cg, call, fns):
        kind, width = self.kind, self.width

        def shuffle(c, m):
            v = np.asarray(fns[0](c, m))
            k = np.asarray(fns[1](c, m)).astype(np.int64) if len(fns) > 1 else np.int64(0)
            gidx, lane = _lane_group_index(c, width)
            table = c.lanes.simd_table if width == SIMD_WIDTH else c.lanes.quad_table()
            if kind in ("shuffle", "broadcast"):
                src = k % width if kind == "shuffle" else k
                keep = (k >= width) if kind == "broadcast" else np.zeros_like(k, dtype=bool)
            elif kind == "broadcast_first":
                valid = table >= 0
                if m is not None:
                    valid = valid & m[np.where(table >= 0, table, 0)]
                first = np.argmax(valid, axis=1)
                src = first[gidx]
                keep = np.zeros(c.n, dtype=bool)
            elif kind == "down":
                src = lane + k
                keep = src >= width
            elif kind == "up":
                src = lane - k
                keep = src < 0
            elif kind == "xor":
                src = lane ^ k
                keep = src >= width
            elif kind == "rotate_down":
                src = (lane + k) % width
                keep = np.zeros(c.n, dtype=bool)
            else:  # rotate_up
                src = (lane - k) % width
                keep = np.zeros(c.n, dtype=bool)
            src = np.broadcast_to(np.clip(src, 0, width - 1), (c.n,))
            src_lane = table[gidx, src]
            keep = np.broadcast_to(keep, (c.n,)) | (src_lane < 0)
            src_lane = np.where(keep, np.arange(c.n), src_lane)
            full = np.broadcast_to(v, (c.n,) + v.shape[1:]) if (np.ndim(v) and v.shape[0] == c.n and
                                                                   np.ndim(v) > len(_shape(call.ty))) else \
                np.broadcast_to(v, (c.n,) + v.shape)
            return full[src_lane]
        return shuffle


def _shape(ty):
    return (ty.n,) if isinstance(ty, VectorType) else ()


for _w, _p in ((SIMD_WIDTH, "simd"), (4, "quad")):
    _register(SimdShuffle(f"{_p}_shuffle", "shuffle", _w))
    _register(SimdShuffle(f"{_p}_shuffle_down", "down", _w))
    _register(SimdShuffle(f"{_p}_shuffle_up", "up", _w))
    _register(SimdShuffle(f"{_p}_shuffle_xor", "xor", _w))
    _register(SimdShuffle(f"{_p}_shuffle_rotate_down", "rotate_down", _w))
    _register(SimdShuffle(f"{_p}_shuffle_rotate_up", "rotate_up", _w))
    _register(SimdShuffle(f"{_p}_broadcast", "broadcast", _w))
    _register(SimdShuffle(f"{_p}_broadcast_first", "broadcast_first", _w))


class SimdIsFirst(Builtin):
    def check(self, ck, call, args, targs):
        _nargs(call, args, 0)
        return BOOL

    def emit(self, cg, call, fns):
        def is_first(c, m):
            table = c.lanes.simd_table
            valid = table >= 0
            if m is not None:
                valid = valid & m[np.where(valid, table, 0)]
            first = np.argmax(valid, axis=1)
            return c.lanes.simd_lane == first[c.lanes.simd_global]
        return is_first


_register(SimdIsFirst("simd_is_first"))


class SimdBallot(Builtin):
    def check(self, ck, call, args, targs):
        _nargs(call, args, 1)
        call.args = [ck.to_bool(ck.rvalue(args[0]))]
        return SIMD_VOTE

    def emit(self, cg, call, fns):
        (a,) = fns

        def ballot(c, m):
            v = a(c, m)
            rows, table, valid = _padded(c, np.broadcast_to(v, (c.n,)), m, False, SIMD_WIDTH)
            weights = (np.uint64(1) << np.arange(SIMD_WIDTH, dtype=np.uint64))
            bits = (rows.astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)
            return bits[c.lanes.simd_global]
        return ballot


class SimdActiveMask(Builtin):
    def check(self, ck, call, args, targs):
        _nargs(call, args, 0)
        return SIMD_VOTE

    def emit(self, cg, call, fns):
        def active(c, m):
            act = np.ones(c.n, dtype=bool) if m is None else m
            rows, table, valid = _padded(c, act, m, False, SIMD_WIDTH)
            weights = (np.uint64(1) << np.arange(SIMD_WIDTH, dtype=np.uint64))
            return (rows.astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)[c.lanes.simd_global]
        return active


class VoteMember(Builtin):
    """simd_vote::all() / any(): over the lanes active where the member is called."""

    def check(self, ck, call, args, targs):
        _nargs(call, args, 1)
        return BOOL

    def emit(self, cg, call, fns):
        (v,) = fns
        active = SimdActiveMask("simd_active_threads_mask").emit(cg, call, [])
        is_all = self.name.endswith("all")

        def member(c, m):
            bits = np.asarray(v(c, m)).astype(np.uint64)
            act = active(c, m)
            return (bits & act) == act if is_all else (bits & act) != 0
        return member


_register(SimdBallot("simd_ballot"))
_register(SimdActiveMask("simd_active_threads_mask"))
BUILTINS["simd_vote.all"] = VoteMember("simd_vote.all")
BUILTINS["simd_vote.any"] = VoteMember("simd_vote.any")


class ShuffleAndFill(Builtin):
    """simd_shuffle_and_fill_down/up(data, filling, delta): lanes shifted past the edge take 'filling'."""

    def check(self, ck, call, args, targs):
        _nargs(call, args, (3, 4))
        fake = ast.Call(call.pos, call.func, args[:2])
        t = unify(ck, fake, args[:2])
        call.args = fake.args + [ck.convert(ck.rvalue(a), UINT, f"'{self.name}'") for a in args[2:]]
        call.arg_ty = t
        return t

    def emit(self, cg, call, fns):
        down = "down" in self.name
        data, fill, delta = fns[:3]
        width_fn = fns[3] if len(fns) > 3 else None

        def shuffle_fill(c, m):
            v = np.asarray(data(c, m))
            f = np.asarray(fill(c, m))
            k = np.asarray(delta(c, m)).astype(np.int64)
            width = np.asarray(width_fn(c, m)).astype(np.int64) if width_fn else np.int64(SIMD_WIDTH)
            lane = c.lanes.simd_lane
            seg = (lane // width) * width
            pos = lane - seg
            src = pos + k if down else pos - k
            outside = (src >= width) | (src < 0)
            src_lane = c.lanes.simd_table[c.lanes.simd_global, np.clip(seg + src, 0, SIMD_WIDTH - 1)]
            outside = outside | (src_lane < 0)
            src_lane = np.where(outside, np.arange(c.n), src_lane)
            full_v = np.broadcast_to(v, (c.n,) + v.shape[1:]) if v.ndim and v.shape[0] == c.n else np.broadcast_to(v, (c.n,) + v.shape)
            full_f = np.broadcast_to(f, (c.n,) + f.shape[1:]) if f.ndim and f.shape[0] == c.n else np.broadcast_to(f, (c.n,) + f.shape)
            picked = full_v[src_lane]
            cond = outside if picked.ndim == 1 else outside[:, None]
            return np.where(cond, full_f, picked)
        return shuffle_fill


_register(ShuffleAndFill("simd_shuffle_and_fill_down"))
_register(ShuffleAndFill("simd_shuffle_and_fill_up"))


# ============================================================================ atomics
class Atomic(Builtin):
    """atomic_*_explicit on a pointer to atomic<T> (device or threadgroup memory)."""

    def __init__(self, name: str, op: str) -> None:
        super().__init__(name)
        self.op = op
        if op == "cas":
            self.lvalue_args = (1,)

    def check(self, ck, call, args, targs):
        op = self.op
        nvals = {"load": 0, "store": 1, "cas": 2}.get(op, 1)
        orders = {"cas": 2}.get(op, 1)
        if len(args) not in (1 + nvals, 1 + nvals + orders) and not (op == "cas" and len(args) in (3, 4, 5)):
            raise CompileError(f"'{self.name}' takes a pointer to an atomic, {nvals} value(s) and a memory order",
                               call.pos)
        p = ck.rvalue(args[0])
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
            if not (isinstance(exp, ast.Unary) and exp.op == "&"):
                raise CompileError("the second argument of atomic_compare_exchange_weak_explicit must be the "
                                   "address of a local variable, e.g. &expected", exp.pos)
            target = exp.operand
            if not target.lvalue or target.ty != elem:
                raise CompileError(f"'expected' must be a '{elem}' variable", exp.pos)
            conv.append(target)
            conv.append(ck.convert(args[2], elem, "desired value"))
            rest = args[3:]
        else:
            vals = [ck.convert(a, elem, f"value of '{self.name}'") for a in args[1:1 + nvals]]
            conv.extend(vals)
            rest = args[1 + nvals:]
        for r in rest:
            if r.ty != MEMORY_ORDER:
                raise CompileError(f"expected a memory order such as memory_order_relaxed, got '{r.ty}'", r.pos)
        call.args = conv
        call.elem = elem
        if op == "store":
            return VOID
        if op == "cas":
            return BOOL
        return elem

    def emit(self, cg, call, fns):
        op = self.op
        pos = call.pos
        elem = call.elem
        used = not call.value_unused
        p_fn = fns[0]
        if op == "load":
            return lambda c, m: c.atomic(p_fn(c, m), m, "load", None, pos, elem, True)
        if op == "cas":
            exp_fn, des_fn = fns[1], fns[2]

            def cas(c, m):
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
    _register(Atomic(f"atomic_fetch_{_op}_explicit", _op))
    _register(Atomic(f"atomic_fetch_{_op}", _op))
_register(Atomic("atomic_exchange_explicit", "exchange"))
_register(Atomic("atomic_exchange", "exchange"))
_register(Atomic("atomic_load_explicit", "load"))
_register(Atomic("atomic_load", "load"))
_register(Atomic("atomic_store_explicit", "store"))
_register(Atomic("atomic_store", "store"))
_register(Atomic("atomic_compare_exchange_weak_explicit", "cas"))
_register(Atomic("atomic_compare_exchange_strong_explicit", "cas"))


# ============================================================================ numeric limits
class NumericLimits(Builtin):
    """metal::numeric_limits<T>::max() and friends."""

    def check(self, ck, call, args, targs):
        _nargs(call, args, 0)
        member = call.func.ident.split("::")[-1]
        if not targs or len(targs) != 1:
            raise CompileError("numeric_limits needs one type argument", call.pos)
        ty = ck.resolve_type(targs[0])
        if not isinstance(ty, ScalarType):
            raise CompileError(f"numeric_limits<{ty}> is not defined", call.pos)
        call.value = ty.dtype.type(_limit(ty, member, call))
        return ty

    def emit(self, cg, call, fns):
        v = call.value
        return lambda c, m: v


def _limit(ty: ScalarType, member: str, node) -> float | int:
    if ty == BOOL:
        return {"max": 1, "min": 0, "lowest": 0}.get(member, 0)
    if ty.is_int:
        info = np.iinfo(ty.dtype)
        table = {"max": info.max, "min": info.min, "lowest": info.min, "finite_max": info.max,
                 "finite_min": info.min}
    else:
        info = np.finfo(np.float16 if ty == HALF else np.float32)
        mx = float(info.max) if ty != BFLOAT else 3.3895313892515355e38
        table = {"max": mx, "min": float(info.tiny) if ty != BFLOAT else 1.1754943508222875e-38,
                 "lowest": -mx, "epsilon": float(info.eps) if ty != BFLOAT else 0.0078125,
                 "infinity": math.inf, "quiet_NaN": math.nan, "finite_max": mx, "finite_min": -mx,
                 "denorm_min": float(info.smallest_subnormal) if ty != BFLOAT else 9.183549615799121e-41}
    if member not in table:
        raise CompileError(f"numeric_limits has no member '{member}' for '{ty}'", node.pos)
    return table[member]


_NUMERIC_LIMITS = NumericLimits("numeric_limits")


def lookup_builtin(name: str) -> Builtin | None:
    plain = name
    for prefix in ("metal::precise::", "metal::fast::", "precise::", "fast::", "metal::", "simd::"):
        if plain.startswith(prefix):
            plain = plain[len(prefix):]
            break
    if "numeric_limits<>::" in plain:
        return _NUMERIC_LIMITS
    return BUILTINS.get(plain)


# ============================================================================ constants
_FLOAT_CONSTANTS = {
    "INFINITY": math.inf, "NAN": math.nan, "HUGE_VALF": math.inf, "MAXFLOAT": 3.4028234663852886e38,
    "FLT_MAX": 3.4028234663852886e38, "FLT_MIN": 1.1754943508222875e-38, "FLT_EPSILON": 1.1920928955078125e-07,
    "M_PI_F": math.pi, "M_PI_2_F": math.pi / 2, "M_PI_4_F": math.pi / 4, "M_1_PI_F": 1 / math.pi,
    "M_2_PI_F": 2 / math.pi, "M_E_F": math.e, "M_LN2_F": math.log(2), "M_LN10_F": math.log(10),
    "M_LOG2E_F": math.log2(math.e), "M_LOG10E_F": math.log10(math.e), "M_SQRT2_F": math.sqrt(2),
    "M_SQRT1_2_F": math.sqrt(0.5), "M_2_SQRTPI_F": 2 / math.sqrt(math.pi),
}
_HALF_CONSTANTS = {"HALF_MAX": 65504.0, "HALF_MIN": 6.103515625e-05, "HALF_EPSILON": 0.0009765625,
                   "M_PI_H": math.pi, "MAXHALF": 65504.0}
_INT_CONSTANTS = {
    "INT_MAX": (INT, 2**31 - 1), "INT_MIN": (INT, -(2**31)), "UINT_MAX": (UINT, 2**32 - 1),
    "SHRT_MAX": (INT, 32767), "SHRT_MIN": (INT, -32768), "USHRT_MAX": (INT, 65535), "CHAR_MAX": (INT, 127),
    "CHAR_MIN": (INT, -128), "UCHAR_MAX": (INT, 255), "LONG_MAX": (LONG, 2**63 - 1), "LONG_MIN": (LONG, -(2**63)),
    "ULONG_MAX": (ULONG, 2**64 - 1), "CHAR_BIT": (INT, 8),
}


def lookup_constant(name: str, targs, ck) -> tuple[Type, object] | None:
    plain = name.removeprefix("metal::")
    if plain in _FLOAT_CONSTANTS:
        return FLOAT, _FLOAT_CONSTANTS[plain]
    if plain in _HALF_CONSTANTS:
        return HALF, _HALF_CONSTANTS[plain]
    if plain in _INT_CONSTANTS:
        return _INT_CONSTANTS[plain]
    if plain.startswith("Limits<>::") and targs:
        # MLX's Limits<T>::max / min / finite_max / finite_min (static constants, not calls).
        ty = ck.resolve_type(targs[0])
        member = plain.split("::")[-1]
        if isinstance(ty, ScalarType):
            if ty.is_float and member in ("max", "min"):
                value = math.inf if member == "max" else -math.inf
            elif ty.is_float:
                value = _limit(ty, {"finite_max": "max", "finite_min": "lowest"}.get(member, member), None)
            else:
                value = _limit(ty, {"finite_max": "max", "finite_min": "min"}.get(member, member), None)
            return ty, value
    return None




class StandardLibrary:
    """The builtins as the checker looks them up (``front.checker.Library``)."""

    def function(self, name: str) -> Builtin | None:
        return lookup_builtin(name)

    def constant(self, name: str, template_args, checker) -> tuple[Type, object] | None:
        return lookup_constant(name, template_args, checker)

    def function_names(self) -> set[str]:
        return set(BUILTINS)


STANDARD_LIBRARY = StandardLibrary()
