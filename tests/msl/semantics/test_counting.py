"""Per-thread memory counters (DESIGN section 4): global reads/writes are elements of the
kernel's input and output buffers (whatever their address space), shared reads/writes are
elements of threadgroup memory; thread-local values and shape/stride parameters are free;
counts are exact — a read in a branch not taken is not counted, a read in a loop counts once
per iteration."""

from __future__ import annotations

from typing import Any

import numpy as np

from .conftest import run

A8 = np.arange(8, dtype=np.float32)


def counts(src: str, n: int = 8, inputs: dict[str, Any] | None = None, **kw: Any) -> Any:
    """Run over n threads (one float32 output of n elements) and return res.counts."""
    return run(src, inputs=inputs if inputs is not None else {"a": A8}, out=((n,), "float32"),
               grid=(n, 1, 1), **kw).counts


def test_map_counts_one_read_one_write() -> None:
    """out[i] = a[i] + 10 reads one element and writes one."""
    c = counts("uint i = thread_position_in_grid.x; out[i] = a[i] + 10;")
    assert c.global_reads.tolist() == [1] * 8
    assert c.global_writes.tolist() == [1] * 8
    assert c.shared_reads.tolist() == [0] * 8
    assert c.shared_writes.tolist() == [0] * 8
    assert c.atomics.tolist() == [0] * 8


def test_untaken_branch_reads_are_not_counted() -> None:
    """Only odd threads read a[i]."""
    src = "uint i = thread_position_in_grid.x; if (i % 2) out[i] = a[i]; else out[i] = 0;"
    assert counts(src).global_reads.tolist() == [0, 1] * 4


def test_else_branch_reads_counted_for_threads_taking_it() -> None:
    """Threads in the else branch read twice, the others once."""
    src = """
    uint i = thread_position_in_grid.x;
    float v;
    if (i < 3) v = a[i]; else v = a[i] + a[0];
    out[i] = v;
    """
    assert counts(src).global_reads.tolist() == [1, 1, 1, 2, 2, 2, 2, 2]


def test_loop_reads_count_per_iteration() -> None:
    """Thread i loops i + 1 times, reading once per iteration."""
    src = """
    uint i = thread_position_in_grid.x;
    float s = 0;
    for (uint k = 0; k <= i; k++) s += a[k];
    out[i] = s;
    """
    c = counts(src)
    assert c.global_reads.tolist() == [i + 1 for i in range(8)]
    assert c.global_writes.tolist() == [1] * 8


def test_same_element_read_twice_counts_twice() -> None:
    """a[i] + a[i] is two reads."""
    assert counts("uint i = thread_position_in_grid.x; out[i] = a[i] + a[i];").global_reads.tolist() == [2] * 8


def test_local_copy_avoids_second_read() -> None:
    """Reading into a local once and using it twice is one read."""
    src = "uint i = thread_position_in_grid.x; float v = a[i]; out[i] = v + v * v;"
    assert counts(src).global_reads.tolist() == [1] * 8


def test_output_read_modify_write() -> None:
    """out[i] += a[i] reads out[i] and a[i] (2 reads) and writes once."""
    src = "uint i = thread_position_in_grid.x; out[i] += a[i];"
    c = counts(src, init_value=0)
    assert c.global_reads.tolist() == [2] * 8
    assert c.global_writes.tolist() == [1] * 8


def test_repeated_writes_count_each_time() -> None:
    """Writing out[i] in a loop of 3 iterations counts 3 writes."""
    src = "uint i = thread_position_in_grid.x; for (int k = 0; k < 3; k++) out[i] = k;"
    assert counts(src, inputs={}).global_writes.tolist() == [3] * 8


def test_shared_memory_counts() -> None:
    """s[t] = a[i] is a global read and a shared write; s[t] += 1 a shared read and write;
    reading a neighbour is one more shared read."""
    src = """
    threadgroup float s[8];
    uint t = thread_position_in_threadgroup.x;
    s[t] = a[t];
    s[t] += 1;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = s[(t + 1) % 8];
    """
    c = counts(src)
    assert c.global_reads.tolist() == [1] * 8
    assert c.shared_writes.tolist() == [2] * 8
    assert c.shared_reads.tolist() == [2] * 8
    assert c.global_writes.tolist() == [1] * 8


def test_shared_reads_in_loop() -> None:
    """Thread 0 sums four shared elements (4 shared reads); the others read none."""
    src = """
    threadgroup float s[4];
    uint t = thread_position_in_threadgroup.x;
    s[t] = a[t];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (t == 0) { float tot = 0; for (int k = 0; k < 4; k++) tot += s[k]; out[0] = tot; }
    """
    c = run(src, inputs={"a": A8}, out=((1,), "float32"), grid=(4, 1, 1)).counts
    assert c.shared_reads.tolist() == [4, 0, 0, 0]
    assert c.shared_writes.tolist() == [1, 1, 1, 1]
    assert c.global_writes.tolist() == [1, 0, 0, 0]


def test_constant_address_space_input_reads_count() -> None:
    """A small input (under 8 elements, passed in `constant`) is still a kernel buffer."""
    src = "uint i = thread_position_in_grid.x; out[i] = b[i % 4] + b[0];"
    b = np.array([1, 2, 3, 4], dtype=np.float32)
    assert counts(src, inputs={"b": b}).global_reads.tolist() == [2] * 8


def test_reads_after_return_are_not_counted() -> None:
    """Threads that return early never perform the later read."""
    src = "uint i = thread_position_in_grid.x; if (i >= 5) return; out[i] = a[i];"
    c = counts(src, init_value=0)
    assert c.global_reads.tolist() == [1] * 5 + [0] * 3
    assert c.global_writes.tolist() == [1] * 5 + [0] * 3


def test_pointer_reads_count() -> None:
    """Reading through a pointer into an input counts like indexing it."""
    src = "uint i = thread_position_in_grid.x; const device float* p = a + i; out[i] = *p + p[0];"
    assert counts(src).global_reads.tolist() == [2] * 8


def test_simd_shuffle_is_not_memory_traffic() -> None:
    """Exchanging registers with simd_shuffle_xor is not a global or shared read."""
    src = "uint i = thread_position_in_grid.x; out[i] = simd_shuffle_xor(a[i], 1);"
    c = counts(src)
    assert c.global_reads.tolist() == [1] * 8
    assert c.shared_reads.tolist() == [0] * 8


def test_while_loop_data_dependent_reads() -> None:
    """A while loop that scans until it finds a negative: reads = position found - start + 1."""
    src = """
    uint i = thread_position_in_grid.x;
    uint k = i;
    while (a[k] >= 0) k++;
    out[i] = k;
    """
    a = np.array([1, 2, -1, 3, 4, 5, -2, -3], dtype=np.float32)
    c = counts(src, inputs={"a": a})
    first_neg = [next(k for k in range(i, 8) if a[k] < 0) for i in range(8)]
    assert c.global_reads.tolist() == [f - i + 1 for i, f in enumerate(first_neg)]
