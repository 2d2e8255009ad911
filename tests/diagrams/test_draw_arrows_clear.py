"""No arrow of a run diagram crosses a label (an array's name and what it is, a column, row or block
number) that is not about its own ends (issue 30, section 4: IV.1's arrows crossed its labels).

The geometry is the diagram's own, from its model as laid out (``lay_out_run``): each arrow as
the polyline that samples its curve, each label as the box of its text (``Label.box``, from the
same width estimate the layout places it with). Every diagram of the book is checked. The layout
routes arrows around labels with the same geometry (``routing.segment_meets_box``), which is
checked on its own here."""

from __future__ import annotations

import pytest

from metal_puzzles.checking.wired import WiredPuzzle
from metal_puzzles.diagrams.draw import lay_out_run
from metal_puzzles.diagrams.routing import segment_meets_box
from metal_puzzles.diagrams.scene import Arrow, Label, Panel, views_by_key
from metal_puzzles.notebook.images import puzzle_title, solution_run
from metal_puzzles.puzzles import PUZZLES

#: The book's run diagrams (Part III's access maps draw no arrows; the finale draws nothing).
DRAWN = [p for p in PUZZLES if not isinstance(p, WiredPuzzle) and not p.budget.uses_cost]


def crossings(panel: Panel) -> list[tuple[Arrow, Label]]:
    """Every (arrow, label) of the panel where the arrow passes through a label that is not about
    the element at either of its ends."""
    views = views_by_key(panel)
    labels = [label for v in views.values() for label in v.labels()]
    found = []
    for arrow in panel.arrows:
        ends = [(views[key], element) for key, element in (arrow.source, arrow.target)]
        for label in labels:
            if any(label.names(view, element) for view, element in ends):
                continue
            box = label.box
            if any(segment_meets_box(p, q, box) for p, q in zip(arrow.points, arrow.points[1:], strict=False)):
                found.append((arrow, label))
    return found


def describe(arrow: Arrow, label: Label) -> str:
    return (f"thread lane {arrow.lane}'s arrow {arrow.source} -> {arrow.target} crosses "
            f"{label.text.text!r} of {label.key}")


def test_the_check_sees_a_crossing() -> None:
    box = (10.0, 10.0, 20.0, 16.0)
    assert segment_meets_box((15, 0), (15, 30), box)  # straight through
    assert segment_meets_box((0, 0), (30, 30), box)  # diagonally through a corner's inside
    assert not segment_meets_box((0, 0), (30, 0), box)  # above it
    assert not segment_meets_box((25, 0), (25, 30), box)  # beside it
    assert not segment_meets_box((15, 0), (15, 9), box)  # stops short of it


@pytest.mark.parametrize("puzzle", DRAWN, ids=[p.number for p in DRAWN])
def test_no_arrow_crosses_a_label(puzzle) -> None:
    drawing = lay_out_run(solution_run(puzzle), title=puzzle_title(puzzle))
    found = [describe(a, label) for panel in drawing.panels for a, label in crossings(panel)]
    assert not found, f"{len(found)} crossings, e.g. " + "; ".join(found[:5])


def test_the_book_draws_arrows() -> None:
    """The check above has arrows to look at: most diagrams draw some (a diagram without arrows
    would pass it trivially)."""
    with_arrows = [p.number for p in DRAWN[:6]
                   if any(panel.arrows for panel in lay_out_run(solution_run(p)).panels)]
    assert len(with_arrows) >= 4, with_arrows
