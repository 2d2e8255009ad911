"""ARCHITECTURE.md is a map that cannot rot: every path it names exists, and every module of the
package is named in it, so a move, a rename or a new module that leaves the map behind fails here.

The map's rule for paths: a backquoted span with a '/' or a file suffix is a path, relative to
lib/metal_puzzles/ unless it starts at the repository's top (tests/, benchmarks/, tools/, ...); a
trailing '/' names a folder; ``<id>`` stands for any one name (``puzzles/part5/<id>.py``). The
puzzle modules of a part's folder are named by the folder and the recipe for a new puzzle, not one
by one."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "lib" / "metal_puzzles"
MAP = ROOT / "ARCHITECTURE.md"
#: First components (or whole names) that place a path at the repository's top, not in the package.
REPO_TOP = {"tests", "benchmarks", "tools", "solutions", "imgs", ".ci", "lib",
            "README.md", "ARCHITECTURE.md", "pyproject.toml", "setup.py", "puzzles.ipynb"}
SUFFIXES = (".py", ".md", ".toml", ".json", ".metal", ".ipynb", ".svg", ".txt")
#: Folders whose modules are the book's puzzles: one each, named by the folder and the recipe.
PUZZLE_FOLDERS = re.compile(r"^puzzles/(part\d+|debugging)/")


def is_path(span: str) -> bool:
    """A span names a path when it has a '/' or ends in a file suffix (a bare suffix, `.metal`, does not)."""
    if not re.fullmatch(r"[\w.<>/-]+", span):
        return False
    return "/" in span or (span.endswith(SUFFIXES) and not span.startswith("."))


def mentioned_paths(text: str) -> list[str]:
    """The paths the map names: backquoted spans outside fenced blocks that look like paths."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return [s for s in re.findall(r"`([^`\s]+)`", prose) if is_path(s)]


def resolve(path: str) -> list[Path]:
    """What a named path stands for: the files or folders it matches (none: it does not exist)."""
    base = ROOT if path.split("/")[0] in REPO_TOP else PACKAGE
    pattern = re.sub(r"<[^>]+>", "*", path.rstrip("/"))
    matches = list(base.glob(pattern)) if "*" in pattern else [base / pattern]
    wants_folder = path.endswith("/")
    return [m for m in matches if (m.is_dir() if wants_folder else m.is_file())]


def test_the_path_rule_tells_paths_from_other_code():
    text = ("`msl/front/ast.py` `tests/codebase/` `puzzles/part5/<id>.py` `checking.run_case` "
            "`metal::x` `mx.fast.cuda_kernel` `pytest -m e2e` `.metal` `puzzles.ipynb`\n```text\n`not/this.py`\n```\n")
    assert mentioned_paths(text) == ["msl/front/ast.py", "tests/codebase/", "puzzles/part5/<id>.py", "puzzles.ipynb"]
    assert resolve("msl/front/ast.py") == [PACKAGE / "msl" / "front" / "ast.py"]
    assert resolve("tests/codebase/") == [ROOT / "tests" / "codebase"]
    assert resolve("msl/front/") and not resolve("msl/front")  # a folder is named with its '/'
    assert not resolve("msl/front/no_such_module.py")
    assert PACKAGE / "puzzles" / "__init__.py" not in resolve("puzzles/<id>/")


def test_every_path_the_map_names_exists():
    missing = sorted({p for p in mentioned_paths(MAP.read_text(encoding="utf-8")) if not resolve(p)})
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"


def test_every_module_of_the_package_is_on_the_map():
    named = {p for p in mentioned_paths(MAP.read_text(encoding="utf-8")) if "<" not in p}
    modules = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py") if p.name != "__init__.py")
    unnamed = [m for m in modules if m not in named and not PUZZLE_FOLDERS.match(m)]
    assert not unnamed, (f"modules ARCHITECTURE.md does not name (add each, with what it holds, under its "
                         f"package's heading): {unnamed}")
