"""One test of a puzzle: the launch its kernel is run on. Both the puzzle model (``puzzle``) and
the contract rule (``contract``) speak of tests; this module sits below both, so that the arrow
between those two goes one way (the puzzle marks its tests with the contract)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Case:
    """One launch of a puzzle's kernel: inputs, output shape, grid and threadgroup."""

    inputs: tuple[np.ndarray, ...]
    output_shape: tuple[int, ...]
    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int] = (1, 1, 1)
    label: str = "visible test"
    #: How this hidden test goes beyond the structure of the visible test, in words (see
    #: ``contract``); empty when it keeps it. Such a test's failure is a note, not a failed verdict.
    beyond: tuple[str, ...] = ()
    #: The output's dtype when this test's differs from the puzzle's (a kernel templated over
    #: float and half is tested in both).
    output_dtype: str | None = None


__all__ = ["Case"]
