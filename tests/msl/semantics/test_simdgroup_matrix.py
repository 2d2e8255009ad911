"""SIMD-group matrices against NumPy.

``simdgroup_load``/``simdgroup_store`` with elements per row, origin (column, row) and transpose;
``simdgroup_multiply`` and ``simdgroup_multiply_accumulate`` (also a half product into a float
accumulator); ``make_filled_simdgroup_matrix`` and the fill constructor; ``thread_elements()``
with the fragment layout real kernels rely on (lane l, q = l / 4: row (q & 4) + (l / 2) % 4,
columns (q & 2) * 2 + (l % 2) * 2 and the next); arrays of matrices, assignment, passing by
reference. Inputs are small integers or halves so that every product is exact, and the
expected matrices come from NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import CompileError

from .conftest import run

INCLUDE = "#include <metal_simdgroup_matrix>\nusing namespace metal;\n"


def _ints(rng: np.random.Generator, *shape: int, dtype=np.float32) -> np.ndarray:
    return rng.integers(-4, 5, shape).astype(dtype)


def _layout() -> np.ndarray:
    """Which lane holds each element, and as which of its two (lane + 0.5 for the second)."""
    want = np.zeros((8, 8))
    for lane in range(32):
        q = lane // 4
        row, col = (q & 4) + (lane // 2) % 4, (q & 2) * 2 + (lane % 2) * 2
        want[row, col], want[row, col + 1] = lane, lane + 0.5
    return want


def test_multiply_one_tile_from_device_memory() -> None:
    rng = np.random.default_rng(1)
    a, b = _ints(rng, 8, 8), _ints(rng, 8, 8)
    res = run("""
        simdgroup_float8x8 x, y, z;
        simdgroup_load(x, A, 8);
        simdgroup_load(y, B, 8);
        simdgroup_multiply(z, x, y);
        simdgroup_store(z, C, 8);
    """, inputs={"A": a, "B": b}, out={"C": ((8, 8), "float32")}, grid=(32, 1, 1), header=INCLUDE)
    assert np.array_equal(res.outputs[0], a @ b)
    # Each thread loads its two elements of each operand and stores two of the product.
    assert res.counts.max() == {"global_reads": 4, "global_writes": 2, "shared_reads": 0, "shared_writes": 0,
                                "atomics": 0}


def test_tiled_product_with_origins_and_accumulation() -> None:
    rng = np.random.default_rng(2)
    a, b = _ints(rng, 16, 24), _ints(rng, 24, 16)
    res = run("""
        for (uint i = 0; i < 2; ++i) {
            for (uint j = 0; j < 2; ++j) {
                simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8>(0.0f);
                for (uint k = 0; k < 24; k += 8) {
                    simdgroup_float8x8 x, y;
                    simdgroup_load(x, A, 24, ulong2(k, 8 * i));    // columns k.., rows 8i..
                    simdgroup_load(y, B, 16, ulong2(8 * j, k));
                    simdgroup_multiply_accumulate(acc, x, y, acc);
                }
                simdgroup_store(acc, C, 16, ulong2(8 * j, 8 * i));
            }
        }
    """, inputs={"A": a, "B": b}, out={"C": ((16, 16), "float32")}, grid=(32, 1, 1))
    assert np.array_equal(res.outputs[0], a @ b)


def test_transposed_load_and_store_through_threadgroup_memory() -> None:
    m = np.random.default_rng(3).standard_normal((8, 12)).astype(np.float16)
    res = run("""
        uint lane = thread_index_in_simdgroup;
        threadgroup half tile[96];
        for (uint k = lane; k < 96; k += 32) {
            tile[k] = M[k];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        simdgroup_half8x8 t;
        simdgroup_load(t, tile, 12, ulong2(4, 0), true);
        simdgroup_store(t, out, 8);
        simdgroup_store(t, out_t, 8, ulong2(0, 0), true);
    """, inputs={"M": m.reshape(-1)}, out={"out": ((8, 8), "float16"), "out_t": ((8, 8), "float16")},
        grid=(32, 1, 1))
    assert np.array_equal(res.outputs[0], m[:, 4:12].T)
    assert np.array_equal(res.outputs[1], m[:, 4:12])


def test_thread_elements_follow_the_fragment_layout() -> None:
    res = run("""
        simdgroup_float8x8 m;
        uint lane = thread_index_in_simdgroup;
        m.thread_elements()[0] = float(lane);
        m.thread_elements()[1] = float(lane) + 0.5f;
        simdgroup_store(m, out, 8);
    """, out={"out": ((8, 8), "float32")}, grid=(32, 1, 1))
    assert np.array_equal(res.outputs[0], _layout())


def test_thread_elements_read_back_each_lanes_pair_and_work_through_a_macro() -> None:
    rng = np.random.default_rng(4)
    a = _ints(rng, 8, 8)
    res = run("""
        #define AT(TILE, IDX) TILE.thread_elements()[IDX]
        uint lane = thread_index_in_simdgroup;
        simdgroup_float8x8 m;
        simdgroup_load(m, A, 8);
        float2 mine = m.thread_elements();
        out[2 * lane] = mine.x;
        out[2 * lane + 1] = AT(m, 1);
        AT(m, 0) = AT(m, 0) * 2.0f;     // scale this lane's first element in place
        simdgroup_store(m, doubled, 8);
    """, inputs={"A": a}, out={"out": ((64,), "float32"), "doubled": ((8, 8), "float32")}, grid=(32, 1, 1))
    layout = _layout()
    first = np.zeros(64)
    for lane in range(32):
        r, c = np.argwhere(layout == lane)[0]
        first[2 * lane], first[2 * lane + 1] = a[r, c], a[r, c + 1]
    assert res.outputs[0].tolist() == first.tolist()
    want = a.copy()
    want[:, 0::2] *= 2  # every lane's first element sits in an even column
    assert np.array_equal(res.outputs[1], want)


def test_identity_built_from_fragments_as_kernels_do() -> None:
    """mlx-vlm/titan style: fill a fragment from its coordinates, here the identity, then use it."""
    rng = np.random.default_rng(5)
    a = _ints(rng, 8, 8)
    res = run("""
        uint lane = thread_index_in_simdgroup;
        uint q = lane / 4;
        uint fm = (q & 4) + (lane / 2) % 4;
        uint fn = (q & 2) * 2 + (lane % 2) * 2;
        simdgroup_float8x8 eye;
        eye.thread_elements()[0] = fm == fn ? 1.0f : 0.0f;
        eye.thread_elements()[1] = fm == fn + 1 ? 1.0f : 0.0f;
        simdgroup_float8x8 x, y;
        simdgroup_load(x, A, 8);
        simdgroup_multiply(y, eye, x);
        simdgroup_store(y, out, 8);
    """, inputs={"A": a}, out={"out": ((8, 8), "float32")}, grid=(32, 1, 1))
    assert np.array_equal(res.outputs[0], a)


def test_half_tiles_accumulate_into_a_float_matrix() -> None:
    rng = np.random.default_rng(6)
    q, k = _ints(rng, 8, 8, dtype=np.float16) / 4, _ints(rng, 8, 8, dtype=np.float16) / 4
    res = run("""
        simdgroup_half8x8 qt, kt;
        simdgroup_load(qt, Q, 8);
        simdgroup_load(kt, K, 8, ulong2(0, 0), true);   // K^T
        simdgroup_float8x8 s = make_filled_simdgroup_matrix<float, 8, 8>(0.5f);
        simdgroup_multiply_accumulate(s, qt, kt, s);
        simdgroup_store(s, out, 8);
    """, inputs={"Q": q, "K": k}, out={"out": ((8, 8), "float32")}, grid=(32, 1, 1))
    assert np.array_equal(res.outputs[0], q.astype(np.float64) @ k.T.astype(np.float64) + 0.5)


def test_bfloat_matrices_round_to_bfloat() -> None:
    a = np.full((8, 8), 1.0 + 2.0 ** -7, np.float32)  # exactly representable in bfloat
    res = run("""
        simdgroup_bfloat8x8 x, y;
        simdgroup_load(x, A, 8);
        simdgroup_multiply(y, x, x);
        simdgroup_store(y, out, 8);
    """, inputs={"A": a}, input_dtypes=["bfloat16"], out={"out": ((8, 8), "bfloat16")}, grid=(32, 1, 1))
    exact = 8 * (1 + 2.0 ** -7) ** 2  # 8.125 + 2^-11: rounds to 8.125 in bfloat (8 bits of mantissa)
    assert res.outputs[0].max() == res.outputs[0].min() == 8.125 != exact


def test_arrays_of_matrices_assignment_and_references() -> None:
    rng = np.random.default_rng(7)
    a, b = _ints(rng, 8, 16), _ints(rng, 16, 8)
    header = INCLUDE + """
    inline void add_product(thread simdgroup_float8x8& acc, simdgroup_float8x8 x, simdgroup_float8x8 y) {
        simdgroup_multiply_accumulate(acc, x, y, acc);
    }
    """
    res = run("""
        simdgroup_float8x8 xs[2], ys[2];
        for (uint k = 0; k < 2; ++k) {
            simdgroup_load(xs[k], A, 16, ulong2(8 * k, 0));
            simdgroup_load(ys[k], B, 8, ulong2(0, 8 * k));
        }
        simdgroup_float8x8 acc = simdgroup_float8x8(0.0f);
        add_product(acc, xs[0], ys[0]);
        simdgroup_float8x8 other = acc;
        add_product(other, xs[1], ys[1]);
        simdgroup_store(other, out, 8);
        simdgroup_store(acc, first, 8);
    """, inputs={"A": a, "B": b}, out={"out": ((8, 8), "float32"), "first": ((8, 8), "float32")},
        grid=(32, 1, 1), header=header)
    assert np.array_equal(res.outputs[0], a @ b)
    assert np.array_equal(res.outputs[1], a[:, :8] @ b[:8])


def test_each_simdgroup_has_its_own_matrix() -> None:
    rng = np.random.default_rng(8)
    a = _ints(rng, 16, 8)
    res = run("""
        uint sg = simdgroup_index_in_threadgroup;
        simdgroup_float8x8 x;
        simdgroup_load(x, A + 64 * sg, 8);
        simdgroup_float8x8 y;
        simdgroup_multiply(y, x, x);
        simdgroup_store(y, out + 64 * sg, 8);
    """, inputs={"A": a}, out={"out": ((16, 8), "float32")}, grid=(64, 1, 1))
    assert np.array_equal(res.outputs[0][:8], a[:8] @ a[:8])
    assert np.array_equal(res.outputs[0][8:], a[8:] @ a[8:])


def test_templated_spelling_and_include() -> None:
    rng = np.random.default_rng(9)
    a = _ints(rng, 8, 8)
    res = run("""
        metal::simdgroup_matrix<float, 8, 8> x;
        simdgroup_load(x, A, 8);
        simdgroup_store(x, out, 8, ulong2(0, 0), true);
    """, inputs={"A": a}, out={"out": ((8, 8), "float32")}, grid=(32, 1, 1), header=INCLUDE)
    assert np.array_equal(res.outputs[0], a.T)


@pytest.mark.parametrize(("body", "message"), [
    ("simdgroup_float8x8 x; simdgroup_load(x, A, 8); float y = x + x; out[0] = y;", "invalid operands"),
    ("simdgroup_float8x8 x; simdgroup_load(x, H, 8); simdgroup_store(x, out, 8);", "needs a pointer to 'float'"),
    ("simdgroup_matrix<float, 4, 4> x; out[0] = 0;", "simdgroup matrices are 8x8"),
    ("simdgroup_float8x8 x; simdgroup_load(x, A, 8); simdgroup_store(x, A, 8);", "read-only memory"),
])
def test_misuse_is_a_compile_error(body: str, message: str) -> None:
    with pytest.raises(CompileError) as info:
        run(body, inputs={"A": np.zeros((8, 8), np.float32), "H": np.zeros((8, 8), np.float16)},
            out={"out": ((64,), "float32")}, grid=(32, 1, 1))
    assert message in info.value.message
