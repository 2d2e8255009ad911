"""The journal alone: a line cut short by a crash is dropped, and appending goes on cleanly."""

from __future__ import annotations

import json

import pytest

from metal_puzzles.grading.journal import Journal, JournalError, RunSettings


def test_line_cut_short_is_dropped_and_appending_goes_on(tmp_path) -> None:
    j = Journal.create(tmp_path, RunSettings(seed=5, max_steps=100, version="x"))
    j.append({"file": "/a.ipynb", "sha256": "1", "complete": True, "puzzles": {}})
    j.append({"file": "/b\udce9.ipynb", "sha256": "2", "complete": False, "puzzles": {}})
    with open(j.path, "ab") as f:
        f.write(b'{"type": "student", "file": "/c.ipyn')  # the crash came mid-line
    resumed = Journal.resume(tmp_path)
    assert resumed.settings == RunSettings(5, 100, "x")
    assert set(resumed.records) == {"/a.ipynb", "/b\udce9.ipynb"}  # names round-trip exactly
    resumed.append({"file": "/c.ipynb", "sha256": "3", "complete": True, "puzzles": {}})
    lines = j.path.read_text().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["run", "student", "student", "student"]
    assert set(Journal.resume(tmp_path).records) == {"/a.ipynb", "/b\udce9.ipynb", "/c.ipynb"}


def test_not_a_journal_is_refused(tmp_path) -> None:
    (tmp_path / "journal.jsonl").write_text("hello\n")
    with pytest.raises(JournalError, match="not a grading journal"):
        Journal.resume(tmp_path)
