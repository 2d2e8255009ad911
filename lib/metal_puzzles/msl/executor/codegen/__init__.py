"""Turns the checked syntax tree into Python closures that run every thread of the grid in
lock-step over NumPy arrays. Each expression becomes ``f(ctx, mask) -> value``; each statement
``f(ctx, mask) -> None``. The tree is compiled once per kernel instance and reused.

Its parts: ``expressions``, ``operators``, ``calls`` and ``places`` (lvalues) compile
expressions, ``declarations`` and ``statements`` statements, each a mixin of ``CodeGen`` sharing
``codegen_state`` (the checker, unlike it, is a composition of parts); ``CodeGen`` names each node's
handler in its two tables. What the compiled code calls at run time: ``masks`` (which lanes run),
``locations`` (what an lvalue designates), ``pointers``, ``subscript_checks``,
``arithmetic`` and ``initializers``."""

from __future__ import annotations

from ...front import ast
from ...front.dispatch import dispatch_table
from ...front.parser import AliasStmt
from .calls import Calls
from .declarations import Declarations
from .expressions import Expressions
from .operators import Operators
from .places import Places
from .statements import Statements


class CodeGen(Statements, Declarations, Calls, Operators, Expressions, Places):
    """Compiles a checked kernel into closures.

    With ``cost=True`` it compiles the instrumented variant the cost model runs: every statement
    and loop iteration, and every arithmetic operation, also reports to ``ctx.cost`` (the cost
    recorder). The plain variant contains none of those calls, so a run that does not ask for a
    cost profile pays nothing for it.
    """

    expression_handlers = dispatch_table("the code generator's expressions", ast.Expr, {
        ast.IntLit: Expressions.x_IntLit, ast.FloatLit: Expressions.x_FloatLit, ast.BoolLit: Expressions.x_BoolLit,
        ast.Name: Expressions.x_Name, ast.Convert: Expressions.x_Convert, ast.Cast: Expressions.x_Cast,
        ast.Construct: Expressions.x_Construct, ast.Index: Expressions.x_Index, ast.Member: Expressions.x_Member,
        ast.StructInit: Expressions.x_StructInit, ast.TemporaryObject: Expressions.x_TemporaryObject,
        ast.SizeOf: Expressions.x_SizeOf, ast.InitList: Expressions.x_InitList, ast.Call: Calls.x_Call,
        ast.Unary: Operators.x_Unary, ast.Postfix: Operators.x_Postfix, ast.Binary: Operators.x_Binary,
        ast.Assign: Operators.x_Assign, ast.Ternary: Operators.x_Ternary, ast.Comma: Operators.x_Comma,
    }, never={
        ast.PackExpansion: "the checker expands 'pattern...' into one argument per pack element "
                           "(checker/packs.py) or refuses it, so no checked tree holds one",
    })
    statement_handlers = dispatch_table("the code generator's statements", ast.Stmt, {
        ast.Decl: Declarations.s_Decl, ast.LocalTypeDef: Declarations.s_LocalTypeDef,
        ast.Block: Statements.s_Block, ast.Empty: Statements.s_Empty, ast.UsingNamespace: Statements.s_UsingNamespace,
        ast.StaticAssert: Statements.s_StaticAssert, AliasStmt: Statements.s_AliasStmt,
        ast.ExprStmt: Statements.s_ExprStmt, ast.If: Statements.s_If, ast.For: Statements.s_For,
        ast.While: Statements.s_While, ast.DoWhile: Statements.s_DoWhile, ast.Break: Statements.s_Break,
        ast.Continue: Statements.s_Continue, ast.Return: Statements.s_Return, ast.Switch: Statements.s_Switch,
        ast.Case: Statements.s_Case,
    })


__all__ = ["CodeGen"]
