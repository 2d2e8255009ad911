"""Kernels from the wild: the examples of MLX's "Custom Metal Kernels" guide, run on the simulator.

The guide (docs/src/dev/custom_metal_kernels.rst in ml-explore/mlx) is where most people first
meet `mx.fast.metal_kernel`, so its kernels are the ones our drop-in must run exactly as MLX
would on a GPU: an elementwise `exp` (templated, then strided through `elem_to_loc`), a fused
bilinear `grid_sample`, and its backward pass with atomic outputs and a `simd_sum` reduction,
wired into `mx.custom_function`. The kernel bodies below keep the guide's constructs (the casts,
the unconditional corner reads, even its integer `W / 2`) in our own layout; every result is
compared with the same computation written in ordinary MLX ops.

Part 6 stands for the kernels MLX projects write beyond the guide (language-model recurrences
and losses, quantised mat-vecs, low-bit codecs, bf16 normalisations, SIMD-group-matrix GEMMs and
attention tiles, vision warps): each test is a kernel of that kind written here, using the
constructs such kernels use the way they use them (moving buffer pointers, byte views of packed
words, bf16 bits, simdgroup_matrix fragments, structs and matrix types, decltype, const tile
sizes, mem_flags), checked against a reference computed from the kernel's meaning in NumPy.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import mlx.core as mx
import numpy as np
import pytest

from metal_puzzles import SanitizerError, metal_kernel

# Tolerances.
# exp, float32: Metal's precise exp is specified to a few ulp and MLX's CPU exp is within about
# one; 1e-6 relative is ~8 ulp of float32 (eps 1.2e-7), far below any real mistake.
EXP_F32 = {"rtol": 1e-6, "atol": 0.0}
# exp, float16: one rounding to half (eps 9.8e-4) may land on either neighbour, so allow 2 ulp.
EXP_F16 = {"rtol": 2e-3, "atol": 0.0}
# grid_sample forward, float32: kernel and reference evaluate the same formula op by op, so they
# differ only by a few roundings of O(1) values (|x| < ~5, weights in [0, 1]).
FWD_F32 = {"rtol": 1e-5, "atol": 1e-5}
# grid_sample forward, float16: the kernel rounds each weight to half once where the reference
# rounds after every op, and the result itself is half: allow ~4 half ulps (eps 9.8e-4).
FWD_F16 = {"rtol": 4e-3, "atol": 4e-3}
# Gradients, float32: atomics and simd_sum add the same terms in another order than MLX does.
# Reordering a float32 sum of K terms moves it by at most ~K * eps * sum(|terms|), typically
# ~sqrt(K) * eps * sum(|terms|). Here K <= 24 sample points per x_grad element and 4 corners x
# <= 40 channels per grid_grad element, with sums of |terms| up to ~100: worst case ~1e-4 abs,
# typically ~1e-5 (measured: under 1% of this tolerance). A lost, doubled or mis-weighted term
# moves a gradient by O(0.1), so the bound still catches every real error.
GRAD_F32 = {"rtol": 1e-4, "atol": 2e-4}

SIMD_WIDTH = 32  # Apple GPUs run 32 threads a simdgroup; the guide hard-codes it too.


def _np(a: mx.array) -> np.ndarray:
    """A NumPy copy of an MLX array (float16 stays float16)."""
    return np.array(a)


def _assert_close(got: mx.array, want: mx.array, tol: dict[str, float]) -> None:
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_allclose(_np(got).astype(np.float64), _np(want).astype(np.float64), **tol)


# ---------------------------------------------------------------------------------------------
# 1-2. Elementwise exp: templated, then strided
# ---------------------------------------------------------------------------------------------

EXP_SOURCE = """
    uint i = thread_position_in_grid.x;
    T val = inp[i];
    out[i] = metal::exp(val);
"""

# The guide's strided variant: MLX's utility header supplies elem_to_loc.
EXP_STRIDED_SOURCE = """
    uint i = thread_position_in_grid.x;
    uint src = elem_to_loc(i, inp_shape, inp_strides, inp_ndim);
    T val = inp[src];
    // outputs are always row contiguous
    out[i] = metal::exp(val);
"""

exp_kernel = metal_kernel(
    name="myexp", input_names=["inp"], output_names=["out"], source=EXP_SOURCE
)
exp_strided_kernel = metal_kernel(
    name="myexp_strided",
    input_names=["inp"],
    output_names=["out"],
    source=EXP_STRIDED_SOURCE,
    ensure_row_contiguous=False,
)


def _run_exp(kernel: Callable, a: mx.array, t: mx.Dtype, **kwargs) -> mx.array:
    """Launch an exp kernel the way the guide does: one thread per element, groups of 256."""
    return kernel(
        inputs=[a],
        template=[("T", t)],
        grid=(a.size, 1, 1),
        threadgroup=(256, 1, 1),
        output_shapes=[a.shape],
        output_dtypes=[a.dtype],
        **{"sanitize": "error", **kwargs},
    )[0]


@pytest.mark.parametrize("shape", [(4, 16), (3, 5, 7)], ids=["4x16", "3x5x7-partial-group"])
@pytest.mark.parametrize(
    ("in_dtype", "t_dtype"),
    [(mx.float32, mx.float32), (mx.float16, mx.float32), (mx.float16, mx.float16)],
    ids=["f32-T=float", "f16-T=float", "f16-T=half"],
)
def test_exp_templated_contiguous(
    shape: tuple[int, ...], in_dtype: mx.Dtype, t_dtype: mx.Dtype
) -> None:
    # The guide's own case is a float16 input with T = float: load converts half -> float,
    # exp runs in float, the store rounds back to half.
    rng = np.random.default_rng(1)
    a = mx.array(rng.standard_normal(shape).astype(np.float32)).astype(in_dtype)
    got = _run_exp(exp_kernel, a, t_dtype)
    _assert_close(got, mx.exp(a), EXP_F32 if in_dtype == mx.float32 else EXP_F16)


def _strided_views() -> dict[str, mx.array]:
    """Non-contiguous MLX views (no copies): slices, transposes and a zero-stride broadcast."""
    rng = np.random.default_rng(2)
    base = mx.array(rng.standard_normal((8, 16)).astype(np.float32))
    cube = mx.array(rng.standard_normal((3, 4, 5)).astype(np.float32))
    row = mx.array(rng.standard_normal((1, 7)).astype(np.float32))
    return {
        "every-other-row": base[::2],
        "transpose": base.T,
        "offset-column-step": base[1:, 1::3],
        "3d-transpose": cube.transpose(2, 0, 1),
        "broadcast": mx.broadcast_to(row, (5, 7)),
        "guide-f16-rows": base[:4].astype(mx.float16)[::2],
    }


STRIDED = _strided_views()


@pytest.mark.parametrize("name", list(STRIDED))
def test_exp_strided_elem_to_loc(name: str) -> None:
    a = STRIDED[name]
    assert not memoryview(a).c_contiguous  # really a strided view, or the test proves nothing
    got = _run_exp(exp_strided_kernel, a, mx.float32)
    _assert_close(got, mx.exp(a), EXP_F32 if a.dtype == mx.float32 else EXP_F16)


STRIDE_PROBE_SOURCE = """
    uint d = thread_position_in_grid.x;
    shape_out[d] = inp_shape[d];
    strides_out[d] = inp_strides[d];
"""


@pytest.mark.parametrize("name", ["every-other-row", "transpose", "3d-transpose", "broadcast"])
@pytest.mark.parametrize("row_contiguous", [False, True], ids=["as-is", "copied"])
def test_kernel_sees_the_view_strides(name: str, row_contiguous: bool) -> None:
    # MLX hands a strided input to the kernel untouched when ensure_row_contiguous=False (so
    # elem_to_loc sees the view's strides, in elements) and a row-contiguous copy otherwise.
    a = STRIDED[name]
    probe = metal_kernel(
        name="stride_probe",
        input_names=["inp"],
        output_names=["shape_out", "strides_out"],
        source=STRIDE_PROBE_SOURCE,
        ensure_row_contiguous=row_contiguous,
    )
    shape_out, strides_out = probe(
        inputs=[a],
        grid=(a.ndim, 1, 1),
        threadgroup=(a.ndim, 1, 1),
        output_shapes=[(a.ndim,), (a.ndim,)],
        output_dtypes=[mx.int32, mx.int64],
        sanitize="error",
    )
    view = memoryview(a)
    if row_contiguous:
        want = np.cumprod((a.shape[1:] + (1,))[::-1])[::-1]
    else:
        want = np.array(view.strides) // view.itemsize
    assert _np(shape_out).tolist() == list(a.shape)
    assert _np(strides_out).tolist() == [int(s) for s in want]


def test_verbose_prints_generated_source(capsys: pytest.CaptureFixture[str]) -> None:
    a = mx.array(np.linspace(-1, 1, 64, dtype=np.float32).reshape(4, 16)).astype(mx.float16)
    _run_exp(exp_kernel, a, mx.float32, verbose=True)
    printed = capsys.readouterr().out
    # The signature MLX writes for the guide's example (name suffixes vary across MLX versions).
    assert "template <typename T>" in printed
    assert re.search(r"\[\[kernel\]\] void custom_kernel_myexp\w*\(", printed)
    assert "const device float16_t* inp [[buffer(0)]]" in printed
    assert "device float16_t* out [[buffer(1)]]" in printed
    assert "uint3 thread_position_in_grid [[thread_position_in_grid]]" in printed
    assert "out[i] = metal::exp(val);" in printed


def test_not_verbose_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    a = mx.array(np.linspace(-1, 1, 16, dtype=np.float32))
    _run_exp(exp_kernel, a, mx.float32)
    assert "custom_kernel_myexp" not in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# 3. Bilinear grid_sample, forward
# ---------------------------------------------------------------------------------------------


def grid_sample_ref(x: mx.array, grid: mx.array) -> mx.array:
    """Bilinear grid_sample (NHWC, align_corners=False, zero padding) in plain MLX ops.

    Corners outside the image are gathered from a clamped index and then zeroed, so the
    reference never reads out of bounds and stays differentiable in x and grid.
    """
    n, h, w, _ = x.shape
    px = ((grid[..., 0] + 1) * w - 1) / 2
    py = ((grid[..., 1] + 1) * h - 1) / 2
    left = mx.stop_gradient(mx.floor(px).astype(mx.int32))
    top = mx.stop_gradient(mx.floor(py).astype(mx.int32))
    right = left + 1
    bottom = top + 1
    batch = mx.arange(n)[:, None, None]

    def corner(yi: mx.array, xi: mx.array, weight: mx.array) -> mx.array:
        inside = (yi >= 0) & (yi <= h - 1) & (xi >= 0) & (xi <= w - 1)
        val = x[batch, mx.clip(yi, 0, h - 1), mx.clip(xi, 0, w - 1), :]
        return weight[..., None] * mx.where(inside[..., None], val, 0)

    return (
        corner(top, left, (right - px) * (bottom - py))
        + corner(top, right, (px - left) * (bottom - py))
        + corner(bottom, left, (right - px) * (py - top))
        + corner(bottom, right, (px - left) * (py - top))
    )


GRID_SAMPLE_SOURCE = """
    uint tid = thread_position_in_grid.x;
    int H = x_shape[1];
    int W = x_shape[2];
    int C = x_shape[3];
    int gH = grid_shape[1];
    int gW = grid_shape[2];

    // x is row-contiguous NHWC: element strides of a pixel column, a row, an image
    int col_step = C;
    int row_step = W * col_step;
    int img_step = H * row_step;

    // C consecutive threads (one per channel) share a sample point
    uint g = tid / C * 2;
    float px = ((grid[g] + 1) * W - 1) / 2;
    float py = ((grid[g + 1] + 1) * H - 1) / 2;

    int left = floor(px);
    int top = floor(py);
    int right = left + 1;
    int bottom = top + 1;

    T w_tl = (right - px) * (bottom - py);
    T w_tr = (px - left) * (bottom - py);
    T w_bl = (right - px) * (py - top);
    T w_br = (px - left) * (py - top);

    int batch_off = tid / C / gH / gW * img_step;
    int chan = tid % C;
    int base = batch_off + chan;

    T v_tl = x[base + top * row_step + left * col_step];
    T v_tr = x[base + top * row_step + right * col_step];
    T v_bl = x[base + bottom * row_step + left * col_step];
    T v_br = x[base + bottom * row_step + right * col_step];

    // corners outside the image count as zero (the loads above happen regardless)
    v_tl = top >= 0 && top <= H - 1 && left >= 0 && left <= W - 1 ? v_tl : 0;
    v_tr = top >= 0 && top <= H - 1 && right >= 0 && right <= W - 1 ? v_tr : 0;
    v_bl = bottom >= 0 && bottom <= H - 1 && left >= 0 && left <= W - 1 ? v_bl : 0;
    v_br = bottom >= 0 && bottom <= H - 1 && right >= 0 && right <= W - 1 ? v_br : 0;

    out[tid] = w_tl * v_tl + w_tr * v_tr + w_bl * v_bl + w_br * v_br;
"""

grid_sample_kernel = metal_kernel(
    name="grid_sample",
    input_names=["x", "grid"],
    output_names=["out"],
    source=GRID_SAMPLE_SOURCE,
)


def grid_sample_metal(x: mx.array, grid: mx.array, sanitize: str = "error") -> mx.array:
    """Launch the fused forward kernel: one thread per output element, groups of 256. The tests
    run it strictly (the drop-in's own default only warns), so a stray access fails them."""
    b, _, _, c = x.shape
    _, gh, gw, d = grid.shape
    assert d == 2
    out_shape = (b, gh, gw, c)
    return grid_sample_kernel(
        inputs=[x, grid],
        template=[("T", x.dtype)],
        output_shapes=[out_shape],
        output_dtypes=[x.dtype],
        grid=(int(np.prod(out_shape)), 1, 1),
        threadgroup=(256, 1, 1),
        sanitize=sanitize,
    )[0]


def _corner_offsets(points: np.ndarray, x_shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """Pixel coordinates of each point's corners, computed in float32 as the kernel does."""
    _, h, w, _ = x_shape
    px = ((points[..., 0] + 1) * w - 1) / 2
    py = ((points[..., 1] + 1) * h - 1) / 2
    left = np.floor(px).astype(np.int64)
    top = np.floor(py).astype(np.int64)
    return left, top, left + 1, top + 1


def _reads_stay_in_buffer(points: np.ndarray, x_shape: tuple[int, ...]) -> np.ndarray:
    """Per point: do the forward kernel's four unconditional loads stay inside x's buffer?

    The guide's forward kernel loads all four corners before masking the outside ones, so a
    corner off the image is still a load at `base + row * row_step + col * col_step`. Inside
    the image's neighbours that is a harmless in-buffer read; before the first element or
    past the last it is an out-of-bounds read (undefined on a GPU, flagged by the simulator).
    """
    b, h, w, c = x_shape
    left, top, right, bottom = _corner_offsets(points, x_shape)
    batch = np.arange(b)[:, None, None]
    lowest = batch * h * w * c + top * w * c + left * c
    highest = batch * h * w * c + bottom * w * c + right * c + (c - 1)
    return (lowest >= 0) & (highest < b * h * w * c)


def _edge_points(b: int) -> list[tuple[int, int, int, float, float]]:
    """Sample points (batch, row, col, gx, gy) past every edge of the image.

    Each lies off the image by half a pixel, so one or two of its corners are masked, and is
    placed in a batch where even the masked loads stay inside the buffer.
    """
    last = b - 1
    return [
        (0, 0, 0, -1.0, 0.0),  # left edge
        (0, 0, 1, 1.0, 0.0),  # right edge
        (0, 1, 0, 0.0, 1.0),  # bottom edge (not in the last image)
        (last, 0, 0, 0.0, -1.0),  # top edge (not in the first image)
        (last, 1, 1, -1.0, -1.0),  # top-left corner
    ]


def sample_grid(
    rng: np.random.Generator, x_shape: tuple[int, ...], grid_hw: tuple[int, int], in_buffer: bool
) -> mx.array:
    """Random sample points in [-1, 1]^2, plus points past each edge of the image.

    With `in_buffer`, points whose forward loads would leave x's buffer are redrawn, so the
    guide's forward kernel can run as written (see `_reads_stay_in_buffer`).
    """
    b = x_shape[0]
    points = rng.uniform(-1, 1, (b, *grid_hw, 2)).astype(np.float32)
    if b >= 2:
        for bi, i, j, gx, gy in _edge_points(b):
            points[bi, i, j] = (gx, gy)
    while in_buffer:
        bad = ~_reads_stay_in_buffer(points, x_shape)
        if not bad.any():
            break
        points[bad] = rng.uniform(-1, 1, (int(bad.sum()), 2)).astype(np.float32)
    left, top, right, bottom = _corner_offsets(points, x_shape)
    _, h, w, _ = x_shape
    assert ((left < 0) | (top < 0) | (right > w - 1) | (bottom > h - 1)).any()
    return mx.array(points)


# (x shape NHWC, grid H x W): threads = N*gH*gW*C; none is a multiple of 256.
FWD_CASES = [
    ((1, 4, 6, 3), (5, 7)),  # 105 threads: a single partial threadgroup
    ((2, 5, 8, 4), (3, 9)),  # 216
    ((3, 6, 4, 5), (4, 4)),  # 240
    ((2, 7, 9, 6), (6, 5)),  # 360: one full group and a partial one
]


@pytest.mark.parametrize(("x_shape", "grid_hw"), FWD_CASES, ids=lambda v: "x".join(map(str, v)))
def test_grid_sample_forward_matches_reference(
    x_shape: tuple[int, ...], grid_hw: tuple[int, int]
) -> None:
    rng = np.random.default_rng(sum(x_shape) + sum(grid_hw))
    x = mx.array(rng.standard_normal(x_shape).astype(np.float32))
    grid = sample_grid(rng, x_shape, grid_hw, in_buffer=True)
    _assert_close(grid_sample_metal(x, grid), grid_sample_ref(x, grid), FWD_F32)


def test_grid_sample_forward_at_pixel_centres_returns_x() -> None:
    # A point at a pixel centre puts all the weight on that pixel, so sampling the centres
    # reproduces x exactly (weights 1 and 0; power-of-two sizes keep the coordinates exact),
    # independently of the reference. The last row and column are left out: there the guide's
    # unconditional loads of the (zero-weight) next corners would pass the end of the buffer.
    b, h, w, c = 2, 4, 8, 3
    rng = np.random.default_rng(7)
    x = mx.array(rng.standard_normal((b, h, w, c)).astype(np.float32))
    gx = (2 * np.arange(w - 1, dtype=np.float32) + 1) / w - 1
    gy = (2 * np.arange(h - 1, dtype=np.float32) + 1) / h - 1
    centres = np.stack(np.meshgrid(gx, gy), axis=-1)  # (h - 1, w - 1, 2), last dim (x, y)
    grid = mx.array(np.broadcast_to(centres, (b, h - 1, w - 1, 2)).copy())
    assert _reads_stay_in_buffer(np.array(grid), (b, h, w, c)).all()
    np.testing.assert_array_equal(_np(grid_sample_metal(x, grid)), _np(x[:, : h - 1, : w - 1]))


def test_grid_sample_forward_reports_the_guides_out_of_bounds_loads() -> None:
    # Past the top-left corner of the first image, three of the guide's four unconditional
    # loads land before the start of x (flat indices -3, -2, -1 of this 2x2x1 image). A GPU
    # would fetch whatever lies there and the mask would discard it; the simulator reports
    # each read, and with findings only warned about it still returns the masked result.
    x = mx.array(np.arange(1, 5, dtype=np.float32).reshape(1, 2, 2, 1))
    grid = mx.array(np.full((1, 1, 1, 2), -1.0, dtype=np.float32))
    with pytest.raises(SanitizerError) as info:
        grid_sample_metal(x, grid)
    reads = sorted((f.kind, f.buffer, f.index) for f in info.value.findings)
    assert reads == [("out-of-bounds", "x", i) for i in (-3, -2, -1)]

    # The drop-in's default: the findings become warnings (each once per kernel object, however
    # often it runs) and the GPU's masked result comes back.
    fresh = metal_kernel(name="grid_sample", input_names=["x", "grid"], output_names=["out"],
                         source=grid_sample_kernel.source, header=grid_sample_kernel.header)
    with pytest.warns(RuntimeWarning, match="out-of-bounds") as caught:
        for _ in range(2):
            (out,) = fresh(
                inputs=[x, grid],
                template=[("T", mx.float32)],
                output_shapes=[(1, 1, 1, 1)],
                output_dtypes=[mx.float32],
                grid=(1, 1, 1),
                threadgroup=(256, 1, 1),
            )
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 3, messages  # the three reads, warned about on the first call only
    assert all("outside the" in m and "x[" in m for m in messages)
    # Only the bottom-right corner, x[0, 0, 0] = 1, is inside; its weight is 0.5 * 0.5.
    assert _np(out).tolist() == [[[[0.25]]]]
    _assert_close(out, grid_sample_ref(x, grid), FWD_F32)


def test_grid_sample_forward_half() -> None:
    # template T = half: the kernel's coordinate math runs in half like the reference's.
    x_shape, grid_hw = (2, 5, 6, 3), (4, 5)
    rng = np.random.default_rng(11)
    x = mx.array(rng.standard_normal(x_shape).astype(np.float16))
    grid = sample_grid(rng, x_shape, grid_hw, in_buffer=True).astype(mx.float16)
    _assert_close(grid_sample_metal(x, grid), grid_sample_ref(x, grid), FWD_F16)


# ---------------------------------------------------------------------------------------------
# 4. grid_sample backward with atomic outputs
# ---------------------------------------------------------------------------------------------

# Shared by both backward variants: bilinear weights, then for each in-image corner an atomic
# add into x_grad and the corner's contribution to d(out)/d(px, py).
_BWD_BODY = """
    int gH = grid_shape[1];
    int gW = grid_shape[2];

    int col_step = C;
    int row_step = W * col_step;
    int img_step = H * row_step;

    uint g = tid / lanes * 2;
    float px = ((grid[g] + 1) * W - 1) / 2;
    float py = ((grid[g + 1] + 1) * H - 1) / 2;

    int left = floor(px);
    int top = floor(py);
    int right = left + 1;
    int bottom = top + 1;

    T w_tl = (right - px) * (bottom - py);
    T w_tr = (px - left) * (bottom - py);
    T w_bl = (right - px) * (py - top);
    T w_br = (px - left) * (py - top);

    int batch_off = tid / lanes / gH / gW * img_step;
    int chan = tid % lanes;
    int base = batch_off + chan;

    T dpx = T(0);
    T dpy = T(0);
    if (chan < C) {
        T ct = cotangent[tid / lanes * C + chan];
        if (top >= 0 && top <= H - 1 && left >= 0 && left <= W - 1) {
            int at = base + top * row_step + left * col_step;
            atomic_fetch_add_explicit(&x_grad[at], w_tl * ct, memory_order_relaxed);
            T v = x[at];
            dpx -= v * (bottom - py) * ct;
            dpy -= v * (right - px) * ct;
        }
        if (top >= 0 && top <= H - 1 && right >= 0 && right <= W - 1) {
            int at = base + top * row_step + right * col_step;
            atomic_fetch_add_explicit(&x_grad[at], w_tr * ct, memory_order_relaxed);
            T v = x[at];
            dpx += v * (bottom - py) * ct;
            dpy -= v * (px - left) * ct;
        }
        if (bottom >= 0 && bottom <= H - 1 && left >= 0 && left <= W - 1) {
            int at = base + bottom * row_step + left * col_step;
            atomic_fetch_add_explicit(&x_grad[at], w_bl * ct, memory_order_relaxed);
            T v = x[at];
            dpx -= v * (py - top) * ct;
            dpy += v * (right - px) * ct;
        }
        if (bottom >= 0 && bottom <= H - 1 && right >= 0 && right <= W - 1) {
            int at = base + bottom * row_step + right * col_step;
            atomic_fetch_add_explicit(&x_grad[at], w_br * ct, memory_order_relaxed);
            T v = x[at];
            dpx += v * (py - top) * ct;
            dpy += v * (px - left) * ct;
        }
    }

    // d(px)/d(grid x) = W / 2 -- written, as in the guide, as an integer division
    T scale_x = W / 2;
    T scale_y = H / 2;
"""

# The guide's version: pad each point's threads to whole simdgroups, reduce with simd_sum, and
# let one lane per simdgroup do the grid_grad atomics.
GRID_SAMPLE_GRAD_SIMD_SOURCE = (
    """
    uint tid = thread_position_in_grid.x;
    int H = x_shape[1];
    int W = x_shape[2];
    int C = x_shape[3];
    // threads per sample point: C rounded up to whole simdgroups, so no simd_sum mixes points
    int lanes = ceildiv(C, threads_per_simdgroup) * threads_per_simdgroup;
"""
    + _BWD_BODY
    + """
    // reduce across the simdgroup first: far fewer atomics than one per thread
    dpx = simd_sum(dpx);
    dpy = simd_sum(dpy);
    if (thread_index_in_simdgroup == 0) {
        atomic_fetch_add_explicit(&grid_grad[g], dpx * scale_x, memory_order_relaxed);
        atomic_fetch_add_explicit(&grid_grad[g + 1], dpy * scale_y, memory_order_relaxed);
    }
"""
)

# The naive version the guide improves on: one thread per channel, every thread does atomics.
GRID_SAMPLE_GRAD_ATOMIC_SOURCE = (
    """
    uint tid = thread_position_in_grid.x;
    int H = x_shape[1];
    int W = x_shape[2];
    int C = x_shape[3];
    int lanes = C;
"""
    + _BWD_BODY
    + """
    atomic_fetch_add_explicit(&grid_grad[g], dpx * scale_x, memory_order_relaxed);
    atomic_fetch_add_explicit(&grid_grad[g + 1], dpy * scale_y, memory_order_relaxed);
"""
)

grad_kernels = {
    variant: metal_kernel(
        name=f"grid_sample_grad_{variant}",
        input_names=["x", "grid", "cotangent"],
        output_names=["x_grad", "grid_grad"],
        source=source,
        atomic_outputs=True,
    )
    for variant, source in [
        ("simd", GRID_SAMPLE_GRAD_SIMD_SOURCE),
        ("atomic", GRID_SAMPLE_GRAD_ATOMIC_SOURCE),
    ]
}


def grid_sample_grad_metal(
    x: mx.array, grid: mx.array, cotangent: mx.array, variant: str = "simd"
) -> tuple[mx.array, mx.array]:
    """Launch a backward kernel; outputs start at zero and are only ever added to."""
    b, _, _, c = x.shape
    _, gh, gw, d = grid.shape
    assert d == 2
    lanes = -(-c // SIMD_WIDTH) * SIMD_WIDTH if variant == "simd" else c
    x_grad, grid_grad = grad_kernels[variant](
        inputs=[x, grid, cotangent],
        template=[("T", x.dtype)],
        output_shapes=[x.shape, grid.shape],
        output_dtypes=[x.dtype, x.dtype],
        grid=(b * gh * gw * lanes, 1, 1),
        threadgroup=(256, 1, 1),
        init_value=0,
        sanitize="error",
    )
    return x_grad, grid_grad


def _reference_vjp(x: mx.array, grid: mx.array, cotangent: mx.array) -> tuple[mx.array, mx.array]:
    _, (dx, dgrid) = mx.vjp(lambda a, g: grid_sample_ref(a, g), [x, grid], [cotangent])
    return dx, dgrid


# Even H and W (see the odd-W test): C = 3 pads to one simdgroup per point, C = 40 to two
# (the second one mostly padding); thread counts 1280, 640, 1728 and 576 leave partial groups.
BWD_CASES = [
    ((2, 6, 8, 3), (4, 5)),
    ((1, 4, 4, 5), (4, 5)),
    ((3, 4, 6, 2), (6, 4)),
    ((1, 4, 4, 40), (3, 3)),
]


@pytest.mark.parametrize("variant", ["simd", "atomic"])
@pytest.mark.parametrize(("x_shape", "grid_hw"), BWD_CASES, ids=lambda v: "x".join(map(str, v)))
def test_grid_sample_backward_matches_autodiff(
    x_shape: tuple[int, ...], grid_hw: tuple[int, int], variant: str
) -> None:
    rng = np.random.default_rng(100 + sum(x_shape) + sum(grid_hw))
    x = mx.array(rng.standard_normal(x_shape).astype(np.float32))
    # The backward kernel only loads corners inside the image, so any point in [-1, 1]^2 is fine.
    grid = sample_grid(rng, x_shape, grid_hw, in_buffer=False)
    cot = mx.array(rng.standard_normal((x_shape[0], *grid_hw, x_shape[3])).astype(np.float32))
    dx, dgrid = grid_sample_grad_metal(x, grid, cot, variant)
    want_dx, want_dgrid = _reference_vjp(x, grid, cot)
    _assert_close(dx, want_dx, GRAD_F32)
    _assert_close(dgrid, want_dgrid, GRAD_F32)


@pytest.mark.parametrize("variant", ["simd", "atomic"])
def test_grid_sample_backward_odd_width_keeps_integer_division(variant: str) -> None:
    # The guide writes `T gix_mult = W / 2;` with int W: C integer division, so for odd W the
    # x-gradient of the grid is scaled by floor(W/2) instead of W/2. A faithful simulator
    # reproduces that exactly; x_grad and the y-gradient (even H) are unaffected.
    x_shape, grid_hw = (2, 4, 5, 3), (3, 4)
    rng = np.random.default_rng(5)
    x = mx.array(rng.standard_normal(x_shape).astype(np.float32))
    grid = sample_grid(rng, x_shape, grid_hw, in_buffer=False)
    cot = mx.array(rng.standard_normal((2, *grid_hw, 3)).astype(np.float32))
    dx, dgrid = grid_sample_grad_metal(x, grid, cot, variant)
    want_dx, want_dgrid = _reference_vjp(x, grid, cot)
    _assert_close(dx, want_dx, GRAD_F32)
    _assert_close(dgrid[..., 1], want_dgrid[..., 1], GRAD_F32)
    _assert_close(dgrid[..., 0], want_dgrid[..., 0] * (5 // 2) / (5 / 2), GRAD_F32)
    assert not np.allclose(_np(dgrid[..., 0]), _np(want_dgrid[..., 0]), **GRAD_F32)


# ---------------------------------------------------------------------------------------------
# 5. Forward and backward kernels as one differentiable MLX function
# ---------------------------------------------------------------------------------------------


@mx.custom_function
def grid_sample(x: mx.array, grid: mx.array) -> mx.array:
    """grid_sample whose forward and backward both run the guide's kernels."""
    assert x.ndim == 4 and grid.ndim == 4
    return grid_sample_metal(x, grid)


@grid_sample.vjp
def grid_sample_vjp(
    primals: tuple[mx.array, mx.array], cotangent: mx.array, _output: mx.array
) -> tuple[mx.array, mx.array]:
    x, grid = primals
    return grid_sample_grad_metal(x, grid, cotangent, "simd")


def _loss_weighted(out: mx.array) -> mx.array:
    weights = mx.cos(mx.arange(out.size, dtype=mx.float32)).reshape(out.shape)
    return (out * weights).sum()


def _loss_sum(out: mx.array) -> mx.array:
    # The cotangent of a sum is a zero-stride broadcast: the default ensure_row_contiguous=True
    # must hand the backward kernel a contiguous copy.
    return out.sum()


@pytest.mark.parametrize("loss", [_loss_weighted, _loss_sum], ids=["weighted", "sum"])
def test_grad_through_custom_function(loss: Callable[[mx.array], mx.array]) -> None:
    x_shape, grid_hw = (2, 6, 4, 3), (5, 3)
    rng = np.random.default_rng(21)
    x = mx.array(rng.standard_normal(x_shape).astype(np.float32))
    grid = sample_grid(rng, x_shape, grid_hw, in_buffer=True)

    value, (dx, dgrid) = mx.value_and_grad(lambda a, g: loss(grid_sample(a, g)), argnums=(0, 1))(
        x, grid
    )
    want_value, (want_dx, want_dgrid) = mx.value_and_grad(
        lambda a, g: loss(grid_sample_ref(a, g)), argnums=(0, 1)
    )(x, grid)

    _assert_close(value, want_value, GRAD_F32)
    _assert_close(dx, want_dx, GRAD_F32)
    _assert_close(dgrid, want_dgrid, GRAD_F32)


# ---------------------------------------------------------------------------------------------
# 6. Kernels as MLX projects write them
# ---------------------------------------------------------------------------------------------


def _run(kernel, inputs, shapes, dtypes, grid, threadgroup, **kw) -> list[np.ndarray]:
    """Launch strictly (a finding fails the test) and return the outputs as float64/int arrays."""
    outs = kernel(inputs=inputs, output_shapes=shapes, output_dtypes=dtypes, grid=grid, threadgroup=threadgroup,
                  sanitize=kw.pop("sanitize", "error"), **kw)
    return [np.array(o.astype(mx.float32)) if o.dtype == mx.bfloat16 else np.array(o) for o in outs]


RECURRENCE = metal_kernel(
    name="decay_scan", input_names=["x", "a", "state0"], output_names=["y", "state_out"],
    source="""
    // One thread per (head, channel): s <- s * a + x over time, as gated-delta / SSM updates
    // do, walking every buffer pointer forward one time step at a time.
    uint d = thread_position_in_grid.x;
    uint h = thread_position_in_grid.y;
    float s = state0[h * D + d];
    x += h * D + d;
    y += h * D + d;
    a += h;
    for (int t = 0; t < T; ++t) {
        s = s * a[0] + x[0];
        *y = s;
        x += H * D;
        y += H * D;
        a += H;
    }
    state_out[h * D + d] = s;
""")


def test_recurrence_moves_its_buffer_pointers_each_time_step() -> None:
    """A language-model recurrence (mlx-lm gated delta / Mamba SSM update style)."""
    t_steps, heads, dim = 5, 3, 8
    rng = np.random.default_rng(30)
    x = rng.standard_normal((t_steps, heads, dim)).astype(np.float32)
    a = rng.uniform(0.5, 1.0, (t_steps, heads)).astype(np.float32)
    s0 = rng.standard_normal((heads, dim)).astype(np.float32)
    y, s_out = _run(RECURRENCE, [mx.array(x), mx.array(a), mx.array(s0)], [x.shape, s0.shape],
                    [mx.float32, mx.float32], (dim, heads, 1), (dim, 1, 1),
                    template=[("T", t_steps), ("H", heads), ("D", dim)])
    s = s0.astype(np.float64)
    want = np.empty_like(x, dtype=np.float64)
    for t in range(t_steps):
        s = s * a[t][:, None] + x[t]
        want[t] = s
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s_out, s, rtol=1e-5, atol=1e-5)


LOGSUMEXP_LOSS = """
    // One threadgroup of 64 threads per row: logsumexp(logits) - logits[target], the way the
    // mlx-lm loss kernels reduce: SIMD-group max and sum, partials in threadgroup memory.
    uint row = threadgroup_position_in_grid.x;
    uint lid = thread_position_in_threadgroup.x;
    uint lane = thread_index_in_simdgroup;
    uint sg = simdgroup_index_in_threadgroup;
    logits += row * V;
    threadgroup float part[2];
    float m = -INFINITY;
    for (uint k = lid; k < V; k += 64) {
        m = max(m, logits[k]);
    }
    m = simd_max(m);
    if (lane == 0) {
        part[sg] = m;
    }
    threadgroup_barrier(mem_flags::FLAGS);
    m = max(part[0], part[1]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s = 0.0f;
    for (uint k = lid; k < V; k += 64) {
        s += metal::exp(logits[k] - m);
    }
    s = simd_sum(s);
    if (lane == 0) {
        part[sg] = s;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid == 0) {
        loss[row] = m + metal::log(part[0] + part[1]) - logits[target[row]];
    }
"""


def _loss_case():
    rng = np.random.default_rng(31)
    logits = (rng.standard_normal((4, 100)) * 3).astype(np.float32)
    target = rng.integers(0, 100, 4).astype(np.int32)
    m = logits.max(axis=1, keepdims=True).astype(np.float64)
    want = (m[:, 0] + np.log(np.exp(logits - m).sum(axis=1))) - logits[np.arange(4), target]
    return logits, target, want


def test_loss_kernel_moves_logits_to_its_row() -> None:
    """A cross-entropy loss row kernel (mlx-lm tuner losses style)."""
    logits, target, want = _loss_case()
    k = metal_kernel("row_loss", ["logits", "target"], ["loss"], LOGSUMEXP_LOSS.replace("FLAGS", "mem_threadgroup"))
    (got,) = _run(k, [mx.array(logits), mx.array(target)], [(4,)], [mx.float32], (64 * 4, 1, 1), (64, 1, 1),
                  template=[("V", 100)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_loss_kernel_with_an_execution_only_barrier_races() -> None:
    """The same kernel with threadgroup_barrier(mem_flags::mem_none) between publishing and reading
    the partial maxima, as one variant in the wild does: by Metal's rules nothing orders the
    threadgroup memory. Strictly it is an error; the drop-in's default warns (once) and runs."""
    logits, target, want = _loss_case()
    k = metal_kernel("row_loss_none", ["logits", "target"], ["loss"], LOGSUMEXP_LOSS.replace("FLAGS", "mem_none"))
    args = dict(inputs=[mx.array(logits), mx.array(target)], output_shapes=[(4,)], output_dtypes=[mx.float32],
                grid=(64 * 4, 1, 1), threadgroup=(64, 1, 1), template=[("V", 100)])
    with pytest.raises(SanitizerError) as info:
        k(**args, sanitize="error")
    f = info.value.findings[0]
    assert f.kind == "race" and f.buffer == "part" and "mem_none" not in f.message
    assert "does not order threadgroup memory" in f.message
    with pytest.warns(RuntimeWarning, match="race"):
        (got,) = k(**args)
    np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-5)


QMV_HEADER = """
// Four 4-bit codes per 16-bit word, low nibble first; the activations are pre-divided by
// 1, 16, 256, 4096 so each masked nibble needs no shift (MLX's qdot trick).
inline float qdot4(const device uint8_t* w, const thread float* xs, int count) {
    const device uint16_t* ws = (const device uint16_t*)w;
    float acc = 0.0f;
    for (int i = 0; i < count / 4; ++i) {
        acc += xs[4 * i] * float(ws[i] & 0x000f) + xs[4 * i + 1] * float(ws[i] & 0x00f0)
             + xs[4 * i + 2] * float(ws[i] & 0x0f00) + xs[4 * i + 3] * float(ws[i] & 0xf000);
    }
    return acc;
}
"""

QMV = metal_kernel(
    name="qmv4", input_names=["w", "scales", "biases", "x"], output_names=["y"], header=QMV_HEADER,
    source="""
    // One thread per output row of an affine 4-bit quantised matrix (groups of G columns):
    // the uint32 weight words are read as bytes, then as 16-bit words in the helper.
    uint n = thread_position_in_grid.x;
    const device uint8_t* wrow = (const device uint8_t*)w + n * (K / 2);
    float total = 0.0f;
    for (int g = 0; g < K / G; ++g) {
        float xs[G];
        float xsum = 0.0f;
        for (int j = 0; j < G; j += 4) {
            const device float* xg = x + g * G + j;
            xs[j] = xg[0];
            xs[j + 1] = xg[1] / 16.0f;
            xs[j + 2] = xg[2] / 256.0f;
            xs[j + 3] = xg[3] / 4096.0f;
            xsum += xg[0] + xg[1] + xg[2] + xg[3];
        }
        float q = qdot4(wrow + g * (G / 2), xs, G);
        total += scales[n * (K / G) + g] * q + biases[n * (K / G) + g] * xsum;
    }
    y[n] = total;
""")


def test_quantized_matvec_reads_uint32_words_as_bytes_and_halfwords() -> None:
    """An affine 4-bit quantised mat-vec (MLX qmv / mlx-vlm qwen3.5 verify style)."""
    n_rows, k, g = 6, 64, 16
    rng = np.random.default_rng(32)
    codes = rng.integers(0, 16, (n_rows, k)).astype(np.uint8)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8).view(np.uint32)  # little-endian words
    scales = rng.uniform(0.01, 0.1, (n_rows, k // g)).astype(np.float32)
    biases = rng.uniform(-0.5, 0.5, (n_rows, k // g)).astype(np.float32)
    x = rng.standard_normal(k).astype(np.float32)
    (got,) = _run(QMV, [mx.array(packed), mx.array(scales), mx.array(biases), mx.array(x)], [(n_rows,)],
                  [mx.float32], (n_rows, 1, 1), (n_rows, 1, 1), template=[("K", k), ("G", g)])
    dense = codes * np.repeat(scales, g, axis=1) + np.repeat(biases, g, axis=1)
    np.testing.assert_allclose(got, dense.astype(np.float64) @ x, rtol=1e-5, atol=1e-5)


UNPACK3 = metal_kernel(
    name="unpack3", input_names=["packed"], output_names=["codes"],
    source="""
    // 3-bit codes packed LSB first into uint32 words, straddling byte boundaries (a KV-cache
    // codec's unpack): read the two bytes a code may span through a byte view of the words.
    uint i = thread_position_in_grid.x;
    const device uchar* bytes = (const device uchar*)packed;
    uint bit = 3 * i;
    uint at = bit >> 3;
    uint shift = bit & 7;
    uint lo = bytes[at] >> shift;
    uint hi = shift > 5 ? uint(bytes[at + 1]) << (8 - shift) : 0u;
    codes[i] = (lo | hi) & 7u;
""")


def test_low_bit_codes_straddling_bytes_unpack_bit_for_bit() -> None:
    """A low-bit codec (mlx-vlm TurboQuant style)."""
    rng = np.random.default_rng(33)
    n = 50
    codes = rng.integers(0, 8, n).astype(np.uint32)
    bits = np.zeros(32 * 8, dtype=np.uint8)  # 8 words: 256 bits, more than the 150 used
    for i, c in enumerate(codes):
        for b in range(3):
            bits[3 * i + b] = (c >> b) & 1
    packed = np.packbits(bits, bitorder="little").view(np.uint32)
    (got,) = _run(UNPACK3, [mx.array(packed)], [(n,)], [mx.uint32], (n, 1, 1), (64, 1, 1))
    assert got.tolist() == codes.tolist()


BF16_RMSNORM = metal_kernel(
    name="rmsnorm_bf16", input_names=["x", "w"], output_names=["y"],
    source="""
    // One SIMD-group per row of 64 bf16 values, two per lane: bf16 read as raw 16-bit words
    // and widened by hand, results rounded to nearest even by hand and stored two at a time
    // (mhc-mlx's bf16 kernels).
    uint row = threadgroup_position_in_grid.x;
    uint lane = thread_index_in_simdgroup;
    const device ushort* raw = reinterpret_cast<const device ushort*>(x) + row * 64;
    float a = as_type<float>(uint(raw[2 * lane]) << 16);
    float b = as_type<float>(uint(raw[2 * lane + 1]) << 16);
    float ss = simd_sum(a * a + b * b);
    float inv = metal::rsqrt(ss / 64.0f + 1e-6f);
    float ra = a * inv * float(w[2 * lane]);
    float rb = b * inv * float(w[2 * lane + 1]);
    uint ua = as_type<uint>(ra);
    uint ub = as_type<uint>(rb);
    ua += 0x7FFFu + ((ua >> 16) & 1u);
    ub += 0x7FFFu + ((ub >> 16) & 1u);
    device packed_ushort2* out2 = (device packed_ushort2*)(y + row * 64);
    out2[lane] = packed_ushort2(ushort(ua >> 16), ushort(ub >> 16));
""")


def test_bf16_normalisation_through_raw_words() -> None:
    """A bf16 RMS normalisation (mhc-mlx style)."""
    rng = np.random.default_rng(34)
    x = mx.array(rng.standard_normal((3, 64)).astype(np.float32)).astype(mx.bfloat16)
    w = mx.array(rng.uniform(0.5, 1.5, 64).astype(np.float32))
    (got,) = _run(BF16_RMSNORM, [x, w], [(3, 64)], [mx.bfloat16], (3 * 32, 1, 1), (32, 1, 1))
    xf = np.array(x.astype(mx.float32)).astype(np.float64)
    want = xf / np.sqrt((xf ** 2).mean(axis=1, keepdims=True) + 1e-6) * np.array(w)
    np.testing.assert_allclose(got, want, rtol=2 ** -7, atol=1e-6)  # within one bf16 rounding


SIMD_GEMM = metal_kernel(
    name="sg_gemm", input_names=["a", "b"], output_names=["c"],
    source="""
    // A 16x16 tile of c per threadgroup of four SIMD-groups (a steel-like GEMM without its
    // templates): K in steps of 8, the A and B slices staged in threadgroup memory, each
    // SIMD-group multiplying its 8x8 fragments from there.
    threadgroup float as[16 * 8];
    threadgroup float bs[8 * 16];
    uint tid = thread_index_in_threadgroup;
    uint sg = simdgroup_index_in_threadgroup;
    uint row0 = threadgroup_position_in_grid.y * 16;
    uint col0 = threadgroup_position_in_grid.x * 16;
    uint sr = (sg / 2) * 8;
    uint sc = (sg % 2) * 8;
    simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    for (uint k0 = 0; k0 < K; k0 += 8) {
        as[tid] = a[(row0 + tid / 8) * K + k0 + tid % 8];
        bs[tid] = b[(k0 + tid / 16) * N + col0 + tid % 16];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        simdgroup_float8x8 fa, fb;
        simdgroup_load(fa, as, 8, ulong2(0, sr));
        simdgroup_load(fb, bs, 16, ulong2(sc, 0));
        simdgroup_multiply_accumulate(acc, fa, fb, acc);
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    simdgroup_store(acc, c, N, ulong2(col0 + sc, row0 + sr));
""")


def test_simdgroup_matrix_gemm_through_threadgroup_tiles() -> None:
    """A SIMD-group-matrix GEMM (MLX steel / mlx-vlm one-bit qmm style)."""
    rng = np.random.default_rng(35)
    a = rng.integers(-3, 4, (32, 24)).astype(np.float32)
    b = rng.integers(-3, 4, (24, 32)).astype(np.float32)
    (got,) = _run(SIMD_GEMM, [mx.array(a), mx.array(b)], [(32, 32)], [mx.float32], (2 * 128, 2, 1), (128, 1, 1),
                  template=[("K", 24), ("N", 32)])
    assert np.array_equal(got, a @ b)  # small integers: exact


CAUSAL_SCORES = metal_kernel(
    name="causal_scores", input_names=["q", "k"], output_names=["p"], header="#define AT(M, I) M.thread_elements()[I]",
    source="""
    // Scores of an 8x8 attention tile, S = Q K^T, causally masked in the fragments each
    // thread holds (its row and columns from its lane), then exponentiated (flash-attention
    // style kernels and the chunked gated-delta body do their masking this way).
    uint lane = thread_index_in_simdgroup;
    uint qd = lane / 4;
    uint fm = (qd & 4) + (lane / 2) % 4;
    uint fn = (qd & 2) * 2 + (lane % 2) * 2;
    simdgroup_float8x8 qt, kt, s;
    simdgroup_load(qt, q, 8);
    simdgroup_load(kt, k, 8, ulong2(0, 0), true);
    simdgroup_multiply(s, qt, kt);
    AT(s, 0) = fn <= fm ? metal::exp(AT(s, 0)) : 0.0f;
    AT(s, 1) = fn + 1 <= fm ? metal::exp(AT(s, 1)) : 0.0f;
    simdgroup_store(s, p, 8);
""")


def test_fragment_masking_uses_the_lane_layout() -> None:
    """A causal attention tile (flash-attention / chunked gated delta style)."""
    rng = np.random.default_rng(36)
    q = (rng.integers(-2, 3, (8, 8)) / 4).astype(np.float32)
    k = (rng.integers(-2, 3, (8, 8)) / 4).astype(np.float32)
    (got,) = _run(CAUSAL_SCORES, [mx.array(q), mx.array(k)], [(8, 8)], [mx.float32], (32, 1, 1), (32, 1, 1))
    want = np.where(np.tril(np.ones((8, 8), bool)), np.exp((q @ k.T).astype(np.float64)), 0.0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


WARP = metal_kernel(
    name="affine_warp", input_names=["image", "params"], output_names=["out"],
    header="struct Warp { float2x2 m; float2 t; uint width; uint height; };",
    source="""
    // Nearest-neighbour affine warp of a single-channel image (a vision resize/warp kernel),
    // its parameters a struct read through a pointer into a float buffer.
    const device Warp* wp = (const device Warp*)params;
    uint x = thread_position_in_grid.x;
    uint y = thread_position_in_grid.y;
    float2 src = wp->m * float2(float(x), float(y)) + wp->t;
    int sx = int(metal::round(src.x));
    int sy = int(metal::round(src.y));
    bool inside = sx >= 0 && sy >= 0 && sx < int(wp->width) && sy < int(wp->height);
    out[y * OUT_W + x] = inside ? image[sy * int(wp->width) + sx] : 0.0f;
""")


def test_struct_of_parameters_with_a_matrix_member() -> None:
    """A vision warp (mlx-vlm / ZMLX image kernels) with its parameters packed in a buffer."""
    h, w = 6, 7
    rng = np.random.default_rng(37)
    image = rng.standard_normal((h, w)).astype(np.float32)
    # float2x2 m (columns (0.5, 0.25), (-0.25, 0.5)), float2 t = (1, 0.5), width, height: 32 bytes.
    params = np.array([0.5, 0.25, -0.25, 0.5, 1.0, 0.5, 0, 0], np.float32)
    params[6:8] = np.array([w, h], np.uint32).view(np.float32)
    (got,) = _run(WARP, [mx.array(image), mx.array(params)], [(5, 8)], [mx.float32], (8, 5, 1), (8, 5, 1),
                  template=[("OUT_W", 8)])
    want = np.zeros((5, 8), np.float32)
    m = np.array([[0.5, -0.25], [0.25, 0.5]], np.float32)  # rows of the column-major matrix
    for y in range(5):
        for x in range(8):
            src = m @ np.array([x, y], np.float32) + np.array([1.0, 0.5], np.float32)
            sx, sy = (np.sign(src) * np.floor(np.abs(src) + 0.5)).astype(int)  # round(): halves away from 0
            if 0 <= sx < w and 0 <= sy < h:
                want[y, x] = image[sy, sx]
    assert np.array_equal(got, want)


DECLTYPE_SCALE = metal_kernel(
    name="scale_out", input_names=["x", "gain"], output_names=["out"],
    source="""
    // The output element type named after the output itself (mlx-primitives' norms and rope):
    // whatever dtype the caller picks, the arithmetic is done in float and stored as OutT.
    typedef decltype(out[0] + out[0]) OutT;
    uint i = thread_position_in_grid.x;
    out[i] = OutT(float(x[i]) * gain[i % 4]);
""")


@pytest.mark.parametrize("dtype", [mx.float16, mx.float32], ids=["half", "float"])
def test_decltype_names_the_output_type(dtype: mx.Dtype) -> None:
    """A normalisation's store step (mlx-primitives rmsnorm / rope style)."""
    x = mx.array(np.arange(8, dtype=np.float32) / 3).astype(dtype)
    gain = mx.array(np.array([1, 2, 0.5, -1], np.float32))
    (got,) = _run(DECLTYPE_SCALE, [x, gain], [(8,)], [dtype], (8, 1, 1), (8, 1, 1))
    want = (np.array(x.astype(mx.float32)) * np.tile([1, 2, 0.5, -1], 2)).astype(np.dtype(str(dtype).split(".")[-1]))
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


TILED_CONST = metal_kernel(
    name="const_tiles", input_names=["a", "b"], output_names=["c"],
    source="""
    // Tile sizes as const locals sizing threadgroup arrays (Metal-Flex-Attention's matmul).
    const uint TILE = 4;
    threadgroup float ta[TILE][TILE];
    threadgroup float tb[TILE][TILE];
    uint tx = thread_position_in_threadgroup.x;
    uint ty = thread_position_in_threadgroup.y;
    uint col = thread_position_in_grid.x;
    uint row = thread_position_in_grid.y;
    float acc = 0.0f;
    for (uint t = 0; t < N / TILE; ++t) {
        ta[ty][tx] = a[row * N + t * TILE + tx];
        tb[ty][tx] = b[(t * TILE + ty) * N + col];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < TILE; ++k) {
            acc += ta[ty][k] * tb[k][tx];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    c[row * N + col] = acc;
""")


def test_const_tile_sizes_size_threadgroup_arrays() -> None:
    """A tiled matmul with const tile sizes (Metal-Flex-Attention style)."""
    rng = np.random.default_rng(38)
    a = rng.integers(-3, 4, (8, 8)).astype(np.float32)
    b = rng.integers(-3, 4, (8, 8)).astype(np.float32)
    (got,) = _run(TILED_CONST, [mx.array(a), mx.array(b)], [(8, 8)], [mx.float32], (8, 8, 1), (4, 4, 1),
                  template=[("N", 8)])
    assert np.array_equal(got, a @ b)


WELFORD_NORM = metal_kernel(
    name="welford_norm", input_names=["x"], output_names=["y"],
    header="""
    struct Welford {
        float mean = 0.0f;
        float m2 = 0.0f;
        float count = 0.0f;
        void push(float v) { count += 1.0f; float d = v - mean; mean += d / count; m2 += d * (v - mean); }
        float variance() const { return m2 / count; }
    };
    """,
    source="""
    // One thread per row: a running mean and variance in a struct with member functions
    // (a layer normalisation written the way C++ authors write it).
    uint row = thread_position_in_grid.x;
    x += row * D;
    y += row * D;
    Welford w;
    for (uint j = 0; j < D; ++j) {
        w.push(x[j]);
    }
    float inv = metal::rsqrt(w.variance() + 1e-5f);
    for (uint j = 0; j < D; ++j) {
        y[j] = (x[j] - w.mean) * inv;
    }
""")


def test_layer_normalisation_with_a_welford_struct() -> None:
    """A layer normalisation (ZMLX layernorm style) using struct member functions."""
    rng = np.random.default_rng(39)
    x = rng.standard_normal((4, 24)).astype(np.float32)
    (got,) = _run(WELFORD_NORM, [mx.array(x)], [x.shape], [mx.float32], (4, 1, 1), (4, 1, 1),
                  template=[("D", 24)])
    xd = x.astype(np.float64)
    want = (xd - xd.mean(axis=1, keepdims=True)) / np.sqrt(xd.var(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_every_thread_storing_the_same_value_is_only_a_note() -> None:
    """MLX's own attribute test writes a launch constant from every thread: a benign race."""
    k = metal_kernel("attrs", ["a"], ["out"], "out[0] = threads_per_threadgroup.x;")
    with pytest.warns(RuntimeWarning, match=r"race \(note\)"):
        (got,) = _run(k, [mx.zeros((1,))], [(1,)], [mx.uint32], (2, 1, 1), (2, 1, 1))  # strict: notes never raise
    assert got.tolist() == [2]
    assert all(not f.is_error for f in k.last_run.findings) and k.last_run.findings
