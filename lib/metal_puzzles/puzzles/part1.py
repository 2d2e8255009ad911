"""Part I of the book: the fundamentals (the original fourteen puzzles)."""

from __future__ import annotations

from .p01_map import PUZZLE as MAP

PART_I = [MAP]
