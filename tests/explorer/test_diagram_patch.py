"""The explorer's diagram is redrawn in place: each version is sent as what changed since the one
before, and the page redraws only that; a view that cannot apply it (a new one) asks for the whole
diagram (explorer/page.py). These tests hold the Python half to what the page script assumes: one
element per part, and messages that, applied as the script applies them, give exactly the new
diagram."""

from __future__ import annotations

import html
import json
import re
import warnings

import pytest

from metal_puzzles.checking import run_case
from metal_puzzles.diagrams.svg_text import PART_SEPARATOR
from metal_puzzles.explorer.page import DiagramPatch, diagram_message_html, diagram_patch
from metal_puzzles.explorer.widgets import Explorer
from metal_puzzles.puzzles import get_puzzle, solution_source


def apply_like_the_page(before: list[str], after: list[str], patch: DiagramPatch) -> list[str]:
    """The page script's loop, on lists: ranges last to first, the new elements from ``after``."""
    elements = list(before[1:-1])
    for i1, i2, j1, j2 in reversed(patch.ops):
        elements[i1:i2] = after[1 + j1:1 + j2]
    return [after[0] if patch.head else before[0], *elements, before[-1]]


class PageCanvas:
    """The page script's canvas, on lists: the version it shows and that version's parts. It
    applies a message (the source widget's value) as the script does, or says it asks for the
    whole diagram."""

    def __init__(self) -> None:
        self.version: int | None = None
        self.parts: list[str] = []

    def receive(self, message: str) -> str:
        """'drawn', 'kept' (a whole diagram it already shows) or 'wants whole'."""
        text = re.search(r"<textarea class='mp-diagram-text' hidden>(.*?)</textarea>", message, re.S).group(1)
        pieces = html.unescape(text).split(PART_SEPARATOR)
        version = int(re.search(r"data-version='(\d+)'", message).group(1))
        patch = json.loads(html.unescape(re.search(r"data-patch='([^']*)'", message).group(1)))
        same = re.search(r"data-same='(\d+)'", message)
        if patch is None:
            kept = same is not None and self.version == int(same.group(1))
            if not kept:
                self.parts = pieces
            self.version = version
            return "kept" if kept else "drawn"
        if self.version != patch["base"]:
            return "wants whole"
        at = 0
        if patch["head"]:
            self.parts = [pieces[0], *self.parts[1:-1], pieces[1]]
            at = 2
        news = []
        for _, _, j1, j2 in patch["ops"]:
            news.append(pieces[at:at + j2 - j1])
            at += j2 - j1
        assert at == len(pieces) or pieces == [""], "a message carries exactly the elements it puts in"
        elements = self.parts[1:-1]
        for (i1, i2, _, _), new in reversed(list(zip(patch["ops"], news, strict=True))):
            elements[i1:i2] = new
        self.parts = [self.parts[0], *elements, self.parts[-1]]
        self.version = version
        return "drawn"


async def drawn_ahead(ex: Explorer) -> None:
    """Until the explorer has drawn ahead what it scheduled (``Explorer.drawing_ahead``): the
    kernel's event loop runs other work meanwhile, as here this coroutine's turns."""
    import asyncio

    for _ in range(100_000):
        if ex.drawing_ahead is None:
            return
        await asyncio.sleep(0)
    raise AssertionError("the diagram scheduled ahead was never drawn")


async def findings_drawn_ahead(ex: Explorer) -> None:
    """Until the explorer has done what it does ahead for the findings
    (``Explorer.drawing_findings_ahead``): each piece of it reschedules the next."""
    import asyncio

    for _ in range(100_000):
        if ex.drawing_findings_ahead is None and ex.drawing_ahead is None:
            return
        await asyncio.sleep(0)
    raise AssertionError("the findings' diagrams scheduled ahead were never drawn")


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
    canvas = PageCanvas()
    ex.diagram_want.value = "whole|1"  # the canvas of a new view asks for the whole diagram
    assert canvas.receive(ex.diagram.value) == "drawn" and canvas.parts == ex._diagram_parts
    # (action, whether it keeps the kind of view: the first step leaves the whole run for the
    # step-through, the jump goes to the finding's barrier phase; both redraw much of the diagram)
    actions = [(lambda: ex.move(1), False), (lambda: ex.move(1), True), (lambda: setattr(ex.thread, "value", 517), True),
               (lambda: ex.jump_to(ex.model.findings()[0].number), False), (lambda: ex.move(-1), True),
               (lambda: setattr(ex.thread, "value", 3), True)]
    for act, same_view in actions:
        before, version = ex._diagram_parts, ex._diagram_version
        act()
        after = ex._diagram_parts
        patch = diagram_patch(before, after, base=version)
        assert patch is not None and patch.base == version
        assert apply_like_the_page(before, after, patch) == after
        assert "".join(after) == ex.diagram_svg and PART_SEPARATOR not in ex.diagram_svg
        # What the page gets: the version, the patch from the version before, whose diagram, and
        # only the elements that changed: far less than the whole diagram (which was sent at
        # every click before: 400-550 kB on this 1,024-thread threadgroup).
        sent = ex.diagram.value
        assert f"data-version='{ex._diagram_version}'" in sent
        assert f"&quot;base&quot;: {version}" in sent
        assert canvas.receive(sent) == "drawn" and canvas.parts == after and canvas.version == ex._diagram_version
        changed_bytes = sum(len(part) for _, _, j1, j2 in patch.ops for part in after[1 + j1:1 + j2])
        assert len(sent) < 1.3 * changed_bytes + len(after[0]) + len(after[-1]) + 8000, (len(sent), changed_bytes)
        if same_view:
            assert len(sent) < len(ex.diagram_svg) / 10, f"{len(sent)} bytes sent for a diagram of {len(ex.diagram_svg)}"
        # A step changes a small share of the elements: the patch, not the whole, is redrawn.
        changed = sum(j2 - j1 for _, _, j1, j2 in patch.ops)
        assert changed < len(after) / 2, f"{changed} of {len(after)} elements redrawn"


def test_a_canvas_that_missed_a_version_asks_for_the_whole_diagram_and_another_keeps_its_own(
        racy_transpose: Explorer) -> None:
    ex = racy_transpose
    current, late = PageCanvas(), PageCanvas()
    ex.diagram_want.value = "whole|2"
    assert current.receive(ex.diagram.value) == "drawn"
    ex.move(1)
    ex.thread.value = 40
    assert current.receive(ex.diagram.value) == "wants whole", "a patch applied to another version than its base"
    # What the page then does: the want box; the whole diagram comes as the next version.
    ex.diagram_want.value = "whole|3"
    whole = ex.diagram.value
    assert "data-patch='null'" in whole and f"data-version='{ex._diagram_version}'" in whole
    assert current.receive(whole) == "drawn" and current.parts == ex._diagram_parts
    # A second canvas that asked: the first one, which shows that diagram already, keeps it.
    ex.diagram_want.value = "whole|4"
    assert late.receive(ex.diagram.value) == "drawn" and current.receive(ex.diagram.value) == "kept"
    assert late.parts == current.parts == ex._diagram_parts
    ex.move(1)
    assert late.receive(ex.diagram.value) == current.receive(ex.diagram.value) == "drawn"
    assert late.parts == current.parts == ex._diagram_parts
    with pytest.raises(ValueError, match="whole"):
        ex.diagram_want.value = "all of it"


def test_a_first_diagram_or_another_drawing_is_drawn_whole() -> None:
    parts = ["<svg a>", "<text>1</text>", "</g></svg>"]
    assert diagram_patch([], parts, base=0) is None
    assert diagram_patch(["<svg a>", "</other>"], parts, base=3) is None
    patch = diagram_patch(["<svg b>", "<text>1</text>", "</g></svg>"], parts, base=3)
    assert patch == DiagramPatch(3, True, [])
    page = diagram_message_html(parts, 4, "thread 0, all phases", None)
    assert "data-patch='null'" in page and "data-version='4'" in page
    # The SVG travels as the text of a textarea, escaped: none of it is parsed as the page's HTML.
    assert "&lt;svg a&gt;" in page and "<svg a>" not in page


def test_a_diagram_shown_before_is_not_drawn_again(racy_transpose: Explorer, monkeypatch) -> None:
    """Back and forth between two steps or two threads, or the same finding again: the diagram
    drawn the first time is sent again, the same, without drawing it anew (tens of milliseconds
    on this 1,024-thread threadgroup)."""
    import metal_puzzles.explorer.widgets as widgets

    ex = Explorer(racy_transpose.model.result, "III.1")  # a fresh one, which remembers nothing yet
    drawn = []
    real_draw = widgets.draw_run
    monkeypatch.setattr(widgets, "draw_run", lambda *a, **k: drawn.append(1) or real_draw(*a, **k))
    ex.thread.value = 700
    ex.move(1)
    first = ex._diagram_parts
    ex.thread.value = 701
    ex.thread.value = 700
    assert len(drawn) == 3
    assert ex._diagram_parts == first and ex._diagram_shows.endswith(f", at step {ex.step_index + 1}")
    ex.move(-1)
    ex.move(1)
    assert len(drawn) == 4 and ex._diagram_parts == first
    # Remembered diagrams are bounded: the oldest is drawn again.
    for thread in range(widgets.DIAGRAMS_REMEMBERED + 1):
        ex.thread.value = thread
    drawn.clear()
    ex.thread.value = 700
    assert len(drawn) == 1 and ex._diagram_parts == first


def test_a_thread_change_moves_no_array_of_the_diagram(racy_transpose: Explorer) -> None:
    """At the last step, where every thread's arrows are drawn, the threads of the transpose send
    their values across the tile: each thread's arrows travel another distance. The gaps between
    the arrays are opened for the farthest any could travel (draw_run's ``steady_gaps``), so a
    thread change moves nothing: the diagram keeps its size and only that thread's marks are sent
    (they used to shift the output array and resend a third of the diagram, 150 kB)."""
    ex = racy_transpose
    ex.move(ex.model.n_steps)
    for thread in (1, 5, 40, 517, 1000):
        before, version = ex._diagram_parts, ex._diagram_version
        ex.thread.value = thread
        patch = diagram_patch(before, ex._diagram_parts, base=version)
        assert not patch.head, f"thread {thread}: the diagram changed size"
        assert len(ex.diagram.value) < len(ex.diagram_svg) / 10, \
            f"thread {thread}: {len(ex.diagram.value)} bytes sent for a diagram of {len(ex.diagram_svg)}"


def test_the_next_steps_diagram_is_drawn_ahead_in_the_kernels_event_loop(racy_transpose: Explorer,
                                                                          monkeypatch) -> None:
    """In a kernel (an event loop runs), after a step the diagram of the step after it is drawn
    while the learner looks: the next click on step draws nothing. After a step back, the step
    before. Without an event loop nothing is drawn ahead."""
    import asyncio

    import metal_puzzles.explorer.widgets as widgets

    ex = Explorer(racy_transpose.model.result, "III.1")
    drawn = []
    real_draw = widgets.draw_run
    monkeypatch.setattr(widgets, "draw_run", lambda *a, **k: drawn.append(k["selected_lane"]) or real_draw(*a, **k))
    monkeypatch.setattr(widgets, "DRAW_AHEAD_DELAY_S", 0.0)
    monkeypatch.setattr(widgets, "FINDINGS_DRAWN_AHEAD", 0)  # the findings' drawing ahead: tested below
    ex.move(1)
    assert len(drawn) == 1 and len(ex._drawn) == 2  # no event loop: the step alone (and the whole run)
    assert ex.drawing_ahead is None

    async def learner() -> list[int]:
        counts = []
        for delta in (1, 1, -1):
            ex.move(delta)
            counts.append(len(drawn))
            await drawn_ahead(ex)
            counts.append(len(drawn))
        ex.thread.value = 900  # a thread change: its own diagram, nothing ahead
        assert ex.drawing_ahead is None
        counts.append(len(drawn))
        return counts

    counts = asyncio.run(learner())
    # step 3: drawn, then step 4 ahead; step 4: found drawn, step 5 ahead; back to step 4:
    # found, and step 3 (the way back) was drawn already; then thread 900 at step 3.
    assert counts == [2, 3, 3, 4, 4, 4, 5], counts
    assert ex.step_index == 2


def test_the_first_steps_diagram_and_patch_are_ready_before_the_first_click(racy_transpose: Explorer,
                                                                            monkeypatch) -> None:
    """Opened in a kernel (an event loop runs), the explorer draws the diagram of the first step
    and the patch to it from the whole run's while the page renders it: the first click on step
    draws and compares nothing (it was the slow click: 700-820 ms, the later ones 33-106 ms)."""
    import asyncio

    import metal_puzzles.explorer.widgets as widgets

    monkeypatch.setattr(widgets, "DRAW_AHEAD_DELAY_S", 0.0)
    monkeypatch.setattr(widgets, "FINDINGS_DRAWN_AHEAD", 0)  # the findings' drawing ahead: tested below
    work: list[str] = []
    real_draw, real_patch = widgets.draw_run, widgets.diagram_patch
    monkeypatch.setattr(widgets, "draw_run", lambda *a, **k: work.append("draw") or real_draw(*a, **k))
    monkeypatch.setattr(widgets, "diagram_patch", lambda *a, **k: work.append("patch") or real_patch(*a, **k))

    async def first_click() -> tuple[Explorer, list[str], int]:
        ex = Explorer(racy_transpose.model.result, "III.1")
        assert list(ex._drawn) == [(0, None, None)]  # the whole run, shown
        await drawn_ahead(ex)  # until the first step's diagram and patch are ready
        assert ex._patch_ahead is not None
        before = len(work)
        ex.move(1)
        return ex, work[before:], before

    ex, at_click, before = asyncio.run(first_click())
    # Opening: the whole run's diagram drawn and sent, then the first step's drawn and compared.
    assert before == 4
    assert at_click == []  # the click found both ready
    whole = ex._drawn[(0, None, None)]
    step = ex._drawn[(0, None, 1)]
    assert ex._diagram_shows.endswith("at step 2") and ex._diagram_parts is step
    # What went to the page: the patch from the whole run's diagram to the first step's.
    expected = real_patch(whole, step, base=1)  # version 1: the whole run's, sent on opening
    assert expected is not None and expected.ops
    assert "data-version='2'" in ex.diagram.value
    assert json.dumps({"base": 1, "head": expected.head, "ops": expected.ops}) in html.unescape(ex.diagram.value)


class LayeredCanvas(PageCanvas):
    """The page's canvas with its hidden layers (page.py), one per slot: a diagram sent ahead is
    kept (the next step's until the canvas moves past the version it was drawn ahead of, a
    finding's until it is shown or replaced), and a message that names it shows it instead of
    applying its patch."""

    def __init__(self) -> None:
        super().__init__()
        # by slot: (its name, the version it is ahead of or None, parts)
        self.layers: dict[str, tuple[str, int | None, list[str]]] = {}

    def receive_ahead(self, message: str) -> None:
        text = re.search(r"<textarea class='mp-diagram-ahead-text' hidden>(.*?)</textarea>", message, re.S).group(1)
        name = re.search(r"data-ahead='(\d+)'", message).group(1)
        slot = re.search(r"data-slot='(\w+)'", message).group(1)
        based = re.search(r"data-base='(\d+)'", message)
        base = None if based is None else int(based.group(1))
        if base is None or self.version is None or self.version <= base:
            self.layers[slot] = (name, base, html.unescape(text).split(PART_SEPARATOR))

    def receive(self, message: str) -> str:
        named = re.search(r"data-ahead='(\d+)'", message)
        patch = json.loads(html.unescape(re.search(r"data-patch='([^']*)'", message).group(1)))
        layer = next((slot for slot, (name, _, _) in self.layers.items() if named and name == named.group(1)), None)
        if layer is not None and (patch is None or patch["base"] == self.version):
            self.parts = self.layers.pop(layer)[2]
            self.version = int(re.search(r"data-version='(\d+)'", message).group(1))
            answer = "swapped"
        else:
            answer = super().receive(message)
        self.layers = {slot: layer for slot, layer in self.layers.items()
                       if layer[1] is None or self.version is None or layer[1] >= self.version}
        return answer


def test_the_first_step_is_laid_out_ahead_in_a_hidden_layer_and_swapped_in(racy_transpose: Explorer,
                                                                         monkeypatch) -> None:
    """The first step changes most of a 1,024-thread threadgroup's diagram: the page laid it out
    and painted it after the click (its part of the first click 212-474 ms on a loaded machine,
    later clicks about 20). Opened in a kernel, the explorer sends that diagram ahead, whole, for
    a hidden layer; the click's message names the layer, and a canvas that has it shows exactly
    the first step's diagram; one that does not (a new view) applies the patch the message still
    carries, to the same diagram. A later step changes a few dozen elements: nothing is sent ahead."""
    import asyncio

    import metal_puzzles.explorer.widgets as widgets
    from metal_puzzles.explorer.page import AHEAD_LAYER_MIN_CHANGES, changed_elements

    monkeypatch.setattr(widgets, "DRAW_AHEAD_DELAY_S", 0.0)
    monkeypatch.setattr(widgets, "FINDINGS_DRAWN_AHEAD", 0)  # the findings' drawing ahead: tested below

    async def open_and_click() -> tuple[Explorer, LayeredCanvas, PageCanvas, list[str], list[str]]:
        ex = Explorer(racy_transpose.model.result, "III.1")
        layered, plain = LayeredCanvas(), PageCanvas()
        for canvas in (layered, plain):
            assert canvas.receive(ex.diagram.value) == "drawn"
        assert ex.diagram_ahead.value == ""
        await drawn_ahead(ex)
        assert ex._patch_ahead is not None
        changes = changed_elements(ex._patch_ahead[3])
        assert changes is not None and changes >= AHEAD_LAYER_MIN_CHANGES, changes
        layered.receive_ahead(ex.diagram_ahead.value)
        ex.move(1)
        assert "data-ahead='1'" in ex.diagram.value
        answers = [layered.receive(ex.diagram.value), plain.receive(ex.diagram.value)]
        assert layered.parts == plain.parts == ex._diagram_parts and layered.version == plain.version == 2
        ahead_sent = ex.diagram_ahead.value
        await drawn_ahead(ex)  # the second step's, drawn ahead: a small patch
        assert ex.diagram_ahead.value == ahead_sent, "a step that changes little was sent ahead whole"
        ex.move(1)
        answers.append(layered.receive(ex.diagram.value))
        return ex, layered, plain, answers, ex._drawn[(0, None, 1)]

    ex, layered, plain, answers, first_step = asyncio.run(open_and_click())
    assert answers == ["swapped", "drawn", "drawn"], answers
    assert "".join(plain.parts) == "".join(first_step)  # the patch, applied, gives the first step's diagram
    assert "data-ahead='" not in ex.diagram.value  # the second step's message: a patch alone
    assert layered.parts == ex._diagram_parts and layered.version == ex._diagram_version == 3


def test_the_first_findings_diagram_is_laid_out_ahead_and_its_first_click_swaps_it_in(racy_transpose: Explorer,
                                                                                      monkeypatch) -> None:
    """The first click on a finding changes most of the diagram (its thread, its barrier phase, its
    step: 1,113 elements of III.1's without its barrier) and drew it at the click (about 250 ms in
    Python, then the page's layout: 282-952 ms on a loaded machine). Opened in a kernel, once idle,
    the explorer draws the first finding's diagram and sends it whole for the page's finding layer,
    which stays while the learner steps and changes threads; the finding's click draws nothing, its
    message names that layer, and a canvas with it shows exactly the finding's diagram, one without
    it (a new view) applies the patch to the same diagram. Shown, the layer is spent: once the
    learner has moved away and the explorer is idle again, it is sent again."""
    import asyncio

    import metal_puzzles.explorer.widgets as widgets
    from metal_puzzles.explorer.page import AheadSlot

    monkeypatch.setattr(widgets, "DRAW_AHEAD_DELAY_S", 0.0)
    monkeypatch.setattr(widgets, "FINDINGS_AHEAD_DELAY_S", 0.0)
    drawn: list[tuple[int, int | None]] = []
    real_draw = widgets.draw_run
    monkeypatch.setattr(widgets, "draw_run", lambda *a, **k: drawn.append(k["selected_lane"]) or real_draw(*a, **k))

    async def learner() -> tuple[Explorer, list[str], str, list[str]]:
        ex = Explorer(racy_transpose.model.result, "III.1")
        layered, plain = LayeredCanvas(), PageCanvas()
        for canvas in (layered, plain):
            assert canvas.receive(ex.diagram.value) == "drawn"
        assert ex.diagram_ahead_finding.value == ""  # nothing yet: ahead only in the event loop's turns
        await findings_drawn_ahead(ex)
        layered.receive_ahead(ex.diagram_ahead.value)
        sent = ex.diagram_ahead_finding.value
        assert f"data-slot='{AheadSlot.FINDING}'" in sent and "data-base=" not in sent
        layered.receive_ahead(sent)
        answers = []
        for act in (lambda: ex.move(1), lambda: ex.move(1), lambda: setattr(ex.thread, "value", 517)):
            act()
            for canvas in (layered, plain):
                answers.append(canvas.receive(ex.diagram.value))
            await findings_drawn_ahead(ex)
            layered.receive_ahead(ex.diagram_ahead.value)
        assert ex.diagram_ahead_finding.value == sent, "the finding's layer was sent again while it stood"
        assert AheadSlot.FINDING in layered.layers
        before = len(drawn)
        ex.jump_to(ex.model.findings()[0].number)
        assert len(drawn) == before, "the finding's click drew its diagram"
        name = re.search(r"data-ahead='(\d+)'", sent).group(1)
        assert f"data-ahead='{name}'" in ex.diagram.value
        answers += [layered.receive(ex.diagram.value), plain.receive(ex.diagram.value)]
        assert layered.parts == plain.parts == ex._diagram_parts
        # Shown, the layer is spent; away from the finding and idle again, it is sent again.
        ex.move(-1)
        await findings_drawn_ahead(ex)
        return ex, answers, sent, layered.parts

    ex, answers, sent, shown = asyncio.run(learner())
    assert answers == ["swapped", "drawn", "drawn", "drawn", "drawn", "drawn", "swapped", "drawn"], answers
    target = ex.model.jump(ex.model.findings()[0].number)
    finding = ex._diagram_of(ex.model.lane(target.group, target.thread), target.phase, target.step)
    assert shown == finding and ex._diagram_shows.startswith(ex.model.label(ex.model.lane(target.group, target.thread)))
    again = ex.diagram_ahead_finding.value
    assert again != sent and "".join(html.unescape(re.search(r"hidden>(.*?)</textarea>", again, re.S).group(1))
                                     .split(PART_SEPARATOR)) == "".join(finding)
