"""Code written the way the original Metal-Puzzles notebook writes it runs unchanged once the
import line reads ``from metal_puzzles import MetalKernel, MetalProblem``.

The puzzle code below is written for these tests in that notebook's style: module-level
spec and test functions, ``MetalKernel(name=..., input_names=..., output_names=..., source=...)``,
``MetalProblem(name, fn, inputs, output_shape, grid=..., threadgroup=..., spec=...)`` with
threadgroup often left at its default, specs written as Python loops, then ``show()`` and
``check()``.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from metal_puzzles import MetalKernel, MetalProblem


def map_spec(a: mx.array):
    return a + 10


def map_test(a: mx.array):
    source = """
uint local_i = thread_position_in_grid.x;
out[local_i] = a[local_i] + 10;
"""

    kernel = MetalKernel(
        name="map",
        input_names=["a"],
        output_names=["out"],
        source=source,
    )
    return kernel


def test_map_with_the_default_threadgroup(capsys):
    SIZE = 4
    a = mx.arange(SIZE)
    output_shape = (SIZE,)

    # No threadgroup argument: one thread per threadgroup, four threadgroups.
    problem = MetalProblem(
        "Map",
        map_test,
        [a],
        output_shape,
        grid=(SIZE, 1, 1),
        spec=map_spec,
    )
    diagram = problem.show()
    shown = capsys.readouterr().out
    assert shown.startswith("# Map") and "Score (Max Per Thread):" in shown
    assert "<svg" in diagram._repr_mimebundle_()["text/html"]
    result = problem.check()
    assert result
    assert capsys.readouterr().out.startswith("Passed: Map")


def test_metal_kernel_called_with_no_arguments_returns_the_kernel():
    a = mx.arange(4)
    kernel = map_test(a)()
    (out,) = kernel(inputs=[a], output_shapes=[(4,)], output_dtypes=[mx.float32],
                    grid=(4, 1, 1), threadgroup=(4, 1, 1))
    assert out.tolist() == [10, 11, 12, 13]
    (again,) = map_test(a)(inputs=[a], output_shapes=[(4,)], output_dtypes=[mx.float32],
                           grid=(4, 1, 1), threadgroup=(2, 1, 1))
    assert again.tolist() == [10, 11, 12, 13]


def guard_test(a: mx.array):
    source = """
uint local_i = thread_position_in_grid.x;
if (local_i < a_shape[0]) {
    out[local_i] = a[local_i] + 10;
}
"""

    kernel = MetalKernel(
        name="guard",
        input_names=["a"],
        output_names=["out"],
        source=source,
    )
    return kernel


def test_guard_reuses_an_earlier_spec():
    SIZE = 4
    a = mx.arange(SIZE)
    problem = MetalProblem("Guard", guard_test, [a], (SIZE,), grid=(8, 1, 1), spec=map_spec)
    assert problem.check()


def pooling_spec(a: mx.array):
    # A loop over positions writing into an MLX array, as the original specs do.
    out = mx.zeros(*a.shape)
    for i in range(a.shape[0]):
        out[i] = a[max(i - 2, 0) : i + 1].sum()
    return out


def pooling_test(a: mx.array):
    header = """
constant uint THREADGROUP_MEM_SIZE = 8;
"""

    source = """
threadgroup float window[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint li = thread_position_in_threadgroup.x;
bool inside = i < a_shape[0];
if (inside) {
    window[li] = a[i];
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (inside) {
    float s = window[li];
    for (uint back = 1; back <= 2 && back <= li; back++) {
        s += window[li - back];
    }
    out[i] = s;
}
"""

    kernel = MetalKernel(
        name="pooling",
        input_names=["a"],
        output_names=["out"],
        header=header,
        source=source,
    )
    return kernel


def test_pooling_with_a_header_and_a_loop_spec():
    SIZE = 8
    a = mx.arange(SIZE)
    problem = MetalProblem(
        "Pooling",
        pooling_test,
        [a],
        (SIZE,),
        grid=(SIZE, 1, 1),
        threadgroup=(SIZE, 1, 1),
        spec=pooling_spec,
    )
    problem.show()
    result = problem.check()
    assert result and len(result.outcomes) > 1  # the hidden tests came along


THREADGROUP_MEM_SIZE = 8


def block_sum_spec(a: mx.array):
    n = a.shape[0]
    out = mx.zeros(-(-n // THREADGROUP_MEM_SIZE))
    for block, start in enumerate(range(0, n, THREADGROUP_MEM_SIZE)):
        out[block] = a[start : start + THREADGROUP_MEM_SIZE].sum()
    return out


def block_sum_test(a: mx.array):
    header = """
constant uint THREADGROUP_MEM_SIZE = 8;
"""

    source = """
threadgroup float partial[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint li = thread_position_in_threadgroup.x;
uint count = threads_per_threadgroup.x;
partial[li] = i < a_shape[0] ? float(a[i]) : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);
// Halve the live range each round; the upper half folds onto the lower half.
for (uint live = count; live > 1; live = (live + 1) / 2) {
    uint half_up = (live + 1) / 2;
    if (li + half_up < live) {
        partial[li] += partial[li + half_up];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (li == 0) {
    out[threadgroup_position_in_grid.x] = partial[0];
}
"""

    kernel = MetalKernel(
        name="prefix_sum",
        input_names=["a"],
        output_names=["out"],
        header=header,
        source=source,
    )
    return kernel


def test_prefix_sum_both_tests_with_one_kernel():
    a = mx.arange(8)
    simple = MetalProblem("Prefix Sum (Simple)", block_sum_test, [a], (1,), grid=(8, 1, 1),
                          threadgroup=(8, 1, 1), spec=block_sum_spec)
    assert simple.check()
    a = mx.arange(15)
    full = MetalProblem("Prefix Sum (Full)", block_sum_test, [a], (2,), grid=(16, 1, 1),
                        threadgroup=(8, 1, 1), spec=block_sum_spec)
    full.show()
    assert full.check()


def matmul_spec(a: mx.array, b: mx.array):
    return a @ b


def matmul_test(a: mx.array, b: mx.array):
    header = """
constant uint THREADGROUP_MEM_SIZE = 3;
"""

    source = """
threadgroup float sa[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];
threadgroup float sb[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint j = thread_position_in_grid.y;
uint li = thread_position_in_threadgroup.x;
uint lj = thread_position_in_threadgroup.y;
uint size = a_shape[0];
float total = 0;
for (uint t = 0; t < size; t += THREADGROUP_MEM_SIZE) {
    sa[lj][li] = (j < size && t + li < size) ? a[j * size + t + li] : 0;
    sb[lj][li] = (i < size && t + lj < size) ? b[(t + lj) * size + i] : 0;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 0; k < THREADGROUP_MEM_SIZE; k++) {
        total += sa[lj][k] * sb[k][li];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (i < size && j < size) {
    out[j * size + i] = total;
}
"""

    kernel = MetalKernel(
        name="matmul",
        input_names=["a", "b"],
        output_names=["out"],
        header=header,
        source=source,
    )
    return kernel


def test_matmul_full_with_a_transposed_input():
    SIZE = 8
    a = mx.arange(SIZE * SIZE).astype(mx.float32).reshape(SIZE, SIZE)
    b = a.T
    output_shape = (SIZE, SIZE)

    problem = MetalProblem(
        "Matmul (Full)",
        matmul_test,
        [a, b],
        output_shape,
        grid=(9, 9, 1),
        threadgroup=(3, 3, 1),
        spec=matmul_spec,
    )
    result = problem.check()
    assert result
    np.testing.assert_array_equal(result.outcomes[0].yours, np.asarray(a @ b))


def test_unfinished_kernel_fails_without_raising(capsys):
    def unfinished(a: mx.array):
        source = """
uint local_i = thread_position_in_grid.x;
// FILL ME IN (roughly 1 line)
"""
        return MetalKernel(name="map", input_names=["a"], output_names=["out"], source=source)

    problem = MetalProblem("Map", unfinished, [mx.arange(4)], (4,), grid=(4, 1, 1), spec=map_spec)
    problem.show()
    result = problem.check()
    assert not result
    out = capsys.readouterr().out
    assert "Failed: Map" in out and "Traceback" not in out


def test_progress_table_is_reachable_after_the_notebook_imports():
    # Once MetalProblem is imported, the package's submodules are loaded: progress() must still be
    # the function, not a module of the same name.
    import metal_puzzles

    table = metal_puzzles.progress()
    assert "Map" in str(table) and "<table" in table._repr_html_()
