"""results.json read back: the gradebook export (``metal-puzzles gradebook``) and the record of
changes (a regrade compares with the results it replaces) make files from it alone.

Between two runs results.json is the instructor's: a grade regraded by hand (``"points": "1
(regraded by hand)"``), a field deleted, a list where an object was, a file cut short. Every
field a consumer reads is checked here, before anything is made from it, and a file that is not
a results.json of this grader is a ``ResultsFileError`` naming the file, the field and what is
expected there, never a traceback after a class was graded. Keys it does not know are left alone
(an instructor's notes, say).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

from .own_files import OwnFileError, read_own_file
from .results import StudentStatus
from .safe_text import printable

RESULTS_NAME = "results.json"
#: How far a student's total may be from the sum of their puzzles' points (the grader rounds it
#: to four decimals): further, a hand edit changed one and not the other.
TOTAL_TOLERANCE = 1e-3


class ResultsFileError(Exception):
    """A results.json that cannot be used: the message names the file and the field."""


def _shown(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return printable(text if len(text) <= 80 else text[:80] + "...")


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


#: What a field must hold: a test and its name in an error message.
Rule = tuple[Callable[[object], bool], str]
TEXT: Rule = (lambda v: isinstance(v, str), "a string")
TEXT_OR_NULL: Rule = (lambda v: v is None or isinstance(v, str), "a string or null")
NUMBER: Rule = (_number, "a finite number")
NUMBER_OR_NULL: Rule = (lambda v: v is None or _number(v), "a finite number or null")
WHOLE: Rule = (_whole, "a whole number of at least 0")
OBJECT: Rule = (lambda v: isinstance(v, dict), "an object")
LIST: Rule = (lambda v: isinstance(v, list), "a list")
STUDENT_STATUS: Rule = (lambda v: v in tuple(StudentStatus), " or ".join(repr(s.value) for s in StudentStatus))

#: Each record's fields: (key, what it must hold, whether it must be there).
TOP_FIELDS = (("seed", WHOLE, True), ("settings", OBJECT, True), ("puzzles", LIST, True), ("students", LIST, True))
PUZZLE_FIELDS = (("id", TEXT, True), ("max_points", NUMBER, True))
STUDENT_FIELDS = (("id", TEXT, True), ("file", TEXT, True), ("status", STUDENT_STATUS, True),
                  ("total", NUMBER, True), ("puzzles", OBJECT, True), ("name", TEXT_OR_NULL, False),
                  ("sha256", TEXT, False), ("max_total", NUMBER, False), ("lms", OBJECT, False))
SUMMARY_FIELDS = (("status", TEXT, True), ("points", NUMBER_OR_NULL, True), ("reason", TEXT_OR_NULL, False),
                  ("tests", LIST, False))


def _fields(record: object, where: str, rules: tuple[tuple[str, Rule, bool], ...]) -> str | None:
    """What is wrong with ``record``'s fields, located at ``where``, or None."""
    if not isinstance(record, dict):
        return f"{where or 'the file'}: expected an object, got {_shown(record)}"
    for key, (ok, expected), required in rules:
        at = f"{where}.{key}" if where else key
        if key not in record:
            if required:
                return f"{at}: missing; expected {expected}"
            continue
        if not ok(record[key]):
            return f"{at}: expected {expected}, got {_shown(record[key])}"
    return None


def _summary_problem(summary: object, where: str) -> str | None:
    problem = _fields(summary, where, SUMMARY_FIELDS)
    if problem is not None or not isinstance(summary, dict):
        return problem
    for n, test in enumerate(summary.get("tests") or []):  # the class summary reads a failing test's findings
        problem = _fields(test, f"{where}.tests[{n}]", (("findings", LIST, False),))
        if problem is not None:
            return problem
    return None


def _student_problem(st: object, where: str) -> str | None:
    problem = _fields(st, where, STUDENT_FIELDS)
    if problem is not None or not isinstance(st, dict):
        return problem
    whose = f" (student {_shown(st['id'])})"
    for column, value in st.get("lms", {}).items():  # the roster's LMS identities, written to the gradebooks
        if not isinstance(value, str):
            return f"{where}.lms.{printable(column)}: expected a string, got {_shown(value)}{whose}"
    for pid, summary in st["puzzles"].items():
        problem = _summary_problem(summary, f"{where}.puzzles.{pid}")
        if problem is not None:
            return problem + whose
    points = sum(s["points"] or 0.0 for s in st["puzzles"].values())
    if abs(points - st["total"]) > TOTAL_TOLERANCE:
        return (f"{where}.total{whose}: {st['total']:g} is not the sum of the student's puzzles' points "
                f"({points:g}): a grade edited by hand must change both")
    return None


def results_problem(record: object) -> str | None:
    """What makes ``record`` (parsed JSON) not a results.json as the grader writes it, located
    as ``students[3].puzzles.map.points (student 'alice'): expected ...``; None if it is one."""
    problem = _fields(record, "", TOP_FIELDS)
    if problem is not None or not isinstance(record, dict):
        return problem
    for n, puzzle in enumerate(record["puzzles"]):
        problem = _fields(puzzle, f"puzzles[{n}]", PUZZLE_FIELDS)
        if problem is not None:
            return problem
    for n, st in enumerate(record["students"]):
        problem = _student_problem(st, f"students[{n}]")
        if problem is not None:
            return problem
    return None


def read_results(path: Path) -> dict:
    """The results.json at ``path``, checked field by field. Raises ``FileNotFoundError`` if
    there is none, ``ResultsFileError`` for anything else that is not a grader's results.json."""
    name = printable(str(path))
    try:
        data = read_own_file(path)
    except FileNotFoundError:
        raise
    except OwnFileError as exc:
        raise ResultsFileError(str(exc)) from None
    except OSError as exc:
        raise ResultsFileError(f"cannot read {name}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsFileError(f"{name}: byte {exc.start} is not UTF-8; the grader writes results.json as UTF-8 "
                               "JSON") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(f"{name}: line {exc.lineno}, column {exc.colno}: not JSON ({exc.msg}); was the file "
                               "cut short or edited by hand?") from None
    except RecursionError:
        raise ResultsFileError(f"{name}: nested too deeply to be a results.json") from None
    problem = results_problem(record)
    if problem is not None:
        raise ResultsFileError(f"{name}: {problem}")
    return record
