"""Named constants (FLT_MAX, M_PI_F, ...), ``numeric_limits<T>`` and MLX's ``Limits<T>``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..counting.op_kinds import BuiltinCost
from ..executor.codegen.codegen_state import CodeGenState
from ..executor.codegen.interfaces import Fn
from ..front import ast
from ..front.checker.checker_state import CheckerState
from ..front.checker.helpers import callee_name
from ..lang.errors import CompileError
from ..lang.metal_namespace import strip_metal_namespace
from ..lang.types import (
    BFLOAT,
    BOOL,
    FLOAT,
    HALF,
    INT,
    LONG,
    UINT,
    ULONG,
    ScalarType,
    Type,
    VectorType,
)
from .base import Builtin, TemplateArgs, nargs
from .type_traits import lookup_trait


# ============================================================================ numeric limits
class NumericLimits(Builtin):
    """metal::numeric_limits<T>::max() and friends."""

    def check(self, ck: CheckerState, call: ast.Call, args: list[ast.Expr], targs: TemplateArgs) -> Type:
        nargs(call, args, 0)
        member = callee_name(call).ident.split("::")[-1]
        if not targs or len(targs) != 1:
            raise CompileError("numeric_limits needs one type argument", call.pos)
        ty = ck.types.resolve_type(targs[0])
        if isinstance(ty, VectorType):  # Metal's vectors have limits too: the element's, in every component
            call.const_value = np.full(ty.n, _limit(ty.elem, member, call), dtype=ty.elem.dtype)
            return ty
        if not isinstance(ty, ScalarType):
            raise CompileError(f"numeric_limits<{ty}> is not defined", call.pos)
        call.const_value = ty.dtype.type(_limit(ty, member, call))
        return ty

    def emit(self, cg: CodeGenState, call: ast.Call, fns: list[Fn]) -> Fn:
        v = call.const_value
        return lambda c, m: v


def _limit(ty: ScalarType, member: str, node: Any) -> float | int:
    if ty == BOOL:
        return {"max": 1, "min": 0, "lowest": 0}.get(member, 0)
    if ty.is_int:
        ints = np.iinfo(ty.dtype)
        table: dict[str, float | int] = {"max": ints.max, "min": ints.min, "lowest": ints.min, "finite_max": ints.max,
                 "finite_min": ints.min}
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


NUMERIC_LIMITS = NumericLimits("numeric_limits", BuiltinCost.NOT_ARITHMETIC)

#: numeric_limits's static data members, as values (C++'s <limits>, which Metal's mirrors).
_LIMIT_DATA = ("digits", "digits10", "is_signed", "is_integer", "is_exact", "radix", "has_infinity",
               "has_quiet_NaN", "is_specialized", "max_exponent", "min_exponent")


def _limit_data(ty: ScalarType, member: str) -> tuple[Type, object]:
    """``numeric_limits<ty>::member``: significand bits (digits: 24 for float, 11 for half, 8 for
    bfloat; value bits for integers), and the other static members."""
    if ty.is_float:
        digits, max_exp, min_exp = {HALF: (11, 16, -13), BFLOAT: (8, 128, -125)}.get(ty, (24, 128, -125))
    else:
        digits, max_exp, min_exp = (1 if ty == BOOL else ty.bits - (1 if ty.signed else 0)), 0, 0
    values = {"digits": digits, "digits10": int((digits - 1) * math.log10(2)) if ty.is_float
              else int(digits * math.log10(2)), "is_signed": ty.signed and ty != BOOL,
              "is_integer": not ty.is_float, "is_exact": not ty.is_float, "radix": 2,
              "has_infinity": ty.is_float, "has_quiet_NaN": ty.is_float, "is_specialized": True,
              "max_exponent": max_exp, "min_exponent": min_exp}
    value = values[member]
    return (BOOL, bool(value)) if isinstance(value, bool) else (INT, int(value))


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


#: Every constant a kernel may name without qualification: what a misspelt name is compared with.
CONSTANT_NAMES = frozenset(_FLOAT_CONSTANTS) | frozenset(_HALF_CONSTANTS) | frozenset(_INT_CONSTANTS)


def lookup_constant(name: str, targs: TemplateArgs, ck: CheckerState) -> tuple[Type, object] | None:
    plain = strip_metal_namespace(name)
    if plain in _FLOAT_CONSTANTS:
        return FLOAT, _FLOAT_CONSTANTS[plain]
    if plain in _HALF_CONSTANTS:
        return HALF, _HALF_CONSTANTS[plain]
    if plain in _INT_CONSTANTS:
        return _INT_CONSTANTS[plain]
    if plain.startswith("numeric_limits<>::") and targs and plain.split("::")[-1] in _LIMIT_DATA:
        # The static data members (numeric_limits<T>::digits), beside the member functions (max()).
        ty = ck.types.resolve_type(targs[0])
        if isinstance(ty, ScalarType):
            return _limit_data(ty, plain.split("::")[-1])
    if plain.startswith("Limits<>::") and targs:
        # MLX's Limits<T>::max / min / finite_max / finite_min (static constants, not calls).
        ty = ck.types.resolve_type(targs[0])
        member = plain.split("::")[-1]
        if isinstance(ty, ScalarType):
            if ty.is_float and member in ("max", "min"):
                value = math.inf if member == "max" else -math.inf
            elif ty.is_float:
                value = _limit(ty, {"finite_max": "max", "finite_min": "lowest"}.get(member, member), None)
            else:
                value = _limit(ty, {"finite_max": "max", "finite_min": "min"}.get(member, member), None)
            return ty, value
    return lookup_trait(name, targs, ck)
