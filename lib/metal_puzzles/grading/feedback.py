"""What to fix, for a student who may resubmit: the failure said without a hidden test's data.

A report as the book prints it shows the first failing test's output beside the spec's. For the
visible test that is the point: the learner has its inputs. For a hidden test it hands over the
expected values, and a student who resubmits can paste them into a kernel. Feedback on a hidden
test therefore says which test failed and how (wrong values at how many positions, which
sanitizer finding at which line, the error's first line), never the values.
"""

from __future__ import annotations

from .safe_text import printable

#: Failing tests named beside the first one, and characters of any one message quoted.
MAX_ALSO = 3
MAX_MESSAGE = 300
#: Where a kernel's checks start: the visible test, then the hidden ones (``Puzzle.cases``).
VISIBLE_INDEX = 0


def feedback(summary: dict, *, visible_known: bool = True) -> str:
    """The summary's report when it shows only the visible test's data (or none: a compile error,
    a budget); otherwise the failure described without any hidden test's data.

    ``visible_known``: the first test is the visible one whose inputs the learner has (False for
    a finale entry, whose comparisons are all on the grader's own data)."""
    report = summary.get("report") or ""
    tests = [t for t in summary.get("tests") or [] if isinstance(t, dict)]
    failing = [(i, t) for i, t in enumerate(tests) if t.get("status") != "pass" and not t.get("beyond_contract")]
    if not failing or any(t.get("status") == "compile-error" for _, t in failing):
        return report  # nothing ran on hidden data, or nothing failed on it
    first_index, first = failing[0]
    if visible_known and first_index == VISIBLE_INDEX:
        return report  # the data shown are the visible test's, which the learner has
    counted = [t for t in tests if not t.get("beyond_contract")]
    lines = [f"Failed: {len(failing)} of {len(counted)} tests fail. The first is {_label(first)}; its inputs "
             "and expected output stay hidden.", f"What went wrong: {_what(first)}."]
    others = [_label(t) for _, t in failing[1:1 + MAX_ALSO]]
    if others:
        more = ", ..." if len(failing) > 1 + MAX_ALSO else ""
        lines.append(f"Also failing: {', '.join(others)}{more}.")
    lines.append("Fix the kernel for every size and value the puzzle allows, not for one test's numbers: "
                 "hidden tests change with each submission.")
    return "\n".join(lines)


def _label(test: dict) -> str:
    grid = test.get("grid")
    group = test.get("threadgroup")
    launch = f" (grid={tuple(grid)}, threadgroup={tuple(group)})" if grid and group else ""
    return printable(str(test.get("label") or "a test"), limit=MAX_MESSAGE) + launch


def _what(test: dict) -> str:
    status = test.get("status")
    if status == "runtime-error":
        error = str(test.get("error") or "").strip().splitlines()
        return "the kernel stopped with an error" + (f": {printable(error[0], limit=MAX_MESSAGE)}" if error else "")
    findings = [f for f in test.get("findings") or [] if isinstance(f, dict)]
    if findings:
        f = findings[0]
        line = f" at line {f['line']}" if isinstance(f.get("line"), int) else ""
        return (f"the sanitizer found a {printable(f.get('kind'), limit=60)}{line}: "
                f"{printable(f.get('message') or '', limit=MAX_MESSAGE)}")
    wrong = test.get("mismatches")
    if isinstance(wrong, int) and wrong > 0:
        return f"wrong output at {wrong} position{'s' if wrong != 1 else ''}"
    return "the output differs from the spec's"
