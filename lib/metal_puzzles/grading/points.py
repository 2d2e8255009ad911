"""Points per puzzle and the partial-credit rule, from an optional TOML file.

Example::

    [points]
    default = 1        # every puzzle not listed
    matmul_full = 2

    [partial]
    over_budget = 0.5  # fraction of a puzzle's points when correct on every test but over budget
"""

from __future__ import annotations

import difflib
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib  # novermin (3.11 and later)
else:  # pragma: no cover - Python 3.10: the same parser, as a package
    import tomli as tomllib

from ..puzzles import PUZZLES


@dataclass
class PointsConfig:
    default: float = 1.0
    per_puzzle: dict[str, float] = field(default_factory=dict)
    over_budget: float = 0.5

    def max_points(self, puzzle_id: str) -> float:
        return float(self.per_puzzle.get(puzzle_id, self.default))

    def score(self, puzzle_id: str, summary: dict | None) -> float:
        full = self.max_points(puzzle_id)
        if summary is None:
            return 0.0
        if summary.get("passed"):
            return full
        if summary.get("correct"):
            return round(full * self.over_budget, 4)
        return 0.0

    def rules(self) -> str:
        return (f"Each puzzle is worth {self.default:g} point(s) unless listed otherwise; a kernel that is correct on "
                f"every test but over budget earns {self.over_budget:.0%} of the points; anything else earns none "
                "(wrong output on any test, a sanitizer finding, a compile error, a missing kernel).")

    @classmethod
    def load(cls, path: str | Path | None) -> PointsConfig:
        """Read a points file. Raises ``PointsError`` (a ValueError) naming what is wrong: a
        puzzle that is not in the book, a value that is not a finite number of at least 0, a
        section that is not a table, a key it does not know."""
        if path is None:
            return cls()
        with open(path, "rb") as f:
            data = tomllib.load(f)
        unknown = sorted(set(data) - {"points", "partial"})
        if unknown:
            raise PointsError(f"{path}: unknown key(s) {', '.join(map(repr, unknown))}; a points file has "
                              "[points] and [partial] tables")
        points = _table(data, "points", path)
        partial = _table(data, "partial", path)
        known = {p.id for p in PUZZLES}
        for key in points:
            if key != "default" and key not in known:
                close = difflib.get_close_matches(key, sorted(known), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise PointsError(f"{path}: [points] {key!r} is not a puzzle of the book{hint}")
        if set(partial) - {"over_budget"}:
            raise PointsError(f"{path}: [partial] knows only 'over_budget', not "
                              f"{', '.join(map(repr, sorted(set(partial) - {'over_budget'})))}")
        values = {k: _points(path, f"[points] {k}", v) for k, v in points.items()}
        default = values.pop("default", 1.0)
        over = _points(path, "[partial] over_budget", partial.get("over_budget", 0.5))
        if over > 1:
            raise PointsError(f"{path}: [partial] over_budget must be between 0 and 1, got {over:g}")
        return cls(default, values, over)


class PointsError(ValueError):
    """The points file cannot be used; the message names the file and the entry."""


def _table(data: dict, name: str, path: str | Path) -> dict:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise PointsError(f"{path}: {name!r} must be a table ([{name}] with one entry a line), "
                          f"not {type(value).__name__} {value!r}")
    return value


def _points(path: str | Path, what: str, value: object) -> float:
    """A number of points or a fraction: finite and at least 0 (a nan or an inf would make every
    total, and results.json, meaningless)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PointsError(f"{path}: {what} must be a number, not {type(value).__name__} {value!r}")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise PointsError(f"{path}: {what} must be a finite number of at least 0, got {value!r}")
    return number
