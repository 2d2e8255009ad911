"""What every part of the code generator shares: the variant being compiled (plain or
instrumented for the cost model), the work counted for the step budget, the compiled bodies of
header functions, each node's handler bound to the part that compiles it, and the parts
themselves, each under the interface it offers the others (``interfaces.py``). A part
(expressions, places, operators, calls, declarations, statements) is a ``CodeGenPart``: it
reaches the shared state and the other parts through ``self.gen``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...counting.op_kinds import OpKind, binary_kind, elem_of
from ...front import ast
from ...front.ast import BinaryOp
from ...front.symbols import Var
from ...lang.errors import Pos
from ...lang.types import Type
from ..memory import Memory
from ..runtime import Ctx
from .arithmetic import constant_int
from .interfaces import (
    CallsApi,
    Compiled,
    DeclarationsApi,
    ExpressionsApi,
    Fn,
    OperatorsApi,
    PlacesApi,
    StatementsApi,
)
from .masks import Mask

#: Units of work one step pays for. A statement (or a loop's own condition and increment) costs
#: one step per this many units, at least one: a long expression in a loop is as much work as many
#: short statements, and must run out of budget as soon. A unit is an expression node, or an
#: element of a thread-private array that a declaration fills.
WORK_PER_STEP = 8


def in_order(fns: list[Fn]) -> Fn:
    """One compiled statement that runs ``fns`` one after another for the same lanes (a block
    that cannot jump, a declaration of several variables); a single one is returned as it is,
    to spare a call per run."""
    if len(fns) == 1:
        return fns[0]

    def run_in_order(c: Ctx, m: Mask) -> None:
        for f in fns:
            f(c, m)
    return run_in_order


def slot_of(sym: Var) -> int:
    """The register slot of a variable the checker gave one (locals, references, variables in
    memory)."""
    assert sym.slot is not None, sym.name
    return sym.slot


class CodeGenState:
    """What the code generator's parts share while compiling one variant of a kernel, and the
    parts themselves, each under the interface it offers the others (``CodeGen`` makes them)."""

    exprs: ExpressionsApi
    places: PlacesApi
    operators: OperatorsApi
    calls: CallsApi
    decls: DeclarationsApi
    stmts: StatementsApi

    def __init__(self, *, cost: bool = False) -> None:
        self.const_memories: dict[int, Memory] = {}
        self.cost = cost
        self.work = 0  # units of work in the statement being compiled (see WORK_PER_STEP)
        # Header-function bodies of this variant, compiled when a call to them is (each variant
        # compiles its own).
        self.bodies: dict[int, Any] = {}
        # Each node class's handler, bound to the part that compiles it (``CodeGen`` binds the
        # tables of __init__.py, checked complete when the package is imported).
        self.expression_dispatch: dict[type[ast.Expr], Callable[[Any], Fn]] = {}
        self.statement_dispatch: dict[type[ast.Stmt], Callable[[Any], Compiled]] = {}

    def step_cost(self) -> int:
        """Steps the statement (or loop test) just compiled pays each time it runs."""
        return 1 + self.work // WORK_PER_STEP

    def counted(self, fn: Fn, kind: OpKind | None, per_lane: int, pos: Pos) -> Fn:
        """``fn`` itself, or in the instrumented variant ``fn`` preceded by reporting one
        arithmetic instruction of ``kind`` (``per_lane`` operations for each active lane: the
        vector width, or the steps of a SIMD-group reduction)."""
        if not self.cost or kind is None:
            return fn

        def costed(c: Ctx, m: Mask) -> Any:
            c.cost.op(kind, per_lane, m, pos)
            return fn(c, m)
        return costed

    def binary_counted(self, fn: Fn, op: BinaryOp, ty: Type, pos: Pos, right: ast.Expr | None = None) -> Fn:
        """``fn`` counted as the arithmetic instruction ``op`` on type ``ty`` (see ``counted``)."""
        if not self.cost:
            return fn
        return self.counted(fn, binary_kind(op, ty, constant_int(right)), elem_of(ty)[1], pos)


class CodeGenPart:
    """One part of the code generator (expressions, places, operators, calls, declarations,
    statements): it reaches the shared state, and the other parts through their interfaces, by
    ``self.gen``, as the checker's parts reach theirs by ``self.chk``."""

    def __init__(self, gen: CodeGenState) -> None:
        self.gen = gen
