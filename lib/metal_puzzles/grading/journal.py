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
from typing import Any

JOURNAL_NAME = "journal.jsonl"
FORMAT = 1


class JournalError(Exception):
    """The journal cannot be used: unreadable, from another version, or other settings."""


@dataclass(frozen=True)
class RunSettings:
    """What a result depends on besides the notebook: a resumed run must use the same."""

    seed: int
    max_steps: int
    version: str
    format: int = FORMAT


class Journal:
    def __init__(self, path: Path, settings: RunSettings, records: dict[str, dict[str, Any]]) -> None:
        self.path = path
        self.settings = settings
        self.records = records  # by file path: the last complete record of each student

    @classmethod
    def create(cls, out: Path, settings: RunSettings) -> Journal:
        path = out / JOURNAL_NAME
        with open(path, "w", encoding="ascii") as f:
            f.write(json.dumps({"type": "run", **asdict(settings)}) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return cls(path, settings, {})

    @classmethod
    def resume(cls, out: Path) -> Journal:
        path = out / JOURNAL_NAME
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise JournalError(f"cannot read {path}: {exc.strerror or exc}") from None
        *lines, _tail = data.split(b"\n")  # the tail after the last newline is a line cut short
        good_bytes = 0
        entries = []
        for line in lines:
            try:
                entries.append(json.loads(line))
            except ValueError:
                break  # a damaged line: it and everything after it are dropped
            good_bytes += len(line) + 1
        header = entries[0] if entries else None
        if not isinstance(header, dict) or header.get("type") != "run":
            raise JournalError(f"{path} does not start with a run record; it is not a grading journal")
        if header.get("format") != FORMAT:
            raise JournalError(f"{path} has journal format {header.get('format')!r}; this grader writes {FORMAT}")
        try:
            settings = RunSettings(int(header["seed"]), int(header["max_steps"]), str(header["version"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise JournalError(f"{path}: the run record is incomplete ({exc})") from None
        records = {e["file"]: e for e in entries[1:]
                   if isinstance(e, dict) and e.get("type") == "student" and isinstance(e.get("file"), str)}
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
