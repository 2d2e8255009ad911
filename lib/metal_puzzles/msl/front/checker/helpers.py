"""Small functions on syntax trees the checker's parts share."""

from __future__ import annotations

from typing import Any

from ...lang.errors import CompileError, Pos
from ...lang.types import (
    BOOL,
    ArrayType,
    ScalarType,
    Type,
)
from .. import ast
from ..ast import ConvertKind


def designates_part_of(e: ast.Expr, base: ast.Expr) -> None:
    """A component or swizzle of an object is that object's part: same lvalue-ness and memory."""
    e.lvalue = base.lvalue
    e.memory = base.memory
    e.space = base.space
    e.const_mem = base.const_mem


def callee_name(e: ast.Call) -> ast.Name:
    """The name a call calls, where the caller has made sure it calls one by name."""
    assert isinstance(e.func, ast.Name)
    return e.func


def flatten_items(init: ast.InitList) -> list[ast.Expr]:
    out: list[ast.Expr] = []
    for x in init.items:
        out.extend(flatten_items(x) if isinstance(x, ast.InitList) else [x])
    return out


def regroup(init: ast.InitList, ty: ArrayType) -> ast.InitList:
    """Brace elision: '{1, 2, 3, 4}' for 'float m[2][2]' means '{{1, 2}, {3, 4}}'."""
    flat = list(init.items)

    def build(t: Type) -> ast.Expr | None:
        if not isinstance(t, ArrayType):
            return flat.pop(0) if flat else None
        items: list[ast.Expr | None] = []
        for _ in range(t.n):
            if not flat:
                break
            items.append(build(t.elem))
        return ast.InitList(init.pos, [x for x in items if x is not None])
    out = build(ty)
    if flat:
        raise CompileError(f"too many initializers for '{ty}'", init.pos)
    assert isinstance(out, ast.InitList)  # an array's items are built into a list
    return out


def start_pos(e: ast.Expr) -> Pos:
    """Position of the leftmost token of an expression (where clang puts its caret)."""
    while True:
        if isinstance(e, ast.Index | ast.Member):
            e = e.base
        elif isinstance(e, ast.Binary):
            e = e.left
        elif isinstance(e, ast.Postfix):
            e = e.operand
        elif isinstance(e, ast.Convert):
            e = e.operand
        else:
            return e.pos


def addressed_names(node: ast.Node) -> set[str]:
    """Names of variables whose address is taken ('&x', '&v.x'): they must live in memory."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Unary) and n.op == ast.UnaryOp.ADDRESS:
            inner = n.operand
            while isinstance(inner, ast.Member):
                inner = inner.base
            if isinstance(inner, ast.Name):
                out.add(inner.ident)
    return out


def typed_placeholder(target: ast.Expr) -> ast.Expr:
    """Stand-in for the target's current value in 'a op= b' (already type-checked)."""
    ph = ast.Convert(target.pos, target, ConvertKind.LOAD)
    ph.ty = target.ty
    return ph


def cast_const(v: Any, ty: Type) -> Any:
    if isinstance(ty, ScalarType):
        if ty.is_float:
            return float(v)
        if ty == BOOL:
            return bool(v)
        bits = ty.bits
        v = int(v) & ((1 << bits) - 1)
        if ty.signed and v >= 1 << (bits - 1):
            v -= 1 << bits
        return v
    return v
