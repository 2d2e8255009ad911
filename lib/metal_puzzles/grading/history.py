"""``changes.csv`` kept so that it misses nothing, however a run is started, stopped and resumed.

A run compares its grades with the *baseline*: the results the history was last brought up to.
Before a run may replace results (``--force``, ``--resume``), the results.json in ``--out``
becomes the baseline (a hard link: results.json renamed over by the run's new one leaves it),
unless an earlier run left one: that run stopped (Ctrl-C, a full disk, changes.csv unwritable) before its
changes were written, and they are still to be recorded. The baseline goes once changes.csv holds
the run's changes; ``--force`` leaves it (it is not part of the result set).

changes.csv is written as every other output: the old log read as untrusted (a regular file in
``--out``, never through a link, read by ``own_files.read_own_file``: never opened if it is a FIFO
or a device, of bounded size), the new one written beside it and renamed over it, so a link there
never sends a write outside ``--out`` and a crash never leaves half a row. The baseline and the
results.json it is taken from are read as every results.json is (``results_file.read_results``):
one edited by hand into something else stops the run before grading, naming the file and field.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .changes import CHANGES_NAME, GradeChange, history_bytes
from .output import OutputError
from .own_files import OwnFileError, atomic_write, read_own_file
from .results_file import RESULTS_NAME, read_results
from .safe_text import printable
from .submissions import describe_kind

#: Where the results a run compares with are kept until its changes are on record.
BASELINE_NAME = "changes-baseline.json"


def _no_link(path: Path, what: str) -> None:
    if os.path.islink(path):
        raise OutputError(f"{printable(path)} ({what}) is a symbolic link: the grader writes only inside --out and "
                          "never through a link; put the file itself there")


def _read_history(path: Path) -> bytes | None:
    """changes.csv's bytes, or None if there is none. Raises ``OutputError`` (naming ``path``)
    for a link, a folder, a FIFO or a device (none of them opened), an unreadable file or one
    larger than the grader reads back."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OutputError(f"cannot read {printable(path)} (the history of grade changes): "
                          f"{exc.strerror or exc}") from None
    _no_link(path, "the history of grade changes")
    if not stat.S_ISREG(mode):
        raise OutputError(f"{printable(path)} is {describe_kind(mode)}, not a regular file the grader can add the "
                          "history of grade changes to; move it away")
    try:
        return read_own_file(path)
    except FileNotFoundError:  # removed since: there is no history yet
        return None
    except OwnFileError as exc:  # swapped for something else since
        raise OutputError(str(exc)) from None
    except OSError as exc:
        raise OutputError(f"cannot read {printable(path)} (the history of grade changes): "
                          f"{exc.strerror or exc}") from None


def check_history(out: Path) -> None:
    """Refuse, before grading, a changes.csv the run could not read and replace (a link, a
    folder, a special file, unreadable). Raises ``OutputError`` naming the file."""
    _read_history(out / CHANGES_NAME)


def _results(path: Path) -> dict | None:
    try:
        return read_results(path)
    except FileNotFoundError:
        return None


def keep_baseline(out: Path, *, replacing: bool) -> dict | None:
    """The results this run's changes are counted from: an earlier run's baseline, else the
    results.json in ``out`` (made the baseline when this run may replace it: ``replacing``).
    None when there are none. Raises ``OutputError`` for a baseline that cannot be kept,
    ``results_file.ResultsFileError`` for one, or a results.json, that is not a grader's results."""
    baseline, results = out / BASELINE_NAME, out / RESULTS_NAME
    _no_link(baseline, "the results changes.csv was last brought up to")
    record = _results(baseline)
    if record is not None:
        return record
    record = _results(results)
    if record is None or not replacing:
        return record
    if not os.path.islink(results):  # a link's baseline is a copy of its content, never another link
        try:
            os.link(results, baseline, follow_symlinks=False)
            return record
        except OSError:  # a file system without hard links: a copy, written as every output
            pass
    try:
        atomic_write(baseline, read_own_file(results))
    except (OSError, OwnFileError) as exc:
        raise OutputError(f"cannot keep the previous results in {printable(baseline)} for changes.csv: "
                          f"{getattr(exc, 'strerror', None) or exc}") from None
    return record


def record_changes(out: Path, changes: list[GradeChange]) -> None:
    """Add ``changes`` to ``out``'s changes.csv (a new file renamed over the old), then drop the
    baseline: the history is up to date. Raises ``OutputError`` naming the file."""
    path = out / CHANGES_NAME
    if changes:
        old = _read_history(path) or b""
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
