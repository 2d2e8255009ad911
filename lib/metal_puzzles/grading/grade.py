"""``metal-puzzles grade``: grade a class's notebooks; ``metal-puzzles check``: one learner's."""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..checking import GradPuzzle
from ..puzzles import PUZZLES
from .extract import NotebookKernels, extract_kernels
from .points import PointsConfig
from .pool import Limits, run_tasks


@dataclass
class Student:
    id: str
    path: str
    notebook: NotebookKernels | None = None
    issues: list[str] = field(default_factory=list)
    puzzles: dict[str, dict] = field(default_factory=dict)  # puzzle id -> summary (+ points)

    @property
    def total(self) -> float:
        return round(sum(p.get("points", 0.0) for p in self.puzzles.values()), 4)


@dataclass
class GradeRun:
    students: list[Student]
    config: PointsConfig
    seconds: float = 0.0

    @property
    def max_total(self) -> float:
        return sum(self.config.max_points(p.id) for p in PUZZLES)


def collect_notebooks(paths: Sequence[str | Path]) -> tuple[list[Path], list[str]]:
    """Notebook files named on the command line, or found (recursively) in named directories."""
    found: list[Path] = []
    problems: list[str] = []
    for p in map(Path, paths):
        if p.is_dir():
            found.extend(sorted(x for x in p.rglob("*.ipynb") if ".ipynb_checkpoints" not in x.parts))
        elif p.exists():
            found.append(p)
        else:
            problems.append(f"{p}: no such file or directory")
    return found, problems


def load_mapping(path: str | Path | None) -> dict[str, str]:
    """A CSV file of 'file name, student id' rows (a header row is allowed)."""
    if path is None:
        return {}
    mapping = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            if len(row) >= 2 and row[0].strip() and row[0].strip().lower() not in ("file", "filename", "notebook"):
                mapping[row[0].strip()] = row[1].strip()
    return mapping


def assign_ids(files: list[Path], mapping: dict[str, str]) -> list[Student]:
    students = []
    seen: dict[str, int] = {}
    for f in files:
        sid = mapping.get(f.name) or mapping.get(str(f)) or f.stem
        issues = []
        if sid in seen:
            seen[sid] += 1
            new = f"{sid} ({seen[sid]})"
            issues.append(f"duplicate student id '{sid}' (also used by another notebook); graded as '{new}'")
            sid = new
        else:
            seen[sid] = 1
        students.append(Student(sid, str(f), issues=issues))
    return students


def build_tasks(students: list[Student], seed: int) -> list[dict]:
    """One task per (student, kernel): the puzzles that share a kernel are checked together."""
    tasks = []
    for si, st in enumerate(students):
        nb = st.notebook
        by_kernel: dict[str, list[str]] = {}
        for p in PUZZLES:
            if isinstance(p, GradPuzzle):
                tasks.extend(_grad_task(si, st, p, seed))
                continue
            by_kernel.setdefault(p.kernel_name, []).append(p.id)
        for kname, pids in by_kernel.items():
            k = nb.kernels.get(kname) if nb is not None else None
            if k is None or k.source is None:
                reason = ("the notebook could not be read" if nb is None or not nb.readable else
                          f"no MetalKernel named '{kname}' was found" if k is None else k.problem)
                for pid in pids:
                    st.puzzles[pid] = {"status": "missing", "passed": False, "correct": False, "reason": reason,
                                       "report": f"Not graded: {reason}.", "tests": []}
                continue
            tasks.append({"task_id": f"{si}:{kname}", "student": si, "puzzles": pids, "source": k.source,
                          "header": k.header if k.header else None, "input_names": k.input_names,
                          "output_names": k.output_names, "seed": seed})
    return tasks


def _missing(st: Student, pid: str, reason: str) -> None:
    st.puzzles[pid] = {"status": "missing", "passed": False, "correct": False, "reason": reason,
                       "report": f"Not graded: {reason}.", "tests": []}


def _grad_task(si: int, st: Student, puzzle, seed: int) -> list[dict]:
    """The finale is Python the grader never runs: it grades the learner's kernels wired the
    reference way into mx.custom_function, and compares values and gradients."""
    nb = st.notebook
    if nb is None or not nb.readable:
        _missing(st, puzzle.id, "the notebook could not be read")
        return []
    kernels = {}
    for name in puzzle.kernels:
        k = nb.kernels.get(name)
        if k is None or k.source is None:
            _missing(st, puzzle.id, f"it wires kernel '{name}', which " +
                     ("was not found" if k is None else f"could not be read: {k.problem}"))
            return []
        kernels[name] = {"source": k.source, "header": k.header or None, "input_names": k.input_names,
                         "output_names": k.output_names}
    return [{"task_id": f"{si}:{puzzle.id}", "student": si, "puzzles": [puzzle.id], "grad": True,
             "kernels": kernels, "seed": seed}]


def grade_submissions(paths: Sequence[str | Path], *, config: PointsConfig | None = None,
                      mapping: dict[str, str] | None = None, limits: Limits | None = None,
                      workers: int | None = None, seed: int = 0, progress: bool = True) -> GradeRun:
    start = time.monotonic()
    config = config or PointsConfig()
    limits = limits or Limits()
    files, problems = collect_notebooks(paths)
    students = assign_ids(files, mapping or {})
    for st in students:
        st.notebook = extract_kernels(st.path)
        st.issues.extend(st.notebook.issues)
    tasks = build_tasks(students, seed)
    by_id = {t["task_id"]: t for t in tasks}
    bar = _progress_bar(len(tasks)) if progress and tasks else None

    def on_result(result: dict) -> None:
        task = by_id[result["task_id"]]
        st = students[task["student"]]
        if "error" in result:
            for pid in task["puzzles"]:
                st.puzzles[pid] = {"status": "error", "passed": False, "correct": False, "reason": result["error"],
                                   "report": f"Not graded: {result['error']}.", "tests": []}
        else:
            st.puzzles.update(result["puzzles"])
        if bar is not None:
            bar.update(1)

    try:
        run_tasks(tasks, limits, workers, on_result)
    finally:
        if bar is not None:
            bar.close()
    for st in students:
        for p in PUZZLES:
            summary = st.puzzles.get(p.id)
            if summary is None:  # defensive: every puzzle gets a row
                summary = st.puzzles[p.id] = {"status": "missing", "passed": False, "correct": False,
                                              "reason": "not graded", "report": "Not graded.", "tests": []}
            summary["points"] = config.score(p.id, summary)
            summary["max_points"] = config.max_points(p.id)
    run = GradeRun(students, config, time.monotonic() - start)
    run.problems = problems  # type: ignore[attr-defined]
    return run


def _progress_bar(total: int):
    from tqdm import tqdm

    return tqdm(total=total, desc="grading kernels", unit="kernel", leave=False)


# ---------------------------------------------------------------------------- outputs
def write_outputs(run: GradeRun, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    ids = [p.id for p in PUZZLES]
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["student", *ids, "total"])
        for st in run.students:
            w.writerow([st.id, *[_num(st.puzzles[i]["points"]) for i in ids], _num(st.total)])
    record = {
        "puzzles": [{"id": p.id, "title": p.title, "kernel": p.kernel_name,
                     "max_points": run.config.max_points(p.id)} for p in PUZZLES],
        "rules": run.config.rules(),
        "seconds": round(run.seconds, 2),
        "students": [{"id": st.id, "file": st.path, "issues": st.issues, "total": st.total,
                      "max_total": run.max_total,
                      "puzzles": {pid: {k: v for k, v in s.items()} for pid, s in st.puzzles.items()}}
                     for st in run.students],
    }
    with open(out / "results.json", "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, default=str)
    reports = out / "reports"
    reports.mkdir(exist_ok=True)
    for st in run.students:
        (reports / f"{_safe(st.id)}.md").write_text(student_report(st, run), encoding="utf-8")


def student_report(st: Student, run: GradeRun) -> str:
    lines = [f"# Metal Puzzles: report for {st.id}", "", f"Notebook: `{st.path}`", "",
             f"**Total: {_num(st.total)} / {_num(run.max_total)}**", "", run.config.rules(), ""]
    if st.issues:
        lines += ["## Notebook issues", ""] + [f"- {i}" for i in st.issues] + [""]
    lines += ["| # | Puzzle | Result | Points |", "|---|---|---|---|"]
    for p in PUZZLES:
        s = st.puzzles[p.id]
        lines.append(f"| {p.number} | {p.title} | {_status_text(s)} | {_num(s['points'])} / {_num(s['max_points'])} |")
    lines.append("")
    for p in PUZZLES:
        s = st.puzzles[p.id]
        if s.get("passed"):
            continue
        lines += [f"## {p.number}. {p.title}: what to fix", "", "```", s.get("report", ""), "```", ""]
    return "\n".join(lines)


def _status_text(s: dict) -> str:
    return {"passed": "passed", "over-budget": "correct, over budget", "compile-error": "does not compile",
            "wrong": "wrong output", "findings": "sanitizer findings", "runtime-error": "runtime error",
            "missing": "missing", "error": "not graded"}.get(s.get("status", ""), s.get("status", ""))


def _num(x: float) -> str:
    return f"{x:g}"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "student"


def print_summary(run: GradeRun, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title=f"Metal Puzzles grades ({len(run.students)} notebooks, {run.seconds:.1f} s)")
    table.add_column("student")
    table.add_column("total", justify="right")
    table.add_column("passed", justify="right")
    table.add_column("notes")
    for st in run.students:
        passed = sum(1 for s in st.puzzles.values() if s.get("passed"))
        table.add_row(st.id, f"{_num(st.total)}/{_num(run.max_total)}", f"{passed}/{len(PUZZLES)}",
                      "; ".join(st.issues)[:80])
    console.print(table)


def print_check(st: Student, run: GradeRun, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title=f"{st.path}: {_num(st.total)} / {_num(run.max_total)} points")
    for col, just in (("#", "right"), ("puzzle", "left"), ("result", "left"), ("points", "right")):
        table.add_column(col, justify=just)
    for p in PUZZLES:
        s = st.puzzles[p.id]
        table.add_row(p.number, p.title, _status_text(s), f"{_num(s['points'])}/{_num(s['max_points'])}")
    console.print(table)
    for issue in st.issues:
        console.print(f"[yellow]note:[/yellow] {issue}")
    for p in PUZZLES:
        s = st.puzzles[p.id]
        if not s.get("passed") and s.get("status") != "missing":
            console.rule(f"{p.number}. {p.title}")
            console.print(s.get("report", ""), markup=False, highlight=False)
