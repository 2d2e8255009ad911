"""Reading the witnesses ``check()`` left in a notebook's outputs, and comparing each with the
kernel the grader read (``checking/witness_record.py`` writes them).

A witness is untrusted data like the rest of the notebook: every field is type-checked, and a
malformed one is ignored. It never changes a grade; where it differs from what the grader read,
the student's report says so and names the first line that differs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeGuard

from ..checking.witness_record import MAX_LINES, METADATA_KEY, kernel_digest, line_digests

_HEX = re.compile(r"[0-9a-f]{1,64}")


@dataclass(frozen=True)
class Witness:
    kernel: str
    sha256: str
    source_lines: tuple[str, ...]
    header_lines: tuple[str, ...]
    cell: int  # the code cell whose output holds it
    order: tuple[int, int]  # (execution count, cell): the largest is the last check() that ran


def witnesses_of(number: int, cell: dict) -> list[Witness]:
    """The witnesses in one code cell's outputs."""
    outputs = cell.get("outputs")
    count = cell.get("execution_count")
    count = count if isinstance(count, int) and not isinstance(count, bool) else -1
    found = []
    for output in outputs if isinstance(outputs, list) else []:
        meta = output.get("metadata") if isinstance(output, dict) else None
        record = meta.get(METADATA_KEY) if isinstance(meta, dict) else None
        check = record.get("check") if isinstance(record, dict) else None
        if not isinstance(check, dict):
            continue
        kernel, digest = check.get("kernel"), check.get("sha256")
        source_lines, header_lines = check.get("source_lines"), check.get("header_lines")
        if not (isinstance(kernel, str) and isinstance(digest, str) and _HEX.fullmatch(digest)):
            continue
        if not (_line_record(source_lines) and _line_record(header_lines)):
            continue
        found.append(Witness(kernel[:200], digest, tuple(source_lines), tuple(header_lines), number, (count, number)))
    return found


def _line_record(x: object) -> TypeGuard[list[str]]:
    """Whether a witness's per-line record is what check() writes: a bounded list of strings."""
    return isinstance(x, list) and len(x) <= MAX_LINES and all(isinstance(d, str) for d in x)


def last_witnesses(witnesses: list[Witness]) -> dict[str, Witness]:
    """Per kernel, the witness of the check() that ran last (by execution count, then position)."""
    last: dict[str, Witness] = {}
    for w in witnesses:
        if w.kernel not in last or w.order >= last[w.kernel].order:
            last[w.kernel] = w
    return last


def disagreement(w: Witness, source: str, header: str, cell: int, line: int) -> str | None:
    """The note for a kernel the notebook's last check() ran differently from the grader's
    reading (``cell``, ``line``: where the grader read it), or None when they agree."""
    if kernel_digest(source, header) == w.sha256:
        return None
    where = ""
    for part, mine, theirs in (("source", line_digests(source), w.source_lines),
                               ("header", line_digests(header), w.header_lines)):
        first = next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b), None)
        if first is None and len(mine) != len(theirs):
            first = min(len(mine), len(theirs))
        if first is not None:
            where = f": they first differ at line {first + 1} of the kernel's {part}"
            break
    return (f"kernel '{w.kernel}': your notebook's last check() (code cell {w.cell}) ran a different kernel from "
            f"the one the grader read (code cell {cell}, line {line}){where}. The grade is the grader's reading; "
            "run the notebook from the top (Restart & Run All) to check what is graded")
