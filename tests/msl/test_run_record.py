"""The run record: per-thread counts and the access trace with provenance (who wrote what, from what)."""

import numpy as np

from metal_puzzles.msl import simulate

POOL_HEADER = "constant uint SIZE = 8;"
POOL = """
threadgroup float shared[SIZE];
uint i = thread_position_in_grid.x;
uint li = thread_position_in_threadgroup.x;
if (i < a_shape[0]) shared[li] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < a_shape[0]) {
  float s = shared[li];
  if (li >= 1) s += shared[li - 1];
  if (li >= 2) s += shared[li - 2];
  out[i] = s;
}
"""


def pool_run(n=8, tg=4):
    return simulate("pool", ["a"], ["out"], POOL, POOL_HEADER, inputs=[np.arange(n, dtype=np.float32)],
                    output_shapes=[(n,)], output_dtypes=["float32"], grid=(n, 1, 1), threadgroup=(tg, 1, 1))


def test_trace_records_phases_lines_and_threadgroup_local_indices():
    r = pool_run()
    writes = r.trace.accesses("write", "shared")
    assert len(writes) == 1
    w = writes[0]
    assert w.line == 5 and w.space == "threadgroup"
    assert w.index.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]  # index within each threadgroup's copy
    assert w.group.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert set(w.phase.tolist()) == {0}
    reads = r.trace.accesses("read", "shared")
    assert all(set(e.phase.tolist()) == {1} for e in reads)  # after the barrier


def test_provenance_follows_data_through_threadgroup_memory():
    r = pool_run()
    (w_shared,) = r.trace.accesses("write", "shared")
    assert [sorted(s) for s in w_shared.sources[:2]] == [[("a", -1, 0)], [("a", -1, 1)]]
    (w_out,) = r.trace.accesses("write", "out")
    lane3 = list(w_out.lanes).index(3)
    assert sorted(w_out.sources[lane3]) == [("shared", 0, 1), ("shared", 0, 2), ("shared", 0, 3)]
    lane4 = list(w_out.lanes).index(4)  # first thread of the second threadgroup reads only its own element
    assert sorted(w_out.sources[lane4]) == [("shared", 1, 0)]


def test_provenance_ignores_indices_and_conditions():
    src = """
    uint t = thread_position_in_grid.x;
    int j = idx[t];
    if (x[j] > 0) out[t] = x[j] * 2; else out[t] = 0;
    """
    r = simulate("gather", ["x", "idx"], ["out"], src, inputs=[np.array([1, -1, 3, 4, 5, 6, 7, 8], np.float32),
                                                              np.array([2, 1, 0, 3, 0, 0, 0, 0], np.int32)],
                 output_shapes=[(4,)], output_dtypes=["float32"], grid=(4, 1, 1), threadgroup=(4, 1, 1))
    assert r.outputs[0].tolist() == [6, 0, 2, 8]
    then_write = r.trace.accesses("write", "out")[0]
    # the value came from x[idx[t]] only: neither idx nor the condition flows into it
    assert [sorted(s) for s in then_write.sources] == [[("x", -1, 2)], [("x", -1, 0)], [("x", -1, 3)]]
    else_write = r.trace.accesses("write", "out")[1]
    assert else_write.sources == [frozenset()]


def test_counts_are_per_thread_in_grid_order():
    r = pool_run(n=6, tg=4)
    # thread 0 reads 1 shared element, thread 1 reads 2, threads 2.. read 3; threads 4,5 are in group 1
    assert r.counts.shared_reads.tolist() == [1, 2, 3, 3, 1, 2]
    assert r.counts.global_reads.tolist() == [1] * 6
    assert r.counts.max() == {"global_reads": 1, "global_writes": 1, "shared_reads": 3, "shared_writes": 1,
                              "atomics": 0}


def test_large_launches_skip_the_trace_unless_asked():
    n = 4096
    kw = dict(inputs=[np.zeros(n, np.float32)], output_shapes=[(n,)], output_dtypes=["float32"],
              grid=(n, 1, 1), threadgroup=(256, 1, 1))
    src = "uint i = thread_position_in_grid.x; out[i] = a[i];"
    assert simulate("m", ["a"], ["out"], src, **kw).trace is None
    assert simulate("m", ["a"], ["out"], src, trace=True, **kw).trace is not None


def test_provenance_survives_conversions_and_atomics():
    n = 4
    r = simulate("conv", ["a"], ["out"], "uint i = thread_position_in_grid.x; out[i] = float(a[i]) / 2 + 10;",
                 inputs=[np.arange(n, dtype=np.int32)], output_shapes=[(n,)], output_dtypes=["float32"],
                 grid=(n, 1, 1), threadgroup=(n, 1, 1))
    assert [sorted(s) for s in r.trace.accesses("write")[0].sources] == [[("a", -1, i)] for i in range(n)]
    src = "uint t = thread_position_in_grid.x; atomic_fetch_add_explicit(&out[idx[t]], x[t], memory_order_relaxed);"
    r = simulate("scatter", ["x", "idx"], ["out"], src, inputs=[np.arange(n, dtype=np.float32),
                                                               np.array([0, 1, 0, 1], np.int32)],
                 output_shapes=[(2,)], output_dtypes=["float32"], grid=(n, 1, 1), threadgroup=(n, 1, 1),
                 atomic_outputs=True, init_value=0)
    assert r.outputs[0].tolist() == [2, 4]
    (atomic,) = r.trace.accesses("atomic")
    assert atomic.index.tolist() == [0, 1, 0, 1]
    assert [sorted(s) for s in atomic.sources] == [[("x", -1, i)] for i in range(n)]


def test_trace_of_a_scalar_stored_into_a_struct_shows_the_value_at_each_byte():
    # A float stored into threadgroup memory that holds a struct covers four of its byte-sized
    # elements; the trace used to keep one value for the four (an IndexError when the grader
    # explained an over-budget count with it).
    src = ("uint t = thread_position_in_threadgroup.x;\nthreadgroup Row s;\ns.v[t] = float(t) + 0.5f;\n"
           "threadgroup_barrier(mem_flags::mem_threadgroup);\nout[t] = s.v[t];\n")
    r = simulate("k", ["a"], ["out"], src, "struct Row { float v[4]; };", inputs=[np.zeros(2, np.float32)],
                 output_shapes=[(2,)], output_dtypes=["float32"], grid=(2, 1, 1), threadgroup=(2, 1, 1),
                 trace=True)
    writes = [a for a in r.trace.element_accesses() if a.kind == "write" and a.buffer == "s"]
    assert [(a.lane, a.index) for a in writes] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 4), (1, 5), (1, 6), (1, 7)]
    assert [float(a.value) for a in writes] == [0.5] * 4 + [1.5] * 4
