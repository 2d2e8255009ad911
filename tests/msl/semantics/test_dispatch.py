"""Dispatch geometry: `grid` counts threads (dispatchThreads), threadgroups tile the grid and
the edge ones may be partial; no thread runs outside the grid.

What Metal reports in a partial (edge) threadgroup — from the MSL specification, section
"Kernel function input attributes" (threads_per_threadgroup): since Metal 2 the grid need not be
a multiple of the threadgroup size, so an edge threadgroup can be smaller than the one given at
dispatch. `[[threads_per_threadgroup]]` is the *actual* size of the threadgroup executing the
thread; `[[dispatch_threads_per_threadgroup]]` is the size specified at dispatch. Likewise
`simdgroups_per_threadgroup = ceil(threads_per_threadgroup / threads_per_simdgroup)` and
`quadgroups_per_threadgroup = ceil(threads_per_threadgroup / 4)` use the actual size.

MLX detail (mlx/backend/metal/custom_kernel.cpp, CustomKernel::eval_gpu): the threadgroup
handed to dispatchThreads is clamped per axis to the grid, `min(threadgroup, grid)`, so a
(3,1,1) grid with a (8,1,1) threadgroup dispatches 3-wide threadgroups.
"""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import out0, run


def per_thread(src: str, grid: tuple[int, int, int], tg: tuple[int, int, int], k: int = 1,
               dtype: str = "uint32", **kw: object) -> np.ndarray:
    """Run `src` where each thread writes k values at out[lin * k + j]; return (n_threads, k)."""
    n = int(np.prod(grid))
    prelude = (
        "uint lin = thread_position_in_grid.x + thread_position_in_grid.y * threads_per_grid.x"
        " + thread_position_in_grid.z * threads_per_grid.x * threads_per_grid.y;\n"
    )
    got = out0(prelude + src, out=((n * k,), dtype), grid=grid, tg=tg, **kw)
    return got.reshape(n, k)


def coords(grid: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    """Thread coordinates in linear order x fastest, then y, then z."""
    gx, gy, gz = grid
    return [(x, y, z) for z in range(gz) for y in range(gy) for x in range(gx)]


def test_partial_edge_threadgroup_1d() -> None:
    """grid 10, threadgroup 4: three groups of 4, 4 and 2 threads."""
    src = """
    out[lin * 4 + 0] = thread_position_in_threadgroup.x;
    out[lin * 4 + 1] = threadgroup_position_in_grid.x;
    out[lin * 4 + 2] = threads_per_threadgroup.x;
    out[lin * 4 + 3] = dispatch_threads_per_threadgroup.x;
    """
    got = per_thread(src, (10, 1, 1), (4, 1, 1), k=4)
    expected = [[i % 4, i // 4, 4 if i < 8 else 2, 4] for i in range(10)]
    assert got.tolist() == expected


def test_threadgroups_per_grid_rounds_up() -> None:
    """threadgroups_per_grid is ceil(grid / threadgroup) on every axis."""
    src = """
    out[lin * 3 + 0] = threadgroups_per_grid.x;
    out[lin * 3 + 1] = threadgroups_per_grid.y;
    out[lin * 3 + 2] = threadgroups_per_grid.z;
    """
    got = per_thread(src, (5, 3, 2), (2, 2, 2), k=3)
    assert (got == [3, 2, 1]).all()


def test_threads_per_grid_is_grid() -> None:
    """threads_per_grid is the grid in threads."""
    src = """
    out[lin * 3 + 0] = threads_per_grid.x;
    out[lin * 3 + 1] = threads_per_grid.y;
    out[lin * 3 + 2] = threads_per_grid.z;
    """
    got = per_thread(src, (5, 3, 2), (2, 2, 2), k=3)
    assert (got == [5, 3, 2]).all()


def test_position_decomposes_into_group_and_local() -> None:
    """thread_position_in_grid == threadgroup_position * dispatch size + position in group."""
    src = """
    uint3 g = thread_position_in_grid;
    uint3 t = thread_position_in_threadgroup;
    uint3 b = threadgroup_position_in_grid;
    out[lin * 9 + 0] = g.x; out[lin * 9 + 1] = g.y; out[lin * 9 + 2] = g.z;
    out[lin * 9 + 3] = t.x; out[lin * 9 + 4] = t.y; out[lin * 9 + 5] = t.z;
    out[lin * 9 + 6] = b.x; out[lin * 9 + 7] = b.y; out[lin * 9 + 8] = b.z;
    """
    grid, tg = (5, 3, 2), (2, 2, 2)
    got = per_thread(src, grid, tg, k=9)
    expected = []
    for x, y, z in coords(grid):
        expected.append([x, y, z, x % 2, y % 2, z % 2, x // 2, y // 2, z // 2])
    assert got.tolist() == expected


def test_partial_threadgroup_sizes_in_2d() -> None:
    """threads_per_threadgroup shrinks on each axis only where the edge group is partial."""
    src = """
    out[lin * 4 + 0] = threads_per_threadgroup.x;
    out[lin * 4 + 1] = threads_per_threadgroup.y;
    out[lin * 4 + 2] = dispatch_threads_per_threadgroup.x;
    out[lin * 4 + 3] = dispatch_threads_per_threadgroup.y;
    """
    grid, tg = (5, 3, 1), (2, 2, 1)
    got = per_thread(src, grid, tg, k=4)
    expected = [[2 if x < 4 else 1, 2 if y < 2 else 1, 2, 2] for x, y, _ in coords(grid)]
    assert got.tolist() == expected


def test_only_grid_threads_run() -> None:
    """Elements beyond the grid are never touched (the output keeps init_value)."""
    src = "out[thread_position_in_grid.x] = 1;"
    got = out0(src, out=((12,), "int32"), grid=(10, 1, 1), tg=(4, 1, 1), init_value=-1)
    assert got.tolist() == [1] * 10 + [-1, -1]


def test_every_thread_runs_exactly_once_in_3d() -> None:
    """Each thread of a 3-D grid writes its own linear index once."""
    grid, tg = (7, 3, 3), (4, 2, 2)
    got = per_thread("out[lin] = lin + 1;", grid, tg)
    assert got.ravel().tolist() == list(range(1, 7 * 3 * 3 + 1))


def test_counts_follow_linear_thread_order() -> None:
    """counts[x + y*gx + z*gx*gy]: thread (x, y) reads its linear index many elements."""
    src = """
    uint lin2 = thread_position_in_grid.x + 3 * thread_position_in_grid.y;
    float s = 0;
    for (uint k = 0; k < lin2; k++) s += a[k];
    out[lin2] = s;
    """
    a = np.ones(8, dtype=np.float32)
    res = run(src, inputs={"a": a}, out=((6,), "float32"), grid=(3, 2, 1), tg=(2, 2, 1))
    assert res.counts.global_reads.tolist() == [0, 1, 2, 3, 4, 5]
    assert res.outputs[0].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert res.counts.global_writes.tolist() == [1] * 6


def test_counts_shape_matches_thread_count() -> None:
    """Every counter has one entry per grid thread, threads in partial groups included."""
    res = run("out[thread_position_in_grid.x] = 0;", out=((10,), "float32"), grid=(10, 1, 1),
              tg=(4, 1, 1))
    for name in ("global_reads", "global_writes", "shared_reads", "shared_writes", "atomics"):
        assert getattr(res.counts, name).shape == (10,)


def test_threadgroup_memory_is_private_to_each_group() -> None:
    """Each group's thread 0 stores its group id in threadgroup memory; all its threads see
    their own group's value, not another group's."""
    src = """
    threadgroup uint shared_id;
    if (thread_position_in_threadgroup.x == 0) shared_id = threadgroup_position_in_grid.x * 10;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[thread_position_in_grid.x] = shared_id;
    """
    got = out0(src, out=((10,), "uint32"), grid=(10, 1, 1), tg=(4, 1, 1))
    assert got.tolist() == [(i // 4) * 10 for i in range(10)]


def test_single_thread_grid() -> None:
    """A (1,1,1) grid runs exactly one thread."""
    got = out0("out[0] += 1;", out=((1,), "int32"), init_value=41)
    assert got.tolist() == [42]


def test_large_grid_map() -> None:
    """A map over 4096 threads in groups of 256."""
    a = np.arange(4096, dtype=np.float32)
    src = "uint i = thread_position_in_grid.x; out[i] = a[i] * 2.0f + 1.0f;"
    got = out0(src, inputs={"a": a}, out=((4096,), "float32"), grid=(4096, 1, 1), tg=(256, 1, 1))
    assert np.array_equal(got, a * np.float32(2) + np.float32(1))


def test_threadgroup_larger_than_grid_is_clamped_like_mlx() -> None:
    """MLX dispatches min(threadgroup, grid): grid 3 with threadgroup 8 gives one group of 3,
    and dispatch_threads_per_threadgroup reports 3 (the clamped size MLX passes to Metal)."""
    src = """
    out[lin * 3 + 0] = threads_per_threadgroup.x;
    out[lin * 3 + 1] = dispatch_threads_per_threadgroup.x;
    out[lin * 3 + 2] = threadgroups_per_grid.x;
    """
    got = per_thread(src, (3, 1, 1), (8, 1, 1), k=3)
    assert got.tolist() == [[3, 3, 1]] * 3


def test_grid_on_y_axis_only() -> None:
    """A grid that spans y only: x is always 0."""
    src = "out[thread_position_in_grid.y] = thread_position_in_grid.x * 100 + thread_position_in_grid.y;"
    got = out0(src, out=((5,), "uint32"), grid=(1, 5, 1), tg=(1, 2, 1))
    assert got.tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(("grid", "tg"), [((6, 1, 1), (6, 1, 1)), ((6, 1, 1), (1, 1, 1)),
                                          ((6, 1, 1), (5, 1, 1)), ((2, 3, 1), (2, 1, 1))])
def test_map_is_independent_of_threadgroup_shape(grid: tuple[int, int, int],
                                                 tg: tuple[int, int, int]) -> None:
    """An elementwise map gives the same answer for any threadgroup tiling."""
    src = """
    uint i = thread_position_in_grid.x + thread_position_in_grid.y * threads_per_grid.x;
    out[i] = a[i] * a[i];
    """
    a = np.arange(6, dtype=np.float32) - 2
    got = out0(src, inputs={"a": a}, out=((6,), "float32"), grid=grid, tg=tg)
    assert got.tolist() == (a * a).tolist()


def test_threadgroup_over_1024_threads_is_rejected() -> None:
    """MLX refuses threadgroups larger than the pipeline maximum (1024 threads)."""
    with pytest.raises(ValueError):
        run("out[thread_position_in_grid.x] = 0;", out=((2048,), "float32"), grid=(2048, 1, 1),
            tg=(2048, 1, 1))
