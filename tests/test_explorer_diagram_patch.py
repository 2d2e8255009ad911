"""The explorer's diagram is redrawn in place: each version is sent whole (for any new view) with
what changed since the one before, and the page redraws only that (explorer/page.py). These tests
hold the Python half to what the page script assumes: one element per part, and patches that,
applied as the script applies them, give exactly the new diagram."""

from __future__ import annotations

import re
import warnings

import pytest

from metal_puzzles.checking import run_case
from metal_puzzles.diagrams.svg_text import PART_SEPARATOR
from metal_puzzles.explorer.page import DiagramPatch, diagram_patch, diagram_source_html
from metal_puzzles.explorer.widgets import Explorer
from metal_puzzles.puzzles import get_puzzle, solution_source


def apply_like_the_page(before: list[str], after: list[str], patch: DiagramPatch) -> list[str]:
    """The page script's loop, on lists: ranges last to first, the new elements from ``after``."""
    elements = list(before[1:-1])
    for i1, i2, j1, j2 in reversed(patch.ops):
        elements[i1:i2] = after[1 + j1:1 + j2]
    return [after[0] if patch.head else before[0], *elements, before[-1]]


@pytest.fixture(scope="module")
def racy_transpose() -> Explorer:
    """III.1 without its barrier: one threadgroup of 1,024 threads, a race to jump to."""
    puzzle = get_puzzle("tiled_transpose")
    racy = puzzle.kernel(solution_source(puzzle).replace("threadgroup_barrier(mem_flags::mem_threadgroup);", ""))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = run_case(racy, puzzle.visible, trace=True, steps=True, cost=True)
    return Explorer(run, "III.1")


def test_each_part_of_the_diagram_is_one_element(racy_transpose: Explorer) -> None:
    parts = racy_transpose._diagram_parts
    assert len(parts) > 1000
    assert parts[0].startswith("<svg ") and parts[0].endswith(">") and parts[-1].startswith("</g></svg>")
    for part in parts[1:-1]:
        tag = re.match(r"<(\w+)", part).group(1)
        # one element: it closes itself, or ends with its own end tag and opens no second sibling
        assert part.endswith("/>") and part.count("<") == 1 or part.endswith(f"</{tag}>"), part[:120]
        if tag != "g":
            assert part.count(f"<{tag}") == 1, part[:120]


def test_a_step_a_thread_change_and_a_jump_send_patches_that_rebuild_the_new_diagram(racy_transpose: Explorer) -> None:
    ex = racy_transpose
    actions = [lambda: ex.move(1), lambda: ex.move(1), lambda: setattr(ex.thread, "value", 517),
               lambda: ex.jump_to(ex.model.findings()[0].number), lambda: ex.move(-1),
               lambda: setattr(ex.thread, "value", 3)]
    for act in actions:
        before, version = ex._diagram_parts, ex._diagram_version
        act()
        after = ex._diagram_parts
        patch = diagram_patch(before, after, base=version)
        assert patch is not None and patch.base == version
        assert apply_like_the_page(before, after, patch) == after
        assert "".join(after) == ex.diagram_svg and PART_SEPARATOR not in ex.diagram_svg
        # What the page gets: the version, the patch from the version before, whose diagram.
        sent = ex.diagram.value
        assert f"data-version='{ex._diagram_version}'" in sent
        assert f"&quot;base&quot;: {version}" in sent
        # A step changes a small share of the elements: the patch, not the whole, is redrawn.
        changed = sum(j2 - j1 for _, _, j1, j2 in patch.ops)
        assert changed < len(after) / 2, f"{changed} of {len(after)} elements redrawn"


def test_a_first_diagram_or_another_drawing_is_drawn_whole() -> None:
    parts = ["<svg a>", "<text>1</text>", "</g></svg>"]
    assert diagram_patch([], parts, base=0) is None
    assert diagram_patch(["<svg a>", "</other>"], parts, base=3) is None
    patch = diagram_patch(["<svg b>", "<text>1</text>", "</g></svg>"], parts, base=3)
    assert patch == DiagramPatch(3, True, [])
    page = diagram_source_html(parts, 4, "thread 0, all phases", None)
    assert "data-patch='null'" in page and "data-version='4'" in page
    # The SVG travels as the text of a textarea, escaped: none of it is parsed as the page's HTML.
    assert "&lt;svg a&gt;" in page and "<svg a>" not in page
