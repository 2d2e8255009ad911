"""One copy of the reference solutions and the book, shipped as package data.

The installed ``metal_puzzles.solutions`` must be the top-level solutions/ folder itself (setup.py
maps it), and every file there must be matched by a package-data pattern, or a wheel would leave it
out. ``.ci/wheel-check`` proves the same from a real wheel, byte for byte."""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path

try:
    import tomllib  # novermin (3.11 and later; the backport below on 3.10)
except ModuleNotFoundError:  # Python 3.10: the backport (in the test extra)
    import tomli as tomllib

from metal_puzzles.notebook.book import NOTEBOOK_NAME, packaged_notebook
from metal_puzzles.puzzles import PUZZLES, solution_source
from metal_puzzles.puzzles.catalogue.solution_files import solutions_dir

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"


def _package_data() -> dict[str, list[str]]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]["package-data"]


def _files(folder, prefix: str = "") -> dict[str, bytes]:
    """Every file under the folder (a Path or an installed Traversable), by its path inside it."""
    found: dict[str, bytes] = {}
    for p in folder.iterdir():
        if p.is_file():
            found[prefix + p.name] = p.read_bytes()
        elif p.is_dir() and p.name != "__pycache__":
            found.update(_files(p, f"{prefix}{p.name}/"))
    return found


def test_installed_solutions_are_the_top_level_folder():
    assert _files(solutions_dir()) == _files(SOLUTIONS)


def test_every_solution_file_is_package_data():
    patterns = _package_data()["metal_puzzles.solutions"]
    # __init__.py is the package's module: always included. Every other file, the finale's cells
    # (.py) in the part folders among them, is package data only where a pattern matches it.
    left_out = [name for name in _files(SOLUTIONS)
                if name != "__init__.py" and not any(fnmatch(name, pat) for pat in patterns)]
    assert not left_out, f"add a pattern to [tool.setuptools.package-data] for {left_out}"


def test_every_puzzle_reads_its_solution_from_the_package():
    for p in PUZZLES:
        assert solution_source(p).strip(), p.id


def test_the_book_is_package_data():
    patterns = _package_data()["metal_puzzles"]
    assert any(fnmatch(f"notebooks/{NOTEBOOK_NAME}", pat) for pat in patterns)
    assert packaged_notebook().read_bytes() == (ROOT / NOTEBOOK_NAME).read_bytes()
