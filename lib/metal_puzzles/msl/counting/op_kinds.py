"""What kind of arithmetic an operator or a builtin call is, for the cost model.

The code generator asks this once per expression, at compile time, when it builds the
instrumented variant of a kernel (``CodeGen(..., cost=True)``); the cost recorder then counts
each kind per SIMD-group. The kinds are the rows of the throughput tables GPU vendors and
microbenchmarks publish (see ``observe/gpu_models.py``): fused multiply-adds, plain adds and
multiplies, divisions, transcendental ("special") functions, integer work, SIMD-group
communication.
"""

from __future__ import annotations

from ...compat import StrEnum
from ..front.ast import BinaryOp
from ..lang.types import ScalarType, Type, VectorType


class OpKind(StrEnum):
    """A class of arithmetic instruction with one throughput."""

    FLOAT_ADD = "float add"  # +, - (and compound assignments, ++, --)
    FLOAT_MUL = "float mul"
    FLOAT_FMA = "float fma"  # fma(), mad(): two floating-point operations in one instruction
    FLOAT_DIV = "float div"  # /, divide(), fmod
    FLOAT_SPECIAL = "float special"  # exp, log, sqrt, rsqrt, sin, pow, tanh...: the special-function unit
    FLOAT_OTHER = "float other"  # comparisons, min/max, abs, floor, clamp...
    INT_ADD = "int add"  # +, -, comparisons, bitwise, shifts, min/max
    INT_MUL = "int mul"
    INT_DIV = "int div"  # / and %: no hardware divider, a routine of multiplies
    SIMD = "simd"  # one SIMD-group shuffle or broadcast step (a simd_sum is several)

    @property
    def flops(self) -> int:
        """Floating-point operations one lane's instruction of this kind counts for (FMA = 2;
        comparisons and min/max are not counted, as FLOP counts conventionally do not)."""
        return _FLOPS.get(self, 0)


_FLOPS = {OpKind.FLOAT_ADD: 1, OpKind.FLOAT_MUL: 1, OpKind.FLOAT_FMA: 2, OpKind.FLOAT_DIV: 1,
          OpKind.FLOAT_SPECIAL: 1}

_FLOAT_BINARY = {BinaryOp.ADD: OpKind.FLOAT_ADD, BinaryOp.SUB: OpKind.FLOAT_ADD, BinaryOp.MUL: OpKind.FLOAT_MUL,
                 BinaryOp.DIV: OpKind.FLOAT_DIV}
_INT_BINARY = {BinaryOp.MUL: OpKind.INT_MUL, BinaryOp.DIV: OpKind.INT_DIV, BinaryOp.MOD: OpKind.INT_DIV}


class BuiltinCost(StrEnum):
    """What one call of a builtin function costs: each builtin's row in ``msl/library`` declares
    its own (``Builtin.cost``), and ``builtin_kind`` turns it into instructions of an ``OpKind``."""

    NOT_ARITHMETIC = "not arithmetic"  # barriers, atomics (counted as memory accesses), the launch's attributes
    ELEMENTWISE = "elementwise"  # one instruction per component: FLOAT_OTHER on floats, INT_ADD on integers
    SPECIAL = "special function"  # exp, log, sqrt, sin, pow...: the special-function unit
    FMA = "fused multiply-add"  # fma, mad: FLOAT_FMA (2 flops); on integers a multiply
    FLOAT_DIVISION = "float division"  # divide, fmod
    DOT = "dot product"  # dot, cross: one FMA instruction per component
    SIMD_STEP = "SIMD-group step"  # one shuffle, broadcast or vote
    SIMD_REDUCTION = "SIMD-group reduction"  # a reduction or scan: log2(32) = 5 shuffle steps
    MATRIX_PRODUCT = "SIMD-group matrix product"  # an 8x8 by 8x8 product shared by 32 lanes


#: A SIMD-group reduction or scan over 32 lanes is log2(32) = 5 steps.
_SIMD_STEPS = 5
#: An 8x8 by 8x8 SIMD-group matrix product is 8 * 8 * 8 = 512 multiply-adds shared by 32 lanes.
_MATRIX_FMAS_PER_LANE = 8 * 8 * 8 // 32
#: The cost classes whose instructions are the same whatever the argument's type.
_FIXED: dict[BuiltinCost, tuple[OpKind, int]] = {
    BuiltinCost.SPECIAL: (OpKind.FLOAT_SPECIAL, 1),
    BuiltinCost.FLOAT_DIVISION: (OpKind.FLOAT_DIV, 1),
    BuiltinCost.DOT: (OpKind.FLOAT_FMA, 1),
    BuiltinCost.SIMD_STEP: (OpKind.SIMD, 1),
    BuiltinCost.SIMD_REDUCTION: (OpKind.SIMD, _SIMD_STEPS),
    BuiltinCost.MATRIX_PRODUCT: (OpKind.FLOAT_FMA, _MATRIX_FMAS_PER_LANE),
}


def elem_of(ty: Type) -> tuple[ScalarType | None, int]:
    """The element type and the number of components of a value's type (1 for scalars)."""
    if isinstance(ty, VectorType):
        return ty.elem, ty.n
    if isinstance(ty, ScalarType):
        return ty, 1
    return None, 1


def binary_kind(op: BinaryOp, operand_ty: Type, divisor: int | None = None) -> OpKind | None:
    """The kind of ``x op y`` computed in ``operand_ty`` (None: not arithmetic, e.g. on pointers).

    ``divisor`` is ``y`` when it is a compile-time constant: compilers turn an integer division
    or remainder by a constant power of two into a shift or a mask, and by another constant into
    a multiply and a shift; only a division by a run-time value needs the division routine.
    """
    elem, _ = elem_of(operand_ty)
    if elem is None or elem.name == "bool":
        return None
    if elem.is_float:
        if op in _FLOAT_BINARY:
            return _FLOAT_BINARY[op]
        return OpKind.FLOAT_OTHER if op.is_comparison else None
    if op in (BinaryOp.DIV, BinaryOp.MOD) and divisor is not None and divisor > 0:
        return OpKind.INT_ADD if divisor & (divisor - 1) == 0 else OpKind.INT_MUL
    return _INT_BINARY.get(op, OpKind.INT_ADD)


def builtin_kind(cost: BuiltinCost, arg_ty: Type | None) -> tuple[OpKind, int] | None:
    """The kind of one call of a builtin of cost class ``cost`` whose arguments have type
    ``arg_ty``, and how many instructions of that kind one call is (a SIMD-group reduction is
    several shuffle steps); None for builtins that are not arithmetic."""
    if cost in _FIXED:
        return _FIXED[cost]
    if cost == BuiltinCost.NOT_ARITHMETIC:
        return None
    elem, _ = elem_of(arg_ty) if arg_ty is not None else (None, 1)
    if cost == BuiltinCost.FMA:
        return (OpKind.FLOAT_FMA, 1) if elem is None or elem.is_float else (OpKind.INT_MUL, 1)
    assert cost == BuiltinCost.ELEMENTWISE, cost
    if elem is None:
        return None
    return (OpKind.FLOAT_OTHER, 1) if elem.is_float else (OpKind.INT_ADD, 1)
