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
        if isinstance(s, ast.Block):
            saved = self.scope
            self.scope = Scope(saved)
            self.stmt_block_contents(s)
            self.scope = saved
        elif isinstance(s, ast.Decl):
            self.local_decl(s)
        elif isinstance(s, ast.ExprStmt):
            s.expr = self.expr(s.expr)
            if isinstance(s.expr, ast.Call):
                s.expr.value_unused = True
        elif isinstance(s, ast.If):
            s.cond = self.condition(s.cond)
            self.scoped(s.then)
            if s.other is not None:
                self.scoped(s.other)
        elif isinstance(s, ast.For):
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
        elif isinstance(s, ast.While):
            s.cond = self.condition(s.cond)
            self.loop_body(s.body)
        elif isinstance(s, ast.DoWhile):
            self.loop_body(s.body)
            s.cond = self.condition(s.cond)
        elif isinstance(s, ast.Switch):
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
                if isinstance(st, ast.Case):
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
        elif isinstance(s, ast.Case):
            raise CompileError("'case' outside of a switch", s.pos)
        elif isinstance(s, ast.Break):
            assert self.func is not None
            if not self.func.loop_depth and not self.func.switch_depth:
                raise CompileError("'break' outside of a loop or switch", s.pos)
        elif isinstance(s, ast.Continue):
            assert self.func is not None
            if not self.func.loop_depth:
                raise CompileError("'continue' outside of a loop", s.pos)
        elif isinstance(s, ast.Return):
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
        elif isinstance(s, ast.Empty):
            pass
        elif isinstance(s, AliasStmt):
            self._declare_alias(s.alias)
        elif isinstance(s, ast.LocalTypeDef):
            self._declare_struct(s.struct)  # in the block's scope
            if s.decl is not None:
                self.local_decl(s.decl)
        elif isinstance(s, ast.UsingNamespace):
            self.use_namespace(s)
        elif isinstance(s, ast.StaticAssert):
            self.static_assert(s)
        else:  # pragma: no cover
            raise CompileError(f"unsupported statement {type(s).__name__}", s.pos)

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
