"""One grading task, run inside a worker: check one kernel against the puzzles that use it."""

from __future__ import annotations

from ..checking import CheckResult, check_kernel_sources, check_source
from ..puzzles import get_puzzle
from .limits import Limits


def run_task(task: dict, limits: Limits) -> dict:
    """task: {'task_id', 'puzzles': [ids], 'source', 'header', 'input_names', 'output_names', 'seed'}."""
    out = {"task_id": task["task_id"], "puzzles": {}}
    if task.get("grad"):
        (pid,) = task["puzzles"]
        result = check_kernel_sources(get_puzzle(pid), task["kernels"], seed=task.get("seed", 0),
                                      max_steps=limits.max_steps)
        out["puzzles"][pid] = summarize(result)
        return out
    for pid in task["puzzles"]:
        puzzle = get_puzzle(pid)
        result = check_source(puzzle, task["source"], task["header"], input_names=task.get("input_names"),
                              output_names=task.get("output_names"), seed=task.get("seed", 0),
                              max_steps=limits.max_steps)
        out["puzzles"][pid] = summarize(result)
    return out


def summarize(result: CheckResult) -> dict:
    """A JSON-ready record of a check: status, every test, finding and count."""
    tests = []
    for o in result.outcomes:
        tests.append({
            "label": o.case.label,
            "grid": list(o.case.grid),
            "threadgroup": list(o.case.threadgroup),
            "status": o.status,
            "error": o.error,
            "counts_max": o.counts_max,
            "mismatches": None if o.mismatch is None else int(o.mismatch.sum()),
            "findings": [{
                "kind": f.kind, "severity": f.severity, "message": f.message,
                "line": f.pos.line if f.pos else None, "file": f.pos.file if f.pos else None,
                "threads": [{k: list(v) for k, v in t.items()} for t in f.threads[:2]],
                "buffer": f.buffer, "index": f.index,
            } for f in o.findings],
        })
    return {
        "status": result.status,
        "passed": result.passed,
        "correct": result.correct,
        "within_budget": result.within_budget,
        "over_budget": result.over_budget,
        "counts_max": result.counts_max,
        "budget": result.budget.limits(),
        "tests": tests,
        "report": result.report(),
    }
