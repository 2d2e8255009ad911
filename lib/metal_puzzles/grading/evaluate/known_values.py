"""The values the evaluator knows (strings, numbers, lists, the notebook's functions, the
package's callables) or does not (``Unknown``), the names it knows the meaning of, and the
bounds on what it follows."""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .syntax import FunctionFacts

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

BUILTINS = {name: Builtin(name) for name in (
    "print", "len", "str", "range", "list", "tuple", "int", "enumerate", "zip", "reversed", "exec", "eval",
    "globals", "locals", "vars", "setattr", "delattr", "__import__", "compile", "getattr", "breakpoint",
    "get_ipython", "display", "MetalKernel", "MetalProblem", "GradProblem", "DecodeStepProblem")}
#: The package's names a notebook builds kernels and problems with (``from metal_puzzles import ...``).
PACKAGE_NAMES = ("MetalKernel", "MetalProblem", "GradProblem", "DecodeStepProblem")
#: Names Python and IPython bind in a notebook without an assignment the grader sees.
PYTHON_NAMES = set(dir(builtins)) | {"In", "Out", "get_ipython", "exit", "quit", "_", "__", "___", "_i", "_ii",
                                      "_iii", "_oh", "_dh", "_ih", "__name__", "__doc__", "__builtins__"}
#: Attributes through which Python code reaches a namespace's variables (frames, modules, IPython's).
NAMESPACE_HANDLES = {"f_globals", "f_locals", "f_builtins", "__dict__", "__globals__", "__builtins__", "modules",
                      "currentframe", "_getframe", "user_ns", "user_global_ns"}
IPYTHON_METHODS = {"run_line_magic", "run_cell_magic", "system", "getoutput"}
#: Calls that can change any variable of the notebook: after one, nothing is known.
NAMESPACE_CHANGERS = {"exec", "eval", "globals", "locals", "vars", "setattr", "delattr", "__import__", "compile",
                       "getattr", "__builtins__", "breakpoint"}
STR_METHODS = {"format", "replace", "join", "strip", "lstrip", "rstrip", "removeprefix", "removesuffix", "upper",
                "lower", "splitlines", "split", "expandtabs", "center", "ljust", "rjust", "zfill"}
LIST_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"}
WIDE_NUMBER = re.compile(r"\d{6,}")


def same_value(a: Any, b: Any) -> bool:
    """Equal as Python values, and of the same type (1, 1.0 and True are three values here)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):  # KList too
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, KernelBuild):
        return all(same_value(getattr(a, f), getattr(b, f)) for f in ("source", "header", "input_names",
                                                                  "output_names")) and a.name == b.name
    if isinstance(a, float) and a != a:
        return b != b
    return a is b or a == b



def flatten(value: Any) -> list[Any]:
    """A value and the items of the tuples and lists in it."""
    if isinstance(value, tuple):
        return [item for v in value for item in flatten(v)]
    return [value]


def holds(value: Any, obj: KList) -> bool:
    if value is obj:
        return True
    return isinstance(value, tuple) and any(holds(v, obj) for v in value)


def plain(value: Any) -> bool:
    """A value the evaluator computes with: strings, numbers, None, tuples and lists of them."""
    if isinstance(value, str | int | float | bytes) or value is None:
        return True
    return isinstance(value, tuple) and all(plain(v) for v in value)


def to_python(value: Any) -> Any:
    if isinstance(value, KList):
        return [to_python(v) for v in value]
    if isinstance(value, tuple):
        return tuple(to_python(v) for v in value)
    return value


def from_python(value: Any) -> Any:
    if isinstance(value, list):
        return KList(from_python(v) for v in value)
    if isinstance(value, tuple):
        return tuple(from_python(v) for v in value)
    return value


def size_of(op: ast.operator, a: Any, b: Any) -> int | None:
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


OPERATOR_SIGNS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
                   ast.Pow: "**", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|",
                   ast.BitAnd: "&", ast.BitXor: "^"}

OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Mod: lambda a, b: a % b, ast.FloorDiv: lambda a, b: a // b, ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a ** b,
}
COMPARISONS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
