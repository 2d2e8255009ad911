"""Turns the checked syntax tree into Python closures that run every thread of the grid in
lock-step over NumPy arrays. Each expression becomes ``f(ctx, mask) -> value``; each statement
``f(ctx, mask) -> None``. The tree is compiled once per kernel instance and reused.

A composition, as the checker is: ``CodeGen`` holds the shared state (``codegen_state``) and one
part per concept, each a ``CodeGenPart`` reaching the others through the interface it is declared
under (``interfaces``): ``expressions``, ``operators``, ``calls`` and ``places`` (lvalues) compile
expressions, ``declarations`` and ``statements`` statements. Each part names the nodes it
compiles in a table; ``CodeGen`` joins the tables (checked complete at import) and binds each
handler to its part. What the compiled code calls at run time: ``masks`` (which lanes run),
``locations`` (what an lvalue designates), ``pointers``, ``subscript_checks``, ``arithmetic`` and
``initializers``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, TypeVar

from ...front import ast
from ...front.dispatch import dispatch_table
from . import calls, declarations, expressions, operators, statements
from .calls import Calls
from .codegen_state import CodeGenState
from .declarations import Declarations
from .expressions import Expressions
from .interfaces import Compiled
from .operators import Operators
from .places import Places
from .statements import Statements

NodeT = TypeVar("NodeT", bound=ast.Node)
PartT = TypeVar("PartT")
ResultT = TypeVar("ResultT")


def _joined(base: type[NodeT], *tables: Mapping[type[NodeT], Any]) -> dict[type[NodeT], Any]:
    """The parts' tables for the nodes under ``base`` as one; a node two parts claim is an error
    at import."""
    joined: dict[type[NodeT], Any] = {}
    for table in tables:
        both = sorted(node.__name__ for node in joined.keys() & table.keys())
        if both:
            raise TypeError(f"the code generator's parts both compile {', '.join(both)}")
        joined.update(table)
    return joined


def _bound(part: PartT, table: Mapping[type[NodeT], Callable[[PartT, Any], ResultT]]
           ) -> dict[type[NodeT], Callable[[Any], ResultT]]:
    """A part's table with each handler bound to the part."""
    return {node: partial(handler, part) for node, handler in table.items()}


#: Expression nodes no checked tree holds, and why.
NEVER_COMPILED: dict[type[ast.Expr], str] = {
    ast.PackExpansion: "the checker expands 'pattern...' into one argument per pack element "
                       "(checker/packs.py) or refuses it, so no checked tree holds one",
}


class CodeGen(CodeGenState):
    """Compiles a checked kernel into closures.

    With ``cost=True`` it compiles the instrumented variant the cost model runs: every statement
    and loop iteration, and every arithmetic operation, also reports to ``ctx.cost`` (the cost
    recorder). The plain variant contains none of those calls, so a run that does not ask for a
    cost profile pays nothing for it.
    """

    #: The handler of each expression and statement node, from the parts' tables.
    expression_handlers = dispatch_table("the code generator's expressions", ast.Expr, _joined(
        ast.Expr, expressions.EXPRESSION_HANDLERS, operators.EXPRESSION_HANDLERS, calls.EXPRESSION_HANDLERS,
    ), never=NEVER_COMPILED)
    statement_handlers = dispatch_table("the code generator's statements", ast.Stmt, _joined(
        ast.Stmt, declarations.STATEMENT_HANDLERS, statements.STATEMENT_HANDLERS,
    ))

    def __init__(self, *, cost: bool = False) -> None:
        super().__init__(cost=cost)
        exprs, ops, call_part = Expressions(self), Operators(self), Calls(self)
        decls, stmts = Declarations(self), Statements(self)
        self.exprs, self.operators, self.calls = exprs, ops, call_part
        self.places = Places(self)
        self.decls, self.stmts = decls, stmts
        self.expression_dispatch = {
            **_bound(exprs, expressions.EXPRESSION_HANDLERS), **_bound(ops, operators.EXPRESSION_HANDLERS),
            **_bound(call_part, calls.EXPRESSION_HANDLERS)}
        self.statement_dispatch = {
            **_bound(decls, declarations.STATEMENT_HANDLERS), **_bound(stmts, statements.STATEMENT_HANDLERS)}

    def compile_body(self, body: ast.Stmt) -> Compiled:
        """A kernel's body (or any statement) compiled, with whether it may jump."""
        return self.stmts.stmt(body)


__all__ = ["CodeGen"]
