"""The architecture holds: import-linter's contracts (pyproject.toml) are kept, a wrong arrow is
caught, and the grader runs without loading the notebook's UI."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")


def lint(package_parent: Path) -> subprocess.CompletedProcess:
    return subprocess.run([LINT, "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=package_parent,
                          capture_output=True, text=True, env={"PYTHONPATH": str(package_parent), "PATH": ""})


@pytest.fixture(scope="module")
def linter() -> str:
    if LINT is None:  # it is a test dependency: missing means the install is broken
        pytest.fail("lint-imports is not installed (pip install -e '.[test]')")
    return LINT


def test_contracts_are_kept(linter) -> None:
    result = lint(ROOT / "lib")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize("module, bad_import, contract", [
    ("host/kernel.py", "from ..explorer.widgets import Explorer", "Package layers"),
    ("diagrams/draw.py", "from ..host.kernel import MetalKernel", "Package layers"),
    ("grading/grade.py", "from ..notebook import book", "Package layers"),
    # One contract per package: its modules' own order (issue 31).
    ("notebook/session.py", "from .problem import MetalProblem", "Notebook face"),
    ("explorer/run_model.py", "from .widgets import Explorer", "Explorer: widgets"),
    ("explorer/run_model.py", "from ..checking import CheckResult", "Explorer model reads"),
    ("diagrams/marks.py", "from .draw import draw_run", "Diagrams"),
    ("host/arrays.py", "from .kernel import MetalKernel", "Host boundary"),
    ("msl/executor/runtime.py", "import mlx.core", "NumPy alone"),
    ("msl/front/parser/expressions.py", "from ...executor import codegen", "Simulator stages"),
    # The front end declares kernel parameters by the language's own words (lang/kernel_parameters.py):
    # it stands below the ABIs that make them.
    ("msl/front/symbols.py", "from ..abi.signature import describe_input", "Simulator stages"),
    # The code generator's parts call each other through self, never by import (issue 31).
    ("msl/executor/codegen/places.py", "from .expressions import Expressions", "Code generator"),
    ("msl/executor/codegen/masks.py", "from .locations import MemLoc", "Code generator"),
    ("grading/extract.py", "from ..diagrams.draw import draw_run", "headless"),
    # The contract rule marks the puzzle model's tests; it must not import the model back (issue 22).
    ("checking/contract.py", "from .puzzle import Puzzle", "Checking"),
])
def test_a_wrong_arrow_is_caught(linter, tmp_path, module, bad_import, contract) -> None:
    shutil.copytree(ROOT / "lib" / "metal_puzzles", tmp_path / "metal_puzzles",
                    ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "metal_puzzles" / module
    target.write_text(target.read_text() + f"\n{bad_import}  # planted\n")
    result = lint(tmp_path)
    assert result.returncode != 0
    assert contract in result.stdout and "BROKEN" in result.stdout


def test_grading_loads_no_ui() -> None:
    code = ("import sys, metal_puzzles.grading.grade, metal_puzzles.grading.tasks; "
            "print(sorted(m for m in ('ipywidgets', 'chalk', 'IPython', 'metal_puzzles.explorer', "
            "'metal_puzzles.diagrams', 'metal_puzzles.notebook') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_simulator_loads_no_mlx() -> None:
    code = "import sys, metal_puzzles.msl; print('mlx' in sys.modules, 'mlx.core' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False False"
