"""Integer functions: bit counting and reversal, wide multiplies, rotates, saturating and halving
arithmetic, 24-bit multiplies, bit-field extraction and insertion."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..counting.op_kinds import BuiltinCost
from ..executor.codegen.codegen_state import CodeGenState
from ..executor.codegen.interfaces import Fn
from ..executor.codegen.masks import Mask
from ..executor.runtime import Ctx
from ..front import ast
from ..front.checker.checker_state import CheckerState
from ..lang.errors import KernelRuntimeError
from ..lang.types import (
    UINT,
    ScalarType,
    Type,
    scalar_of,
)
from .base import (
    Builtin,
    Elementwise,
    TemplateArgs,
    as_dtype,
    nargs,
    register,
    unify,
    unsigned_of_width,
)


def _popcount(elem: ScalarType) -> Any:
    unsigned = unsigned_of_width(elem.bits)
    return lambda x: np.bitwise_count(np.asarray(x).astype(unsigned)).astype(elem.dtype)


def _clz(elem: ScalarType) -> Any:
    bits = elem.bits

    def clz(x: Any) -> Any:
        u = np.asarray(x).astype(unsigned_of_width(elem.bits))
        n = np.zeros(u.shape, dtype=np.int64)
        width = bits
        cur = u.copy()
        shift = bits // 2
        while shift:
            top = cur >> cur.dtype.type(width - shift)
            zero_top = top == 0
            n = np.where(zero_top, n + shift, n)
            cur = np.where(zero_top, cur << cur.dtype.type(shift), cur)
            shift //= 2
        n = np.where(u == 0, bits, n)
        return n.astype(elem.dtype)
    return clz


def _ctz(elem: ScalarType) -> Any:
    bits = elem.bits

    def ctz(x: Any) -> Any:
        u = np.asarray(x).astype(unsigned_of_width(bits))
        low = u & (~u + u.dtype.type(1))  # lowest set bit
        n = np.zeros(u.shape, dtype=np.int64)
        for k in range(bits):
            n = np.where(low == (u.dtype.type(1) << u.dtype.type(k)), k, n)
        n = np.where(u == 0, bits, n)
        return n.astype(elem.dtype)
    return ctz


def _reverse_bits(elem: ScalarType) -> Any:
    bits = elem.bits

    def rev(x: Any) -> Any:
        u = np.asarray(x).astype(unsigned_of_width(bits))
        out = np.zeros_like(u)
        one = u.dtype.type(1)
        for k in range(bits):
            out |= ((u >> u.dtype.type(k)) & one) << u.dtype.type(bits - 1 - k)
        return out.astype(elem.dtype)
    return rev




def _wide(elem: ScalarType) -> Any:
    return np.int64 if elem.signed else np.uint64


def _mulhi(elem: ScalarType) -> Any:
    bits = elem.bits

    def mulhi(x: Any, y: Any) -> Any:
        if bits == 64:
            raise KernelRuntimeError("mulhi on 64-bit integers is not supported by the simulator")
        p = np.asarray(x).astype(_wide(elem)) * np.asarray(y).astype(_wide(elem))
        return (p >> _wide(elem)(bits)).astype(elem.dtype)
    return mulhi


def _madhi(elem: ScalarType) -> Any:
    hi = _mulhi(elem)
    return lambda x, y, z: (np.asarray(hi(x, y)) + z).astype(elem.dtype)


def _rotate(elem: ScalarType) -> Any:
    bits = elem.bits
    u = unsigned_of_width(bits)

    def rotate(x: Any, k: Any) -> Any:
        xu = np.asarray(x).astype(u)
        s = (np.asarray(k).astype(np.int64) % bits).astype(u)
        back = ((u(bits) - s) % u(bits)).astype(u)
        return ((xu << s) | np.where(s == 0, u(0), xu >> back)).astype(elem.dtype)
    return rotate


def _saturating(elem: ScalarType, op: Any) -> Any:
    lo, hi = np.iinfo(elem.dtype).min, np.iinfo(elem.dtype).max

    def sat(x: Any, y: Any) -> Any:
        if elem.bits == 64:
            wide = np.asarray(x).astype(object) + (np.asarray(y).astype(object) if op == "+" else -np.asarray(y).astype(object))
            return np.clip(wide, lo, hi).astype(elem.dtype)
        wide = np.asarray(x).astype(np.int64)
        wide = wide + np.asarray(y).astype(np.int64) if op == "+" else wide - np.asarray(y).astype(np.int64)
        return np.clip(wide, lo, hi).astype(elem.dtype)
    return sat


def _addsat(elem: ScalarType) -> Any:
    return _saturating(elem, "+")


def _subsat(elem: ScalarType) -> Any:
    return _saturating(elem, "-")


def _hadd(elem: ScalarType) -> Any:
    return lambda x, y: ((np.asarray(x).astype(np.int64) + np.asarray(y).astype(np.int64)) >> 1).astype(elem.dtype)


def _rhadd(elem: ScalarType) -> Any:
    return lambda x, y: ((np.asarray(x).astype(np.int64) + np.asarray(y).astype(np.int64) + 1) >> 1).astype(elem.dtype)


def _mul24(elem: ScalarType) -> Any:
    return lambda x, y: (np.asarray(x).astype(np.int64) * np.asarray(y).astype(np.int64)).astype(elem.dtype)


def _mad24(elem: ScalarType) -> Any:
    return lambda x, y, z: (np.asarray(x).astype(np.int64) * np.asarray(y).astype(np.int64)
                            + np.asarray(z).astype(np.int64)).astype(elem.dtype)


register(Elementwise("popcount", 1, _popcount, cost=BuiltinCost.ELEMENTWISE, ints_only=True, per_type=True))
register(Elementwise("clz", 1, _clz, cost=BuiltinCost.ELEMENTWISE, ints_only=True, per_type=True))
register(Elementwise("ctz", 1, _ctz, cost=BuiltinCost.ELEMENTWISE, ints_only=True, per_type=True))
register(Elementwise("reverse_bits", 1, _reverse_bits, cost=BuiltinCost.ELEMENTWISE, ints_only=True, per_type=True))
for _n, _f, _k in (("mulhi", _mulhi, 2), ("madhi", _madhi, 3), ("rotate", _rotate, 2), ("addsat", _addsat, 2),
                   ("subsat", _subsat, 2), ("hadd", _hadd, 2), ("rhadd", _rhadd, 2), ("mul24", _mul24, 2),
                   ("mad24", _mad24, 3)):
    register(Elementwise(_n, _k, _f, cost=BuiltinCost.ELEMENTWISE, ints_only=True, per_type=True))


class BitField(Builtin):
    """extract_bits(x, offset, bits) and insert_bits(base, insert, offset, bits)."""

    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:
        n = 3 if self.name == "extract_bits" else 4
        nargs(call, args, n)
        values = args[: n - 2]
        fake = ast.Call(call.pos, call.func, values)
        t = unify(ck, fake, values, ints_only=True)
        call.args = fake.args + [ck.conversions.convert(ck.conversions.rvalue(a), UINT, f"'{self.name}'") for a in args[n - 2:]]
        call.arg_ty = t
        return t

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:
        elem = scalar_of(call.arg_ty)
        u = unsigned_of_width(elem.bits)

        def field_mask(bits: Any) -> Any:
            b = np.asarray(bits).astype(np.uint64)
            return np.where(b >= elem.bits, np.uint64(2**elem.bits - 1), (np.uint64(1) << b) - np.uint64(1)).astype(u)

        if self.name == "extract_bits":
            x, off, bits = fns

            def extract(c: Ctx, m: Mask) -> Any:
                o = np.asarray(off(c, m)).astype(u)
                v = (np.asarray(x(c, m)).astype(u) >> o) & field_mask(bits(c, m))
                if elem.signed:  # sign-extend the field
                    b = np.asarray(bits(c, m)).astype(np.int64)
                    sign = (v.astype(np.uint64) >> np.maximum(b - 1, 0).astype(np.uint64)) & np.uint64(1)
                    v = np.where((sign == 1) & (b < elem.bits), v | ~field_mask(b), v)
                return as_dtype(np.asarray(v).astype(u).astype(elem.dtype), elem.dtype)
            return extract
        base, ins, off, bits = fns

        def insert(c: Ctx, m: Mask) -> Any:
            o = np.asarray(off(c, m)).astype(u)
            fm = field_mask(bits(c, m)) << o
            v = (np.asarray(base(c, m)).astype(u) & ~fm) | ((np.asarray(ins(c, m)).astype(u) << o) & fm)
            return as_dtype(np.asarray(v).astype(elem.dtype), elem.dtype)
        return insert


register(BitField("extract_bits", BuiltinCost.ELEMENTWISE))
register(BitField("insert_bits", BuiltinCost.ELEMENTWISE))
