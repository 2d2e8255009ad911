"""What the learner has achieved in this notebook session, puzzle by puzzle; ``progress()``
shows it. (The module is not named after that function: importing a submodule binds its name on
the package, which would hide ``metal_puzzles.progress()``.)"""

from __future__ import annotations

import html

from metal_puzzles.compat import StrEnum

from ..checking import CheckResult
from ..puzzles import PUZZLES


class Progress(StrEnum):
    NOT_TRIED = "not tried"
    FAILING = "failing"
    PASSING = "passing"  # correct, over budget
    WITHIN_BUDGET = "passing within budget"


_STATE: dict[str, Progress] = {}

NOT_TRIED, FAILING, PASSING, WITHIN_BUDGET = Progress.NOT_TRIED, Progress.FAILING, Progress.PASSING, Progress.WITHIN_BUDGET


def record(puzzle_id: str, result: CheckResult) -> None:
    if result.passed:
        _STATE[puzzle_id] = WITHIN_BUDGET
    elif result.correct:
        _STATE[puzzle_id] = PASSING
    else:
        _STATE[puzzle_id] = FAILING


def state(puzzle_id: str) -> Progress:
    return _STATE.get(puzzle_id, NOT_TRIED)


def reset() -> None:
    _STATE.clear()


class ProgressTable:
    """The book's puzzles with their state in this session; renders as a table in Jupyter."""

    def __init__(self) -> None:
        self.rows = [(p.number, p.title, state(p.id)) for p in PUZZLES]

    def __str__(self) -> str:
        width = max(len(t) for _, t, _ in self.rows)
        return "\n".join(f"{n:>4}  {t.ljust(width)}  {s}" for n, t, s in self.rows)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        colors = {NOT_TRIED: "#888", FAILING: "#b42318", PASSING: "#b54708", WITHIN_BUDGET: "#1a7f37"}
        left = "text-align:left"
        rows = "".join(f"<tr><td style='{left}'>{html.escape(n)}</td><td style='{left}'>{html.escape(t)}</td>"
                       f"<td class='mp-state' style='{left};color:{colors[s]}'>{s}</td></tr>" for n, t, s in self.rows)
        done = sum(s == WITHIN_BUDGET for _, _, s in self.rows)
        return (f"<table class='mp-progress'><caption>{done} of {len(self.rows)} puzzles solved within budget"
                f"</caption><tr><th>#</th><th>puzzle</th><th>state</th></tr>{rows}</table>")


def progress() -> ProgressTable:
    """A table of the book's puzzles and where you stand on each in this session."""
    return ProgressTable()
