"""A notebook's code cell read as IPython reads it, and what each IPython magic does to the
notebook's variables.

IPython runs a cell only after its own input transformation has turned magics (``%time``,
``!ls``, ``obj?``, ``%%script false``) into Python calls (``get_ipython().run_line_magic(...)``).
The grader uses that same transformation, so a line that starts with ``%``, ``!`` or ``?``
inside a triple-quoted string stays in the string, as it does when the notebook runs. The
magics' effects are then decided here, by what each magic does, never by a guess at its text.

IPython is imported when the first cell is read, not when the grader is imported.
"""

from __future__ import annotations

import ast
import warnings
from enum import Enum


class MagicEffect(Enum):
    """What a magic does to the notebook's variables."""

    NONE = "none"  # no variable changes (%matplotlib, %pip, !ls, obj?, %%bash, %%script false)
    RUN_HERE = "run-here"  # runs its argument or body as Python in the notebook (%time, %%capture)
    RUN_APART = "run-apart"  # runs it as Python in a function of its own (%timeit: its names do not stay)
    ANY = "any"  # may change any variable (%run, %store -r, %reset, a magic the grader does not know)


#: Line magics (``%name args``) whose effect on the notebook's variables is known.
LINE_MAGICS: dict[str, MagicEffect] = {
    **{name: MagicEffect.NONE for name in (
        "matplotlib", "config", "load_ext", "reload_ext", "unload_ext", "autoreload", "aimport", "pip",
        "conda", "mamba", "micromamba", "uv", "env", "set_env", "who", "whos", "who_ls", "ls", "ll", "lsmagic",
        "magic", "pwd", "cd", "pushd", "popd", "dirs", "dhist", "bookmark", "pinfo", "pinfo2", "psearch", "pdoc",
        "pdef", "psource", "pfile", "page", "pycat", "history", "hist", "precision", "xmode", "colors",
        "pprint", "automagic", "doctest_mode", "alias", "unalias", "rehashx", "notebook", "pdb", "tb",
        "debug", "quickref", "killbgscripts", "system", "sx", "clear", "cls", "less", "more", "man",
        "gui", "pylab", "save", "logstart", "logstop", "logon", "logoff", "logstate", "qtconsole")},
    "time": MagicEffect.RUN_HERE,
    "prun": MagicEffect.RUN_HERE,
    "timeit": MagicEffect.RUN_APART,
}

#: Cell magics (``%%name``): those that run their body as the notebook's Python, those that run it
#: elsewhere (a shell, another interpreter, a file: none of its variables reach the notebook).
CELL_MAGICS: dict[str, MagicEffect] = {
    **{name: MagicEffect.NONE for name in (
        "script", "bash", "sh", "zsh", "perl", "ruby", "python", "python2", "python3", "pypy", "html", "HTML",
        "javascript", "js", "markdown", "latex", "svg", "writefile", "file", "sx", "system", "!")},
    "time": MagicEffect.RUN_HERE,
    "capture": MagicEffect.RUN_HERE,
    "prun": MagicEffect.RUN_HERE,
    "debug": MagicEffect.RUN_HERE,
    "timeit": MagicEffect.RUN_APART,
}


class CellSyntaxError(Exception):
    """The cell is not Python even as IPython reads it."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def ipython_python(text: str) -> str:
    """The Python that IPython runs for a cell's text (magics turned into calls, prompts removed)."""
    from IPython.core.inputtransformer2 import (
        TransformerManager,  # the grader's only IPython import
    )

    try:
        return TransformerManager().transform_cell(text)
    except (SyntaxError, ValueError, IndexError) as exc:  # IPython's tokenizer on broken input
        raise CellSyntaxError(getattr(exc, "lineno", 0) or 0, f"IPython cannot read it ({exc})") from None


def parse_cell(text: str) -> ast.Module:
    """A cell's syntax tree as IPython would run it (top-level ``await`` allowed, as IPython does)."""
    code = ipython_python(text)
    try:
        with warnings.catch_warnings():  # a submission's odd literals are not the grader's to warn about
            warnings.simplefilter("ignore")
            return compile(code, "<cell>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                           dont_inherit=True)
    except SyntaxError as exc:
        raise CellSyntaxError(exc.lineno or 0, exc.msg) from None


def capture_targets(magic: str, line: str) -> list[str]:
    """Names a cell magic binds in the notebook from its options (``%%capture out``,
    ``%%bash --out o --err e``); their values are not strings the grader reads."""
    words = line.split()
    names = []
    if magic == "capture":
        names += [w for w in words if not w.startswith("-")][:1]
    for option, value in zip(words, words[1:], strict=False):
        if option in ("--out", "--err", "--proc"):
            names.append(value)
    return [n for n in names if n.isidentifier()]
