"""The simulator (msl/) passes mypy as configured in pyproject.toml ([tool.mypy]), and that
configuration catches what it is there to catch: a checker mixin calling another's method with
the wrong arguments or by a name none of them defines (the mixins share one ``self``, typed
by ``front/checker/state.CheckerState``)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKER = ROOT / "lib/metal_puzzles/msl/front/checker"



def mypy(*args: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("mypy") is None:  # a test dependency: missing means the install is broken
        pytest.fail("mypy is not installed (pip install -e '.[test]')")
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *args],
                          cwd=ROOT, capture_output=True, text=True)


def test_the_simulator_passes_mypy() -> None:
    result = mypy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout


@pytest.mark.parametrize(("module", "original", "broken", "error"), [
    # A method another mixin defines, called with an argument of the wrong type.
    ("calls.py", "ty = self.resolve_type(fd.ret)", "ty = self.resolve_type(fd)", 'Argument 1 to "resolve_type"'),
    # A method no mixin defines.
    ("calls.py", "ty = self.resolve_type(fd.ret)", "ty = self.resolve_typ(fd.ret)", 'has no attribute "resolve_typ"'),
    # A function without annotations (the front end is annotated throughout).
    ("structs.py", "def _field(st: StructType, e: ast.Member) -> StructField:", "def _field(st, e):",
     "Function is missing a type annotation"),
])
def test_a_broken_seam_is_an_error(tmp_path: Path, module: str, original: str, broken: str, error: str) -> None:
    source = (CHECKER / module).read_text()
    assert original in source
    shadow = tmp_path / module
    shadow.write_text(source.replace(original, broken, 1))
    result = mypy("--shadow-file", str(CHECKER / module), str(shadow), str(CHECKER))
    assert result.returncode == 1, result.stdout + result.stderr
    assert error in result.stdout, result.stdout
