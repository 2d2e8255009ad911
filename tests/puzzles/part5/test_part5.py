"""Part V, the kernels of a language model: every reference solution passes (within its budget),
every template fails, hidden tests keep the visible test's structure, each spec is MLX's own
operation, and the typical mistakes of each puzzle fail with the message that names them."""

from __future__ import annotations

import re

import numpy as np
import pytest

from metal_puzzles.checking import PuzzleStatus, WiredPuzzle, check_source
from metal_puzzles.puzzles import (
    PUZZLES,
    entry_of,
    find_puzzle,
    get_puzzle,
    part4,
    part5,
    part_of,
    solution_source,
)

#: Part V's kernel puzzles (its finale, which wires them, is tests/puzzles/part5/test_decode_step.py's).
PART_V = [p for p in part5.PART_V.puzzles if not isinstance(p, WiredPuzzle)]
PART_V_IDS = [p.id for p in PART_V]


def check(pid: str, source: str):
    return check_source(get_puzzle(pid), source)


def solution(pid: str) -> str:
    return solution_source(get_puzzle(pid))


def flat(report: str) -> str:
    return " ".join(report.split())  # reports break long lines between words


def failed(pid: str, source: str) -> str:
    result = check(pid, source)
    assert result.status in (PuzzleStatus.WRONG, PuzzleStatus.FINDINGS), result.report()
    return flat(result.report())


def over_budget(pid: str, source: str) -> str:
    result = check(pid, source)
    assert result.status == PuzzleStatus.OVER_BUDGET, result.report()
    return flat(result.report())


# ----------------------------------------------------------------------------- the catalogue
def test_part_five_follows_part_four_and_closes_the_book():
    after = len(part5.PART_V.entries)
    assert PUZZLES[-after:] == part5.PART_V.puzzles and PUZZLES[-1].id == "decode_step"
    assert PUZZLES[-after - len(part4.PART_IV.entries):-after] == part4.PART_IV.puzzles
    assert len({p.id for p in PUZZLES}) == len(PUZZLES)
    for p in PART_V:
        assert part_of(p) is part5.PART_V and p.number.startswith("V.")
        assert find_puzzle(p.title) is p and find_puzzle(p.id) is p
        entry = entry_of(p)
        assert entry.setup and entry.kernel_function == f"{p.id}_test" and entry.solution_path().is_file()


@pytest.mark.parametrize("pid", PART_V_IDS)
def test_the_reference_solution_passes(pid):
    result = check(pid, solution(pid))
    assert result.passed, result.report()


@pytest.mark.parametrize("pid", PART_V_IDS)
def test_the_template_fails(pid):
    p = get_puzzle(pid)
    if p.pipeline is None:
        assert "// FILL ME IN" in p.template
    else:  # a pipeline's template is its whole shader, with one stage planted wrong
        assert "FILL ME IN" not in p.template
    assert check(pid, p.template).status in (PuzzleStatus.FINDINGS, PuzzleStatus.WRONG)


@pytest.mark.parametrize("pid", PART_V_IDS)
def test_hidden_tests_keep_the_visible_tests_structure(pid):
    """The visible test is the contract: no hidden test goes beyond it, only sizes and values change."""
    p = get_puzzle(pid)
    cases = p.cases(seed=3)
    assert len(cases) >= 4
    for case in cases[1:]:
        assert case.beyond == (), (case.label, case.beyond)
        if pid.startswith("rope"):  # a threadgroup per head: (D/2, L, 1)
            heads, length, d = case.output_shape
            assert case.threadgroup == (d // 2, length, 1) and case.grid == (d // 2, length, heads)
        else:
            assert case.threadgroup == p.visible.threadgroup
        # A test in half (V.1, V.4: models run in half) has its float arrays in half, as its text says.
        floats = np.dtype(np.float16) if case.output_dtype == "float16" else None
        assert floats is None or "in `half`" in p.description
        assert [(x.dtype, x.ndim) for x in case.inputs] == [(floats or x.dtype if x.dtype.kind == "f" else x.dtype,
                                                             x.ndim) for x in p.visible.inputs]


@pytest.mark.parametrize("pid", PART_V_IDS)
def test_the_spec_is_mlxs_own_operation(pid):
    """Each spec names the MLX operation it stands for; the book shows that source."""
    operation = {"rms_norm": "mx.fast.rms_norm(", "rope_traditional": "mx.fast.rope(", "rope": "mx.fast.rope(",
                 "quantized_matvec": "mx.quantized_matmul(", "argmax": "mx.argmax(", "topk": "mx.argsort(",
                 "radix_pass": "mx.argsort(",
                 "decode_attention": "mx.fast.scaled_dot_product_attention(",
                 "prefill_attention": "mx.fast.scaled_dot_product_attention(",
                 "kv_cache_append": "] = k  # MLX's slice update", "sampling": "mx.argsort(",
                 "gated_mlp": "mx.quantized_matmul("}[pid]
    assert operation in get_puzzle(pid).spec_source


# ----------------------------------------------------------------------------- V.1 RMSNorm
def test_rms_norm_without_eps_fails_on_the_visible_test():
    without = solution("rms_norm").replace("rsqrt(total / N + EPS)", "rsqrt(total / N)")
    assert without != solution("rms_norm")
    report = failed("rms_norm", without)
    assert report.startswith("Failed:") and "visible test" in report and "wrong output" in report
    result = check("rms_norm", without)
    # The row of zeros is 0 / 0 without EPS.
    zero_row = next(o for o in result.outcomes if "a row of zeros" in o.case.label)
    assert np.isnan(np.asarray(zero_row.yours)[1]).all()


def test_rms_norm_dividing_by_the_sum_instead_of_the_mean_fails():
    report = failed("rms_norm", solution("rms_norm").replace("total / N + EPS", "total + EPS"))
    assert "wrong output" in report


def test_rms_norm_reading_the_row_twice_is_over_budget():
    twice = solution("rms_norm").replace("out[r * N + k] = v[q] * scale * w[k];",
                                         "out[r * N + k] = x[r * N + k] * scale * w[k];")
    report = over_budget("rms_norm", twice)
    assert "uses 12 global reads per thread; this puzzle needs at most 8" in report


def test_rms_norm_with_a_barrier_tree_is_over_budget():
    tree = """
threadgroup float partial[TG];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
float v[PER_THREAD];
float squares = 0.0f;
for (uint q = 0; q < PER_THREAD; q++) {
    uint k = j + q * TG;
    v[q] = k < N ? x[r * N + k] : 0.0f;
    squares += v[q] * v[q];
}
partial[j] = squares;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint stride = TG / 2; stride > 0; stride /= 2) {
    if (j < stride) {
        partial[j] += partial[j + stride];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
float scale = rsqrt(partial[0] / N + EPS);
for (uint q = 0; q < PER_THREAD; q++) {
    uint k = j + q * TG;
    if (k < N) {
        out[r * N + k] = v[q] * scale * w[k];
    }
}
"""
    report = over_budget("rms_norm", tree)
    assert "makes each threadgroup wait at 7 barriers; this puzzle allows 1: reduce within each SIMD-group with " \
           "simd_sum" in report


# ----------------------------------------------------------------------------- V.2 rotary embeddings
def test_rope_in_the_other_layout_fails_on_the_visible_test():
    """The interleaved kernel on the halves puzzle and the other way round: wrong from the first pair on."""
    for pid, other in (("rope", "rope_traditional"), ("rope_traditional", "rope")):
        report = failed(pid, solution(other))
        assert "visible test" in report.split("wrong output")[0] and "wrong output" in report


def test_rope_without_the_offset_fails():
    without = solution("rope").replace("float(offset + int(l))", "float(l)")
    assert without != solution("rope")
    assert "wrong output" in failed("rope", without)


def test_rope_with_the_frequency_of_the_wrong_pair_fails():
    """BASE^(-i/D) instead of BASE^(-2i/D): every pair but the first turns at the wrong speed."""
    wrong = solution("rope_traditional").replace("-2.0f * float(i)", "-1.0f * float(i)")
    assert wrong != solution("rope_traditional")
    assert "wrong output" in failed("rope_traditional", wrong)


def test_rope_error_floor_is_far_below_a_layout_mistake():
    """The floor ATOL (a rotation's roundings at position 0) is far below swapping two values of a pair (O(1))."""
    from metal_puzzles.puzzles.part5.rope import ATOL
    assert 1e-5 < ATOL < 1e-3


# ----------------------------------------------------------------------------- V.3 4-bit quantized product
def test_the_hidden_tests_pack_weights_as_mx_quantize_does():
    """pack_4bit stores 4-bit values as mx.quantize does: quantizing the dequantized weights of a
    hidden test gives back its words, scales and biases."""
    import mlx.core as mx

    from metal_puzzles.puzzles.part5.quantized_matvec import pack_4bit
    rng = np.random.default_rng(5)
    q = rng.integers(0, 16, size=(3, 128))
    q[:, ::64] = 0  # each group spans 0..15, so mx.quantize finds the same scale and bias
    q[:, 1::64] = 15
    scales = np.array([[0.25, 0.5]] * 3, dtype=np.float32)
    # mx.quantize makes the bias the end of largest magnitude (a negative scale when it is the
    # maximum): here the minimum.
    biases = np.array([[-2.0, -4.0]] * 3, dtype=np.float32)
    words = pack_4bit(q)
    w = mx.dequantize(mx.array(words), mx.array(scales), mx.array(biases), group_size=64, bits=4)
    np.testing.assert_array_equal(np.asarray(w), np.repeat(scales, 64, axis=1) * q + np.repeat(biases, 64, axis=1))
    w_q, s, b = mx.quantize(w, group_size=64, bits=4)
    np.testing.assert_array_equal(np.asarray(w_q), words)
    np.testing.assert_array_equal(np.asarray(s), scales)
    np.testing.assert_array_equal(np.asarray(b), biases)


def test_the_visible_words_are_the_ones_the_text_reads():
    p = get_puzzle("quantized_matvec")
    w_q = p.visible.inputs[1]
    assert hex(int(w_q[0, 0])) == "0x52fc9630" and "`0x52fc9630`" in p.description
    assert p.visible.inputs[2][0].tolist() == [0.25, 0.5] and p.visible.inputs[3][0].tolist() == [-2.0, -4.0]


def test_unpacking_from_the_wrong_end_of_the_word_fails():
    wrong = solution("quantized_matvec").replace("(packed >> (4 * i)) & 0xF", "(packed >> (28 - 4 * i)) & 0xF")
    assert wrong != solution("quantized_matvec")
    report = failed("quantized_matvec", wrong)
    assert "visible test" in report.split("wrong output")[0]


def test_dequantizing_without_the_bias_fails():
    wrong = solution("quantized_matvec").replace("(scale * q + bias)", "(scale * q)")
    assert wrong != solution("quantized_matvec")
    assert "wrong output" in failed("quantized_matvec", wrong)


def test_a_block_without_the_row_guard_reads_past_the_weights():
    unguarded = solution("quantized_matvec").replace("if (row < N) {", "{").replace(
        "if (lane == 0 && row0 + r < N) {", "if (lane == 0) {")
    report = failed("quantized_matvec", unguarded)
    assert "out-of-bounds" in report and "w_q" in report


def test_a_run_of_neighbouring_words_per_lane_reads_x_over_16_segments():
    """Lane l taking words 2l and 2l + 1 (instead of l and l + 32) spreads a SIMD-group's reads of
    x over twice the segments on the 512-long rows."""
    run = solution("quantized_matvec").replace(
        "for (uint word = lane; word < WORDS; word += 32) {",
        "for (uint word = lane * ((WORDS + 31) / 32); word < min(WORDS, (lane + 1) * ((WORDS + 31) / 32)); word++) {")
    assert run != solution("quantized_matvec")
    report = over_budget("quantized_matvec", run)
    assert "it touches 16 memory segments per SIMD-group load (line 12); this puzzle allows at most 8" in report


def test_reading_x_again_for_every_row_is_over_budget():
    again = solution("quantized_matvec").replace("xs[i] * (scale * q + bias)",
                                                 "x[word * PER_WORD + i] * (scale * q + bias)").replace(
        "xs[i] = x[word * PER_WORD + i];", "xs[i] = 0.0f;")
    report = over_budget("quantized_matvec", again)
    assert "uses 88 global reads per thread; this puzzle needs at most 40" in report


# ----------------------------------------------------------------------------- V.4 argmax
def test_the_visible_argmax_has_the_ties_and_the_negative_row_the_text_describes():
    import mlx.core as mx
    p = get_puzzle("argmax")
    (x,) = p.visible.inputs
    assert np.flatnonzero(x[0] == x[0].max())[:3].tolist() == [9, 25, 41] and "the answer is 9" in p.description
    assert x[0, 9 + 128] == x[0].max()  # a tie among one thread's elements
    assert (x[1] < 0).all()
    assert np.asarray(mx.argmax(mx.array(x), axis=1)).tolist() == [9, 1]
    for case in p.cases(seed=4)[1:]:  # every hidden row has its largest value more than once
        for row in case.inputs[0]:
            assert (row == row.max()).sum() >= 2 or row.size < 2


def test_argmax_breaking_ties_by_the_last_index_fails():
    last = solution("argmax").replace("if (v > best) {", "if (v >= best) {")
    assert last != solution("argmax")
    assert "wrong output" in failed("argmax", last)


def test_argmax_taking_the_largest_index_of_a_simd_group_fails():
    wrong = solution("argmax").replace("simd_min(best == group_best ? index : UINT_MAX)",
                                       "simd_max(best == group_best ? index : 0u)")
    assert wrong != solution("argmax")
    assert "wrong output" in failed("argmax", wrong)


def test_argmax_starting_from_zero_fails_on_the_negative_row():
    zero = solution("argmax").replace("float best = -INFINITY;", "float best = 0.0f;")
    result = check("argmax", zero)
    assert not result.passed
    visible = result.outcomes[0]
    assert visible.case.label == "visible test"
    assert np.asarray(visible.yours).tolist()[0] == 9 and np.asarray(visible.yours).tolist()[1] != 1


def test_argmax_with_a_barrier_tree_is_over_budget():
    tree = """
threadgroup float values[TG];
threadgroup uint indices[TG];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
float best = -INFINITY;
uint index = UINT_MAX;
for (uint k = j; k < N; k += TG) {
    float v = x[r * N + k];
    if (v > best) {
        best = v;
        index = k;
    }
}
values[j] = best;
indices[j] = index;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint stride = TG / 2; stride > 0; stride /= 2) {
    if (j < stride) {
        float o = values[j + stride];
        uint oi = indices[j + stride];
        if (o > values[j] || (o == values[j] && oi < indices[j])) {
            values[j] = o;
            indices[j] = oi;
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (j == 0) {
    out[r] = indices[0];
}
"""
    report = over_budget("argmax", tree)
    assert "makes each threadgroup wait at 8 barriers; this puzzle allows 1: find each SIMD-group's largest " \
           "value with simd_max" in report


# ----------------------------------------------------------------------------- V.6 top-k
def test_the_topk_contract_is_mlxs_on_the_cpu_build():
    """The text's claims, by experiment on MLX's CPU build: mx.topk gives values in no useful order,
    mx.argpartition indices in no useful order; the spec (a stable argsort's first K) gives the
    same values as mx.topk, largest first, ties in index order as NumPy's stable sort, and for
    K = 1 mx.argmax's answer."""
    import mlx.core as mx
    p = get_puzzle("topk")
    k = 8
    x = mx.array(p.visible.inputs[0])
    assert np.asarray(mx.topk(x, k, axis=1))[0, :3].tolist() == [11.5, 11.5, 11.75]
    assert np.asarray(mx.argpartition(-x, k - 1, axis=1))[0, :k].tolist() == [185, 41, 89, 137, 82, 34, 130, 178]
    assert np.asarray(p.spec(x)).tolist() == [[41, 89, 137, 185, 34, 82, 130, 178], [9, 73, 137, 18, 82, 146, 27, 91]]
    for text in ("[11.5, 11.5, 11.75, ...]", "[185, 41, 89, 137, 82, 34, 130,", "[41, 89, 137, 185, 34, 82, 130, 178]"):
        assert text in p.description
    for case in p.cases(seed=5):
        (rows,) = case.inputs
        got = np.asarray(p.spec(mx.array(rows)))
        assert np.array_equal(got, np.argsort(-rows, axis=1, kind="stable")[:, :k]), case.label
        picked = np.take_along_axis(rows, got, axis=1)
        assert np.array_equal(picked, -np.sort(-np.asarray(mx.topk(mx.array(rows), k, axis=1)), axis=1))
        assert np.array_equal(got[:, 0], np.asarray(mx.argmax(mx.array(rows), axis=1)))
        assert any((row == v).sum() >= 2 for row, top in zip(rows, picked, strict=True) for v in top), case.label  # ties


def _topk_mistake(old: str, new: str) -> str:
    source = solution("topk")
    assert old in source
    return source.replace(old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("v[q] > best) {", "v[q] >= best) {"),  # the last index of a thread's equal values
    ("bool after = v[q] < won_value || (v[q] == won_value && k > won_index);",
     "bool after = v[q] < won_value;"),  # equal values skipped once one of them is taken
    ("simd_min(best == group_best ? index : UINT_MAX)", "simd_max(best == group_best ? index : 0u)"),
])
def test_topk_breaking_ties_otherwise_fails_on_the_visible_test(old, new):
    result = check("topk", _topk_mistake(old, new))
    assert result.status == PuzzleStatus.WRONG, result.report()
    assert result.outcomes[0].status.name == "WRONG"


def test_topk_with_one_set_of_slots_races():
    """The text's step 4: without the second set of slots a fast thread overwrites a slot another
    still reads, unless a second barrier a round separates them (then it is over budget)."""
    one_set = _topk_mistake("uint slot = t % 2;", "uint slot = 0;")
    report = failed("topk", one_set)
    assert "race" in report
    fenced = one_set.replace("    if (j == t) {", "    threadgroup_barrier(mem_flags::mem_threadgroup);\n    if (j == t) {")
    report = over_budget("topk", fenced)
    assert "makes each threadgroup wait at 16 barriers; this puzzle allows 8" in report
    # The advice is top-k's own (two sets of slots), not a reduction's (issue 36).
    assert "one barrier a round is enough: give each round slots of its own" in report
    assert "simd_sum" not in report


def test_topk_written_by_thread_zero_alone_is_over_budget():
    one_writer = _topk_mistake("    if (j == t) {\n        mine = won_index;\n    }",
                               "    if (j == 0) {\n        out[r * K + t] = won_index;\n    }").replace(
        "if (j < K) {\n    out[r * K + j] = mine;\n}", "")
    report = over_budget("topk", one_writer)
    assert "uses 8 global writes per thread; this puzzle needs at most 1" in report


def test_topk_reading_the_row_every_round_is_over_budget():
    again = _topk_mistake("bool after = v[q]", "v[q] = k < N ? x[r * N + k] : -INFINITY;\n        bool after = v[q]")
    report = over_budget("topk", again)
    assert "global reads per thread; this puzzle needs at most 4" in report


def test_topk_waits_at_one_barrier_a_round_and_reads_each_logit_once():
    cost = _cost_on("topk", "four values per thread")
    assert cost.barriers_per_threadgroup == 8
    assert cost.figures().reads_per_element == 1.0
    # Step 5 of the text: threads 0 to K - 1 store a row's K indices side by side, one segment.
    stores = cost.lines[next(k for k in cost.lines if k[1] == _line(solution("topk"), "out[r * K + j] = mine;"))].stores
    assert stores.requests and stores.max_segments == 1


# ----------------------------------------------------------------------------- what the texts claim
def _cost_on(pid: str, label_part: str, source: str | None = None):
    """The cost profile of a run of ``source`` (by default the reference) on the test whose label
    contains ``label_part``."""
    import dataclasses

    from metal_puzzles.checking import run_case
    p = get_puzzle(pid)
    case = next(c for c in p.cases(seed=0) if label_part in c.label)
    options = dataclasses.replace(p.launch_options, cost=True)
    return run_case(p.kernel(source or solution(pid)), case, options, cost=True).cost


def _line(source: str, text: str) -> int:
    """The line of the kernel source (as the simulator numbers them) holding ``text``."""
    return next(n for n, line in enumerate(source.split("\n"), start=1) if text in line)


def test_the_quantized_product_reads_a_rows_words_in_one_segment_and_x_in_eight():
    """V.3's text: lanes taking words lane, lane + 32, ... read a row's words in one 128-byte
    segment per SIMD-group load, and x (8 floats a lane) over 8 segments."""
    source = solution("quantized_matvec")
    cost = _cost_on("quantized_matvec", "two words per lane")
    loads = {line: c.loads for (_, line), c in cost.lines.items() if c.loads.requests}
    assert loads[_line(source, "uint packed = w_q[")].max_segments == 1
    assert loads[_line(source, "xs[i] = x[")].max_segments == 8


@pytest.mark.parametrize(("pid", "test"), [("rms_norm", "four values per thread"),
                                           ("argmax", "four values per thread"),
                                           ("decode_attention", "the longest cache")])
def test_one_barrier_is_enough_for_a_row_reduction(pid, test):
    """RMSNorm's, attention's and argmax's texts: simd_sum (simd_max, simd_min) need no barrier;
    merging the SIMD-groups' partials needs one."""
    assert _cost_on(pid, test).barriers_per_threadgroup == 1


def test_attention_reads_each_key_and_value_once_per_query_head():
    """V.4's text: no score is stored and the keys are read once (for each query head that reads them)."""
    cost = _cost_on("decode_attention", "the longest cache")
    heads, keys, d = 4, 32, 64  # (two KV heads: each key is read by two query heads)
    loaded = cost.kernel.loads.bytes_requested
    assert loaded == 4 * (heads * d * 2 + heads * keys * d * 2)  # q once per SIMD-group, k and v once


def test_rms_norm_reads_each_element_of_x_once():
    """V.1's text: x read once into registers (w once per row, as MLX's kernel does)."""
    cost = _cost_on("rms_norm", "four values per thread")
    source = solution("rms_norm")
    x_loads = cost.lines[next(k for k in cost.lines if k[1] == _line(source, "v[q] = k < N ? x["))].loads
    rows, n = 3, 256
    assert x_loads.bytes_requested == rows * n * 4


# ----------------------------------------------------------------------------- grading
def test_the_grader_reads_each_part_v_kernel_from_the_solved_notebook_and_passes_it(tmp_path):
    """metal-puzzles grade reads kernels by name from a notebook: Part V's solved cells give back the
    reference kernels (source and header), and they pass."""
    import importlib.util
    from pathlib import Path

    from metal_puzzles.grading.extract import extract_kernels
    root = Path(__file__).resolve().parents[3]
    spec = importlib.util.spec_from_file_location("build_notebook", root / "tools" / "build_notebook.py")
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    solved = tmp_path / "solved.ipynb"
    assert builder.main(["--solutions", "-o", str(solved)]) == 0
    found = extract_kernels(solved, [p.kernel_name for p in PART_V]).kernels
    for p in PART_V:
        kernel = found[p.kernel_name]
        assert kernel.source.strip() == solution(p.id).strip()
        assert kernel.header.strip() == p.header.strip() and kernel.input_names == list(p.input_names)
        assert check_source(p, kernel.source, kernel.header).passed


# ----------------------------------------------------------------------------- metal_puzzles.ops
def _normal(rng, *shape):
    import mlx.core as mx
    return mx.array(rng.standard_normal(shape).astype(np.float32))


def test_ops_run_the_part_v_kernels_and_agree_with_mlx():
    """Standard-normal inputs (off any grid): float32's rounding apart, MLX's own operations."""
    import mlx.core as mx

    from metal_puzzles import ops
    rng = np.random.default_rng(11)
    x, w = _normal(rng, 3, 200), _normal(rng, 200)
    np.testing.assert_allclose(np.asarray(ops.rms_norm(x, w)), np.asarray(mx.fast.rms_norm(x, w, 1e-5)),
                               rtol=1e-5, atol=1e-5)
    h = _normal(rng, 2, 5, 32)
    for traditional in (True, False):
        want = mx.fast.rope(h, 32, traditional=traditional, base=10000.0, scale=1.0, offset=9)
        np.testing.assert_allclose(np.asarray(ops.rope(h, 9, traditional)), np.asarray(want), atol=1e-5)
    w_q, scales, biases = mx.quantize(_normal(rng, 7, 256), group_size=64, bits=4)
    v = _normal(rng, 256)
    want = mx.quantized_matmul(v, w_q, scales, biases, transpose=True, group_size=64, bits=4)
    np.testing.assert_allclose(np.asarray(ops.quantized_matvec(v, w_q, scales, biases)), np.asarray(want),
                               rtol=1e-5, atol=1e-4)
    q, k, v = _normal(rng, 6, 64), _normal(rng, 3, 20, 64), _normal(rng, 3, 20, 64)
    want = mx.fast.scaled_dot_product_attention(q[None, :, None, :], k[None], v[None], scale=64**-0.5)
    np.testing.assert_allclose(np.asarray(ops.decode_attention(q, k, v)), np.asarray(want.reshape(6, 64)),
                               rtol=1e-5, atol=1e-5)
    logits = mx.array(np.round(rng.standard_normal((4, 300)) * 2).astype(np.float32))  # many ties
    got = ops.argmax(logits)
    assert got.dtype == mx.uint32
    assert np.asarray(got).tolist() == np.asarray(mx.argmax(logits, axis=1)).tolist()


@pytest.mark.parametrize(("call", "message"), [
    (lambda ops, mx: ops.rms_norm(mx.zeros((2, 300)), mx.zeros(300)), "rows of x must hold 1 to 256 values"),
    (lambda ops, mx: ops.rms_norm(mx.zeros((2, 8)), mx.zeros(9)), "w must be (8,)"),
    (lambda ops, mx: ops.rope(mx.zeros((1, 2, 7)), 0), "the head dimension D must be even"),
    (lambda ops, mx: ops.rope(mx.zeros((1, 2, 8)), -1), "offset must be a non-negative integer"),
    (lambda ops, mx: ops.quantized_matvec(mx.zeros(100), mx.zeros((2, 12), dtype=mx.uint32), mx.zeros((2, 1)),
                                          mx.zeros((2, 1))), "K must be a multiple of the group size 64"),
    (lambda ops, mx: ops.quantized_matvec(mx.zeros(128), mx.zeros((2, 16)), mx.zeros((2, 2)), mx.zeros((2, 2))),
     "w_q must be uint32 of shape (N, 16)"),
    (lambda ops, mx: ops.quantized_matvec(mx.zeros(128), mx.zeros((2, 16), dtype=mx.uint32), mx.zeros((2, 1)),
                                          mx.zeros((2, 2))), "scales must have shape (2, 2)"),
    (lambda ops, mx: ops.argmax(mx.zeros((2, 600))), "rows of x must hold 1 to 512 values"),
    (lambda ops, mx: ops.decode_attention(mx.zeros((3, 32)), mx.zeros((2, 4, 32)), mx.zeros((2, 4, 32))),
     "the 3 query heads must be a multiple of the 2 KV heads"),
    (lambda ops, mx: ops.decode_attention(mx.zeros((2, 32)), mx.zeros((2, 40, 32)), mx.zeros((2, 40, 32))),
     "D must be 1 to 64 and T 1 to 32"),
    (lambda ops, mx: ops.decode_attention(mx.zeros((2, 32)), mx.zeros((2, 4, 32)), mx.zeros((2, 5, 32))),
     "k and v must both be (KV, T, 32)"),
])
def test_ops_say_what_is_wrong_with_their_arguments(call, message):
    import mlx.core as mx

    from metal_puzzles import ops
    with pytest.raises(ValueError, match=re.escape(message)):
        call(ops, mx)


# ----------------------------------------------------------------------------- V.4 decode attention
def test_attention_with_the_wrong_head_grouping_fails_on_the_visible_test():
    """h % KV pairs query head 1 with KV head 1; grouped-query attention gives it KV head 0."""
    wrong = solution("decode_attention").replace("uint kv = h / (H / KV);", "uint kv = h % KV;")
    assert wrong != solution("decode_attention")
    assert "visible test" in failed("decode_attention", wrong).split("wrong output")[0]


def test_attention_without_rescaling_the_values_fails():
    wrong = solution("decode_attention").replace("acc[i] = acc[i] * c + p * v[key + d];",
                                                 "acc[i] = acc[i] + p * v[key + d];")
    assert wrong != solution("decode_attention")
    assert "wrong output" in failed("decode_attention", wrong)


def test_attention_without_the_scale_fails():
    wrong = solution("decode_attention").replace("float s = simd_sum(dot) * scale;", "float s = simd_sum(dot);")
    assert wrong != solution("decode_attention")
    assert "wrong output" in failed("decode_attention", wrong)


# ----------------------------------------------------------------------------- closed-form conditions
CLOSED_FORM = [p.id for p in PART_V if p.condition is not None]


def test_the_attentions_and_the_gated_mlp_judge_with_a_closed_form_condition():
    assert sorted(CLOSED_FORM) == ["decode_attention", "gated_mlp", "prefill_attention"]


@pytest.mark.parametrize("pid", CLOSED_FORM)
def test_a_closed_form_condition_allows_what_autodiff_allows_on_the_visible_test(pid):
    """``Puzzle.condition`` replaces the Jacobian autodiff builds a row an output element: on the
    puzzle's own visible test it gives the same reference and, to rounding, the same allowance (a
    little more where MLX's autodiff flushes a weight below float32's range and counts no partial)."""
    from metal_puzzles.checking.tolerance import compare_with_spec

    p = get_puzzle(pid)
    case = p.visible
    autodiff = compare_with_spec(p.spec, case.inputs, case.output_shape, p.error_model, p.atol, p.rtol)
    closed = compare_with_spec(p.spec, case.inputs, case.output_shape, p.error_model, p.atol, p.rtol,
                               condition=p.condition)
    np.testing.assert_array_equal(closed.expected, autodiff.expected)
    ratio = closed.allowed / autodiff.allowed
    assert ratio.min() > 1 - 1e-2 and ratio.max() < 1.5, (ratio.min(), ratio.max())
