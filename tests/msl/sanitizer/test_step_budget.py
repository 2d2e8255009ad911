"""Planted endless loops: the run stops at the step budget with a 'step-budget' finding that
points at the loop, in every sanitize mode. ``max_steps`` is kept small so each test is quick."""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import SanitizerError

from .conftest import ANY, expect_one_kind, f32, findings_of, i32, kernel, launch, line_of

BUDGET = "step-budget"


def test_while_loop_missing_increment() -> None:
    """A grid-stride while loop that never advances its index."""
    src = kernel("""
        uint k = thread_position_in_grid.x;
        while (k < 16) {  // @BUG
            out[k] = a[k];
        }
    """)
    found = findings_of(src, {"a": f32(np.arange(16))}, {"out": ((16,), "float32")},
                        grid=(8, 1, 1), tg=(4, 1, 1), max_steps=300)
    expect_one_kind(found, BUDGET, line_of(src, "@BUG"), None, ANY, ANY)
    assert "300" in found[0].message or "step" in found[0].message


def test_unsigned_countdown_never_ends() -> None:
    """`for (uint k = 3; k >= 0; k--)`: an unsigned k is always >= 0, the classic C trap."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        float acc = 0.0f;
        for (uint k = 3; k >= 0; k--) {  // @BUG
            acc += float(k & 1u);
        }
        out[i] = acc;
    """)
    found = findings_of(src, {}, {"out": ((4,), "float32")}, grid=(4, 1, 1), tg=(4, 1, 1),
                        max_steps=500)
    expect_one_kind(found, BUDGET, line_of(src, "@BUG"), None, ANY, ANY)


def test_one_thread_of_one_threadgroup_loops_forever_2d() -> None:
    """A countdown by 2 that only ends on even starts: thread (1, 1) starts at 5 and never stops
    while all the others finish; the whole run still stops at the budget."""
    src = kernel("""
        uint2 g = thread_position_in_grid.xy;
        int v = a[g.y * 4 + g.x];
        int steps = 0;
        while (v != 0) {  // @BUG
            v -= 2;
            steps++;
        }
        out[g.y * 4 + g.x] = float(steps);
    """)
    a = np.full(16, 4, dtype=np.int32)
    a[1 * 4 + 1] = 5
    found = findings_of(src, {"a": a}, {"out": ((4, 4), "float32")}, grid=(4, 4, 1),
                        tg=(2, 2, 1), max_steps=400)
    expect_one_kind(found, BUDGET, line_of(src, "@BUG"), None, ANY, ANY)


def test_do_while_skips_its_exit_value() -> None:
    """A do-while stepping by 3 that waits for exactly 10 never sees it (0, 3, 6, 9, 12, ...)."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        int k = 0;
        do {  // @DO
            k += 3;
        } while (k != 10);  // @WHILE
        out[i] = float(k);
    """)
    found = findings_of(src, {}, {"out": ((2,), "float32")}, grid=(2, 1, 1), tg=(2, 1, 1),
                        max_steps=200)
    expect_one_kind(found, BUDGET, None, None, ANY, ANY)
    assert found[0].pos is not None
    assert found[0].pos.line in (line_of(src, "@DO"), line_of(src, "@WHILE"))


def test_budget_overrun_stops_even_with_sanitize_off() -> None:
    """'off' reports nothing else, but an endless loop must still stop the run with an error;
    'warn' stops the run too and hands back the step-budget finding with a warning."""
    src = kernel("""
        int k = int(thread_position_in_grid.x);
        while (k >= 0) {  // @BUG
            k = k % 3;
        }
        out[0] = 1.0f;
    """)
    kw = {"grid": (3, 1, 1), "tg": (3, 1, 1), "max_steps": 150}
    with pytest.raises(SanitizerError) as info:
        launch(src, {}, {"out": ((1,), "float32")}, sanitize="off", **kw)
    assert [f.kind for f in info.value.findings] == [BUDGET]
    assert info.value.findings[0].pos.line == line_of(src, "@BUG")
    with pytest.warns(RuntimeWarning, match=BUDGET):
        res = launch(src, {}, {"out": ((1,), "float32")}, sanitize="warn", **kw)
    assert [f.kind for f in res.findings] == [BUDGET]


def test_loop_within_budget_is_fine_and_budget_counts_iterations() -> None:
    """A loop of 50 iterations runs under max_steps=200 and stops under max_steps=20."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        int acc = 0;
        for (int k = 0; k < n; k++) {  // @LOOP
            acc += k;
        }
        out[i] = acc;
    """)
    args = ({"n": np.int32(50)}, {"out": ((4,), "int32")})
    res = launch(src, *args, grid=(4, 1, 1), tg=(4, 1, 1), max_steps=200)
    assert res.findings == [] and res.outputs[0].tolist() == [1225] * 4
    found = findings_of(src, *args, grid=(4, 1, 1), tg=(4, 1, 1), max_steps=20)
    expect_one_kind(found, BUDGET, line_of(src, "@LOOP"), None, ANY, ANY)


def test_default_budget_stops_an_endless_loop() -> None:
    """Without max_steps the default budget (100000 lock-step iterations) still ends the run."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        uint k = 0;
        while (k < 10) {  // @BUG
            k = k * 2;
        }
        out[i] = float(k);
    """)
    found = findings_of(src, {"unused": i32([0])}, {"out": ((1,), "float32")},
                        grid=(1, 1, 1), tg=(1, 1, 1))
    expect_one_kind(found, BUDGET, line_of(src, "@BUG"), None, ANY, ANY)
    assert "100000" in found[0].message


def test_inner_loop_endless_for_one_thread() -> None:
    """An inner loop that steps past its exit value only in thread 5 (step 3 never hits 4)."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        float acc = 0.0f;
        for (int k = 0; k < 3; k++) {
            int j = 0;
            while (j != 4) {  // @BUG
                j += (i == 5) ? 3 : 1;
            }
            acc += float(j);
        }
        out[i] = acc;
    """)
    found = findings_of(src, {}, {"out": ((8,), "float32")}, grid=(8, 1, 1), tg=(4, 1, 1),
                        max_steps=500)
    expect_one_kind(found, BUDGET, line_of(src, "@BUG"), None, ANY, ANY)
