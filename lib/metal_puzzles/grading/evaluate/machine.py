"""The evaluator's core: following cells and the notebook's end, the step budget, paths that
fork and join, Python raising, reading and writing names, and what changes make unknown."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..cells import (
    CellSyntaxError,
    parse_cell,
)
from .known_values import (
    BUILTINS,
    MAX_NOTEBOOK_STEPS,
    MAX_STEPS,
    MAX_UNROLL,
    PACKAGE_NAMES,
    PYTHON_NAMES,
    UNBOUND,
    BoundMethod,
    Builtin,
    Function,
    KernelBuild,
    KernelRef,
    KList,
    Module,
    Problem,
    Unknown,
    holds,
)
from .notebook_state import GiveUp, LoopSinks, Outcome, PathEnded, Scope, State, join
from .syntax import names_metal_kernel


class Machine:
    def __init__(self) -> None:
        self.st: State = State({0: {"__name__": "__main__"}}, {})
        self.cell = 0
        self.line_offset = 0
        self.steps = 0
        self.cell_steps_end = MAX_STEPS  # where this cell's budget ends
        self.depth = 0
        self.next_frame = 1
        self.serial = itertools.count()
        self.returns: list[list[tuple[State, Any]]] = []
        self.loops: list[LoopSinks] = []
        self.raises: list[list[State]] = []
        self.called: set[int] = set()  # ids of Functions the notebook called
        #: Kernels built by code the grader does not follow (a lambda, a class's method, a generator,
        #: a decorated function): when they are built cannot be known, so neither can their source.
        self.unpredictable: dict[str, KernelBuild] = {}
        #: Set when code the grader does not follow may build any kernel at all.
        self.any_kernel: Unknown | None = None
        self.notes: list[str] = []
        #: Once the namespace escaped (globals(), exec), no module variable is known again.
        self.escaped: Unknown | None = None
        #: Something not followed may have bound any name (an unread cell, %run, a star import).
        self.tainted = False
        self.cell_running = 0  # the cell being followed, and the first line at which it may stop
        self.first_raise: int | None = None
        #: Modules whose attributes the notebook replaced (textwrap.dedent = ...): not computed from then on.
        self.patched: set[str] = set()


    if TYPE_CHECKING:
        # The parts call one another (a statement evaluates expressions, a call runs a body):
        # declared here for the type checker, defined by the part named.
        def exec_block(self, body: list[ast.stmt], scope: Scope) -> None: ...  # statements

        def assign(self, target: ast.expr, value: Any, scope: Scope) -> None: ...  # statements

        def _depends(self, test: Any, what: str, lineno: int) -> Unknown: ...  # statements

        def eval(self, node: ast.expr, scope: Scope) -> Any: ...  # expressions

        def binop(self, op: ast.operator, left: Any, right: Any, lineno: int) -> Any: ...  # expressions

        def bounded(self, value: Any, lineno: int) -> Any: ...  # expressions

        def call_function(self, fn: Function, args: list[Any] | None, kwargs: dict[str, Any],
                          node: ast.AST) -> Any: ...  # calls

        def call_mentioned_functions(self, node: ast.AST, scope: Scope) -> None: ...  # calls

    # ------------------------------------------------------------------ cells
    def run_cell(self, number: int, text: str) -> None:
        """Follow one code cell; a cell that is not Python (even as IPython reads it) is noted."""
        self.cell, self.line_offset = number, 0
        try:
            tree = parse_cell(text)
        except CellSyntaxError as exc:
            self.notes.append(f"code cell {number} is not valid Python (line {exc.line}: {exc.message}); skipped")
            return
        self.cell_steps_end = min(self.steps + MAX_STEPS, MAX_NOTEBOOK_STEPS)
        self.run_module_code(tree.body)

    def run_module_code(self, body: list[ast.stmt]) -> None:
        scope = Scope(0, "module")
        before = self.st.fork()
        cell = self.cell_running = self.cell
        self.first_raise = None
        self.raises = [[]]
        try:
            self.exec_block(body, scope)
            ends = [self.st]
        except PathEnded:
            ends = []
        except (GiveUp, RecursionError, MemoryError) as stop:
            # The grader stops following this cell: nothing it could have changed is known.
            construct = stop.construct if isinstance(stop, GiveUp) else "code nested too deeply to follow"
            self.cell, self.line_offset, self.depth, self.returns, self.loops = cell, 0, 0, [], []
            self.notes.append(f"code cell {cell}: the grader stopped following it ({construct}); what it "
                              "assigns is not known")
            why = self.unknown(f"what code cell {cell} assigns ({construct})", 0)
            self.taint(why)
            for name in self.st.kernels:
                self.st.kernels[name] = replace(self.st.kernels[name], source=why, header="")
            for stmt in body:  # kernels this cell would build cannot be read either
                self.builds_out_of_sight(stmt, f"code cell {cell}, which the grader stopped following", later=False)
            ends = [self.st]
        raised = self.raises[0]
        if not ends and not raised:  # no path leaves the cell: it never finishes (an endless loop)
            self.notes.append(f"code cell {cell} never finishes (an endless loop); what it assigns is not known")
            self.st = before
            why = self.unknown(f"what code cell {cell} assigns before it runs forever", 0)
            self.taint(why)
            for name in self.st.kernels:
                self.st.kernels[name] = replace(self.st.kernels[name], source=why, header="")
            return
        where = f" (at line {self.first_raise})" if self.first_raise else ""
        self.st = self.join(ends + raised, self.unknown(f"a value that depends on whether code cell {cell} stops at an "
                                                   f"error{where}", self.first_raise or 0))

    def finish(self) -> Outcome:
        """The kernels as the notebook last built them, then those of functions never called."""
        executed = self.st.kernels
        fallback: dict[str, KernelBuild] = {}
        functions = sorted((v for v in self.st.frames[0].values() if isinstance(v, Function)
                            and id(v) not in self.called and v.facts.builds_kernels), key=lambda f: f.serial)
        for fn in functions:
            saved = self.st.fork()
            self.cell, self.line_offset = fn.cell, fn.line_offset
            self.cell_steps_end = min(self.steps + MAX_STEPS, MAX_NOTEBOOK_STEPS)
            self.raises, self.returns, self.loops, self.depth = [[]], [], [], 0
            self.st.kernels = {}
            try:
                self.call_function(fn, None, {}, fn.node)
            except PathEnded:
                pass
            except (GiveUp, RecursionError, MemoryError):  # what it builds cannot be read
                self.builds_out_of_sight(fn.node, f"{fn.node.name}(), which the grader stopped following",
                                         later=False)
            for name, build in self.st.kernels.items():
                fallback[name] = replace(build, fallback=True)
            self.st = saved
        kernels = dict(fallback)
        kernels.update(executed)
        kernels.update(self.unpredictable)
        if self.any_kernel is not None:
            kernels = {name: replace(b, source=self.any_kernel, header="") for name, b in kernels.items()}
        return Outcome(kernels, self.notes)

    def builds_out_of_sight(self, node: ast.AST, what: str, later: bool = True) -> None:
        """``MetalKernel(...)`` calls in code the grader does not follow (``what``): each kernel
        they may build cannot be read, since when (and whether) it is built is not known
        (``later``: code that may also run at any later time, a lambda or a method)."""
        for call in ast.walk(node):
            if not (isinstance(call, ast.Call) and names_metal_kernel(call.func)):
                continue
            name_node = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "name"), None)
            line = call.lineno + self.line_offset
            if isinstance(name_node, ast.Constant) and isinstance(name_node.value, str):
                why = self.unknown(f"a MetalKernel(...) inside {what}, which the grader does not follow", call.lineno)
                build = KernelBuild(name_node.value, why, "", None, None, self.cell, line)
                (self.unpredictable if later else self.st.kernels)[name_node.value] = build
            else:
                self.notes.append(f"code cell {self.cell}, line {line}: a MetalKernel(...) inside {what}, whose "
                                  "name the grader cannot read; it cannot be graded")

    # ------------------------------------------------------------------ helpers
    def unknown(self, construct: str, lineno: int) -> Unknown:
        return Unknown(construct, self.cell, lineno + self.line_offset)

    def join(self, states: list[State], why: Unknown) -> State:
        """``join``, its cost counted against the step budget (it compares every variable)."""
        if len(states) > 1:
            self.steps += len(states) * sum(map(len, states[0].frames.values())) // 4
            self.tick()
        return join(states, why)

    def raised(self, lineno: int = 0) -> Any:
        """Python raises here (an operation of known values that fails): the cell, or the
        enclosing try, goes on from this state, and this path ends."""
        self.may_raise(lineno, fork=False)
        raise PathEnded

    def may_raise(self, lineno: int, fork: bool = True) -> None:
        """Python may raise here: the cell (or the enclosing try) may go on from this state."""
        self.raises[-1].append(self.st.fork() if fork else self.st)
        line = lineno + self.line_offset
        if self.cell == self.cell_running and line and (self.first_raise is None or line < self.first_raise):
            self.first_raise = line

    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.cell_steps_end:
            if self.cell_steps_end == MAX_NOTEBOOK_STEPS:
                raise GiveUp(f"the notebook needs more than {MAX_NOTEBOOK_STEPS:,} steps to follow")
            raise GiveUp(f"more than {MAX_STEPS:,} steps to follow (the grader stopped there)")

    def taint(self, why: Unknown) -> None:
        """Something may have changed any variable: none is known any more. (The names of
        metal_puzzles' own classes stay: a notebook that rebinds MetalKernel to something else
        and then calls it with a literal source is not one the grader protects.)"""
        self.tainted = True
        for frame in self.st.frames.values():
            for name, value in frame.items():
                if not (isinstance(value, Builtin) and value.name in PACKAGE_NAMES):
                    frame[name] = why

    def fork_paths(self, paths: list[Callable[[], None]], why: Unknown) -> None:
        """Run each path from the current state; continue with what the ones that go on agree on."""
        base = self.st
        ends = []
        for path in paths:
            self.steps += sum(map(len, base.frames.values())) // 16  # a fork copies every variable
            self.st = base.fork()
            try:
                path()
                ends.append(self.st)
            except PathEnded:
                pass
        if not ends:
            raise PathEnded
        self.st = self.join(ends, why)

    # ------------------------------------------------------------------ names
    def load(self, name: str, scope: Scope, lineno: int, probe: bool = False) -> Any:
        frames = self.st.frames
        if scope.kind == "function" and name in scope.local_names and name not in scope.global_names \
                and name not in scope.nonlocal_names:
            value = frames[scope.frame].get(name, UNBOUND)
            return self.unknown(f"the variable '{name}' read before it is assigned", lineno) \
                if value is UNBOUND else value
        if scope.kind == "class" and name in frames[scope.frame]:
            return frames[scope.frame][name]
        if name not in scope.global_names:
            for fid in reversed(scope.closure):
                if fid in frames and name in frames[fid]:
                    return frames[fid][name]
        if name in frames[0]:
            value = frames[0][name]
            if self.escaped is not None and not (isinstance(value, Builtin) and value.name in PACKAGE_NAMES):
                return self.escaped
            return value
        if name in BUILTINS:
            return BUILTINS[name]
        if name not in PYTHON_NAMES and not self.tainted and not probe:
            # A NameError, which stops the cell here, unless something the grader did not follow bound it.
            self.may_raise(lineno)
        return self.unknown(f"the name '{name}', which has no value the grader can read here", lineno)

    def store(self, name: str, value: Any, scope: Scope) -> None:
        self.st.frames[self._frame_of(name, scope)][name] = value

    def _frame_of(self, name: str, scope: Scope) -> int:
        if scope.kind == "module" or name in scope.global_names:
            return 0
        if name in scope.nonlocal_names:
            for fid in reversed(scope.closure):
                if fid in self.st.frames and name in self.st.frames[fid]:
                    return fid
            return scope.closure[-1] if scope.closure else 0
        return scope.frame

    def delete(self, name: str, scope: Scope) -> None:
        self.st.frames[self._frame_of(name, scope)].pop(name, None)

    # ------------------------------------------------------------------ changes
    def _mutated(self, obj: KList, why: Unknown, new: KList | None = None) -> None:
        """The list ``obj`` changed in place: every name holding that very list sees ``new`` (or
        becomes unknown); one holding it inside a tuple, or a kernel built with it, is unknown."""
        for frame in self.st.frames.values():
            for name, value in frame.items():
                if value is obj and new is not None:
                    frame[name] = new
                elif holds(value, obj):
                    frame[name] = why
        for name, build in self.st.kernels.items():
            if holds(build.input_names, obj) or holds(build.output_names, obj):
                self.st.kernels[name] = replace(build, source=why, header="")


    def kernels_unpredictable(self, why: Unknown) -> None:
        """Code the grader does not follow may build any kernel from here on."""
        self.any_kernel = self.any_kernel or why

    def _new_frame(self) -> int:
        fid = self.next_frame
        self.next_frame += 1
        self.st.frames[fid] = {}
        return fid

    def kernel_changed(self, ref: KernelRef, why: Unknown) -> None:
        """A kernel object changed or handed to code the grader does not follow: its kernel is not known."""
        name = ref.build.name
        self.st.kernels[name] = replace(ref.build, source=why, header="")

    # ------------------------------------------------------------------ values
    def truth(self, value: Any) -> bool | None:
        """The value's truth, or None where the grader cannot know it."""
        if isinstance(value, Unknown | BoundMethod):
            return None
        if isinstance(value, Function | Builtin | Module | Problem):
            return True
        try:
            return bool(value)
        except TypeError:
            return None

    def iterate(self, value: Any) -> list[Any] | None:
        if isinstance(value, tuple):  # KList too
            return list(value)
        if isinstance(value, str) and len(value) <= MAX_UNROLL:
            return list(value)
        return None

