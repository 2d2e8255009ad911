"""Statements: scopes, control flow and what may appear where."""

from __future__ import annotations

from ...lang.errors import CompileError
from ...lang.types import (
    AddressSpace,
    ScalarType,
    Type,
    VoidType,
    promote,
)
from .. import ast
from ..parser.statements import AliasStmt
from .entries import Scope
from .state import CheckerState


class Statements(CheckerState):
    def returned_reference(self, value: ast.Expr, ret: Type) -> ast.Expr:
        """What a function returning a reference returns: an object of its type (not a copy)."""
        assert self.func is not None
        value = self.expr(value)
        if isinstance(value, ast.Ternary):
            raise CompileError("the simulator does not follow a reference through '?:'; return each object from "
                               "its own 'return' in an if/else", value.pos)
        if not value.lvalue:
            raise CompileError(f"returning a reference to a temporary value; a function returning '{ret}&' must "
                               "return an object (an element, '*p', a reference parameter)", value.pos)
        if value.ty != ret:
            raise CompileError(f"a function returning '{ret}&' cannot return a reference to a '{value.ty}'",
                               value.pos)
        if value.const_mem and not self.func.ret_const:
            raise CompileError(f"returning a read-only object through a non-const '{ret}&' would drop 'const'",
                               value.pos)
        space = value.space or AddressSpace.THREAD
        if space != self.func.ret_space:
            raise CompileError(f"the function returns a '{self.func.ret_space} {ret}&' but this object is in "
                               f"{space} memory", value.pos)
        return value

    def stmt_block_contents(self, block: ast.Block) -> None:
        for s in block.stmts:
            self.stmt(s)

    def stmt(self, s: ast.Stmt) -> None:
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:  # pragma: no cover  (tests/front/test_visitors.py: every statement has its s_)
            raise CompileError(f"unsupported statement {type(s).__name__}", s.pos)
        method(s)

    def s_Block(self, s: ast.Block) -> None:
        saved = self.scope
        self.scope = Scope(saved)
        self.stmt_block_contents(s)
        self.scope = saved

    def s_Decl(self, s: ast.Decl) -> None:
        self.local_decl(s)

    def s_ExprStmt(self, s: ast.ExprStmt) -> None:
        s.expr = self.expr(s.expr)
        if isinstance(s.expr, ast.Call):
            s.expr.value_unused = True

    def s_If(self, s: ast.If) -> None:
        s.cond = self.condition(s.cond)
        self.scoped(s.then)
        if s.other is not None:
            self.scoped(s.other)

    def s_For(self, s: ast.For) -> None:
        saved = self.scope
        self.scope = Scope(saved)
        if s.init is not None:
            self.stmt(s.init)
        if s.cond is not None:
            s.cond = self.condition(s.cond)
        if s.step is not None:
            s.step = self.expr(s.step)
        self.loop_body(s.body)
        self.scope = saved

    def s_While(self, s: ast.While) -> None:
        s.cond = self.condition(s.cond)
        self.loop_body(s.body)

    def s_DoWhile(self, s: ast.DoWhile) -> None:
        self.loop_body(s.body)
        s.cond = self.condition(s.cond)

    def s_Switch(self, s: ast.Switch) -> None:
        s.value = self.expr(s.value)
        vt = s.value.ty
        if not (isinstance(vt, ScalarType) and vt.kind in ("int", "bool")):
            raise CompileError(f"switch needs an integer value, not '{vt}'", s.value.pos)
        s.value = self.convert(s.value, promote(vt), "switch")
        assert self.func is not None
        self.func.switch_depth += 1
        saved = self.scope
        self.scope = Scope(saved)
        seen = set()
        for st in s.body.stmts:
            if isinstance(st, ast.Case):  # the switch's own labels; s_Case is a stray one
                if st.value is not None:
                    v = self.const_int(st.value, "case value")
                    if v in seen:
                        raise CompileError(f"duplicate case value {v}", st.pos)
                    seen.add(v)
                    st.value = ast.IntLit(st.value.pos, v)
                    st.value.ty = s.value.ty
            else:
                self.stmt(st)
        self.scope = saved
        self.func.switch_depth -= 1

    def s_Case(self, s: ast.Case) -> None:
        raise CompileError("'case' outside of a switch", s.pos)

    def s_Break(self, s: ast.Break) -> None:
        assert self.func is not None
        if not self.func.loop_depth and not self.func.switch_depth:
            raise CompileError("'break' outside of a loop or switch", s.pos)

    def s_Continue(self, s: ast.Continue) -> None:
        assert self.func is not None
        if not self.func.loop_depth:
            raise CompileError("'continue' outside of a loop", s.pos)

    def s_Return(self, s: ast.Return) -> None:
        assert self.func is not None
        ret = self.func.ret
        if s.value is None:
            if not isinstance(ret, VoidType):
                raise CompileError(f"non-void function must return a value of type '{ret}'", s.pos)
        else:
            if isinstance(ret, VoidType):
                if self.func.is_kernel:
                    raise CompileError("a kernel returns nothing: use 'return;' and write results to an "
                                       "output buffer", s.value.pos)
                raise CompileError("void function should not return a value", s.value.pos)
            if self.func.ret_ref:
                s.value = self.returned_reference(s.value, ret)
                s.by_reference = True
            else:
                s.value = self.initial_value(s.value, ret)

    def s_Empty(self, s: ast.Empty) -> None:
        pass

    def s__AliasStmt(self, s: AliasStmt) -> None:  # the parser's own node (a type alias in a body)
        self._declare_alias(s.alias)

    def s_LocalTypeDef(self, s: ast.LocalTypeDef) -> None:
        self._declare_struct(s.struct)  # in the block's scope
        if s.decl is not None:
            self.local_decl(s.decl)

    def s_UsingNamespace(self, s: ast.UsingNamespace) -> None:
        self.use_namespace(s)

    def s_StaticAssert(self, s: ast.StaticAssert) -> None:
        self.static_assert(s)

    def scoped(self, s: ast.Stmt) -> None:
        saved = self.scope
        self.scope = Scope(saved)
        self.stmt(s)
        self.scope = saved

    def loop_body(self, s: ast.Stmt) -> None:
        assert self.func is not None
        self.func.loop_depth += 1
        self.scoped(s)
        self.func.loop_depth -= 1

    def condition(self, e: ast.Expr) -> ast.Expr:
        e = self.expr(e)
        return self.to_bool(e)
