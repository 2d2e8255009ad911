"""The files the grader writes itself: the one permission rule they follow (``file_mode``), and
reading them back (results.json, the journal) as untrusted input.

An output folder is the instructor's to edit, and a submissions folder given as ``--out`` is a
student's: a name the grader reads may be a FIFO (opening it blocks for ever), a device or a link
to one (``/dev/zero`` never ends: a read of it dies of MemoryError), a folder, or a file far larger
than anything the grader writes. So a file is examined with ``stat`` before it is opened, opened
without blocking, examined again through its descriptor (it may have been swapped in between),
and read up to a bound; anything else is an ``OwnFileError`` that names the file and what it is.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from .safe_text import printable
from .submissions import describe_kind, read_bounded

#: The most the grader reads back of one of its files: a results.json or journal of two thousand
#: students at the largest record a student can have (``bounds.MAX_RECORD_BYTES``) is under it.
MAX_OWN_FILE_BYTES = 512 * 2**20

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it: put it straight back
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The one permission rule for everything the grader writes: what the instructor's umask
    gives a new file (0644 under the usual 022; ``umask 027`` lets the group, the TAs, read and
    others nothing). Temporary files are created private and given this mode before they appear."""
    return 0o666 & ~_umask()


def dir_mode() -> int:
    return 0o777 & ~_umask()


class OwnFileError(Exception):
    """A file the grader wrote cannot be read back as one: the message names it and says why."""


def _refuse_unless_regular(path: Path, st: os.stat_result, linked: bool, max_bytes: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        link = "a symbolic link to " if linked else ""
        raise OwnFileError(f"{printable(str(path))} is {link}{describe_kind(st.st_mode)}, not a file the grader "
                           "wrote; it was not opened: remove it or choose another --out")
    if st.st_size > max_bytes:
        raise OwnFileError(f"{printable(str(path))} is {st.st_size / 2**20:.1f} MiB, more than the grader reads "
                           f"back of its own files ({max_bytes / 2**20:g} MiB); it was not read")


def read_own_file(path: Path, max_bytes: int = MAX_OWN_FILE_BYTES) -> bytes:
    """The bytes of ``path``, a file the grader wrote, if it is still a regular file of at most
    ``max_bytes``. Raises ``FileNotFoundError`` if there is none, ``OwnFileError`` if it is
    something else (never opening a FIFO or a device as data), ``OSError`` if it cannot be read."""
    linked = os.path.islink(path)
    _refuse_unless_regular(path, os.stat(path), linked, max_bytes)  # before opening: a device may act on open
    fd = os.open(path, _OPEN_FLAGS)
    try:
        _refuse_unless_regular(path, os.fstat(fd), linked, max_bytes)  # what was opened, if it was swapped
        try:
            return read_bounded(fd, max_bytes)
        except OSError as exc:  # it grew past the bound while being read
            raise OwnFileError(f"{printable(str(path))}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` all at once: the old content stays if anything fails."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, file_mode())  # mkstemp's files are 0600: the rule is the umask's
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
