"""What every part of the code generator shares: the variant being compiled (plain or
instrumented for the cost model), the work counted for the step budget, and the compiled bodies
of header functions. The parts (expressions, places, operators, calls, declarations, statements)
are mixins of ``CodeGen`` that call each other through ``self``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from ...counting.op_kinds import OpKind, binary_kind, elem_of
from ...front import ast
from ...front.ast import BinaryOp, UnaryOp
from ...front.symbols import FuncInstance, Var
from ...lang.errors import Pos
from ...lang.types import Type
from ..memory import Memory
from ..runtime import Ctx
from .arithmetic import constant_int
from .masks import Mask

#: A compiled expression or statement: ``f(ctx, mask)`` runs it for the lanes of the mask and
#: gives its value (None for a statement).
Fn = Callable[[Ctx, Mask], Any]

#: A compiled statement (None when nothing runs) and whether it may jump (break, continue,
#: return), so that the block around it drops the lanes that left.
Compiled = tuple[Fn | None, bool]

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
    """The code generator's state, and the entry points its parts call each other by."""

    #: The handler of each expression and statement node (``CodeGen`` in __init__.py declares
    #: them, checked complete when the package is imported: ``front.dispatch``).
    expression_handlers: ClassVar[Mapping[type[ast.Expr], Callable[[Any, Any], Fn]]]
    statement_handlers: ClassVar[Mapping[type[ast.Stmt], Callable[[Any, Any], Compiled]]]

    def __init__(self, *, cost: bool = False) -> None:
        self.const_memories: dict[int, Memory] = {}
        self.cost = cost
        self.work = 0  # units of work in the statement being compiled (see WORK_PER_STEP)
        # Header-function bodies of this variant, compiled when a call to them is (each variant
        # compiles its own).
        self.bodies: dict[int, Any] = {}

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

    # The parts' entry points, defined by the mixins (expressions, places, calls, statements).
    def expr(self, e: ast.Expr) -> Fn:
        raise NotImplementedError

    def lvalue(self, e: ast.Expr) -> Fn:
        raise NotImplementedError

    def stmt(self, s: ast.Stmt) -> Compiled:
        raise NotImplementedError

    def call_function(self, e: ast.Call, inst: FuncInstance) -> Fn:
        raise NotImplementedError

    def address(self, e: ast.Index) -> Fn:
        raise NotImplementedError

    def column_loc(self, e: ast.Index) -> Fn:
        raise NotImplementedError

    def incdec(self, target: ast.Expr, op: UnaryOp, prefix: bool, pos: Pos) -> Fn:
        raise NotImplementedError
