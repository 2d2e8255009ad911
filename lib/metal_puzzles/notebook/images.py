"""The book's images: the logo, each puzzle's diagram, drawn from its reference solution, and the
figures a puzzle's text shows (``Entry.figure``: V.9's online softmax merged across tiles).

``metal-puzzles images`` regenerates them into imgs/; a test fails when the committed files
are stale (the diagrams are deterministic SVG text).
"""

from __future__ import annotations

from pathlib import Path

from chalk import hcat, rectangle, text, vcat
from colour import Color

from ..checking import Puzzle, WiredPuzzle, run_case
from ..diagrams.access_map import draw_access_map
from ..diagrams.draw import draw_run, to_svg
from ..diagrams.online_softmax import online_softmax_svg
from ..diagrams.style import text_width, thread_color
from ..msl import RunResult
from ..puzzles import ENTRIES, PUZZLES, Entry, part_of, solution_kernel

#: The figures a puzzle's text may show, by the name its entry gives (``Entry.figure``).
FIGURES = {"online_softmax": online_softmax_svg}


def puzzle_svg(puzzle: Puzzle) -> str:
    """The diagram of the puzzle's visible test, run with its reference solution: what every
    thread did or, for a puzzle budgeted in the cost model's terms (Part III), the access map
    (which segments and banks each SIMD-group touched)."""
    run = solution_run(puzzle)
    if puzzle.budget.uses_cost:
        return to_svg(draw_access_map(run, title=puzzle_title(puzzle)))
    return to_svg(draw_run(run, title=puzzle_title(puzzle)))


def solution_run(puzzle: Puzzle) -> RunResult:
    """The traced run of the puzzle's visible test with its reference solution that its diagram
    draws (with a cost profile too for a puzzle budgeted in the cost model's terms)."""
    kernel = solution_kernel(puzzle)
    if puzzle.budget.uses_cost:
        return run_case(kernel, puzzle.visible, puzzle.launch_options, trace=True, cost=True)
    return run_case(kernel, puzzle.visible, puzzle.launch_options, trace=True)


def puzzle_title(puzzle: Puzzle) -> str:
    return f"{puzzle.number}. {puzzle.title}"


def logo_svg() -> str:
    """A threadgroup of 4x4 threads, each lighting its own cell, beside the project's name."""
    rows = []
    for y in range(4):
        rows.append(hcat([rectangle(1, 1).fill_color(Color(thread_color(y * 4 + x))).line_color(Color("white"))
                          .line_width_local(0.08) for x in range(4)]))
    grid = vcat(rows).scale(24).center_xy()
    dark = Color("#1d1d1f")
    label = "Metal Puzzles"
    width = text_width(label, 40)
    # Text has no extent in chalk; an invisible box of the text's size lets the layout see it.
    box = rectangle(width, 48).line_width_local(0).fill_opacity(0)
    name = box + text(label, 40).fill_color(dark).line_color(dark).line_width_local(0)
    return to_svg(hcat([grid, name], sep=24).center_xy().pad(1.08))


def figure_file(entry: Entry) -> str | None:
    """The file of the figure an entry's text shows (in its part's folder, by the figure's name), or None."""
    if entry.figure is None:
        return None
    return f"{part_of(entry.puzzle).folder}/{entry.figure}.svg"


def figure_svg(entry: Entry) -> str:
    """The SVG text of the figure an entry's text shows."""
    if entry.figure not in FIGURES:
        raise KeyError(f"puzzle {entry.puzzle.id!r} names the figure {entry.figure!r}; the figures are {sorted(FIGURES)}")
    return FIGURES[entry.figure]()


def image_files() -> dict[str, str]:
    """Path (relative to the images folder) -> SVG text for every image of the book: the logo, and
    each puzzle's diagram in its part's folder, named by the puzzle's id (``part5/rms_norm.svg``)."""
    files = {"logo.svg": logo_svg()}
    for p in PUZZLES:
        if isinstance(p, WiredPuzzle):  # the finale wires kernels together in Python: nothing to draw
            continue
        files[f"{part_of(p).folder}/{p.id}.svg"] = puzzle_svg(p)
    for entry in ENTRIES:
        name = figure_file(entry)
        if name is not None:
            files[name] = figure_svg(entry)
    return files


def write_images(out: str | Path = "imgs") -> list[Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, svg in image_files().items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(svg, encoding="utf-8")
        written.append(path)
    return written


__all__ = ["image_files", "write_images", "figure_file", "figure_svg", "FIGURES", "puzzle_svg", "solution_run", "puzzle_title", "logo_svg"]
