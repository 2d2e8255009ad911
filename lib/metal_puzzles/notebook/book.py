"""``metal-puzzles init``, ``lab`` and ``notebook``: put the book where a learner works, and open it.

The book (``puzzles.ipynb``) ships inside the package as data, so these commands work the same
after ``pip install -e .`` in a checkout, ``pip install metal-puzzles`` or an install from a git URL.
A learner's notebook is never overwritten: ``init`` keeps an existing one, and ``--fresh`` writes a
new copy beside it under a name that is free.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass
from enum import Enum
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Traversable moved to importlib.resources.abc in Python 3.11
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable  # novermin (type checking only)
    else:
        from importlib.abc import Traversable

#: The book's file name, in the package and in the learner's folder.
NOTEBOOK_NAME = "puzzles.ipynb"
#: The stem of fresh copies written beside a learner's notebook: puzzles-fresh.ipynb, -2, -3, ...
FRESH_STEM = "puzzles-fresh"


class JupyterUI(Enum):
    """The Jupyter front ends the book is tested in, by the command that opens each."""

    LAB = "lab"
    NOTEBOOK = "notebook"

    @property
    def module(self) -> str:
        """The module ``python -m`` runs to start this front end's server."""
        return {JupyterUI.LAB: "jupyterlab", JupyterUI.NOTEBOOK: "notebook"}[self]

    @property
    def title(self) -> str:
        return {JupyterUI.LAB: "JupyterLab", JupyterUI.NOTEBOOK: "Jupyter Notebook"}[self]

    @property
    def app_class(self) -> str:
        """The server extension's configurable class, whose ``default_url`` is the page that the
        link Jupyter prints opens (and where '/' redirects)."""
        return {JupyterUI.LAB: "LabApp", JupyterUI.NOTEBOOK: "JupyterNotebookApp"}[self]

    def page(self, notebook_name: str) -> str:
        """The server path of a notebook opened in this front end (not its file tree)."""
        return {JupyterUI.LAB: f"/lab/tree/{notebook_name}", JupyterUI.NOTEBOOK: f"/notebooks/{notebook_name}"}[self]


class InitOutcome(Enum):
    WROTE = "wrote"  # a new notebook was written
    KEPT = "kept"  # a notebook was there already and was left exactly as it was


@dataclass(frozen=True)
class InitResult:
    notebook: Path  # the notebook to open: the one written, or the learner's own
    outcome: InitOutcome


class BookError(Exception):
    """The book cannot be written or opened; the message says why and what to do."""


def packaged_notebook() -> Traversable:
    """The book as installed with the package."""
    notebook = files("metal_puzzles") / "notebooks" / NOTEBOOK_NAME
    if not notebook.is_file():
        raise BookError(f"the book ({notebook}) is missing from the installed metal-puzzles: reinstall it")
    return notebook


def _fresh_name(directory: Path) -> Path:
    """The first of puzzles-fresh.ipynb, puzzles-fresh-2.ipynb, ... that does not exist yet."""
    candidate, n = directory / f"{FRESH_STEM}.ipynb", 1
    while candidate.exists():
        n += 1
        candidate = directory / f"{FRESH_STEM}-{n}.ipynb"
    return candidate


def _write_new(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` only if nothing is there (False if something is); a failed write
    leaves no half-written notebook behind."""
    try:
        f = path.open("xb")  # exclusive creation: never replaces a file, even one made a moment ago
    except FileExistsError:
        return False
    try:
        with f:
            f.write(data)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return True


def init_book(directory: str | Path = ".", *, fresh: bool = False) -> InitResult:
    """Write the book into ``directory`` (created if needed). An existing ``puzzles.ipynb`` is
    kept as it is; with ``fresh`` a new copy is written beside it under a free name."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise BookError(f"{directory} is a file, not a folder: give init a folder to write the book into")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        data = packaged_notebook().read_bytes()
        target = directory / NOTEBOOK_NAME
        while True:  # a name can be taken between choosing it and creating it: choose again
            if _write_new(target, data):
                return InitResult(target, InitOutcome.WROTE)
            if not fresh:
                return InitResult(target, InitOutcome.KEPT)
            target = _fresh_name(directory)
    except OSError as exc:
        raise BookError(f"cannot write the book into {directory}: {exc.strerror or exc}") from exc


def describe(result: InitResult) -> str:
    """What init did, how to open the notebook, and for a kept notebook how to get a fresh copy."""
    folder = result.notebook.parent
    if result.outcome is InitOutcome.KEPT:
        return (f"kept {result.notebook}: it is already there, and your work in it is never "
                f"overwritten. For a fresh copy beside it: metal-puzzles init --fresh {folder}")
    opened = "" if result.notebook.name == NOTEBOOK_NAME else f", then choose {result.notebook.name}"
    return (f"wrote {result.notebook}\nopen it with: metal-puzzles lab {folder} (JupyterLab) or "
            f"metal-puzzles notebook {folder} (Jupyter Notebook){opened}")


def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def jupyter_command(ui: JupyterUI, notebook: Path, extra: list[str] | None = None,
                    as_root: bool | None = None) -> list[str]:
    """The command that opens ``notebook`` in ``ui``, run by this environment's Python from the
    notebook's folder. Jupyter refuses to run as root unless told it may (containers and cloud
    machines run as root), so it is told."""
    as_root = running_as_root() if as_root is None else as_root
    extra = list(extra or [])
    # The link Jupyter prints goes to its default page: make that the book, unless told otherwise.
    to_book = [] if any("default_url" in option for option in extra) else [
        f"--{ui.app_class}.default_url={ui.page(notebook.name)}"]
    return [sys.executable, "-m", ui.module, notebook.name, *(["--allow-root"] if as_root else []), *to_book, *extra]


#: ``lab``'s and ``notebook``'s own options; every other option is Jupyter's.
OWN_OPTIONS = ("--fresh", "-h", "--help")


def folder_first(command: str, args: list[str]) -> list[str]:
    """The arguments of ``lab`` or ``notebook`` with the folder before Jupyter's options, as the
    parser reads them: ``lab --port 8899`` means the current folder ('.') and ``--port 8899`` for
    Jupyter. A folder can only come before the first Jupyter option (whose value, like 8899, is
    not a folder); ``lab -- --port 8899`` passes the options too."""
    own: list[str] = []
    rest = list(args)
    while rest and rest[0] in OWN_OPTIONS:
        own.append(rest.pop(0))
    if rest[:1] == ["--"]:
        rest.pop(0)
    if rest and not rest[0].startswith("-"):
        return [command, *own, *rest]  # a folder first: the parser already reads this right
    return [command, *own, ".", *rest]



def open_in_jupyter(ui: JupyterUI, notebook: Path, extra: list[str] | None = None) -> int:
    """Replace this process with the Jupyter server (on Windows: run it and wait)."""
    if importlib.util.find_spec(ui.module) is None:
        raise BookError(f"{ui.title} is not installed in {sys.prefix}: pip install metal-puzzles "
                        f"installs it (the package {ui.module})")
    command = jupyter_command(ui, notebook, extra)
    print(f"opening {notebook} in {ui.title}: {' '.join(command)}", flush=True)
    if os.name == "posix":
        os.chdir(notebook.parent)
        os.execv(sys.executable, command)  # does not return
    return subprocess.run(command, cwd=notebook.parent).returncode


# ----------------------------------------------------------------------------- command line
#: The subcommands this module adds to ``metal-puzzles``.
COMMANDS = ("init", *(ui.value for ui in JupyterUI))


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``init``, ``lab`` and ``notebook`` to the ``metal-puzzles`` parser."""
    fresh_help = (f"when {NOTEBOOK_NAME} exists, write a new copy beside it ({FRESH_STEM}.ipynb, "
                  f"{FRESH_STEM}-2.ipynb, ...); an existing notebook is never overwritten")
    init = sub.add_parser("init", help=f"write the book ({NOTEBOOK_NAME}) into a folder")
    init.add_argument("directory", nargs="?", default=".", help="where (default: the current folder)")
    init.add_argument("--fresh", action="store_true", help=fresh_help)
    for ui in JupyterUI:
        p = sub.add_parser(ui.value, help=f"write the book into a folder (as init does), then open it in {ui.title}")
        p.add_argument("directory", nargs="?", default=".", help="where (default: the current folder)")
        p.add_argument("--fresh", action="store_true", help=fresh_help)
        p.add_argument("jupyter_args", nargs=argparse.REMAINDER,
                       help=f"options for {ui.title}, after the folder if one is given (for example: "
                            "--no-browser --port 8899)")


def run_command(args: argparse.Namespace) -> int:
    """Carry out ``init``, ``lab`` or ``notebook``; 2 with a message on stderr when it cannot."""
    try:
        result = init_book(args.directory, fresh=args.fresh)
        if args.command == "init":
            print(describe(result), flush=True)
            return 0
        if result.outcome is InitOutcome.WROTE:
            print(f"wrote {result.notebook}", flush=True)
        extra = list(args.jupyter_args or [])
        if extra[:1] == ["--"]:
            extra = extra[1:]
        return open_in_jupyter(JupyterUI(args.command), result.notebook, extra)
    except BookError as exc:
        print(f"metal-puzzles: {exc}", file=sys.stderr)
        return 2
