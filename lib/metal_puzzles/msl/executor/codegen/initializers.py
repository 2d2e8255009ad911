"""Aggregate initial values laid out as memory: a constant array's values flattened, and an
initializer list's items with the unit offsets they fill."""

from __future__ import annotations

from typing import Any, cast

from ...front import ast
from ...lang.types import ArrayType, Type, units_in


def flatten(value: Any, ty: Type) -> list:
    """A constant's value (nested lists for arrays) as its units in memory order, missing
    elements zero."""
    if isinstance(ty, ArrayType):
        out = []
        for k in range(ty.n):
            if k < len(value):
                out.extend(flatten(value[k], ty.elem))
            else:
                out.extend([0] * units_in(ty.elem))
        return out
    return [value]


def flatten_init(init: ast.InitList) -> list[ast.Expr]:
    """The items of a (nested) initializer list, in order."""
    out: list[ast.Expr] = []
    for item in init.items:
        if isinstance(item, ast.InitList):
            out.extend(flatten_init(item))
        else:
            out.append(item)
    return out


def init_offsets(init: ast.InitList, ty: ArrayType) -> list[int]:
    """The unit offset in an array of type ``ty`` that each of ``flatten_init(init)`` fills."""
    out: list[int] = []
    stride = units_in(ty.elem)
    for k, item in enumerate(init.items):
        if isinstance(item, ast.InitList):
            out.extend(k * stride + o for o in init_offsets(item, cast(ArrayType, ty.elem)))
        else:
            out.append(k * stride)
    return out
