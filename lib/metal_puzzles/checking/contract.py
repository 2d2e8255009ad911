"""The contract rule: the visible test is the contract.

A puzzle poses its problem through its visible test: the learner sees its launch drawn and
writes a kernel for it. Hidden tests change values and sizes (so that an answer typed in by
hand fails) but should keep every *structural* property of the visible test: whether the last
threadgroup is partial, whether there are more threads than elements, whether there are several
threadgroups (each per grid dimension), which arrays are square, which inputs have equal shapes.

A hidden test that departs from that structure still runs, but its failure is a note that
teaches, never a failed verdict: code written for a puzzle as it was posed (for instance for the
original Metal-Puzzles notebook, with its launch sizes) passes exactly when it is correct for
that puzzle. Where a book wants to teach a condition, its visible test shows it.

``Structure.of`` computes the properties of a test; ``mark_beyond`` compares hidden tests with
the visible one and records, on each hidden ``Case``, the ways it goes beyond (empty: within).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from metal_puzzles.compat import StrEnum

from .case import Case

AXES = "xyz"

#: Work items along each grid dimension of a test, x first.
WorkExtent = Callable[["Case"], Sequence[int]]


class Coverage(StrEnum):
    """How a grid dimension's threads compare with the elements they stand for."""

    FEWER = "fewer threads than elements"
    EXACT = "exactly one thread per element"
    MORE = "more threads than elements"


@dataclass(frozen=True)
class Structure:
    """The structural properties of one test (a ``Case``)."""

    dims: int  # grid dimensions that matter (1, 2 or 3)
    partial_last_group: tuple[bool, ...]  # per grid dimension
    several_groups: tuple[bool, ...]  # per grid dimension
    coverage: tuple[Coverage, ...]  # per grid dimension
    square: tuple[tuple[str, bool], ...]  # (array, square?) for every matrix (2-D array)
    equal_shapes: frozenset[tuple[str, str]]  # pairs of inputs of one shape

    @classmethod
    def of(cls, case: Case, input_names: Sequence[str], work: WorkExtent | None = None) -> Structure:
        """The properties of ``case``. ``work`` gives the number of work items along each grid
        dimension, x first (what "more threads than elements" compares with); by default the
        output's shape, last axis first."""
        names = list(input_names) + [f"input {k + 1}" for k in range(len(input_names), len(case.inputs))]
        arrays = dict(zip(names, (np.shape(x) for x in case.inputs), strict=False))
        extents = tuple(work(case)) if work is not None else tuple(reversed(case.output_shape))
        grid, group = case.grid, case.threadgroup
        dims = 3 if grid[2] > 1 else 2 if grid[1] > 1 else 1
        partial, several, coverage = [], [], []
        for d in range(dims):
            size = max(1, min(group[d], grid[d]))  # a launch shrinks its threadgroup to the grid
            partial.append(grid[d] % size != 0)
            several.append(grid[d] > size)
            extent = int(extents[d]) if len(extents) > d else 1
            coverage.append(Coverage.MORE if grid[d] > extent else Coverage.EXACT if grid[d] == extent
                            else Coverage.FEWER)
        shaped = [*arrays.items(), ("out", tuple(case.output_shape))]
        square = tuple((name, shape[0] == shape[1]) for name, shape in shaped if len(shape) == 2)
        inputs = list(arrays.items())
        equal = frozenset((a, b) for i, (a, sa) in enumerate(inputs) for b, sb in inputs[i + 1:] if sa == sb)
        return cls(dims, tuple(partial), tuple(several), tuple(coverage), square, equal)

    def departures(self, contract: Structure) -> tuple[str, ...]:
        """The conditions this test poses that ``contract`` (the visible test's structure) does
        not, in words; empty when it stays within the contract.

        Only new conditions count: a partial last threadgroup, several threadgroups, threads
        without an element or threads with several, a non-square array, inputs of different
        shapes. The opposite changes (whole threadgroups where the visible test has a partial
        one, a square array where it has none) are special cases of what the visible test
        already asks a kernel to handle.
        """
        out: list[str] = []
        dims = max(self.dims, contract.dims)

        def axis(d: int) -> str:
            return "" if dims == 1 else f" along {AXES[d]}"

        for d in range(dims):
            if _at(self.partial_last_group, d, False) and not _at(contract.partial_last_group, d, False):
                out.append("a partial last threadgroup" + axis(d))
            if _at(self.several_groups, d, False) and not _at(contract.several_groups, d, False):
                out.append("several threadgroups" + axis(d))
            mine, theirs = _at(self.coverage, d, Coverage.EXACT), _at(contract.coverage, d, Coverage.EXACT)
            if mine != Coverage.EXACT and mine != theirs:
                out.append(str(mine) + axis(d))
        posed = dict(contract.square)
        for name, square in self.square:
            if posed.get(name) and not square:
                out.append(f"a non-square {name}")
        for a, b in sorted(contract.equal_shapes - self.equal_shapes):
            out.append(f"{a} and {b} of different shapes")
        return tuple(out)


def _at(values: tuple, d: int, default):
    return values[d] if d < len(values) else default


def mark_beyond(visible: Case, hidden: Sequence[Case], input_names: Sequence[str],
                work: WorkExtent | None = None) -> list[Case]:
    """The hidden tests, each marked with the ways it goes beyond the visible test's structure."""
    contract = Structure.of(visible, input_names, work)
    return [dataclasses.replace(c, beyond=Structure.of(c, input_names, work).departures(contract)) for c in hidden]


def input_extent(k: int = 0) -> WorkExtent:
    """Work items that are the elements of the k-th input (a reduction's), last axis first."""
    return lambda case: tuple(reversed(np.shape(case.inputs[k])))


__all__ = ["Structure", "Coverage", "WorkExtent", "mark_beyond", "input_extent"]
