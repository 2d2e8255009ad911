"""The package on every learner's operating system and every Python it declares.

- The declared minimum Python is checked statically (vermin) over everything the project ships
  and runs, so a 3.11-only name cannot slip in where Python 3.10 (Ubuntu 22.04, Gradescope's
  default image) would fail to import it.
- The dependencies give MLX (and a back end it can run on) on Linux, macOS and Windows.
- The learner's path works where the POSIX-only modules are missing (as on Windows): the book's
  first puzzle checks, and `metal-puzzles check` grades, saying plainly what it cannot enforce.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from packaging.requirements import Requirement

try:
    import tomllib  # novermin (3.11 and later; the backport below on 3.10)
except ModuleNotFoundError:  # Python 3.10: the backport (in the test extra)
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
#: Modules that exist only on POSIX systems: the learner's path must not need them.
POSIX_ONLY = ("resource", "fcntl", "termios", "pty", "pwd", "grp", "posix_ipc")


def _pyproject() -> dict:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def _minimum_python() -> str:
    spec = _pyproject()["project"]["requires-python"]
    assert spec.startswith(">="), spec
    return spec[2:]


def test_nothing_needs_a_newer_python_than_the_declared_minimum():
    minimum = _minimum_python()
    # vermin's console script, beside this Python (it has no `python -m` entry). `# novermin` marks
    # a line that is only reached on a newer Python (a version check or an ImportError fallback).
    vermin = Path(sys.executable).with_name("vermin.exe" if os.name == "nt" else "vermin")
    done = subprocess.run(
        [str(vermin), f"--target={minimum}-", "--violations", "--no-tips", "--eval-annotations",
         "--backport", "typing", "lib", "tools", "benchmarks", "tests", ".ci/wheel-check"],
        cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


PLATFORMS = {
    "Linux": {"sys_platform": "linux", "platform_system": "Linux"},
    "macOS": {"sys_platform": "darwin", "platform_system": "Darwin"},
    "Windows": {"sys_platform": "win32", "platform_system": "Windows"},
}
#: What MLX's own wheels need besides `mlx` to compute on each system: its CPU build on Linux and
#: Windows (on Linux through mlx's `cpu` extra, which names it for Linux only), Metal on macOS
#: (a dependency of the mlx wheel itself there).
BACK_END = {"Linux": "mlx-cpu", "macOS": None, "Windows": "mlx-cpu"}


def _requirements_on(platform: str, python: str) -> dict[str, Requirement]:
    env = {**PLATFORMS[platform], "python_version": python, "python_full_version": f"{python}.0",
           "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}
    out = {}
    for line in _pyproject()["project"]["dependencies"]:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate(env):
            out[req.name] = req
    return out


@pytest.mark.parametrize("python", ["3.10", "3.11", "3.12", "3.13", "3.14"])
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_every_system_and_python_gets_mlx_and_a_back_end(platform, python):
    reqs = _requirements_on(platform, python)
    assert "mlx" in reqs, f"pip install on {platform} with Python {python} would not install MLX"
    backend = BACK_END[platform]
    if backend is not None:
        # Either named directly or through mlx's `cpu` extra (which mlx itself limits to Linux).
        through_extra = "cpu" in reqs["mlx"].extras and platform == "Linux"
        assert backend in reqs or through_extra, (
            f"on {platform}, MLX has no back end to run on without {backend}")
    if python == "3.10":
        assert "tomli" in reqs, "Python 3.10 has no tomllib: the grader's points files need tomli"


def test_mlx_cpu_extra_is_not_relied_on_where_mlx_limits_it():
    # mlx's wheels say `mlx-cpu; platform_system == "Linux" and extra == "cpu"`: on Windows the
    # extra installs nothing, so the CPU build must be named on its own there.
    win = _requirements_on("Windows", "3.12")
    assert "mlx-cpu" in win and not win["mlx"].extras


def _blocking_posix_only(tmp_path: Path) -> dict[str, str]:
    """An environment whose Pythons (this one and every process it spawns) cannot import the
    POSIX-only modules, as on Windows: a sitecustomize on PYTHONPATH makes each import fail."""
    site = tmp_path / "no_posix"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(f"""
        import sys
        for name in {POSIX_ONLY!r}:
            sys.modules[name] = None  # 'import name' now raises ImportError
    """))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def test_the_learners_path_needs_no_posix_only_module(tmp_path):
    env = _blocking_posix_only(tmp_path)
    script = textwrap.dedent("""
        import sys
        import metal_puzzles
        from metal_puzzles import MetalProblem  # noqa: F401 (the notebook's imports)
        from metal_puzzles.checking.case_runner import check_source
        from metal_puzzles.puzzles import get_puzzle, solution_source
        puzzle = get_puzzle("map")
        result = check_source(puzzle, solution_source(puzzle))
        assert result.passed, result.report()
        blocked = [m for m in {blocked!r} if sys.modules.get(m) is not None]
        assert not blocked, blocked
        print("passed")
    """).format(blocked=POSIX_ONLY)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "passed" in done.stdout, done.stdout + done.stderr


def test_check_grades_without_posix_only_modules_and_says_what_it_cannot_enforce(tmp_path):
    from metal_puzzles.notebook.book import packaged_notebook

    notebook = tmp_path / "puzzles.ipynb"
    notebook.write_bytes(packaged_notebook().read_bytes())
    env = _blocking_posix_only(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "metal_puzzles.cli", "check", str(notebook), "--workers", "1"],
        env=env, capture_output=True, text=True, cwd=tmp_path)
    # The book as written attempts nothing: check exits FAILED (1), after grading every puzzle.
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "memory limit is not enforced on this system" in done.stderr, done.stderr
