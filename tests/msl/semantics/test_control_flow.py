"""Control flow under divergence: every thread follows its own path through if/else, loops
with per-thread trip counts, break/continue/return inside divergent branches, nested loops.

Expected outputs are computed by plain Python loops that mirror each thread's path.
"""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import out0, run

N = 8
GRID = (N, 1, 1)


def ints(src: str, n: int = N, **kw: object) -> list[int]:
    """Run `src` over n threads with an int32 output of n elements; return it as a list."""
    return out0(src, out=((n,), "int32"), grid=(n, 1, 1), **kw).tolist()


def test_if_else_per_thread() -> None:
    """Even threads take the if branch, odd ones the else branch."""
    src = """
    uint i = thread_position_in_grid.x;
    if (i % 2 == 0) { out[i] = 100 + i; } else { out[i] = 200 + i; }
    """
    assert ints(src) == [(100 if i % 2 == 0 else 200) + i for i in range(N)]


def test_else_if_chain() -> None:
    """An else-if chain picks the first true condition per thread."""
    src = """
    int i = thread_position_in_grid.x;
    int r;
    if (i < 2) r = 1;
    else if (i < 5) r = 2;
    else if (i == 5) r = 3;
    else r = 4;
    out[i] = r;
    """
    assert ints(src) == [1, 1, 2, 2, 2, 3, 4, 4]


def test_nested_if_divergence() -> None:
    """Nested conditions: each thread lands in one of four leaves."""
    src = """
    int i = thread_position_in_grid.x;
    int r = 0;
    if (i < 4) { if (i % 2 == 0) r = 10; else r = 11; }
    else { if (i % 2 == 0) r = 20; else { r = 21; } }
    out[i] = r;
    """
    assert ints(src) == [10, 11, 10, 11, 20, 21, 20, 21]


def test_data_dependent_branch() -> None:
    """The branch depends on input data, not on the thread index."""
    a = np.array([3, -1, 0, 7, -5, 2, -2, 0], dtype=np.int32)
    src = """
    uint i = thread_position_in_grid.x;
    if (a[i] > 0) out[i] = 1; else if (a[i] < 0) out[i] = -1; else out[i] = 0;
    """
    assert ints(src, inputs={"a": a}) == np.sign(a).tolist()


def test_if_without_braces_only_guards_one_statement() -> None:
    """`if (c) x = 1; y = 2;` — the second statement always runs."""
    src = """
    int i = thread_position_in_grid.x;
    int x = 0; int y = 0;
    if (i > 3) x = 1; y = 2;
    out[i] = x * 10 + y;
    """
    assert ints(src) == [2, 2, 2, 2, 12, 12, 12, 12]


def test_dangling_else_binds_to_nearest_if() -> None:
    """`if (a) if (b) x; else y;` — the else belongs to the inner if."""
    src = """
    int i = thread_position_in_grid.x;
    int r = 0;
    if (i >= 2) if (i >= 6) r = 1; else r = 2;
    out[i] = r;
    """
    assert ints(src) == [0, 0, 2, 2, 2, 2, 1, 1]


def test_for_loop_per_thread_trip_count() -> None:
    """Thread i sums 0..i-1: trip counts differ across threads."""
    src = """
    int i = thread_position_in_grid.x;
    int s = 0;
    for (int k = 0; k < i; k++) s += k;
    out[i] = s;
    """
    assert ints(src) == [i * (i - 1) // 2 for i in range(N)]


def test_while_loop_collatz_steps() -> None:
    """A data-dependent while loop: Collatz step counts differ wildly per thread."""
    start = [1, 2, 3, 6, 7, 9, 12, 27]

    def steps(n: int) -> int:
        c = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            c += 1
        return c

    src = """
    uint i = thread_position_in_grid.x;
    int n = a[i]; int c = 0;
    while (n != 1) { if (n % 2 == 0) n /= 2; else n = 3 * n + 1; c++; }
    out[i] = c;
    """
    assert ints(src, inputs={"a": np.array(start, dtype=np.int32)}) == [steps(n) for n in start]


def test_do_while_runs_body_at_least_once() -> None:
    """do { } while (false) still runs once, even for threads whose condition is false."""
    src = """
    int i = thread_position_in_grid.x;
    int c = 0; int k = i;
    do { c++; k++; } while (k < 4);
    out[i] = c;
    """
    assert ints(src) == [max(4 - i, 1) for i in range(N)]


def test_break_in_divergent_branch() -> None:
    """Each thread breaks out at its own iteration."""
    src = """
    int i = thread_position_in_grid.x;
    int k = 0;
    for (; k < 100; k++) { if (k * k >= i * 3) break; }
    out[i] = k;
    """
    expected = []
    for i in range(N):
        k = 0
        while k < 100 and not k * k >= i * 3:
            k += 1
        expected.append(k)
    assert ints(src) == expected


def test_continue_skips_rest_of_iteration() -> None:
    """continue skips odd k; thread i sums the even numbers below i + 3."""
    src = """
    int i = thread_position_in_grid.x;
    int s = 0;
    for (int k = 0; k < i + 3; k++) { if (k % 2 == 1) continue; s += k; }
    out[i] = s;
    """
    assert ints(src) == [sum(k for k in range(i + 3) if k % 2 == 0) for i in range(N)]


def test_continue_in_while_runs_condition_again() -> None:
    """continue in a while loop jumps to the condition (the increment is before it here)."""
    src = """
    int i = thread_position_in_grid.x;
    int k = 0; int s = 0;
    while (k < 10) { k++; if (k % 3 != (i % 3)) continue; s += k; }
    out[i] = s;
    """
    assert ints(src) == [sum(k for k in range(1, 11) if k % 3 == i % 3) for i in range(N)]


def test_continue_in_do_while_evaluates_condition() -> None:
    """continue inside do-while goes to the condition check, not the top of the body."""
    src = """
    int i = thread_position_in_grid.x;
    int k = 0; int s = 0;
    do { k++; if (k == i) continue; s += k; } while (k < 5);
    out[i] = s;
    """
    assert ints(src) == [sum(k for k in range(1, 6) if k != i) for i in range(N)]


def test_nested_loops_break_inner_only() -> None:
    """break leaves the inner loop only; the outer loop keeps going."""
    src = """
    int i = thread_position_in_grid.x;
    int s = 0;
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 10; c++) { if (c > i) break; s += 1; }
    }
    out[i] = s;
    """
    assert ints(src) == [3 * (i + 1) for i in range(N)]


def test_nested_loops_continue_outer_via_flag() -> None:
    """A flag set in the inner loop makes the outer loop continue."""
    src = """
    int i = thread_position_in_grid.x;
    int s = 0;
    for (int r = 0; r < 4; r++) {
        bool skip = false;
        for (int c = 0; c < 4; c++) { if (r * 4 + c == i) { skip = true; break; } }
        if (skip) continue;
        s += r;
    }
    out[i] = s;
    """
    assert ints(src) == [sum(r for r in range(4) if not (r * 4 <= i < r * 4 + 4)) for i in range(N)]


def test_return_inside_loop_stops_thread() -> None:
    """A thread that returns mid-loop writes nothing after the return."""
    src = """
    int i = thread_position_in_grid.x;
    for (int k = 0; k < 10; k++) {
        if (k == i) { out[i] = k * 100; return; }
    }
    out[i] = -1;
    """
    assert ints(src, n=12) == [i * 100 if i < 10 else -1 for i in range(12)]


def test_early_return_does_not_write_later() -> None:
    """Threads that return early leave their element at init_value."""
    src = """
    int i = thread_position_in_grid.x;
    if (i % 3 == 0) return;
    out[i] = i;
    """
    assert ints(src, init_value=-7) == [-7 if i % 3 == 0 else i for i in range(N)]


def test_return_in_else_branch() -> None:
    """Return can sit in either branch of a divergent if."""
    src = """
    int i = thread_position_in_grid.x;
    if (i < 3) { out[i] = 1; } else { return; }
    out[i] += 10;
    """
    assert ints(src, init_value=0) == [11, 11, 11, 0, 0, 0, 0, 0]


def test_returned_threads_do_not_affect_remaining_ones() -> None:
    """After half the threads return, the others still loop and write correctly."""
    src = """
    int i = thread_position_in_grid.x;
    if (i >= 4) return;
    int s = 0;
    for (int k = 0; k <= i; k++) s += a[k];
    out[i] = s;
    """
    a = np.array([1, 2, 3, 4, 5, 6, 7, 8], dtype=np.int32)
    assert ints(src, inputs={"a": a}, init_value=0) == [1, 3, 6, 10, 0, 0, 0, 0]


def test_unsigned_countdown_loop() -> None:
    """for (uint k = n; k-- > 0;) visits n-1 .. 0 and stops (no wrap-around run-away)."""
    src = """
    uint i = thread_position_in_grid.x;
    int s = 0;
    for (uint k = i; k-- > 0;) s = s * 2 + 1;
    out[i] = s;
    """
    assert ints(src) == [2**i - 1 for i in range(N)]


def test_for_with_two_loop_variables() -> None:
    """for (int a = 0, b = 10; a < b; a++, b--) meets in the middle."""
    src = """
    int i = thread_position_in_grid.x;
    int steps = 0;
    for (int x = 0, y = 10 + i; x < y; x++, y--) steps++;
    out[i] = steps;
    """
    assert ints(src) == [(10 + i + 1) // 2 for i in range(N)]


def test_loop_variable_scoped_to_loop() -> None:
    """A for-loop variable shadows an outer one only inside the loop."""
    src = """
    int i = thread_position_in_grid.x;
    int k = 100;
    int s = 0;
    for (int k = 0; k < 3; k++) s += k;
    out[i] = k + s;
    """
    assert ints(src) == [103] * N


def test_block_scope_shadowing() -> None:
    """An inner block's declaration does not change the outer variable."""
    src = """
    int i = thread_position_in_grid.x;
    int x = 1;
    { int x = 2; x += i; }
    out[i] = x;
    """
    assert ints(src) == [1] * N


def test_while_true_with_break() -> None:
    """while (true) terminates through a per-thread break."""
    src = """
    int i = thread_position_in_grid.x;
    int k = 0;
    while (true) { k += 2; if (k > i) break; }
    out[i] = k;
    """
    assert ints(src) == [(i // 2 + 1) * 2 for i in range(N)]


def test_for_without_condition_and_break() -> None:
    """for (;;) with a break is an infinite loop that every thread leaves."""
    src = """
    int i = thread_position_in_grid.x;
    int k = 0;
    for (;;) { if (k == i) break; k++; }
    out[i] = k;
    """
    assert ints(src) == list(range(N))


def test_zero_trip_loop_body_never_runs() -> None:
    """A loop whose condition is false at entry does not run (and reads nothing)."""
    src = """
    uint i = thread_position_in_grid.x;
    float s = 0;
    for (uint k = 0; k < i; k++) s += a[k];
    out[i] = s;
    """
    a = np.arange(8, dtype=np.float32)
    res = run(src, inputs={"a": a}, out=((4,), "float32"), grid=(4, 1, 1))
    assert res.outputs[0].tolist() == [0.0, 0.0, 1.0, 3.0]
    assert res.counts.global_reads.tolist() == [0, 1, 2, 3]


def test_variable_declared_in_branch_is_per_thread() -> None:
    """Thread-local variables never leak between threads even on divergent paths."""
    src = """
    int i = thread_position_in_grid.x;
    int v = i;
    if (i % 2) { v = v * 3; } else { int w = v + 100; v = w; }
    out[i] = v;
    """
    assert ints(src) == [i * 3 if i % 2 else i + 100 for i in range(N)]


def test_deep_divergence_in_loop_with_break_and_continue() -> None:
    """A loop mixing continue and break on different threads at different iterations."""
    src = """
    int i = thread_position_in_grid.x;
    int s = 0;
    for (int k = 0; k < 20; k++) {
        if ((k + i) % 3 == 0) continue;
        if (s > 10 + i) break;
        s += k;
    }
    out[i] = s;
    """
    expected = []
    for i in range(N):
        s = 0
        for k in range(20):
            if (k + i) % 3 == 0:
                continue
            if s > 10 + i:
                break
            s += k
        expected.append(s)
    assert ints(src) == expected


@pytest.mark.parametrize("limit", [0, 1, 5])
def test_loop_bound_from_input_buffer(limit: int) -> None:
    """A loop bound read from a buffer (uniform across threads) is honoured exactly."""
    src = """
    uint i = thread_position_in_grid.x;
    int s = 0;
    for (int k = 0; k < n[0]; k++) s += i;
    out[i] = s;
    """
    n = np.array([limit] * 8, dtype=np.int32)
    assert ints(src, inputs={"n": n}) == [limit * i for i in range(N)]


def test_switch_statement_or_clear_compile_error() -> None:
    """switch with fall-through: either exact C behaviour or a CompileError, never a wrong answer."""
    from metal_puzzles.msl import CompileError

    src = """
    int i = thread_position_in_grid.x;
    int r = 0;
    switch (i) {
        case 0: r = 10; break;
        case 1: r = 20;
        case 2: r += 1; break;
        default: r = -1;
    }
    out[i] = r;
    """
    try:
        got = ints(src, n=4)
    except CompileError:
        return
    assert got == [10, 21, 1, -1]
