"""pytest puts ``tests/`` on ``sys.path`` (no ``tests/__init__.py``: the rootdir-relative package
is each top folder), so every folder of tests is importable as a top-level package of its own name:
a shared module is ``support.msl_snippets``, the oracle ``differential.oracle``. A folder named
like a module that is installed or in the standard library would hide it in pytest's process:
``tests/notebook/`` was the package ``notebook`` there, in place of Jupyter's Notebook 7, which the
browser tests and ``metal-puzzles notebook`` start. So the tests of the package's ``notebook/``
are in ``tests/notebook_face/`` (ARCHITECTURE.md), and this test keeps every name free."""

from __future__ import annotations

import importlib.machinery
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def shadowed_modules(tests: Path, path: list[str]) -> list[str]:
    """The folders of ``tests`` importable as packages (an ``__init__.py``) whose name is a module
    of the standard library or one found on ``path`` other than that folder."""
    names = sorted(d.name for d in tests.iterdir() if (d / "__init__.py").is_file())
    others = [p for p in path if Path(p or ".").resolve() != tests]
    return [n for n in names if n in sys.stdlib_module_names
            or importlib.machinery.PathFinder.find_spec(n, others) is not None]


def test_no_folder_of_tests_hides_a_module() -> None:
    assert shadowed_modules(TESTS, sys.path) == []


def test_a_folder_named_like_an_installed_module_is_seen(tmp_path: Path) -> None:
    """The rule is not vacuous: a folder of tests named like pytest itself, or like a module of
    the standard library, is what it finds."""
    for name in ("pytest", "json", "not_a_module_anywhere"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    assert shadowed_modules(tmp_path, [str(tmp_path), *sys.path]) == ["json", "pytest"]
