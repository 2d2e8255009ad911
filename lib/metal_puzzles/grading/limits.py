"""The limits every grading task runs under."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 60.0
    memory_bytes: int = 3 * 1024**3
    max_steps: int = 20_000
