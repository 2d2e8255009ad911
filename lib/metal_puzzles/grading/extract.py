"""Finding a learner's kernels in a notebook without running any of its Python.

The notebook's code cells are parsed with Python's ``ast`` module (parsing never executes code).
For every ``MetalKernel(...)`` call we read its ``name``, ``input_names``, ``output_names``,
``source`` and ``header`` when they are string (list) literals, either written in the call or
held in a variable assigned a literal earlier in the same function or at the notebook's top
level. Later definitions replace earlier ones, as they would when the notebook runs top to
bottom. Anything else (a source built at run time) is recorded as missing, with the reason.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

_FIELDS = ("name", "input_names", "output_names", "source", "header")


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


class _Unresolved(Exception):
    pass


def read_notebook_cells(path: Path, issues: list[str]) -> tuple[list[str], str] | None:
    """The code cells' text, or None if the file cannot be read as a notebook at all."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        issues.append(f"cannot read the file: {exc.strerror or exc}")
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        issues.append(f"the file is not valid UTF-8 (byte {exc.start}); undecodable bytes were replaced")
        text = raw.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        issues.append(f"not a notebook: invalid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg})")
        return None
    if not isinstance(data, dict):
        issues.append("not a notebook: the JSON document is not an object")
        return None
    version = f"{data.get('nbformat', '?')}.{data.get('nbformat_minor', '?')}"
    try:
        nb = nbformat.reads(text, as_version=4)
        cells = [c.get("source", "") for c in nb.get("cells", []) if c.get("cell_type") == "code"]
    except Exception as exc:  # nbformat rejects it; fall back to reading the cells ourselves
        issues.append(f"notebook format {version} could not be converted by nbformat ({type(exc).__name__}); "
                      "read its cells directly")
        cells = _cells_by_hand(data)
    if data.get("nbformat") != 4:
        issues.append(f"notebook format {version} (converted to 4)")
    sources = []
    for c in cells:
        if isinstance(c, list):
            c = "".join(str(x) for x in c)
        sources.append(c if isinstance(c, str) else "")
    if not sources:
        issues.append("the notebook has no code cells")
    return sources, version


def _cells_by_hand(data: dict) -> list:
    cells = data.get("cells")
    if cells is None:  # nbformat 3 keeps cells in worksheets, code in 'input'
        cells = [c for ws in data.get("worksheets", []) or [] for c in (ws.get("cells") or [])]
    out = []
    for c in cells or []:
        if isinstance(c, dict) and c.get("cell_type") == "code":
            out.append(c.get("source", c.get("input", "")))
    return out


def _strip_magics(code: str) -> str:
    """IPython lines (%magic, !shell, ?help) are not Python; blank them, keeping line numbers."""
    lines = []
    for line in code.split("\n"):
        s = line.lstrip()
        lines.append("" if s.startswith(("%", "!", "?")) or s.endswith("?") and s[:-1].isidentifier() else line)
    return "\n".join(lines)


def extract_kernels(path: str | Path) -> NotebookKernels:
    path = Path(path)
    result = NotebookKernels(str(path))
    read = read_notebook_cells(path, result.issues)
    if read is None:
        result.readable = False
        return result
    sources, result.nbformat_version = read
    module_scope: dict[str, ast.expr] = {}
    for index, code in enumerate(sources, start=1):
        try:
            tree = ast.parse(_strip_magics(code))
        except SyntaxError as exc:
            result.issues.append(f"code cell {index} is not valid Python (line {exc.lineno}: {exc.msg}); skipped")
            continue
        except (ValueError, RecursionError, MemoryError) as exc:
            result.issues.append(f"code cell {index} could not be parsed ({type(exc).__name__}); skipped")
            continue
        _Walker(result, index, module_scope).visit_body(tree.body, None)
    return result


class _Walker:
    def __init__(self, result: NotebookKernels, cell: int, module_scope: dict) -> None:
        self.result = result
        self.cell = cell
        self.module_scope = module_scope

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
                    scope[target.id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            scope[stmt.target.id] = stmt.value
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
            self.result.issues.append(f"code cell {self.cell}, line {call.lineno}: MetalKernel(...) without a name")
            return
        try:
            name = self.resolve(args["name"], local, str)
        except _Unresolved:
            self.result.issues.append(f"code cell {self.cell}, line {call.lineno}: the kernel name is not a string "
                                      "literal; this kernel cannot be graded")
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
