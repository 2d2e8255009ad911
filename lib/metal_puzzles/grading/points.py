"""Points per puzzle and the partial-credit rule, from an optional TOML file.

Example::

    [points]
    default = 1        # every puzzle not listed
    matmul_full = 2

    [partial]
    over_budget = 0.5  # fraction of a puzzle's points when correct on every test but over budget
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import tomllib


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
        if path is None:
            return cls()
        with open(path, "rb") as f:
            data = tomllib.load(f)
        points = dict(data.get("points", {}))
        default = float(points.pop("default", 1.0))
        over = float(data.get("partial", {}).get("over_budget", 0.5))
        if not 0 <= over <= 1:
            raise ValueError(f"partial.over_budget must be between 0 and 1, got {over}")
        return cls(default, {k: float(v) for k, v in points.items()}, over)
