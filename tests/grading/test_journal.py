"""The journal alone: a line cut short by a crash is dropped, and appending goes on cleanly."""

from __future__ import annotations

import json

import pytest

from metal_puzzles.grading.journal import Journal, JournalError, RunSettings


def _record(file: str, sha256: str) -> dict:
    return {"file": file, "sha256": sha256, "complete": False, "issues": [], "puzzles": {}}


def test_line_cut_short_is_dropped_and_appending_goes_on(tmp_path) -> None:
    j = Journal.create(tmp_path, RunSettings(seed=5, max_steps=100, version="x"))
    j.append(_record("/a.ipynb", "1"))
    j.append(_record("/b\udce9.ipynb", "2"))
    with open(j.path, "ab") as f:
        f.write(b'{"type": "student", "file": "/c.ipyn')  # the crash came mid-line
    resumed = Journal.resume(tmp_path)
    assert resumed.settings == RunSettings(5, 100, "x")
    assert set(resumed.records) == {"/a.ipynb", "/b\udce9.ipynb"}  # names round-trip exactly
    resumed.append(_record("/c.ipynb", "3"))
    lines = j.path.read_text().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["run", "student", "student", "student"]
    assert set(Journal.resume(tmp_path).records) == {"/a.ipynb", "/b\udce9.ipynb", "/c.ipynb"}


def test_not_a_journal_is_refused(tmp_path) -> None:
    (tmp_path / "journal.jsonl").write_text("hello\n")
    with pytest.raises(JournalError, match="not a grading journal"):
        Journal.resume(tmp_path)
