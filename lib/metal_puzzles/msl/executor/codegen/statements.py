"""Statements compiled to ``f(ctx, mask)``, each paying its steps of the budget (and, with a
step-through recorder, shown before it runs): blocks, if, loops, switch, break, continue and
return. A branch runs each side for its own lanes; a lane that breaks, continues or returns
leaves the mask until its loop or function ends."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ...front import ast
from ...front.parser import AliasStmt
from ...lang.errors import CompileError
from ...lang.lane_values import type_ndim
from ..runtime import Ctx, LoopState
from .codegen_state import CodeGenPart, in_order
from .interfaces import Compiled, Fn
from .locations import merged_location
from .masks import Mask, and_mask, andnot_mask, merge, with_lanes


@dataclass(frozen=True)
class _CaseLabel:
    """Where a 'case' (``value``) or 'default' (None) label stands among a switch's statements."""

    value: int | None


class Statements(CodeGenPart):
    def stmt(self, s: ast.Stmt) -> Compiled:
        handler = self.gen.statement_dispatch[type(s)]
        # Count this statement's own work; nested statements count theirs.
        outer_work, self.gen.work = self.gen.work, 0
        try:
            f, jumps = handler(s)
            cost = self.gen.step_cost()
        finally:
            self.gen.work = outer_work
        # Blocks are not steps of their own; loops record a step at every iteration themselves.
        if f is None or isinstance(s, ast.Block | ast.For | ast.While | ast.DoWhile):
            return f, jumps
        pos = s.pos

        def stepped(c: Ctx, m: Mask) -> None:
            c.steps += cost  # Ctx.step inlined: this runs for every statement
            if c.steps > c.max_steps:
                c.out_of_steps(pos)
            # A step-through recorder, when attached, sees every statement before it runs.
            if c.stepper is not None:
                c.stepper.before(c, pos, m)
            f(c, m)

        def stepped_costed(c: Ctx, m: Mask) -> None:
            c.steps += cost
            if c.steps > c.max_steps:
                c.out_of_steps(pos)
            if c.stepper is not None:
                c.stepper.before(c, pos, m)
            c.cost.statement(pos, m)  # which lanes of each SIMD-group execute it
            f(c, m)
        return (stepped_costed if self.gen.cost else stepped), jumps

    def s_Block(self, s: ast.Block) -> Compiled:
        parts = [(f, j) for f, j in (self.stmt(x) for x in s.stmts) if f is not None]
        fns = [f for f, _ in parts]
        any_jump = any(j for _, j in parts)
        if not any_jump:
            return in_order(fns), False

        def jump_block(c: Ctx, m: Mask) -> None:
            for f, j in parts:
                f(c, m)
                if j:
                    m = c.live(m)
                    if m is not None and not m.any():
                        return
        return jump_block, True

    def s_Empty(self, s: ast.Empty) -> Compiled:
        return None, False

    def s_UsingNamespace(self, s: ast.UsingNamespace) -> Compiled:  # the checker has widened name lookup: nothing runs
        return None, False

    def s_StaticAssert(self, s: ast.StaticAssert) -> Compiled:  # checked at compile time: nothing runs
        return None, False

    def s_AliasStmt(self, s: ast.Stmt) -> Compiled:  # a type alias in a body: the checker's alone
        return None, False

    def s_ExprStmt(self, s: ast.ExprStmt) -> Compiled:
        f = self.gen.exprs.expr(s.expr)
        return (lambda c, m: f(c, m)), False

    def s_If(self, s: ast.If) -> Compiled:
        cond = self.gen.exprs.expr(s.cond)
        then, j1 = self.stmt(s.then)
        other, j2 = self.stmt(s.other) if s.other is not None else (None, False)
        then = then or (lambda c, m: None)

        def run_if(c: Ctx, m: Mask) -> None:
            k = cond(c, m)
            if np.ndim(k) == 0:
                if k:
                    then(c, m)
                elif other is not None:
                    other(c, m)
                return
            mt = and_mask(c, m, k)
            assert mt is not None  # k varies: the lanes it holds for are an array
            if mt.any():
                then(c, mt)
            if other is not None:
                mf = andnot_mask(c, m, k)
                assert mf is not None
                if mf.any():
                    other(c, mf)
        return run_if, j1 or j2

    def _loop(self, s: ast.For | ast.While | ast.DoWhile, init: Fn | None, cond: Fn | None, step: Fn | None,
              body: Fn | None, test_first: bool = True) -> Fn:
        pos = s.pos
        cost = self.gen.step_cost()  # the loop's own condition and increment, paid every iteration
        costed = self.gen.cost  # the instrumented variant counts every iteration as a statement

        def run_loop(c: Ctx, m: Mask) -> None:
            if init is not None:
                init(c, m)
            outer = c.loop
            st = LoopState(pos, outer, m)
            c.loop = st
            first = True
            try:
                while True:
                    if cond is not None and (test_first or not first):
                        k = cond(c, m)
                        if np.ndim(k) == 0:
                            if not k:
                                break
                        else:
                            m = and_mask(c, m, k)
                            if m is not None and not m.any():
                                break
                    first = False
                    st.cont = None
                    st.active = m  # this iteration's threads (a barrier in the body asks who left)
                    if c.stepper is not None:
                        c.stepper.before(c, pos, m)
                    if costed:
                        c.cost.statement(pos, m)
                    if body is not None:
                        body(c, m)
                    # Lanes that broke out or returned leave the loop; 'continue' lanes rejoin.
                    dead = st.brk
                    if c.frame.ret is not None:
                        dead = c.frame.ret if dead is None else (dead | c.frame.ret)
                    if dead is not None:
                        m = ~dead if m is None else (m & ~dead)
                        if not m.any():
                            break
                    st.cont = None
                    if step is not None:
                        step(c, m)
                    st.active = m
                    c.step(pos, cost)
            finally:
                c.loop = outer
        return run_loop

    def s_For(self, s: ast.For) -> Compiled:
        # The initializer is shown as part of the loop's own step, not as a step of its own.
        init = self.gen.statement_dispatch[type(s.init)](s.init)[0] if s.init is not None else None
        cond = self.gen.exprs.expr(s.cond) if s.cond is not None else None
        step = self.gen.exprs.expr(s.step) if s.step is not None else None
        body, _ = self.stmt(s.body)
        return self._loop(s, init, cond, step, body), _has_return(s.body)

    def s_While(self, s: ast.While) -> Compiled:
        body, _ = self.stmt(s.body)
        return self._loop(s, None, self.gen.exprs.expr(s.cond), None, body), _has_return(s.body)

    def s_DoWhile(self, s: ast.DoWhile) -> Compiled:
        body, _ = self.stmt(s.body)
        return self._loop(s, None, self.gen.exprs.expr(s.cond), None, body, test_first=False), _has_return(s.body)

    def s_Break(self, s: ast.Break) -> Compiled:
        def brk(c: Ctx, m: Mask) -> None:
            st = c.loop
            assert st is not None  # the checker allows 'break' only in a loop or a switch
            st.brk = (c.full() if m is None else m.copy()) if st.brk is None else (st.brk | (True if m is None else m))
        return brk, True

    def s_Continue(self, s: ast.Continue) -> Compiled:
        def cont(c: Ctx, m: Mask) -> None:
            st = c.loop
            assert st is not None  # the checker allows 'continue' only in a loop
            # Inside a switch, 'continue' belongs to the enclosing loop and also leaves the switch.
            while st.is_switch:
                st.brk = with_lanes(c, st.brk, m)
                st = st.outer
                assert st is not None
            st.cont = with_lanes(c, st.cont, m)
        return cont, True

    def s_Return(self, s: ast.Return) -> Compiled:
        if s.by_reference:
            return self._return_reference(s), True
        val = self.gen.exprs.expr(s.value) if s.value is not None else None
        vec = type_ndim(s.value.ty) if s.value is not None else 0

        def ret(c: Ctx, m: Mask) -> None:
            fr = c.frame
            if val is not None:
                v = val(c, m)
                fr.ret_val = v if (fr.ret_val is None and m is None) else merge(
                    m, v, fr.ret_val if fr.ret_val is not None else np.zeros_like(v), vec)
            fr.ret = with_lanes(c, fr.ret, m)
        return ret, True

    def _return_reference(self, s: ast.Return) -> Fn:
        """A function returning a reference returns a location; lanes returning at different
        statements must designate elements of one memory object (their offsets are merged)."""
        assert s.value is not None  # a reference is returned by 'return object;'
        loc = self.gen.places.lvalue(s.value)
        pos = s.pos

        def ret(c: Ctx, m: Mask) -> None:
            fr = c.frame
            here = loc(c, m)
            if fr.ret_val is None or m is None:
                fr.ret_val = here
            else:
                fr.ret_val = merged_location(c, m, here, fr.ret_val, pos)
            fr.ret = with_lanes(c, fr.ret, m)
        return ret

    def s_Switch(self, s: ast.Switch) -> Compiled:
        value = self.gen.exprs.expr(s.value)
        items: list[_CaseLabel | Fn] = []
        case_values = []
        for st in s.body.stmts:
            if isinstance(st, ast.Case):
                cv = None if st.value is None else cast(ast.IntLit, st.value).value  # folded by the checker
                if cv is not None:
                    case_values.append(cv)
                items.append(_CaseLabel(cv))
            else:
                f, _ = self.stmt(st)
                if f is not None:
                    items.append(f)
        dtype = s.value.ty.dtype

        def run_switch(c: Ctx, m: Mask) -> None:
            v = value(c, m)
            st = LoopState(None, c.loop)
            st.is_switch = True
            c.loop = st
            running = np.zeros(c.n, dtype=bool)
            active = c.full() if m is None else m
            try:
                for x in items:
                    if isinstance(x, _CaseLabel):
                        if x.value is None:
                            hit = np.ones(c.n, dtype=bool)
                            for cv in case_values:
                                hit &= np.broadcast_to(v != dtype.type(cv), (c.n,))
                        else:
                            hit = np.broadcast_to(v == dtype.type(x.value), (c.n,))
                        running = running | (hit & active)
                        continue
                    mm = c.live(running)
                    if mm.any():
                        x(c, mm)
            finally:
                c.loop = st.outer
        return run_switch, _has_return(s.body) or _has_continue(s.body)

    def s_Case(self, s: ast.Case) -> Compiled:  # pragma: no cover - handled by s_Switch
        raise CompileError("'case' outside of a switch", s.pos)

#: The statements this part compiles, each to its handler (``CodeGen`` joins the parts' tables and binds
#: them to its parts; the joined table is checked complete when the package is imported).
STATEMENT_HANDLERS: dict[type[ast.Stmt], Callable[[Statements, Any], Compiled]] = {
    ast.Block: Statements.s_Block, ast.Empty: Statements.s_Empty, ast.UsingNamespace: Statements.s_UsingNamespace,
    ast.StaticAssert: Statements.s_StaticAssert, AliasStmt: Statements.s_AliasStmt,
    ast.ExprStmt: Statements.s_ExprStmt, ast.If: Statements.s_If, ast.For: Statements.s_For,
    ast.While: Statements.s_While, ast.DoWhile: Statements.s_DoWhile, ast.Break: Statements.s_Break,
    ast.Continue: Statements.s_Continue, ast.Return: Statements.s_Return, ast.Switch: Statements.s_Switch,
    ast.Case: Statements.s_Case,
}



def _has_return(s: ast.Stmt) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(s))


def _has_continue(s: ast.Stmt) -> bool:
    """A 'continue' that is not inside a nested loop (so it leaves an enclosing switch)."""
    return any(isinstance(n, ast.Continue) for n in ast.walk(s, into_loops=False))
