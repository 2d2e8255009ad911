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

import difflib
import html
import json
from dataclasses import dataclass

from metal_puzzles.compat import StrEnum
from metal_puzzles.diagrams.svg_text import PART_SEPARATOR

#: Class of the explorer's root element: the guard and the style sheet find the explorer by it.
ROOT_CLASS = "mp-explorer"

#: Class of the canvas's layer that is shown (its ``svg`` is the diagram the learner sees).
SHOWN_LAYER_CLASS = "mp-shown"

#: Class of the canvas's hidden layers (see the diagram's part below): a diagram drawn ahead, laid out, waiting for its click.
AHEAD_LAYER_CLASS = "mp-ahead"


class AheadSlot(StrEnum):
    """Which click a hidden layer is drawn ahead for (its ``data-slot``): the canvas holds at most
    one layer per slot. The next step's is drawn ahead of the version shown and goes when the
    canvas moves past it; a finding's is the finding's whole diagram whatever is shown, and stays
    until its click shows it or another finding's layer takes its slot."""

    NEXT_STEP = "step"
    FINDING = "finding"

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
    # Keys drive the explorer wherever in it the focus is (the root takes the focus of a click
    # on the diagram or on a text: tabindex -1). In the thread picker the arrows, Home and End
    # move along its row of buttons; elsewhere, outside text boxes, menus and sliders (which have
    # their own keys), ArrowRight and ArrowLeft step forward and back.
    "  root.tabIndex = -1;"
    "  root.addEventListener('keydown', function (event) {"
    "    var key = event.key, target = event.target;"
    "    if (['ArrowLeft', 'ArrowRight', 'Home', 'End'].indexOf(key) < 0) { return; }"
    "    var button = target.closest ? target.closest('.mp-picker button') : null;"
    "    if (button) {"
    "      var row = Array.prototype.slice.call(button.parentNode.querySelectorAll('button'));"
    "      var at = row.indexOf(button);"
    "      var to = key === 'Home' ? 0 : key === 'End' ? row.length - 1 : at + (key === 'ArrowRight' ? 1 : -1);"
    "      if (to >= 0 && to < row.length && to !== at) { row[to].click(); row[to].focus(); }"
    "      event.preventDefault(); event.stopPropagation(); return;"
    "    }"
    "    if (key !== 'ArrowLeft' && key !== 'ArrowRight') { return; }"
    "    if (target.closest('input, select, textarea, .noUi-target')) { return; }"
    "    var step = root.querySelector(key === 'ArrowRight' ? '.mp-forward' : '.mp-back');"
    "    if (step && !step.disabled) { step.click(); }"
    "    event.preventDefault(); event.stopPropagation();"
    "  });"
    # A focused control that goes away or is disabled (the step button at the last step) would
    # leave the focus to the page, and the keys to the notebook: the root takes it back.
    "  root.addEventListener('focusout', function (event) {"
    "    var gone = event.target;"
    "    if (event.relatedTarget) { return; }"
    "    setTimeout(function () {"
    "      var active = document.activeElement;"
    "      if ((gone.disabled || !gone.isConnected) && (!active || active === document.body)) {"
    "        root.focus({ preventScroll: true });"
    "      }"
    "    }, 0);"
    "  });"
    # A click on a cell of the diagram: its array and index into the hidden text box, then an
    # input event, on which ipywidgets sends the box's value to the kernel.
    "  root.addEventListener('click', function (event) {"
    "    var cell = event.target.closest ? event.target.closest('.mp-cells [data-index]') : null;"
    # A transparent layer drawn ahead (under the one shown) is not what the learner clicked.
    f"    if (cell && cell.closest('.{AHEAD_LAYER_CLASS}')) {{ return; }}"
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

# ------------------------------------------------------------------ the diagram, redrawn in place
# A step redraws the diagram of a 1,024-thread threadgroup: thousands of SVG elements, of which a
# click changes a few. Replacing the whole SVG (an HTML widget's new value) made the browser parse,
# lay out and paint all of them again at every click; sending it whole (400-550 kB a click) made
# the kernel, the Jupyter server and the page encode, relay and decode it at every click, the
# slowest part of a click on a loaded machine. So the diagram is three widgets: a canvas
# (``DIAGRAM_CANVAS_HTML``, set once) that shows it; a hidden source whose value is one message,
# the elements that changed since the version before and where they go (``diagram_message_html``:
# the SVG's elements, separated by ``svg_text.PART_SEPARATOR``, inside a textarea, which the
# browser keeps as one string, parsing nothing); and a hidden box (``DIAGRAM_WANT_CLASS``) in which
# a canvas that does not hold the version a message starts from (a new view of the explorer, a
# message it missed) asks for the whole diagram, which the next message then is. The page script
# below applies a message to the canvas; when it is done it writes the message's ``data-shows``
# (whose diagram it is) on the canvas's view, which tests and the click benchmark wait for.
#
# A click that changes most of the diagram (the first step, from the whole run to the run at step
# 2: a thousand elements of a 1,024-thread threadgroup's diagram) left the page laying it out and
# painting it after the click. So a diagram drawn ahead whose patch changes that much is sent
# ahead, whole (``diagram_ahead_html``), and the page draws it in a hidden layer under the one
# shown, laying it out while the learner reads; the click's message names that layer
# (``data-ahead``) and the page swaps the layers, painting what it has laid out already. The
# message still carries its patch, which a canvas without the layer (a new view) applies instead.
# The first click on a sanitizer's finding changes most of the diagram too (its thread, its phase,
# its step: 1,113 elements of III.1's without its barrier), and the finding's diagram does not
# depend on what is shown: it is sent ahead once the explorer is idle, in a slot of its own
# (``AheadSlot``), kept while the learner steps and changes threads, and shown by the finding's click.
# The canvas's layers are ``div``s in one cell of a grid (``STYLE_HTML``): the one shown
# (``SHOWN_LAYER_CLASS``) and at most one hidden one (``AHEAD_LAYER_CLASS``) per slot.

#: The canvas's content: the page script draws into it.
DIAGRAM_CANVAS_HTML = "<div class='mp-diagram-view'></div>"

#: A diagram drawn ahead is sent ahead, for a hidden layer, when its patch from the diagram shown
#: replaces at least this many elements (III.1's first step: 1,115; its later steps: a few dozen).
AHEAD_LAYER_MIN_CHANGES = 300

#: Class of the hidden text box in which the page asks for the whole diagram (``DIAGRAM_WANT_FORMAT``).
DIAGRAM_WANT_CLASS = "mp-diagram-want"

#: What the page writes in that box: the word and a counter (a second request is still a change).
DIAGRAM_WANT_FORMAT = "whole|count"

_DIAGRAM_SCRIPT = (
    "(function draw(img, tries) {"
    "  if (!img.isConnected) { return; }"
    f"  var root = img.closest('.{ROOT_CLASS}');"
    "  var view = root ? root.querySelector('.mp-diagram .mp-diagram-view') : null;"
    "  if (!view) { if (tries > 0) { setTimeout(function () { draw(img, tries - 1); }, 100); } return; }"
    "  var version = Number(img.getAttribute('data-version'));"
    "  if (view.mpVersion !== undefined && view.mpVersion >= version) { return; }"
    f"  var pieces = img.previousElementSibling.value.split('\\u{ord(PART_SEPARATOR):04x}');"
    "  var patch = JSON.parse(img.getAttribute('data-patch') || 'null');"
    "  var same = img.getAttribute('data-same');"
    f"  var shown = view.querySelector(':scope > .{SHOWN_LAYER_CLASS}');"
    "  var svg = shown ? shown.querySelector(':scope > svg') : null;"
    "  var group = svg ? svg.querySelector(':scope > g') : null;"
    "  var count;"
    "  var ahead = img.getAttribute('data-ahead');"
    f"  var layer = ahead === null ? null : view.querySelector(':scope > .{AHEAD_LAYER_CLASS}[data-ahead=\"' + ahead + '\"]');"
    "  if (layer && (!patch || view.mpVersion === patch.base)) {"
    # Drawn and laid out ahead, hidden: shown instead of the layer before (painting is what is left).
    "    if (shown) { shown.remove(); }"
    f"    layer.classList.replace('{AHEAD_LAYER_CLASS}', '{SHOWN_LAYER_CLASS}');"
    "    svg = layer.querySelector(':scope > svg');"
    "    group = svg ? svg.querySelector(':scope > g') : null;"
    "    count = layer.mpCount;"
    "  } else if (!patch) {"
    # The whole diagram: drawn, unless the canvas shows it already (it was sent for another view).
    "    if (same === null || view.mpVersion !== Number(same)) {"
    "      var fresh = document.createElement('div');"
    f"      fresh.className = '{SHOWN_LAYER_CLASS}';"
    "      fresh.innerHTML = pieces.join('');"
    "      if (shown) { view.replaceChild(fresh, shown); } else { view.insertBefore(fresh, view.firstChild); }"
    "      svg = fresh.querySelector(':scope > svg');"
    "      group = svg ? svg.querySelector(':scope > g') : null;"
    "    }"
    "    count = pieces.length - 2;"
    "  } else if (view.mpVersion === patch.base && group && group.children.length === view.mpCount) {"
    # The message's pieces: the new head and tail if the head changed, then each range's elements.
    "    var at = 0;"
    "    if (patch.head) {"
    "      var fresh = document.createElement('div');"
    "      fresh.innerHTML = pieces[0] + pieces[1];"
    "      at = 2;"
    "      var pairs = [[fresh.querySelector('svg'), svg],"
    "                   [fresh.querySelector('svg > rect'), svg.querySelector(':scope > rect')]];"
    "      pairs.forEach(function (p) { if (p[0] && p[1]) {"
    "        Array.prototype.forEach.call(p[0].attributes, function (a) { p[1].setAttribute(a.name, a.value); }); } });"
    "    }"
    "    var news = patch.ops.map(function (op) { at += op[3] - op[2]; return pieces.slice(at - op[3] + op[2], at); });"
    "    count = view.mpCount;"
    # Last range first, so that the indices of the ranges before stay right.
    "    for (var k = patch.ops.length - 1; k >= 0; k--) {"
    "      var op = patch.ops[k], after = group.children[op[1]] || null;"
    # A range of elements goes in one removal (one by one, a thousand of them took 200 ms).
    "      if (op[1] > op[0]) { var gone = document.createRange();"
    "        gone.setStartBefore(group.children[op[0]]); gone.setEndAfter(group.children[op[1] - 1]);"
    "        gone.deleteContents(); }"
    "      count += (op[3] - op[2]) - (op[1] - op[0]);"
    "      if (news[k].length) {"
    "        var holder = document.createElementNS('http://www.w3.org/2000/svg', 'g');"
    "        holder.innerHTML = news[k].join('');"
    "        var fragment = document.createDocumentFragment();"
    "        while (holder.firstChild) { fragment.appendChild(holder.firstChild); }"
    "        group.insertBefore(fragment, after);"
    "      }"
    "    }"
    "  } else {"
    # Not the version this message starts from: ask for the whole diagram (the next message).
    f"    var box = root.querySelector('.{DIAGRAM_WANT_CLASS} input');"
    "    if (box) {"
    "      root.dataset.mpWants = String(Number(root.dataset.mpWants || 0) + 1);"
    "      box.value = 'whole|' + root.dataset.mpWants;"
    "      box.dispatchEvent(new Event('input', { bubbles: true }));"
    "    }"
    "    return;"
    "  }"
    # A patch addresses elements by their place: only where each part drew one element.
    "  view.mpCount = group && group.children.length === count ? count : -1;"
    "  view.mpVersion = version;"
    # A hidden layer drawn ahead of an earlier version is for a click that went another way (a
    # finding's layer has no base: it holds whatever is shown).
    f"  view.querySelectorAll(':scope > .{AHEAD_LAYER_CLASS}[data-base]').forEach(function (old) {{"
    "    if (Number(old.getAttribute('data-base')) < version) { old.remove(); } });"
    "  view.setAttribute('data-shows', img.getAttribute('data-shows'));"
    "})(this, 50)"
)

# The hidden layer's script (``diagram_ahead_html``): the diagram drawn ahead, whole, into a hidden
# layer of the canvas in place of the layer drawn ahead before in its slot; unless the canvas has
# moved past the version it was drawn ahead of (the click came first: its message carried the patch).
_AHEAD_SCRIPT = (
    "(function layer(img, tries) {"
    "  if (!img.isConnected) { return; }"
    f"  var root = img.closest('.{ROOT_CLASS}');"
    "  var view = root ? root.querySelector('.mp-diagram .mp-diagram-view') : null;"
    "  if (!view) { if (tries > 0) { setTimeout(function () { layer(img, tries - 1); }, 100); } return; }"
    "  var base = img.getAttribute('data-base'), slot = img.getAttribute('data-slot');"
    "  if (base !== null && view.mpVersion !== undefined && view.mpVersion > Number(base)) { return; }"
    f"  view.querySelectorAll(':scope > .{AHEAD_LAYER_CLASS}[data-slot=\"' + slot + '\"]').forEach(function (old) {{"
    "    old.remove(); });"
    f"  var pieces = img.previousElementSibling.value.split('\\u{ord(PART_SEPARATOR):04x}');"
    "  var fresh = document.createElement('div');"
    f"  fresh.className = '{AHEAD_LAYER_CLASS}';"
    "  fresh.setAttribute('data-ahead', img.getAttribute('data-ahead'));"
    "  fresh.setAttribute('data-slot', slot);"
    "  if (base !== null) { fresh.setAttribute('data-base', base); }"
    "  fresh.innerHTML = pieces.join('');"
    "  fresh.mpCount = pieces.length - 2;"
    "  view.appendChild(fresh);"
    "})(this, 50)"
)


@dataclass(frozen=True)
class DiagramPatch:
    """What changed between two versions of a diagram: whether its ``<svg>`` head (size, style)
    did, and the ranges of its elements that did, as ``(old start, old end, new start, new end)``."""

    base: int
    head: bool
    ops: list[tuple[int, int, int, int]]


def diagram_patch(before: list[str], after: list[str], base: int) -> DiagramPatch | None:
    """The patch from ``before`` to ``after`` (a separated SVG's parts: head, elements, tail);
    None when there is no diagram before, or a different tail (a different kind of drawing)."""
    if len(before) < 2 or before[-1] != after[-1]:
        return None
    matcher = difflib.SequenceMatcher(None, before[1:-1], after[1:-1], autojunk=False)
    ops = [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
    return DiagramPatch(base, before[0] != after[0], ops)


def diagram_message_pieces(parts: list[str], patch: DiagramPatch | None) -> list[str]:
    """What a message carries of the diagram ``parts``: all of them without a patch; with one, the
    head and tail if the head changed, then the new elements of each of the patch's ranges."""
    if patch is None:
        return list(parts)
    sent = [parts[0], parts[-1]] if patch.head else []
    for _, _, j1, j2 in patch.ops:
        sent += parts[1 + j1:1 + j2]
    return sent


def diagram_message_html(parts: list[str], version: int, shows: str, patch: DiagramPatch | None,
                         same: int | None = None, ahead: int | None = None) -> str:
    """The hidden source widget's value for version ``version`` of the diagram (see above): the
    patch from the version before, or (``patch`` None) the whole diagram; ``same``: the version
    whose diagram the whole one is, which a canvas showing it need not redraw; ``ahead``: the
    hidden layer (``diagram_ahead_html``) that holds this diagram already, which a canvas that has
    it shows instead of applying the patch."""
    text = html.escape(PART_SEPARATOR.join(diagram_message_pieces(parts, patch)), quote=False)
    data = "null" if patch is None else json.dumps({"base": patch.base, "head": patch.head, "ops": patch.ops})
    same_attr = "" if same is None or patch is not None else f"data-same='{same}' "
    ahead_attr = "" if ahead is None else f"data-ahead='{ahead}' "
    return (f"<textarea class='mp-diagram-text' hidden>{text}</textarea>"
            f"<img class='mp-diagram-draw' src='data:,' alt='' style='display:none' data-version='{version}' "
            f"data-shows='{html.escape(shows, quote=True)}' data-patch='{html.escape(data, quote=True)}' "
            f"{same_attr}{ahead_attr}onerror='{html.escape(_DIAGRAM_SCRIPT, quote=True)}'>")


def changed_elements(patch: DiagramPatch | None) -> int | None:
    """How many elements of the diagram a patch replaces (the larger of removed and added, per
    range); None for no patch (the whole diagram is drawn)."""
    if patch is None:
        return None
    return sum(max(i2 - i1, j2 - j1) for i1, i2, j1, j2 in patch.ops)


def diagram_ahead_html(parts: list[str], ahead: int, base: int | None,
                       slot: AheadSlot = AheadSlot.NEXT_STEP) -> str:
    """A hidden ahead widget's value: the diagram ``parts`` drawn ahead, whole, for the canvas's
    hidden layer ``ahead`` in ``slot``, while the canvas shows version ``base`` (a canvas past it
    drops it); ``base`` None for a layer that holds whatever is shown (a finding's)."""
    text = html.escape(PART_SEPARATOR.join(parts), quote=False)
    base_attr = "" if base is None else f"data-base='{base}' "
    return (f"<textarea class='mp-diagram-ahead-text' hidden>{text}</textarea>"
            f"<img class='mp-diagram-layer' src='data:,' alt='' style='display:none' data-ahead='{ahead}' "
            f"data-slot='{slot}' {base_attr}onerror='{html.escape(_AHEAD_SCRIPT, quote=True)}'>")


def parse_diagram_want(value: str) -> bool:
    """Whether the value the page wrote in the want box (``DIAGRAM_WANT_FORMAT``) asks for the
    whole diagram: False for the empty value the box starts with; anything else is not from our
    page script, and says so."""
    if not value:
        return False
    word, _, count = value.partition("|")
    if word != "whole" or not count.isdigit():
        raise ValueError(f"a request for the diagram must read {DIAGRAM_WANT_FORMAT!r}, got {value!r}")
    return True


# Scoped to the explorer. Why each rule:
# - the explorer is a size container: its layout follows its own width (a notebook with or
#   without JupyterLab's file browser beside it), not the window's;
# - its main part is a grid of three areas (widgets.Explorer._lay_out): code (the step controls,
#   the variables and the listing), diagram, and info (what the thread did). From 760 px wide
#   the diagram stands beside the code and info; narrower, the diagram comes right under the
#   code and info last. The listing and the diagram are given heights that leave the controls
#   above them on the same screen (the room a notebook leaves below its own bars is about
#   100vh - 120 px; the explorer's controls and findings above the grid take about 200 px, and
#   a 1,024-thread threadgroup's two rows of 32 thread buttons, wrapped, 100 px more: at 900x800
#   beside JupyterLab's file browser its diagram ran 88 px past the screen);
# - the diagram's box contains its layout and paint: a step that changes most of the diagram (the
#   first, from the whole run to step 2) lays out and paints that box, not the notebook around it;
# - the canvas's layers (the diagram shown and one drawn ahead) lie in one cell of a grid, the one
#   drawn ahead under the one shown, laid out and painted but transparent on a layer of its own, so
#   that showing it changes its opacity and nothing else: hiding it with visibility (inherited by
#   its thousands of elements) or keeping clicks off it with pointer-events cost a style pass of
#   20-40 ms at the swap, opacity none (a test page in Chromium: 11 ms from the swap to painted);
# - a row of thread buttons has its name beside it, not above it (JupyterLab lays a
#   ToggleButtons out as a block: its label took a line of its own);
# - the code listing and the diagram scroll instead of wrapping mid-identifier or shrinking past
#   legible text (the diagram's SVG sizes itself: draw.fitting_svg);
# - the findings are a short list that scrolls: twenty findings would push the code off-screen;
# - the step label keeps its width, so that "after the last line" does not wrap the row and
#   move everything under it;
# - a thread's variables sit side by side (name, value; name, value): a line or two, not a column;
# - tables get real column alignment and visible headers;
# - an ipywidgets box is a flex box, whose children are as wide as their content unless given
#   min-width: 0: without it a wide table or listing pushes out of the explorer and is cut off.
STYLE_HTML = f"""<style>
.{ROOT_CLASS} {{ container-type: inline-size; container-name: mp-explorer; }}
.{ROOT_CLASS} .mp-main {{ display: grid !important; gap: 4px 12px; align-items: start;
  grid-template-columns: minmax(0, 1fr); grid-template-areas: "code" "diagram" "info"; }}
.{ROOT_CLASS} .mp-left {{ grid-area: code; min-width: 0; }}
.{ROOT_CLASS} .mp-right {{ grid-area: diagram; min-width: 0; }}
.{ROOT_CLASS} .mp-info {{ grid-area: info; min-width: 0; }}
.{ROOT_CLASS} .mp-source {{ overflow: auto; max-width: 100%; max-height: max(6em, calc(30vh - 110px)); }}
.{ROOT_CLASS} .mp-diagram {{ overflow: auto; max-width: 100%; max-height: max(150px, calc(50vh - 210px));
  border: 1px solid #ddd; contain: content; }}
.{ROOT_CLASS} .mp-diagram-view {{ display: grid; justify-items: start; align-items: start; }}
.{ROOT_CLASS} .mp-diagram-view > div {{ grid-area: 1 / 1; min-width: 0; position: relative; }}
.{ROOT_CLASS} .mp-diagram-view > .{SHOWN_LAYER_CLASS} {{ z-index: 1; }}
.{ROOT_CLASS} .mp-diagram-view > .{AHEAD_LAYER_CLASS} {{ z-index: 0; opacity: 0; will-change: opacity; }}
@container mp-explorer (min-width: 760px) {{
  .{ROOT_CLASS} .mp-main {{ grid-template-columns: minmax(280px, min(560px, 46%)) minmax(0, 1fr);
    grid-template-rows: auto 1fr; grid-template-areas: "code diagram" "info diagram"; }}
  .{ROOT_CLASS} .mp-source {{ max-height: max(10em, calc(100vh - 430px)); }}
  .{ROOT_CLASS} .mp-diagram {{ max-height: max(240px, calc(100vh - 330px)); }}
}}
.{ROOT_CLASS} .mp-source pre {{ white-space: pre; margin: 0; font-size: 12px; line-height: 1.35; }}
.{ROOT_CLASS} .mp-line {{ white-space: pre; }}
.{ROOT_CLASS} .mp-finding-list {{ max-height: 50px; overflow-y: auto; flex-shrink: 0; }}
.{ROOT_CLASS} .mp-finding-list .jupyter-button {{ height: 22px; line-height: 22px; margin: 1px 0; flex-shrink: 0;
  text-align: left; }}
.{ROOT_CLASS} .mp-finding-detail .mp-finding-text {{ max-height: 2.8em; overflow-y: auto; }}
.{ROOT_CLASS} .mp-variables .widget-html-content {{ display: flex; flex-flow: row wrap; align-items: baseline;
  column-gap: 10px; line-height: 1.5; }}
.{ROOT_CLASS} .mp-controls .widget-slider {{ width: 260px; }}
.{ROOT_CLASS} .mp-stepper .widget-slider {{ flex: 1 1 160px; min-width: 110px; max-width: 220px; }}
.{ROOT_CLASS} .mp-stepper .jupyter-button {{ height: 26px; }}
.{ROOT_CLASS} .widget-html, .{ROOT_CLASS} .widget-html-content {{ line-height: 1.4; }}
.{ROOT_CLASS} .mp-step-label {{ min-width: 15em; }}
.{ROOT_CLASS} .mp-step-text {{ white-space: nowrap; }}
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
.{ROOT_CLASS} .mp-picker .widget-toggle-button {{ padding: 0 1px; font-size: 11px; height: 20px; line-height: 20px;
  margin: 1px 2px 1px 0; }}
.{ROOT_CLASS} .mp-picker .widget-toggle-buttons {{ display: flex; margin: 0; flex-wrap: nowrap;
  align-items: flex-start; }}
.{ROOT_CLASS} .mp-picker .widget-toggle-buttons .widget-label {{ flex: 0 0 auto; height: 22px; line-height: 22px; }}
.{ROOT_CLASS} .mp-picker .widget-toggle-buttons > div:last-child {{ display: flex; flex-flow: row wrap; min-width: 0; }}
.{ROOT_CLASS} .mp-finding-text {{ font-size: 12px; }}
.{ROOT_CLASS} .mp-idle {{ color: #8a5a00; white-space: normal; }}
</style>"""
