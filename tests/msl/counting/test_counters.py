"""The per-thread access counters have one list, ``msl.counting.counters.Counter``: every member has its
label, memory spaces and access kind, and the run record, the budget, the budget details, the
score table and the explorer all take their counters from it."""

from __future__ import annotations

from dataclasses import fields

import mlx.core as mx
import numpy as np
import pytest

from metal_puzzles.checking import Budget
from metal_puzzles.checking.budget_detail import worst_thread_accesses
from metal_puzzles.explorer.widgets import Explorer
from metal_puzzles.msl import Counter, Counts, simulate
from metal_puzzles.msl.counting import counters
from metal_puzzles.msl.counting.access_kind import AccessKind
from metal_puzzles.msl.lang.types import AddressSpace
from metal_puzzles.notebook.problem import MetalProblem

# Every counter a different number per thread, so that a column showing the wrong counter fails.
SOURCE = """
threadgroup float s[4];
uint i = thread_position_in_grid.x;
s[i] = a[i] + a[0];
threadgroup_barrier(mem_flags::mem_threadgroup);
float t = s[0] + s[1] + s[2];
for (uint k = 0; k < 4; k++) {
    out[i * 4 + k] = t;
}
for (uint k = 0; k < 5; k++) {
    atomic_fetch_add_explicit((device atomic_int*)&count[0], 1, memory_order_relaxed);
}
"""
PER_THREAD = {Counter.GLOBAL_READS: 2, Counter.GLOBAL_WRITES: 4, Counter.SHARED_READS: 3,
              Counter.SHARED_WRITES: 1, Counter.ATOMICS: 5}


@pytest.fixture(scope="module")
def run():
    return simulate("counters", ["a"], ["out", "count"], SOURCE, inputs=[np.arange(4, dtype=np.float32)],
                    output_shapes=[(16,), (1,)], output_dtypes=["float32", "int32"], grid=(4, 1, 1),
                    threadgroup=(4, 1, 1), init_value=0, trace=True)


def test_every_counter_has_a_label_memory_spaces_and_an_access_kind():
    assert set(counters._DETAILS) == set(Counter), "a Counter without its entry in counters._DETAILS"
    labels = [c.label for c in Counter]
    assert all(labels) and len(set(labels)) == len(labels), labels
    for c in Counter:
        assert c.spaces and all(isinstance(s, AddressSpace) for s in c.spaces), c
        assert isinstance(c.access, AccessKind), c


def test_the_run_record_and_the_budget_have_a_field_per_counter():
    assert [f.name for f in fields(Counts)] == [c.value for c in Counter]
    budget_fields = {f.name for f in fields(Budget)}
    assert {c.value for c in Counter} <= budget_fields


def test_each_counter_counts_the_accesses_its_spaces_and_kind_name(run):
    buffers = set(run.input_names) | set(run.output_names)
    for c in Counter:
        assert run.counts.of(c).tolist() == [PER_THREAD[c]] * 4, c
        for lane in range(4):
            traced = [a for a in run.trace.element_accesses(lane=lane) if a.kind == c.access and a.space in c.spaces
                      and (a.space == AddressSpace.THREADGROUP or a.buffer in buffers)]
            assert len(traced) == PER_THREAD[c], (c, lane)
    assert run.outputs[1].tolist() == [20]


def test_the_score_table_has_a_column_per_counter_headed_by_its_label(run):
    problem = MetalProblem("Counters", lambda a: None, [mx.arange(4)], (16,), grid=(4, 1, 1), threadgroup=(4, 1, 1))
    table = problem.score_table(run)
    assert table.columns == ("Global Reads", "Global Writes", "Shared Reads", "Shared Writes", "Atomic Operations")
    assert table.columns == tuple(c.heading for c in Counter)
    assert table.rows[0].cells == tuple(str(PER_THREAD[c]) for c in Counter)


def test_the_explorer_counts_every_counter_under_its_label(run):
    explorer = Explorer(run, "counters")
    explorer.thread.value = 1
    for c in Counter:
        assert f"<td>{c.label}</td><td class='mp-mine'>{PER_THREAD[c]}</td>" in explorer.counts.value, c


def test_an_over_budget_counter_is_named_by_its_label(run):
    budget = Budget(global_reads=2, atomics=1)
    assert budget.limits() == {"global_reads": 2, "atomics": 1}
    assert budget.exceeded(run.counts.max()) == [
        "uses 5 atomic operations per thread; this puzzle needs at most 1"]


def test_the_budget_detail_lists_the_worst_threads_accesses_of_any_counter(run):
    assert worst_thread_accesses(run, Counter.SHARED_READS) == (
        "thread 0 reads s[0] (line 6), s[1] (line 6) and s[2] (line 6)")
    assert worst_thread_accesses(run, "atomics") == (
        "thread 0 atomically updates count[0] (line 11), count[0] (line 11), count[0] (line 11), "
        "count[0] (line 11) and count[0] (line 11)")
