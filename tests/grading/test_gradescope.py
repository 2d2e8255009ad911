"""The Gradescope autograder: the zip built by ``metal-puzzles autograder``, unpacked into a
temporary root as Gradescope lays it out (``METAL_PUZZLES_AUTOGRADER_ROOT``), its
``run_autograder`` run on solved, template and hostile submissions (with this environment on
PATH instead of setup.sh's install), and every results.json checked field by field against
Gradescope's format (https://gradescope-autograders.readthedocs.io/en/latest/specs/)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from importlib.resources import files
from pathlib import Path

import pytest

from metal_puzzles.cli import main
from metal_puzzles.grading.gradescope import _installed_distribution, _repack
from metal_puzzles.puzzles import PUZZLES, solution_header
from metal_puzzles.version import __version__

from .conftest import KERNEL_PUZZLES, MAP_OK, ZIP_WRONG, kernel_cell, solution, write_nb

POINTS = "[points]\ndefault = 1\nmap = 3\n\n[partial]\nover_budget = 0.5\n"
MAX_TOTAL = len(PUZZLES) + 2

#: Gradescope's fields (top level and per test), and the values its enumerations take.
TOP_FIELDS = {"score", "execution_time", "output", "output_format", "visibility", "stdout_visibility",
              "extra_data", "tests", "leaderboard"}
TEST_FIELDS = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format",
               "tags", "visibility", "extra_data"}
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}


def validate(results: dict) -> None:
    """Gradescope's results.json format, field by field, and one test per puzzle of the book."""
    assert set(results) <= TOP_FIELDS, set(results) - TOP_FIELDS
    assert isinstance(results["score"], float) and 0 <= results["score"] <= MAX_TOTAL
    assert isinstance(results["execution_time"], int | float) and results["execution_time"] >= 0
    assert isinstance(results["output"], str) and results["output"]
    assert results["visibility"] in VISIBILITIES and results["stdout_visibility"] in VISIBILITIES
    tests = results["tests"]
    assert [t["name"] for t in tests] == [f"{p.number}. {p.title}" for p in PUZZLES]
    for t, p in zip(tests, PUZZLES, strict=True):
        assert set(t) <= TEST_FIELDS, set(t) - TEST_FIELDS
        assert isinstance(t["score"], float) and isinstance(t["max_score"], float)
        assert 0 <= t["score"] <= t["max_score"] == (3.0 if p.id == "map" else 1.0)
        assert t["status"] in {"passed", "failed"} and (t["status"] == "passed") == (t["score"] == t["max_score"])
        assert t["number"] == p.number and isinstance(t["output"], str) and t["output"].startswith("Result: ")
        assert t["output_format"] in FORMATS and t["visibility"] in VISIBILITIES
        assert t["output"].isprintable() or all(ch.isprintable() or ch == "\n" for ch in t["output"])
    assert results["score"] == pytest.approx(sum(t["score"] for t in tests))


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("build")
    (d / "points.toml").write_text(POINTS)
    zip_path = d / "autograder.zip"
    assert main(["autograder", "--out", str(zip_path), "--points", str(d / "points.toml"), "--seed", "11"]) == 0
    return zip_path


def unpack(zip_path: Path, root: Path) -> None:
    """As Gradescope does: the zip's files in root/source, run_autograder copied to the root."""
    with zipfile.ZipFile(zip_path) as z:
        z.extractall(root / "source")
        for info in z.infolist():  # extractall drops the modes
            os.chmod(root / "source" / info.filename, (info.external_attr >> 16) & 0o777)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()


def run_autograder(root: Path) -> dict:
    env = dict(os.environ, METAL_PUZZLES_AUTOGRADER_ROOT=str(root),
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    done = subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    results = json.loads((root / "results" / "results.json").read_text(encoding="ascii"))
    validate(results)
    return results


def test_the_zip_holds_what_gradescope_runs(autograder_zip):
    with zipfile.ZipFile(autograder_zip) as z:
        names = set(z.namelist())
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in z.infolist()}
        settings = json.loads(z.read("metal_puzzles_autograder.json"))
        assert z.read("points.toml").decode() == POINTS
        setup = z.read("setup.sh").decode()
    wheels = [n for n in names if n.startswith("wheels/")]
    assert {"setup.sh", "run_autograder", "points.toml"} <= names and len(wheels) == 1
    assert wheels[0].endswith(".whl") and "metal_puzzles-" in wheels[0]
    assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111
    assert settings == {"secret": "11", "version": __version__}
    assert "pip install" in setup and "wheels/" in setup


def test_a_solved_notebook_gets_every_point(autograder_zip, tmp_path):
    unpack(autograder_zip, tmp_path)
    cells, seen = [], set()
    for p in KERNEL_PUZZLES:
        if p.kernel_name not in seen:
            seen.add(p.kernel_name)
            # Part III's occupancy puzzle is solved in its header (the threadgroup size).
            cells.append(kernel_cell(p.kernel_name, solution(p.id), solution_header(p)))
    write_nb(tmp_path / "submission" / "puzzles.ipynb", cells)
    results = run_autograder(tmp_path)
    assert results["score"] == MAX_TOTAL
    assert all(t["status"] == "passed" and t["output"] == "Result: passed." for t in results["tests"])
    assert f"{MAX_TOTAL} / {MAX_TOTAL} points" in results["output"]


def test_the_book_as_shipped_scores_nothing_and_says_what_to_fix(autograder_zip, tmp_path):
    unpack(autograder_zip, tmp_path)
    shutil.copy(files("metal_puzzles") / "notebooks" / "puzzles.ipynb", tmp_path / "submission" / "puzzles.ipynb")
    results = run_autograder(tmp_path)
    assert results["score"] == 0
    map_test = results["tests"][0]
    assert map_test["status"] == "failed" and "What to fix:" in map_test["output"]


def test_a_partly_solved_notebook_among_others(autograder_zip, tmp_path):
    unpack(autograder_zip, tmp_path)
    write_nb(tmp_path / "submission" / "puzzles.ipynb", [kernel_cell("map", MAP_OK), kernel_cell("zip", ZIP_WRONG)])
    write_nb(tmp_path / "submission" / "scratch.ipynb", [kernel_cell("zip", solution("zip"))])
    results = run_autograder(tmp_path)
    assert results["score"] == 3.0  # map only: puzzles.ipynb is the one graded
    assert "graded puzzles.ipynb, not scratch.ipynb" in results["output"]
    zip_test = results["tests"][1]
    assert zip_test["status"] == "failed" and "wrong output" in zip_test["output"]


@pytest.mark.parametrize("hostile", ["endless-loop", "broken-json", "link-outside", "fifo", "nothing", "binary"])
def test_a_hostile_submission_still_gets_a_valid_results_json(autograder_zip, tmp_path, hostile):
    unpack(autograder_zip, tmp_path)
    sub = tmp_path / "submission"
    if hostile == "endless-loop":
        endless = "uint i = 0;\nwhile (true) { i++; }\nout[0] = i;\n"
        write_nb(sub / "puzzles.ipynb", [kernel_cell("map", endless), kernel_cell("zip", "}}}")])
    elif hostile == "broken-json":
        (sub / "puzzles.ipynb").write_bytes(b'{"cells": [' * 100_000)
    elif hostile == "link-outside":
        (sub / "puzzles.ipynb").symlink_to("/etc/passwd")
    elif hostile == "fifo":
        os.mkfifo(sub / "puzzles.ipynb")
    elif hostile == "binary":
        (sub / "puzzles.ipynb").write_bytes(bytes(range(256)) * 100)
    results = run_autograder(tmp_path)
    assert results["score"] == 0.0
    if hostile == "endless-loop":
        assert "step-budget" in results["tests"][0]["output"]
    elif hostile == "nothing":
        assert "no notebook" in results["output"]
    else:
        assert "could not be read" in results["tests"][0]["output"] or "not read" in results["tests"][0]["output"]


def test_a_broken_autograder_install_is_a_zero_with_the_reason_not_a_crash(autograder_zip, tmp_path):
    unpack(autograder_zip, tmp_path)
    (tmp_path / "source" / "metal_puzzles_autograder.json").write_text("{not json")
    write_nb(tmp_path / "submission" / "puzzles.ipynb", [kernel_cell("map", MAP_OK)])
    results = run_autograder(tmp_path)
    assert results["score"] == 0.0 and "could not grade this submission" in results["output"]
    assert "not your kernel's fault" in results["output"]


def test_an_installed_package_repacks_into_the_same_wheel(autograder_zip, tmp_path):
    """The zip's wheel installed (without its dependencies) and repacked holds the same files."""
    with zipfile.ZipFile(autograder_zip) as z:
        wheel_name = next(n for n in z.namelist() if n.startswith("wheels/"))
        (tmp_path / "w.whl").write_bytes(z.read(wheel_name))
    wheel = tmp_path / Path(wheel_name).name
    (tmp_path / "w.whl").rename(wheel)
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile", "--target",
                    str(target), str(wheel)], check=True, capture_output=True)
    dist = next(metadata.distributions(path=[str(target)]))
    (tmp_path / "out").mkdir()
    repacked = _repack(dist, tmp_path / "out")
    with zipfile.ZipFile(wheel) as a, zipfile.ZipFile(repacked) as b:
        assert sorted(a.namelist()) == sorted(b.namelist())
        for name in a.namelist():
            if not name.endswith("RECORD"):
                assert a.read(name) == b.read(name), name


def test_the_wheel_comes_from_the_installed_package_not_a_checkouts_egg_info(monkeypatch):
    # A source checkout's lib/ holds metal_puzzles.egg-info (setuptools' notes, no RECORD); with
    # lib/ first on sys.path importlib.metadata finds it first, and it cannot make a wheel.
    lib = Path(__file__).resolve().parents[2] / "lib"
    monkeypatch.syspath_prepend(str(lib))
    dist = _installed_distribution()
    assert dist.read_text("RECORD") is not None and dist.version == __version__


def test_feedback_on_a_hidden_test_keeps_its_data_hidden(autograder_zip, tmp_path):
    """Second red team: the failing hidden test's expected array was printed, and with one seed per
    zip a kernel hard-coding it passed on a later submission."""
    unpack(autograder_zip, tmp_path)
    visible_only = "uint i = thread_position_in_grid.x;\nout[i] = (a_shape[0] == 4) ? a[i] + 10 : a[i];\n"
    write_nb(tmp_path / "submission" / "puzzles.ipynb", [kernel_cell("map", visible_only)])
    out = run_autograder(tmp_path)["tests"][0]["output"]
    assert out.startswith("Result: wrong output.") and "hidden test" in out and "stay hidden" in out
    assert "Spec" not in out and "Yours" not in out


def test_a_submission_beside_thousands_of_files_gets_a_bounded_summary(autograder_zip, tmp_path):
    unpack(autograder_zip, tmp_path)
    sub = tmp_path / "submission"
    write_nb(sub / "puzzles.ipynb", [kernel_cell("map", MAP_OK)])
    (sub / "junk").mkdir()
    for n in range(3000):
        (sub / "junk" / f"{'x' * 100}{n}.ipynb").write_text("{}")
    results = run_autograder(tmp_path)
    assert results["score"] == 3.0
    assert len(results["output"]) < 10_000 and "and 2990 more" in results["output"]
