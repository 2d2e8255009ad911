"""``changes.csv`` kept so that it misses nothing, however a run is started, stopped and resumed.

A run compares its grades with the *baseline*: the results the history was last brought up to.
Before a run may replace results (``--force``, ``--resume``), the results.json in ``--out``
becomes the baseline (a hard link, so ``--force`` removing results.json leaves it), unless an
earlier run left one: that run stopped (Ctrl-C, a full disk, changes.csv unwritable) before its
changes were written, and they are still to be recorded. The baseline goes once changes.csv holds
the run's changes; ``--force`` leaves it (it is not part of the result set).

changes.csv is written as every other output: the old log read as untrusted (a regular file in
``--out``, never through a link, of bounded size), the new one written beside it and renamed over
it, so a link there never sends a write outside ``--out`` and a crash never leaves half a row.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .changes import CHANGES_NAME, GradeChange, history_bytes, results_record
from .output import RESULTS_NAME, OutputError, atomic_write
from .safe_text import printable

#: Where the results a run compares with are kept until its changes are on record.
BASELINE_NAME = "changes-baseline.json"
#: The largest changes.csv or results.json read: a course's history is a few MiB.
MAX_READ_BYTES = 512 * 2**20


def _read_regular(path: Path, what: str) -> bytes | None:
    """``path``'s bytes, or None if it does not exist. Raises ``OutputError`` (naming ``path``)
    for a link, a folder, a FIFO or a device (opened without blocking, never followed), an
    unreadable file or one too large."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):  # no file (an --out that is a file: prepare_out says so)
        return None
    except OSError as exc:
        if os.path.islink(path):
            raise OutputError(f"{printable(path)} ({what}) is a symbolic link: the grader writes only inside --out and "
                              "never through a link; put the file itself there") from None
        raise OutputError(f"cannot read {printable(path)} ({what}): {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OutputError(f"{printable(path)} ({what}) is not a regular file; move it away")
        if info.st_size > MAX_READ_BYTES:
            raise OutputError(f"{printable(path)} ({what}) is larger than {MAX_READ_BYTES >> 20} MiB")
        chunks = []
        while chunk := os.read(fd, 2**20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise OutputError(f"cannot read {printable(path)} ({what}): {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def check_history(out: Path) -> None:
    """Refuse, before grading, a changes.csv the run could not read and replace (a link, a
    folder, a special file, unreadable). Raises ``OutputError`` naming the file."""
    _read_regular(out / CHANGES_NAME, "the history of grade changes")


def keep_baseline(out: Path, *, replacing: bool) -> dict | None:
    """The results this run's changes are counted from: an earlier run's baseline, else the
    results.json in ``out`` (made the baseline when this run may replace it: ``replacing``).
    None when there are none (or they are not a run's results). Raises ``OutputError``."""
    baseline, results = out / BASELINE_NAME, out / RESULTS_NAME
    data = _read_regular(baseline, "the results changes.csv was last brought up to")
    if data is None:
        data = _read_regular(results, "the previous results")
        if data is None:
            return None
        if replacing:
            try:
                os.link(results, baseline, follow_symlinks=False)
            except OSError:  # a file system without hard links: a copy, written as every output
                try:
                    atomic_write(baseline, data)
                except OSError as exc:
                    raise OutputError(f"cannot keep the previous results in {printable(baseline)} "
                                      f"for changes.csv: {exc.strerror or exc}") from None
    return results_record(data)


def record_changes(out: Path, changes: list[GradeChange]) -> None:
    """Add ``changes`` to ``out``'s changes.csv (a new file renamed over the old), then drop the
    baseline: the history is up to date. Raises ``OutputError`` naming the file."""
    path = out / CHANGES_NAME
    if changes:
        old = _read_regular(path, "the history of grade changes") or b""
        try:
            atomic_write(path, history_bytes(old, changes))
        except OSError as exc:
            raise OutputError(f"cannot write {printable(path)}, the history of grade changes: "
                              f"{exc.strerror or exc}") from None
    try:
        os.unlink(out / BASELINE_NAME)
    except FileNotFoundError:
        pass
    except OSError as exc:  # left, it would have these changes recorded again
        raise OutputError(f"cannot remove {printable(out / BASELINE_NAME)} after recording the changes: "
                          f"{exc.strerror or exc}; remove it by hand") from None
