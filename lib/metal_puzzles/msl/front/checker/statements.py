"""Statements: scopes, control flow and what may appear where."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...lang.errors import CompileError
from ...lang.types import (
    AddressSpace,
    ScalarType,
    Type,
    VoidType,
    promote,
)
from .. import ast
from ..dispatch import dispatch_table
from ..parser.statements import AliasStmt
from .checker_state import CheckerPart
from .entries import Scope


class Statements(CheckerPart):
    def returned_reference(self, value: ast.Expr, ret: Type) -> ast.Expr:
        """What a function returning a reference returns: an object of its type (not a copy)."""
        assert self.chk.func is not None
        value = self.chk.exprs.expr(value)
        if isinstance(value, ast.Ternary):
            raise CompileError("the simulator does not follow a reference through '?:'; return each object from "
                               "its own 'return' in an if/else", value.pos)
        if not value.lvalue:
            raise CompileError(f"returning a reference to a temporary value; a function returning '{ret}&' must "
                               "return an object (an element, '*p', a reference parameter)", value.pos)
        if value.ty != ret:
            raise CompileError(f"a function returning '{ret}&' cannot return a reference to a '{value.ty}'",
                               value.pos)
        if value.const_mem and not self.chk.func.ret_const:
            raise CompileError(f"returning a read-only object through a non-const '{ret}&' would drop 'const'",
                               value.pos)
        space = value.space or AddressSpace.THREAD
        if space != self.chk.func.ret_space:
            raise CompileError(f"the function returns a '{self.chk.func.ret_space} {ret}&' but this object is in "
                               f"{space} memory", value.pos)
        return value

    def stmt_block_contents(self, block: ast.Block) -> None:
        for s in block.stmts:
            self.stmt(s)

    def stmt(self, s: ast.Stmt) -> None:
        STATEMENT_HANDLERS[type(s)](self, s)

    def s_Block(self, s: ast.Block) -> None:
        saved = self.chk.scope
        self.chk.scope = Scope(saved)
        self.stmt_block_contents(s)
        self.chk.scope = saved

    def s_Decl(self, s: ast.Decl) -> None:
        self.chk.decls.local_decl(s)

    def s_ExprStmt(self, s: ast.ExprStmt) -> None:
        s.expr = self.chk.exprs.expr(s.expr)
        if isinstance(s.expr, ast.Call):
            s.expr.value_unused = True

    def s_If(self, s: ast.If) -> None:
        s.cond = self.condition(s.cond)
        self.scoped(s.then)
        if s.other is not None:
            self.scoped(s.other)

    def s_For(self, s: ast.For) -> None:
        saved = self.chk.scope
        self.chk.scope = Scope(saved)
        if s.init is not None:
            self.stmt(s.init)
        if s.cond is not None:
            s.cond = self.condition(s.cond)
        if s.step is not None:
            s.step = self.chk.exprs.expr(s.step)
        self.loop_body(s.body)
        self.chk.scope = saved

    def s_While(self, s: ast.While) -> None:
        s.cond = self.condition(s.cond)
        self.loop_body(s.body)

    def s_DoWhile(self, s: ast.DoWhile) -> None:
        self.loop_body(s.body)
        s.cond = self.condition(s.cond)

    def s_Switch(self, s: ast.Switch) -> None:
        s.value = self.chk.exprs.expr(s.value)
        vt = s.value.ty
        if not (isinstance(vt, ScalarType) and vt.kind in ("int", "bool")):
            raise CompileError(f"switch needs an integer value, not '{vt}'", s.value.pos)
        s.value = self.chk.conversions.convert(s.value, promote(vt), "switch")
        assert self.chk.func is not None
        self.chk.func.switch_depth += 1
        saved = self.chk.scope
        self.chk.scope = Scope(saved)
        seen = set()
        for st in s.body.stmts:
            if isinstance(st, ast.Case):  # the switch's own labels; s_Case is a stray one
                if st.value is not None:
                    v = self.chk.types.const_int(st.value, "case value")
                    if v in seen:
                        raise CompileError(f"duplicate case value {v}", st.pos)
                    seen.add(v)
                    st.value = ast.IntLit(st.value.pos, v)
                    st.value.ty = s.value.ty
            else:
                self.stmt(st)
        self.chk.scope = saved
        self.chk.func.switch_depth -= 1

    def s_Case(self, s: ast.Case) -> None:
        raise CompileError("'case' outside of a switch", s.pos)

    def s_Break(self, s: ast.Break) -> None:
        assert self.chk.func is not None
        if not self.chk.func.loop_depth and not self.chk.func.switch_depth:
            raise CompileError("'break' outside of a loop or switch", s.pos)

    def s_Continue(self, s: ast.Continue) -> None:
        assert self.chk.func is not None
        if not self.chk.func.loop_depth:
            raise CompileError("'continue' outside of a loop", s.pos)

    def s_Return(self, s: ast.Return) -> None:
        assert self.chk.func is not None
        ret = self.chk.func.ret
        if s.value is None:
            if not isinstance(ret, VoidType):
                raise CompileError(f"non-void function must return a value of type '{ret}'", s.pos)
        else:
            if isinstance(ret, VoidType):
                if self.chk.func.is_kernel:
                    raise CompileError("a kernel returns nothing: use 'return;' and write results to an "
                                       "output buffer", s.value.pos)
                raise CompileError("void function should not return a value", s.value.pos)
            if self.chk.func.ret_ref:
                s.value = self.returned_reference(s.value, ret)
                s.by_reference = True
            else:
                s.value = self.chk.structs.initial_value(s.value, ret)

    def s_Empty(self, s: ast.Empty) -> None:
        pass

    def s_AliasStmt(self, s: AliasStmt) -> None:  # the parser's own node (a type alias in a body)
        self.chk.types.declare_alias(s.alias)

    def s_LocalTypeDef(self, s: ast.LocalTypeDef) -> None:
        self.chk.structs.declare_struct(s.struct)  # in the block's scope
        if s.decl is not None:
            self.chk.decls.local_decl(s.decl)

    def s_UsingNamespace(self, s: ast.UsingNamespace) -> None:
        self.chk.lookup.use_namespace(s)

    def s_StaticAssert(self, s: ast.StaticAssert) -> None:
        self.chk.types.static_assert(s)

    def scoped(self, s: ast.Stmt) -> None:
        saved = self.chk.scope
        self.chk.scope = Scope(saved)
        self.stmt(s)
        self.chk.scope = saved

    def loop_body(self, s: ast.Stmt) -> None:
        assert self.chk.func is not None
        self.chk.func.loop_depth += 1
        self.scoped(s)
        self.chk.func.loop_depth -= 1

    def condition(self, e: ast.Expr) -> ast.Expr:
        e = self.chk.exprs.expr(e)
        return self.chk.conversions.to_bool(e)


#: The checker's handler of each statement node (the parser's own AliasStmt among them).
STATEMENT_HANDLERS: dict[type[ast.Stmt], Callable[[Statements, Any], None]] = dispatch_table(
    "the checker's statements", ast.Stmt, {
        ast.Block: Statements.s_Block, ast.Decl: Statements.s_Decl, ast.ExprStmt: Statements.s_ExprStmt,
        ast.If: Statements.s_If, ast.For: Statements.s_For, ast.While: Statements.s_While,
        ast.DoWhile: Statements.s_DoWhile, ast.Switch: Statements.s_Switch,
        ast.Case: Statements.s_Case, ast.Break: Statements.s_Break,
        ast.Continue: Statements.s_Continue, ast.Return: Statements.s_Return,
        ast.Empty: Statements.s_Empty, AliasStmt: Statements.s_AliasStmt,
        ast.LocalTypeDef: Statements.s_LocalTypeDef, ast.UsingNamespace: Statements.s_UsingNamespace,
        ast.StaticAssert: Statements.s_StaticAssert,
    })
