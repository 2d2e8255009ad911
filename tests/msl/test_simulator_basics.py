"""End-to-end checks of the simulator on the kinds of kernels the puzzles use."""

import mlx.core as mx
import numpy as np
import pytest

import metal_puzzles as mp
from metal_puzzles.msl import CompileError, simulate


def run(src, inputs, out_shape, grid, tg, header="", dtype="float32", **kw):
    names = list("abcdefg"[: len(inputs)])
    return simulate("k", names, ["out"], src, header, inputs=inputs, output_shapes=[out_shape],
                    output_dtypes=[dtype], grid=grid, threadgroup=tg, **kw)


def test_guard_counts_only_threads_in_range():
    r = run("uint i = thread_position_in_grid.x; if (i < a_shape[0]) out[i] = a[i] + 10;",
            [np.arange(4, dtype=np.int32)], (4,), (8, 1, 1), (8, 1, 1))
    assert r.outputs[0].tolist() == [10, 11, 12, 13]
    assert r.counts.global_reads.tolist() == [1, 1, 1, 1, 0, 0, 0, 0]


def test_tiled_matmul_with_partial_tiles():
    header = "constant uint TS = 3;"
    src = """
    threadgroup float as[TS][TS];
    threadgroup float bs[TS][TS];
    uint i = thread_position_in_grid.x, j = thread_position_in_grid.y;
    uint li = thread_position_in_threadgroup.x, lj = thread_position_in_threadgroup.y;
    uint n = a_shape[0];
    float acc = 0;
    for (uint k0 = 0; k0 < n; k0 += TS) {
      as[lj][li] = (j < n && k0 + li < n) ? a[j * n + k0 + li] : 0.0f;
      bs[lj][li] = (i < n && k0 + lj < n) ? b[(k0 + lj) * n + i] : 0.0f;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (uint k = 0; k < TS; k++) acc += as[lj][k] * bs[k][li];
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (i < n && j < n) out[j * n + i] = acc;
    """
    A = np.arange(64, dtype=np.float32).reshape(8, 8)
    r = run(src, [A, A.T.copy()], (8, 8), (9, 9, 1), (3, 3, 1), header=header)
    np.testing.assert_array_equal(r.outputs[0], A @ A.T)
    assert r.counts.max()["global_reads"] == 6
    assert r.counts.max()["shared_writes"] == 6


def test_compile_error_points_at_misspelt_name():
    with pytest.raises(CompileError) as info:
        run("uint local_i = thread_position_in_grid.x;\nout[locl_i] = a[local_i];",
            [np.arange(4, dtype=np.float32)], (4,), (4, 1, 1), (4, 1, 1))
    err = info.value
    assert (err.file, err.line, err.col) == ("source", 2, 5)
    assert "did you mean 'local_i'" in str(err)
    assert str(err).splitlines()[-1] == "    ^"


def test_drop_in_matches_mlx_exp_and_returns_mx_arrays():
    k = mp.metal_kernel("myexp", ["inp"], ["out"], """
        uint elem = thread_position_in_grid.x;
        T tmp = inp[elem];
        out[elem] = metal::exp(tmp);
    """)
    a = mx.random.normal(shape=(4, 16)).astype(mx.float16)
    (o,) = k(inputs=[a], template=[("T", mx.float32)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
             output_shapes=[a.shape], output_dtypes=[a.dtype])
    assert isinstance(o, mx.array) and o.dtype == mx.float16
    assert mx.allclose(o, mx.exp(a)).item()


def test_metal_kernel_wrapper_both_call_styles():
    kern = mp.MetalKernel(name="map", input_names=["a"], output_names=["out"],
                          source="uint i = thread_position_in_grid.x; out[i] = a[i] + 10;")
    a = mx.arange(4)
    args = dict(inputs=[a], output_shapes=[(4,)], output_dtypes=[mx.float32], grid=(4, 1, 1),
                threadgroup=(4, 1, 1))
    direct = kern(**args)[0]
    styled = kern()(**args)[0]
    assert direct.tolist() == styled.tolist() == [10, 11, 12, 13]


def test_float_to_ulong_above_two_to_the_63():
    """Found by the differential test: C converts floats in [2^63, 2^64) to ulong exactly."""
    f = np.array([1e19, 9.3e18, 1.8e19, 5e18], dtype=np.float32)
    r = simulate("k", ["f"], ["o"], "uint t = thread_position_in_grid.x; o[t] = static_cast<ulong>(f[t]);",
                 inputs=[f], output_shapes=[(4,)], output_dtypes=["uint64"], grid=(4, 1, 1), threadgroup=(4, 1, 1))
    expected = [int(x) for x in f.astype(np.float64)]  # float32 values are integers this large
    assert r.outputs[0].tolist() == expected


def test_huge_private_arrays_are_refused_at_compile_time():
    with pytest.raises(CompileError) as info:
        run("float buf[1 << 24]; uint i = thread_position_in_grid.x; buf[i] = 1; out[i] = buf[i];",
            [np.zeros(4, np.float32)], (4,), (4, 1, 1), (4, 1, 1))
    assert info.value.line == 1 and "thread-private array 'buf'" in info.value.message


def test_absurd_nesting_is_a_compile_error_not_a_crash():
    deep = "(" * 5000 + "1" + ")" * 5000
    with pytest.raises(CompileError) as info:
        run(f"uint i = thread_position_in_grid.x; out[i] = {deep};", [np.zeros(4, np.float32)], (4,),
            (4, 1, 1), (4, 1, 1))
    assert "nested too deeply" in info.value.message
