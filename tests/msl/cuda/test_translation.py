"""The CUDA translator (metal_puzzles.msl.cuda): every reference solution of the book and every
recorded wild kernel translates and compiles with NVRTC for compute_75 (no GPU needed), the
generated code carries Metal's semantics where that is the point (the partial-threadgroup
guard, barriers met by every thread, C's arithmetic), and what has no CUDA form is a located
error. Runs on the GPU are benchmarks/cuda_book_run.py's."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import warnings

import mlx.core as mx
import numpy as np
import pytest

from metal_puzzles import CompileError, metal_kernel
from metal_puzzles.host.cuda_backend import CudaBackendKernel
from metal_puzzles.host.nvrtc import NvrtcError, compile_to_cubin, compile_to_ptx, nvrtc_available
from metal_puzzles.msl.cuda import launch_dims, missing_rules
from metal_puzzles.msl.cuda.builtins import missing_builtin_rules
from metal_puzzles.msl.cuda.render import missing_operator_rules
from metal_puzzles.msl.lang.errors import CompileWarning
from msl.cuda.corpus import (
    batch_unit,
    book_translations,
    load_corpus,
    shader_translations,
    translate_entry,
)

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC is not installed (the 'test' extra installs it)")

BOOK = list(book_translations())
WILD = load_corpus("wild_corpus.json")
SEMANTICS = load_corpus("semantics_corpus.json.gz")


def _ptx(unit: str) -> str:
    try:
        return compile_to_ptx(unit)
    except NvrtcError as err:
        errors = "\n".join(line for line in err.log.splitlines() if "error" in line)
        raise AssertionError(f"NVRTC refused the translation:\n{errors}") from None


# ----------------------------------------------------------------------------- completeness
def test_every_syntax_tree_node_and_builtin_has_a_rule():
    assert missing_rules() == []
    assert missing_builtin_rules() == []
    assert missing_operator_rules() == []


def test_operator_rules_are_keyed_by_the_front_ends_enums(monkeypatch):
    from metal_puzzles.msl.cuda import render
    from metal_puzzles.msl.front.ast import AssignOp, BinaryOp, UnaryOp

    assert set(render.BINARY_RULES) == set(BinaryOp) and all(isinstance(k, BinaryOp) for k in render.BINARY_RULES)
    assert set(render.UNARY_RULES) == set(UnaryOp)
    assert set(render.COMPOUND_HELPERS) == set(AssignOp) - {AssignOp.ASSIGN}
    monkeypatch.delitem(render.BINARY_RULES, BinaryOp.MOD)
    monkeypatch.delitem(render.COMPOUND_HELPERS, AssignOp.SHL)
    assert render.missing_operator_rules() == ["binary '%'", "assignment '<<='"]


def test_an_operator_the_front_end_gains_without_a_cuda_rule_fails_the_renderers_import():
    # The front end's enum grows an operator ('**'); the renderer, imported after, refuses to load.
    code = textwrap.dedent("""
        import metal_puzzles.msl.front.ast as ast
        from metal_puzzles.compat import StrEnum
        ast.BinaryOp = StrEnum("BinaryOp", {**{m.name: m.value for m in ast.BinaryOp}, "POW": "**"})
        try:
            import metal_puzzles.msl.cuda.render
        except ImportError as err:
            print("ImportError:", err)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert "ImportError: the CUDA renderer has no rule for the operator(s) binary '**'" in done.stdout, done.stderr


# ----------------------------------------------------------------------------- the book
# Every reference kernel translates (simdgroup_matmul's matrices emulated in the simulator's lane layout).
REFUSED: set[str] = set()


@needs_nvrtc
@pytest.mark.parametrize(("label", "translation"), BOOK, ids=[label for label, _ in BOOK])
def test_every_reference_solution_translates_and_compiles(label, translation):
    if label.split(":")[0] in REFUSED:
        assert isinstance(translation, CompileError)
        assert "is not supported on CUDA" in str(translation) and "source:" in str(translation)
        return
    assert not isinstance(translation, Exception), f"{label}: {translation}"
    ptx = _ptx(translation.unit)
    assert f".entry {translation.entry}" in ptx


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_75", "sm_90"], ids=["T4 (Turing)", "H200 (Hopper)"])
def test_the_book_and_the_wild_kernels_assemble_to_machine_code(arch):
    # PTX is not the end: ptxas (which NVRTC runs for a cubin) may still refuse it. It did, on
    # sm_90, for block_sum and simd_row_sum: 32 unrolled shuffles, then the drain's barrier loop,
    # exhausted the seven predicate registers ("Register allocation failed").
    units = [tr for label, tr in BOOK if not isinstance(tr, Exception)]
    units += [translate_entry(e) for e in WILD_KERNELS if e["name"] not in EXPECTED_REFUSALS]
    try:
        cubin = compile_to_cubin(batch_unit(units), arch)
    except NvrtcError as err:
        raise AssertionError("\n".join(line for line in err.log.splitlines() if "rror" in line or "fatal" in line)) from None
    assert cubin[:4] == b"\x7fELF"


# ----------------------------------------------------------------------------- the wild corpora
WILD_KERNELS = WILD["kernels"]
#: The wild kernels the translator refuses, by name, and the words their located error carries:
#: a kernel added here is a decision, written down; any other refusal fails the test.
EXPECTED_REFUSALS: dict[str, str] = {}


def _wild_id(entry: dict) -> str:
    dtypes = "-".join(i["dtype"] for i in entry["inputs"])
    return f"{entry['name']}[{dtypes}>{'-'.join(entry['output_dtypes'])}]"


@needs_nvrtc
@pytest.mark.parametrize("entry", WILD_KERNELS, ids=[_wild_id(e) for e in WILD_KERNELS])
def test_every_recorded_wild_kernel_translates_and_compiles(entry):
    if entry["whole_shader"] and "kernel void" in entry["source"]:
        pytest.skip("a whole shader: translated with the shaders below")
    try:
        tr = translate_entry(entry)
    except CompileError as err:
        # A refusal names the construct, says where it is, and is one the translator declares.
        assert entry["name"] in EXPECTED_REFUSALS, str(err)
        assert "is not supported on CUDA" in str(err) and EXPECTED_REFUSALS[entry["name"]] in str(err), str(err)
        assert re.search(r"(source|header):\d+:\d+", str(err)), str(err)
        return
    assert entry["name"] not in EXPECTED_REFUSALS, "translated now: take it off EXPECTED_REFUSALS"
    _ptx(tr.unit)


@needs_nvrtc
@pytest.mark.parametrize("k", range(len(WILD["shaders"])))
def test_every_recorded_whole_shader_translates_and_compiles(k):
    for host_name, tr in shader_translations(WILD["shaders"][k]):
        assert not isinstance(tr, CompileError), f"{host_name}: {tr}"
        ptx = _ptx(tr.unit)
        assert f".entry {tr.entry}" in ptx, host_name


# ----------------------------------------------------------------------------- the semantics suite
# Every kernel tests/msl/semantics compiles (tools/record_cuda_corpus.py --modules tests/msl/semantics),
# translated and compiled in batches (one NVRTC program each: a fortieth of the time apiece).
#: What the translator refuses there, by the words of its located error: each a decision.
SEMANTIC_REFUSALS: tuple[str, ...] = ()
SEMANTIC_ITEMS = [("kernel", e) for e in SEMANTICS["kernels"]] + [("shader", e) for e in SEMANTICS["shaders"]]
CHUNK = 40


def _translate_chunk(items, translations: list, refused: list) -> None:
    for kind, entry in items:
        if kind == "kernel":
            try:
                translations.append(translate_entry(entry))
            except CompileError as err:
                refused.append(str(err))
            continue
        for _, tr in shader_translations(entry):
            if isinstance(tr, CompileError):
                refused.append(str(tr))
            else:
                translations.append(tr)


@needs_nvrtc
@pytest.mark.parametrize("start", range(0, len(SEMANTIC_ITEMS), CHUNK))
def test_the_semantics_suites_kernels_translate_and_compile(start):
    translations: list = []
    refused: list[str] = []
    with warnings.catch_warnings():  # what the semantics suite compiles with clang's warnings (asserted there)
        warnings.simplefilter("ignore", CompileWarning)
        _translate_chunk(SEMANTIC_ITEMS[start:start + CHUNK], translations, refused)
    for message in refused:
        assert any(words in message for words in SEMANTIC_REFUSALS), message
        assert re.search(r"(source|header|shader\.metal|<[a-z]+>):\d+:\d+", message), message
    try:  # down to Hopper's machine code: ptxas's refusals show too
        compile_to_cubin(batch_unit(translations), "sm_90")
    except NvrtcError as err:  # name the units NVRTC refuses
        for tr in translations:
            _ptx(tr.unit)
        raise AssertionError("\n".join(line for line in err.log.splitlines() if "rror" in line or "fatal" in line)) from None


# ----------------------------------------------------------------------------- semantics in the code
PARTIAL = """
threadgroup float tile[64];
uint i = thread_position_in_grid.x;
uint li = thread_position_in_threadgroup.x;
tile[li] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
if (li == 0) {
    float s = 0;
    for (uint k = 0; k < threads_per_threadgroup.x; k++) s += tile[k];
    out[threadgroup_position_in_grid.x] = s;
}
"""


def _partial():
    k = metal_kernel("partial", ["a"], ["out"], PARTIAL)
    return k.to_cuda(inputs=[mx.zeros((100,))], output_shapes=[(2,)], output_dtypes=[mx.float32])


def test_threads_past_the_grid_skip_the_body_but_meet_every_barrier():
    tr = _partial()
    body = tr.unit[tr.unit.index(f"void {tr.entry}("):]
    # The body runs only for threads inside the Metal grid ...
    assert "const bool mp_in_grid = mp_index < mp_tx * mp_ty * mp_tz;" in body
    assert body.index("if (mp_in_grid)") < body.index("__shared__ float tile[64];")
    # ... no thread returns before a barrier: after the body, every thread waits in the drain,
    # whose rounds meet the barriers of the threads still running.
    assert "return" not in body
    assert body.index("mp_threadgroup_barrier();") < body.index("mp_drain();")
    assert tr.uses_barriers
    assert "while (mp_barrier_or(false))" in tr.header
    # Threads reach the barrier from two places (the body, the drain): the non-aligned barrier.red,
    # never the aligned bar.sync/bar.red that __syncthreads and __syncthreads_or compile to.
    ptx = _ptx(tr.unit)
    assert "barrier.red.or.pred" in ptx and "bar.sync" not in ptx and "bar.red" not in ptx


def test_the_last_threadgroup_reports_metals_partial_size():
    tr = _partial()
    # grid 100 in threadgroups of 64: MLX launches 2 blocks of 64; Metal's last group has 36.
    assert launch_dims((100, 1, 1), (64, 1, 1)) == ((2, 1, 1), (64, 1, 1))
    assert "const unsigned mp_tx = min(blockDim.x, mp_gx - min(mp_gx, blockIdx.x * blockDim.x));" in tr.unit
    assert "threads_per_threadgroup = {{(unsigned int)(mp_tx)" in tr.unit
    gx = 100
    for block in (0, 1):
        assert min(64, gx - min(gx, block * 64)) == (64, 36)[block]


def test_a_kernel_without_barriers_does_not_drain():
    k = metal_kernel("map", ["a"], ["out"], "uint i = thread_position_in_grid.x; out[i] = a[i] + 10;")
    tr = k.to_cuda(inputs=[mx.zeros((4,))], output_shapes=[(4,)], output_dtypes=[mx.float32])
    assert not tr.uses_barriers and "mp_drain();" not in tr.unit.split(f"void {tr.entry}(")[1]


def test_return_in_the_body_jumps_to_the_guard_not_out_of_the_kernel():
    k = metal_kernel("early", ["a"], ["out"], """
uint i = thread_position_in_grid.x;
if (i >= a_shape[0]) return;
threadgroup float t[32];
t[i % 32] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
out[i] = t[(i + 1) % 32];
""")
    tr = k.to_cuda(inputs=[mx.zeros((40,))], output_shapes=[(40,)], output_dtypes=[mx.float32])
    kernel = tr.unit.split(f"void {tr.entry}(")[1]
    assert "goto mp_done;" in kernel and "return" not in kernel
    assert kernel.index("mp_done:;") < kernel.index("mp_drain();")


def test_c_arithmetic_goes_through_the_helpers_that_keep_metals_results():
    src = """
int i = int(thread_position_in_grid.x);
int big = a[0] * 65536;
out[i] = (big * 65536) + (i / a[1]) + (i % a[1]) + (i << a[2]) + int(b[0]);
"""
    k = metal_kernel("arith", ["a", "b"], ["out"], src)
    tr = k.to_cuda(inputs=[mx.zeros((4,), dtype=mx.int32), mx.zeros((1,))], output_shapes=[(4,)],
                   output_dtypes=[mx.int32])
    assert "mp_mul<int>(" in tr.unit  # signed overflow wraps (C leaves it undefined; NVCC would exploit it)
    assert "mp_div<int>(" in tr.unit and "mp_mod<int>(" in tr.unit  # x / 0 gives 0, as the simulator
    assert "mp_shl(" in tr.unit  # shift counts masked to the operand's width
    assert "mp_cvt<int, float>(" in tr.unit  # float to int as the simulator converts it
    _ptx(tr.unit)


NEGATED_SHORT = """
uint i = thread_position_in_grid.x;
short v3 = ~in0[i];
v3++;
short n = -in0[i];
out[i * 3] = v3;
out[i * 3 + 1] = n;
out[i * 3 + 2] = long(n) < 0;
"""


@needs_nvrtc
def test_a_negated_short_is_widened_by_arithmetic_ptxas_of_cuda_13_0_compiles_right():
    """Oracle seed 740: 'short v3 = ~x; v3++;' with x = -32768 is -32768 in C++ (g++ agrees) and in the
    simulator; NVVM folds it into 'neg.s16', and the sign extension after it ('cvt.s64.s16') is what
    ptxas of CUDA 13.0 (NVRTC 13.0's, the H200's driver's) drops: the H200 stored +32768 (its machine
    code negates the 32-bit register and never sign-extends again; 13.5's ptxas does). The prelude
    widens a short through an opaque copy of its zero-extended bits, so no 16-bit negation reaches a
    16-bit sign extension in the PTX, whichever NVVM folds what."""
    k = metal_kernel("negated_short", ["in0"], ["out"], NEGATED_SHORT)
    x = np.array([-32768, -1, 0, 5, 32767, -32767, 12, 7], dtype=np.int16)
    got = np.array(k(inputs=[mx.array(x)], output_shapes=[(24,)], output_dtypes=[mx.int64], grid=(8, 1, 1),
                     threadgroup=(8, 1, 1))[0]).reshape(8, 3)
    wrapped = (-x.astype(np.int32)).astype(np.int16)  # C: the int result converted back to short
    assert got[0].tolist() == [-32768, -32768, 1]
    np.testing.assert_array_equal(got[:, 0], wrapped)
    np.testing.assert_array_equal(got[:, 1], wrapped)
    tr = k.to_cuda(inputs=[mx.array(x)], output_shapes=[(24,)], output_dtypes=[mx.int64])
    ptx = compile_to_ptx(tr.unit, arch="compute_90", options=["--fmad=false", "--ftz=false"])
    negated = set(re.findall(r"neg\.s16\s+(%rs\d+)", ptx))
    extended = set(re.findall(r"cvt\.s(?:32|64)\.s16\s+%r\w*\d+,\s*(%rs\d+)", ptx))
    assert not negated & extended, "a 16-bit negation is sign-extended directly: ptxas 13.0 drops the extension"


def test_simd_scans_shuffle_on_every_lane_before_keeping_their_prefix():
    from metal_puzzles.msl.cuda.prelude import CUDA_PRELUDE

    reduce = CUDA_PRELUDE[CUDA_PRELUDE.index("mp_simd_reduce_scalar(const T& v) {"):]
    reduce = reduce[:reduce.index("\n}\n")]
    # A lane that left the loop early would leave the others' __shfl_sync waiting for it.
    assert "break" not in reduce and "mp_shfl(mask, v, base + k)" in reduce
    assert "SCAN == 1 ? k <= me : k < me" in reduce
    # Float sums keep the simulator's lane order; integers, exact in any order, take the butterfly.
    assert "if constexpr (SCAN == 0 && W == 32 && !mp_detail::is_float<T>::value)" in reduce


def test_half_simd_sum_and_atomics_compile():
    src = """
uint i = thread_position_in_grid.x;
half v = a[i];
half s = simd_sum(v);
float p = simd_prefix_exclusive_sum(float(v));
if (simd_is_first()) atomic_fetch_add_explicit(&out[0], float(s) + p, memory_order_relaxed);
uint m = simd_shuffle_xor(i, 1u);
atomic_fetch_max_explicit((device atomic_uint*)&cnt[0], m, memory_order_relaxed);
"""
    k = metal_kernel("simd", ["a"], ["out", "cnt"], src, atomic_outputs=True)
    tr = k.to_cuda(inputs=[mx.zeros((64,), dtype=mx.float16)], output_shapes=[(1,), (1,)],
                   output_dtypes=[mx.float32, mx.uint32])
    assert "mp_simd_reduce<0, 0, 32>(" in tr.unit and "mp_simd_reduce<0, 2, 32>(" in tr.unit
    assert "mp_atomic_add(" in tr.unit and "mp_atomic_max(" in tr.unit
    assert tr.uses_simd
    _ptx(tr.unit)


def test_vectors_swizzles_and_constructors_compile():
    src = """
uint i = thread_position_in_grid.x;
float4 v = float4(a[i], float2(1.0f, 2.0f), 3.0f);
v.xy = v.zw * 2.0f;
v.wz += 1.0f;
float3 w = v.zyx + float3(1);
bool4 c = v > float4(0.5f);
out[i] = select(w.x, w.z, all(c)) + dot(v, v) + fma(w.y, 2.0f, 1.0f) + as_type<float>(as_type<uint>(v.w));
"""
    k = metal_kernel("vec", ["a"], ["out"], src)
    tr = k.to_cuda(inputs=[mx.zeros((8,))], output_shapes=[(8,)], output_dtypes=[mx.float32])
    assert "mp_swz_set<0, 1>(" in tr.unit and "mp_swz<2, 1, 0>(" in tr.unit
    assert "mp_swz_set<3, 2>(v, (mp_swz<3, 2>(v) + mp_splat<float, 2>(" in tr.unit
    _ptx(tr.unit)


def test_what_has_no_cuda_form_is_a_located_error():
    src = """uint i = thread_position_in_grid.x;
float2 v[2] = {float2(a[i]), float2(1.0f)};
v[i % 2].yx *= 2.0f;
out[i] = v[0].x;
"""
    k = metal_kernel("swz", ["a"], ["out"], src)
    with pytest.raises(CompileError, match=r"source:3:\d+.*: error: '\*=' on a swizzle of several components of "
                                           r"this expression is not supported on CUDA: write it as"):
        k.to_cuda(inputs=[mx.zeros((8,))], output_shapes=[(8,)], output_dtypes=[mx.float32])


def test_simdgroup_matrices_are_emulated_in_the_simulators_lane_layout():
    src = """
simdgroup_float8x8 a, b;
simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
simdgroup_load(a, x, 8);
simdgroup_load(b, x, 8, ulong2(0, 0), true);
simdgroup_multiply_accumulate(acc, a, b, acc);
acc.thread_elements()[0] += 1.0f;
simdgroup_store(acc, out, 8);
"""
    k = metal_kernel("sg", ["x"], ["out"], src)
    tr = k.to_cuda(inputs=[mx.zeros((64,))], output_shapes=[(64,)], output_dtypes=[mx.float32])
    assert "mp_sg_mma(acc, a, b, &(acc))" in tr.unit and "acc.e.c[0]" in tr.unit
    # The layout the simulator documents (MLX steel's BaseMMAFrag): lane 9 holds row 2, columns 2 and 3.
    assert "return ((l / 4) & 4) + (l / 2) % 4;" in tr.header and "return ((l / 4) & 2) * 2 + (l % 2) * 2;" in tr.header
    from metal_puzzles.msl.library.simdgroup_matrix import FRAGMENT_COL, FRAGMENT_ROW
    # ... the prelude's formulas (in C: '/' on ints truncates as '//' does on these) give the simulator's layout.
    lanes = range(32)
    assert [((lane // 4) & 4) + (lane // 2) % 4 for lane in lanes] == list(FRAGMENT_ROW)
    assert [((lane // 4) & 2) * 2 + (lane % 2) * 2 for lane in lanes] == list(FRAGMENT_COL)
    _ptx(tr.unit)


def test_simd_functions_on_a_partial_two_dimensional_threadgroup_are_launched():
    """Refused until each CUDA thread played the Metal thread of its own number (see
    test_each_cuda_thread_plays_the_metal_thread_of_its_own_number): a SIMD-group is a warp there too."""
    k = metal_kernel("s2", ["a"], ["out"], "uint2 p = thread_position_in_grid.xy; out[p.y * 10 + p.x] = simd_sum(a[0]);")
    tr = k.to_cuda(inputs=[mx.zeros((4,))], output_shapes=[(100,)], output_dtypes=[mx.float32])
    tr.check_launch((16, 16, 1), (8, 8, 1))
    tr.check_launch((10, 10, 1), (8, 8, 1))
    assert "const unsigned mp_px = blockIdx.x * blockDim.x + mp_lx;" in tr.unit


# ----------------------------------------------------------------------------- backend="cuda"
class RecordingCudaKernel:
    """A stand-in for mx.fast.cuda_kernel: records what would reach MLX."""

    def __init__(self) -> None:
        self.made: list[dict] = []
        self.calls: list[dict] = []

    def __call__(self, **kwargs):
        self.made.append(kwargs)

        def kernel(**call):
            self.calls.append(call)
            return [mx.zeros(s, dtype=d) for s, d in zip(call["output_shapes"], call["output_dtypes"], strict=True)]
        return kernel


def test_the_cuda_backend_hands_mlx_the_translation_and_metals_grid():
    k = metal_kernel("partial", ["a"], ["out"], PARTIAL)
    stand_in = RecordingCudaKernel()
    runner = CudaBackendKernel(k.name, k.input_names, k.output_names, k.to_cuda, factory=stand_in)
    a = mx.array(np.arange(100, dtype=np.float32))
    runner(inputs=[a], output_shapes=[(2,)], output_dtypes=[mx.float32], grid=(100, 1, 1), threadgroup=(64, 1, 1))
    runner(inputs=[a], output_shapes=[(2,)], output_dtypes=[mx.float32], grid=(100, 1, 1), threadgroup=(64, 1, 1))
    assert len(stand_in.made) == 1  # one MLX kernel per translation
    made = stand_in.made[0]
    assert made["input_names"] == ["a"] and made["output_names"] == ["out"]
    assert made["source"] == runner.last_translation.body and made["header"] == runner.last_translation.header
    call = stand_in.calls[0]
    assert call["grid"] == (100, 1, 1) and call["threadgroup"] == (64, 1, 1)
    assert call["template"] == [("mp_grid_x", 100), ("mp_grid_y", 1), ("mp_grid_z", 1)]


def test_the_cuda_backend_refuses_where_mlx_has_no_cuda():
    if mx.cuda.is_available():
        pytest.skip("this machine has CUDA")
    k = metal_kernel("m", ["a"], ["out"], "out[0] = a[0];")
    with pytest.raises(RuntimeError, match="mx.cuda.is_available"):
        k(inputs=[mx.zeros((1,))], output_shapes=[(1,)], output_dtypes=[mx.float32], grid=(1, 1, 1),
          threadgroup=(1, 1, 1), backend="cuda")


def test_the_backends_command_names_every_back_end():
    import contextlib
    import io

    from metal_puzzles.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["backends"]) == 0
    lines = out.getvalue().splitlines()
    assert [line.split()[0] for line in lines] == ["simulator", "metal", "cuda", "nvrtc"]
    assert lines[0].split()[1] == "yes"
    assert lines[2].split()[1] == ("yes" if mx.cuda.is_available() else "no")
    assert lines[3].split()[1] == ("yes" if nvrtc_available() else "no")


def test_float_arithmetic_is_never_fused_and_matrices_keep_the_simulators_order():
    src = """
uint i = thread_position_in_grid.x;
float2x2 m = float2x2(float2(1.0f, 2.0f), float2(a[i], 4.0f));
float2 v = m * float2(a[i], 3.0f);
out[i] = a[i] * a[i] + v.y + fma(a[i], 2.0f, 1.0f);
"""
    k = metal_kernel("fused", ["a"], ["out"], src)
    tr = k.to_cuda(inputs=[mx.zeros((4,))], output_shapes=[(4,)], output_dtypes=[mx.float32])
    kernel = tr.unit.split(f"void {tr.entry}(")[1]
    # 'a * a + b' would become one fused multiply-add under NVRTC's default --fmad=true; the
    # simulator rounds the product first: the translation writes the rounding operations.
    assert "mp_add<float>(mp_mul<float>(" in kernel
    assert "__fadd_rn(a, b)" in tr.header and "__fmul_rn(a, b)" in tr.header
    assert "mp_mat<float, 2, 2>" in kernel
    ptx = _ptx(tr.unit)
    # fma() is the simulator's double-rounded sum; no other fused operation in the kernel.
    assert "fma.rn.f32" not in ptx


def _zip_problem():
    from metal_puzzles import MetalKernel, MetalProblem
    from metal_puzzles.puzzles import get_puzzle, solution_source

    puzzle = get_puzzle("zip")

    def kernel_fn(*inputs):
        return MetalKernel(name=puzzle.kernel_name, input_names=list(puzzle.input_names),
                           output_names=list(puzzle.output_names), source=solution_source(puzzle))

    case = puzzle.visible
    return puzzle, MetalProblem(puzzle.title, kernel_fn, [mx.array(x) for x in case.inputs], case.output_shape,
                                grid=case.grid, threadgroup=case.threadgroup, spec=puzzle.spec)


@pytest.mark.parametrize("gpu_is_right", [True, False], ids=["agrees", "differs"])
def test_check_also_runs_the_kernel_on_an_nvidia_gpu_where_mlx_has_cuda(monkeypatch, gpu_is_right):
    import metal_puzzles.host.cuda_backend as cuda_backend
    import metal_puzzles.host.metal_backend as metal_backend
    import metal_puzzles.notebook.problem as problem

    puzzle, prob = _zip_problem()
    made: list[dict] = []

    def stand_in(**kwargs):  # mx.fast.cuda_kernel: what reaches MLX is recorded; the GPU's answer stands in
        made.append(kwargs)

        def run(**call):
            want = np.asarray(puzzle.spec(*call["inputs"]))
            return [mx.array(want if gpu_is_right else want + 1)]
        return run

    monkeypatch.setattr(problem, "metal_available", lambda: False)
    for module in (problem, metal_backend, cuda_backend):
        monkeypatch.setattr(module, "cuda_available", lambda: True)
    monkeypatch.setattr(mx.fast, "cuda_kernel", stand_in)
    result = prob.check(quiet=True)
    assert result.passed
    assert made and made[0]["source"].count("mp_in_grid") >= 2 and made[0]["input_names"] == list(puzzle.input_names)
    word = "agrees with" if gpu_is_right else "differs from"
    assert result.gpu_note == f"On the NVIDIA GPU (the kernel translated to CUDA): the result {word} the simulator" + \
        ("." if gpu_is_right else "'s (a race or uninitialised memory?).")


def test_threadgroup_memory_sized_at_launch_is_dynamic_shared_memory():
    from metal_puzzles import compile_shader

    lib = compile_shader("""
#include <metal_stdlib>
using namespace metal;
kernel void rev(device float* a [[buffer(0)]], threadgroup float* tile [[threadgroup(0)]],
                threadgroup int* flags [[threadgroup(1)]],
                uint i [[thread_position_in_grid]], uint li [[thread_position_in_threadgroup]],
                uint n [[threads_per_threadgroup]]) {
  tile[li] = a[i];
  flags[li] = 1;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  a[i] = tile[n - 1 - li] + float(flags[li]);
}""")
    tr = lib.to_cuda()["rev"]
    assert tr.threadgroup_memory == ("tile", "flags")
    assert [p.name for p in tr.params][-2:] == ["tile_bytes", "flags_bytes"]
    assert tr.dynamic_shared_bytes([64 * 4, 10]) == 256 + 16
    kernel = tr.unit.split(f"void {tr.entry}(")[1]
    assert "extern __shared__ __align__(16) unsigned char mp_dynamic_shared[];" in kernel
    assert kernel.index("float* tile = ") < kernel.index("int* flags = ") < kernel.index("if (mp_in_grid)")
    _ptx(tr.unit)


def test_64_bit_buffers_read_as_the_translations_type_in_mlx_s_signature():
    # MLX declares int64 buffers 'const int64_t*' (long on Linux); the translation's is long long,
    # so a header function taking 'const device long*' gets a pointer of its own type.
    k = metal_kernel("i64", ["a"], ["out"], "uint i = thread_position_in_grid.x; out[i] = a[i] * 2 + a_strides[0];")
    tr = k.to_cuda(inputs=[mx.zeros((4,), dtype=mx.int64)], output_shapes=[(4,)], output_dtypes=[mx.int64])
    assert "((long long*)out)[" in tr.body and "((const long long*)a)[" in tr.body
    assert "((const long long*)mp_ptr(a_strides))[0]" in tr.body
    _ptx(tr.unit)


def test_a_barrier_inside_a_header_function_still_gets_the_drain():
    header = """
inline float exchange(threadgroup float* t, uint li, float v) {
    t[li] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    return t[li ^ 1];
}
"""
    src = """
threadgroup float t[64];
uint i = thread_position_in_grid.x;
out[i] = exchange(t, thread_position_in_threadgroup.x, a[i]);
"""
    k = metal_kernel("ex", ["a"], ["out"], src, header=header)
    tr = k.to_cuda(inputs=[mx.zeros((100,))], output_shapes=[(100,)], output_dtypes=[mx.float32])
    assert tr.uses_barriers
    assert "mp_drain();" in tr.unit.split(f"void {tr.entry}(")[1]
    _ptx(tr.unit)


def test_a_shaders_reference_parameters_are_pointers_to_one_object():
    from metal_puzzles import compile_shader

    lib = compile_shader("""
#include <metal_stdlib>
using namespace metal;
kernel void count(device const float* a [[buffer(0)]], device atomic_uint& hits [[buffer(1)]],
                  constant float& limit [[buffer(2)]], device uint& last [[buffer(3)]],
                  uint i [[thread_position_in_grid]]) {
  if (a[i] > limit) atomic_fetch_add_explicit(&hits, 1u, memory_order_relaxed);
  if (i == 0) last = uint(limit);
}""")
    tr = lib.to_cuda()["count"]
    assert [(p.name, p.ctype) for p in tr.params][:4] == [
        ("a", "const float*"), ("hits", "unsigned int*"), ("limit", "const float*"), ("last", "unsigned int*")]
    kernel = tr.unit.split(f"void {tr.entry}(")[1]
    assert "(a[mp_cvt<long long, unsigned int>(i)] > (*limit))" in kernel
    assert "mp_atomic_add((&(*hits)), 1u)" in kernel and "((*last) = " in kernel
    _ptx(tr.unit)


def test_show_says_the_time_measured_on_an_nvidia_gpu_beside_the_models_estimate(monkeypatch, capsys):
    import metal_puzzles.host.cuda_backend as cuda_backend
    import metal_puzzles.host.metal_backend as metal_backend
    import metal_puzzles.notebook.problem as problem

    puzzle, prob = _zip_problem()
    calls: list[dict] = []

    def stand_in(**kwargs):  # mx.fast.cuda_kernel
        def run(**call):
            calls.append(call)
            return [mx.zeros(call["output_shapes"][0])]
        return run

    monkeypatch.setattr(problem, "metal_available", lambda: False)
    for module in (problem, metal_backend, cuda_backend):
        monkeypatch.setattr(module, "cuda_available", lambda: True)
    monkeypatch.setattr(mx.fast, "cuda_kernel", stand_in)
    prob.show(cost=True)
    out = capsys.readouterr().out
    assert "Time (a roofline model):" in out
    line = next(line for line in out.splitlines() if line.startswith("Measured on this NVIDIA GPU"))
    assert re.search(r": \d+ us a call \(the median of 20, launch and synchronisation included", line), line
    assert len(calls) == 1 + problem.MEASURED_CALLS  # one call compiles, twenty are timed


def _played_threads(grid: tuple[int, int, int], threadgroup: tuple[int, int, int]) -> list[tuple[int, ...]]:
    """The translation's thread geometry (kernel._GEOMETRY, as the unit holds it) compiled by g++
    with CUDA's indices as plain structs, run for every thread of every block of the launch MLX
    makes: (block x, y, z, CUDA's linear number, in the grid, Metal position in threadgroup x, y, z)."""
    from metal_puzzles.msl.cuda.kernel import _GEOMETRY
    from metal_puzzles.msl.cuda.translation import launch_dims

    blocks, threads = launch_dims(grid, threadgroup)
    source = textwrap.dedent("""
        #include <algorithm>
        #include <cstdio>
        using std::min;
        struct Dim { unsigned x, y, z; };
        int main() {
          const unsigned mp_gx = %d, mp_gy = %d, mp_gz = %d;
          const Dim blockDim = {%d, %d, %d}, gridDim = {%d, %d, %d};
          for (unsigned bz = 0; bz < gridDim.z; ++bz) for (unsigned by = 0; by < gridDim.y; ++by)
          for (unsigned bx = 0; bx < gridDim.x; ++bx) for (unsigned z = 0; z < blockDim.z; ++z)
          for (unsigned y = 0; y < blockDim.y; ++y) for (unsigned x = 0; x < blockDim.x; ++x) {
            const Dim blockIdx = {bx, by, bz}, threadIdx = {x, y, z};
        %s
            std::printf("%%u %%u %%u %%u %%d %%u %%u %%u\\n", bx, by, bz, mp_index, (int)mp_in_grid, mp_lx, mp_ly, mp_lz);
          }
        }
        """) % (*grid, *threads, *blocks, _GEOMETRY)
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as d:
        src, exe = Path(d) / "geometry.cpp", Path(d) / "geometry"
        src.write_text(source)
        subprocess.run(["g++", "-std=c++17", "-o", str(exe), str(src)], check=True, capture_output=True)
        out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return [tuple(int(v) for v in line.split()) for line in out.splitlines()]


@pytest.mark.parametrize("grid,threadgroup", [((34, 3, 1), (24, 3, 1)), ((20, 5, 3), (8, 4, 2)),
                                              ((100, 1, 1), (64, 1, 1)), ((48, 4, 1), (16, 4, 1))])
def test_each_cuda_thread_plays_the_metal_thread_of_its_own_number(grid, threadgroup):
    """In a partial threadgroup of several rows Metal numbers its threads x first over the group's
    real size, and a SIMD-group is 32 consecutive numbers; CUDA's warps are 32 consecutive numbers
    over the whole block. The translation gives the CUDA thread numbered n the place of Metal's
    thread numbered n, so each SIMD-group is one warp, lane for lane (the oracle's 14 kernels
    refused before, a SIMD-group spanning two warps, all agree on the H200 since)."""
    from metal_puzzles.msl.cuda.translation import launch_dims

    _, threads = launch_dims(grid, threadgroup)
    played: dict[tuple[int, int, int], set] = {}
    for bx, by, bz, n, in_grid, lx, ly, lz in _played_threads(grid, threadgroup):
        block = (bx, by, bz)
        real = [min(t, g - b * t) for t, g, b in zip(threads, grid, block, strict=True)]  # Metal's size
        metal_number = lx + real[0] * (ly + real[1] * lz)
        if in_grid:
            assert metal_number == n  # so warp n // 32, lane n % 32 is SIMD-group n // 32, lane n % 32
            assert lx < real[0] and ly < real[1] and lz < real[2]
            played.setdefault(block, set()).add((lx, ly, lz))
        else:
            assert n >= real[0] * real[1] * real[2]
    for (bx, by, bz), positions in played.items():
        real = [min(t, g - b * t) for t, g, b in zip(threads, grid, (bx, by, bz), strict=True)]
        assert positions == {(x, y, z) for x in range(real[0]) for y in range(real[1]) for z in range(real[2])}


@needs_nvrtc
def test_a_float_read_from_an_integers_bits_passes_through_a_shuffle_to_its_own_lane():
    """Oracle seed 303 on the H200: ptxas 13.0 folded ``half(as_type<float>((int)b))`` for a bool b
    as if the 0/1 had been converted (1.0 where Metal and the simulator give 0). The bits of every
    integer-to-float as_type now pass through a shuffle from the lane to itself, which ptxas
    cannot fold (benchmarks/cuda_runs/h200-2026-12-02b/: 3,000 of 3,000 random kernels agree);
    a float-to-integer as_type, which nothing folds wrongly, stays a plain copy of the bits."""
    to_float = metal_kernel("bits", ["a"], ["out"], """
uint i = thread_position_in_grid.x;
bool b = a[i] > 0.0f;
out[i] = float(half(as_type<float>((int)b)));
""").to_cuda(inputs=[mx.zeros((32,))], output_shapes=[(32,)], output_dtypes=[mx.float32])
    assert "shfl.sync.idx" in _ptx(to_float.unit)
    to_int = metal_kernel("bits_back", ["a"], ["out"], """
uint i = thread_position_in_grid.x;
out[i] = float(as_type<uint>(a[i]) >> 23);
""").to_cuda(inputs=[mx.zeros((32,))], output_shapes=[(32,)], output_dtypes=[mx.float32])
    assert "shfl.sync" not in _ptx(to_int.unit)
