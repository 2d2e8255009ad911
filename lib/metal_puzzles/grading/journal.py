"""The run's journal: one JSON line per student, appended and synced as each one finishes.

The first line records the run's settings (the hidden tests' seed above all), every later line
one student's complete result. A run that is interrupted, crashes or runs out of disk keeps
every line it finished; ``--resume`` reads them back, reuses the results of files that have
not changed (same content hash) and grades the rest with the same settings. A last line cut
short by a crash is dropped (and cut off the file before appending goes on).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeGuard

from ..puzzles import PUZZLES
from .own_files import OwnFileError, atomic_write, read_own_file

JOURNAL_NAME = "journal.jsonl"
FORMAT = 1
#: How ``create`` begins a journal: a file holding no whole line but a beginning of this is a run
#: record cut short.
_RUN_RECORD_START = b'{"type": "run"'


class JournalError(Exception):
    """The journal cannot be used: unreadable, from another version, or other settings."""


class NeverStarted(JournalError):
    """The journal holds no whole line: the run it was made for stopped before its first record
    was written (an empty file, or its run record cut short). There is nothing to carry on with,
    and nothing to refuse: a resumed run starts from the beginning."""


@dataclass(frozen=True)
class RunSettings:
    """What a result depends on besides the notebook: a resumed run must use the same."""

    seed: int
    max_steps: int
    version: str
    format: int = FORMAT


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _shown(value: object) -> str:
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= 200 else text[:200] + "..."


def student_record_problem(entry: object) -> str | None:
    """What makes ``entry`` not a student record as ``append`` writes them, or None. A resumed
    run reuses these records as grades: a damaged or foreign one must stop it, not crash it or
    be taken for a student's result."""
    if not isinstance(entry, dict) or entry.get("type") != "student":
        return f"expected an object with \"type\": \"student\", got {_shown(entry)}"
    expected = {"file": str, "sha256": str, "complete": bool, "issues": list, "puzzles": dict}
    for key, kind in expected.items():
        if not isinstance(entry.get(key), kind):
            return f"'{key}' must be {kind.__name__}, got {_shown(entry.get(key))}"
    if not all(isinstance(i, str) for i in entry["issues"]):
        return "'issues' must be a list of strings"
    known = {p.id for p in PUZZLES}
    for pid, summary in entry["puzzles"].items():
        if pid not in known:
            return f"{_shown(pid)} is not a puzzle of this book"
        if not isinstance(summary, dict) or not isinstance(summary.get("status"), str):
            return f"the result of {pid!r} must be an object with a 'status', got {_shown(summary)}"
    if entry["complete"] and set(entry["puzzles"]) != known:
        return "a complete record must hold every puzzle"
    return None


class Journal:
    def __init__(self, path: Path, settings: RunSettings, records: dict[str, dict[str, Any]]) -> None:
        self.path = path
        self.settings = settings
        self.records = records  # by file path: the last complete record of each student

    @classmethod
    def create(cls, out: Path, settings: RunSettings) -> Journal:
        """A new journal holding its run record, put in place whole (a new file, then a rename):
        a run stopped as it starts leaves the previous journal or this one, never an empty file."""
        path = out / JOURNAL_NAME
        atomic_write(path, (json.dumps({"type": "run", **asdict(settings)}) + "\n").encode("ascii"))
        return cls(path, settings, {})

    @classmethod
    def resume(cls, out: Path) -> Journal:
        path = out / JOURNAL_NAME
        try:
            data = read_own_file(path)
        except OwnFileError as exc:
            raise JournalError(str(exc)) from None
        except OSError as exc:
            raise JournalError(f"cannot read {path}: {exc.strerror or exc}") from None
        *lines, tail = data.split(b"\n")  # the tail after the last newline is a line cut short
        if not lines and _RUN_RECORD_START.startswith(tail[:len(_RUN_RECORD_START)]):
            raise NeverStarted(f"{path} is {'empty' if not data else 'only its run record, cut short'}: the run it "
                               "journals stopped before grading anyone")
        good_bytes = 0
        entries = []
        for number, line in enumerate(lines, start=1):
            try:
                entries.append(json.loads(line))
            except ValueError:
                if number == 1:
                    raise JournalError(f"{path} does not start with a run record; it is not a grading journal"
                                       ) from None
                # A crash cuts only the last line short (the tail without a newline); a whole line
                # that is not JSON was damaged some other way, and what follows it cannot be trusted.
                raise JournalError(f"{path}: line {number} is damaged (not JSON); start again with --force"
                                   ) from None
            good_bytes += len(line) + 1
        header = entries[0] if entries else None
        if not isinstance(header, dict) or header.get("type") != "run":
            raise JournalError(f"{path} does not start with a run record; it is not a grading journal")
        if header.get("format") != FORMAT:
            raise JournalError(f"{path} has journal format {header.get('format')!r}; this grader writes {FORMAT}")
        seed, steps, version = header.get("seed"), header.get("max_steps"), header.get("version")
        if not (_whole(seed) and _whole(steps) and steps > 0 and isinstance(version, str)):
            raise JournalError(f"{path}: line 1, the run record, needs a whole 'seed', a positive 'max_steps' and a "
                               f"'version' string; it has {_shown(header)}")
        settings = RunSettings(seed, steps, version)
        records = {}
        for line_number, entry in enumerate(entries[1:], start=2):
            problem = student_record_problem(entry)
            if problem is not None:
                raise JournalError(f"{path}: line {line_number} is not a student record of this grader ({problem}); "
                                   "start again with --force")
            records[entry["file"]] = entry
        if good_bytes < len(data):
            os.truncate(path, good_bytes)
        return cls(path, settings, records)

    def append(self, record: dict[str, Any]) -> None:
        """Write one student's record and make it durable before going on. Raises OSError
        (a full disk, say) with the journal left as it was before."""
        line = (json.dumps({"type": "student", **record}, ensure_ascii=True) + "\n").encode("ascii")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        try:
            start = os.lseek(fd, 0, os.SEEK_END)
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            except OSError:
                try:  # no partial line left behind for the next append to run into
                    os.ftruncate(fd, start)
                except OSError:
                    pass
                raise
        finally:
            os.close(fd)
        self.records[record["file"]] = record
