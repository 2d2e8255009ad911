"""The debugging part of the book, between Part I and Part II: detective puzzles.

Each puzzle hands the learner a finished kernel that is wrong in one way a GPU hides (a race
across loop iterations, an index that wraps around, a barrier only some threads reach, an
uninitialised threadgroup read, positions computed from ``threads_per_threadgroup`` in a partial
last threadgroup). The template is that buggy kernel; the learner finds the bug with ``show()``
and ``problem.explore()``, fixes it, and ``check()`` judges the fix like any other puzzle.
"""

from __future__ import annotations

from ..catalogue.entry import Part
from . import (
    detective_block_max,
    detective_block_sum,
    detective_blur,
    detective_neighbour_sum,
    detective_squares,
)

INTRO = """\
Every kernel in this part is finished: it compiles, it runs, and most of them print the right
numbers on the visible test. Each is wrong in one way that a GPU hides (on real hardware it
would give the right answer today and a wrong one on another size, another machine or another
day), and `check()` fails it. Your job is the detective's: find the bug, then fix it with as
small a change as you can. The source is the buggy kernel itself; there is no `// FILL ME IN`.

The bugs are of the kinds Part I warned about. What is new is the method, which is the same
for every case:

1. **Read the finding whole.** Run the cell: under the diagram, `show()` lists what the
   sanitizer found, one line each: the kind, the line of your source, the thread (its position
   in its threadgroup and the threadgroup's position in the grid), the element and, for a race,
   the other thread and its line. Each is numbered and drawn where it happened.
2. **Look at the diagram.** Red marks sit on the elements and threads the findings name. Ask
   which thread you expected to touch that element, and which one did.
3. **Open the explorer.** `problem.explore()` lists the findings; click one and it shows that
   thread at that line, at that moment, with its variables. Step back to see how it got there,
   switch to the other thread the finding names, and step through it too.
4. **Say the bug in one sentence** before changing anything: "thread X reads Y before thread Z
   has written it, because ...". Then fix it, run the cell, and run `check()`.

The sanitizer's hints sometimes name the cure; the point is to see *why* it is the cure, with
your own eyes, in the explorer. Budgets are as in Part I."""

PART_DEBUG = Part(
    number=2,
    folder="debugging",
    title="Debugging: detective puzzles",
    intro=INTRO,
    entries=(
        detective_block_sum.ENTRY,
        detective_blur.ENTRY,
        detective_neighbour_sum.ENTRY,
        detective_block_max.ENTRY,
        detective_squares.ENTRY,
    ),
)
