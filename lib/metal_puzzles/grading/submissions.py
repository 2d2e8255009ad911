"""Finding the class's notebooks: only its own regular files, each checked before it is opened.

A submissions folder is untrusted. A name ending in ``.ipynb`` may be a FIFO (opening it blocks),
a device (``/dev/zero`` never ends), a socket, or a symbolic link to someone else's notebook or to
a system file. So every candidate is examined with ``lstat``/``stat`` first, and only a regular
file inside the submissions tree (after resolving links), no larger than the size cap, is ever
opened, and then without following links and without blocking. Everything refused is still a
submission, reported with its reason, so the student sees why they got nothing.

Hard links and identical files are fine: each path is a submission of its own. One file named
twice (``grade class class/alice.ipynb``) is one submission, and the run says so.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .safe_text import printable

#: Default cap on a notebook's size. Notebooks with every diagram's output stay well under it.
DEFAULT_MAX_NOTEBOOK_BYTES = 64 * 2**20

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_CHUNK = 2**20
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
#: Characters of a path opened by name on the way down to a deeper one: under PATH_MAX everywhere
#: (1,024 on macOS, 4,096 on Linux).
_SHORT_PATH = 900


# ---------------------------------------------------------------------------- paths over PATH_MAX
# A folder nested deep enough has a path longer than the system opens by name (ENAMETOOLONG);
# its files are reached one folder at a time from an ancestor that can be opened, each folder
# opened without following links (the walk never follows a link to a folder either).
def _too_long(exc: OSError) -> bool:
    return exc.errno == errno.ENAMETOOLONG


@contextlib.contextmanager
def _folder_fd(folder: str):
    """A descriptor of ``folder``, opened a component at a time below its longest ancestor short
    enough to open by name."""
    parts = os.path.abspath(folder).split(os.sep)
    n = len(parts)
    while n > 1 and len(os.sep.join(parts[:n])) > _SHORT_PATH:
        n -= 1
    fd = os.open(os.sep.join(parts[:n]) or os.sep, _DIR_FLAGS)
    try:
        for part in parts[n:]:
            if part:
                fd, parent = os.open(part, _DIR_FLAGS, dir_fd=fd), fd
                os.close(parent)
        yield fd
    finally:
        os.close(fd)


def _lstat(path: str, *, follow: bool = False) -> os.stat_result:
    try:
        return os.stat(path, follow_symlinks=follow)
    except OSError as exc:
        if not _too_long(exc):
            raise
    folder, name = os.path.split(os.path.abspath(path))
    with _folder_fd(folder) as fd:
        return os.stat(name, dir_fd=fd, follow_symlinks=follow)


def _open(path: str, flags: int) -> int:
    try:
        return os.open(path, flags)
    except OSError as exc:
        if not _too_long(exc):
            raise
    folder, name = os.path.split(os.path.abspath(path))
    with _folder_fd(folder) as fd:
        return os.open(name, flags, dir_fd=fd)


class _DeepFolders:
    """Descriptors of folders too deep to open by name, for a walk that goes down one folder at a
    time: the last one opened is kept, so that its sub-folder is opened from it (opening each
    from an ancestor instead costs a walk as many opens as the square of its depth)."""

    def __init__(self) -> None:
        self.path: str | None = None
        self.fd: int | None = None

    @contextlib.contextmanager
    def scandir(self, folder: str):
        """``os.scandir(folder)``, however long its path; the entries are valid inside the block."""
        try:
            it = os.scandir(folder)
        except OSError as exc:
            if not _too_long(exc):
                raise
        else:  # opened by name (the block's own errors are not caught here)
            with it:
                yield it
            return
        parent, name = os.path.split(folder)
        if self.fd is not None and parent == self.path:
            fd = os.open(name, _DIR_FLAGS, dir_fd=self.fd)
        else:
            with _folder_fd(folder) as opened:
                fd = os.dup(opened)
        self.close()
        self.path, self.fd = folder, fd
        with os.scandir(fd) as it:
            yield it

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
        self.path = self.fd = None


@dataclass(frozen=True)
class Submission:
    """One file found among the submissions: where it is, and either what to read or why not."""

    path: str  # as found (may hold undecodable bytes as surrogate escapes)
    real: str = ""  # the resolved path that is opened; empty when refused
    size: int = 0
    device: int = 0
    inode: int = 0
    sha256: str = ""  # of the content, so a resumed run knows an unchanged file
    problem: str | None = None  # why it is not read (the student's problem), or None
    #: The path below the submissions folder it was found in ('/'-separated; the name alone
    #: for a file named on the command line): what ids and the mapping go by.
    relative: str = ""

    @property
    def readable(self) -> bool:
        return self.problem is None

    @property
    def key(self) -> str:
        """The same file however the command line spelled its folder (for the journal)."""
        return os.path.abspath(self.path)


def describe_kind(mode: int) -> str:
    """What a file that is not a regular file is, in words ("a FIFO (named pipe)", "a device")."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False


def open_regular(real: str, device: int, inode: int, max_bytes: int, *, same_file: bool = True) -> int:
    """Open a file found earlier, refusing anything that changed into a non-regular file or a
    bigger one since (a race with the folder), and, with ``same_file``, another file at that
    path (a caller that checks the content instead passes False: an editor or a sync tool
    replaces a file with a copy of the same content). Returns a file descriptor."""
    fd = _open(real, _OPEN_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"the file became {describe_kind(st.st_mode)} while grading")
        if same_file and (st.st_dev, st.st_ino) != (device, inode):
            raise OSError("the file was replaced while grading")
        if st.st_size > max_bytes:
            raise OSError(f"the file grew to {st.st_size} bytes while grading")
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_bounded(fd: int, max_bytes: int) -> bytes:
    """At most ``max_bytes`` of a file; more than that is an error, not a truncation."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > max_bytes:
            raise OSError(f"the file is larger than {max_bytes} bytes")


def examine(path: str, root: str | None, max_bytes: int) -> Submission:
    """Decide whether one candidate may be read. ``root`` is the resolved submissions folder a
    link must stay inside (None for a file named on the command line, which may be a link)."""
    try:
        lst = _lstat(path)
        real = os.path.realpath(path)
        if stat.S_ISLNK(lst.st_mode) and root is not None and not _inside(real, root):
            return Submission(path, problem="a symbolic link to a file outside the submissions folder; not read")
        if stat.S_ISLNK(lst.st_mode) and real == os.path.abspath(path):  # too deep for realpath to resolve
            return Submission(path, problem="a symbolic link in a folder nested too deep to resolve it; not read")
        st = _lstat(real, follow=True)
    except OSError as exc:
        return Submission(path, problem=f"cannot examine the file: {exc.strerror or exc}")
    if not stat.S_ISREG(st.st_mode):
        link = "a symbolic link to " if stat.S_ISLNK(lst.st_mode) else ""
        return Submission(path, problem=f"{link}{describe_kind(st.st_mode)}, not a notebook file; not read")
    if st.st_size > max_bytes:
        return Submission(path, problem=f"the file is {st.st_size / 2**20:.1f} MiB, over the "
                                        f"{max_bytes / 2**20:g} MiB limit per notebook; not read")
    digest = hashlib.sha256()
    try:
        fd = open_regular(real, st.st_dev, st.st_ino, max_bytes)
        try:
            digest.update(read_bounded(fd, max_bytes))
        finally:
            os.close(fd)
    except OSError as exc:
        return Submission(path, problem=f"cannot read the file: {exc.strerror or exc}")
    return Submission(path, real, st.st_size, st.st_dev, st.st_ino, digest.hexdigest())


NOTEBOOK_SUFFIX = ".ipynb"


def notebook_stem(name: str) -> str:
    """A notebook file's name without its suffix, however it is spelt (``frank.IPYNB``,
    ``'dave.ipynb '``, ``carol.ipynb.zip`` -> frank, dave, carol)."""
    lower = name.lower()
    at = lower.rfind(NOTEBOOK_SUFFIX)
    return (name[:at] if at > 0 else name).strip() or name


def _name_kind(name: str) -> str | None:
    """'notebook' for a notebook's name (the suffix in any case, stray spaces around it),
    'misnamed' for a name that holds '.ipynb' but is something else (``carol.ipynb.zip``),
    None for any other file."""
    lower = name.strip().lower()
    if lower.endswith(NOTEBOOK_SUFFIX) and len(lower) > len(NOTEBOOK_SUFFIX):
        return "notebook"
    return "misnamed" if NOTEBOOK_SUFFIX in lower else None


def _walk(root: str) -> tuple[list[str], list[str], list[str]]:
    """Every notebook-like name under ``root`` that is not a directory, in a stable order
    (depth first, names sorted), the links to directories found (not followed: a link to a file
    is examined like any candidate) and folders that could not be listed.

    A stack, not recursion: a folder nested a thousand deep is walked like any other."""
    found: list[str] = []
    linked_dirs: list[str] = []
    unreadable: list[str] = []
    stack = [root]
    deep = _DeepFolders()
    try:
        while stack:
            folder = stack.pop()
            subdirs = []
            try:
                with deep.scandir(folder) as it:
                    for e in sorted(it, key=lambda e: e.name):
                        path = os.path.join(folder, e.name)  # not e.path: relative when listed through a descriptor
                        try:
                            is_dir = e.is_dir(follow_symlinks=False)
                            if is_dir or (e.is_symlink() and e.is_dir()):
                                if not is_dir:
                                    linked_dirs.append(path)
                                elif e.name != ".ipynb_checkpoints":
                                    subdirs.append(path)
                                continue
                        except OSError:
                            pass  # examined below like any candidate, which says what is wrong with it
                        if _name_kind(e.name) is not None:
                            found.append(path)
            except OSError as exc:
                unreadable.append(f"{printable(folder, limit=300)}: cannot list the folder ({exc.strerror or exc}); "
                                  "its notebooks were not graded")
                continue
            stack.extend(reversed(subdirs))  # the first folder is walked first
    finally:
        deep.close()
    return found, sorted(linked_dirs), unreadable


def _misnamed(path: str) -> Submission:
    name = os.path.basename(path)
    return Submission(path, problem=f"the file name {printable(name, limit=300)!r} does not end in '.ipynb', so it "
                                    "was not read as a notebook: submit the notebook file itself, named "
                                    "something.ipynb")


def collect_submissions(paths: Sequence[str | Path], max_bytes: int = DEFAULT_MAX_NOTEBOOK_BYTES
                        ) -> tuple[list[Submission], list[str]]:
    """The submissions under the given files and folders, and problems with the arguments themselves.

    A file whose name holds '.ipynb' but ends otherwise (``carol.ipynb.zip``) is a submission
    too, not read, with the reason: a student is never dropped from the gradebook without a word."""
    found: list[Submission] = []
    problems: list[str] = []
    named: dict[str, tuple[int, str]] = {}  # a file's directory entry -> the argument that named it first
    for n, p in enumerate(map(str, paths)):
        if os.path.isdir(p):
            root = os.path.realpath(p)
            files, linked_dirs, unreadable = _walk(p)
            again = [f for f in files if _first_time(f, (n, p), named) is not None]
            for f in files:
                if f in again:
                    continue
                sub = examine(f, root, max_bytes) if _name_kind(os.path.basename(f)) == "notebook" else _misnamed(f)
                found.append(replace(sub, relative=Path(os.path.relpath(f, p)).as_posix()))
            if again:
                problems.append(f"{printable(p, limit=300)}: {len(again)} of its notebook(s) were already named by "
                                "an earlier argument; each file is graded once")
            problems.extend(f"{printable(d, limit=300)}: a symbolic link to a directory; not followed"
                            for d in linked_dirs)
            problems.extend(unreadable)
        elif os.path.lexists(p):
            first = _first_time(p, (n, p), named)
            if first is not None:
                problems.append(f"{printable(p, limit=300)}: already named as part of {printable(first, limit=300)}; "
                                "the file is graded once")
                continue
            found.append(replace(examine(p, None, max_bytes), relative=os.path.basename(p)))
        else:
            problems.append(f"{printable(p, limit=300)}: no such file or directory")
    return found, problems


def _first_time(path: str, argument: tuple[int, str], named: dict[str, tuple[int, str]]) -> str | None:
    """None the first time a directory entry is met, else the argument that named it first.
    An entry is its folder's resolved path and its own name: ``class`` and ``class/alice.ipynb``
    both name ``alice.ipynb`` in it, while a hard link or a link to another file elsewhere is an
    entry (and a submission) of its own."""
    folder, name = os.path.split(os.path.abspath(path))
    entry = os.path.join(os.path.realpath(folder), name)
    first = named.setdefault(entry, argument)
    return None if first == argument else first[1]
