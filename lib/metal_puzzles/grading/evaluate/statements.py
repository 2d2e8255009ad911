"""Statements: assignment and unpacking, imports, definitions, control flow (known
conditions take one branch, unknown ones both; loops unrolled or followed to a fixed point),
``try`` and ``match``; a statement not modelled makes what it may assign unknown."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from .known_values import (
    MAX_FIXPOINT,
    MAX_UNROLL,
    PACKAGE_NAMES,
    Builtin,
    Function,
    KernelRef,
    KList,
    Module,
    Unknown,
)
from .machine import Machine
from .notebook_state import GiveUp, LoopSinks, PathEnded, Scope, State
from .syntax import FunctionFacts, assigned_names, pattern_names, quote


class Statements(Machine):
    def exec_block(self, body: list[ast.stmt], scope: Scope) -> None:
        for stmt in body:
            self.exec_stmt(stmt, scope)

    def exec_stmt(self, stmt: ast.stmt, scope: Scope) -> None:
        self.tick()
        method = getattr(self, "stmt_" + type(stmt).__name__, None)
        if method is None:
            self.unmodelled_statement(stmt, scope)
        else:
            method(stmt, scope)

    def unmodelled_statement(self, stmt: ast.stmt, scope: Scope) -> None:
        """A statement the evaluator does not follow: what it may assign becomes unknown, and
        functions it mentions may be called by it."""
        why = self.unknown(f"a '{type(stmt).__name__}' statement", stmt.lineno)
        self.builds_out_of_sight(stmt, f"a '{type(stmt).__name__}' statement")
        self.call_mentioned_functions(stmt, scope)
        for name in assigned_names([stmt]):
            self.store(name, why, scope)

    def stmt_Expr(self, stmt: ast.Expr, scope: Scope) -> None:
        self.eval(stmt.value, scope)

    def stmt_Pass(self, stmt: ast.Pass, scope: Scope) -> None:
        pass

    def stmt_Assign(self, stmt: ast.Assign, scope: Scope) -> None:
        value = self.eval(stmt.value, scope)
        for target in stmt.targets:
            self.assign(target, value, scope)

    def stmt_AnnAssign(self, stmt: ast.AnnAssign, scope: Scope) -> None:
        if stmt.value is not None:
            self.assign(stmt.target, self.eval(stmt.value, scope), scope)

    def stmt_AugAssign(self, stmt: ast.AugAssign, scope: Scope) -> None:
        right = self.eval(stmt.value, scope)
        target = stmt.target
        if isinstance(target, ast.Name):
            current = self.load(target.id, scope, stmt.lineno)
            if isinstance(current, KList):  # in place: every name holding this list sees it
                why = self.unknown(f"the list '{target.id}' changed in place", stmt.lineno)
                items = self.iterate(right) if isinstance(stmt.op, ast.Add) else None
                new = KList((*current, *items)) if items is not None and len(current) + len(items) <= MAX_UNROLL \
                    else None
                self._mutated(current, why, new)
                self.store(target.id, new if new is not None else why, scope)
                return
            self.store(target.id, self.binop(stmt.op, current, right, stmt.lineno), scope)
        else:
            self.assign(target, self.unknown("an augmented assignment to an attribute or item", stmt.lineno), scope)

    def stmt_Delete(self, stmt: ast.Delete, scope: Scope) -> None:
        for target in stmt.targets:
            if isinstance(target, ast.Name):
                self.delete(target.id, scope)
            else:
                self.assign(target, None, scope)  # an item or attribute: its owner changes in place

    def stmt_Global(self, stmt: ast.Global, scope: Scope) -> None:
        pass  # read when the function is called (``_function_scope``)

    stmt_Nonlocal = stmt_Global

    def stmt_Import(self, stmt: ast.Import, scope: Scope) -> None:
        for alias in stmt.names:
            if alias.asname:
                self.store(alias.asname, self._module(alias.name), scope)
            else:
                top = alias.name.split(".")[0]
                self.store(top, self._module(top), scope)

    def _module(self, name: str) -> Any:
        return Module(name)

    def stmt_ImportFrom(self, stmt: ast.ImportFrom, scope: Scope) -> None:
        module = stmt.module or ""
        for alias in stmt.names:
            if alias.name == "*":
                if not module.startswith("metal_puzzles"):
                    self.taint(self.unknown(f"'from {module} import *', which may replace any name", stmt.lineno))
                for name in PACKAGE_NAMES:
                    self.store(name, Builtin(name), scope)
                continue
            self.store(alias.asname or alias.name, self._imported(module, alias.name, stmt.lineno), scope)

    def _imported(self, module: str, name: str, lineno: int) -> Any:
        if module == "textwrap" and name in ("dedent", "indent"):
            return Builtin(f"textwrap.{name}")
        if module == "inspect" and name == "cleandoc":
            return Builtin("inspect.cleandoc")
        if module.startswith("metal_puzzles") and name in PACKAGE_NAMES:
            return Builtin(name)
        return self.unknown(f"'{name}' imported from {module or 'a package'}", lineno)

    def stmt_FunctionDef(self, stmt: ast.FunctionDef | ast.AsyncFunctionDef, scope: Scope) -> None:
        for decorator in stmt.decorator_list:
            self.eval(decorator, scope)
        defaults: dict[str, Any] = {}
        args = stmt.args
        positional = [*args.posonlyargs, *args.args]
        for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=False):
            defaults[arg.arg] = self.eval(default, scope)
        for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=False):
            if kw_default is not None:
                defaults[arg.arg] = self.eval(kw_default, scope)
        closure = scope.closure + ((scope.frame,) if scope.kind == "function" else ())
        fn = Function(stmt, closure, defaults, self.cell, self.line_offset, next(self.serial), FunctionFacts.of(stmt))
        if stmt.decorator_list:  # a decorator may change when (and whether) the body runs
            self.builds_out_of_sight(stmt, f"the decorated function {stmt.name}()")
        self.store(stmt.name, fn, scope)

    stmt_AsyncFunctionDef = stmt_FunctionDef

    def stmt_ClassDef(self, stmt: ast.ClassDef, scope: Scope) -> None:
        for node in (*stmt.bases, *(k.value for k in stmt.keywords), *stmt.decorator_list):
            self.eval(node, scope)
        frame = self._new_frame()
        self.exec_block(stmt.body, Scope(frame, "class", closure=scope.closure + (
            (scope.frame,) if scope.kind == "function" else ())))
        for inner in stmt.body:  # its methods run when an object of it calls them: not followed
            if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef):
                self.builds_out_of_sight(inner, f"the method {stmt.name}.{inner.name}()")
        self.store(stmt.name, self.unknown(f"the class '{stmt.name}'", stmt.lineno), scope)

    def stmt_Return(self, stmt: ast.Return, scope: Scope) -> None:
        value = self.eval(stmt.value, scope) if stmt.value is not None else None
        if not self.returns:
            raise PathEnded
        self.returns[-1].append((self.st, value))
        raise PathEnded

    def stmt_Break(self, stmt: ast.Break, scope: Scope) -> None:
        if self.loops:
            self.loops[-1].breaks.append(self.st)
        raise PathEnded

    def stmt_Continue(self, stmt: ast.Continue, scope: Scope) -> None:
        if self.loops:
            self.loops[-1].continues.append(self.st)
        raise PathEnded

    def stmt_Raise(self, stmt: ast.Raise, scope: Scope) -> None:
        for part in (stmt.exc, stmt.cause):
            if part is not None:
                self.eval(part, scope)
        self.raised(stmt.lineno)

    def stmt_Assert(self, stmt: ast.Assert, scope: Scope) -> None:
        test = self.truth(self.eval(stmt.test, scope))
        if test is False:
            self.raised(stmt.lineno)
        if test is None:  # it may stop the cell here, or not
            self.may_raise(stmt.lineno)

    def stmt_If(self, stmt: ast.If, scope: Scope) -> None:
        test = self.eval(stmt.test, scope)
        truth = self.truth(test)
        if truth is True:
            self.exec_block(stmt.body, scope)
        elif truth is False:
            self.exec_block(stmt.orelse, scope)
        else:
            why = self._depends(test, "if", stmt.lineno)
            self.fork_paths([lambda: self.exec_block(stmt.body, scope),
                             lambda: self.exec_block(stmt.orelse, scope)], why)

    def _depends(self, test: Any, what: str, lineno: int) -> Unknown:
        cause = f" ({test.construct}, {test.where})" if isinstance(test, Unknown) else ""
        return self.unknown(f"a value that depends on the condition of the '{what}' at line "
                            f"{lineno + self.line_offset}, which the grader cannot know{cause}", lineno)

    def stmt_For(self, stmt: ast.For | ast.AsyncFor, scope: Scope) -> None:
        iterable = self.eval(stmt.iter, scope)
        items = self.iterate(iterable) if isinstance(stmt, ast.For) else None
        if items is None or len(items) > MAX_UNROLL:
            why = self.unknown(f"a value changed in the loop at line {stmt.lineno + self.line_offset}, over "
                               "values the grader cannot know", stmt.lineno)
            self.loop_unknown(stmt, scope, why, lambda: self.assign(stmt.target, why, scope))
            return
        breaks: list[State] = []
        finished = True
        for item in items:
            self.tick()
            sinks = LoopSinks()
            self.loops.append(sinks)
            try:
                self.assign(stmt.target, item, scope)
                self.exec_block(stmt.body, scope)
                goes_on = [self.st]
            except PathEnded:
                goes_on = []
            finally:
                self.loops.pop()
            breaks += sinks.breaks
            goes_on += sinks.continues
            if not goes_on:
                finished = False
                break
            self.st = self.join(goes_on, self.unknown(f"a value that depends on a 'continue' in the loop at line "
                                                 f"{stmt.lineno + self.line_offset}", stmt.lineno))
        exits = list(breaks)
        if finished:
            try:
                self.exec_block(stmt.orelse, scope)
                exits.append(self.st)
            except PathEnded:
                pass
        if not exits:
            raise PathEnded
        self.st = self.join(exits, self.unknown(f"a value that depends on where the loop at line "
                                           f"{stmt.lineno + self.line_offset} stops", stmt.lineno))

    stmt_AsyncFor = stmt_For

    def stmt_While(self, stmt: ast.While, scope: Scope) -> None:
        truth = self.truth(self.eval(stmt.test, scope))
        if truth is False:
            self.exec_block(stmt.orelse, scope)
            return
        why = self.unknown(f"a value changed in the 'while' loop at line {stmt.lineno + self.line_offset}",
                           stmt.lineno)
        self.loop_unknown(stmt, scope, why, lambda: self.eval(stmt.test, scope), endless=isinstance(
            stmt.test, ast.Constant) and bool(stmt.test.value))

    def loop_unknown(self, stmt: ast.For | ast.AsyncFor | ast.While, scope: Scope, why: Unknown,
                     start: Callable[[], None], endless: bool = False) -> None:
        """A loop run a number of times the grader cannot know: followed from an entry state that
        is joined with each pass's end until nothing changes (each join only makes values unknown,
        so this ends), which then stands for every number of iterations."""
        entry = self.st.fork()
        for name in assigned_names(stmt.body):
            entry.frames[self._frame_of(name, scope)][name] = why
        breaks: list[State] = []
        for _ in range(MAX_FIXPOINT):
            self.st = entry.fork()
            sinks = LoopSinks()
            self.loops.append(sinks)
            try:
                start()
                self.exec_block(stmt.body, scope)
                ends = [self.st]
            except PathEnded:
                ends = []
            finally:
                self.loops.pop()
            breaks = sinks.breaks
            joined = self.join([entry, *ends, *sinks.continues], why)
            if joined.same_as(entry):
                break
            entry = joined
        else:
            raise GiveUp(f"the loop at line {stmt.lineno + self.line_offset} (too many passes to follow)")
        exits = []
        if not endless:  # 'while True' leaves only by a break
            self.st = entry.fork()
            try:
                self.exec_block(stmt.orelse, scope)
                exits.append(self.st)
            except PathEnded:
                pass
        exits += breaks
        if not exits:
            raise PathEnded
        self.st = self.join(exits, why)

    def stmt_With(self, stmt: ast.With | ast.AsyncWith, scope: Scope) -> None:
        for item in stmt.items:
            self.eval(item.context_expr, scope)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, self.unknown("the value of a 'with ... as'", stmt.lineno), scope)
        self.exec_block(stmt.body, scope)

    stmt_AsyncWith = stmt_With

    def stmt_Try(self, stmt: ast.Try, scope: Scope) -> None:
        """The body may stop at any statement (a call the grader does not follow may raise): a
        handler starts from any of the states between the body's statements."""
        why = self.unknown(f"a value that depends on where the 'try' at line {stmt.lineno + self.line_offset} "
                           "stops", stmt.lineno)
        between = [self.st.fork()]
        self.raises.append([])
        normal: State | None = None
        try:
            for inner in stmt.body:
                self.exec_stmt(inner, scope)
                between.append(self.st.fork())
            normal = self.st
        except PathEnded:
            pass
        raised = self.raises.pop()
        ends = []
        if normal is not None:
            self.st = normal
            try:
                self.exec_block(stmt.orelse, scope)
                ends.append(self.st)
            except PathEnded:
                pass
        if stmt.handlers:
            start = self.join(between + raised, why)
            for name in assigned_names(stmt.body):
                start.frames[self._frame_of(name, scope)][name] = why
            for handler in stmt.handlers:
                self.st = start.fork()
                try:
                    if handler.type is not None:
                        self.eval(handler.type, scope)
                    if handler.name:
                        self.store(handler.name, self.unknown("a caught exception", handler.lineno), scope)
                    self.exec_block(handler.body, scope)
                    ends.append(self.st)
                except PathEnded:
                    pass
        if self.raises:  # an exception no handler catches goes on outward
            self.raises[-1].extend(raised)
        if not ends:
            raise PathEnded
        self.st = self.join(ends, why)
        self.exec_block(stmt.finalbody, scope)

    stmt_TryStar = stmt_Try

    def stmt_Match(self, stmt: ast.Match, scope: Scope) -> None:
        self.eval(stmt.subject, scope)
        why = self.unknown(f"a value that depends on the 'match' at line {stmt.lineno + self.line_offset}",
                           stmt.lineno)

        def case_path(case: ast.match_case) -> Callable[[], None]:
            def run() -> None:
                for name in pattern_names(case.pattern):
                    self.store(name, why, scope)
                self.exec_block(case.body, scope)
            return run
        self.fork_paths([case_path(c) for c in stmt.cases] + [lambda: None], why)

    # ------------------------------------------------------------------ assignment
    def assign(self, target: ast.expr, value: Any, scope: Scope) -> None:
        if isinstance(target, ast.Name):
            self.store(target.id, value, scope)
        elif isinstance(target, ast.Tuple | ast.List):
            self.unpack(target, value, scope)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, value, scope)
        elif isinstance(target, ast.Subscript | ast.Attribute):
            owner = self.eval(target.value, scope)
            if isinstance(target, ast.Subscript):
                self.eval(target.slice, scope)
            if isinstance(owner, KList):
                self._mutated(owner, self.unknown("a list changed in place", target.lineno))
            elif isinstance(owner, KernelRef):
                self.kernel_changed(owner, self.unknown(f"the kernel object changed by `{quote(target)} = ...`",
                                                        target.lineno))
            elif isinstance(owner, Module) and owner.name == "__main__" and isinstance(target, ast.Attribute):
                self.st.frames[0][target.attr] = value
            elif isinstance(owner, Module):
                self.patched.add(owner.name)
            if isinstance(target, ast.Attribute) and (target.attr in PACKAGE_NAMES or isinstance(owner, Builtin)
                                                      and owner.name in PACKAGE_NAMES):
                self.kernels_unpredictable(self.unknown(f"`{quote(target)} = ...`, which changes what "
                                                        "MetalKernel or MetalProblem do", target.lineno))

    def unpack(self, target: ast.Tuple | ast.List, value: Any, scope: Scope) -> None:
        elts = target.elts
        items = self.iterate(value)
        starred = [i for i, e in enumerate(elts) if isinstance(e, ast.Starred)]
        if items is not None and (len(items) == len(elts) if not starred else len(items) >= len(elts) - 1):
            if starred:
                s = starred[0]
                after = len(elts) - s - 1
                parts = [*items[:s], KList(items[s:len(items) - after]), *items[len(items) - after:]]
            else:
                parts = list(items)
            for e, v in zip(elts, parts, strict=False):
                self.assign(e, v, scope)
            return
        why = value if isinstance(value, Unknown) else self.unknown("an unpacking of a value the grader "
                                                                    "cannot split", target.lineno)
        for e in elts:
            self.assign(e, why, scope)

