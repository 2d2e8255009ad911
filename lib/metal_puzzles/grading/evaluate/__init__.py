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

from .calls import Calls
from .expressions import Expressions
from .known_values import KernelBuild, Unknown
from .notebook_state import GiveUp, Outcome
from .statements import Statements

__all__ = ["Evaluator", "GiveUp", "KernelBuild", "Outcome", "Unknown"]


class Evaluator(Statements, Expressions, Calls):
    """Follows a notebook: ``run_cell`` for each code cell in order, then ``finish`` for the
    kernels as they were last built. Its parts: ``machine`` (cells, paths, names), ``statements``,
    ``expressions``, ``calls``; the values in ``values``, the state in ``state``."""
