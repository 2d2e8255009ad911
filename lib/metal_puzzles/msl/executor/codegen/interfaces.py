"""What the code generator's parts exchange and offer each other. Compiled code is ``Fn``
(``f(ctx, mask) -> value``) and ``Compiled`` (a statement, and whether it may jump); each part
offers what is listed in its ``Protocol`` here (``CodeGen`` in __init__.py makes the parts;
``CodeGenState.exprs``, ``.places``, ... hold them under these types, so mypy checks every call
one part makes of another, and that each part still offers what it lists). A part's method that
no other part calls and no node is dispatched to is private to its module and not here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ...front import ast
from ...front.symbols import FuncInstance
from ..runtime import Ctx
from .masks import Mask

#: A compiled expression or statement: ``f(ctx, mask)`` runs it for the lanes of the mask and
#: gives its value (None for a statement).
Fn = Callable[[Ctx, Mask], Any]

#: A compiled statement (None when nothing runs) and whether it may jump (break, continue,
#: return), so that the block around it drops the lanes that left.
Compiled = tuple[Fn | None, bool]


class ExpressionsApi(Protocol):
    """Any expression compiled to its value, by its node's handler; literals, names, conversions,
    casts, constructors, subscripts, members, struct values (expressions.py)."""

    def expr(self, e: ast.Expr) -> Fn: ...


class PlacesApi(Protocol):
    """Lvalues compiled to the location they designate, and the addresses of elements (places.py)."""

    def lvalue(self, e: ast.Expr) -> Fn: ...
    def address(self, e: ast.Index) -> Fn: ...
    def column_loc(self, e: ast.Index) -> Fn: ...


class OperatorsApi(Protocol):
    """Unary, binary and assignment operators, '?:' and the comma (operators.py)."""

    def x_Unary(self, e: ast.Unary) -> Fn: ...
    def x_Postfix(self, e: ast.Postfix) -> Fn: ...
    def x_Binary(self, e: ast.Binary) -> Fn: ...
    def x_Assign(self, e: ast.Assign) -> Fn: ...
    def x_Ternary(self, e: ast.Ternary) -> Fn: ...
    def x_Comma(self, e: ast.Comma) -> Fn: ...


class CallsApi(Protocol):
    """Calls of builtins and of header functions, the latter also as places when they return a
    reference (calls.py)."""

    def x_Call(self, e: ast.Call) -> Fn: ...
    def call_function(self, e: ast.Call, inst: FuncInstance) -> Fn: ...


class DeclarationsApi(Protocol):
    """Local declarations: registers, references and thread-private memory (declarations.py)."""

    def s_Decl(self, s: ast.Decl) -> Compiled: ...
    def s_LocalTypeDef(self, s: ast.LocalTypeDef) -> Compiled: ...


class StatementsApi(Protocol):
    """Any statement compiled with its steps of the budget, by its node's handler; blocks,
    branches, loops, switch and jumps (statements.py)."""

    def stmt(self, s: ast.Stmt) -> Compiled: ...
