"""V.10, the gated MLP (SwiGLU) over 4-bit weights: its place and spec, the launcher the finale
wires (a prompt of 33 tokens prefilled, one decoded, in float32 and in half), the mistakes its
verdict must catch (the gate forgotten, gate and up swapped, silu without the product, a silu that
overflows, a sum kept in half), its budget and each claim of its text, at the magnitudes its
hidden tests pose on every seed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest

import metal_puzzles.puzzles.t12_gated_mlp as gated_mlp_module
from metal_puzzles import metal_kernel
from metal_puzzles.checking import (
    Case,
    ErrorModel,
    PuzzleStatus,
    check_source,
    compare_with_spec,
    run_case,
)
from metal_puzzles.host.nvrtc import compile_to_ptx, nvrtc_available
from metal_puzzles.puzzles import get_puzzle, launchers, part5, solution_source
from metal_puzzles.puzzles.t12_gated_mlp import (
    HALF_SHAPE,
    OUTLIERS,
    READS_PER_WORD,
    ROWS,
    TOKENS,
    WORDS_PER_LANE,
    quantize,
)

MLP = get_puzzle("gated_mlp")
SOURCE = solution_source(MLP)
VARIANTS = Path(__file__).parent / "fairness_variants" / "gated_mlp"
#: exp(x) is infinite in float32 above this.
EXP_OVERFLOW = 88.72


def flat(text: str) -> str:
    return " ".join(text.split())


def _on(case: Case):
    """The puzzle with ``case`` as its only test: its own error model judges it."""
    return dataclasses.replace(MLP, visible=case, hidden=lambda rng: [])


def _case(cases: list[Case], part: str) -> Case:
    return next(c for c in cases if part in c.label)


def _products64(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """The gate's and the up's pre-activations (L, N) of a test, in float64 from the dequantized weights."""
    x, *weights = case.inputs
    gate, up = weights[:3], weights[3:]

    def product(w_q, scales, biases):
        w = mx.dequantize(mx.array(w_q), mx.array(scales.astype(np.float32)), mx.array(biases.astype(np.float32)),
                          group_size=64, bits=4)
        return x.astype(np.float64) @ np.asarray(w, dtype=np.float64).T

    return product(*gate), product(*up)


def _prefill(length: int, k: int, n: int, dtype, seed: int = 0) -> tuple[mx.array, ...]:
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 1.5, size=(length, k))
    x[:, rng.choice(k, 4, replace=False)] = rng.uniform(*OUTLIERS, size=(length, 4))
    weights = [quantize((rng.normal(0.0, k ** -0.5, size=(n, k))).astype(dtype)) for _ in range(2)]
    return tuple(mx.array(a) for a in (x.astype(dtype), *weights[0], *weights[1]))


# ----------------------------------------------------------------------------- place, spec, launcher
def test_the_gated_mlp_is_v10_after_sampling_and_before_the_pipeline_and_finale():
    ids = [p.id for p in part5.PART_V.puzzles]
    assert ids.index("sampling") < ids.index("gated_mlp") < ids.index("radix_pass") < ids.index("decode_step")
    assert MLP.number == "V.10" and MLP.kernel_name == "gated_mlp"
    assert MLP.input_names == ("x", "gate_q", "gate_scales", "gate_biases", "up_q", "up_scales", "up_biases")


def test_the_spec_is_mlxs_quantized_product_and_silu():
    for op in ("mx.quantized_matmul(", "transpose=True, group_size=64, bits=4", "nn.silu(", "import mlx.nn as nn"):
        assert op in MLP.spec_source
    assert gated_mlp_module.nn.silu is nn.silu  # the module's silu is mlx.nn's
    # On the visible test it is silu(x @ W_gate.T) * (x @ W_up.T) of the dequantized weights.
    g, u = _products64(MLP.visible)
    spec = np.asarray(MLP.spec(*[mx.array(a.astype(np.float64) if a.dtype.kind == "f" else a)
                                 for a in MLP.visible.inputs]))
    np.testing.assert_allclose(spec, g / (1 + np.exp(-g)) * u, rtol=1e-6, atol=1e-7)


def test_the_visible_weights_are_exactly_what_mx_quantize_stores_and_the_launch_has_partial_blocks():
    x, gq, gs, gb, uq, us, ub = MLP.visible.inputs
    assert x.shape == (5, 128) and gq.shape == uq.shape == (6, 16) and gs.shape == (6, 2)
    assert MLP.visible.grid == (32, 2, 2)  # rows 4 and 5 in the second block, token 4 alone in the second
    assert hex(int(gq[0, 0])) == "0x52fc9630"  # V.3's first word: q = 0, 3, 6, 9, 12, 15, 2, 5
    assert gs[0].tolist() == [0.0625, 0.125] and gb[0].tolist() == [-0.5, -1.0]
    g, u = _products64(MLP.visible)
    assert not np.allclose(g, u) and (g < 0).any() and (g > 0).any()  # swapping gate and up shows


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("length", [1, 33])
def test_the_launcher_decodes_and_prefills_within_the_error_model(length, dtype):
    """run_gated_mlp, as the finale wires it: one token decoded, a prompt of 33 prefilled (nine blocks
    of tokens, the last of one), out in x's dtype, every element within the puzzle's own error model."""
    inputs = _prefill(length, 256, 10, dtype, seed=length)
    out = launchers.run_gated_mlp(MLP.kernel(SOURCE), *inputs)
    assert out.shape == (length, 10) and out.dtype == inputs[0].dtype
    output_dtype = None if dtype is np.float32 else "float16"
    c = compare_with_spec(MLP.spec, tuple(np.asarray(a) for a in inputs), (length, 10), MLP.error_model, MLP.atol,
                          MLP.rtol, None, output_dtype)
    assert not c.mismatch(np.asarray(out)).any()


def test_the_conditioned_model_takes_the_jacobian_row_by_row_where_mlx_has_no_vmap():
    """MLX 0.32 has no vmap for QuantizedMatmul: the condition is the same as for the product
    written with mx.dequantize (which vmaps)."""
    case = _case(MLP.cases(2), "partial last block of rows")
    x, gq, gs, gb, uq, us, ub = case.inputs

    def dequantized_spec(x, gs, gb, us, ub):
        def product(w_q, s, b):
            w = mx.dequantize(w_q, s.astype(mx.float32), b.astype(mx.float32), group_size=64, bits=4)
            return (x.astype(mx.float32) @ w.T).astype(x.dtype)

        return nn.silu(product(mx.array(gq), gs, gb)) * product(mx.array(uq), us, ub)

    def quantized_spec(x, gs, gb, us, ub):
        return MLP.spec(x, mx.array(gq), gs, gb, mx.array(uq), us, ub)

    with pytest.raises(RuntimeError, match="vmap"):  # what the fallback is for
        mx.vmap(lambda c: mx.vjp(lambda a: quantized_spec(a, *map(mx.array, (gs, gb, us, ub))), [mx.array(x)],
                                 [c])[1][0])(mx.ones((2, *case.output_shape)))
    quantized = compare_with_spec(quantized_spec, (x, gs, gb, us, ub), case.output_shape, ErrorModel.CONDITIONED,
                                  0.0, 0.0)
    dequantized = compare_with_spec(dequantized_spec, (x, gs, gb, us, ub), case.output_shape,
                                    ErrorModel.CONDITIONED, 0.0, 0.0)
    np.testing.assert_allclose(quantized.allowed, dequantized.allowed, rtol=1e-4)
    assert (quantized.allowed > 0).all()


# ----------------------------------------------------------------------------- the verdict on typical mistakes
@pytest.mark.parametrize(("mistake", "old", "new"), [
    ("the gate forgotten", "g / (1.0f + exp(-g)) * u", "u"),
    ("gate and up swapped", "g / (1.0f + exp(-g)) * u", "u / (1.0f + exp(-u)) * g"),
    ("silu without the product", "g / (1.0f + exp(-g)) * u", "g / (1.0f + exp(-g))"),
    ("silu without the gate's value", "g / (1.0f + exp(-g)) * u", "1.0f / (1.0f + exp(-g)) * u"),
])
def test_a_wrong_gating_fails_on_the_visible_test(mistake, old, new):
    wrong = SOURCE.replace(old, new)
    assert wrong != SOURCE, mistake
    result = check_source(MLP, wrong)
    assert result.status is PuzzleStatus.WRONG, result.report()
    visible = result.outcomes[0]
    assert visible.case.label == "visible test" and visible.mismatch.any(), mistake
    assert "wrong output" in flat(result.report())


def test_a_silu_through_exp_of_g_passes_the_visible_test_and_writes_nan_past_88():
    """The text: g * exp(g) / (1 + exp(g)) is inf / inf at g = 100; g / (1 + exp(-g)) is 100."""
    naive = (VARIANTS / "wrong_silu_overflows.metal").read_text()
    result = check_source(MLP, naive)
    assert not result.correct
    visible, *hidden = result.outcomes
    assert visible.status.value == "pass"
    loud = next(o for o in hidden if "beyond +-100" in o.case.label)
    assert loud.status.value == "wrong" and np.isnan(loud.yours).any()
    g, _ = _products64(loud.case)
    assert np.array_equal(np.isnan(loud.yours), g > EXP_OVERFLOW)  # exactly where exp(g) is infinite
    assert "NaN" in result.report()
    # The reference writes the true value there, and -0 (or a tiny negative) where g < -88.7.
    ref = run_case(MLP.kernel(SOURCE), loud.case, MLP.launch_options).outputs[0]
    assert np.isfinite(ref).all()
    assert (np.abs(ref[g < -EXP_OVERFLOW]) < 1e-30).all() and (g < -EXP_OVERFLOW).any()


@pytest.mark.parametrize("seed", range(6))
def test_a_sum_kept_in_half_fails_the_half_test_and_float_sums_pass_it(seed):
    """The half test on its own: the reference (float sums, one rounding to half) within half the
    allowed error, a sum kept in half past it, on several elements (a sweep of seeds 0 to 99: 1.95 to
    12.8 times the allowed error, on at least 10 of the 128 elements; the reference at most 0.41 of it)."""
    case = _case(MLP.cases(seed), "in half")
    assert case.output_dtype == "float16" and all(a.dtype == np.float16 for a in case.inputs if a.dtype.kind == "f")
    ref = check_source(_on(case), SOURCE)
    assert ref.correct
    o = ref.outcomes[0]
    assert (np.abs(o.yours.astype(np.float64) - o.expected) / o.allowed).max() < 0.5
    half = check_source(_on(case), (VARIANTS / "wrong_half_accumulation.metal").read_text())
    assert not half.correct
    o = half.outcomes[0]
    ratio = np.abs(o.yours.astype(np.float64) - o.expected) / o.allowed
    assert ratio.max() > 1.5 and (ratio > 1).sum() >= 5


def test_mlx_with_float32_inside_passes_the_half_test_and_mlxs_cpu_half_product_does_not():
    """MLX's GPU quantized kernels read half and add in float32: that computation, rounded to half
    once, is within the model. MLX's CPU quantized product in half adds in half, and is off as a
    sum kept in half is."""
    case = _case(MLP.cases(7), "in half")
    c = compare_with_spec(MLP.spec, case.inputs, case.output_shape, MLP.error_model, MLP.atol, MLP.rtol, None,
                          "float16")
    a = [mx.array(v) for v in case.inputs]

    def product(x, w_q, scales, biases):
        return mx.quantized_matmul(x, w_q, scales, biases, transpose=True, group_size=64, bits=4)

    wide = [v.astype(mx.float32) if v.dtype == mx.float16 else v for v in a]
    in_float = (nn.silu(product(wide[0], *wide[1:4])) * product(wide[0], *wide[4:7])).astype(mx.float16)
    assert not c.mismatch(np.asarray(in_float)).any()
    in_half = nn.silu(product(a[0], *a[1:4])) * product(a[0], *a[4:7])
    assert in_half.dtype == mx.float16 and c.mismatch(np.asarray(in_half)).any()


# ----------------------------------------------------------------------------- every seed poses the range
RANGE_SEEDS = range(300)


def test_every_seed_drives_the_gate_past_exps_range_both_ways_and_poses_outliers_of_hundreds():
    for seed in RANGE_SEEDS:
        cases = MLP.cases(seed)
        g, _ = _products64(_case(cases, "beyond +-100"))
        assert g.max() > EXP_OVERFLOW and g.min() < -EXP_OVERFLOW, seed
        half = _case(cases, "in half")
        assert half.inputs[0].shape == (HALF_SHAPE[0], HALF_SHAPE[1]) and half.output_shape == (HALF_SHAPE[0],
                                                                                                HALF_SHAPE[2])
        for c in cases[1:]:
            biggest = np.abs(c.inputs[0].astype(np.float64)).max(axis=1)
            assert (biggest >= OUTLIERS[0]).all() and (biggest <= OUTLIERS[1]).all(), (seed, c.label)


# ----------------------------------------------------------------------------- budget and the text's claims
def test_the_budget_is_the_texts_numbers():
    text = flat(MLP.description)
    assert WORDS_PER_LANE == 4 and READS_PER_WORD == 56
    assert MLP.budget.global_reads == 224 and MLP.budget.global_writes == TOKENS * ROWS == 16
    assert "at most 224 global reads per thread" in text and "16 writes" in text
    assert "costs 352 reads" in text and "each token 512" in text


def test_reading_x_again_for_the_up_product_is_over_budget():
    load = "            xs[t][i] = x[(tok0 + t) * K + word * PER_WORD + i];"
    again = SOURCE.replace(load, load + "\n" + load.replace("xs[", "xs_up[")).replace(
        "float xs[TOKENS][PER_WORD];", "float xs[TOKENS][PER_WORD];\n    float xs_up[TOKENS][PER_WORD];").replace(
        "up[t][r] += xs[t][i] * wu;", "up[t][r] += xs_up[t][i] * wu;")
    assert again.count("xs_up") == 3
    result = check_source(MLP, again)
    assert result.status is PuzzleStatus.OVER_BUDGET, result.report()
    assert "uses 352 global reads per thread; this puzzle needs at most 224" in flat(result.report())


def test_reading_the_words_again_for_every_token_is_over_budget():
    """A token loop outside the rows: each word, scale and bias read once per token."""
    per_token = SOURCE.replace("""            for (uint i = 0; i < PER_WORD; i++) {
                float wg = gate_scale * float((gate_word >> (4 * i)) & 0xF) + gate_bias;
                float wu = up_scale * float((up_word >> (4 * i)) & 0xF) + up_bias;
                for (uint t = 0; t < tokens; t++) {
                    gate[t][r] += xs[t][i] * wg;
                    up[t][r] += xs[t][i] * wu;
                }
            }""", """            for (uint t = 0; t < tokens; t++) {
                uint gw = gate_q[row * WORDS + word];
                uint uw = up_q[row * WORDS + word];
                float gs = gate_scales[row * GROUPS + group];
                float gb = gate_biases[row * GROUPS + group];
                float us = up_scales[row * GROUPS + group];
                float ub = up_biases[row * GROUPS + group];
                for (uint i = 0; i < PER_WORD; i++) {
                    gate[t][r] += xs[t][i] * (gs * float((gw >> (4 * i)) & 0xF) + gb);
                    up[t][r] += xs[t][i] * (us * float((uw >> (4 * i)) & 0xF) + ub);
                }
            }""")
    assert per_token != SOURCE
    result = check_source(MLP, per_token)
    assert result.status is PuzzleStatus.OVER_BUDGET, result.report()
    assert "this puzzle needs at most 224" in flat(result.report())


def _cost(case: Case):
    options = dataclasses.replace(MLP.launch_options, cost=True)
    return run_case(MLP.kernel(SOURCE), case, options, cost=True).cost


def _requested(cost, text: str) -> int:
    line = next(n for n, source_line in enumerate(SOURCE.split("\n"), start=1) if text in source_line)
    return sum(c.loads.bytes_requested for (_, n), c in cost.lines.items() if n == line)


def test_x_is_read_once_a_block_of_rows_and_each_word_once_a_block_of_tokens():
    """The text: each value of x read once for both products and every row of a block; each word of
    both matrices once for every token of a block, so prefilling TOKENS tokens reads the weights as
    often as decoding one does."""
    case = _case(MLP.cases(0), "three blocks of rows and of tokens")
    length, k = case.inputs[0].shape
    n, words = case.inputs[1].shape
    cost = _cost(case)
    row_blocks, token_blocks = -(-n // ROWS), -(-length // TOKENS)
    assert _requested(cost, "xs[t][i] = x[") == length * k * 4 * row_blocks
    for word in ("uint gate_word = gate_q[", "uint up_word = up_q["):
        assert _requested(cost, word) == n * words * 4 * token_blocks
    # The reads of x span 8 segments a SIMD-group load (V.3's lanes), the words one.
    loads = {line: c.loads for (_, line), c in cost.lines.items() if c.loads.requests}
    line = next(i for i, s in enumerate(SOURCE.split("\n"), start=1) if "xs[t][i] = x[" in s)
    assert loads[line].max_segments == 8
    # Four tokens read the weights once: as many bytes of words as one token does.
    one = dataclasses.replace(case, inputs=(case.inputs[0][:1], *case.inputs[1:]), output_shape=(1, n),
                              grid=(32, row_blocks, 1))
    four = dataclasses.replace(case, inputs=(case.inputs[0][:TOKENS], *case.inputs[1:]), output_shape=(TOKENS, n),
                               grid=(32, row_blocks, 1))
    assert _requested(_cost(one), "uint gate_word = gate_q[") == _requested(_cost(four), "uint gate_word = gate_q[")


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC is not installed (the 'test' extra installs it)")
def test_the_reference_translates_to_cuda_and_compiles_for_its_half_test_too():
    """tests/test_cuda_translation.py compiles the visible (float32) launch; the half test's launch
    reads half x, scales and biases and writes half."""
    case = _case(MLP.cases(0), "in half")
    kernel = metal_kernel(MLP.kernel_name, list(MLP.input_names), ["out"], SOURCE, MLP.header)
    tr = kernel.to_cuda(inputs=[mx.array(a) for a in case.inputs], output_shapes=[case.output_shape],
                        output_dtypes=[mx.float16])
    for name in ("x", "gate_scales", "gate_biases", "up_scales", "up_biases"):
        assert f"const __half* {name}," in tr.unit
    assert "__half* out," in tr.unit
    compile_to_ptx(tr.unit)


def test_silu_at_plus_and_minus_100_is_what_the_text_says():
    """The text: g * exp(g) / (1 + exp(g)) is inf / inf at g = 100; g / (1 + exp(-g)) is 100 there
    and -0 at -100, a hair from -3.7e-42; MLX's nn.silu gives -0 and 100 too."""
    g = np.array([-100.0, 100.0], dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        naive = g * np.exp(g) / (np.float32(1) + np.exp(g))
        stable = g / (np.float32(1) + np.exp(-g))
    assert np.isnan(naive[1]) and not np.isnan(naive[0])
    assert stable[1] == 100 and stable[0] == 0 and np.signbit(stable[0])
    assert -100 * np.exp(-100.0) == pytest.approx(-3.7e-42, rel=0.01)
    mlx = np.asarray(nn.silu(mx.array(g)))
    assert mlx[1] == 100 and mlx[0] == 0 and np.signbit(mlx[0])
    text = flat(MLP.description)
    assert "`inf / inf`, NaN, at `g = 100`" in text and "`-100 * e^-100 = -3.7e-42`" in text
