"""Turns the checked syntax tree into Python closures that run every thread of the grid in
lock-step over NumPy arrays. Each expression becomes ``f(ctx, mask) -> value``; each statement
``f(ctx, mask) -> None``. The tree is compiled once per kernel instance and reused.

Its parts, as the checker's: ``expressions``, ``operators``, ``calls`` and ``places`` (lvalues)
compile expressions, ``declarations`` and ``statements`` statements, each a mixin of ``CodeGen``
sharing ``state``. What the compiled code calls at run time: ``masks`` (which lanes run),
``locations`` (what an lvalue designates), ``pointers``, ``bounds`` (subscripts checked),
``arithmetic`` and ``initializers``."""

from __future__ import annotations

from .calls import Calls
from .declarations import Declarations
from .expressions import Expressions
from .operators import Operators
from .places import Places
from .statements import Statements


class CodeGen(Statements, Declarations, Calls, Operators, Expressions, Places):
    """Compiles a checked kernel into closures.

    With ``cost=True`` it compiles the instrumented variant the cost model runs: every statement
    and loop iteration, and every arithmetic operation, also reports to ``ctx.cost`` (the cost
    recorder). The plain variant contains none of those calls, so a run that does not ask for a
    cost profile pays nothing for it.
    """


__all__ = ["CodeGen"]
