"""The class at a glance, written with each run from results.json alone: per puzzle how many
passed, were correct but over budget, failed, were not attempted (the book's template) or had no
kernel, and the most common failure; the distribution of totals. As Markdown (summary.md) and
as a picture (summary.svg, drawn here: the grader is headless and draws no chalk diagrams).

Only the book's own text (puzzle numbers and titles) and counts reach the picture; a failure's
label, which quotes a compiler's message about a student's code, is escaped for Markdown.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

from ..puzzles import PUZZLES
from .safe_text import md_inline, printable

SUMMARY_MD = "summary.md"
SUMMARY_SVG = "summary.svg"
#: Bars of the totals' histogram at most.
MAX_BINS = 10


@dataclass
class PuzzleRow:
    id: str
    number: str
    title: str
    students: int = 0
    passed: int = 0
    over_budget: int = 0
    failed: int = 0
    not_attempted: int = 0
    missing: int = 0  # no kernel found, or not graded (a grader fault)
    failures: Counter = field(default_factory=Counter)

    @property
    def most_common(self) -> tuple[str, int] | None:
        return self.failures.most_common(1)[0] if self.failures else None


#: Statuses in the order the picture stacks them, with their colour and word.
CATEGORIES = (("passed", "#2e7d32", "passed"), ("over_budget", "#9ccc65", "over budget"),
              ("failed", "#c62828", "failed"), ("not_attempted", "#9e9e9e", "not attempted"),
              ("missing", "#eeeeee", "missing or not graded"))


def failure_label(summary: dict) -> str | None:
    """What went wrong on a puzzle, in words that recur across students (the first counted
    failing test's first finding and line, the compiler's message without its position, ...)."""
    status = summary.get("status")
    tests = [t for t in summary.get("tests") or [] if isinstance(t, dict) and not t.get("beyond_contract")]
    failing = [t for t in tests if t.get("status") not in ("pass", None)]
    first = failing[0] if failing else {}
    if status == "findings":
        finding = next((f for f in first.get("findings") or [] if isinstance(f, dict)), None)
        if finding is None:
            return "sanitizer finding"
        line = finding.get("line")
        return f"{finding.get('kind')}" + (f" at line {line}" if isinstance(line, int) else "")
    if status in ("compile-error", "runtime-error"):
        error = str(first.get("error") or "").strip().splitlines()
        message = error[0].split("error: ", 1)[-1] if error else ""
        word = "compile error" if status == "compile-error" else "runtime error"
        return f"{word}: {printable(message, limit=80)}" if message else word
    if status == "wrong":
        return "wrong output"
    if status == "error":
        return f"stopped at a limit: {printable(summary.get('reason') or '', limit=80)}"
    return None


def puzzle_rows(results: dict) -> list[PuzzleRow]:
    by_id = {p.id: p for p in PUZZLES}
    rows = []
    for entry in results.get("puzzles", []):
        pid = entry.get("id")
        p = by_id.get(pid)
        row = PuzzleRow(pid, p.number if p else "", p.title if p else str(pid))
        for st in results.get("students", []):
            s = (st.get("puzzles") or {}).get(pid)
            if not isinstance(s, dict):
                continue
            row.students += 1
            status = s.get("status")
            if status == "passed":
                row.passed += 1
            elif status == "over-budget":
                row.over_budget += 1
            elif status == "not-attempted":
                row.not_attempted += 1
            elif status in ("missing", "grader-fault"):
                row.missing += 1
            else:
                row.failed += 1
                label = failure_label(s)
                if label:
                    row.failures[label] += 1
        rows.append(row)
    return rows


def _totals(results: dict) -> tuple[list[float], float]:
    totals = [float(st.get("total") or 0) for st in results.get("students", [])]
    maximum = sum(float(p.get("max_points") or 0) for p in results.get("puzzles", []))
    return totals, maximum


def _bins(totals: list[float], maximum: float) -> list[tuple[float, float, int]]:
    """(low, high, count): equal bins over 0..maximum, the last one closed."""
    if maximum <= 0:
        return [(0.0, 0.0, len(totals))]
    # Whole-point bins where the maximum allows (0-5, 5-10, ...: easier to read than 0-4.7).
    width = math.ceil(maximum / MAX_BINS) if maximum >= MAX_BINS else maximum / MAX_BINS
    n = math.ceil(maximum / width - 1e-9)
    counts = [0] * n
    for t in totals:
        counts[min(n - 1, max(0, int(t / width)))] += 1
    return [(i * width, min(maximum, (i + 1) * width), c) for i, c in enumerate(counts)]


def _g(x: float) -> str:
    return f"{x:.3g}" if x != int(x) else f"{int(x)}"


def class_summary_md(results: dict) -> str:
    totals, maximum = _totals(results)
    n = len(totals)
    lines = ["# Metal Puzzles: the class at a glance", ""]
    complete = sum(1 for st in results.get("students", []) if st.get("status") == "complete")
    lines += [f"{n} notebook(s), {complete} graded completely; hidden-test seed {results.get('seed')}.",
              "Picture: summary.svg.", ""]
    lines += ["## Totals", ""]
    if totals:
        lines.append(f"Mean {_g(round(statistics.mean(totals), 2))}, median {_g(statistics.median(totals))} of "
                     f"{_g(maximum)}; lowest {_g(min(totals))}, highest {_g(max(totals))}.")
        lines += ["", "| Total | Students | |", "|---|---|---|"]
        for low, high, count in _bins(totals, maximum):
            lines.append(f"| {_g(low)} to {_g(high)} | {count} | {'#' * count} |")
    lines += ["", "## Puzzles", "",
              "Not attempted: the kernel is the book's template, unchanged. Failed: wrong output, a sanitizer "
              "finding, a compile or run-time error, a limit. Missing: no kernel found, or not graded.", "",
              "| # | Puzzle | Passed | Over budget | Failed | Not attempted | Missing | Most common failure |",
              "|---|---|---|---|---|---|---|---|"]
    for r in puzzle_rows(results):
        rate = f"{r.passed / r.students:.0%}" if r.students else "-"
        common = r.most_common
        said = f"{md_inline(common[0])} ({common[1]})" if common else ""
        lines.append(f"| {r.number} | {r.title} | {r.passed} of {r.students} ({rate}) | {r.over_budget} | {r.failed} | "
                     f"{r.not_attempted} | {r.missing} | {said} |")
    return "\n".join(lines) + "\n"


def class_summary_svg(results: dict) -> str:
    """Two panels: the totals' histogram, and a stacked bar per puzzle (hover a bar for its count)."""
    totals, maximum = _totals(results)
    rows = puzzle_rows(results)
    width, label_w, bar_w, row_h = 820, 330, 470, 16
    hist_h, top = 150, 30
    bars_top = top + hist_h + 70
    height = bars_top + row_h * len(rows) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="10" y="18" font-size="14" font-weight="bold">Totals of {len(totals)} notebook(s), out of '
           f'{escape(_g(maximum))}</text>']
    bins = _bins(totals, maximum)
    most = max((c for _, _, c in bins), default=0) or 1
    step = bar_w / len(bins)
    for i, (low, high, count) in enumerate(bins):
        h = (hist_h - 20) * count / most
        x = label_w + i * step
        y = top + hist_h - h
        out.append(f'<rect x="{x + 1:.1f}" y="{y:.1f}" width="{step - 2:.1f}" height="{h:.1f}" fill="#1565c0">'
                   f'<title>{escape(f"{_g(low)} to {_g(high)}: {count}")}</title></rect>')
        out.append(f'<text x="{x + step / 2:.1f}" y="{top + hist_h + 14}" text-anchor="middle">{escape(_g(low))}</text>')
        if count:
            out.append(f'<text x="{x + step / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle">{count}</text>')
    out.append(f'<text x="{label_w - 8}" y="{top + hist_h + 14}" text-anchor="end">points</text>')
    out.append(f'<text x="10" y="{bars_top - 30}" font-size="14" font-weight="bold">Each puzzle</text>')
    legend_x = label_w
    for _, colour, word in CATEGORIES:
        out.append(f'<rect x="{legend_x}" y="{bars_top - 24}" width="10" height="10" fill="{colour}" stroke="#616161" '
                   'stroke-width="0.5"/>')
        out.append(f'<text x="{legend_x + 14}" y="{bars_top - 15}">{escape(word)}</text>')
        legend_x += 14 + 6 * len(word) + 12
    for i, r in enumerate(rows):
        y = bars_top + i * row_h
        out.append(f'<text x="{label_w - 8}" y="{y + row_h - 4}" text-anchor="end">{escape(f"{r.number}. {r.title}")}</text>')
        x = float(label_w)
        for attr, colour, word in CATEGORIES:
            count = getattr(r, attr)
            if not count or not r.students:
                continue
            w = bar_w * count / r.students
            out.append(f'<rect x="{x:.1f}" y="{y + 2}" width="{w:.1f}" height="{row_h - 4}" fill="{colour}" '
                       f'stroke="#616161" stroke-width="0.5"><title>{escape(f"{r.title}: {count} {word}")}</title></rect>')
            x += w
    out.append("</svg>")
    return "\n".join(out) + "\n"
