"""What the kernel explorer adds to the page besides standard ipywidgets: its style sheet, a
guard that keeps the notebook's keyboard shortcuts out of it, and the way a click on a cell of
the diagram reaches Python.

Why a guard: JupyterLab and Notebook 7 run their shortcuts through Lumino's command registry,
which looks at every keydown on the page. In command mode ArrowLeft/ArrowRight (heading
navigation), Home/End and the like are bound for any focused element that is not editable, a
slider handle included, so the notebook took the keys from the explorer's sliders. Lumino fires
no shortcut for a keydown whose target carries the attribute ``data-lm-suppress-shortcuts``: the
guard puts it on whatever gets the focus inside the explorer. ipywidgets cannot set attributes
and does not run ``<script>`` tags in an HTML widget, but it does insert the HTML as it is, so an
image that fails to load (``src="data:,"``) runs its ``onerror`` handler in the page. Without a
Jupyter front end (VS Code, a static page) the attribute is simply unused."""

from __future__ import annotations

from dataclasses import dataclass

from metal_puzzles.msl.lang.pycompat import StrEnum

#: Class of the explorer's root element: the guard and the style sheet find the explorer by it.
ROOT_CLASS = "mp-explorer"

#: Class of the hidden text box a click on a diagram's cell writes into (see ``CELL_PICK_FORMAT``).
CELL_PICK_CLASS = "mp-cell-pick"

#: What the page writes into the hidden box on a click on a cell: the array's name ('' for a
#: thread's swatch), its address space (``PickedSpace``), the threadgroup of a threadgroup array
#: or swatch ('' for device memory), the element's (or thread's) index and a click counter, so that a second click on the same cell is still a change of value that syncs.
#: The cells' attributes come from ``svg_text.CellTargets``.
CELL_PICK_FORMAT = "buffer|space|group|index|click"

#: The attribute Lumino honours: no shortcut fires for a keydown from inside such an element.
SUPPRESS_SHORTCUTS = "data-lm-suppress-shortcuts"

# Lumino walks from the focused element up and stops at the first element with the attribute,
# but it tests the focused element against the bindings' selectors before it looks at the
# attribute of its parents: a slider handle matches ".jp-Notebook.jp-mod-commandMode :focus" by
# itself. So the attribute must be on the focused element itself: the guard marks every element
# inside the explorer as it receives focus (focusin comes before the keydown). The widget may be
# rendered before its parent box attaches it to the explorer, so the handler looks for the root
# again, ten times a second for five seconds, until the root is there.
_GUARD_SCRIPT = (
    "(function mark(img, tries) {"
    f"  var root = img.closest('.{ROOT_CLASS}');"
    "  if (!root) { if (tries > 0) { setTimeout(function () { mark(img, tries - 1); }, 100); } return; }"
    "  if (root.dataset.mpKeyboardGuard) { return; }"
    "  root.dataset.mpKeyboardGuard = 'on';"
    f"  root.setAttribute('{SUPPRESS_SHORTCUTS}', 'true');"
    "  root.addEventListener('focusin', function (event) {"
    f"    event.target.setAttribute('{SUPPRESS_SHORTCUTS}', 'true');"
    "  });"
    # A click on a cell of the diagram: its array and index into the hidden text box, then an
    # input event, on which ipywidgets sends the box's value to the kernel.
    "  root.addEventListener('click', function (event) {"
    "    var cell = event.target.closest ? event.target.closest('.mp-cells [data-index]') : null;"
    f"    var box = root.querySelector('.{CELL_PICK_CLASS} input');"
    "    if (!cell || !box) { return; }"
    "    var cells = cell.parentNode;"
    "    root.dataset.mpClicks = String(Number(root.dataset.mpClicks || 0) + 1);"
    "    box.value = [cells.getAttribute('data-buffer'), cells.getAttribute('data-space'),"
    "                 cells.getAttribute('data-group') || '', cell.getAttribute('data-index'),"
    "                 root.dataset.mpClicks].join('|');"
    "    box.dispatchEvent(new Event('input', { bubbles: true }));"
    "  });"
    "})(this, 50)"
)

class PickedSpace(StrEnum):
    """What a click in the diagram landed on: an element of device or threadgroup memory, or a
    thread's swatch (its index in the threadgroup stands where an element's index would)."""

    DEVICE = "device"
    THREADGROUP = "threadgroup"
    THREAD = "thread"


@dataclass(frozen=True)
class CellPick:
    """A click in the diagram, as the page reported it."""

    space: PickedSpace
    buffer: str  # '' for a thread's swatch
    index: int  # the element's index, or the thread's index in its threadgroup
    group: int | None  # the threadgroup of threadgroup memory or of a swatch; None for device memory


def parse_cell_pick(value: str) -> CellPick | None:
    """What a click in the diagram wrote (``CELL_PICK_FORMAT``); None for the empty value the
    box starts with. Anything else is not from our page script, and says so."""
    if not value:
        return None
    parts = value.split("|")
    if len(parts) != 5 or parts[1] not in set(PickedSpace) or not parts[3].isdigit():
        raise ValueError(f"a cell click must read {CELL_PICK_FORMAT!r}, got {value!r}")
    buffer, space, group, index, _click = parts
    space = PickedSpace(space)
    if space != PickedSpace.DEVICE and not group.isdigit():
        raise ValueError(f"a click on threadgroup memory or a thread must name its threadgroup, got {value!r}")
    if (space == PickedSpace.THREAD) != (buffer == ""):
        raise ValueError(f"a click names an array exactly when it is not on a thread, got {value!r}")
    return CellPick(space, buffer, int(index), None if space == PickedSpace.DEVICE else int(group))


# The code listing is at most half a screen tall and scrolls; when a step or a finding moves the
# highlighted line out of its view, this brings the line back to the upper third of the listing.
# It scrolls the listing only, never the page, so a notebook whose explorers render at once does
# not jump about.
_SHOW_CURRENT_LINE_SCRIPT = (
    "var box = this.closest('.mp-source');"
    " var line = box && box.querySelector('.mp-current');"
    " if (line) { var l = line.getBoundingClientRect(), b = box.getBoundingClientRect();"
    "   if (l.top < b.top || l.bottom > b.bottom) { box.scrollTop += l.top - b.top - b.height / 3; } }"
)

SHOW_CURRENT_LINE_HTML = (
    f'<img class="mp-show-current-line" src="data:," alt="" style="display:none" '
    f'onerror="{_SHOW_CURRENT_LINE_SCRIPT}">'
)

KEYBOARD_GUARD_HTML = (
    f'<img class="mp-keyboard-guard" src="data:," alt="" style="display:none" onerror="{_GUARD_SCRIPT}">'
)

# Scoped to the explorer. Why each rule:
# - the two columns wrap below each other when the output area is narrow, rather than squeeze;
#   the left one is at most 560 px, so a long line of text there cannot push the diagram below;
# - the code listing and the diagram scroll sideways instead of wrapping mid-identifier or
#   shrinking (JupyterLab gives an SVG max-width: 100%, which shrank a wide diagram's text to 3 px);
# - the diagram's panel and the code listing are at most about half a screen tall, so the
#   step controls, the code and the diagram share one screen;
# - a thread's variables sit side by side (name, value; name, value): a line or two, not a column;
# - tables get real column alignment and visible headers;
# - an ipywidgets box is a flex box, whose children are as wide as their content unless given
#   min-width: 0: without it a wide table or listing pushes out of the explorer and is cut off.
STYLE_HTML = f"""<style>
.{ROOT_CLASS} .mp-main {{ display: flex; flex-flow: row wrap; gap: 12px; align-items: flex-start; }}
.{ROOT_CLASS} .mp-left {{ flex: 0 1 auto; min-width: 320px; max-width: min(100%, 560px); }}
.{ROOT_CLASS} .mp-right {{ flex: 1 1 340px; min-width: 320px; max-width: 100%; }}
.{ROOT_CLASS} .mp-source {{ overflow: auto; max-width: 100%; max-height: 45vh; }}
.{ROOT_CLASS} .mp-source pre {{ white-space: pre; margin: 0; font-size: 12px; line-height: 1.35; }}
.{ROOT_CLASS} .mp-line {{ white-space: pre; }}
.{ROOT_CLASS} .mp-diagram {{ overflow: auto; max-height: 58vh; max-width: 100%; border: 1px solid #ddd; }}
.{ROOT_CLASS} .mp-diagram svg {{ max-width: none !important; height: auto; display: block; }}
.{ROOT_CLASS} .mp-var-table, .{ROOT_CLASS} .mp-var-table tbody {{ display: flex; flex-flow: row wrap; }}
.{ROOT_CLASS} .mp-var-table tr {{ display: flex; margin-right: 14px; }}
.{ROOT_CLASS} .mp-var-table td.mp-value {{ font-family: var(--jp-code-font-family, monospace); }}
.{ROOT_CLASS} .mp-variables table, .{ROOT_CLASS} table.mp-cost-table, .{ROOT_CLASS} table.mp-count-table {{
  border-collapse: collapse; }}
.{ROOT_CLASS} .mp-variables td, .{ROOT_CLASS} .mp-cost-table td, .{ROOT_CLASS} .mp-cost-table th,
.{ROOT_CLASS} .mp-count-table td, .{ROOT_CLASS} .mp-count-table th {{
  padding: 1px 8px; text-align: left; border-bottom: 1px solid #eee; white-space: nowrap; }}
.{ROOT_CLASS} .mp-cost-table th, .{ROOT_CLASS} .mp-count-table th {{ font-weight: bold; background: #f4f4f4; }}
.{ROOT_CLASS} .mp-cost, .{ROOT_CLASS} .mp-counts, .{ROOT_CLASS} .mp-source,
.{ROOT_CLASS} .mp-diagram, .{ROOT_CLASS} .widget-html-content {{ min-width: 0; max-width: 100%; }}
.{ROOT_CLASS} .mp-cost-scroll {{ overflow-x: auto; max-width: 100%; }}
.{ROOT_CLASS} .mp-accesses {{ margin: 2px 0; padding-left: 18px; max-height: 9em; overflow-y: auto; }}
.{ROOT_CLASS} .mp-accesses li {{ white-space: nowrap; }}
.{ROOT_CLASS} .mp-picker .widget-toggle-button {{ padding: 0 2px; font-size: 11px; height: 22px; }}
.{ROOT_CLASS} .mp-picker .widget-toggle-buttons {{ margin: 1px 0; }}
.{ROOT_CLASS} .mp-finding-text {{ font-size: 12px; }}
.{ROOT_CLASS} .mp-idle {{ color: #8a5a00; white-space: normal; }}
</style>"""
