"""Finding a learner's kernels in a notebook without running any of its Python.

The notebook's code cells are parsed with Python's ``ast`` module (parsing never executes code).
For every ``MetalKernel(...)`` call we read its ``name``, ``input_names``, ``output_names``,
``source`` and ``header`` when they are string (list) literals, either written in the call or
held in a variable assigned a literal earlier in the same function or at the notebook's top
level. Later definitions replace earlier ones, as they would when the notebook runs top to
bottom. Anything else (a source built at run time) is recorded as missing, with the reason.

A notebook is untrusted data: any field may have any JSON type, nesting may be deep, cells huge.
Every structure is type-checked before use, cells and kernels larger than any real one are not
parsed, and every failure to parse (invalid JSON, too deep, too large, not Python) becomes an
issue of that notebook with its reason, never an exception. The grader runs this in a worker
process under its memory and time limits (``tasks.ReadTask``), since parsing costs memory.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

_FIELDS = ("name", "input_names", "output_names", "source", "header")

#: A code cell longer than this is not parsed. A cell with a kernel is a few KiB; parsing costs
#: about 500 bytes of memory and 5 µs per character, so this bounds one cell to about 130 MiB
#: and a second or two.
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


class _Unresolved(Exception):
    pass


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


def code_cells(data: dict, result: NotebookKernels) -> list[tuple[int, str]] | None:
    """(code cell number, text) of every code cell, checking each field's type as it goes."""
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
    if not out:
        result.note("the notebook has no code cells")
    return out


def _strip_magics(code: str) -> str:
    """IPython lines (%magic, !shell, ?help) are not Python; blank them, keeping line numbers."""
    lines = []
    for line in code.split("\n"):
        s = line.lstrip()
        lines.append("" if s.startswith(("%", "!", "?")) or s.endswith("?") and s[:-1].isidentifier() else line)
    return "\n".join(lines)


def extract_kernels(path: str | Path, names: Collection[str] | None = None) -> NotebookKernels:
    """The kernels of a notebook file (all of them, or those named ``names``)."""
    return extract_from_bytes(Path(path).read_bytes(), str(path), names)


def extract_from_bytes(raw: bytes, path: str, names: Collection[str] | None = None) -> NotebookKernels:
    """The kernels of a notebook's bytes (all of them, or only those named ``names``: a notebook
    may define any number of kernels, and the grader needs only the puzzles')."""
    result = NotebookKernels(path)
    data = decode_notebook(raw, result)
    del raw
    cells = code_cells(data, result) if data is not None else None
    del data
    if cells is None:
        result.readable = False
        result.finish()
        return result
    module_scope: dict[str, ast.expr] = {}
    wanted = set(names) if names is not None else None
    for number, code in cells:
        if len(code) > MAX_CELL_CHARS:
            result.note(f"code cell {number} is {len(code) // 2**10} KiB, longer than the grader "
                        f"reads ({MAX_CELL_CHARS // 2**10} KiB); skipped")
            continue
        try:
            tree = ast.parse(_strip_magics(code))
        except SyntaxError as exc:
            result.note(f"code cell {number} is not valid Python (line {exc.lineno}: {exc.msg}); skipped")
            continue
        except MemoryError:
            result.note(f"code cell {number} needs more memory to parse than a grading worker has; skipped")
            continue
        except PARSE_ERRORS as exc:
            result.note(f"code cell {number} could not be parsed ({type(exc).__name__}: "
                        f"{str(exc)[:120] or 'too large or too deeply nested'}); skipped")
            continue
        try:
            _Walker(result, number, module_scope, wanted).visit_body(tree.body, None)
        except PARSE_ERRORS as exc:
            result.note(f"code cell {number} is too deeply nested to read ({type(exc).__name__}); "
                        "kernels after that point in it were skipped")
        del tree  # one cell's syntax tree at a time
    for k in result.kernels.values():
        if k.source is not None and len(k.source) + len(k.header) > MAX_KERNEL_CHARS:
            size = len(k.source) + len(k.header)
            k.source, k.header = None, ""
            k.problem = (f"its source is {size // 2**10} KiB, longer than the grader accepts "
                         f"({MAX_KERNEL_CHARS // 2**10} KiB)")
    result.finish()
    return result


class _Walker:
    def __init__(self, result: NotebookKernels, cell: int, module_scope: dict,
                 wanted: Collection[str] | None = None) -> None:
        self.result = result
        self.cell = cell
        self.module_scope = module_scope
        self.wanted = wanted  # kernel names worth keeping (None: all)

    def visit_body(self, body: list[ast.stmt], local: dict | None) -> None:
        for stmt in body:
            self.visit_stmt(stmt, local)

    def visit_stmt(self, stmt: ast.stmt, local: dict | None) -> None:
        scope = self.module_scope if local is None else local
        # Calls anywhere in this statement (outside nested functions) are MetalKernel candidates.
        for call in _calls_in(stmt):
            self.visit_call(call, local)
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    scope[target.id] = _kept(stmt.value)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            scope[stmt.target.id] = _kept(stmt.value)
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            self.visit_body(stmt.body, {})
        elif isinstance(stmt, ast.ClassDef):
            self.visit_body(stmt.body, {})
        elif isinstance(stmt, ast.If | ast.For | ast.While | ast.With | ast.Try):
            for block in ("body", "orelse", "finalbody"):
                self.visit_body(getattr(stmt, block, []) or [], local)
            for handler in getattr(stmt, "handlers", []) or []:
                self.visit_body(handler.body, local)

    def visit_call(self, call: ast.Call, local: dict | None) -> None:
        func = call.func
        fname = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if fname != "MetalKernel":
            return
        args: dict[str, ast.expr] = {}
        for key, value in zip(_FIELDS, call.args, strict=False):
            args[key] = value
        for kw in call.keywords:
            if kw.arg in _FIELDS:
                args[kw.arg] = kw.value
        if "name" not in args:
            self.result.note(f"code cell {self.cell}, line {call.lineno}: MetalKernel(...) without a name")
            return
        try:
            name = self.resolve(args["name"], local, str)
        except _Unresolved:
            self.result.note(f"code cell {self.cell}, line {call.lineno}: the kernel name is not a string "
                             "literal; this kernel cannot be graded")
            return
        if self.wanted is not None and name not in self.wanted:
            return
        kernel = ExtractedKernel(name, None, "", cell=self.cell, line=call.lineno)
        for key in ("input_names", "output_names"):
            if key in args:
                try:
                    kernel.__dict__[key] = self.resolve(args[key], local, list)
                except _Unresolved:
                    pass
        try:
            kernel.source = self.resolve(args["source"], local, str) if "source" in args else None
            if kernel.source is None:
                kernel.problem = "MetalKernel(...) has no source"
        except _Unresolved as exc:
            kernel.problem = (f"its source is {exc} (built when the notebook runs); the grader reads only string "
                              "literals, or variables assigned one")
        if "header" in args:
            try:
                kernel.header = self.resolve(args["header"], local, str)
            except _Unresolved as exc:
                kernel.problem = kernel.problem or f"its header is {exc}; the grader reads only string literals"
        self.result.kernels[name] = kernel

    def resolve(self, node: ast.expr, local: dict | None, kind: type, depth: int = 0):
        if depth > 20:
            raise _Unresolved("defined through too many variables")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and kind is str:
            return node.value
        if isinstance(node, ast.JoinedStr) and kind is str:
            if all(isinstance(v, ast.Constant) for v in node.values):
                return "".join(str(v.value) for v in node.values)
            raise _Unresolved("an f-string with substitutions")
        if isinstance(node, ast.List | ast.Tuple) and kind is list:
            out = []
            for elt in node.elts:
                out.append(self.resolve(elt, local, str, depth + 1))
            return out
        if isinstance(node, ast.Name):
            for scope in ((local or {}), self.module_scope):
                if node.id in scope:
                    return self.resolve(scope[node.id], local if scope is local else None, kind, depth + 1)
            raise _Unresolved(f"the variable '{node.id}', which is never assigned a literal")
        raise _Unresolved("an expression")


def _kept(value: ast.expr) -> ast.expr:
    """What a variable's scope keeps of its value: the value if a kernel could use it (a string,
    a short list of strings, another name), else a stand-in that resolves to "an expression" (so
    that it still replaces an earlier value, without keeping a large syntax tree alive)."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str) or isinstance(value, ast.JoinedStr | ast.Name):
        return value
    if isinstance(value, ast.List | ast.Tuple) and len(value.elts) <= 64 and all(
            isinstance(e, ast.Name) or isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
        return value
    return _NOT_A_LITERAL


_NOT_A_LITERAL = ast.Constant(value=None)


def _calls_in(stmt: ast.stmt):
    """Call nodes in a statement's own expressions (nested statements are visited on their own)."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return
    stack = list(ast.iter_child_nodes(stmt))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt | ast.Lambda):
            continue
        if isinstance(node, ast.Call):
            yield node
        stack.extend(ast.iter_child_nodes(node))
