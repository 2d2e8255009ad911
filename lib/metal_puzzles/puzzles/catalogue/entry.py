"""An entry of the book and a part of it, as data.

Each puzzle module ends with its entry (or, for a module of two puzzles, one entry each): the
puzzle, the notebook lines that build its visible test, its reference solution, the notebook
function returning its kernel, and the solution's own header where the answer is a header
constant. A part of the book is a list of entries, so the notebook builder, the grader, the
images and the tests read every puzzle's data from one place, and a puzzle's part is the part
whose list holds it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...checking import Puzzle, WiredPuzzle
from ...host.kernel import MetalKernel
from .solution_files import solution_file

if TYPE_CHECKING:  # Traversable moved to importlib.resources.abc in Python 3.11
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable  # novermin (type checking only)
    else:
        from importlib.abc import Traversable


@dataclass(frozen=True)
class Entry:
    """One puzzle of the book with what the notebook and the grader need besides the puzzle."""

    puzzle: Puzzle
    #: Notebook lines that build the visible test's inputs (named as the puzzle's input_names) and
    #: ``output_shape``; None for a finale entry, whose cell is its template.
    setup: str | None
    #: The notebook function returning the puzzle's MetalKernel, where it is not ``<id>_test``.
    #: Entries sharing a kernel share the function, defined once in the first entry's cell.
    function: str | None = None
    #: The id of the entry whose reference solution this one shares (entries sharing a kernel share
    #: its file: one kernel has to pass both); None: the entry's own, named by its id.
    shares_solution_of: str | None = None
    #: Whether the reference solution runs with a header of its own, ``<id>.header.metal`` beside
    #: it, instead of the puzzle's (the occupancy puzzle's answer is its TG).
    solution_has_header: bool = False
    #: Notebook lines after the visible test's (before the problem and its ``show()``) that teach
    #: a way to debug the kernel (a pipeline's stages run one by one against NumPy); None: none.
    debugging: str | None = None
    #: A figure the puzzle's text shows after it (a name of ``notebook.images.FIGURES``, drawn by the
    #: package and embedded in the book's text cell), and the figure's alt text; None: none.
    figure: str | None = None
    figure_alt: str = ""

    def __post_init__(self) -> None:
        if self.setup is None and not isinstance(self.puzzle, WiredPuzzle):
            raise ValueError(f"puzzle {self.puzzle.id!r}: a kernel puzzle's entry needs the notebook lines "
                             "that build its visible test (setup)")

    @property
    def kernel_function(self) -> str:
        """The name of the notebook function returning this puzzle's kernel."""
        return self.function or f"{self.puzzle.id}_test"

    @property
    def solution(self) -> str:
        """The reference solution's file name, from the puzzle's id: ``<id>.metal`` holding a kernel
        body or whole shader, or for a finale entry ``<id>.py``, the notebook cell with its blanks
        filled in. It lies in the solutions folder of the puzzle's part (``solutions/part5/``...)."""
        stem = self.shares_solution_of or self.puzzle.id
        return f"{stem}.py" if isinstance(self.puzzle, WiredPuzzle) else f"{stem}.metal"

    def solution_path(self) -> Traversable:
        """Where the reference solution lives (a clear error where the file is missing)."""
        return solution_file(self.solution)

    def solution_source(self) -> str:
        """The reference solution: a kernel body or whole shader replacing the template as
        ``source``, or for a finale entry the whole notebook cell."""
        return self.solution_path().read_text(encoding="utf-8")

    def solution_header(self) -> str:
        """The header the reference solution runs with: the puzzle's own, unless its answer is in it."""
        if not self.solution_has_header:
            return self.puzzle.header
        return solution_file(f"{self.puzzle.id}.header.metal").read_text(encoding="utf-8")

    def solution_kernel(self) -> MetalKernel:
        """The puzzle's kernel with its reference solution as the body (and header)."""
        return self.puzzle.kernel(self.solution_source(), self.solution_header())


@dataclass(frozen=True)
class Part:
    """A part of the book: its heading in the notebook and its entries, in reading order."""

    #: The part's place in the book's reading order, from 1 (``puzzles.PARTS`` checks it); its
    #: heading cell in the notebook is ``part-<number>``.
    number: int
    #: The package under ``puzzles/`` whose modules are the part's puzzles (Part II and its bonus
    #: share ``part2``), and the name of the part's folders in solutions/ and imgs/.
    folder: str
    title: str
    #: The Markdown under the part's heading.
    intro: str
    entries: tuple[Entry, ...]

    @property
    def puzzles(self) -> list[Puzzle]:
        return [e.puzzle for e in self.entries]
