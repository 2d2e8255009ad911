"""Finding a learner's kernels in a notebook without running any of its Python.

Each code cell is read as IPython reads it (``cells.py``: IPython's own input transformation
turns magics into Python, so a ``%`` line inside a string stays in the string), and the cells
are followed in notebook order by a small, sound evaluator of their string-valued Python
(the ``evaluate`` package). Every ``MetalKernel(...)`` call is recorded as it runs; the last one
of a name is the kernel the notebook runs. For each kernel the grader gets either that exact source or
"cannot be read without running the notebook", naming the cell, the line and the construct,
never another kernel. The witness ``check()`` left in the outputs (``witness_comparison.py``) is compared
with what was read; a difference is a note, never a grade.

A notebook is untrusted data: any field may have any JSON type, nesting may be deep, cells huge.
Every structure is type-checked before use, cells and kernels larger than any real one are not
read, and every failure to read (invalid JSON, too deep, too large, not Python) becomes an
issue of that notebook with its reason, never an exception. The grader runs this in a worker
process under its memory and time limits (``tasks.ReadTask``), since reading costs memory.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from .evaluate import Evaluator, KernelBuild, Unknown
from .witness_comparison import Witness, disagreement, last_witnesses, witnesses_of

#: A code cell longer than this is not read (what it assigns becomes unknown). A cell with a kernel
#: is a few KiB; parsing costs about 500 bytes of memory and 5 µs per character, so this bounds
#: one cell to about 130 MiB and a second or two.
MAX_CELL_CHARS = 256 * 2**10
#: A kernel (source and header) longer than this is not graded: the simulator compiles at most
#: 50,000 tokens, and the longest puzzle solution is about 3 KiB.
MAX_KERNEL_CHARS = 128 * 2**10
#: Issues kept per notebook; a notebook could otherwise make a list as long as itself.
MAX_ISSUES = 30

#: Failures of parsing untrusted data: too deep (RecursionError), too big (MemoryError, and the
#: limit on digits in integers, a ValueError), malformed (ValueError, UnicodeError).
PARSE_ERRORS = (RecursionError, MemoryError, ValueError, OverflowError, UnicodeError)


@dataclass
class ExtractedKernel:
    name: str
    source: str | None
    header: str
    input_names: list[str] | None = None
    output_names: list[str] | None = None
    cell: int = 0
    line: int = 0
    problem: str | None = None  # why the source could not be read statically


@dataclass
class NotebookKernels:
    path: str
    kernels: dict[str, ExtractedKernel] = field(default_factory=dict)
    issues: list[str] = field(default_factory=list)
    readable: bool = True
    nbformat_version: str = ""
    dropped_issues: int = 0

    def note(self, issue: str) -> None:
        if len(self.issues) < MAX_ISSUES:
            self.issues.append(issue)
        else:
            self.dropped_issues += 1

    def finish(self) -> None:
        if self.dropped_issues:
            self.issues.append(f"... and {self.dropped_issues} more issue(s) like these")
            self.dropped_issues = 0


def _type_name(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _version(data: dict) -> str:
    def part(v: object) -> str:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1000 else "?"
    return f"{part(data.get('nbformat'))}.{part(data.get('nbformat_minor'))}"


def decode_notebook(raw: bytes, result: NotebookKernels) -> dict | None:
    """The notebook's JSON object, or None (with the reason noted) if it is not one."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        result.note(f"the file is not valid UTF-8 (byte {exc.start}); undecodable bytes were replaced")
        text = raw.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        result.note(f"not a notebook: invalid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg})")
        return None
    except RecursionError:
        result.note("not a notebook: the JSON is nested too deeply to read")
        return None
    except MemoryError:
        result.note("not a notebook: reading its JSON needs more memory than a grading worker has (--memory)")
        return None
    except PARSE_ERRORS as exc:
        result.note(f"not a notebook: the JSON cannot be read ({type(exc).__name__}: {str(exc)[:120]})")
        return None
    if not isinstance(data, dict):
        result.note(f"not a notebook: the JSON document is {_type_name(data)}, not an object")
        return None
    return data


def code_cells(data: dict, result: NotebookKernels, witnesses: list[Witness] | None = None
               ) -> list[tuple[int, str]] | None:
    """(code cell number, text) of every code cell, checking each field's type as it goes; the
    witnesses check() left in their outputs go to ``witnesses``."""
    version = result.nbformat_version = _version(data)
    if "cells" in data or data.get("nbformat") == 4:
        cells = data.get("cells")
        where = "'cells'"
    else:  # nbformat 3 keeps cells in worksheets, code in 'input'
        result.note(f"notebook format {version} (older than 4; its worksheets' cells were read)")
        worksheets = data.get("worksheets")
        if not isinstance(worksheets, list):
            result.note(f"not a notebook: no 'cells' list, and 'worksheets' is {_type_name(worksheets)}")
            return None
        cells = []
        for ws in worksheets:
            ws_cells = ws.get("cells") if isinstance(ws, dict) else None
            if isinstance(ws_cells, list):
                cells.extend(ws_cells)
        where = "the worksheets' cells"
    if not isinstance(cells, list):
        result.note(f"not a notebook: {where} is {_type_name(cells)}, not a list")
        return None
    out = []
    number = 0
    for index, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            result.note(f"cell {index} is {_type_name(cell)}, not an object; skipped")
            continue
        if cell.get("cell_type") != "code":
            continue
        number += 1
        source = cell.get("source", cell.get("input", ""))
        if isinstance(source, list) and all(isinstance(x, str) for x in source):
            source = "".join(source)
        if not isinstance(source, str):
            result.note(f"code cell {number}: its source is {_type_name(source)}, not text; skipped")
            continue
        out.append((number, source))
        if witnesses is not None:
            witnesses.extend(witnesses_of(number, cell))
    if not out:
        result.note("the notebook has no code cells")
    return out


def extract_kernels(path: str | Path, names: Collection[str] | None = None) -> NotebookKernels:
    """The kernels of a notebook file (all of them, or those named ``names``)."""
    return extract_from_bytes(Path(path).read_bytes(), str(path), names)


def extract_from_bytes(raw: bytes, path: str, names: Collection[str] | None = None) -> NotebookKernels:
    """The kernels of a notebook's bytes (all of them, or only those named ``names``: a notebook
    may define any number of kernels, and the grader needs only the puzzles')."""
    result = NotebookKernels(path)
    data = decode_notebook(raw, result)
    del raw
    witnesses: list[Witness] = []
    cells = code_cells(data, result, witnesses) if data is not None else None
    del data
    if cells is None:
        result.readable = False
        result.finish()
        return result
    evaluator = Evaluator()
    for number, code in cells:
        if len(code) > MAX_CELL_CHARS:
            result.note(f"code cell {number} is {len(code) // 2**10} KiB, longer than the grader "
                        f"reads ({MAX_CELL_CHARS // 2**10} KiB); skipped, and what it assigns is not known")
            evaluator.taint(Unknown(f"what code cell {number} assigns (too long to read)", number, 1))
            continue
        try:
            evaluator.run_cell(number, code)
        except PARSE_ERRORS as exc:
            result.note(f"code cell {number} could not be read ({type(exc).__name__}: "
                        f"{str(exc)[:120] or 'too large or too deeply nested'}); what it assigns is not known")
            evaluator.taint(Unknown(f"what code cell {number} assigns (it could not be read)", number, 1))
    outcome = evaluator.finish()
    for issue in outcome.notes:
        result.note(issue)
    wanted = set(names) if names is not None else None
    for name, build in outcome.kernels.items():
        if wanted is not None and name not in wanted:
            continue
        kernel = _extracted(build)
        result.kernels[name] = kernel
        if kernel.problem is not None:
            result.note(f"kernel '{name}' (code cell {kernel.cell}, line {kernel.line}): {kernel.problem}")
    for w in last_witnesses(witnesses).values():
        k = result.kernels.get(w.kernel)
        if k is not None and k.source is not None:
            note = disagreement(w, k.source, k.header, k.cell, k.line)
            if note is not None:
                result.note(note)
    result.finish()
    return result


#: How a student writes a kernel the grader reads (README: "How the grader reads a notebook").
READABLE_FORM = ('write it as a string literal assigned to a variable, source = """...""", and pass that '
                 "variable to MetalKernel(...)")


def _extracted(build: KernelBuild) -> ExtractedKernel:
    """The grader's kernel from a build the evaluator followed, or why it cannot be read."""
    kernel = ExtractedKernel(build.name, None, "", _names(build.input_names), _names(build.output_names),
                             cell=build.cell, line=build.line)
    source, header = build.source, build.header
    if source is None:
        kernel.problem = "MetalKernel(...) has no source"
    elif isinstance(source, Unknown) or isinstance(header, Unknown):
        part, why = ("source", source) if isinstance(source, Unknown) else ("header", header)
        kernel.problem = (f"cannot be read without running the notebook: its {part} is {why.construct} "
                          f"({why.where}); {READABLE_FORM}")
    elif not isinstance(source, str) or not isinstance(header, str | type(None)):
        kernel.problem = f"its source or header is not a string; {READABLE_FORM}"
    elif len(source) + len(header or "") > MAX_KERNEL_CHARS:
        kernel.problem = (f"its source is {(len(source) + len(header or '')) // 2**10} KiB, longer than the grader "
                          f"accepts ({MAX_KERNEL_CHARS // 2**10} KiB)")
    else:
        kernel.source, kernel.header = source, header or ""
    return kernel


def _names(value: object) -> list[str] | None:
    """input_names/output_names when known (a list or tuple of strings), else None."""
    if isinstance(value, tuple) and len(value) <= 64 and all(isinstance(v, str) for v in value):
        return list(value)
    return None
