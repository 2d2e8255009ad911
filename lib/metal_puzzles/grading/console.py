"""What the grader prints on the terminal. Text from submissions goes through ``safe_text.markup``
(rich would otherwise read ``[...]`` as markup, and a control character would act)."""

from __future__ import annotations

from rich.console import Console, JustifyMethod
from rich.table import Table

from ..checking.wording import report_text
from ..puzzles import PUZZLES
from .report import num, status_text
from .results import GradeRun, Student, UncheckedStatus
from .safe_text import markup, printable


def print_summary(run: GradeRun, console: Console | None = None) -> None:
    console = console or Console()
    table = Table(title=f"Metal Puzzles grades ({len(run.students)} notebooks, {run.seconds:.1f} s, "
                        f"hidden-test seed {run.seed})")
    table.add_column("student")
    table.add_column("total", justify="right")
    table.add_column("passed", justify="right")
    table.add_column("not attempted", justify="right")
    table.add_column("notes")
    for st in run.students:
        passed = sum(1 for s in st.puzzles.values() if s.get("passed"))
        untouched = sum(1 for s in st.puzzles.values() if s.get("status") == UncheckedStatus.NOT_ATTEMPTED)
        notes = "; ".join(st.issues)
        if not st.complete:
            notes = "GRADER FAULT: not all puzzles graded; " + notes
        table.add_row(markup(st.id), f"{num(st.total)}/{num(run.max_total)}", f"{passed}/{len(PUZZLES)}",
                      str(untouched), markup(notes[:120]))
    console.print(table)


def print_check(st: Student, run: GradeRun, console: Console | None = None, only: str | None = None) -> None:
    """A learner's own check: a table of every puzzle (or the puzzle ``only``) and what to fix in
    each that failed. An untouched puzzle (the book's template) is one row, not a report. Reports
    are best written one line a paragraph: they are broken at the console's width."""
    console = console or Console()
    puzzles = [p for p in PUZZLES if only is None or p.id == only]
    title = f"{markup(st.path)}: {num(st.total)} / {num(run.max_total)} points"
    if only is not None:
        s = st.puzzles[only]
        title = f"{markup(st.path)}, puzzle {only}: {num(s['points'])} / {num(s['max_points'])} points"
    table = Table(title=title)
    columns: tuple[tuple[str, JustifyMethod], ...] = (("#", "right"), ("puzzle", "left"), ("result", "left"),
                                                      ("points", "right"))
    for col, just in columns:
        table.add_column(col, justify=just)
    for p in puzzles:
        s = st.puzzles[p.id]
        table.add_row(p.number, p.title, markup(status_text(s)), f"{num(s['points'])}/{num(s['max_points'])}")
    console.print(table)
    console.print(f"hidden tests used seed {run.seed} (run again with --seed {run.seed} to repeat them)")
    for issue in st.issues:
        console.print(f"[yellow]note:[/yellow] {markup(issue)}")
    for p in puzzles:
        s = st.puzzles[p.id]
        if not s.get("passed") and s.get("status") not in (UncheckedStatus.MISSING, UncheckedStatus.NOT_ATTEMPTED):
            console.rule(f"{p.number}. {p.title}")
            # Reports come one line a paragraph (``grade_submissions(report_width=None)``), broken
            # here once, at the console's width; rich then folds only a word wider than that.
            report = printable(s.get("report", ""), keep_newlines=True)
            console.print(report_text(report, console.width), markup=False, highlight=False, overflow="fold")
