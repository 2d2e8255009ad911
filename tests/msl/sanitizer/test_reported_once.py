"""A finding is reported once (issue 31, item 2): one key (``FindingKey``: kind, place, buffer,
severity) and one record of what was reported (the launch context's), whichever part of the
simulator finds it (the executor through ``Ctx.report``, the sanitizer from its history) and
however often it happens."""

from __future__ import annotations

import numpy as np

from metal_puzzles.msl import FindingKind, SanitizeMode, Severity
from metal_puzzles.msl.executor.memory import Memory, view_of
from metal_puzzles.msl.executor.runtime import Ctx
from metal_puzzles.msl.lang.errors import Pos
from metal_puzzles.msl.lang.types import FLOAT, AddressSpace
from metal_puzzles.msl.observe.sanitizer import Sanitizer
from metal_puzzles.msl.thread_grid import Lanes

from .conftest import f32, findings_of, kernel, line_of

N = 4
READ = Pos("source", 5, 3)
WRITE = Pos("source", 3, 3)
OTHER_WRITE = Pos("source", 4, 3)


def _launch() -> tuple[Ctx, Sanitizer, Memory]:
    """One threadgroup of 4 threads, sanitized, with threadgroup memory 'tile' of 4 floats nobody wrote."""
    lanes = Lanes((N, 1, 1), (N, 1, 1))
    ctx = Ctx(lanes, SanitizeMode.WARN, max_steps=1000)
    ctx.sanitizer = Sanitizer()
    mem = Memory("tile", AddressSpace.THREADGROUP, FLOAT, 4 * N, regions=1, lane_region=lanes.group, writable=True)
    ctx.sanitizer.watch(mem, initialized=False)
    return ctx, ctx.sanitizer, mem


def _only(lane: int) -> np.ndarray:
    mask = np.zeros(N, dtype=bool)
    mask[lane] = True
    return mask


def _read_unwritten(ctx: Ctx, san: Sanitizer, mem: Memory) -> None:
    san.on_read(ctx, mem, np.zeros(N, dtype=np.int64), view_of(FLOAT), None, READ)


def _write_element_0(ctx: Ctx, san: Sanitizer, mem: Memory, lane: int, pos: Pos, value: float) -> None:
    san.on_write(ctx, mem, np.zeros(N, dtype=np.int64), view_of(FLOAT), _only(lane), pos,
                 np.full(N, value, dtype=np.float32))


def test_the_sanitizer_does_not_report_again_what_the_executor_reported() -> None:
    ctx, san, mem = _launch()
    ctx.report_first(FindingKind.UNINITIALIZED_READ, READ, 0, _only(0), "reported by the executor", buffer="tile")
    _read_unwritten(ctx, san, mem)
    assert [f.message for f in ctx.findings] == ["reported by the executor"]


def test_the_executor_does_not_report_again_what_the_sanitizer_reported() -> None:
    ctx, san, mem = _launch()
    _read_unwritten(ctx, san, mem)
    _read_unwritten(ctx, san, mem)
    ctx.report_first(FindingKind.UNINITIALIZED_READ, READ, 0, _only(0), "reported by the executor", buffer="tile")
    (found,) = ctx.findings
    assert found.kind == FindingKind.UNINITIALIZED_READ and "tile[0]" in found.message
    assert ctx.is_reported(FindingKind.UNINITIALIZED_READ, READ, "tile")


def test_a_race_with_two_earlier_writes_is_one_finding_and_a_note_is_another() -> None:
    ctx, san, mem = _launch()
    _write_element_0(ctx, san, mem, 0, WRITE, 1.0)
    _write_element_0(ctx, san, mem, 1, READ, 2.0)  # races with line 3's write
    _write_element_0(ctx, san, mem, 2, OTHER_WRITE, 3.0)  # races with line 5's
    _write_element_0(ctx, san, mem, 3, READ, 4.0)  # races again where it did, now with line 4's write
    # Storing what the element holds (the sanitizer runs before the store, which this test never
    # makes: it holds 0) is a benign race, a note: a finding of its own.
    _write_element_0(ctx, san, mem, 0, READ, 0.0)
    assert [(f.kind, f.pos, f.severity) for f in ctx.findings] == [
        (FindingKind.RACE, READ, Severity.ERROR), (FindingKind.RACE, OTHER_WRITE, Severity.ERROR),
        (FindingKind.RACE, READ, Severity.NOTE)]


def test_a_race_in_a_loop_is_reported_once() -> None:
    src = kernel("""
        threadgroup float tile[4];
        uint i = thread_position_in_threadgroup.x;
        for (uint k = 0; k < 8; k++) {
            tile[k % 4] = a[i];  // @BUG
        }
        out[i] = 0.0f;
    """)
    found = findings_of(src, {"a": f32(np.arange(4))}, {"out": ((4,), "float32")}, grid=(4, 1, 1), tg=(4, 1, 1))
    races = [f for f in found if f.kind == FindingKind.RACE]
    assert len(races) == 1 and races[0].pos.line == line_of(src, "@BUG")
