"""What the grader writes, as text: the gradebook (CSV), the record (JSON), a report per student
(Markdown). Everything that came from a submission goes through ``safe_text``."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Sequence

from ..checking import PuzzleStatus, WiredPuzzle
from ..puzzles import PUZZLES
from .changes import GradeChange
from .feedback import feedback
from .results import GradeRun, Student, UncheckedStatus
from .safe_text import clean_strings, csv_cell, md_code_block, md_inline, printable

REPORTS_DIR = "reports"


def num(x: float | None) -> str:
    return "" if x is None else f"{x:g}"


#: What the status column says of each status a summary can hold (a verdict or why there is none).
STATUS_TEXT: dict[PuzzleStatus | UncheckedStatus, str] = {
    PuzzleStatus.PASSED: "passed", PuzzleStatus.OVER_BUDGET: "correct, over budget",
    PuzzleStatus.COMPILE_ERROR: "does not compile", PuzzleStatus.WRONG: "wrong output",
    PuzzleStatus.FINDINGS: "sanitizer findings", PuzzleStatus.RUNTIME_ERROR: "runtime error",
    UncheckedStatus.MISSING: "missing", UncheckedStatus.NOT_ATTEMPTED: "not attempted",
    UncheckedStatus.ERROR: "stopped at a limit", UncheckedStatus.GRADER_FAULT: "not graded (grader fault)",
    UncheckedStatus.NOT_CHECKED: "not checked (another puzzle was asked about)",
}


def status_text(s: dict) -> str:
    """A summary's status in words; a status from elsewhere (an older run's record) as it is."""
    status = s.get("status", "")
    # A summary holds the status's value (read back from JSON, a str): the enums are str, so it finds them.
    return STATUS_TEXT.get(status, printable(status))


def count_status(st: Student, status: PuzzleStatus | UncheckedStatus) -> int:
    return sum(1 for s in st.puzzles.values() if s.get("status") == status)


def gradebook_csv(run: GradeRun) -> str:
    """One row a student: id, points per puzzle (empty where the grader failed), total, how many
    puzzles passed and how many were not attempted (the book's template, unchanged: 0 points, but
    no wrong attempt), whether grading completed, and which report file is theirs."""
    ids = [p.id for p in PUZZLES]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student", *ids, "total", "passed", "not_attempted", "status", "report"])
    for st in run.students:
        w.writerow([csv_cell(st.id), *[num(st.puzzles[i]["points"]) for i in ids], num(st.total),
                    count_status(st, PuzzleStatus.PASSED), count_status(st, UncheckedStatus.NOT_ATTEMPTED),
                    st.status, csv_cell(f"{REPORTS_DIR}/{st.report}")])
    return buf.getvalue()


def results_json(run: GradeRun) -> str:
    record = {
        "complete": run.complete,
        "seed": run.seed,
        "settings": run.settings,
        "puzzles": [{"id": p.id, "title": p.title, "kernel": p.kernel_name,
                     "max_points": run.config.max_points(p.id)} for p in PUZZLES],
        "rules": run.config.rules(),
        "seconds": round(run.seconds, 2),
        "problems": run.problems,
        # Which file each id was given to (ids are unique: ``ids.assign_ids``).
        "ids": {st.id: st.path for st in run.students},
        "students": [{"id": st.id, "name": st.name, "lms": st.lms, "file": st.path, "report": f"{REPORTS_DIR}/{st.report}", "status": st.status,
                      "sha256": st.submission.sha256, "issues": st.issues, "total": st.total,
                      "max_total": run.max_total,
                      # In catalogue order, not the order checks finished in: the file is the same
                      # whatever ran where (one machine or a cluster, any number of workers).
                      "puzzles": {p.id: st.puzzles[p.id] for p in PUZZLES}}
                     for st in run.students],
    }
    # Strings from submissions may hold lone surrogates; the file must be valid UTF-8 for any reader.
    return json.dumps(clean_strings(record), indent=1, ensure_ascii=False, default=str)


def student_report(st: Student, run: GradeRun, changes: Sequence[GradeChange] = ()) -> str:
    """The report a student receives; ``changes``: their grades this run changed (changes.csv)."""
    # The notebook as the student named it (below the submissions folder), not the instructor's paths.
    shown = st.submission.relative or os.path.basename(st.path)
    lines = [f"# Metal Puzzles: report for {md_inline(st.id)}", "", f"Notebook: {md_inline(shown)}", "",
             f"**Total: {num(st.total)} / {num(run.max_total)}**", "", run.config.rules(), ""]
    if not st.complete:
        lines += ["**Grading did not complete**: the grader failed on the puzzles marked 'grader fault' "
                  "(not your kernel's fault); they are not scored yet.", ""]
    if changes:
        by_id = {p.id: p for p in PUZZLES}
        lines += ["## Changed since the last grading", ""]
        lines += [f"- {by_id[c.puzzle].number}. {by_id[c.puzzle].title}: {status_text({'status': c.old_status})}, "
                  f"{c.old_points or '-'} -> {status_text({'status': c.new_status})}, {c.new_points or '-'} points "
                  f"({md_inline(c.why)})" for c in changes if c.puzzle in by_id]
        lines.append("")
    if st.issues:
        lines += ["## Notebook issues", ""] + [f"- {md_inline(i)}" for i in st.issues] + [""]
    lines += ["| # | Puzzle | Result | Points |", "|---|---|---|---|"]
    for p in PUZZLES:
        s = st.puzzles[p.id]
        lines.append(f"| {p.number} | {p.title} | {status_text(s)} | {num(s['points'])} / {num(s['max_points'])} |")
    lines.append("")
    missing = [p for p in PUZZLES if st.puzzles[p.id].get("status") == UncheckedStatus.MISSING]
    # The commonest case (no kernel of that name at all) in one line; a kernel found but not
    # readable, or a notebook not read, says why, a line each.
    absent = [p.number for p in missing if str(st.puzzles[p.id].get("reason", "")).startswith("no MetalKernel named")]
    other = [f"- {p.number}. {p.title}: {md_inline(st.puzzles[p.id].get('reason') or 'no kernel')}"
             for p in missing if p.number not in absent]
    if missing:
        lines += ["## Kernels not found", ""]
        if absent:
            lines.append(f"- No MetalKernel with the puzzle's kernel name: {', '.join(absent)}.")
        lines += [*other, ""]
    for p in PUZZLES:
        s = st.puzzles[p.id]
        if s.get("status") in (UncheckedStatus.NOT_ATTEMPTED, UncheckedStatus.MISSING):
            continue  # its line above says it all
        if s.get("passed"):
            # A passed puzzle's report is worth reading only for its notes (check() prints them too).
            if s.get("sanitizer_notes") or s.get("notes"):
                lines += [f"## {p.number}. {p.title}: notes (not counted)", "", md_code_block(s.get("report", "")), ""]
            continue
        # What students receive: a hidden test's failure said without its values (as on
        # Gradescope); results.json keeps the full report for the instructor.
        fix = feedback(s, visible_known=not isinstance(p, WiredPuzzle))
        lines += [f"## {p.number}. {p.title}: what to fix", "", md_code_block(fix), ""]
    return "\n".join(lines)
