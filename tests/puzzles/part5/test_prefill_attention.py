"""V.9, prefill attention: the claims of its text as tests (the spec and its mask, the tiles read
once per query tile, the ranges the hidden tests pose, half precision, the picture of the online
softmax), its place in Part V, its launcher, and the verdicts on the planted mistakes: a query
that sees a future key (or misses the cache) is named, with the key. The seed sweep of the
reference and of tests/fairness_variants/prefill_attention is tests/test_fairness.py's."""

from __future__ import annotations

import re
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

from metal_puzzles.checking import (
    CaseStatus,
    PuzzleStatus,
    check_source,
    compare_with_spec,
    run_case,
)
from metal_puzzles.diagrams.online_softmax import (
    SCORES,
    TILE,
    VALUES,
    merge_steps,
    online_softmax_svg,
    softmax_output,
)
from metal_puzzles.msl import Counter
from metal_puzzles.notebook.images import figure_file, figure_svg
from metal_puzzles.puzzles import entry_of, get_puzzle, part5, solution_source
from metal_puzzles.puzzles.composition import launchers
from metal_puzzles.puzzles.part5 import prefill_attention as prefill

PUZZLE = get_puzzle("prefill_attention")
VARIANTS = Path(__file__).resolve().parents[2] / "fairness_variants" / "prefill_attention"
REFERENCE = solution_source(PUZZLE)


def variant(name: str) -> str:
    return (VARIANTS / f"{name}.metal").read_text()


def attention64(q: np.ndarray, k: np.ndarray, v: np.ndarray, seen=None) -> np.ndarray:
    """The text's formula in float64: query i of head h sees keys 0 .. seen(offset, i)."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    heads, queries, d = q.shape
    group = heads // k.shape[0]
    offset = k.shape[1] - queries
    out = np.zeros_like(q)
    for h in range(heads):
        for i in range(queries):
            last = offset + i if seen is None else seen(offset, i)
            s = k[h // group, :last + 1] @ q[h, i] / np.sqrt(d)
            p = np.exp(s - s.max())
            out[h, i] = p @ v[h // group, :last + 1] / p.sum()
    return out


# ----------------------------------------------------------------------------- its place and contract
def test_prefill_attention_is_v9_after_the_sampler_and_before_the_pipeline_and_the_finale():
    ids = [p.id for p in part5.PART_V.puzzles]
    assert ids.index("prefill_attention") == ids.index("sampling") + 1
    assert ids[-2:] == ["radix_pass", "decode_step"]
    assert PUZZLE.number == "V.9" and PUZZLE.title == "Prefill Attention"


def test_the_kernel_contract_the_finale_wires():
    assert (PUZZLE.id, PUZZLE.kernel_name, PUZZLE.input_names) == ("prefill_attention", "prefill_attention",
                                                                   ("q", "k", "v"))
    c = PUZZLE.visible
    assert c.inputs[0].shape == c.output_shape == (4, 6, 32) and c.inputs[1].shape == c.inputs[2].shape == (2, 10, 32)


# ----------------------------------------------------------------------------- the spec and its mask
def test_the_spec_is_mlxs_attention_with_the_causal_mask_at_the_cache_offset():
    assert "mx.fast.scaled_dot_product_attention(" in PUZZLE.spec_source
    assert 'mask="causal"' in PUZZLE.spec_source and "mx.arange(T - L, T)[:, None] >= mx.arange(T)[None]" in \
        PUZZLE.spec_source
    # The spec in float64, as the verdict evaluates it, is the text's formula: within 1% of the error
    # allowed (MLX keeps the softmax of its attention in float32 even for float64 inputs: 4e-8 off).
    for case in PUZZLE.cases(3):
        wide = [mx.array(x.astype(np.float64), dtype=mx.float64) for x in case.inputs]
        got = np.asarray(PUZZLE.spec(*wide), dtype=np.float64)
        c = compare_with_spec(PUZZLE.spec, case.inputs, case.output_shape, PUZZLE.error_model, PUZZLE.atol,
                              PUZZLE.rtol, PUZZLE.allowance, case.output_dtype)
        assert np.max(np.abs(got - attention64(*case.inputs)) / c.allowed) < 0.01, case.label


def test_mlxs_causal_string_means_the_same_mask_when_the_prompt_follows_a_cache():
    """The text: MLX's "causal" is aligned to the last key (query i sees keys 0 .. T - L + i), the
    mask mlx-lm builds for a cache with an offset."""
    rng = np.random.default_rng(0)
    q, k, v = (mx.array(rng.standard_normal(s).astype(np.float32)) for s in ((1, 2, 3, 32), (1, 2, 11, 32),
                                                                             (1, 2, 11, 32)))
    explicit = mx.arange(8, 11)[:, None] >= mx.arange(11)[None]
    by_string = mx.fast.scaled_dot_product_attention(q, k, v, scale=32**-0.5, mask="causal")
    by_array = mx.fast.scaled_dot_product_attention(q, k, v, scale=32**-0.5, mask=explicit)
    np.testing.assert_allclose(np.asarray(by_string), np.asarray(by_array), rtol=1e-6, atol=1e-6)
    # Not the mask aligned to the first key (query i sees keys 0 .. i): that one differs.
    top_left = mx.arange(3)[:, None] >= mx.arange(11)[None]
    other = mx.fast.scaled_dot_product_attention(q, k, v, scale=32**-0.5, mask=top_left)
    assert not np.allclose(np.asarray(by_string), np.asarray(other), atol=1e-3)


# ----------------------------------------------------------------------------- the hidden tests' ranges
def _scores(case) -> np.ndarray:
    q, k, _ = (x.astype(np.float64) for x in case.inputs)
    group = q.shape[0] // k.shape[0]
    return np.einsum("hld,htd->hlt", q, np.repeat(k, group, axis=0)) / np.sqrt(q.shape[2])


def test_the_hidden_tests_pose_what_the_text_says_on_every_seed():
    for seed in (0, 1, 2, 99, 2**63 - 1):
        cases = PUZZLE.cases(seed)[1:]
        shapes = [(c.inputs[0].shape, c.inputs[1].shape) for c in cases]
        offsets = [k[1] - q[1] for q, k in shapes]
        assert max(k[1] for _, k in shapes) == prefill.LONGEST == 520 and max(offsets) == 512
        assert 0 in offsets and any(0 < o < 512 for o in offsets)  # L == T and L < T
        assert {q[0] // k[0] for q, k in shapes} == {1, 2, 4, 8}  # H / KV
        assert {q[2] for q, _ in shapes} == {32, 64}
        assert any(q[1] > 4 * prefill.BQ for q, _ in shapes)  # queries in several tiles
        half = [c for c in cases if c.output_dtype == "float16"]
        assert len(half) == 1 and all(x.dtype == np.float16 for x in half[0].inputs)
        scores = [_scores(c) for c in cases]
        assert max(float(s.min()) for s in scores) > 88.7  # exp(s) overflows float32
        assert min(float(s.max()) for s in scores) < -103.3  # exp(s) is 0 in float32
        assert float(_scores(half[0]).min()) > 150  # the half test's scores are near 200


def test_a_check_takes_seconds_not_minutes():
    """The text's long cache (offset 512) stays cheap in the simulator: the reference's run of
    the longest test takes well under the puzzle step limit and a second or two of CPU."""
    import time

    case = next(c for c in PUZZLE.cases(0) if c.inputs[1].shape[1] == prefill.LONGEST)
    start = time.process_time()
    run = run_case(PUZZLE.kernel(REFERENCE), case, PUZZLE.launch_options)
    assert time.process_time() - start < 10
    assert run.stopped is None


# ----------------------------------------------------------------------------- the reference and its budget
def test_the_reference_passes_and_reads_each_key_once_per_query_tile():
    result = check_source(PUZZLE, REFERENCE)
    assert result.status == PuzzleStatus.PASSED, result.report()
    # Summed over one threadgroup's threads: its queries' dimensions, then each key and value of
    # the tiles up to the query tile's last position, once (not once per query).
    case = PUZZLE.visible
    run = run_case(PUZZLE.kernel(REFERENCE), case, PUZZLE.launch_options)
    reads = np.asarray(run.counts.of(Counter.GLOBAL_READS)).reshape(case.grid[2], case.grid[1], prefill.TG)
    heads, queries, d = case.inputs[0].shape
    t_keys = case.inputs[1].shape[1]
    for tile in range(case.grid[1]):
        mine = min(prefill.BQ, queries - tile * prefill.BQ)
        last = t_keys - queries + tile * prefill.BQ + mine - 1  # its last query's position
        keys_loaded = min(t_keys, (last // prefill.BK + 1) * prefill.BK)
        assert (reads[:, tile].sum(axis=1) == mine * d + 2 * keys_loaded * d).all()


def test_the_budget_is_the_reference_on_the_longest_cache():
    assert PUZZLE.budget.global_reads == prefill.PER_LANE + prefill.TILES * prefill.READS_PER_TILE == 546
    assert PUZZLE.budget.max_barriers == 2 * prefill.TILES == 34
    text = " ".join(PUZZLE.description.split())
    assert "at most 546 global reads per thread" in text and "two barriers per tile (34)" in text


#: Every query reads its keys and values from device memory itself (no tiles): V.4's plan, one query at a time.
PER_QUERY = """\
uint tile = threadgroup_position_in_grid.y;
uint h = threadgroup_position_in_grid.z;
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
uint L = q_shape[1];
uint D = q_shape[2];
uint KV = k_shape[0];
uint T = k_shape[1];
uint kv = h / (q_shape[0] / KV);
uint i = tile * BQ + sg;
if (i < L) {
    uint pos = T - L + i;
    float m = -INFINITY;
    float l = 0.0f;
    float acc[PER_LANE] = {0.0f, 0.0f};
    for (uint t = 0; t <= pos; t++) {
        float dot = 0.0f;
        for (uint r = 0; r < D / 32; r++) {
            dot += q[(h * L + i) * D + lane + 32 * r] * k[(kv * T + t) * D + lane + 32 * r];
        }
        float s = simd_sum(dot) * rsqrt(float(D));
        float m_new = max(m, s);
        float c = exp(m - m_new);
        float p = exp(s - m_new);
        l = l * c + p;
        for (uint r = 0; r < D / 32; r++) {
            acc[r] = acc[r] * c + p * v[(kv * T + t) * D + lane + 32 * r];
        }
        m = m_new;
    }
    for (uint r = 0; r < D / 32; r++) {
        out[(h * L + i) * D + lane + 32 * r] = acc[r] / l;
    }
}
"""


def test_reading_keys_once_per_query_is_correct_but_over_budget_with_advice():
    result = check_source(PUZZLE, PER_QUERY)
    assert result.correct, result.report()
    assert result.status == PuzzleStatus.OVER_BUDGET
    report = " ".join(result.report().split())
    assert re.search(r"uses \d{4} global reads per thread; this puzzle needs at most 546", report), report
    assert "load each tile of keys and values into threadgroup memory once" in report


def test_a_barrier_for_every_element_loaded_is_over_the_barrier_budget():
    # Every thread loads BK * D / TG elements of a tile, the same count: a barrier after each one is
    # met by all, but the threadgroup waits 16 times a tile instead of twice.
    line = "        v_tile[j][d] = inside ? float(v[(kv * T + t) * D + d]) : 0.0f;\n"
    wrong = REFERENCE.replace(line, line + "        threadgroup_barrier(mem_flags::mem_threadgroup);\n")
    assert wrong != REFERENCE
    result = check_source(PUZZLE, wrong)
    assert result.correct and result.status == PuzzleStatus.OVER_BUDGET, result.report()
    assert "this puzzle allows 34: load a whole tile of keys and values, then one barrier" in \
        " ".join(result.report().split())


# ----------------------------------------------------------------------------- the planted mistakes, named
def _visible_failure(source: str) -> str:
    result = check_source(PUZZLE, source)
    assert not result.correct
    first = result.outcomes[0]
    assert first.case.label == "visible test" and first.status == CaseStatus.WRONG
    return " ".join(result.report().split())


def test_a_kernel_without_the_mask_is_told_which_query_saw_which_future_key():
    report = _visible_failure(variant("wrong_without_the_mask"))
    assert ("Likely cause: query 0 (position 4) of head 0 attended to key 9, in its future (it may see keys 0 to 4): "
            "the causal mask is missing. Query i is at position offset + i, where offset = T - L = 4.") in report


def test_a_mask_one_key_late_is_told_the_future_key():
    report = _visible_failure(variant("wrong_mask_one_key_late"))
    assert "query 0 (position 4) of head 0 attended to key 5, in its future" in report
    assert "the causal mask lets it see 1 key too many" in report


def test_a_mask_at_i_instead_of_the_offset_is_told_the_cache_it_left_out():
    report = _visible_failure(variant("wrong_mask_without_the_offset"))
    assert ("query 0 (position 4) of head 0 attended to keys 0 to 0 only, not 0 to 4: the mask is at i instead of "
            "offset + i, so it leaves out the cache before the prompt (offset = T - L = 4)") in report


def test_the_diagnosis_reads_the_long_cache_and_names_nothing_it_cannot_see():
    case = next(c for c in PUZZLE.cases(0) if c.inputs[1].shape[1] == prefill.LONGEST)
    q, k, v = case.inputs
    # Query 3 (position 515) of the long cache sees one key of its future, the rest are right.
    future = attention64(q, k, v, seen=lambda offset, i: offset + i + (i == 3)).astype(np.float32)
    assert prefill.diagnose(case, future).startswith(
        "query 3 (position 515) of head 0 attended to key 516, in its future (it may see keys 0 to 515)")
    assert prefill.diagnose(case, attention64(q, k, v).astype(np.float32)) is None  # right: nothing to say
    # A missing 1/sqrt(D) is no prefix of the keys: the general likely cause speaks instead.
    unscaled = attention64(q * np.sqrt(q.shape[2]), k, v).astype(np.float32)
    assert prefill.diagnose(case, unscaled) is None


def test_a_softmax_without_its_maximum_writes_nan_at_the_loud_scores():
    result = check_source(PUZZLE, variant("wrong_without_the_maximum"))
    assert result.status == PuzzleStatus.WRONG
    bad = [o for o in result.outcomes if not o.ok]
    assert bad and all("scores near" in o.case.label for o in bad)
    assert all(np.isnan(o.yours).all() for o in bad)
    assert "exp() of a value in the hundreds is infinite in float32" in " ".join(result.report().split())


# ----------------------------------------------------------------------------- half precision
def test_mlx_in_half_passes_the_half_test_and_scores_kept_in_half_fail_it():
    """MLX's attention in half (float32 inside, half stored) is within the error model; a kernel
    that keeps its scores in half is not: a score near 200 in half is good to 1/16."""
    (case,) = [c for c in PUZZLE.cases(5) if c.output_dtype == "float16"]
    c = compare_with_spec(PUZZLE.spec, case.inputs, case.output_shape, PUZZLE.error_model, PUZZLE.atol,
                          PUZZLE.rtol, PUZZLE.allowance, case.output_dtype)
    as_float = [mx.array(x).astype(mx.float32) for x in case.inputs]
    mlx_half = np.asarray(PUZZLE.spec(*as_float).astype(mx.float16))
    assert mlx_half.dtype == np.float16 and not c.mismatch(mlx_half).any()
    run = run_case(PUZZLE.kernel(variant("wrong_half_scores")), case, PUZZLE.launch_options)
    assert c.mismatch(np.asarray(run.outputs[0])).any()
    reference = run_case(PUZZLE.kernel(REFERENCE), case, PUZZLE.launch_options)
    assert not c.mismatch(np.asarray(reference.outputs[0])).any()


# ----------------------------------------------------------------------------- the launcher
@pytest.mark.parametrize("dtype", [mx.float32, mx.float16])
def test_the_launcher_runs_the_reference_on_a_prompt_after_a_cache(dtype):
    rng = np.random.default_rng(1)
    q = mx.array(rng.uniform(-1, 1, (4, 9, 64)).astype(np.float32)).astype(dtype)
    k, v = (mx.array(rng.uniform(-1, 1, (2, 40, 64)).astype(np.float32)).astype(dtype) for _ in range(2))
    out = launchers.run_prefill_attention(PUZZLE.kernel(REFERENCE), q, k, v)
    assert out.shape == q.shape and out.dtype == dtype
    want = attention64(*(np.asarray(x.astype(mx.float32)) for x in (q, k, v)))
    np.testing.assert_allclose(np.asarray(out.astype(mx.float32)), want, atol=1e-5 if dtype == mx.float32 else 2e-3)


@pytest.mark.parametrize(("shapes", "says"), [
    (((3, 4, 32), (2, 8, 32), (2, 8, 32)), "3 query heads of q (3, 4, 32) must be a multiple of the 2 KV heads"),
    (((2, 9, 32), (2, 8, 32), (2, 8, 32)), "holds 8 keys, fewer than the 9 queries"),
    (((2, 4, 48), (2, 8, 48), (2, 8, 48)), "the head dimension D must be 32 or 64"),
    (((2, 4, 32), (2, 8, 32), (2, 9, 32)), "k, v of one shape (KV, T, D)"),
])
def test_the_launcher_names_the_shape_it_cannot_take(shapes, says):
    q, k, v = (mx.zeros(s) for s in shapes)
    with pytest.raises(ValueError, match=re.escape(says)):
        launchers.run_prefill_attention(PUZZLE.kernel(REFERENCE), q, k, v)


# ----------------------------------------------------------------------------- the picture
def test_the_merge_picture_ends_at_the_softmax_over_all_keys():
    steps = merge_steps()
    assert len(steps) == 3 and [s.first for s in steps] == [0, TILE, 2 * TILE]
    assert steps[0].c == 0.0  # exp(-inf): nothing before the first tile
    assert steps[1].m > steps[0].m and steps[1].c < 1  # the maximum rose: the earlier numbers shrink
    assert steps[2].m == steps[1].m and steps[2].c == 1.0  # it did not: c = 1
    assert steps[-1].acc / steps[-1].l == pytest.approx(softmax_output(), rel=1e-12)
    s, v = np.asarray(SCORES), np.asarray(VALUES)
    assert softmax_output() == pytest.approx(float(np.exp(s - s.max()) @ v / np.exp(s - s.max()).sum()), rel=1e-12)
    svg = online_softmax_svg()
    assert f"= {steps[-1].acc / steps[-1].l:.3g}: the softmax over all 10 keys at once gives {softmax_output():.3g}" \
        in svg
    assert "c = exp(2.5 − 4) = 0.223" in svg


def test_the_merge_picture_is_in_the_book_and_in_imgs():
    entry = entry_of(PUZZLE)
    name = figure_file(entry)
    assert name == "part5/online_softmax.svg"
    svg = figure_svg(entry)
    assert (Path(__file__).resolve().parents[3] / "imgs" / name).read_text(encoding="utf-8") == svg
    import nbformat

    book = nbformat.read(Path(__file__).resolve().parents[3] / "puzzles.ipynb", as_version=4)
    (cell,) = [c for c in book.cells if c.cell_type == "markdown" and c.source.startswith("## Puzzle V.9: Prefill")]
    attachment = name.rsplit("/", 1)[-1]
    assert f"(attachment:{attachment})" in cell.source
    import base64

    assert base64.b64decode(cell.attachments[attachment]["image/svg+xml"]).decode("utf-8") == svg


def test_the_merge_picture_is_legible_at_900_and_1400_px():
    """Drawn 1:1 it is narrower than a 900 px screen's notebook column (about 760 px after the
    margins the picture is fitted to): its smallest text stays above 8 px there, and at 1400 px
    it is drawn at its own size."""
    svg = online_softmax_svg()
    width = int(re.search(r"width='(\d+)'", svg).group(1))
    sizes = [int(s) for s in re.findall(r"font-size='(\d+)'", svg)]
    assert width <= 900
    assert min(sizes) * min(1.0, 760 / width) >= 8 * 1.4  # 13 px drawn at 0.89: 11.6 px
