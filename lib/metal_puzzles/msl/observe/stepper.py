"""Step-through record: before every statement the kernel executes (in lock-step), which threads
are active and what each of the kernel's local variables holds — what a learner needs to watch
a loop, a guard or a reduction unfold one statement at a time. After the kernel's last statement
one more step, the end, holds what the variables were left with, so that stepping can show the
effect of the last line.

Steps are numbered in execution order from 0. The number of the statement running now
(``Stepper.current``) is what findings and trace events carry to be found again on their exact
line and loop iteration; it keeps counting past the record's limit, so a number past the
record's end is never mistaken for a recorded step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..executor.codegen.masks import Mask
from ..executor.memory import Ptr
from ..executor.runtime import Ctx
from ..front.symbols import Var, VarKind
from ..lang.errors import Pos
from ..lang.types import AddressSpace

MAX_STEPS_RECORDED = 4000


@dataclass
class Step:
    line: int | None  # None: the end step, after the last statement
    file: str
    active: np.ndarray  # bool per lane
    values: dict[str, np.ndarray]  # variable name -> per-lane value (lane axis first)
    end: bool = False  # the state after the kernel's last statement


class Stepper:
    def __init__(self, variables: list[Var]) -> None:
        self.variables = variables
        self.steps: list[Step] = []
        self.truncated = False
        #: Statements begun so far (recorded or not).
        self.begun = 0

    @property
    def current(self) -> int | None:
        """The number of the statement running now (None before the first one)."""
        return self.begun - 1 if self.begun else None

    def before(self, ctx: Ctx, pos: Pos, mask: Mask) -> None:
        if ctx.call_depth or pos.file not in ("source",):
            return  # only the kernel body's own statements
        self.begun += 1
        if len(self.steps) >= MAX_STEPS_RECORDED:
            self.truncated = True
            return
        active = np.ones(ctx.n, dtype=bool) if mask is None else mask.copy()
        self.steps.append(Step(pos.line, pos.file, active, self._values(ctx)))

    def finish(self, ctx: Ctx) -> None:
        """Record the end step: every thread done, its variables as the kernel left them. A
        truncated record gets none (its last recorded step is not the kernel's last)."""
        self.begun += 1
        if len(self.steps) >= MAX_STEPS_RECORDED:
            self.truncated = True
            return
        self.steps.append(Step(None, "source", np.ones(ctx.n, dtype=bool), self._values(ctx), end=True))

    def _values(self, ctx: Ctx) -> dict[str, np.ndarray]:
        values = {}
        slots = ctx.slots
        for var in self.variables:
            if var.slot is None or var.slot >= len(slots):
                continue
            v = slots[var.slot]
            if v is None:
                continue
            shown = _lane_values(ctx, var, v)
            if shown is not None:
                values[var.name] = shown
        return values


def _lane_values(ctx: Ctx, var: Var, v: Any) -> Any:
    n = ctx.n
    if isinstance(v, Ptr):
        mem = v.mem
        if mem is None:
            return None
        if var.kind in (VarKind.ARRAY, VarKind.MEMVAR) and mem.space == AddressSpace.THREAD:
            rows = mem.values().reshape(mem.regions, -1)
            return rows if var.kind == VarKind.ARRAY else rows[:, 0].copy()
        if var.kind in (VarKind.ARRAY, VarKind.TGVAR):
            return None  # threadgroup arrays are drawn, not listed per thread
        off = np.broadcast_to(np.asarray(v.off), (n,))
        return np.array([f"&{mem.name}[{int(o)}]" for o in off], dtype=object)
    arr = np.asarray(v)
    vector = arr.ndim >= 1 and arr.shape[-1] in (2, 3, 4) and (arr.ndim == 2 or (arr.ndim == 1 and arr.shape[0] != n))
    lane_axis = arr.ndim >= 1 and arr.shape[0] == n and not (vector and arr.ndim == 1)
    if not lane_axis:
        arr = np.broadcast_to(arr, (n,) + arr.shape)
    return np.array(arr, copy=True)
