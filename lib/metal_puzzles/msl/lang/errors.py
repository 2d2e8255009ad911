"""Errors raised by the MSL front end and executor.

Compile errors read like a compiler's (``source:3:14: error: ...`` followed by the offending
line and a caret) and always point into the learner's own ``source`` or ``header`` string,
never into generated code.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Iterable
from dataclasses import dataclass


class _ShownAlone:
    """An error IPython shows as its message alone, without frames (``_render_traceback_`` is
    IPython's hook): the mistake is in the kernel or its launch, and the frames would be the
    simulator's own."""

    def _render_traceback_(self) -> list[str]:
        return f"{type(self).__name__}: {self}".split("\n")


@dataclass(frozen=True)
class Pos:
    """A position in one of the kernel's text files (1-based line and column)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


#: Position used for things the simulator generates itself (the signature, the prelude).
BUILTIN_POS = Pos("<builtin>", 0, 0)


class SourceRegistry:
    """Keeps the text of each file so errors can quote the offending line."""

    def __init__(self) -> None:
        self._files: dict[str, list[str]] = {}

    def add(self, name: str, text: str) -> None:
        self._files[name] = text.split("\n")

    def line(self, pos: Pos) -> str | None:
        lines = self._files.get(pos.file)
        if lines is None or not 1 <= pos.line <= len(lines):
            return None
        return lines[pos.line - 1]


def render_diagnostic(pos: Pos, severity: str, message: str, registry: SourceRegistry | None,
                      where: str = "") -> str:
    """Format a diagnostic the way clang does: location, message, source line, caret. ``where``
    follows the location (e.g. ' (your cell, line 5)': the same line in the learner's code)."""
    text = f"{pos}{where}: {severity}: {message}"
    line = registry.line(pos) if registry is not None else None
    if line is not None:
        # Tabs would misplace the caret; expand them the same way in both lines.
        shown = line.expandtabs(4)
        prefix = line[: max(pos.col - 1, 0)].expandtabs(4)
        text += f"\n{shown}\n{' ' * len(prefix)}^"
    return text


class CompileError(_ShownAlone, Exception):
    """A kernel that does not compile (or uses a construct the simulator does not support)."""

    def __init__(self, message: str, pos: Pos, registry: SourceRegistry | None = None, where: str = "") -> None:
        self.message = message
        self.pos = pos
        self.registry = registry
        self.where = where
        super().__init__(render_diagnostic(pos, "error", message, registry, where))

    @property
    def file(self) -> str:
        return self.pos.file

    @property
    def line(self) -> int:
        return self.pos.line

    @property
    def col(self) -> int:
        return self.pos.col

    def with_registry(self, registry: SourceRegistry) -> CompileError:
        """Re-render with source text available (errors are raised deep inside the front end)."""
        err = CompileError(self.message, self.pos, registry, self.where)
        err.__traceback__ = self.__traceback__
        return err

    def located(self, where: str) -> CompileError:
        """The same error, its location followed by ``where`` (the line in the learner's code)."""
        return CompileError(self.message, self.pos, self.registry, where)


class CompileWarning(UserWarning):
    """What clang warns about and still compiles (a floating constant too large for its type, a
    multi-character character constant): the kernel runs with the value clang gives it."""


def warn_compile(message: str, pos: Pos) -> None:
    """Warn as clang does, at ``pos`` (``source:3:14: warning: ...``); compiling goes on."""
    # Filed under the kernel's file and line, not the simulator's (whose line would be shown).
    warnings.warn_explicit(render_diagnostic(pos, "warning", message, None), CompileWarning, pos.file, pos.line)


class KernelRuntimeError(_ShownAlone, Exception):
    """A failure while the kernel runs; names the thread and the source position."""

    def __init__(
        self,
        message: str,
        pos: Pos | None = None,
        thread: tuple[int, int, int] | None = None,
        registry: SourceRegistry | None = None,
    ) -> None:
        self.message = message
        self.pos = pos
        self.thread = thread
        where = f"thread {thread}: " if thread is not None else ""
        if pos is not None:
            text = render_diagnostic(pos, "runtime error", where + message, registry)
        else:
            text = where + message
        super().__init__(text)


class ArgumentError(_ShownAlone, ValueError):
    """Bad arguments to a kernel launch (shapes, dtypes, grid...)."""


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """A "did you mean 'x'?" suffix for a misspelt identifier, or an empty string. Among names
    equally near, the float spelling of a constant before the half one: C's ``M_PI`` is as near
    ``M_PI_H`` as ``M_PI_F``, and difflib's own tie rule (the larger string) chose half, while a
    kernel computes in float."""
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=8, cutoff=0.6)
    if not close:
        return ""

    def nearness(candidate: str) -> float:
        return difflib.SequenceMatcher(None, candidate, name).ratio()  # as get_close_matches scores it

    best = nearness(close[0])
    tied = [c for c in close if nearness(c) == best]
    chosen = min(tied, key=lambda c: (c.endswith("_H"), c))
    return f"; did you mean '{chosen}'?"
