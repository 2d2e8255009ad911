"""Second red team, instructor mistakes: a limit, seed, points file or journal that cannot be
meant is refused before grading (exit 2) with a message that names it, never accepted quietly,
never a traceback."""

from __future__ import annotations

import json

import pytest

from metal_puzzles.cli import main
from metal_puzzles.grading.journal import Journal, RunSettings
from metal_puzzles.version import __version__

from .conftest import write_nb


@pytest.fixture()
def one(tmp_path):
    return write_nb(tmp_path / "alice.ipynb", [])


@pytest.mark.parametrize("option, value", [
    ("--seed", "-1"), ("--seed", str(2**40)), ("--timeout", "0"), ("--timeout", "nan"), ("--timeout", "-3"),
    ("--timeout", "inf"), ("--max-steps", "-1"), ("--max-steps", "0"), ("--read-timeout", "0"),
    ("--max-notebook-size", "-1"), ("--memory", "-5"), ("--workers", "0"),
])
def test_a_limit_that_cannot_be_meant_is_refused(capsys, tmp_path, one, option, value) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["grade", str(one), "--out", str(tmp_path / "out"), "--quiet", f"{option}={value}"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert option in err and value in err
    assert not (tmp_path / "out").exists()  # refused before anything was written


@pytest.mark.parametrize("text, says", [
    ("[points]\nmapp = 2\n", "'mapp' is not a puzzle of the book (did you mean 'map'?)"),
    ("points = 3\n", "'points' must be a table"),
    ("[points]\nmap = nan\n", "[points] map must be a finite number of at least 0"),
    ("[points]\nmap = inf\n", "[points] map must be a finite number of at least 0"),
    ("[points]\ndefault = -1\n", "[points] default must be a finite number of at least 0"),
    ("[points]\nmap = \"two\"\n", "[points] map must be a number"),
    ("[partial]\nover_budget = 1.5\n", "over_budget must be between 0 and 1"),
    ("[partial]\nover_budget = nan\n", "over_budget must be a finite number"),
    ("[pionts]\nmap = 2\n", "unknown key(s) 'pionts'"),
    ("[points\n", "cannot read the points file"),
])
def test_a_points_file_with_a_mistake_is_refused(capsys, tmp_path, one, text, says) -> None:
    points = tmp_path / "points.toml"
    points.write_text(text, encoding="utf-8")
    status = main(["grade", str(one), "--out", str(tmp_path / "out"), "--quiet", "--points", str(points)])
    assert status == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def _journal_with(out, *lines: str) -> None:
    out.mkdir()
    j = Journal.create(out, RunSettings(7, 20_000, __version__))
    with open(j.path, "a", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)


GOOD = {"type": "student", "file": "/x.ipynb", "sha256": "0", "complete": False, "issues": [], "puzzles": {}}


@pytest.mark.parametrize("lines, says", [
    (["[1, 2, 3]"], "line 2 is not a student record"),
    ([json.dumps({"type": "student", "file": 5})], "('file' must be str, got 5)"),
    ([json.dumps(GOOD), json.dumps({**GOOD, "puzzles": {"map": 3}})], "line 3 is not a student record of this grader (the "
                                                                       "result of 'map'"),
    ([json.dumps({**GOOD, "puzzles": {"no_such_puzzle": {"status": "passed"}}})], "not a puzzle of this book"),
    ([json.dumps({**GOOD, "complete": True})], "a complete record must hold every puzzle"),
    ([json.dumps({**GOOD, "issues": [1]})], "'issues' must be a list of strings"),
    (["{not json", json.dumps(GOOD)], "line 2 is damaged"),
    ([json.dumps({"type": "notes", "text": "mine"})], "line 2 is not a student record"),
])
def test_a_damaged_or_foreign_journal_is_refused_on_resume(capsys, tmp_path, one, lines, says) -> None:
    out = tmp_path / "out"
    _journal_with(out, *lines)
    status = main(["grade", str(one), "--out", str(out), "--quiet", "--resume"])
    assert status == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


@pytest.mark.parametrize("header", [
    {"type": "run", "format": 1, "seed": "7", "max_steps": 100, "version": "x"},
    {"type": "run", "format": 1, "seed": 7, "max_steps": -1, "version": "x"},
    {"type": "run", "format": 1, "seed": 7, "max_steps": 100},
])
def test_a_damaged_run_record_is_refused_on_resume(capsys, tmp_path, one, header) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "journal.jsonl").write_text(json.dumps(header) + "\n", encoding="utf-8")
    assert main(["grade", str(one), "--out", str(out), "--quiet", "--resume"]) == 2
    assert "line 1, the run record" in capsys.readouterr().err
