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
                "(wrong output on any test, a sanitizer finding, a compile error, a missing kernel, the book's "
                "template left unchanged).")

    @classmethod
    def load(cls, path: str | Path | None) -> PointsConfig:
        """Read a points file. Raises ``PointsError`` (a ValueError) naming every mistake in it,
        one a line: a puzzle that is not in the book, a value that is not a finite number of at
        least 0, a section that is not a table, a key it does not know."""
        if path is None:
            return cls()
        with open(path, "rb") as f:
            data = tomllib.load(f)
        mistakes: list[str] = []
        unknown = sorted(set(data) - {"points", "partial"})
        if unknown:
            mistakes.append(f"unknown key(s) {', '.join(map(repr, unknown))}; a points file has [points] and "
                            "[partial] tables")
        points = _table(data, "points", mistakes)
        partial = _table(data, "partial", mistakes)
        known = {p.id for p in PUZZLES}
        mistakes += [f"[points] {unknown_puzzle(key)}" for key in points if key != "default" and key not in known]
        if set(partial) - {"over_budget"}:
            mistakes.append(f"[partial] knows only 'over_budget', not "
                            f"{', '.join(map(repr, sorted(set(partial) - {'over_budget'})))}")
        values = {k: _points(f"[points] {k}", v, mistakes) for k, v in points.items()}
        default = values.pop("default", 1.0)
        over = _points("[partial] over_budget", partial.get("over_budget", 0.5), mistakes)
        if over > 1:
            mistakes.append(f"[partial] over_budget must be between 0 and 1, got {over:g}")
        if mistakes:
            lines = [f"{path}: {m}" for m in mistakes]
            head = f"{len(mistakes)} mistakes:\n  " if len(mistakes) > 1 else ""
            raise PointsError(head + "\n  ".join(lines))
        return cls(default, values, over)


def find_puzzle(name: str) -> str | None:
    """The id of the puzzle ``name`` names as ``metal-puzzles puzzles`` lists it, by its id or
    its number, in any case ('MAP', 'v.8', 'ii.1A'); None if it names none."""
    key = name.strip().casefold()
    return next((p.id for p in PUZZLES if key in (p.id.casefold(), p.number.casefold())), None)


def unknown_puzzle(name: str, *, numbers: bool = False) -> str:
    """'<name> is not a puzzle of the book (did you mean ...?)', for a points file or an option.
    The suggestion is the nearest id (case aside), or with ``numbers`` (an option that takes
    them) the nearest id or number, as the listing writes it."""
    spelt = {p.id.casefold(): p.id for p in PUZZLES}
    if numbers:
        spelt.update({p.number.casefold(): p.number for p in PUZZLES})
    key = name.strip().casefold()
    score = {c: difflib.SequenceMatcher(None, key, c).ratio() for c in spelt}  # in the listing's order
    best = max(score.values())
    # Every one as near as the nearest ('ii.1c': II.1a, II.1b and III.1), up to three.
    close = [spelt[c] for c, r in score.items() if r == best and r >= _NEAR][:3]
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    return f"{name!r} is not a puzzle of the book{hint}; `metal-puzzles puzzles` lists them"


#: How alike two names must be for one to be suggested for the other (difflib's usual cutoff).
_NEAR = 0.6


class PointsError(ValueError):
    """The points file cannot be used; the message names the file and the entry."""


def _table(data: dict, name: str, mistakes: list[str]) -> dict:
    value = data.get(name, {})
    if not isinstance(value, dict):
        mistakes.append(f"{name!r} must be a table ([{name}] with one entry a line), not {type(value).__name__} "
                        f"{value!r}")
        return {}
    return value


def _points(what: str, value: object, mistakes: list[str]) -> float:
    """A number of points or a fraction: finite and at least 0 (a nan or an inf would make every
    total, and results.json, meaningless). A mistake is noted and counts as 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        mistakes.append(f"{what} must be a number, not {type(value).__name__} {value!r}")
        return 0.0
    number = float(value)
    if not math.isfinite(number) or number < 0:
        mistakes.append(f"{what} must be a finite number of at least 0, got {value!r}")
        return 0.0
    return number
