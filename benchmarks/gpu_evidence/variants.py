"""Kernel variants for the hardware evidence of the cost model (issue 17).

Each variant is one MSL kernel body, written the way ``mx.fast.metal_kernel`` takes it (body only,
helpers and constants in ``header``; ``grid`` counts threads, as MLX's dispatchThreads), with the
CUDA kernel of the same name in ``kernels.cu``. Both use the same algorithm and the same
thread -> data mapping, so the 32 addresses of a SIMD-group (Apple) and of a warp (NVIDIA) are the
same: consecutive linear thread indices of a threadgroup form the 32-lane groups on both GPUs.

Every variant comes with two sizes:

* ``Size.MODEL``: small enough for the Python simulator (every thread in lock-step over NumPy) to
  run it in well under a second; ``measure.py`` profiles the CUDA kernel at exactly this launch,
  so the counter totals are directly comparable with the simulator's.
* ``Size.TIMING``: large enough to fill an H100 (data several times its 50 MB L2).

This module needs NumPy alone: ``measure.py`` imports it on the GPU machine, where the simulator
is not installed, and ``tests/benchmark_scripts/test_gpu_evidence_variants.py`` runs every MSL body in the simulator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

import numpy as np


class Family(Enum):
    """What a group of variants teaches: the naive and improved kernels of one puzzle."""

    COPY = "copy"
    TRANSPOSE = "transpose"
    REDUCTION = "reduction"
    DIVERGENCE = "divergence"
    OCCUPANCY = "occupancy"
    MATMUL = "matmul"
    SOFTMAX = "softmax"


class Size(Enum):
    MODEL = "model"
    TIMING = "timing"


class Precision(Enum):
    """How a result is compared with the float64 NumPy reference."""

    EXACT = "exact"   # a pure data movement: bit-for-bit equal
    FP32 = "fp32"     # float32 arithmetic in a different order: relative error under 1e-4
    TF32 = "tf32"     # NVIDIA tensor cores round operands to tf32 (10-bit mantissa): under 5e-3

    @property
    def tolerance(self) -> float:
        return {"exact": 0.0, "fp32": 1e-4, "tf32": 5e-3}[self.value]


SIMD_WIDTH = 32
TG_REDUCE = 256       # threads per threadgroup of the reductions and softmax
DIVERGENCE_STEPS = 256
STREAM_ELEMS = 4      # elements per thread of the streaming kernel
SOFTMAX_ROW = 1024    # row length of softmax, at both sizes


@dataclass(frozen=True)
class Launch:
    """A dispatch as MLX writes it: ``grid`` counts threads, ``threadgroup`` threads per group."""

    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int]

    def __post_init__(self) -> None:
        for g, t in zip(self.grid, self.threadgroup, strict=True):
            if t <= 0 or g % t:
                raise ValueError(f"grid {self.grid} is not a whole number of threadgroups "
                                 f"{self.threadgroup}: CUDA launches whole blocks only")

    @property
    def groups(self) -> tuple[int, int, int]:
        """Threadgroups per grid (CUDA's gridDim)."""
        return tuple(g // t for g, t in zip(self.grid, self.threadgroup, strict=True))

    @property
    def threads(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads_per_group(self) -> int:
        return self.threadgroup[0] * self.threadgroup[1] * self.threadgroup[2]


@dataclass(frozen=True)
class Case:
    """One variant at one size: everything needed to launch it on the simulator or on CUDA."""

    variant: Variant
    size: Size
    params: dict[str, int]
    inputs: list[np.ndarray]
    output_shapes: list[tuple[int, ...]]
    output_dtypes: list[str]
    launch: Launch
    #: Scalar arguments of the CUDA kernel after its buffers (all `int`), in order.
    cuda_int_args: tuple[int, ...]
    #: Dynamic shared memory of the CUDA launch, bytes.
    cuda_shared_bytes: int

    def reference(self) -> list[np.ndarray]:
        return self.variant.reference(self.inputs, self.params)


@dataclass(frozen=True)
class Variant:
    name: str                      # also the CUDA kernel's name (extern "C")
    family: Family
    summary: str
    source: str                    # MSL kernel body
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    sizes: dict[Size, dict[str, int]]
    build: Callable[[dict[str, int], np.random.Generator], tuple[list[np.ndarray], list[tuple[int, ...]]]]
    launch: Callable[[dict[str, int]], Launch]
    reference: Callable[[list[np.ndarray], dict[str, int]], list[np.ndarray]]
    precision: Precision = Precision.FP32
    header: str = ""
    cuda_kernel: str = ""
    cuda_int_params: tuple[str, ...] = ()
    cuda_shared_bytes: int = 0
    #: Uses simdgroup_matrix (the simulator may not support it yet).
    needs_simdgroup_matrix: bool = False
    #: Useful bytes moved (each input read once, each output written once) and FLOPs, for rooflines.
    min_bytes: Callable[[dict[str, int]], int] = field(default=lambda p: 0)
    flops: Callable[[dict[str, int]], int] = field(default=lambda p: 0)

    def __post_init__(self) -> None:
        if not self.cuda_kernel:
            object.__setattr__(self, "cuda_kernel", self.name)

    def case(self, size: Size, seed: int = 0) -> Case:
        """Build this variant's inputs at ``size`` from a seeded generator."""
        params = dict(self.sizes[size])
        rng = np.random.default_rng(seed)
        inputs, out_shapes = self.build(params, rng)
        return Case(variant=self, size=size, params=params, inputs=inputs, output_shapes=out_shapes,
                    output_dtypes=["float32"] * len(out_shapes), launch=self.launch(params),
                    cuda_int_args=tuple(params[p] for p in self.cuda_int_params),
                    cuda_shared_bytes=self.cuda_shared_bytes)


def _uniform(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Random float32 in [-1, 1): never zeros, which hide unwritten outputs and bad indexing."""
    return (rng.random(shape, dtype=np.float32) * 2 - 1).astype(np.float32)


def relative_error(out: np.ndarray, ref: np.ndarray) -> float:
    """||out - ref|| / ||ref|| in float64; inf when ``out`` holds a NaN or inf (e.g. poison left)."""
    o = np.asarray(out, np.float64)
    r = np.asarray(ref, np.float64)
    if o.shape != r.shape:
        raise ValueError(f"output shape {o.shape} differs from the reference's {r.shape}")
    if not np.all(np.isfinite(o)):
        return float("inf")
    norm = float(np.linalg.norm(r))
    return float(np.linalg.norm(o - r)) / (norm if norm > 0 else 1.0)


def mismatch(case: Case, outputs: list[np.ndarray]) -> str | None:
    """None when ``outputs`` match the reference within the variant's precision, else why not."""
    refs = case.reference()
    for name, out, ref in zip(case.variant.output_names, outputs, refs, strict=True):
        if case.variant.precision is Precision.EXACT:
            if not np.array_equal(np.asarray(out), ref.astype(np.float32)):
                bad = int(np.count_nonzero(np.asarray(out) != ref))
                return f"{name}: {bad} of {ref.size} elements differ (exact copy expected)"
            continue
        err = relative_error(out, ref)
        if not err <= case.variant.precision.tolerance:
            return (f"{name}: relative error {err:.3g} exceeds {case.variant.precision.tolerance:g} "
                    f"({case.variant.precision.value})")
    return None


# --------------------------------------------------------------------------------------------
# copy


def _copy_build(p, rng):
    return [_uniform(rng, p["n"])], [(p["n"],)]


def _copy_launch(p):
    return Launch((p["n"], 1, 1), (256, 1, 1))


def _copy_strided_ref(inputs, p):
    n = p["n"]
    i = np.arange(n)
    return [inputs[0][(i % 32) * (n // 32) + i // 32]]


COPY_SIZES = {Size.MODEL: {"n": 4096}, Size.TIMING: {"n": 1 << 26}}

COPY_COALESCED = Variant(
    name="copy_coalesced", family=Family.COPY,
    summary="out[i] = a[i]: a SIMD-group touches 32 consecutive floats (128 bytes)",
    source="""
    uint i = thread_position_in_grid.x;
    out[i] = a[i];
""",
    input_names=("a",), output_names=("out",), sizes=COPY_SIZES, build=_copy_build,
    launch=_copy_launch, reference=lambda inputs, p: [inputs[0].copy()], precision=Precision.EXACT,
    cuda_int_params=("n",), min_bytes=lambda p: 8 * p["n"])

COPY_STRIDED = Variant(
    name="copy_strided", family=Family.COPY,
    summary="out[i] = a[(i % 32) * (n / 32) + i / 32]: each lane of a SIMD-group reads a different row",
    source="""
    uint i = thread_position_in_grid.x;
    uint n = uint(a_shape[0]);
    out[i] = a[(i % 32) * (n / 32) + i / 32];
""",
    input_names=("a",), output_names=("out",), sizes=COPY_SIZES, build=_copy_build,
    launch=_copy_launch, reference=_copy_strided_ref, precision=Precision.EXACT,
    cuda_int_params=("n",), min_bytes=lambda p: 8 * p["n"])


# --------------------------------------------------------------------------------------------
# transpose (square n x n; threadgroup 32 x 32, one element per thread)


def _transpose_build(p, rng):
    return [_uniform(rng, p["n"], p["n"])], [(p["n"], p["n"])]


def _transpose_launch(p):
    return Launch((p["n"], p["n"], 1), (32, 32, 1))


TRANSPOSE_SIZES = {Size.MODEL: {"n": 64}, Size.TIMING: {"n": 8192}}

_TRANSPOSE_TILED = """
    threadgroup float tile[32][{width}];
    uint n = uint(a_shape[0]);
    uint tx = thread_position_in_threadgroup.x;
    uint ty = thread_position_in_threadgroup.y;
    uint bx = threadgroup_position_in_grid.x * 32;
    uint by = threadgroup_position_in_grid.y * 32;
    // Read a row of the tile: 32 consecutive floats per SIMD-group.
    tile[ty][tx] = a[(by + ty) * n + bx + tx];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // Write a row of the output from a column of the tile: the 32 lanes read tile[0..31][ty].
    out[(bx + ty) * n + by + tx] = tile[tx][ty];
"""


def _transpose_variant(name, summary, source):
    return Variant(
        name=name, family=Family.TRANSPOSE, summary=summary, source=source,
        input_names=("a",), output_names=("out",), sizes=TRANSPOSE_SIZES, build=_transpose_build,
        launch=_transpose_launch, reference=lambda inputs, p: [inputs[0].T.copy()],
        precision=Precision.EXACT, cuda_int_params=("n",), min_bytes=lambda p: 8 * p["n"] ** 2)


TRANSPOSE_NAIVE = _transpose_variant(
    "transpose_naive",
    "out[x * n + y] = a[y * n + x]: coalesced reads, each lane's write in a different row",
    """
    uint x = thread_position_in_grid.x;
    uint y = thread_position_in_grid.y;
    uint n = uint(a_shape[0]);
    out[x * n + y] = a[y * n + x];
""")
TRANSPOSE_TILED = _transpose_variant(
    "transpose_tiled",
    "32x32 threadgroup tile: coalesced both ways, but the column read hits one bank 32 times",
    _TRANSPOSE_TILED.format(width=32))
TRANSPOSE_PADDED = _transpose_variant(
    "transpose_padded",
    "the tiled transpose with rows of 33 floats: the column read spreads over all 32 banks",
    _TRANSPOSE_TILED.format(width=33))


# --------------------------------------------------------------------------------------------
# reduction: one partial sum per threadgroup of 256 threads


def _reduce_build(p, rng):
    return [_uniform(rng, p["n"])], [(p["n"] // TG_REDUCE,)]


def _reduce_launch(p):
    return Launch((p["n"], 1, 1), (TG_REDUCE, 1, 1))


def _reduce_ref(inputs, p):
    return [inputs[0].astype(np.float64).reshape(-1, TG_REDUCE).sum(axis=1)]


REDUCE_SIZES = {Size.MODEL: {"n": 4096}, Size.TIMING: {"n": 1 << 26}}

_REDUCE_LOAD = """
    threadgroup float sh[256];
    uint tid = thread_position_in_threadgroup.x;
    sh[tid] = a[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
"""
_REDUCE_STORE = """
    if (tid == 0) {
        out[threadgroup_position_in_grid.x] = sh[0];
    }
"""


def _reduce_variant(name, summary, source):
    return Variant(
        name=name, family=Family.REDUCTION, summary=summary, source=source,
        input_names=("a",), output_names=("out",), sizes=REDUCE_SIZES, build=_reduce_build,
        launch=_reduce_launch, reference=_reduce_ref, min_bytes=lambda p: 4 * p["n"] + 4 * p["n"] // 256,
        flops=lambda p: p["n"])


REDUCE_INTERLEAVED = _reduce_variant(
    "reduce_interleaved",
    "barrier tree with interleaved addressing (tid % (2*s) == 0): idle lanes in every SIMD-group",
    _REDUCE_LOAD + """
    for (uint s = 1; s < 256; s *= 2) {
        if (tid % (2 * s) == 0) {
            sh[tid] += sh[tid + s];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
""" + _REDUCE_STORE)
REDUCE_TREE = _reduce_variant(
    "reduce_tree",
    "barrier tree with sequential addressing (tid < s): whole SIMD-groups drop out",
    _REDUCE_LOAD + """
    for (uint s = 128; s > 0; s >>= 1) {
        if (tid < s) {
            sh[tid] += sh[tid + s];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
""" + _REDUCE_STORE)
REDUCE_SIMD = _reduce_variant(
    "reduce_simd",
    "simd_sum in each SIMD-group, 8 partials in threadgroup memory, one barrier, simd_sum again",
    """
    threadgroup float partial[8];
    uint lane = thread_index_in_simdgroup;
    uint sg = simdgroup_index_in_threadgroup;
    float v = simd_sum(a[thread_position_in_grid.x]);
    if (lane == 0) {
        partial[sg] = v;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        float t = lane < 8 ? partial[lane] : 0.0f;
        t = simd_sum(t);
        if (lane == 0) {
            out[threadgroup_position_in_grid.x] = t;
        }
    }
""")


# --------------------------------------------------------------------------------------------
# divergence: two different chains of DIVERGENCE_STEPS fused multiply-adds


def _divergence_build(p, rng):
    return [_uniform(rng, p["n"])], [(p["n"],)]


def _divergence_launch(p):
    return Launch((p["n"], 1, 1), (256, 1, 1))


def _chains(x: np.ndarray, take_a: np.ndarray) -> np.ndarray:
    """The two fma chains in float64, each lane taking the one its branch picks.

    Chain A is affine, so it has a closed form (the float32 chain differs by a few ulps); chain B
    (x*x - 0.5, which contracts toward (1 - sqrt 3) / 2) is iterated, on B's lanes only.
    """
    x64 = x.astype(np.float64)
    mul, add = float(np.float32(0.999)), float(np.float32(0.01))
    r = mul ** DIVERGENCE_STEPS
    out = np.empty_like(x64)
    out[take_a] = x64[take_a] * r + add * (1 - r) / (1 - mul)
    b = x64[~take_a]
    for _ in range(DIVERGENCE_STEPS):
        np.multiply(b, b, out=b)
        b -= 0.5
    out[~take_a] = b
    return out


DIVERGENCE_HEADER = f"""
#define STEPS {DIVERGENCE_STEPS}
"""
_DIVERGENCE = """
    uint i = thread_position_in_grid.x;
    float x = a[i];
    if ({condition}) {{
        for (int k = 0; k < STEPS; ++k) {{
            x = fma(x, 0.999f, 0.01f);
        }}
    }} else {{
        for (int k = 0; k < STEPS; ++k) {{
            x = fma(x, x, -0.5f);
        }}
    }}
    out[i] = x;
"""
DIVERGENCE_SIZES = {Size.MODEL: {"n": 2048}, Size.TIMING: {"n": 1 << 24}}


def _divergence_variant(name, summary, condition, take_a):
    return Variant(
        name=name, family=Family.DIVERGENCE, summary=summary,
        source=_DIVERGENCE.format(condition=condition), header=DIVERGENCE_HEADER,
        input_names=("a",), output_names=("out",), sizes=DIVERGENCE_SIZES, build=_divergence_build,
        launch=_divergence_launch,
        reference=lambda inputs, p: [_chains(inputs[0], take_a(np.arange(p["n"])))],
        cuda_int_params=(), min_bytes=lambda p: 8 * p["n"], flops=lambda p: 2 * DIVERGENCE_STEPS * p["n"])


BRANCH_DIVERGENT = _divergence_variant(
    "branch_divergent", "branch on i % 2: every SIMD-group runs both loops, half its lanes idle in each",
    "i % 2 == 0", lambda i: i % 2 == 0)
BRANCH_UNIFORM = _divergence_variant(
    "branch_uniform", "branch on (i / 32) % 2: the same work, each SIMD-group runs one loop",
    "(i / 32) % 2 == 0", lambda i: (i // 32) % 2 == 0)


# --------------------------------------------------------------------------------------------
# occupancy: one memory-bound streaming kernel, STREAM_ELEMS elements per thread


def _stream_build(p, rng):
    n = p["threads"] * STREAM_ELEMS
    return [_uniform(rng, n), _uniform(rng, n)], [(n,)]


def _stream_ref(inputs, p):
    a, b = (x.astype(np.float64) for x in inputs)
    return [a * np.float64(np.float32(2.5)) + b]


STREAM_HEADER = f"""
#define ELEMS {STREAM_ELEMS}
#define SCALE 2.5f
"""
_STREAM = """
    uint gid = thread_position_in_grid.x;
    uint total = threads_per_grid.x;
    for (uint k = 0; k < ELEMS; ++k) {
        uint i = gid + k * total;
        out[i] = a[i] * SCALE + b[i];
    }
"""
# The same streaming loop, with the first element of each thread passed through threadgroup memory
# (the thread's own slot, so no barrier is needed): the allocation is used and stays.
_STREAM_TGMEM = """
    threadgroup float scratch[{floats}];
    uint gid = thread_position_in_grid.x;
    uint total = threads_per_grid.x;
    uint lid = thread_position_in_threadgroup.x;
    scratch[lid] = a[gid] * SCALE + b[gid];
    out[gid] = scratch[lid];
    for (uint k = 1; k < ELEMS; ++k) {{
        uint i = gid + k * total;
        out[i] = a[i] * SCALE + b[i];
    }}
"""
STREAM_SIZES = {Size.MODEL: {"threads": 1024}, Size.TIMING: {"threads": 1 << 24}}


def _stream_variant(name, summary, source, tg, cuda_kernel, shared_bytes=0):
    return Variant(
        name=name, family=Family.OCCUPANCY, summary=summary, source=source, header=STREAM_HEADER,
        input_names=("a", "b"), output_names=("out",), sizes=STREAM_SIZES, build=_stream_build,
        launch=lambda p: Launch((p["threads"], 1, 1), (tg, 1, 1)), reference=_stream_ref,
        cuda_kernel=cuda_kernel, cuda_shared_bytes=shared_bytes,
        min_bytes=lambda p: 12 * STREAM_ELEMS * p["threads"], flops=lambda p: 2 * STREAM_ELEMS * p["threads"])


STREAM_TG32 = _stream_variant(
    "stream_tg32", "out = a * 2.5 + b, 4 elements per thread, threadgroups of 32 threads",
    _STREAM, 32, "stream")
STREAM_TG256 = _stream_variant(
    "stream_tg256", "the same kernel with threadgroups of 256 threads",
    _STREAM, 256, "stream")
STREAM_TGMEM32K = _stream_variant(
    "stream_tgmem32k", "the same kernel (256 threads) holding 32 KiB of threadgroup memory",
    _STREAM_TGMEM.format(floats=8192), 256, "stream_tgmem", shared_bytes=32768)
STREAM_TGMEM1K = _stream_variant(
    "stream_tgmem1k", "the same kernel (256 threads) holding 1 KiB of threadgroup memory",
    _STREAM_TGMEM.format(floats=256), 256, "stream_tgmem", shared_bytes=1024)


# --------------------------------------------------------------------------------------------
# matmul: c = a @ b, square n x n, float32


def _matmul_build(p, rng):
    n = p["n"]
    return [_uniform(rng, n, n), _uniform(rng, n, n)], [(n, n)]


def _matmul_ref(inputs, p):
    return [inputs[0].astype(np.float64) @ inputs[1].astype(np.float64)]


MATMUL_SIZES = {Size.MODEL: {"n": 64}, Size.TIMING: {"n": 2048}}


def _matmul_variant(name, summary, source, launch, **kw):
    return Variant(
        name=name, family=Family.MATMUL, summary=summary, source=source,
        input_names=("a", "b"), output_names=("c",), sizes=MATMUL_SIZES, build=_matmul_build,
        launch=launch, reference=_matmul_ref, cuda_int_params=("n",),
        min_bytes=lambda p: 12 * p["n"] ** 2, flops=lambda p: 2 * p["n"] ** 3, **kw)


MATMUL_NAIVE = _matmul_variant(
    "matmul_naive", "one thread per output, a loop over k reading a's row and b's column from device memory",
    """
    uint col = thread_position_in_grid.x;
    uint row = thread_position_in_grid.y;
    uint n = uint(a_shape[0]);
    float acc = 0.0f;
    for (uint k = 0; k < n; ++k) {
        acc += a[row * n + k] * b[k * n + col];
    }
    c[row * n + col] = acc;
""", lambda p: Launch((p["n"], p["n"], 1), (16, 16, 1)))

MATMUL_TILED = _matmul_variant(
    "matmul_tiled", "16x16 tiles of a and b staged in threadgroup memory, two barriers per tile",
    """
    threadgroup float as[16][16];
    threadgroup float bs[16][16];
    uint tx = thread_position_in_threadgroup.x;
    uint ty = thread_position_in_threadgroup.y;
    uint col = thread_position_in_grid.x;
    uint row = thread_position_in_grid.y;
    uint n = uint(a_shape[0]);
    float acc = 0.0f;
    for (uint t = 0; t < n; t += 16) {
        as[ty][tx] = a[row * n + t + tx];
        bs[ty][tx] = b[(t + ty) * n + col];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < 16; ++k) {
            acc += as[ty][k] * bs[k][tx];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    c[row * n + col] = acc;
""", lambda p: Launch((p["n"], p["n"], 1), (16, 16, 1)))

# Each SIMD-group computes a 16x16 tile of c as 2x2 simdgroup_float8x8 accumulators, loading its
# 8x8 operands straight from device memory; 4 SIMD-groups per threadgroup along a tile row. The
# CUDA twin has each warp compute the same 16x16 tile with one WMMA tf32 m16n16k8 accumulator.
MATMUL_SIMDGROUP = _matmul_variant(
    "matmul_simdgroup",
    "each SIMD-group computes a 16x16 tile of c with 2x2 simdgroup_float8x8 multiply-accumulates",
    """
    uint n = uint(a_shape[0]);
    uint row0 = thread_position_in_grid.y * 16;
    uint col0 = (thread_position_in_grid.x / 32) * 16;
    simdgroup_float8x8 c00 = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_float8x8 c01 = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_float8x8 c10 = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_float8x8 c11 = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    for (uint k = 0; k < n; k += 8) {
        simdgroup_float8x8 a0;
        simdgroup_float8x8 a1;
        simdgroup_float8x8 b0;
        simdgroup_float8x8 b1;
        simdgroup_load(a0, a + row0 * n + k, n);
        simdgroup_load(a1, a + (row0 + 8) * n + k, n);
        simdgroup_load(b0, b + k * n + col0, n);
        simdgroup_load(b1, b + k * n + col0 + 8, n);
        simdgroup_multiply_accumulate(c00, a0, b0, c00);
        simdgroup_multiply_accumulate(c01, a0, b1, c01);
        simdgroup_multiply_accumulate(c10, a1, b0, c10);
        simdgroup_multiply_accumulate(c11, a1, b1, c11);
    }
    simdgroup_store(c00, c + row0 * n + col0, n);
    simdgroup_store(c01, c + row0 * n + col0 + 8, n);
    simdgroup_store(c10, c + (row0 + 8) * n + col0, n);
    simdgroup_store(c11, c + (row0 + 8) * n + col0 + 8, n);
""", lambda p: Launch((32 * p["n"] // 16, p["n"] // 16, 1), (128, 1, 1)),
    needs_simdgroup_matrix=True, precision=Precision.TF32)
# TF32: the tolerance fits the CUDA twin (tf32 tensor cores); Apple's simdgroup matrices compute
# in float32, so the simulator's result is far inside it.


# --------------------------------------------------------------------------------------------
# softmax over rows of SOFTMAX_ROW floats, one threadgroup of 256 threads per row


def _softmax_build(p, rng):
    return [_uniform(rng, p["rows"], SOFTMAX_ROW) * 4], [(p["rows"], SOFTMAX_ROW)]


def _softmax_ref(inputs, p):
    x = inputs[0].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return [e / e.sum(axis=1, keepdims=True)]


SOFTMAX_HEADER = f"""
#define ROW {SOFTMAX_ROW}
#define PER_THREAD (ROW / 256)
"""
SOFTMAX_SIZES = {Size.MODEL: {"rows": 4}, Size.TIMING: {"rows": 32768}}


def _tree(op: str) -> str:
    """Reduce red[0..255] into red[0] with a barrier tree (sequential addressing)."""
    return f"""
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = 128; s > 0; s >>= 1) {{
        if (lid < s) {{
            red[lid] = {op};
        }}
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }}"""


_SOFTMAX_START = """
    threadgroup float red[256];
    uint lid = thread_position_in_threadgroup.x;
    uint row = threadgroup_position_in_grid.y;
    const device float* xr = x + row * ROW;
    device float* yr = out + row * ROW;
"""
# After a tree, every thread reads red[0]; the barrier keeps red[0] from being overwritten by the
# next tree's first store before every thread has read it.
_SOFTMAX_THREE_PASS = _SOFTMAX_START + """
    float m = -INFINITY;
    for (uint k = 0; k < PER_THREAD; ++k) {
        m = max(m, xr[lid + k * 256]);
    }
    red[lid] = m;""" + _tree("max(red[lid], red[lid + s])") + """
    m = red[0];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float sum = 0.0f;
    for (uint k = 0; k < PER_THREAD; ++k) {
        sum += exp(xr[lid + k * 256] - m);
    }
    red[lid] = sum;""" + _tree("red[lid] + red[lid + s]") + """
    sum = red[0];
    for (uint k = 0; k < PER_THREAD; ++k) {
        yr[lid + k * 256] = exp(xr[lid + k * 256] - m) / sum;
    }
"""
_SOFTMAX_FUSED = _SOFTMAX_START + """
    float v[PER_THREAD];
    float m = -INFINITY;
    for (uint k = 0; k < PER_THREAD; ++k) {
        v[k] = xr[lid + k * 256];
        m = max(m, v[k]);
    }
    red[lid] = m;""" + _tree("max(red[lid], red[lid + s])") + """
    m = red[0];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float sum = 0.0f;
    for (uint k = 0; k < PER_THREAD; ++k) {
        v[k] = exp(v[k] - m);
        sum += v[k];
    }
    red[lid] = sum;""" + _tree("red[lid] + red[lid + s]") + """
    sum = red[0];
    for (uint k = 0; k < PER_THREAD; ++k) {
        yr[lid + k * 256] = v[k] / sum;
    }
"""


def _softmax_variant(name, summary, source):
    return Variant(
        name=name, family=Family.SOFTMAX, summary=summary, source=source, header=SOFTMAX_HEADER,
        input_names=("x",), output_names=("out",), sizes=SOFTMAX_SIZES, build=_softmax_build,
        launch=lambda p: Launch((256, p["rows"], 1), (256, 1, 1)), reference=_softmax_ref,
        min_bytes=lambda p: 8 * SOFTMAX_ROW * p["rows"], flops=lambda p: 5 * SOFTMAX_ROW * p["rows"])


SOFTMAX_3PASS = _softmax_variant(
    "softmax_3pass", "max, sum of exp and the output each read the row from device memory (3 reads, 1 write)",
    _SOFTMAX_THREE_PASS)
SOFTMAX_FUSED = _softmax_variant(
    "softmax_fused", "the row read once into registers, max and sum by barrier trees (1 read, 1 write)",
    _SOFTMAX_FUSED)


VARIANTS: tuple[Variant, ...] = (
    COPY_COALESCED, COPY_STRIDED,
    TRANSPOSE_NAIVE, TRANSPOSE_TILED, TRANSPOSE_PADDED,
    REDUCE_INTERLEAVED, REDUCE_TREE, REDUCE_SIMD,
    BRANCH_DIVERGENT, BRANCH_UNIFORM,
    STREAM_TG32, STREAM_TG256, STREAM_TGMEM32K, STREAM_TGMEM1K,
    MATMUL_NAIVE, MATMUL_TILED, MATMUL_SIMDGROUP,
    SOFTMAX_3PASS, SOFTMAX_FUSED,
)

#: The comparisons the evidence is about: (slower variant as a naive learner writes it, improved).
PAIRS: tuple[tuple[str, str], ...] = (
    ("copy_strided", "copy_coalesced"),
    ("transpose_naive", "transpose_tiled"),
    ("transpose_tiled", "transpose_padded"),
    ("reduce_interleaved", "reduce_tree"),
    ("reduce_tree", "reduce_simd"),
    ("branch_divergent", "branch_uniform"),
    ("stream_tg32", "stream_tg256"),
    ("stream_tgmem32k", "stream_tgmem1k"),
    ("matmul_naive", "matmul_tiled"),
    ("matmul_tiled", "matmul_simdgroup"),
    ("softmax_3pass", "softmax_fused"),
)


def by_name(name: str) -> Variant:
    for v in VARIANTS:
        if v.name == name:
            return v
    raise KeyError(f"no variant named {name!r}; known: {', '.join(v.name for v in VARIANTS)}")
