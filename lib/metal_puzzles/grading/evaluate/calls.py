"""Calls: the notebook's functions followed with their arguments bound, the builtins and string
methods computed, IPython's magics, ``MetalKernel(...)`` recorded as it runs, MetalProblem's
show() and check(), and values handed to code the grader does not follow."""

from __future__ import annotations

import ast
import sys
import textwrap
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from ..cells import (
    CELL_MAGICS,
    LINE_MAGICS,
    CellSyntaxError,
    MagicEffect,
    capture_targets,
    parse_cell,
)
from .known_values import (
    KERNEL_FIELDS,
    MAX_DEPTH,
    MAX_STRING,
    MAX_UNROLL,
    NAMESPACE_CHANGERS,
    UNBOUND,
    WIDE_NUMBER,
    BoundMethod,
    Builtin,
    Function,
    KernelBuild,
    KernelRef,
    KList,
    Problem,
    Unknown,
    flatten,
    plain,
    same_value,
    to_python,
)
from .machine import Machine
from .notebook_state import GiveUp, PathEnded, Scope, State
from .syntax import FunctionFacts, names_metal_kernel, quote


class Calls(Machine):
    def call_mentioned_functions(self, node: ast.AST, scope: Scope) -> None:
        """The notebook's functions named inside something not followed may be called by it:
        they are followed as if called here (and its kernel objects may be changed)."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                value = self.load(sub.id, scope, getattr(sub, "lineno", 0), probe=True)
                if not (isinstance(value, Builtin) and value.name == "MetalKernel"):  # its calls: out of sight
                    self.handed_off([value], sub)

    def handed_off(self, values: Iterable[Any], node: ast.expr) -> None:
        """Values handed to code the grader does not follow: functions may be called by it (they
        are followed as if called here), kernel objects changed, MetalKernel itself called."""
        for value in values:
            for item in flatten(value):
                if isinstance(item, Function | Problem):
                    self.call_unknowingly(item, node)
                elif isinstance(item, KernelRef):
                    self.kernel_changed(item, self.unknown(f"the kernel object handed to `{quote(node)}`, "
                                                           "which the grader does not follow", node.lineno))
                elif isinstance(item, Builtin) and item.name == "MetalKernel":
                    self.kernels_unpredictable(self.unknown(f"MetalKernel handed to `{quote(node)}`, which "
                                                            "may build any kernel", node.lineno))

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

    def expr_Call(self, node: ast.Call, scope: Scope) -> Any:
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
        if isinstance(func, Unknown) and names_metal_kernel(node.func):
            # MetalKernel itself may have been replaced (exec, %run): the kernel is built, unreadably.
            kwargs = {**kwargs, "source": func}
            return self.build_kernel(args[:3], kwargs, False, node)
        # A call the grader does not follow: a function of the notebook handed to it may be called by it,
        # a kernel object handed to it may be changed by it.
        self.handed_off((*args, *kwargs.values()), node)
        return self.unknown(f"the value of `{quote(node)}`", node.lineno)

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
        scope = Scope(frame, "function", facts.local_names, facts.global_names, facts.nonlocal_names, fn.closure)
        arg_unknown = self.unknown(f"an argument of {fn.node.name}()", getattr(node, "lineno", 0))
        self._bind(fn, frame, args, kwargs, arg_unknown)
        saved_cell, saved_offset = self.cell, self.line_offset
        self.cell, self.line_offset = fn.cell, fn.line_offset
        self.depth += 1
        self.returns.append([])
        try:
            self.exec_block(fn.node.body, scope)
            ends: list[tuple[State, Any]] = [(self.st, None)]
        except PathEnded:
            ends = []
        finally:
            returned = self.returns.pop()
            self.depth -= 1
            self.cell, self.line_offset = saved_cell, saved_offset
        ends = returned + ends
        if not ends:
            raise PathEnded
        why = self.unknown(f"a value that depends on where {fn.node.name}() returns", fn.node.lineno)
        self.st = self.join([s for s, _ in ends], why)
        values = [v for _, v in ends]
        if not facts.captured:
            self.st.frames.pop(frame, None)
        if isinstance(fn.node, ast.AsyncFunctionDef):
            return self.unknown(f"the coroutine {fn.node.name}()", getattr(node, "lineno", 0))
        return values[0] if all(same_value(values[0], v) for v in values[1:]) else why

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
        if name == "DecodeStepProblem":
            # Part V's finale runs the notebook's kernel functions, but the grader reads each kernel
            # from its own puzzle's cells and wires them itself: this problem builds none it reads,
            # and a name it is handed that is missing (a NameError) changes no kernel either.
            return None
        if name in NAMESPACE_CHANGERS:
            self.escaped = self.unknown(f"{name}(...), which can change any variable of the notebook", lineno)
            self.taint(self.escaped)
            return self.escaped
        if name == "get_ipython":
            return Builtin("ipython")
        if name in ("print", "display"):
            return None
        if starred or kwargs or any(isinstance(a, Unknown) for a in args):
            return next((a for a in args if isinstance(a, Unknown)),
                        self.unknown(f"the value of {quote(node)}", lineno))
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
            if name == "str" and len(args) == 1 and plain(args[0]):
                return str(to_python(args[0]))
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
                    node: ast.Call, scope: Scope) -> Any:
        target, name = method.target, method.name
        lineno = node.lineno
        if isinstance(target, Problem):  # show(), check() ... call the puzzle's function
            self.run_problem(target, node)
            return self.unknown(f"the value of `{quote(node)}`", lineno)
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
                        self.unknown(f"the value of {quote(node)}", lineno))
        return self.str_method(target, name, args, kwargs, lineno)

    def str_method(self, s: str, name: str, args: list[Any], kwargs: dict[str, Any], lineno: int) -> Any:
        values = [*args, *kwargs.values()]
        if not all(plain(v) for v in values):
            return self.unknown(f"str.{name}() of values the grader does not format", lineno)
        py_args = [to_python(a) for a in args]
        py_kwargs = {k: to_python(v) for k, v in kwargs.items()}
        if name == "format" and (WIDE_NUMBER.search(s) or any(type(v) is int and abs(v) > 10**5 for v in values)):
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

    def ipython_call(self, name: str, args: list[Any], node: ast.Call, scope: Scope) -> Any:
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
                fn_node = _function_node(f"%{magic}", tree.body or [ast.Pass()])
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


def _function_node(name: str, body: list[ast.stmt]) -> ast.FunctionDef:
    """A function of no parameters with ``body``, as ``def name(): ...`` parses (Python 3.12 added
    its type parameters)."""
    args = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
    since_312: dict[str, Any] = {"type_params": []} if sys.version_info >= (3, 12) else {}
    return ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], lineno=1, col_offset=0,
                           **since_312)
