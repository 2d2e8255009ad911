"""Hints that explain a finding's cause: an index that went below zero in unsigned arithmetic, a
position computed from ``threads_per_threadgroup`` on a partial last threadgroup, and fixes
worded for who reads them (a puzzle's learner cannot pass ``init_value`` or ``max_steps``)."""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.checking import check_source
from metal_puzzles.msl import Audience, simulate
from metal_puzzles.puzzles import get_puzzle

from .conftest import kernel


def run(source: str, n: int, grid: int, group: int, out: int | None = None, **kw):
    with pytest.warns(RuntimeWarning):
        return simulate("k", ["a"], ["out"], source, inputs=[np.arange(n, dtype=np.float32)],
                        output_shapes=[(out or n,)], output_dtypes=["float32"], grid=(grid, 1, 1),
                        threadgroup=(group, 1, 1), sanitize="warn", **kw)


# ----------------------------------------------------------------------------- unsigned wrap-around
WINDOW = kernel("""
    threadgroup float s[8];
    uint li = thread_position_in_threadgroup.x;
    s[li] = a[li];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[li] = s[li] + s[li - 1];
""")


def test_a_wrapped_index_names_the_subtraction_and_its_operands():
    (f,) = run(WINDOW, 8, 8, 8).findings
    assert f.kind == "out-of-bounds" and f.index == 4294967295
    assert ("reads s[4294967295], outside the 8 elements of 's' (its threadgroup's copy): the index comes from "
            "'li - 1', which is unsigned (uint) arithmetic: with li = 0 it wraps around to 4294967295 instead of "
            "going below zero") in f.message
    assert "Test before subtracting (if (li >= 1)) or compute in a signed type (int(li) - 1)" in f.message


def test_both_operands_are_named_when_neither_is_a_literal():
    src = kernel("""
        uint i = thread_position_in_grid.x;
        uint back = 3;
        out[i] = a[(i - back) / 2];
    """)
    f = next(f for f in run(src, 8, 8, 8).findings if f.kind == "out-of-bounds")
    assert "'i - back'" in f.message and "with i = 0 and back = 3 it wraps around to 4294967293" in f.message


def test_a_cast_operand_is_written_as_the_source_wrote_it():
    """An operand that is a cast ('(uint)i', 'uint(i)') is quoted in C's notation (the hint once
    asked for a cast style that does not exist, and the kernel failed to compile)."""
    src = kernel("""
        int i = int(thread_position_in_grid.x);
        out[i] = a[(uint)i - 1u];
    """)
    f = next(f for f in run(src, 8, 8, 8).findings if f.kind == "out-of-bounds")
    assert "the index comes from '(uint)i - 1u'" in f.message and "it wraps around to 4294967295" in f.message
    assert "Test before subtracting (if ((uint)i >= 1u))" in f.message


def test_an_index_out_of_bounds_for_other_reasons_gets_no_wraparound_hint():
    src = "uint i = thread_position_in_grid.x;\nout[i] = a[i + 1];"
    f = next(f for f in run(src, 4, 4, 4).findings if f.kind == "out-of-bounds")
    assert "reads a[4]" in f.message and "unsigned" not in f.message


def test_a_subtraction_that_stays_positive_is_not_blamed():
    # i - 1 for i >= 1 stays in range; the out-of-bounds read is the + 4.
    src = "uint i = thread_position_in_grid.x;\nif (i >= 1) {\n    out[i] = a[i - 1 + 4];\n}"
    f = next(f for f in run(src, 8, 8, 8).findings if f.kind == "out-of-bounds")
    assert "unsigned" not in f.message


def test_the_pooling_mistake_in_a_puzzle():
    src = kernel("""
        threadgroup float shared[THREADGROUP_MEM_SIZE];
        uint i = thread_position_in_grid.x;
        uint local_i = thread_position_in_threadgroup.x;
        shared[local_i] = a[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[i] = shared[local_i] + shared[local_i - 1] + shared[local_i - 2];
    """)
    report = " ".join(check_source(get_puzzle("pooling"), src).report().split())  # lines break between words
    assert "shared[4294967295]" in report or "shared[4294967294]" in report
    assert "which is unsigned (uint) arithmetic: with local_i = 0 it wraps around" in report


# ----------------------------------------------------------------------------- partial threadgroups
TPT = kernel("""
    uint group = threadgroup_position_in_grid.x;
    uint i = group * threads_per_threadgroup.x + thread_position_in_threadgroup.x;
    if (i < a_shape[0]) {
        out[i] = a[i] + 10;
    }
""")


def test_threads_per_threadgroup_on_a_partial_group_names_the_dispatch_size():
    findings = run(TPT, 9, 10, 4).findings
    race = next(f for f in findings if f.kind == "race")
    assert "partial threadgroup of 2 threads where the others have 4" in race.message
    assert "Use dispatch_threads_per_threadgroup" in race.message
    assert "atomics" not in race.message  # not the way out here
    unwritten = next(f for f in findings if f.kind == "unwritten-output")
    assert "dispatch_threads_per_threadgroup does not" in unwritten.message


def test_a_cross_group_race_without_threads_per_threadgroup_still_suggests_atomics():
    src = "uint i = thread_position_in_grid.x;\nout[i / 4] = a[i];"
    race = next(f for f in run(src, 8, 8, 4, out=2).findings if f.kind == "race")
    assert "dispatch_threads_per_threadgroup" not in race.message and "atomics" in race.message


def test_whole_threadgroups_get_no_partial_group_hint():
    src = TPT.replace("out[i] = a[i] + 10;", "out[i / 2] = a[i];")
    findings = run(src, 8, 8, 4).findings
    assert findings and not any("dispatch_threads_per_threadgroup" in f.message for f in findings)


def test_in_two_dimensions_the_sizes_are_written_as_pairs():
    src = kernel("""
        uint x = threadgroup_position_in_grid.x * threads_per_threadgroup.x + thread_position_in_threadgroup.x;
        uint y = threadgroup_position_in_grid.y * threads_per_threadgroup.y + thread_position_in_threadgroup.y;
        if (x < 5 && y < 5) {
            out[y * 5 + x] = a[y * 5 + x];
        }
    """)
    with pytest.warns(RuntimeWarning):
        r = simulate("k", ["a"], ["out"], src, inputs=[np.zeros(25, np.float32)], output_shapes=[(25,)],
                     output_dtypes=["float32"], grid=(5, 5, 1), threadgroup=(3, 3, 1), sanitize="warn")
    race = next(f for f in r.findings if f.kind == "race")
    assert "partial threadgroup of (2, 3) threads where the others have (3, 3)" in race.message


# ----------------------------------------------------------------------------- who reads the hint
READ_BEFORE_WRITE = "uint i = thread_position_in_grid.x;\nout[i] = out[i] + a[i];"


def test_uninitialised_output_hint_depends_on_the_audience():
    caller = next(f for f in run(READ_BEFORE_WRITE, 4, 4, 4).findings if f.kind == "uninitialized-read")
    assert "launch with init_value" in caller.message
    puzzle = next(f for f in run(READ_BEFORE_WRITE, 4, 4, 4, audience=Audience.PUZZLE).findings
                  if f.kind == "uninitialized-read")
    assert "init_value" not in puzzle.message
    assert "outputs start uninitialised in this puzzle" in puzzle.message


def test_puzzle_checks_word_hints_for_the_learner():
    report = check_source(get_puzzle("map"), READ_BEFORE_WRITE.replace("a[i]", "a[i] + 10")).report()
    assert "uninitialized-read" in report and "init_value" not in report
    endless = "uint i = thread_position_in_grid.x;\nwhile (true) { i = i + 1; }"
    report = " ".join(check_source(get_puzzle("map"), endless).report().split())  # as read, not as wrapped
    assert "step-budget" in report and "max_steps" not in report and "every loop must end" in report


def test_findings_record_the_barrier_phase():
    src = kernel("""
        threadgroup float s[4];
        uint li = thread_position_in_threadgroup.x;
        s[li] = a[li];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        s[li] = 1;
        out[li] = s[3 - li];
    """)
    (race,) = [f for f in run(src, 4, 4, 4).findings if f.kind == "race"]
    assert race.phase == 1


# ----------------------------------------------------------------------------- lost atomic stores
def _stores(body: str, n: int = 8):
    return simulate("k", ["a"], ["out"], body, inputs=[np.arange(n, dtype=np.float32)], output_shapes=[(2,)],
                    output_dtypes=["float32"], grid=(n, 1, 1), threadgroup=(4, 1, 1), init_value=0.0,
                    atomic_outputs=True, sanitize="error")


def test_atomic_stores_of_different_values_to_one_element_say_which_update_survives():
    run = _stores("uint i = thread_position_in_grid.x;\n"
                  "atomic_store_explicit(&out[i % 2], a[i], memory_order_relaxed);")
    assert run.findings == []  # atomic: nothing races
    (hint,) = run.output_hints
    assert hint.startswith("line 2: thread 0 = 0 of threadgroup 0, thread 2 = 2 of threadgroup 0 and 2 other "
                           "threads store different values into out[0]")
    assert "only one of their updates survives" in hint and "use atomic_fetch_add_explicit" in hint


@pytest.mark.parametrize("body", [
    "uint i = thread_position_in_grid.x;\natomic_store_explicit(&out[i % 2], 1.0f, memory_order_relaxed);",
    "uint i = thread_position_in_grid.x;\nif (i < 2) atomic_store_explicit(&out[i], a[i], memory_order_relaxed);",
    "uint i = thread_position_in_grid.x;\natomic_fetch_add_explicit(&out[i % 2], a[i], memory_order_relaxed);",
])
def test_stores_that_lose_nothing_get_no_hint(body):
    assert _stores(body).output_hints == []


def test_a_partial_threadgroup_explains_a_wrong_output_with_the_kernel_s_own_names():
    from metal_puzzles.msl.shader_program import LaunchGeometry, ShaderLibrary

    lib = ShaderLibrary("kernel void k(device float* out [[buffer(0)]], uint tg [[threadgroup_position_in_grid]],\n"
                        "              uint w [[threads_per_threadgroup]], uint l [[thread_position_in_threadgroup]]) {\n"
                        "  atomic_fetch_add_explicit((device atomic_float*)&out[tg * w + l], 1.0f, memory_order_relaxed);\n}\n")
    run = lib.kernel("k").launch({0: np.zeros(6, np.float32)}, LaunchGeometry((6, 1, 1), (4, 1, 1)))
    (hint,) = run.output_hints
    assert ("w (threads_per_threadgroup) is the size of the thread's own threadgroup, and this launch ends in a "
            "partial threadgroup of 2 threads where the others have 4: a position computed as tg * w + l") in hint
    whole = lib.kernel("k").launch({0: np.zeros(8, np.float32)}, LaunchGeometry((8, 1, 1), (4, 1, 1)))
    assert whole.output_hints == []


def test_a_kernel_that_only_strides_by_the_threadgroup_size_gets_no_partial_threadgroup_hint():
    """A loop striding by threads_per_threadgroup is right in a partial threadgroup: no position is
    made from the size, so a wrong output there has another cause."""
    src = kernel("""
        uint g = threadgroup_position_in_grid.x;
        for (uint k = thread_position_in_threadgroup.x; k < 2; k += threads_per_threadgroup.x) {
            out[g * 2 + k] = a[g * 2 + k] + 1;
        }
    """)
    run_ = simulate("k", ["a"], ["out"], src, inputs=[np.arange(6, dtype=np.float32)], output_shapes=[(6,)],
                    output_dtypes=["float32"], grid=(5, 1, 1), threadgroup=(2, 1, 1), init_value=0.0)
    assert run_.findings == [] and run_.output_hints == []
    scaled = src.replace("uint g = threadgroup_position_in_grid.x;",
                         "uint g = threadgroup_position_in_grid.x * threads_per_threadgroup.x / 2;")
    with pytest.warns(RuntimeWarning, match="with the same value"):  # groups 1 and 2 write out[2] and out[3]
        run_ = simulate("k", ["a"], ["out"], scaled, inputs=[np.arange(6, dtype=np.float32)], output_shapes=[(6,)],
                        output_dtypes=["float32"], grid=(5, 1, 1), threadgroup=(2, 1, 1), init_value=0.0)
    assert run_.output_hints and "partial threadgroup of 1 thread where" in run_.output_hints[0]


# ----------------------------------------------------------------------------- where a barrier goes
def _race_message(body: str) -> str:
    with pytest.warns(RuntimeWarning):
        run_ = simulate("k", ["a"], ["out"], body, inputs=[np.arange(8, dtype=np.float32)], output_shapes=[(8,)],
                        output_dtypes=["float32"], grid=(8, 1, 1), threadgroup=(8, 1, 1), sanitize="warn")
    return next(f for f in run_.findings if f.kind == "race").message


def test_a_read_finding_a_write_of_its_own_line_in_a_loop_is_a_loop_carried_race():
    msg = _race_message(kernel("""
        threadgroup float s[8];
        uint li = thread_position_in_threadgroup.x;
        s[li] = a[li];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 4; k > 0; k /= 2) {
            if (li < k) s[li] += s[li + k];
        }
        out[li] = s[0];
    """))
    assert "line 6 wrote it in an earlier iteration of the loop and read it in a later one" in msg
    assert "at the end of the loop body, before the next iteration's reads (outside any if" in msg
    assert "read into a register" not in msg


def test_a_write_then_a_read_on_one_line_outside_a_loop_is_two_accesses_in_order():
    msg = _race_message(kernel("""
        threadgroup float s[8];
        uint li = thread_position_in_threadgroup.x;
        s[li] = a[li]; out[li] = s[7 - li];
    """))
    assert ("add threadgroup_barrier(mem_flags::mem_threadgroup) between the write and the read of line 3 (outside "
            "any if") in msg
    assert "iteration" not in msg and "read into a register" not in msg
