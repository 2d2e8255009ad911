"""The kernel explorer (ipywidgets): pick a thread and a barrier phase and see what it read and
wrote; step through the kernel a statement at a time watching the thread's variables; see the
sanitizer's findings listed, and click one to go to its thread, phase and line; check the
puzzle in place. Standard ipywidgets only, so it works in JupyterLab, Notebook 7 and VS Code."""

from __future__ import annotations

import asyncio
import html
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

import ipywidgets as W
from IPython.display import display

from ..checking import CheckResult
from ..checking.wording import report_html
from ..diagrams.draw import draw_run, fitting_svg, to_svg
from ..diagrams.marks import FINDING_RED
from ..diagrams.svg_text import PART_SEPARATOR
from ..host.kernel import MetalKernel, SimulatedKernel
from ..host.shader_library import ShaderKernelFunction
from ..msl import Counter, RunResult
from ..msl.thread_grid import SIMD_WIDTH
from .page import (
    AHEAD_LAYER_MIN_CHANGES,
    CELL_PICK_CLASS,
    DIAGRAM_CANVAS_HTML,
    DIAGRAM_WANT_CLASS,
    KEYBOARD_GUARD_HTML,
    ROOT_CLASS,
    SHOW_CURRENT_LINE_HTML,
    STYLE_HTML,
    AheadSlot,
    DiagramPatch,
    PickedSpace,
    changed_elements,
    diagram_ahead_html,
    diagram_message_html,
    diagram_patch,
    parse_cell_pick,
    parse_diagram_want,
)
from .run_model import ExplorerModel

#: Findings the explorer lists as buttons (a runaway kernel can have a couple of hundred).
MAX_FINDINGS_LISTED = 20

#: Accesses of the thread listed under its name (the diagram draws them all).
MAX_ACCESSES_LISTED = 40

#: Up to this many threads a threadgroup's threads are one row of buttons; a larger threadgroup
#: is picked by SIMD-group and lane (two rows of at most 32 buttons instead of 1,024).
MAX_THREAD_BUTTONS = 64

#: Threads named when a click on a cell says who touched it.
MAX_TOUCHING_LISTED = 8

#: Diagrams kept drawn, by thread, phase and step: a learner goes back and forth between steps,
#: compares two threads, clicks the same finding again, and each of those redraws of a
#: 1,024-thread threadgroup's diagram cost tens of milliseconds (a few hundred kB each).
DIAGRAMS_REMEMBERED = 32

#: How long after a step the explorer waits before drawing the diagram the next step would show
#: (``_draw_ahead``): a click that comes sooner (a key held down, a thread change) draws what it
#: needs itself, without waiting for a diagram it may not want.
DRAW_AHEAD_DELAY_S = 0.05

#: How long the explorer must have shown the same diagram (no click in between) before it draws
#: a finding's diagram ahead (``_draw_findings_ahead``): after the next step's, which is the more
#: frequent next click, and only while the learner is not clicking.
FINDINGS_AHEAD_DELAY_S = 0.25

#: Listed findings whose diagrams are drawn ahead, once the explorer is idle, and kept (a
#: 1,024-thread threadgroup's is some 430 kB): the first of them is also laid out ahead in the
#: page (page.AheadSlot.FINDING). Its first click was the slow one left: 282-952 ms on a loaded
#: machine, the Python drawing (about 250 ms) and the page's layout of 1,113 new elements most of it.
FINDINGS_DRAWN_AHEAD = 4

WidgetT = TypeVar("WidgetT", bound=W.DOMWidget)


def _classed(widget: WidgetT, css_class: str) -> WidgetT:
    """``widget`` with ``css_class`` added: the page's style sheet and script, and the browser
    tests, find the explorer's parts by their classes."""
    widget.add_class(css_class)
    return widget


class ThreadPicker:
    """The threads of a threadgroup as buttons to click: one button per thread in a small
    threadgroup, or a SIMD-group row and a lane row in a large one. ``on_pick`` gets the thread's
    index in its threadgroup."""

    def __init__(self, n_threads: int, on_pick: Callable[[int], None]) -> None:
        self.on_pick = on_pick
        self.widget = W.VBox([])
        self.widget.add_class("mp-picker")
        self.n_threads = 0
        self._setting = False  # select() moves the buttons without calling on_pick back
        self.threads: W.ToggleButtons | None = None
        self.simd_groups: W.ToggleButtons | None = None
        self.lanes: W.ToggleButtons | None = None
        self.resize(n_threads)

    @property
    def by_simd_group(self) -> bool:
        return self.n_threads > MAX_THREAD_BUTTONS

    def resize(self, n_threads: int) -> None:
        if n_threads == self.n_threads:
            return
        self.n_threads = n_threads
        style = {"button_width": "22px", "description_width": "initial"}  # 16 a row beside the file browser at 900 px
        if not self.by_simd_group:
            self.threads = W.ToggleButtons(options=[(str(t), t) for t in range(n_threads)], value=0,
                                           description="thread", style=style,
                                           tooltips=[f"thread {t} of the threadgroup" for t in range(n_threads)])
            self.threads.add_class("mp-thread-buttons")
            self.threads.observe(self._picked, names="value")
            self.simd_groups = self.lanes = None
            self.widget.children = [self.threads]
            return
        n_simd = -(-n_threads // SIMD_WIDTH)
        last = n_threads - 1
        self.simd_groups = W.ToggleButtons(
            options=[(str(g), g) for g in range(n_simd)], value=0, description="SIMD-group", style=style,
            tooltips=[f"threads {g * SIMD_WIDTH} to {min((g + 1) * SIMD_WIDTH - 1, last)}" for g in range(n_simd)])
        self.lanes = W.ToggleButtons(
            options=[(str(lane), lane) for lane in range(SIMD_WIDTH)], value=0, description="lane", style=style,
            tooltips=[f"lane {lane} of the SIMD-group (thread = SIMD-group x {SIMD_WIDTH} + lane)"
                      for lane in range(SIMD_WIDTH)])
        self.simd_groups.add_class("mp-simd-buttons")
        self.lanes.add_class("mp-lane-buttons")
        self.simd_groups.observe(self._picked, names="value")
        self.lanes.observe(self._picked, names="value")
        self.threads = None
        self.widget.children = [self.simd_groups, self.lanes]

    @property
    def value(self) -> int:
        if self.threads is not None:
            return self.threads.value
        assert self.simd_groups is not None and self.lanes is not None  # one control or the other
        return self.simd_groups.value * SIMD_WIDTH + self.lanes.value

    def select(self, thread: int) -> None:
        """Show ``thread`` as the picked one (the slider moved)."""
        self._setting = True
        try:
            if self.threads is not None:
                self.threads.value = thread
            else:
                assert self.simd_groups is not None and self.lanes is not None  # one control or the other
                self.simd_groups.value, self.lanes.value = divmod(thread, SIMD_WIDTH)
        finally:
            self._setting = False

    def _picked(self, _change) -> None:
        if not self._setting:
            self.on_pick(min(self.value, self.n_threads - 1))


class Explorer:
    """Build with a traced, stepped run (``MetalProblem.explore()`` does this for you) and,
    for a Check button, a function that checks the kernel and returns its verdict.

    Layout, meant to fit one screen from 900x800 (JupyterLab with its file browser open) to
    1400x900: the title, the phase and thread controls and the findings on top; then the step
    controls, the thread's variables and the code, with the diagram beside them in a wide
    explorer or right under them in a narrow one (page.STYLE_HTML); what the thread
    did; counts and the cost model collapsed underneath."""

    def __init__(self, result: RunResult, title: str = "", check: Callable[[], CheckResult] | None = None) -> None:
        self.model = ExplorerModel(result)
        self.title = title
        self.check = check
        self._jumping = False  # a jump or a picker click sets several controls; draw once, at the end
        self.step_index = 0
        #: Whether the diagram shows the run as it stood at ``step_index`` (from the first step,
        #: slider move or finding jump on) rather than the whole run, which it shows on opening.
        self.diagram_follows_step = False
        # The parts, each a method that makes its widgets (the layout, ``_lay_out``, places them).
        self._set_up_thread_controls()
        self._set_up_thread_texts()
        self._set_up_diagram()
        self._set_up_step_controls()
        self._set_up_check()
        findings = self._set_up_findings()
        self.widget = self._lay_out(title, findings, check is not None)
        self.refresh()
        # The first click is most often a step: its diagram (the run as it stood at step 2, where
        # the explorer opens on the whole run) and the patch to it are drawn while the page renders
        # the explorer and the learner reads it, as after every step. It was the one slow click:
        # 700-820 ms in the browser against 33-106 ms for the clicks after it.
        self._draw_ahead(self.lane)

    def _set_up_thread_controls(self) -> None:
        """Which thread is shown: its threadgroup, its index in it (the picker's buttons) and the
        barrier phase."""
        m = self.model
        self.group = _classed(W.IntSlider(0, 0, max(m.n_groups - 1, 0), description="threadgroup",
                                          style={"description_width": "initial"}, continuous_update=False,
                                          layout=W.Layout(display="none" if m.n_groups == 1 else None)), "mp-group")
        # The thread's index in its threadgroup. Not shown: the picker's buttons are the one
        # control for it (a slider beside them did the same, less precisely, on a 1,024-thread
        # threadgroup); the arrow keys move along the buttons (page.py's script).
        self.thread = _classed(W.IntSlider(0, 0, max(m.threads_in_group(0) - 1, 0), description="thread",
                                           continuous_update=False, layout=W.Layout(display="none")), "mp-thread")
        self.phase = _classed(W.Dropdown(options=[("all phases", -1)] + [(f"phase {p}", p) for p in m.phases],
                                         value=-1, description="phase", layout=W.Layout(width="170px"),
                                         style={"description_width": "initial"}), "mp-phase")
        self.picker = ThreadPicker(m.threads_in_group(0), self._on_pick)
        self.group.observe(self._on_group, names="value")
        self.thread.observe(self._on_thread, names="value")
        self.phase.observe(lambda _: self._refresh_unless_jumping(), names="value")

    def _set_up_thread_texts(self) -> None:
        """What is said of the thread shown: who it is, what a click on a cell found, what it
        read and wrote, its counts and its cost; and the hidden box a click on a cell writes into."""
        self.who = _classed(W.HTML(), "mp-who")
        # A click on a cell of the diagram: the page script (page.py) writes which cell
        # into this hidden text box, whose value syncs to Python like any widget's.
        self.cell_pick = _classed(W.Text(layout=W.Layout(display="none")), CELL_PICK_CLASS)
        self.cell_pick.observe(self._on_cell_pick, names="value")
        self.cell_info = _classed(W.HTML(), "mp-cell-info")
        self.accesses = _classed(W.HTML(), "mp-accesses-box")
        self.counts = _classed(W.HTML(), "mp-counts")
        self.cost = _classed(W.HTML(), "mp-cost")  # the cost model's figures, when the run carries a profile

    def _set_up_step_controls(self) -> None:
        """The step-through: back and forward, the same position on a slider (the keyboard steps
        with its arrow keys), where it stands, the code listing and the thread's variables."""
        self.back = _classed(W.Button(description="\u25c0 step back", layout=W.Layout(width="auto")), "mp-back")
        self.forward = _classed(W.Button(description="step \u25b6", layout=W.Layout(width="auto")), "mp-forward")
        self.step_slider = _classed(W.IntSlider(1, 1, max(self.model.n_steps, 1), description="step", readout=False,
                                                continuous_update=False, layout=W.Layout(width="220px"),
                                                style={"description_width": "initial"}), "mp-step")
        self.step_label = _classed(W.HTML(), "mp-step-label")
        self.source = _classed(W.HTML(), "mp-source")
        self.variables = _classed(W.HTML(), "mp-variables")
        self.back.on_click(lambda _: self.move(-1))
        self.forward.on_click(lambda _: self.move(1))
        self.step_slider.observe(self._on_step_slider, names="value")

    def _set_up_check(self) -> None:
        """The Check button and the verdict beside it (shown when the explorer has a check)."""
        self.check_button = _classed(W.Button(description="Check", button_style="primary"), "mp-check")
        self.verdict = _classed(W.HTML(), "mp-verdict")
        self.check_button.on_click(lambda _: self.run_check())

    def _set_up_findings(self) -> W.VBox:
        """The sanitizer's findings, a button each (a click goes to its thread, line and step),
        in a short list of their own that scrolls (twenty of them would push the code and the
        diagram off the screen), with the chosen one's text under it."""
        sites = self.model.findings()
        shown = sites[:MAX_FINDINGS_LISTED]
        self.finding_buttons = [self._finding_button(site.number, site.label) for site in shown]
        self.finding_detail = _classed(W.HTML(), "mp-finding-detail")
        if not self.finding_buttons:
            return _classed(W.VBox([]), "mp-findings")
        hidden = len(sites) - len(shown)
        more = [W.HTML(f"<i>... and {hidden} more (check() lists them)</i>")] if hidden else []
        listed = _classed(W.VBox([*self.finding_buttons, *more]), "mp-finding-list")
        heading = W.HTML(f"<b style='color:{FINDING_RED}'>Findings of the sanitizer</b> "
                         "(click one: its thread, line and step)")
        return _classed(W.VBox([heading, listed, self.finding_detail]), "mp-findings")

    def _set_up_diagram(self) -> None:
        """The diagram's widgets and what the explorer remembers of the diagrams it drew and sent."""
        # The diagram: a canvas the page draws it in, a hidden source of what changed in it since
        # the version before (page.py: only that is sent and redrawn), and a hidden box in which a
        # canvas that cannot apply a change (a new view) asks for the whole diagram.
        self.diagram_canvas = W.HTML(DIAGRAM_CANVAS_HTML)
        self.diagram_canvas.add_class("mp-diagram")
        self.diagram = W.HTML(layout=W.Layout(display="none"))
        self.diagram.add_class("mp-diagram-source")
        # A diagram drawn ahead that changes most of the one shown, sent whole for a hidden layer.
        self.diagram_ahead = W.HTML(layout=W.Layout(display="none"))
        self.diagram_ahead.add_class("mp-diagram-ahead-source")
        self.diagram_want = W.Text(layout=W.Layout(display="none"))
        self.diagram_want.add_class(DIAGRAM_WANT_CLASS)
        self.diagram_want.observe(self._on_diagram_want, names="value")
        #: The SVG of the diagram shown, as the page draws it.
        self.diagram_svg = ""
        self._diagram_parts: list[str] = []  # the version sent last, separated into its elements
        # Drawn diagrams by (lane, phase, step), least recently shown first.
        self._drawn: OrderedDict[tuple[int, int | None, int | None], list[str]] = OrderedDict()
        self._direction = 1  # of the last step: the next one likely goes the same way
        self._diagram_version = 0
        self._diagram_shows = ""  # whose diagram the version sent last is (its data-shows)
        # The patch to a diagram drawn ahead, worked out with it: (the version it starts from,
        # the parts it goes from and to, the patch), used if that is the next diagram sent.
        self._patch_ahead: tuple[int, list[str], list[str], DiagramPatch | None] | None = None
        # The diagram sent ahead for the canvas's hidden layer: (the layer's number, its parts).
        self._layer_ahead: tuple[int, list[str]] | None = None
        self._layers_sent = 0
        #: The diagram drawn ahead, while it waits for its turn in the event loop (None once drawn,
        #: or when nothing is to be drawn ahead): what a test waits for.
        self.drawing_ahead: asyncio.TimerHandle | None = None
        # A finding's diagram sent ahead for the canvas's finding layer, which the page keeps
        # whatever is shown: (the layer's number, its parts), until a click shows it.
        self.diagram_ahead_finding = W.HTML(layout=W.Layout(display="none"))
        self.diagram_ahead_finding.add_class("mp-diagram-ahead-finding-source")
        self._finding_layer: tuple[int, list[str]] | None = None
        # The first listed findings' diagrams, drawn ahead and kept out of the least-recently-shown
        # ones (``_drawn``): by finding number, the view they show (lane, phase, step) and the parts.
        self._findings_drawn: dict[int, tuple[tuple[int, int | None, int | None], list[str]]] = {}
        #: The next finding's diagram to draw ahead, while it waits for a quiet turn of the event
        #: loop (None when all are drawn and sent): what a test waits for.
        self.drawing_findings_ahead: asyncio.TimerHandle | None = None

    def _lay_out(self, title: str, findings: W.Widget, with_check: bool) -> W.VBox:
        controls = W.HBox([self.group, self.thread, self.phase, self.picker.widget],
                          layout=W.Layout(flex_flow="row wrap", align_items="center"))
        controls.add_class("mp-controls")
        stepper = W.HBox([self.back, self.forward, self.step_slider, self.step_label],
                         layout=W.Layout(flex_flow="row wrap", align_items="center"))
        stepper.add_class("mp-stepper")
        # Three areas of a grid (page.STYLE_HTML places them): the step controls, the
        # thread's variables and the code; the diagram; what the thread did. Side by side in a
        # wide explorer (the diagram beside the other two), one below the other in a narrow one
        # (the diagram right under the code), so that code, step controls and diagram share one
        # screen either way.
        code = W.VBox([stepper, self.variables, self.source])
        code.add_class("mp-left")
        right = W.VBox([self.diagram_canvas, self.diagram, self.diagram_ahead, self.diagram_ahead_finding,
                        self.diagram_want])
        right.add_class("mp-right")
        info = W.VBox([self.who, self.cell_info, self.accesses, self.cell_pick])
        info.add_class("mp-info")
        main = W.Box([code, right, info])
        main.add_class("mp-main")
        # Counts and the cost model matter once the kernel is correct: closed until asked for.
        details = W.Accordion([self.counts, self.cost] if self.model.has_cost else [self.counts],
                              selected_index=None)
        details.set_title(0, "counts of this thread's accesses")
        cost = self.model.result.cost
        if cost is not None:
            details.set_title(1, f"cost model ({cost.gpu.name}; a model, not a measurement)")
        details.add_class("mp-details")
        self.details = details
        bottom = [W.HBox([self.check_button, self.verdict])] if with_check else []
        # Which kernel this is, first: a name bound to one problem after another (a learner's
        # `problem`) makes an earlier cell's `explore()` run again open another puzzle, and the
        # learner must see that.
        heading = (f"<div class='mp-title'>explorer of <b>{html.escape(title)}</b></div>" if title else "")
        root = W.VBox([W.HTML(STYLE_HTML + KEYBOARD_GUARD_HTML + heading), controls,
                       findings, main, details, *bottom])
        root.add_class(ROOT_CLASS)
        return root

    # ------------------------------------------------------------------ state
    @property
    def lane(self) -> int:
        return self.model.lane(self.group.value, self.thread.value)

    @property
    def selected_phase(self) -> int | None:
        return None if self.phase.value == -1 else self.phase.value

    def _on_group(self, _change) -> None:
        n = self.model.threads_in_group(self.group.value)
        self.thread.max = max(n - 1, 0)
        self.picker.resize(n)
        self._refresh_unless_jumping()

    def _on_thread(self, _change) -> None:
        self.picker.select(self.thread.value)
        self._refresh_unless_jumping()

    def _on_pick(self, thread: int) -> None:
        """A click on a thread's button: the slider follows (and redraws)."""
        self.thread.value = min(max(thread, 0), self.thread.max)

    def _on_step_slider(self, change) -> None:
        if change["new"] - 1 != self.step_index:
            self.step_index = change["new"] - 1
            self._stepped()

    def _refresh_unless_jumping(self) -> None:
        if not self._jumping:
            self.refresh()

    # --------------------------------------------------------------- findings
    def _finding_button(self, number: int, label: str) -> W.Button:
        button = W.Button(description=label, tooltip=label, layout=W.Layout(width="auto", max_width="100%"))
        button.add_class("mp-finding")
        button.on_click(lambda _: self.jump_to(number))
        return button

    def jump_to(self, number: int) -> None:
        """Show finding ``number``: its thread, its barrier phase, and the step of the
        step-through where it happened (the model says which: one call, ``ExplorerModel.jump``)."""
        target = self.model.jump(number)
        self._jumping = True
        try:
            self.group.value = target.group
            self.thread.max = max(self.model.threads_in_group(target.group) - 1, 0)
            self.thread.value = target.thread
            self.phase.value = -1 if target.phase is None else target.phase
            if target.step is not None:
                self.step_index = target.step
                self.diagram_follows_step = True
        finally:
            self._jumping = False
        site = next(s for s in self.model.findings() if s.number == number)
        self.finding_detail.value = (f"<div class='mp-finding-text' style='color:{FINDING_RED};white-space:pre-wrap'>"
                                     f"{html.escape(str(site.finding.kind))}: {html.escape(site.finding.message)}</div>")
        self.refresh()

    # ------------------------------------------------------------ cell clicks
    def _on_cell_pick(self, change) -> None:
        picked = parse_cell_pick(change["new"])
        if picked is None:
            return
        if picked.space == PickedSpace.THREAD and picked.group is not None:  # a thread's swatch: that thread
            self.cell_info.value = ""
            self._jumping = True
            try:
                self.group.value = picked.group
                self.thread.max = max(self.model.threads_in_group(picked.group) - 1, 0)
                self.thread.value = min(picked.index, self.thread.max)
            finally:
                self._jumping = False
            self.refresh()
        else:
            self.pick_cell(picked.buffer, picked.index, picked.group)

    def pick_cell(self, buffer: str, index: int, group: int | None = None) -> list[int]:
        """A click on element ``index`` of ``buffer`` in the diagram (threadgroup memory: the copy
        of threadgroup ``group``): select a thread that touched it, in the phase shown and, once
        the diagram follows the step, before that step. Threads of the threadgroup shown come
        first; a click on an element the shown thread touched goes on to the next thread that
        did, so that clicking again walks through all of them. Returns the touching lanes."""
        m = self.model
        step = self.step_index if self.diagram_follows_step and m.n_steps else None
        touching = m.threads_touching(buffer, index, group=group, phase=self.selected_phase, step=step)
        shown_group = self.group.value
        lane_group = m.result.lanes.group
        ordered = sorted(touching, key=lambda lane: (int(lane_group[lane]) != shown_group, lane))
        cell = f"{buffer}[{index}]"
        if not ordered:
            when = "" if self.selected_phase is None else f" in phase {self.selected_phase}"
            when += "" if step is None else f" before step {step + 1}"
            self.cell_info.value = f"<span class='mp-cell-text'>no thread touched {html.escape(cell)}{when}</span>"
            return []
        current = self.lane
        chosen = ordered[(ordered.index(current) + 1) % len(ordered)] if current in ordered else ordered[0]
        chosen_group = int(lane_group[chosen])
        self._jumping = True
        try:
            self.group.value = chosen_group
            self.thread.max = max(m.threads_in_group(chosen_group) - 1, 0)
            self.thread.value = m.thread_index(chosen)[1]
        finally:
            self._jumping = False
        # The thread shown is in .mp-who; this line says who else touched the element, if anyone.
        text = f"{cell}: touched by {len(ordered)} thread{'s' if len(ordered) != 1 else ''}"
        if len(ordered) > 1:
            names = ", ".join(m.label(lane) for lane in ordered[:MAX_TOUCHING_LISTED])
            more = f" and {len(ordered) - MAX_TOUCHING_LISTED} more" if len(ordered) > MAX_TOUCHING_LISTED else ""
            text += f" ({names}{more}); click it again for the next"
        self.cell_info.value = f"<span class='mp-cell-text'>{html.escape(text)}</span>"
        self.refresh()
        return ordered

    def move(self, delta: int) -> None:
        self._direction = -1 if delta < 0 else 1
        self.step_index = min(max(self.step_index + delta, 0), max(self.model.n_steps - 1, 0))
        self._stepped()

    def _stepped(self) -> None:
        """After a step: the listing and variables, then the diagram as the run stood then."""
        self.diagram_follows_step = True
        self.refresh_steps()
        self._send_diagram(self.lane)
        self._draw_ahead(self.lane)

    # ---------------------------------------------------------------- drawing
    def refresh(self) -> None:
        lane = self.lane
        self.who.value = f"<span>{html.escape(self.model.label(lane))}</span>"
        self.accesses.value = self._accesses_html(lane)
        self.counts.value = self._counts_html(lane)
        self.cost.value = self._cost_html(lane)
        self.refresh_steps()
        # Last: the diagram is the slowest to draw and the largest message (hundreds of kilobytes
        # for a 1,024-thread threadgroup); the texts above must not wait for it, or show the
        # thread before while it travels.
        self._send_diagram(lane)

    def _send_diagram(self, lane: int) -> None:
        """The diagram of one thread's accesses to the page, with what changed since the one
        before and whose diagram it is (``data-shows``, which the page writes on the canvas when it
        has drawn it: a reader of the page, a browser test, can tell it from the one before)."""
        step = self.step_index if self.diagram_follows_step and self.model.n_steps else None
        parts = self._diagram_of(lane, self.selected_phase, step)
        phase = "all phases" if self.selected_phase is None else f"phase {self.selected_phase}"
        when = "" if step is None else f", at step {step + 1}"
        ahead = self._patch_ahead
        if ahead is not None and ahead[0] == self._diagram_version and ahead[1] is self._diagram_parts \
                and ahead[2] is parts:
            patch = ahead[3]
        else:
            patch = diagram_patch(self._diagram_parts, parts, base=self._diagram_version)
        self._patch_ahead = None
        layer = self._layer_ahead
        self._layer_ahead = None
        laid_out = layer[0] if layer is not None and layer[1] is parts else None
        if laid_out is None and self._finding_layer is not None and self._finding_layer[1] is parts:
            # A finding's diagram, laid out ahead: the page shows that layer (it has no layer left
            # in the finding's slot after this; a page without it applies the patch).
            laid_out = self._finding_layer[0]
            self._finding_layer = None
        self._diagram_version += 1
        self._diagram_parts = parts
        self._diagram_shows = f"{self.model.label(lane)}, {phase}{when}"
        self.diagram_svg = "".join(parts)
        self.diagram.value = diagram_message_html(parts, self._diagram_version, self._diagram_shows, patch,
                                                  ahead=laid_out)
        self._draw_findings_ahead()

    def _draw_ahead(self, lane: int) -> None:
        """After a step (and when the explorer opens), while the learner looks at it, draw the
        diagram the next step would show (a step on, the way the last step went) and the patch to
        it from the one shown, so that the click finds both ready. In the kernel's event loop,
        between messages, and only if nothing was shown since; without an event loop (a script, a
        test) nothing is drawn ahead. Not after a thread change: its next click is as often
        another thread."""
        if not self.model.n_steps:
            return
        phase, after = self.selected_phase, min(max(self.step_index + self._direction, 0), self.model.n_steps - 1)
        if (lane, phase, after) in self._drawn:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        shown = self._diagram_version

        def draw() -> None:
            self.drawing_ahead = None
            if self._diagram_version != shown:  # another click came first: it drew what it needed
                return
            try:
                shown_parts = self._diagram_parts
                parts = self._diagram_of(lane, phase, after)
                patch = diagram_patch(shown_parts, parts, base=shown)
                self._patch_ahead = (shown, shown_parts, parts, patch)
                changes = changed_elements(patch)
                if changes is None or changes >= AHEAD_LAYER_MIN_CHANGES:
                    # Most of the diagram changes: the page lays it out now, hidden (page.py).
                    self._layers_sent += 1
                    self._layer_ahead = (self._layers_sent, parts)
                    self.diagram_ahead.value = diagram_ahead_html(parts, self._layers_sent, base=shown)
            except Exception:  # drawn ahead for speed only: the click itself draws it, or says why not
                pass

        self.drawing_ahead = loop.call_later(DRAW_AHEAD_DELAY_S, draw)

    def _finding_view(self, number: int) -> tuple[int, int | None, int | None]:
        """The diagram a click on finding ``number`` shows (``jump_to``): its thread's lane, its
        phase and its step (a finding of no step keeps the step shown)."""
        target = self.model.jump(number)
        step = target.step if target.step is not None else self.step_index if self.diagram_follows_step else None
        return (self.model.lane(target.group, target.thread), target.phase,
                step if self.model.n_steps else None)

    def _next_finding_work(self) -> Callable[[], None] | None:
        """What is left to do ahead for the findings, first things first: the first listed
        finding's diagram, drawn and sent for the page's finding layer in one turn (the sooner the
        explorer is done after opening, the less a first click finds it busy); then the next
        listed findings' diagrams."""
        numbers = [site.number for site in self.model.findings()[:min(FINDINGS_DRAWN_AHEAD, MAX_FINDINGS_LISTED)]]
        for number in numbers:
            view = self._finding_view(number)
            kept = self._findings_drawn.get(number)
            if kept is None or kept[0] != view:
                return lambda: self._keep_finding_diagram(number, view)
            if number == numbers[0] and self._finding_layer_due(kept[1]):
                return lambda: self._send_finding_layer(kept[1])
        return None

    def _keep_finding_diagram(self, number: int, view: tuple[int, int | None, int | None]) -> None:
        parts = self._diagram_of(*view)
        self._findings_drawn[number] = (view, parts)
        if number == self.model.findings()[0].number and self._finding_layer_due(parts):
            self._send_finding_layer(parts)

    def _finding_layer_due(self, parts: list[str]) -> bool:
        """Whether the first finding's diagram ``parts`` is to be sent for the page's finding layer:
        not while it is shown or in the layer already, nor when it is small enough to draw at the
        click."""
        return (parts is not self._diagram_parts and len(parts) - 2 >= AHEAD_LAYER_MIN_CHANGES
                and (self._finding_layer is None or self._finding_layer[1] is not parts))

    def _send_finding_layer(self, parts: list[str]) -> None:
        self._layers_sent += 1
        self._finding_layer = (self._layers_sent, parts)
        self.diagram_ahead_finding.value = diagram_ahead_html(parts, self._layers_sent, base=None,
                                                              slot=AheadSlot.FINDING)

    def _draw_findings_ahead(self) -> None:
        """Once the explorer is idle (the same diagram shown for ``FINDINGS_AHEAD_DELAY_S``), in
        the kernel's event loop, one piece of the findings' work at a time (``_next_finding_work``),
        so that a click waits for one drawing at most; a click meanwhile puts it off until the
        explorer is idle again. Without an event loop nothing is drawn ahead."""
        if self.drawing_findings_ahead is not None or self._next_finding_work() is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        shown = self._diagram_version

        def draw() -> None:
            self.drawing_findings_ahead = None
            if self._diagram_version == shown:
                work = self._next_finding_work()
                try:
                    if work is not None:
                        work()
                except Exception:  # drawn ahead for speed only: the click draws it, or says why not
                    return  # and nothing more is tried ahead (it would fail again)
            self._draw_findings_ahead()

        self.drawing_findings_ahead = loop.call_later(FINDINGS_AHEAD_DELAY_S, draw)

    def _diagram_of(self, lane: int, phase: int | None, step: int | None) -> list[str]:
        """The separated SVG of one thread's diagram, in one phase or all, at a step or for the
        whole run: drawn, or remembered from an earlier click."""
        key = (lane, phase, step)
        parts = self._drawn.get(key)
        if parts is None:  # a finding's drawn ahead, kept: the same parts (its layer is named by them)
            parts = next((kept for view, kept in self._findings_drawn.values() if view == key), None)
        if parts is None:
            filtered = self.model.filtered_result(lane, phase, step=step)
            group = int(self.model.result.lanes.group[lane])
            diagram = draw_run(filtered, title=self.title, max_groups=self.model.n_groups, only_group=group,
                               selected_lane=lane, clickable=True, steady_gaps=True)
            parts = fitting_svg(to_svg(diagram, separated=True)).split(PART_SEPARATOR)
            if len(self._drawn) >= DIAGRAMS_REMEMBERED:
                self._drawn.popitem(last=False)
        self._drawn[key] = parts
        self._drawn.move_to_end(key)
        return parts

    def _on_diagram_want(self, change) -> None:
        """A canvas asked for the whole diagram (page.py): the diagram shown, whole, as the next
        version, which canvases that already show it need not redraw."""
        if not parse_diagram_want(change["new"]) or not self._diagram_parts:
            return
        same = self._diagram_version
        self._diagram_version += 1
        self.diagram.value = diagram_message_html(self._diagram_parts, self._diagram_version, self._diagram_shows,
                                                  None, same=same)

    def _cost_html(self, lane: int) -> str:
        """Per line, the cost model's figures; and what this thread's SIMD-group paid at each access."""
        m = self.model
        if not m.has_cost:
            return ""

        def seg(v) -> str:
            return "" if v is None else f"{v[0]:.3g} (max {v[1]})"

        lines = "".join(
            f"<tr><td>{r['line']}</td><td><code>{html.escape(r['code'])}</code></td>"
            f"<td>{'' if r['simd_efficiency'] is None else format(r['simd_efficiency'], '.0%')}</td>"
            f"<td>{seg(r['load_segments'])}</td><td>{seg(r['store_segments'])}</td>"
            f"<td>{'' if r['bank_ways'] is None else str(r['bank_ways']) + '-way'}</td>"
            f"<td>{r['barriers'] or ''}</td></tr>" for r in m.cost_lines())
        mine = "".join(f"<li>line {r['line']}: {r['kind']} {html.escape(r['buffer'])}: {r['value']} {r['what']} "
                       f"({r['active_lanes']} lanes active)</li>" for r in m.simd_group_costs(lane))
        return ("<div class='mp-cost-scroll'><table class='mp-cost-table'><tr><th>line</th><th>code</th><th>SIMD eff.</th>"
                "<th>segments / load</th><th>segments / store</th><th>bank conflict</th><th>barriers</th></tr>"
                f"{lines}</table><p>This thread's SIMD-group (worst execution of each access):</p>"
                f"<ul class='mp-simd-costs'>{mine}</ul></div>")

    def _counts_html(self, lane: int) -> str:
        mine = self.model.counts(lane)
        top = self.model.counts_max()
        rows = "".join(f"<tr><td>{c.label}</td><td class='mp-mine'>{mine[c]}</td><td>{top[c]}</td></tr>"
                       for c in Counter)
        return f"<table class='mp-count-table'><tr><th></th><th>this thread</th><th>max</th></tr>{rows}</table>"

    def _accesses_html(self, lane: int) -> str:
        """What the thread read and wrote, in order; for a thread that touched nothing, why."""
        accesses = self.model.accesses(lane, self.selected_phase)
        if not accesses:
            return f"<div class='mp-idle'>{self._idle_reason(lane)}</div>"
        listing = "".join(f"<li>line {a.line}: {a.kind} {html.escape(a.buffer)}[{a.index}] (phase {a.phase})</li>"
                          for a in accesses[:MAX_ACCESSES_LISTED])
        more = (f"<li>... {len(accesses) - MAX_ACCESSES_LISTED} more</li>"
                if len(accesses) > MAX_ACCESSES_LISTED else "")
        return f"<ul class='mp-accesses'>{listing}{more}</ul>"

    def _idle_reason(self, lane: int) -> str:
        """Why a thread touched no memory (in the phase shown): the spare thread of a guard is
        switched off at the guard's condition, which is the statement before it went inactive."""
        if self.selected_phase is not None and self.model.accesses(lane):
            return f"this thread did nothing in phase {self.selected_phase}"
        m = self.model
        sat_out = m.skipped(lane)
        if sat_out is not None and sat_out.guard_line is not None:
            line = sat_out.guard_line
            source = m.source_lines()
            code = source[line - 1].strip() if 0 < line <= len(source) else ""
            return (f"this thread did nothing: the condition on line {line} (<code>{html.escape(code)}</code>) "
                    "is false for it, so it skipped the statements that touch memory")
        return "this thread did nothing: it read and wrote no device or threadgroup memory"

    def refresh_steps(self) -> None:
        m = self.model
        if not m.n_steps:
            self.step_label.value = "no step-through record"
            return
        info = m.step(self.step_index, self.lane)
        self.step_slider.value = self.step_index + 1
        self.back.disabled = self.step_index == 0
        self.forward.disabled = self.step_index >= m.n_steps - 1
        # A record may end with a step after the last statement (no line): the state the kernel left.
        where = "after the last line" if info["line"] is None else f"line {info['line']}"
        self.step_label.value = f"<span class='mp-step-text'>step {self.step_index + 1} / {m.n_steps}: {where}</span>"
        lines = []
        flagged = m.finding_lines()
        # Lines other threads run and this one does not are greyed out (and said so on hover);
        # at a step where this thread is inactive, the current line is marked grey, not yellow.
        not_run = m.statement_lines() - m.lines_run(self.lane)
        for no, text in enumerate(m.source_lines(), start=1):
            current, skipped = no == info["line"], no in not_run
            cls = " ".join(c for c, on in (("mp-current", current), ("mp-not-run", skipped)) if on)
            style = ("background:#ffe08a;" if current and info["active"] else
                     "background:#e6e6e6;" if current else "") + ("color:#9a9a9a;" if skipped else "")
            title = (f" title='{html.escape(m.label(self.lane), quote=True)} does not run this line'"
                     if skipped else "")
            flag = (f"<span class='mp-finding-line' style='color:{FINDING_RED}' title='a finding happened on this "
                    "line'>\u25cf</span>" if no in flagged else " ")
            lines.append(f"<div class='mp-line {cls}' data-line='{no}' style='{style}'{title}>{flag}<span style='color:#888'>{no:3d}</span> "
                         f"{html.escape(text)}</div>")
        self.source.value = "<pre>" + "".join(lines) + "</pre>" + SHOW_CURRENT_LINE_HTML
        heading = f"<b class='mp-var-heading'>variables of {html.escape(m.label(self.lane))}:</b>"
        if not info["active"]:
            self.variables.value = heading + "<span class='mp-inactive'><i>this thread is inactive at this step</i></span>"
        elif not info["variables"]:
            self.variables.value = heading + "<span><i>no variables yet</i></span>"
        else:
            rows = "".join(f"<tr><td>{html.escape(k)}</td><td class='mp-value'>{html.escape(v)}</td></tr>"
                           for k, v in info["variables"].items())
            self.variables.value = heading + f"<table class='mp-var-table'>{rows}</table>"

    def run_check(self) -> None:
        if self.check is None:  # no check button is shown without a check to run
            return
        self.check_button.disabled = True
        self.verdict.value = "<i>checking...</i>"
        try:
            result = self.check()
        finally:
            self.check_button.disabled = False
        color = "#1a7f37" if result.passed else "#b42318"
        # Its paragraphs wrap to the explorer's width, once (wording.report_html).
        self.verdict.value = (f"<div class='mp-verdict-text' style='color:{color}'>"
                              f"{report_html(result.report(width=None))}</div>")

    def _ipython_display_(self) -> None:
        display(self.widget)


def explore_run(result: RunResult, title: str = "", check: Callable[[], CheckResult] | None = None) -> Explorer:
    """Explore a traced, stepped run (``simulate(..., trace=True, steps=True)``)."""
    return Explorer(result, title, check)


def explore_kernel(kernel: SimulatedKernel | MetalKernel | ShaderKernelFunction) -> Explorer:
    """Explore a kernel's last call (run again with a trace and a step-through record); a whole
    shader's kernel (``compile_shader``) replays without writing into the caller's arrays."""
    simulated = kernel.kernel if isinstance(kernel, MetalKernel) else kernel
    return Explorer(simulated.replay(sanitize="warn", trace=True, steps=True), title=simulated.name)
