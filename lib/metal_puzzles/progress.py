"""What the learner has achieved in this notebook session, puzzle by puzzle."""

from __future__ import annotations

_STATE: dict[str, str] = {}

NOT_TRIED, FAILING, PASSING, WITHIN_BUDGET = "not tried", "failing", "passing", "passing within budget"


def record(puzzle_id: str, result) -> None:
    if result.passed:
        _STATE[puzzle_id] = WITHIN_BUDGET
    elif result.correct:
        _STATE[puzzle_id] = PASSING
    else:
        _STATE[puzzle_id] = FAILING


def state(puzzle_id: str) -> str:
    return _STATE.get(puzzle_id, NOT_TRIED)


def reset() -> None:
    _STATE.clear()
