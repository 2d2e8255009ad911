"""The whole package (lib/metal_puzzles: the simulator, msl/, and every layer above it) passes
mypy as configured in pyproject.toml ([tool.mypy]), and that configuration catches what it is
there to catch: a part of the checker calling another's method with the wrong arguments or by a
name its interface does not offer, or a part no longer offering what its interface lists (the parts
reach each other through ``self.chk``, typed by ``front/checker/state.CheckerState`` and the
protocols of ``front/checker/interfaces.py``).
Nothing is exempt but the modules another branch is editing, named in one override."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib  # novermin (3.11 and later)
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "lib/metal_puzzles"
#: Modules whose errors the configuration ignores: none. One added here (and in pyproject.toml's
#: overrides) must say why.
IGNORED: set[str] = set()


def mypy(*args: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("mypy") is None:  # a test dependency: missing means the install is broken
        pytest.fail("mypy is not installed (pip install -e '.[test]')")
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *args],
                          cwd=ROOT, capture_output=True, text=True)


def test_the_package_passes_mypy() -> None:
    result = mypy()
    assert result.returncode == 0, result.stdout + result.stderr
    # Every module of the package is checked, not only the simulator's.
    modules = len(list(PACKAGE.rglob("*.py")))
    assert f"Success: no issues found in {modules} source files" in result.stdout, result.stdout


def test_no_module_is_silenced() -> None:
    with open(ROOT / "pyproject.toml", "rb") as f:
        config = tomllib.load(f)["tool"]["mypy"]
    assert config["files"] == ["lib/metal_puzzles"]
    assert "disable_error_code" not in config
    overrides = config.get("overrides", [])
    assert not [o["module"] for o in overrides if "disable_error_code" in o]
    silenced = {m for o in overrides if o.get("ignore_errors")
                for m in ([o["module"]] if isinstance(o["module"], str) else o["module"])}
    assert silenced == IGNORED


@pytest.mark.parametrize(("module", "original", "broken", "error"), [
    # A method another part of the checker offers, called with an argument of the wrong type.
    ("msl/front/checker/calls.py", "ty = self.chk.types.resolve_type(fd.ret)", "ty = self.chk.types.resolve_type(fd)",
     'Argument 1 to "resolve_type" of "TypeResolutionApi"'),
    # A method the part's interface does not offer.
    ("msl/front/checker/calls.py", "ty = self.chk.types.resolve_type(fd.ret)", "ty = self.chk.types.resolve_typ(fd.ret)",
     'has no attribute "resolve_typ"'),
    # A part that no longer offers what its interface lists (the checker makes it under that interface).
    ("msl/front/checker/typenames.py", "def const_int(self, expr: Any, what: str) -> int:",
     "def const_integer(self, expr: Any, what: str) -> int:",
     'variable has type "TypeResolutionApi")'),
    # A function without annotations (the front end is annotated throughout).
    ("msl/front/checker/structs.py", "def _field(st: StructType, e: ast.Member) -> StructField:",
     "def _field(st, e):", "Function is missing a type annotation"),
    # Above the simulator: a value that may be None handed on as a string (the grader's kernel
    # without source once reached the simulator this way).
    ("checking/wired.py", "owner.kernel(source, ", 'owner.kernel(fields.get("source"), ',
     'Argument 1 to "kernel" of "Puzzle" has incompatible type "Any | None"'),
])
def test_a_broken_seam_is_an_error(tmp_path: Path, module: str, original: str, broken: str, error: str) -> None:
    path = PACKAGE / module
    source = path.read_text()
    assert original in source
    shadow = tmp_path / path.name
    shadow.write_text(source.replace(original, broken, 1))
    result = mypy("--shadow-file", str(path), str(shadow), str(path.parent))
    assert result.returncode == 1, result.stdout + result.stderr
    assert error in result.stdout, result.stdout
