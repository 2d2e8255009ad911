"""The notebook's state as followed (variables by frame, kernels built), joining the states
of paths that may each have run, and the scopes and control flow of the code followed."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .known_values import UNBOUND, KernelBuild, Unknown, same_value


@dataclass
class State:
    """The notebook's variables (one dict per frame: 0 is the module) and the kernels built."""

    frames: dict[int, dict[str, Any]]
    kernels: dict[str, KernelBuild]

    def fork(self) -> State:
        return State({k: dict(v) for k, v in self.frames.items()}, dict(self.kernels))

    def same_as(self, other: State) -> bool:
        if self.frames.keys() != other.frames.keys() or self.kernels.keys() != other.kernels.keys():
            return False
        return all(_same_maps(self.frames[k], other.frames[k]) for k in self.frames) and \
            all(same_value(self.kernels[k], other.kernels[k]) for k in self.kernels)



def _same_maps(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)


def join(states: list[State], why: Unknown) -> State:
    """The state after paths that may each have run: what they agree on stays known; a variable
    or kernel on which they differ becomes unknown (``why``, unless it already was)."""
    if len(states) == 1:
        return states[0]
    frames: dict[int, dict[str, Any]] = {}
    for fid in dict.fromkeys(k for s in states for k in s.frames):
        present = [s.frames[fid] for s in states if fid in s.frames]
        out = {}
        for name in dict.fromkeys(n for f in present for n in f):
            values = [f.get(name, UNBOUND) for f in present]
            if all(same_value(values[0], v) for v in values[1:]):
                out[name] = values[0]
            else:
                out[name] = next((v for v in values if isinstance(v, Unknown)), why)
        frames[fid] = out
    kernels: dict[str, KernelBuild] = {}
    for name in dict.fromkeys(k for s in states for k in s.kernels):
        builds = [s.kernels.get(name) for s in states]
        first = builds[0]
        if first is not None and all(b is not None and same_value(first, b) for b in builds[1:]):
            kernels[name] = first
        else:
            known = next(b for b in builds if b is not None)
            kernels[name] = replace(known, source=why, header="")
    for f in frames.values():  # a name unbound on some path stays "maybe unbound": unknown
        for k, v in f.items():
            if v is UNBOUND:
                f[k] = why
    return State(frames, kernels)


# ----------------------------------------------------------------------------- control flow
class PathEnded(Exception):
    """This path of execution ended here (return, break, continue, raise): its state went to
    the sink of the construct it leaves."""


class GiveUp(Exception):
    """The evaluator stops following the notebook (a bound was reached)."""

    def __init__(self, construct: str) -> None:
        super().__init__(construct)
        self.construct = construct


@dataclass
class Scope:
    """Where names are read and written: the module, a function's frame, a class body."""

    frame: int
    kind: str  # "module" | "function" | "class"
    local_names: frozenset[str] = frozenset()
    global_names: frozenset[str] = frozenset()
    nonlocal_names: frozenset[str] = frozenset()
    closure: tuple[int, ...] = ()


@dataclass
class LoopSinks:
    breaks: list[State] = field(default_factory=list)
    continues: list[State] = field(default_factory=list)


@dataclass
class Outcome:
    """What following a notebook gave: the kernels as they were last built, notes about cells."""

    kernels: dict[str, KernelBuild]
    notes: list[str]


