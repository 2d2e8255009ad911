"""A small, sound evaluator of a notebook's string-valued Python, cell by cell in notebook order.

The grader never runs a submission's Python. It follows it instead, as an interpreter whose
values are either *known* (strings, numbers, booleans, None, tuples and lists of them, the
notebook's own functions) or ``Unknown``: anything else, carrying the construct that made it and
where. Every statement it does not understand makes what it could change unknown, so a value it
calls known is the value the notebook has when it runs: that is the soundness rule, and each
construct below is written to keep it.

Followed: literals and concatenation, augmented assignment, tuple unpacking, ``for`` over known
sequences, the walrus, f-strings, ``.format`` and ``%`` of known values, ``textwrap.dedent``, the
string methods that compute (``replace``, ``join``, ``strip``...), module globals, ``global`` and
``nonlocal``, the notebook's functions when they are called (directly, through ``MetalProblem``'s
``show()`` and ``check()``, or passed to other code), and conditions whose value is known (the
dead branch of ``if DEBUG:`` does not run). A condition whose value is unknown runs both branches
and keeps only what they agree on; a loop over unknown values is followed to a fixed point.

Every ``MetalKernel(...)`` call is recorded when it runs (``KernelBuild``): the last one of a name is
the kernel the notebook runs. A function that builds kernels but is never called is read at the
end of the notebook, as a fallback for names nothing else built.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import re
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from .cells import (
    CELL_MAGICS,
    LINE_MAGICS,
    CellSyntaxError,
    MagicEffect,
    capture_targets,
    parse_cell,
)

#: Bounds on the work one notebook may cost the evaluator (it runs in a grading worker).
MAX_STEPS = 400_000  # statements and expressions evaluated in one cell (a step is about 2.5 µs)
MAX_NOTEBOOK_STEPS = 2_000_000  # ... and in the whole notebook
MAX_DEPTH = 40  # nested calls of the notebook's functions
MAX_UNROLL = 10_000  # iterations of one loop over known values
MAX_STRING = 2**20  # characters of a known string
MAX_FIXPOINT = 12  # passes over a loop whose iterations are unknown


# ----------------------------------------------------------------------------- values
@dataclass(frozen=True)
class Unknown:
    """A value the grader cannot know without running the notebook: what made it, and where."""

    construct: str
    cell: int
    line: int

    @property
    def where(self) -> str:
        return f"code cell {self.cell}, line {self.line}"


class KList(tuple):
    """A list's value. Lists are compared by content; a change in place (``append``, ``+=``,
    ``x[i] = ...``) makes every name that holds the very same list unknown (``_mutated``)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is KList and tuple.__eq__(self, other)

    def __hash__(self) -> int:
        return tuple.__hash__(self)


@dataclass(frozen=True)
class FunctionFacts:
    """What Python decides about a function before it runs, scanned once per definition."""

    local_names: frozenset[str]  # every name it assigns, unless declared global or nonlocal
    global_names: frozenset[str]
    nonlocal_names: frozenset[str]
    generator: bool  # its body runs as it is iterated, not when it is called
    captured: bool  # it defines functions or classes, which may keep its frame alive
    builds_kernels: bool  # it mentions MetalKernel

    @staticmethod
    def of(node: ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionFacts:
        globals_: set[str] = set()
        nonlocals: set[str] = set()
        generator = captured = False
        for n in _own_nodes(node.body):
            if isinstance(n, ast.Global):
                globals_.update(n.names)
            elif isinstance(n, ast.Nonlocal):
                nonlocals.update(n.names)
            elif isinstance(n, ast.Yield | ast.YieldFrom):
                generator = True
            elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
                captured = True
        a = node.args
        params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p is not None}
        local = (_assigned_names(node.body) | params) - globals_ - nonlocals
        builds = any(isinstance(n, ast.Name | ast.Attribute) and _names_metal_kernel(n) for n in ast.walk(node))
        return FunctionFacts(frozenset(local), frozenset(globals_), frozenset(nonlocals), generator, captured, builds)


@dataclass(frozen=True, eq=False)
class Function:
    """A function the notebook defined (compared by identity, as Python compares functions)."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    closure: tuple[int, ...]  # the frames of the functions it is nested in, innermost last
    defaults: dict[str, Any]
    cell: int
    line_offset: int
    serial: int
    facts: FunctionFacts


@dataclass(frozen=True)
class Builtin:
    """A callable whose behaviour the evaluator knows (``textwrap.dedent``, ``MetalKernel``...)."""

    name: str


@dataclass(frozen=True)
class Module:
    name: str


@dataclass(frozen=True)
class Problem:
    """A ``MetalProblem``/``GradProblem``: its show(), check() ... call the function it holds."""

    function: Function
    returns_kernel: bool = True  # MetalProblem: check() runs the kernel the function returns


@dataclass(frozen=True, eq=False)
class KernelRef:
    """The object a ``MetalKernel(...)`` call made (a puzzle function returns it to check())."""

    build: KernelBuild


@dataclass(frozen=True)
class BoundMethod:
    target: Any
    name: str
    owner: ast.expr | None = None  # the expression the method was read from (for changes in place)




@dataclass(frozen=True)
class KernelBuild:
    """One ``MetalKernel(...)`` call as it ran: its fields (known or not) and where it is."""

    name: str
    source: Any
    header: Any
    input_names: Any
    output_names: Any
    cell: int
    line: int
    fallback: bool = False  # read from a function the notebook never calls


class _Unbound:
    def __repr__(self) -> str:
        return "<unbound>"


UNBOUND = _Unbound()
KERNEL_FIELDS = ("name", "input_names", "output_names", "source", "header")

_BUILTINS = {name: Builtin(name) for name in (
    "print", "len", "str", "range", "list", "tuple", "int", "enumerate", "zip", "reversed", "exec", "eval",
    "globals", "locals", "vars", "setattr", "delattr", "__import__", "compile", "getattr", "breakpoint",
    "get_ipython", "display", "MetalKernel", "MetalProblem", "GradProblem")}
_PACKAGE_NAMES = {"MetalKernel", "MetalProblem", "GradProblem"}
#: Names Python and IPython bind in a notebook without an assignment the grader sees.
_PYTHON_NAMES = set(dir(builtins)) | {"In", "Out", "get_ipython", "exit", "quit", "_", "__", "___", "_i", "_ii",
                                      "_iii", "_oh", "_dh", "_ih", "__name__", "__doc__", "__builtins__"}
#: Attributes through which Python code reaches a namespace's variables (frames, modules, IPython's).
_NAMESPACE_HANDLES = {"f_globals", "f_locals", "f_builtins", "__dict__", "__globals__", "__builtins__", "modules",
                      "currentframe", "_getframe", "user_ns", "user_global_ns"}
_IPYTHON_METHODS = {"run_line_magic", "run_cell_magic", "system", "getoutput"}
#: Calls that can change any variable of the notebook: after one, nothing is known.
_NAMESPACE_CHANGERS = {"exec", "eval", "globals", "locals", "vars", "setattr", "delattr", "__import__", "compile",
                       "getattr", "__builtins__", "breakpoint"}
_STR_METHODS = {"format", "replace", "join", "strip", "lstrip", "rstrip", "removeprefix", "removesuffix", "upper",
                "lower", "splitlines", "split", "expandtabs", "center", "ljust", "rjust", "zfill"}
_LIST_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"}
_WIDE_NUMBER = re.compile(r"\d{6,}")


# ----------------------------------------------------------------------------- state
@dataclass
class State:
    """The notebook's variables (one dict per frame: 0 is the module) and the kernels built."""

    frames: dict[int, dict[str, Any]]
    kernels: dict[str, KernelBuild]

    def fork(self) -> State:
        return State({k: dict(v) for k, v in self.frames.items()}, dict(self.kernels))

    def same_as(self, other: State) -> bool:
        if self.frames.keys() != other.frames.keys() or self.kernels.keys() != other.kernels.keys():
            return False
        return all(_same_maps(self.frames[k], other.frames[k]) for k in self.frames) and \
            all(_same(self.kernels[k], other.kernels[k]) for k in self.kernels)


def _same(a: Any, b: Any) -> bool:
    """Equal as Python values, and of the same type (1, 1.0 and True are three values here)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):  # KList too
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, KernelBuild):
        return all(_same(getattr(a, f), getattr(b, f)) for f in ("source", "header", "input_names",
                                                                  "output_names")) and a.name == b.name
    if isinstance(a, float) and a != a:
        return b != b
    return a is b or a == b


def _same_maps(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)


def join(states: list[State], why: Unknown) -> State:
    """The state after paths that may each have run: what they agree on stays known; a variable
    or kernel on which they differ becomes unknown (``why``, unless it already was)."""
    if len(states) == 1:
        return states[0]
    frames: dict[int, dict[str, Any]] = {}
    for fid in dict.fromkeys(k for s in states for k in s.frames):
        present = [s.frames[fid] for s in states if fid in s.frames]
        out = {}
        for name in dict.fromkeys(n for f in present for n in f):
            values = [f.get(name, UNBOUND) for f in present]
            if all(_same(values[0], v) for v in values[1:]):
                out[name] = values[0]
            else:
                out[name] = next((v for v in values if isinstance(v, Unknown)), why)
        frames[fid] = out
    kernels: dict[str, KernelBuild] = {}
    for name in dict.fromkeys(k for s in states for k in s.kernels):
        builds = [s.kernels.get(name) for s in states]
        first = builds[0]
        if first is not None and all(b is not None and _same(first, b) for b in builds[1:]):
            kernels[name] = first
        else:
            known = next(b for b in builds if b is not None)
            kernels[name] = replace(known, source=why, header="")
    for f in frames.values():  # a name unbound on some path stays "maybe unbound": unknown
        for k, v in f.items():
            if v is UNBOUND:
                f[k] = why
    return State(frames, kernels)


# ----------------------------------------------------------------------------- control flow
class _Ended(Exception):
    """This path of execution ended here (return, break, continue, raise): its state went to
    the sink of the construct it leaves."""


class GiveUp(Exception):
    """The evaluator stops following the notebook (a bound was reached)."""

    def __init__(self, construct: str) -> None:
        super().__init__(construct)
        self.construct = construct


@dataclass
class _Scope:
    """Where names are read and written: the module, a function's frame, a class body."""

    frame: int
    kind: str  # "module" | "function" | "class"
    local_names: frozenset[str] = frozenset()
    global_names: frozenset[str] = frozenset()
    nonlocal_names: frozenset[str] = frozenset()
    closure: tuple[int, ...] = ()


@dataclass
class _LoopSinks:
    breaks: list[State] = field(default_factory=list)
    continues: list[State] = field(default_factory=list)


@dataclass
class Outcome:
    """What following a notebook gave: the kernels as they were last built, notes about cells."""

    kernels: dict[str, KernelBuild]
    notes: list[str]


class Evaluator:
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
        self.loops: list[_LoopSinks] = []
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
        scope = _Scope(0, "module")
        before = self.st.fork()
        cell = self.cell_running = self.cell
        self.first_raise: int | None = None
        self.raises = [[]]
        try:
            self.exec_block(body, scope)
            ends = [self.st]
        except _Ended:
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
            except _Ended:
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
            if not (isinstance(call, ast.Call) and _names_metal_kernel(call.func)):
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
        raise _Ended

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
                if not (isinstance(value, Builtin) and value.name in _PACKAGE_NAMES):
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
            except _Ended:
                pass
        if not ends:
            raise _Ended
        self.st = self.join(ends, why)

    # ------------------------------------------------------------------ names
    def load(self, name: str, scope: _Scope, lineno: int, probe: bool = False) -> Any:
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
            if self.escaped is not None and not (isinstance(value, Builtin) and value.name in _PACKAGE_NAMES):
                return self.escaped
            return value
        if name in _BUILTINS:
            return _BUILTINS[name]
        if name not in _PYTHON_NAMES and not self.tainted and not probe:
            # A NameError, which stops the cell here, unless something the grader did not follow bound it.
            self.may_raise(lineno)
        return self.unknown(f"the name '{name}', which has no value the grader can read here", lineno)

    def store(self, name: str, value: Any, scope: _Scope) -> None:
        self.st.frames[self._frame_of(name, scope)][name] = value

    def _frame_of(self, name: str, scope: _Scope) -> int:
        if scope.kind == "module" or name in scope.global_names:
            return 0
        if name in scope.nonlocal_names:
            for fid in reversed(scope.closure):
                if fid in self.st.frames and name in self.st.frames[fid]:
                    return fid
            return scope.closure[-1] if scope.closure else 0
        return scope.frame

    def delete(self, name: str, scope: _Scope) -> None:
        self.st.frames[self._frame_of(name, scope)].pop(name, None)

    # ------------------------------------------------------------------ statements
    def exec_block(self, body: list[ast.stmt], scope: _Scope) -> None:
        for stmt in body:
            self.exec_stmt(stmt, scope)

    def exec_stmt(self, stmt: ast.stmt, scope: _Scope) -> None:
        self.tick()
        method = getattr(self, "stmt_" + type(stmt).__name__, None)
        if method is None:
            self.unmodelled_statement(stmt, scope)
        else:
            method(stmt, scope)

    def unmodelled_statement(self, stmt: ast.stmt, scope: _Scope) -> None:
        """A statement the evaluator does not follow: what it may assign becomes unknown, and
        functions it mentions may be called by it."""
        why = self.unknown(f"a '{type(stmt).__name__}' statement", stmt.lineno)
        self.builds_out_of_sight(stmt, f"a '{type(stmt).__name__}' statement")
        self.call_mentioned_functions(stmt, scope)
        for name in _assigned_names([stmt]):
            self.store(name, why, scope)

    def stmt_Expr(self, stmt: ast.Expr, scope: _Scope) -> None:
        self.eval(stmt.value, scope)

    def stmt_Pass(self, stmt: ast.Pass, scope: _Scope) -> None:
        pass

    def stmt_Assign(self, stmt: ast.Assign, scope: _Scope) -> None:
        value = self.eval(stmt.value, scope)
        for target in stmt.targets:
            self.assign(target, value, scope)

    def stmt_AnnAssign(self, stmt: ast.AnnAssign, scope: _Scope) -> None:
        if stmt.value is not None:
            self.assign(stmt.target, self.eval(stmt.value, scope), scope)

    def stmt_AugAssign(self, stmt: ast.AugAssign, scope: _Scope) -> None:
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

    def stmt_Delete(self, stmt: ast.Delete, scope: _Scope) -> None:
        for target in stmt.targets:
            if isinstance(target, ast.Name):
                self.delete(target.id, scope)
            else:
                self.assign(target, None, scope)  # an item or attribute: its owner changes in place

    def stmt_Global(self, stmt: ast.Global, scope: _Scope) -> None:
        pass  # read when the function is called (``_function_scope``)

    stmt_Nonlocal = stmt_Global

    def stmt_Import(self, stmt: ast.Import, scope: _Scope) -> None:
        for alias in stmt.names:
            if alias.asname:
                self.store(alias.asname, self._module(alias.name), scope)
            else:
                top = alias.name.split(".")[0]
                self.store(top, self._module(top), scope)

    def _module(self, name: str) -> Any:
        return Module(name)

    def stmt_ImportFrom(self, stmt: ast.ImportFrom, scope: _Scope) -> None:
        module = stmt.module or ""
        for alias in stmt.names:
            if alias.name == "*":
                if not module.startswith("metal_puzzles"):
                    self.taint(self.unknown(f"'from {module} import *', which may replace any name", stmt.lineno))
                for name in ("MetalKernel", "MetalProblem", "GradProblem"):
                    self.store(name, Builtin(name), scope)
                continue
            self.store(alias.asname or alias.name, self._imported(module, alias.name, stmt.lineno), scope)

    def _imported(self, module: str, name: str, lineno: int) -> Any:
        if module == "textwrap" and name in ("dedent", "indent"):
            return Builtin(f"textwrap.{name}")
        if module == "inspect" and name == "cleandoc":
            return Builtin("inspect.cleandoc")
        if module.startswith("metal_puzzles") and name in ("MetalKernel", "MetalProblem", "GradProblem"):
            return Builtin(name)
        return self.unknown(f"'{name}' imported from {module or 'a package'}", lineno)

    def stmt_FunctionDef(self, stmt: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope) -> None:
        for decorator in stmt.decorator_list:
            self.eval(decorator, scope)
        defaults: dict[str, Any] = {}
        args = stmt.args
        positional = [*args.posonlyargs, *args.args]
        for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=False):
            defaults[arg.arg] = self.eval(default, scope)
        for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=False):
            if default is not None:
                defaults[arg.arg] = self.eval(default, scope)
        closure = scope.closure + ((scope.frame,) if scope.kind == "function" else ())
        fn = Function(stmt, closure, defaults, self.cell, self.line_offset, next(self.serial), FunctionFacts.of(stmt))
        if stmt.decorator_list:  # a decorator may change when (and whether) the body runs
            self.builds_out_of_sight(stmt, f"the decorated function {stmt.name}()")
        self.store(stmt.name, fn, scope)

    stmt_AsyncFunctionDef = stmt_FunctionDef

    def stmt_ClassDef(self, stmt: ast.ClassDef, scope: _Scope) -> None:
        for node in (*stmt.bases, *(k.value for k in stmt.keywords), *stmt.decorator_list):
            self.eval(node, scope)
        frame = self._new_frame()
        self.exec_block(stmt.body, _Scope(frame, "class", closure=scope.closure + (
            (scope.frame,) if scope.kind == "function" else ())))
        for inner in stmt.body:  # its methods run when an object of it calls them: not followed
            if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef):
                self.builds_out_of_sight(inner, f"the method {stmt.name}.{inner.name}()")
        self.store(stmt.name, self.unknown(f"the class '{stmt.name}'", stmt.lineno), scope)

    def stmt_Return(self, stmt: ast.Return, scope: _Scope) -> None:
        value = self.eval(stmt.value, scope) if stmt.value is not None else None
        if not self.returns:
            raise _Ended
        self.returns[-1].append((self.st, value))
        raise _Ended

    def stmt_Break(self, stmt: ast.Break, scope: _Scope) -> None:
        if self.loops:
            self.loops[-1].breaks.append(self.st)
        raise _Ended

    def stmt_Continue(self, stmt: ast.Continue, scope: _Scope) -> None:
        if self.loops:
            self.loops[-1].continues.append(self.st)
        raise _Ended

    def stmt_Raise(self, stmt: ast.Raise, scope: _Scope) -> None:
        for part in (stmt.exc, stmt.cause):
            if part is not None:
                self.eval(part, scope)
        self.raised(stmt.lineno)

    def stmt_Assert(self, stmt: ast.Assert, scope: _Scope) -> None:
        test = self.truth(self.eval(stmt.test, scope))
        if test is False:
            self.raised(stmt.lineno)
        if test is None:  # it may stop the cell here, or not
            self.may_raise(stmt.lineno)

    def stmt_If(self, stmt: ast.If, scope: _Scope) -> None:
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

    def stmt_For(self, stmt: ast.For | ast.AsyncFor, scope: _Scope) -> None:
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
            sinks = _LoopSinks()
            self.loops.append(sinks)
            try:
                self.assign(stmt.target, item, scope)
                self.exec_block(stmt.body, scope)
                goes_on = [self.st]
            except _Ended:
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
            except _Ended:
                pass
        if not exits:
            raise _Ended
        self.st = self.join(exits, self.unknown(f"a value that depends on where the loop at line "
                                           f"{stmt.lineno + self.line_offset} stops", stmt.lineno))

    stmt_AsyncFor = stmt_For

    def stmt_While(self, stmt: ast.While, scope: _Scope) -> None:
        truth = self.truth(self.eval(stmt.test, scope))
        if truth is False:
            self.exec_block(stmt.orelse, scope)
            return
        why = self.unknown(f"a value changed in the 'while' loop at line {stmt.lineno + self.line_offset}",
                           stmt.lineno)
        self.loop_unknown(stmt, scope, why, lambda: self.eval(stmt.test, scope), endless=isinstance(
            stmt.test, ast.Constant) and bool(stmt.test.value))

    def loop_unknown(self, stmt: ast.For | ast.AsyncFor | ast.While, scope: _Scope, why: Unknown,
                     start: Callable[[], None], endless: bool = False) -> None:
        """A loop run a number of times the grader cannot know: followed from an entry state that
        is joined with each pass's end until nothing changes (each join only makes values unknown,
        so this ends), which then stands for every number of iterations."""
        entry = self.st.fork()
        for name in _assigned_names(stmt.body):
            entry.frames[self._frame_of(name, scope)][name] = why
        breaks: list[State] = []
        for _ in range(MAX_FIXPOINT):
            self.st = entry.fork()
            sinks = _LoopSinks()
            self.loops.append(sinks)
            try:
                start()
                self.exec_block(stmt.body, scope)
                ends = [self.st]
            except _Ended:
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
            except _Ended:
                pass
        exits += breaks
        if not exits:
            raise _Ended
        self.st = self.join(exits, why)

    def stmt_With(self, stmt: ast.With | ast.AsyncWith, scope: _Scope) -> None:
        for item in stmt.items:
            self.eval(item.context_expr, scope)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, self.unknown("the value of a 'with ... as'", stmt.lineno), scope)
        self.exec_block(stmt.body, scope)

    stmt_AsyncWith = stmt_With

    def stmt_Try(self, stmt: ast.Try, scope: _Scope) -> None:
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
        except _Ended:
            pass
        raised = self.raises.pop()
        ends = []
        if normal is not None:
            self.st = normal
            try:
                self.exec_block(stmt.orelse, scope)
                ends.append(self.st)
            except _Ended:
                pass
        if stmt.handlers:
            start = self.join(between + raised, why)
            for name in _assigned_names(stmt.body):
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
                except _Ended:
                    pass
        if self.raises:  # an exception no handler catches goes on outward
            self.raises[-1].extend(raised)
        if not ends:
            raise _Ended
        self.st = self.join(ends, why)
        self.exec_block(stmt.finalbody, scope)

    stmt_TryStar = stmt_Try

    def stmt_Match(self, stmt: ast.Match, scope: _Scope) -> None:
        self.eval(stmt.subject, scope)
        why = self.unknown(f"a value that depends on the 'match' at line {stmt.lineno + self.line_offset}",
                           stmt.lineno)

        def case_path(case: ast.match_case) -> Callable[[], None]:
            def run() -> None:
                for name in _pattern_names(case.pattern):
                    self.store(name, why, scope)
                self.exec_block(case.body, scope)
            return run
        self.fork_paths([case_path(c) for c in stmt.cases] + [lambda: None], why)

    # ------------------------------------------------------------------ assignment
    def assign(self, target: ast.expr, value: Any, scope: _Scope) -> None:
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
                self.kernel_changed(owner, self.unknown(f"the kernel object changed by `{_construct(target)} = ...`",
                                                        target.lineno))
            elif isinstance(owner, Module) and owner.name == "__main__" and isinstance(target, ast.Attribute):
                self.st.frames[0][target.attr] = value
            elif isinstance(owner, Module):
                self.patched.add(owner.name)
            if isinstance(target, ast.Attribute) and (target.attr in _PACKAGE_NAMES or isinstance(owner, Builtin)
                                                      and owner.name in _PACKAGE_NAMES):
                self.kernels_unpredictable(self.unknown(f"`{_construct(target)} = ...`, which changes what "
                                                        "MetalKernel or MetalProblem do", target.lineno))

    def unpack(self, target: ast.Tuple | ast.List, value: Any, scope: _Scope) -> None:
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

    def _mutated(self, obj: KList, why: Unknown, new: KList | None = None) -> None:
        """The list ``obj`` changed in place: every name holding that very list sees ``new`` (or
        becomes unknown); one holding it inside a tuple, or a kernel built with it, is unknown."""
        for frame in self.st.frames.values():
            for name, value in frame.items():
                if value is obj and new is not None:
                    frame[name] = new
                elif _holds(value, obj):
                    frame[name] = why
        for name, build in self.st.kernels.items():
            if _holds(build.input_names, obj) or _holds(build.output_names, obj):
                self.st.kernels[name] = replace(build, source=why, header="")

    # ------------------------------------------------------------------ expressions
    def eval(self, node: ast.expr, scope: _Scope) -> Any:
        self.tick()
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            return self.unmodelled_expression(node, scope)
        return method(node, scope)

    def unmodelled_expression(self, node: ast.expr, scope: _Scope) -> Unknown:
        """An expression the evaluator does not follow (a comprehension, a lambda, a dict...):
        names it binds (the walrus) become unknown, functions it mentions may be called by it."""
        why = self.unknown(f"`{_construct(node)}` (a {_KIND_NAMES.get(type(node).__name__, 'construct')} the "
                           "grader does not evaluate)", node.lineno)
        self.builds_out_of_sight(node, f"a {_KIND_NAMES.get(type(node).__name__, 'construct')}")
        self.call_mentioned_functions(node, scope)
        for sub in ast.walk(node):
            if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
                self.store(sub.target.id, why, scope)
        return why

    def call_mentioned_functions(self, node: ast.AST, scope: _Scope) -> None:
        """The notebook's functions named inside something not followed may be called by it:
        they are followed as if called here (and its kernel objects may be changed)."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                value = self.load(sub.id, scope, getattr(sub, "lineno", 0), probe=True)
                if not (isinstance(value, Builtin) and value.name == "MetalKernel"):  # its calls: out of sight
                    self.handed_off([value], sub)

    def handed_off(self, values: Iterable[Any], node: ast.AST) -> None:
        """Values handed to code the grader does not follow: functions may be called by it (they
        are followed as if called here), kernel objects changed, MetalKernel itself called."""
        for value in values:
            for item in _flatten(value):
                if isinstance(item, Function | Problem):
                    self.call_unknowingly(item, node)
                elif isinstance(item, KernelRef):
                    self.kernel_changed(item, self.unknown(f"the kernel object handed to `{_construct(node)}`, "
                                                           "which the grader does not follow", node.lineno))
                elif isinstance(item, Builtin) and item.name == "MetalKernel":
                    self.kernels_unpredictable(self.unknown(f"MetalKernel handed to `{_construct(node)}`, which "
                                                            "may build any kernel", node.lineno))

    def kernels_unpredictable(self, why: Unknown) -> None:
        """Code the grader does not follow may build any kernel from here on."""
        self.any_kernel = self.any_kernel or why

    def call_unknowingly(self, value: Function | Problem, node: ast.AST) -> None:
        if isinstance(value, Problem):
            self.run_problem(value, node)
        else:
            self.call_function(value, None, {}, node)

    def run_problem(self, problem: Problem, node: ast.AST) -> None:
        """What MetalProblem's show() and check() do: call the puzzle's function and run the
        kernel it returns, which is then the one that ran last under its name."""
        before = dict(self.st.kernels)
        returned = self.call_function(problem.function, None, {}, node)
        if not problem.returns_kernel:  # a GradProblem's function wires kernels built on the way
            return
        if isinstance(returned, KernelRef):
            self.st.kernels[returned.build.name] = returned.build
            return
        why = self.unknown(f"the kernel {problem.function.node.name}() returns, which the grader cannot tell",
                           getattr(node, "lineno", 0))
        for name, build in self.st.kernels.items():  # any kernel this call built may be the one run
            if before.get(name) is not build:
                self.st.kernels[name] = replace(build, source=why, header="")

    def expr_Constant(self, node: ast.Constant, scope: _Scope) -> Any:
        v = node.value
        if isinstance(v, str | int | float | bool | bytes) or v is None:
            return v
        return self.unknown("a constant", node.lineno)

    def expr_Name(self, node: ast.Name, scope: _Scope) -> Any:
        if node.id == "__builtins__":  # exec, setattr ... by another name
            self.escaped = self.unknown("__builtins__, through which any variable can change", node.lineno)
            self.taint(self.escaped)
        return self.load(node.id, scope, node.lineno)

    def expr_NamedExpr(self, node: ast.NamedExpr, scope: _Scope) -> Any:
        value = self.eval(node.value, scope)
        self.assign(node.target, value, scope)
        return value

    def expr_Tuple(self, node: ast.Tuple | ast.List, scope: _Scope) -> Any:
        out: list[Any] = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                items = self.iterate(self.eval(elt.value, scope))
                if items is None:
                    return self.unknown("a starred item the grader cannot expand", node.lineno)
                out += items
            else:
                out.append(self.eval(elt, scope))
        return KList(out) if isinstance(node, ast.List) else tuple(out)

    expr_List = expr_Tuple

    def expr_JoinedStr(self, node: ast.JoinedStr, scope: _Scope) -> Any:
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
                continue
            formatted = self.formatted(value, scope)
            if isinstance(formatted, Unknown):
                return formatted
            parts.append(formatted)
        return self.bounded("".join(parts), node.lineno)

    def formatted(self, node: ast.FormattedValue, scope: _Scope) -> Any:
        value = self.eval(node.value, scope)
        spec = self.eval(node.format_spec, scope) if node.format_spec is not None else ""
        if not _plain(value):
            return value if isinstance(value, Unknown) else self.unknown(
                f"an f-string of {_construct(node.value)}", node.lineno)
        if isinstance(spec, Unknown):
            return spec
        if not isinstance(spec, str) or _WIDE_NUMBER.search(spec):
            return self.unknown("an f-string whose format is too wide", node.lineno)
        py = _to_python(value)
        if node.conversion == ord("r"):
            py = repr(py)
        elif node.conversion == ord("s"):
            py = str(py)
        elif node.conversion == ord("a"):
            py = ascii(py)
        try:
            return format(py, spec)
        except (ValueError, TypeError):
            return self.raised(node.lineno)

    def expr_BinOp(self, node: ast.BinOp, scope: _Scope) -> Any:
        # A long chain ("a" + "b" + ...) nests to the left: walk it without recursion.
        chain = [node]
        while isinstance(chain[-1].left, ast.BinOp):
            chain.append(chain[-1].left)
        value = self.eval(chain[-1].left, scope)
        for link in reversed(chain):
            self.tick()
            value = self.binop(link.op, value, self.eval(link.right, scope), link.lineno)
        return value

    def binop(self, op: ast.operator, left: Any, right: Any, lineno: int) -> Any:
        for side in (left, right):
            if isinstance(side, Unknown):
                return side
        if not (_plain(left) and _plain(right)):
            return self.unknown(f"a '{type(op).__name__}' of values the grader does not compute", lineno)
        a, b = _to_python(left), _to_python(right)
        size = _size_of(op, a, b)
        if size is None:
            return self.unknown(f"a '{_OPERATOR_SIGNS.get(type(op), type(op).__name__)}' the grader does not "
                                "compute", lineno)
        if size > MAX_STRING:
            return self.unknown("a string longer than the grader keeps", lineno)
        if isinstance(op, ast.Mod) and isinstance(a, str) and _WIDE_NUMBER.search(a):
            return self.unknown("a '%' format that is too wide", lineno)
        try:
            result = _OPERATORS[type(op)](a, b)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError, KeyError):
            return self.raised(lineno)
        return self.bounded(_from_python(result), lineno)

    def bounded(self, value: Any, lineno: int) -> Any:
        if isinstance(value, str) and len(value) > MAX_STRING:
            return self.unknown("a string longer than the grader keeps", lineno)
        return value

    def expr_UnaryOp(self, node: ast.UnaryOp, scope: _Scope) -> Any:
        value = self.eval(node.operand, scope)
        if isinstance(node.op, ast.Not):
            truth = self.truth(value)
            return self.unknown(f"'not' of {_construct(node.operand)}", node.lineno) if truth is None else not truth
        if isinstance(value, int | float) and not isinstance(value, bool) and isinstance(node.op, ast.USub | ast.UAdd):
            return -value if isinstance(node.op, ast.USub) else value
        return value if isinstance(value, Unknown) else self.unknown("a unary operation", node.lineno)

    def expr_BoolOp(self, node: ast.BoolOp, scope: _Scope) -> Any:
        """``a and b``/``a or b``: later operands run only when earlier ones decide nothing."""
        is_and = isinstance(node.op, ast.And)
        result = self.eval(node.values[0], scope)
        for i, operand in enumerate(node.values[1:], start=1):
            truth = self.truth(result)
            if truth is not None:
                if truth is not is_and:
                    return result
                result = self.eval(operand, scope)
                continue
            why = self._depends(result, "and" if is_and else "or", node.lineno)
            rest = ast.BoolOp(op=node.op, values=node.values[i:]) if len(node.values) - i > 1 else node.values[i]
            ast.copy_location(rest, node)
            self.fork_paths([lambda rest=rest: self.eval(rest, scope), lambda: None], why)
            return why
        return result

    def expr_IfExp(self, node: ast.IfExp, scope: _Scope) -> Any:
        test = self.eval(node.test, scope)
        truth = self.truth(test)
        if truth is True:
            return self.eval(node.body, scope)
        if truth is False:
            return self.eval(node.orelse, scope)
        why = self._depends(test, "if ... else", node.lineno)
        results: list[Any] = []
        self.fork_paths([lambda: results.append(self.eval(node.body, scope)),
                         lambda: results.append(self.eval(node.orelse, scope))], why)
        return results[0] if len(results) == 2 and _same(results[0], results[1]) else why

    def expr_Compare(self, node: ast.Compare, scope: _Scope) -> Any:
        left = self.eval(node.left, scope)
        for op, right_node in zip(node.ops, node.comparators, strict=False):
            right = self.eval(right_node, scope)
            result = self.compare(op, left, right, node.lineno)
            if result is not True:
                return result
            left = right
        return True

    def compare(self, op: ast.cmpop, left: Any, right: Any, lineno: int) -> Any:
        for side in (left, right):
            if isinstance(side, Unknown):
                return side
        if isinstance(op, ast.Is | ast.IsNot):
            if any(v is None or isinstance(v, bool) for v in (left, right)):
                same = type(left) is type(right) and left == right
                return same if isinstance(op, ast.Is) else not same
            return self.unknown("an 'is' comparison of objects", lineno)
        if not (_plain(left) and _plain(right)):
            return self.unknown("a comparison of objects the grader does not compare", lineno)
        try:
            return bool(_COMPARISONS[type(op)](_to_python(left), _to_python(right)))
        except TypeError:
            return self.raised(lineno)

    def expr_Subscript(self, node: ast.Subscript, scope: _Scope) -> Any:
        value = self.eval(node.value, scope)
        index = self.eval(node.slice, scope)
        if isinstance(value, Unknown):
            return value
        if isinstance(value, str | tuple) and (isinstance(index, int) and not isinstance(index, bool)
                                               or isinstance(index, slice)):
            try:
                result = value[index]
            except IndexError:
                return self.raised(node.lineno)
            return KList(result) if isinstance(value, KList) and isinstance(index, slice) else result
        return index if isinstance(index, Unknown) else self.unknown(f"the item {_construct(node)}", node.lineno)

    def expr_Slice(self, node: ast.Slice, scope: _Scope) -> Any:
        parts = [self.eval(p, scope) if p is not None else None for p in (node.lower, node.upper, node.step)]
        if all(p is None or isinstance(p, int) and not isinstance(p, bool) for p in parts):
            return slice(*parts)
        return next((p for p in parts if isinstance(p, Unknown)), self.unknown("a slice", node.lineno))

    def expr_Attribute(self, node: ast.Attribute, scope: _Scope) -> Any:
        owner = self.eval(node.value, scope)
        name = node.attr
        if name in _NAMESPACE_CHANGERS or name == "get_ipython":
            return Builtin(name)  # builtins.exec, IPython.get_ipython ...: the same callables
        if name in _NAMESPACE_HANDLES or isinstance(owner, Builtin) and owner.name == "ipython" and \
                name not in _IPYTHON_METHODS:
            self.escaped = self.unknown(f"`{_construct(node)}`, through which any variable of the notebook "
                                        "can change", node.lineno)
            self.taint(self.escaped)
            return self.escaped
        if isinstance(owner, Module) and owner.name == "__main__":
            return self.st.frames[0].get(name, self.unknown(f"__main__.{name}", node.lineno))
        if isinstance(owner, Module) and owner.name in self.patched:
            return self.unknown(f"{_construct(node)} of a module the notebook changed", node.lineno)
        if isinstance(owner, Module):
            if owner.name == "textwrap" and name in ("dedent", "indent"):
                return Builtin(f"textwrap.{name}")
            if owner.name == "inspect" and name == "cleandoc":
                return Builtin("inspect.cleandoc")
            if name in ("MetalKernel", "MetalProblem", "GradProblem"):
                return Builtin(name)
            return self.unknown(f"{_construct(node)}", node.lineno)
        if name in ("MetalKernel", "MetalProblem", "GradProblem") and isinstance(owner, Unknown):
            return Builtin(name)  # metal_puzzles.host.kernel.MetalKernel through a module the grader did not follow
        if isinstance(owner, str) and name in _STR_METHODS or isinstance(owner, KList) and name in _LIST_MUTATORS:
            return BoundMethod(owner, name, node.value)
        if isinstance(owner, Problem):  # problem.fn is the function; its methods call it
            return owner.function if name == "fn" else BoundMethod(owner, name)
        if isinstance(owner, Builtin) and owner.name == "ipython":
            return BoundMethod(owner, name)
        if isinstance(owner, Unknown):
            return owner
        return self.unknown(f"the attribute {_construct(node)}", node.lineno)

    def expr_Await(self, node: ast.Await, scope: _Scope) -> Any:
        return self.eval(node.value, scope)

    # ------------------------------------------------------------------ calls
    def expr_Call(self, node: ast.Call, scope: _Scope) -> Any:
        func = self.eval(node.func, scope)
        args: list[Any] = []
        starred = False
        for a in node.args:
            if isinstance(a, ast.Starred):
                items = self.iterate(self.eval(a.value, scope))
                if items is None:
                    starred = True
                else:
                    args += items
            else:
                args.append(self.eval(a, scope))
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            value = self.eval(kw.value, scope)
            if kw.arg is None:
                starred = True
                if isinstance(value, Function | Problem):
                    self.call_unknowingly(value, node)
            else:
                kwargs[kw.arg] = value
        if isinstance(func, Function):
            if starred:
                return self.call_function(func, None, {}, node)
            return self.call_function(func, args, kwargs, node)
        if isinstance(func, Builtin):
            return self.call_builtin(func, args, kwargs, starred, node)
        if isinstance(func, BoundMethod):
            return self.call_method(func, args, kwargs, starred, node, scope)
        if isinstance(func, Unknown) and _names_metal_kernel(node.func):
            # MetalKernel itself may have been replaced (exec, %run): the kernel is built, unreadably.
            kwargs = {**kwargs, "source": func}
            return self.build_kernel(args[:3], kwargs, False, node)
        # A call the grader does not follow: a function of the notebook handed to it may be called by it,
        # a kernel object handed to it may be changed by it.
        self.handed_off((*args, *kwargs.values()), node)
        return self.unknown(f"the value of `{_construct(node)}`", node.lineno)

    def call_function(self, fn: Function, args: list[Any] | None, kwargs: dict[str, Any], node: ast.AST) -> Any:
        """Follow a call of the notebook's function (``args`` None: arguments the grader cannot know)."""
        self.called.add(id(fn))
        if fn.facts.generator:  # its body runs as it is iterated, not when it is called
            saved = self.cell, self.line_offset
            self.cell, self.line_offset = fn.cell, fn.line_offset
            self.builds_out_of_sight(fn.node, f"the generator {fn.node.name}()")
            self.cell, self.line_offset = saved
            return self.unknown(f"the generator {fn.node.name}()", getattr(node, "lineno", 0))
        if self.depth >= MAX_DEPTH:
            raise GiveUp(f"calls nested more than {MAX_DEPTH} deep")
        frame = self._new_frame()
        facts = fn.facts
        scope = _Scope(frame, "function", facts.local_names, facts.global_names, facts.nonlocal_names, fn.closure)
        arg_unknown = self.unknown(f"an argument of {fn.node.name}()", getattr(node, "lineno", 0))
        self._bind(fn, frame, args, kwargs, arg_unknown)
        saved_cell, saved_offset = self.cell, self.line_offset
        self.cell, self.line_offset = fn.cell, fn.line_offset
        self.depth += 1
        self.returns.append([])
        try:
            self.exec_block(fn.node.body, scope)
            ends: list[tuple[State, Any]] = [(self.st, None)]
        except _Ended:
            ends = []
        finally:
            returned = self.returns.pop()
            self.depth -= 1
            self.cell, self.line_offset = saved_cell, saved_offset
        ends = returned + ends
        if not ends:
            raise _Ended
        why = self.unknown(f"a value that depends on where {fn.node.name}() returns", fn.node.lineno)
        self.st = self.join([s for s, _ in ends], why)
        values = [v for _, v in ends]
        if not facts.captured:
            self.st.frames.pop(frame, None)
        if isinstance(fn.node, ast.AsyncFunctionDef):
            return self.unknown(f"the coroutine {fn.node.name}()", getattr(node, "lineno", 0))
        return values[0] if all(_same(values[0], v) for v in values[1:]) else why

    def _bind(self, fn: Function, frame: int, args: list[Any] | None, kwargs: dict[str, Any],
              why: Unknown) -> None:
        a = fn.node.args
        positional = [*a.posonlyargs, *a.args]
        bound = self.st.frames[frame]
        for i, p in enumerate(positional):
            if args is None:
                bound[p.arg] = why
            elif i < len(args):
                bound[p.arg] = args[i]
            elif p.arg in kwargs:
                bound[p.arg] = kwargs[p.arg]
            else:
                bound[p.arg] = fn.defaults.get(p.arg, why)
        for p in a.kwonlyargs:
            bound[p.arg] = why if args is None else kwargs.get(p.arg, fn.defaults.get(p.arg, why))
        if a.vararg is not None:
            bound[a.vararg.arg] = why if args is None else tuple(args[len(positional):])
        if a.kwarg is not None:
            bound[a.kwarg.arg] = why

    def _new_frame(self) -> int:
        fid = self.next_frame
        self.next_frame += 1
        self.st.frames[fid] = {}
        return fid

    def call_builtin(self, func: Builtin, args: list[Any], kwargs: dict[str, Any], starred: bool,
                     node: ast.Call) -> Any:
        name = func.name
        lineno = node.lineno
        if name == "MetalKernel":
            return self.build_kernel(args, kwargs, starred, node)
        if name in ("MetalProblem", "GradProblem"):
            fn = args[1] if len(args) > 1 else kwargs.get("fn", kwargs.get("op"))
            if isinstance(fn, Function):
                return Problem(fn, returns_kernel=name == "MetalProblem")
            return self.unknown(f"a {name} of a function the grader cannot read", lineno)
        if name in _NAMESPACE_CHANGERS:
            self.escaped = self.unknown(f"{name}(...), which can change any variable of the notebook", lineno)
            self.taint(self.escaped)
            return self.escaped
        if name == "get_ipython":
            return Builtin("ipython")
        if name in ("print", "display"):
            return None
        if starred or kwargs or any(isinstance(a, Unknown) for a in args):
            return next((a for a in args if isinstance(a, Unknown)),
                        self.unknown(f"the value of {_construct(node)}", lineno))
        return self.pure_builtin(name, args, lineno)

    def pure_builtin(self, name: str, args: list[Any], lineno: int) -> Any:
        try:
            if name == "textwrap.dedent" and len(args) == 1 and isinstance(args[0], str):
                return textwrap.dedent(args[0])
            if name == "textwrap.indent" and len(args) == 2 and all(isinstance(a, str) for a in args):
                return self.bounded(textwrap.indent(args[0], args[1]), lineno)
            if name == "inspect.cleandoc" and len(args) == 1 and isinstance(args[0], str):
                import inspect
                return inspect.cleandoc(args[0])
            if name == "len" and len(args) == 1 and isinstance(args[0], str | tuple):
                return len(args[0])
            if name == "str" and len(args) == 1 and _plain(args[0]):
                return str(_to_python(args[0]))
            if name == "str" and not args:
                return ""
            if name == "int" and len(args) == 1 and isinstance(args[0], str | int | float) and \
                    len(str(args[0])) < 20:
                return int(args[0])
            if name == "range" and 1 <= len(args) <= 3 and all(type(a) is int for a in args):
                r = range(*args)
                if len(r) <= MAX_UNROLL:
                    return KList(r)
            if name in ("list", "tuple", "reversed", "enumerate") and len(args) == 1:
                items = self.iterate(args[0])
                if items is not None:
                    items = list(reversed(items)) if name == "reversed" else \
                        [tuple(p) for p in enumerate(items)] if name == "enumerate" else items
                    return tuple(items) if name == "tuple" else KList(items)
            if name == "list" and not args:
                return KList()
            if name == "zip" and args:
                seqs = [self.iterate(a) for a in args]
                if all(s is not None for s in seqs):
                    return KList(tuple(t) for t in zip(*seqs, strict=False))
        except (ValueError, TypeError):
            return self.raised(lineno)
        return self.unknown(f"the value of {name}(...)", lineno)

    def call_method(self, method: BoundMethod, args: list[Any], kwargs: dict[str, Any], starred: bool,
                    node: ast.Call, scope: _Scope) -> Any:
        target, name = method.target, method.name
        lineno = node.lineno
        if isinstance(target, Problem):  # show(), check() ... call the puzzle's function
            self.run_problem(target, node)
            return self.unknown(f"the value of `{_construct(node)}`", lineno)
        if isinstance(target, Builtin) and target.name == "ipython":
            return self.ipython_call(name, args, node, scope)
        if isinstance(target, KList):  # a change in place
            why = self.unknown(f"a list changed in place by .{name}()", lineno)
            new = None
            if name in ("append", "extend") and len(args) == 1 and not kwargs and not starred:
                items = [args[0]] if name == "append" else self.iterate(args[0])
                if items is not None and len(target) + len(items) <= MAX_UNROLL:
                    new = KList((*target, *items))
            self._mutated(target, why, new)
            return None if new is not None else why
        if starred or any(isinstance(a, Unknown) for a in (*args, *kwargs.values())):
            return next((a for a in (*args, *kwargs.values()) if isinstance(a, Unknown)),
                        self.unknown(f"the value of {_construct(node)}", lineno))
        return self.str_method(target, name, args, kwargs, lineno)

    def str_method(self, s: str, name: str, args: list[Any], kwargs: dict[str, Any], lineno: int) -> Any:
        values = [*args, *kwargs.values()]
        if not all(_plain(v) for v in values):
            return self.unknown(f"str.{name}() of values the grader does not format", lineno)
        py_args = [_to_python(a) for a in args]
        py_kwargs = {k: _to_python(v) for k, v in kwargs.items()}
        if name == "format" and (_WIDE_NUMBER.search(s) or any(type(v) is int and abs(v) > 10**5 for v in values)):
            return self.unknown("a .format() that is too wide", lineno)
        if name in ("center", "ljust", "rjust", "zfill", "expandtabs") and any(
                type(v) is int and abs(v) > MAX_STRING for v in values):
            return self.unknown(f"str.{name}() too wide", lineno)
        if name == "join":
            items = self.iterate(args[0]) if len(args) == 1 else None
            if items is None or not all(isinstance(i, str) for i in items):
                return self.unknown("a .join() of values that are not known strings", lineno)
            if sum(map(len, items)) + len(s) * len(items) > MAX_STRING:
                return self.unknown("a .join() longer than the grader keeps", lineno)
            return s.join(items)
        if name == "replace" and len(py_args) >= 2 and isinstance(py_args[1], str) and py_args[0] == "" \
                and len(s) * len(py_args[1]) > MAX_STRING:
            return self.unknown("a .replace() longer than the grader keeps", lineno)
        try:
            result = getattr(s, name)(*py_args, **py_kwargs)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            return self.raised(lineno)
        if isinstance(result, str) and len(result) > MAX_STRING:
            return self.unknown(f"a str.{name}() longer than the grader keeps", lineno)
        return KList(result) if isinstance(result, list) else result

    def ipython_call(self, name: str, args: list[Any], node: ast.Call, scope: _Scope) -> Any:
        """``get_ipython().run_line_magic(...)`` and friends, which IPython's transformation writes."""
        lineno = node.lineno
        if name in ("system", "getoutput"):
            return None if name == "system" else self.unknown("the output of a shell command", lineno)
        if name not in ("run_line_magic", "run_cell_magic") or not all(isinstance(a, str) for a in args) or \
                len(args) != (2 if name == "run_line_magic" else 3):
            why = self.unknown(f"get_ipython().{name}(...), which may change any variable", lineno)
            self.taint(why)
            return why
        magic = args[0]
        if name == "run_line_magic":
            effect, code, offset = LINE_MAGICS.get(magic, MagicEffect.ANY), args[1], lineno - 1
            kind = "%"
        else:
            effect, code, offset = CELL_MAGICS.get(magic, MagicEffect.ANY), args[2], lineno
            kind = "%%"
            for target in capture_targets(magic, args[1]):
                self.store(target, self.unknown(f"what %%{magic} captured", lineno), scope)
        if effect is MagicEffect.NONE:
            return None
        if effect is MagicEffect.ANY:
            why = self.unknown(f"the magic {kind}{magic}, which may change any variable", lineno)
            self.taint(why)
            return why
        try:
            tree = parse_cell(code)
        except CellSyntaxError as exc:
            why = self.unknown(f"{kind}{magic} of code that is not Python ({exc.message})", lineno)
            self.taint(why)
            return why
        saved = self.line_offset
        self.line_offset = saved + offset
        try:
            if effect is MagicEffect.RUN_HERE:
                self.exec_block(tree.body, scope)
            else:  # run apart: as a function's body, whose names do not stay
                fn_node = ast.FunctionDef(name=f"%{magic}", args=ast.arguments(
                    posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                    body=tree.body or [ast.Pass()], decorator_list=[], lineno=1, col_offset=0)
                fn = Function(fn_node, (), {}, self.cell, self.line_offset, next(self.serial),
                              FunctionFacts.of(fn_node))
                self.call_function(fn, [], {}, node)
        finally:
            self.line_offset = saved
        return self.unknown(f"the value of {kind}{magic}", lineno)

    def build_kernel(self, args: list[Any], kwargs: dict[str, Any], starred: bool, node: ast.Call) -> Any:
        fields: dict[str, Any] = dict(zip(KERNEL_FIELDS, args, strict=False))
        fields.update({k: v for k, v in kwargs.items() if k in KERNEL_FIELDS})
        lineno = node.lineno + self.line_offset
        name = fields.get("name", UNBOUND)
        if not isinstance(name, str):
            what = name.construct if isinstance(name, Unknown) else "missing" if name is UNBOUND else "not a string"
            self.notes.append(f"code cell {self.cell}, line {lineno}: a MetalKernel(...) whose name the grader "
                              f"cannot read ({what}); it cannot be graded")
            return self.unknown("a MetalKernel", node.lineno)
        if starred:
            why = self.unknown("a MetalKernel(...) of *args or **kwargs", node.lineno)
            fields = {"source": why}
        source = fields.get("source", UNBOUND)
        build = self.st.kernels[name] = KernelBuild(
            name, None if source is UNBOUND else source, fields.get("header", ""),
            fields.get("input_names"), fields.get("output_names"), self.cell, lineno)
        return KernelRef(build)

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


# ----------------------------------------------------------------------------- static scans
def _own_nodes(body: Iterable[ast.AST]) -> Iterable[ast.AST]:
    """The nodes of a body, not descending into nested functions, classes or lambdas (their own
    scopes), but into comprehensions (a walrus there binds in this scope)."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stack.extend(node.decorator_list)
            if not isinstance(node, ast.ClassDef):
                stack.extend(d for d in (*node.args.defaults, *node.args.kw_defaults) if d is not None)
            continue
        if isinstance(node, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _assigned_names(body: Iterable[ast.AST]) -> set[str]:
    names: set[str] = set()
    comprehension_targets: set[int] = set()
    for node in _own_nodes(body):
        if isinstance(node, ast.comprehension):
            comprehension_targets.update(id(n) for n in ast.walk(node.target))
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del) and id(node) not in \
                comprehension_targets:
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names


def _pattern_names(pattern: ast.AST) -> set[str]:
    return _assigned_names([pattern])


def _flatten(value: Any) -> list[Any]:
    """A value and the items of the tuples and lists in it."""
    if isinstance(value, tuple):
        return [item for v in value for item in _flatten(v)]
    return [value]


def _names_metal_kernel(func: ast.expr) -> bool:
    return isinstance(func, ast.Name) and func.id == "MetalKernel" or \
        isinstance(func, ast.Attribute) and func.attr == "MetalKernel"


def _holds(value: Any, obj: KList) -> bool:
    if value is obj:
        return True
    return isinstance(value, tuple) and any(_holds(v, obj) for v in value)


def _plain(value: Any) -> bool:
    """A value the evaluator computes with: strings, numbers, None, tuples and lists of them."""
    if isinstance(value, str | int | float | bytes) or value is None:
        return True
    return isinstance(value, tuple) and all(_plain(v) for v in value)


def _to_python(value: Any) -> Any:
    if isinstance(value, KList):
        return [_to_python(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_to_python(v) for v in value)
    return value


def _from_python(value: Any) -> Any:
    if isinstance(value, list):
        return KList(_from_python(v) for v in value)
    if isinstance(value, tuple):
        return tuple(_from_python(v) for v in value)
    return value


def _size_of(op: ast.operator, a: Any, b: Any) -> int | None:
    """An upper bound on the size of ``a op b`` before computing it, or None for an operation
    the evaluator does not compute."""
    def size(v: Any) -> int:
        return len(v) if isinstance(v, str | bytes | list | tuple) else 1
    if isinstance(op, ast.Add):
        return size(a) + size(b)
    if isinstance(op, ast.Mult):
        if isinstance(a, int) and isinstance(b, int):
            return 1 if abs(a) < 2**62 and abs(b) < 2**62 else None
        count = b if isinstance(b, int) else a if isinstance(a, int) else None
        if count is None or isinstance(count, bool):
            return None
        return max(0, count) * max(size(a), size(b)) if not (isinstance(a, int) and isinstance(b, int)) else 1
    if isinstance(op, ast.Mod):
        return size(a) + 64 * (size(b) + 1) if isinstance(a, str) else 1 if isinstance(a, int | float) else None
    if isinstance(op, ast.Sub | ast.FloorDiv | ast.Div):
        return 1 if isinstance(a, int | float) and isinstance(b, int | float) else None
    if isinstance(op, ast.Pow):
        return 1 if isinstance(a, int | float) and isinstance(b, int) and 0 <= b <= 64 and abs(a) < 2**32 else None
    return None


def _construct(node: ast.AST) -> str:
    """A short quotation of the code that made a value."""
    try:
        text = ast.unparse(node)
    except (ValueError, TypeError, AttributeError, RecursionError):
        return "an expression"
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


_KIND_NAMES = {"ListComp": "list comprehension", "SetComp": "set comprehension", "DictComp": "dict comprehension",
               "GeneratorExp": "generator", "Lambda": "lambda", "Dict": "dict", "Set": "set", "Yield": "yield",
               "YieldFrom": "yield", "Starred": "starred expression"}

_OPERATOR_SIGNS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
                   ast.Pow: "**", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|",
                   ast.BitAnd: "&", ast.BitXor: "^"}

_OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Mod: lambda a, b: a % b, ast.FloorDiv: lambda a, b: a // b, ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a ** b,
}
_COMPARISONS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
