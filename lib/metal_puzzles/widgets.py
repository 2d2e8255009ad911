"""The kernel explorer (ipywidgets): pick a thread and a barrier phase and see what it read and
wrote; step through the kernel a statement at a time watching the thread's variables; see the
sanitizer's findings listed, and click one to go to its thread, phase and line; check the
puzzle in place. Standard ipywidgets only, so it works in JupyterLab, Notebook 7 and VS Code."""

from __future__ import annotations

import html
from collections.abc import Callable

import ipywidgets as W
from IPython.display import display

from .checking import CheckResult
from .draw import draw_run, to_svg
from .explorer_model import ExplorerModel
from .kernel import MetalKernel, SimulatedKernel
from .marks import FINDING_RED
from .msl import RunResult
from .shader_library import ShaderKernelFunction

#: Findings the explorer lists as buttons (a runaway kernel can have a couple of hundred).
MAX_FINDINGS_LISTED = 20

_COUNTER_NAMES = (("global_reads", "global reads"), ("global_writes", "global writes"),
                  ("shared_reads", "shared reads"), ("shared_writes", "shared writes"), ("atomics", "atomics"))


class Explorer:
    """Build with a traced, stepped run (``MetalProblem.explore()`` does this for you) and,
    for a Check button, a function that checks the kernel and returns its verdict."""

    def __init__(self, result: RunResult, title: str = "", check: Callable[[], CheckResult] | None = None) -> None:
        self.model = ExplorerModel(result)
        self.title = title
        self.check = check
        m = self.model
        self.group = W.IntSlider(0, 0, max(m.n_groups - 1, 0), description="threadgroup",
                                 style={"description_width": "initial"}, continuous_update=False)
        self.thread = W.IntSlider(0, 0, max(m.threads_in_group(0) - 1, 0), description="thread",
                                  continuous_update=False)
        self.phase = W.Dropdown(options=[("all phases", -1)] + [(f"phase {p}", p) for p in m.phases],
                                value=-1, description="phase")
        self.group.add_class("mp-group")
        self.thread.add_class("mp-thread")
        self.phase.add_class("mp-phase")
        self.who = W.HTML(_tag="div")
        self.who.add_class("mp-who")
        self.diagram = W.HTML()
        self.diagram.add_class("mp-diagram")
        self.counts = W.HTML()
        self.counts.add_class("mp-counts")
        self.counts.layout.min_width = "280px"
        self.cost = W.HTML()  # the cost model's figures, when the run carries a profile
        self.cost.add_class("mp-cost")
        self.step_index = 0
        self.back = W.Button(description="\u25c0 step back")
        self.forward = W.Button(description="step \u25b6")
        self.back.add_class("mp-back")
        self.forward.add_class("mp-forward")
        self.step_label = W.HTML()
        self.step_label.add_class("mp-step-label")
        self.source = W.HTML()
        self.source.add_class("mp-source")
        self.variables = W.HTML()
        self.variables.add_class("mp-variables")
        self.check_button = W.Button(description="Check", button_style="primary")
        self.check_button.add_class("mp-check")
        self.verdict = W.HTML()
        self.verdict.add_class("mp-verdict")
        self._jumping = False  # a jump sets several controls; draw once, at the end
        shown = m.findings()[:MAX_FINDINGS_LISTED]
        self.finding_buttons = [self._finding_button(site.number, site.label) for site in shown]
        hidden = len(m.findings()) - len(shown)
        self.finding_detail = W.HTML()
        self.finding_detail.add_class("mp-finding-detail")
        findings = W.VBox([W.HTML(f"<b style='color:{FINDING_RED}'>Findings of the sanitizer</b> "
                                  "(click one to go to its thread, phase and line)"),
                           *self.finding_buttons,
                           *([W.HTML(f"<i>... and {hidden} more (check() lists them)</i>")] if hidden else []),
                           self.finding_detail]) if self.finding_buttons else W.VBox([])
        findings.add_class("mp-findings")
        self.group.observe(self._on_group, names="value")
        self.thread.observe(lambda _: self._refresh_unless_jumping(), names="value")
        self.phase.observe(lambda _: self._refresh_unless_jumping(), names="value")
        self.back.on_click(lambda _: self.move(-1))
        self.forward.on_click(lambda _: self.move(1))
        self.check_button.on_click(lambda _: self.run_check())
        controls = W.HBox([self.group, self.thread, self.phase])
        stepper = W.VBox([W.HBox([self.back, self.forward, self.step_label]),
                          W.HBox([self.source, self.variables])])
        bottom = [self.check_button, self.verdict] if check is not None else []
        self.widget = W.VBox([W.HTML(f"<b>{html.escape(title)}</b>"), controls, findings, self.who,
                              W.HBox([self.diagram, self.counts], layout=W.Layout(flex_flow="row wrap")),
                              self.cost, stepper, *bottom])
        self.widget.add_class("mp-explorer")
        self.refresh()

    # ------------------------------------------------------------------ state
    @property
    def lane(self) -> int:
        return self.model.lane(self.group.value, self.thread.value)

    @property
    def selected_phase(self) -> int | None:
        return None if self.phase.value == -1 else self.phase.value

    def _on_group(self, _change) -> None:
        self.thread.max = max(self.model.threads_in_group(self.group.value) - 1, 0)
        self._refresh_unless_jumping()

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
        """Show finding ``number``: its thread, its barrier phase and its line in the step-through."""
        target = self.model.jump(number)
        self._jumping = True
        try:
            self.group.value = target.group
            self.thread.max = max(self.model.threads_in_group(target.group) - 1, 0)
            self.thread.value = target.thread
            self.phase.value = -1 if target.phase is None else target.phase
            if target.step is not None:
                self.step_index = target.step
        finally:
            self._jumping = False
        site = next(s for s in self.model.findings() if s.number == number)
        self.finding_detail.value = (f"<div class='mp-finding-text' style='color:{FINDING_RED};white-space:pre-wrap'>"
                                     f"{html.escape(str(site.finding.kind))}: {html.escape(site.finding.message)}</div>")
        self.refresh()

    def move(self, delta: int) -> None:
        self.step_index = min(max(self.step_index + delta, 0), max(self.model.n_steps - 1, 0))
        self.refresh_steps()

    # ---------------------------------------------------------------- drawing
    def refresh(self) -> None:
        lane = self.lane
        self.who.value = f"<span>{html.escape(self.model.describe(lane))}</span>"
        self.diagram.value = self._diagram_svg(lane)
        self.counts.value = self._counts_html(lane)
        self.cost.value = self._cost_html(lane)
        self.refresh_steps()

    def _diagram_svg(self, lane: int) -> str:
        filtered = self.model.filtered_result(lane, self.selected_phase)
        group = int(self.model.result.lanes.group[lane])
        return to_svg(draw_run(filtered, title=self.title, max_groups=self.model.n_groups, only_group=group))

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
        gpu = html.escape(m.result.cost.gpu.name)
        return (f"<details class='mp-cost-details' open><summary>Cost model ({gpu}; a model, not a measurement)"
                "</summary><table class='mp-cost-table'><tr><th>line</th><th>code</th><th>SIMD eff.</th>"
                "<th>segments / load</th><th>segments / store</th><th>bank conflict</th><th>barriers</th></tr>"
                f"{lines}</table><p>This thread's SIMD-group (worst execution of each access):</p>"
                f"<ul class='mp-simd-costs'>{mine}</ul></details>")

    def _counts_html(self, lane: int) -> str:
        mine = self.model.counts(lane)
        top = self.model.counts_max()
        rows = "".join(f"<tr><td>{label}</td><td class='mp-mine'>{mine[k]}</td><td>{top[k]}</td></tr>"
                       for k, label in _COUNTER_NAMES)
        accesses = self.model.accesses(lane, self.selected_phase)
        listing = "".join(f"<li>line {a.line}: {a.kind} {html.escape(a.buffer)}[{a.index}] (phase {a.phase})</li>"
                          for a in accesses[:40])
        more = f"<li>... {len(accesses) - 40} more</li>" if len(accesses) > 40 else ""
        return (f"<table class='mp-count-table'><tr><th></th><th>this thread</th><th>max</th></tr>{rows}</table>"
                f"<ul class='mp-accesses'>{listing}{more}</ul>")

    def refresh_steps(self) -> None:
        m = self.model
        if not m.n_steps:
            self.step_label.value = "no step-through record"
            return
        info = m.step(self.step_index, self.lane)
        self.step_label.value = (f"<span class='mp-step-text'>step {self.step_index + 1} / {m.n_steps}: "
                                 f"line {info['line']}</span>")
        lines = []
        flagged = m.finding_lines()
        for no, text in enumerate(m.source_lines(), start=1):
            cls = "mp-current" if no == info["line"] else ""
            style = "background:#ffe08a;" if cls else ""
            flag = (f"<span class='mp-finding-line' style='color:{FINDING_RED}' title='a finding happened on this "
                    "line'>\u25cf</span>" if no in flagged else " ")
            lines.append(f"<div class='mp-line {cls}' style='{style}'>{flag}<span style='color:#888'>{no:3d}</span> "
                         f"{html.escape(text)}</div>")
        self.source.value = "<pre style='margin:0'>" + "".join(lines) + "</pre>"
        heading = f"<div><b>variables of {html.escape(m.describe(self.lane))}</b></div>"
        if not info["active"]:
            self.variables.value = heading + "<div class='mp-inactive'><i>this thread is inactive at this step</i></div>"
        elif not info["variables"]:
            self.variables.value = heading + "<div><i>no variables yet</i></div>"
        else:
            rows = "".join(f"<tr><td>{html.escape(k)}</td><td class='mp-value'>{html.escape(v)}</td></tr>"
                           for k, v in info["variables"].items())
            self.variables.value = heading + f"<table class='mp-var-table'>{rows}</table>"

    def run_check(self) -> None:
        self.check_button.disabled = True
        self.verdict.value = "<i>checking...</i>"
        try:
            result = self.check()
        finally:
            self.check_button.disabled = False
        color = "#1a7f37" if result.passed else "#b42318"
        self.verdict.value = (f"<pre class='mp-verdict-text' style='color:{color}'>"
                              f"{html.escape(result.report())}</pre>")

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
