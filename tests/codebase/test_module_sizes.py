"""Modules and functions a reader can take in at one sitting (issue 31): no module of the package
over 1,000 lines and no function over 100; the offenders are named."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "lib" / "metal_puzzles"
MAX_MODULE_LINES = 1_000
MAX_FUNCTION_LINES = 100

#: Modules allowed to be longer, relative to PACKAGE. None: every oversized module has been split
#: (issue 31); a module added here must say why.
EXEMPT: set[str] = set()


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).as_posix() not in EXEMPT)


def oversized_parts(path: Path, root: Path = PACKAGE) -> list[str]:
    """The module and the functions in it (methods and nested functions included) that are too
    long, as 'where: n lines', named from ``root``."""
    text = path.read_text(encoding="utf-8")
    name = path.relative_to(root).as_posix()
    found = []
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES:
        found.append(f"{name}: {lines} lines")
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    return found


def test_no_module_or_function_is_too_long() -> None:
    offenders = [part for path in _modules() for part in oversized_parts(path)]
    assert not offenders, (f"over {MAX_MODULE_LINES} lines a module or {MAX_FUNCTION_LINES} a function; "
                           "split along its seams:\n" + "\n".join(offenders))


def test_the_exemptions_exist_and_are_still_needed() -> None:
    # An exemption outlives its reason silently otherwise: once a file is split (or moved), the
    # entry must go.
    for name in EXEMPT:
        assert (PACKAGE / name).is_file(), f"{name} is exempt but does not exist; remove it from EXEMPT"
        assert oversized_parts(PACKAGE / name), f"{name} is exempt but no longer too long; remove it from EXEMPT"


def test_a_long_function_and_a_long_module_are_named(tmp_path: Path) -> None:
    def body(n: int) -> str:
        return "".join(f"        x{i} = {i}\n" for i in range(n))

    fits = tmp_path / "fits.py"
    fits.write_text("class C:\n    def f(self):\n" + body(MAX_FUNCTION_LINES - 1))
    too_long = tmp_path / "too_long.py"
    too_long.write_text("class C:\n    def g(self):\n" + body(MAX_FUNCTION_LINES) + "\n" * MAX_MODULE_LINES)
    assert oversized_parts(fits, tmp_path) == []
    assert oversized_parts(too_long, tmp_path) == [f"too_long.py: {MAX_MODULE_LINES + 102} lines",
                                               f"too_long.py:2 g: {MAX_FUNCTION_LINES + 1} lines"]
