"""Part V's inference puzzles beyond the decode step (issue 40): the KV-cache append, sampling
and prefill attention. Each puzzle's text is a list of claims; each claim is a test here (the
reference passing and the template failing are tests/puzzles/part5/test_part5.py's, for every Part V puzzle;
the seed sweeps are tests/checking/test_fairness.py's, over tests/fairness_variants/)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from metal_puzzles.checking import PuzzleStatus, check_source
from metal_puzzles.checking.launch import launch
from metal_puzzles.msl import SanitizerError
from metal_puzzles.puzzles import get_puzzle, part5, solution_source

VARIANTS = Path(__file__).resolve().parents[2] / "fairness_variants"


def variant(pid: str, name: str) -> str:
    return (VARIANTS / pid / f"{name}.metal").read_text()


# ----------------------------------------------------------------------------- V.7 KV-cache append
KV = get_puzzle("kv_cache_append")


def test_the_kv_cache_append_follows_top_k_and_the_part_still_closes_with_the_pipeline_and_finale():
    ids = [p.id for p in part5.PART_V.puzzles]
    assert ids.index("kv_cache_append") == ids.index("topk") + 1
    assert ids[-2:] == ["radix_pass", "decode_step"]


def test_the_kv_cache_spec_is_mlxs_slice_update_in_mlxs_layout():
    assert "cache[0, :, :, start:start + L, :] = k" in KV.spec_source
    k, v, offset, t_max = KV.visible.inputs
    b, kv, length, d = k.shape
    assert KV.visible.output_shape == (2, b, kv, int(t_max), d)  # keys then values, (B, KV, T_max, D) each
    assert KV.visible.grid == (k.size, 1, 1)  # one thread per element of the step


def test_the_hidden_tests_pose_what_the_text_says():
    """Decode thousands of positions in, a prefill of two sequences from 0, a random chunk, a
    cache filled to its last slot; several heads in every test; values in [-64, 64)."""
    for seed in (0, 7, 2**31 - 1):
        cases = KV.cases(seed)[1:]
        offsets = [int(c.inputs[2]) for c in cases]
        lengths = [c.inputs[0].shape[2] for c in cases]
        t_maxes = [int(c.inputs[3]) for c in cases]
        assert max(offsets) >= 3000 and 0 in offsets
        assert any(o + n == t for o, n, t in zip(offsets, lengths, t_maxes, strict=True))
        assert any(c.inputs[0].shape[0] == 2 for c in cases)
        for c in cases:
            k = c.inputs[0]
            assert k.shape[0] * k.shape[1] > 1
            assert np.abs(k).max() > 32 and np.abs(k).max() <= 64
        assert all(o + n <= t for o, n, t in zip(offsets, lengths, t_maxes, strict=True))


def _outcome(source: str, label: str = "visible test"):
    result = check_source(KV, source)
    return result, next(o for o in result.outcomes if o.case.label.startswith(label))


def test_forgetting_the_offset_writes_over_the_tokens_already_there():
    result, o = _outcome(variant("kv_cache_append", "wrong_without_offset"))
    assert result.status == PuzzleStatus.WRONG
    yours, expected = np.asarray(o.yours), np.asarray(o.expected)
    offset = int(KV.visible.inputs[2])
    assert (expected[..., :offset, :] == 0).all() and (yours[..., :offset, :] != 0).any()


def test_writing_one_slot_early_fails_every_test():
    result = check_source(KV, variant("kv_cache_append", "wrong_offset_one_early"))
    assert result.status == PuzzleStatus.WRONG
    assert all(not o.ok for o in result.outcomes)


def test_the_steps_head_stride_puts_every_head_but_the_first_at_the_wrong_place():
    result, o = _outcome(variant("kv_cache_append", "wrong_head_stride_of_the_step"))
    assert result.status == PuzzleStatus.WRONG
    yours, expected = np.asarray(o.yours), np.asarray(o.expected)
    # Head 0's keys and values are where they belong; head 1's are not.
    np.testing.assert_array_equal(yours[:, 0, 0], expected[:, 0, 0])
    assert (yours[:, 0, 1] != expected[:, 0, 1]).any()
    # On the decode test (thousands of positions in) too, not only on the visible test.
    deep = next(o for o in result.outcomes if "thousands" in o.case.label)
    assert not deep.ok


def test_the_reference_writes_nothing_but_the_steps_slots():
    _, o = _outcome(solution_source(KV), "hidden test")
    yours = np.asarray(o.yours)
    k, v, offset, _ = o.case.inputs
    n = k.shape[2]
    written = np.zeros(yours.shape, dtype=bool)
    written[..., int(offset):int(offset) + n, :] = True
    assert (yours[~written] == 0).all()
    np.testing.assert_array_equal(yours[0, :, :, int(offset):int(offset) + n], k)
    np.testing.assert_array_equal(yours[1, :, :, int(offset):int(offset) + n], v)


def test_reading_the_step_twice_is_over_budget():
    twice = solution_source(KV).replace("cache[heads * T * D + to] = v[i];",
                                        "cache[heads * T * D + to] = v[i] + 0.0f * k[i];")
    assert twice != solution_source(KV)
    result = check_source(KV, twice)
    assert result.status == PuzzleStatus.OVER_BUDGET, result.report()
    assert "uses 5 global reads per thread; this puzzle needs at most 4" in " ".join(result.report().split())


# ----------------------------------------------------------------------------- V.8 top-p sampling
SAMPLING = get_puzzle("sampling")


def _visible_tokens(source: str) -> np.ndarray:
    """The tokens a kernel draws on the visible test (one launch: the full check runs every test)."""
    import mlx.core as mx

    c = SAMPLING.visible
    out = launch(SAMPLING.kernel(source), c.inputs, c.output_shape, c.grid, c.threadgroup, output_dtype=mx.uint32)
    return np.asarray(out)


def _spec_tokens() -> np.ndarray:
    import mlx.core as mx

    return np.asarray(SAMPLING.spec(*[mx.array(x) for x in SAMPLING.visible.inputs]))


def test_the_sampler_follows_the_append_and_its_spec_is_written_from_mlx_ops():
    ids = [p.id for p in part5.PART_V.puzzles]
    assert ids.index("sampling") == ids.index("kv_cache_append") + 1 and ids[-1] == "decode_step"
    for op in ("mx.softmax(logits / temperature", "mx.argsort(-logits", "mx.cumsum(p, axis=-1, inclusive=False)",
               "above < top_p"):
        assert op in SAMPLING.spec_source


def test_the_visible_row_draws_what_the_text_says():
    """Row 0: four tied 300s at 3, 7, 11, 19 (0.25 each), top_p = 0.5: 3 and 7 are in, 11 is out
    (its mass above is exactly 0.5); u = 0.75 draws token 7."""
    import mlx.core as mx

    logits, u, temperature, top_p = SAMPLING.visible.inputs
    assert np.flatnonzero(logits[0] == logits[0].max()).tolist() == [3, 7, 11, 19]
    assert float(top_p) == 0.5 and float(u[0]) == 0.75 and float(temperature) == 0.5
    probs = np.asarray(mx.softmax(mx.array(logits[0]) / float(temperature)))
    assert (probs[[3, 7, 11, 19]] == 0.25).all()  # exactly: the others' exp underflows to 0
    assert int(np.asarray(SAMPLING.spec(*[mx.array(x) for x in SAMPLING.visible.inputs]))[0]) == 7
    assert logits.max() >= 300 and np.abs(logits).min() >= 100  # logits in the hundreds


def test_the_reference_draws_mlxs_tokens_on_the_visible_test():
    assert _visible_tokens(solution_source(SAMPLING)).tolist() == _spec_tokens().tolist() == [7, 11]


def test_a_softmax_without_the_maximum_overflows_at_these_logits():
    # exp(600) is infinite in float32: every comparison with NaN fails, no token comes out right.
    with np.errstate(over="ignore"):
        assert np.exp(np.float32(600.0)) == np.inf
    # Infinite probabilities make an infinite total: every comparison with inf - inf (NaN) is false,
    # and no thread of either row draws a token; the sanitizer says the output is never written.
    with pytest.raises(SanitizerError, match="2 of the 2 elements of output 'out' are never written"):
        _visible_tokens(variant("sampling", "wrong_without_the_maximum"))


def test_breaking_ties_by_the_larger_token_draws_another_token():
    assert _visible_tokens(variant("sampling", "wrong_ties_by_the_larger_token"))[0] != 7


def test_a_cut_at_or_below_top_p_keeps_the_token_on_the_boundary():
    # Token 11's mass above is exactly 0.5: kept, the nucleus is 0.75 and u = 0.75 draws 11.
    assert _visible_tokens(variant("sampling", "wrong_cut_at_or_below_top_p"))[0] == 11
    tie = next(c for c in SAMPLING.cases(5) if "exactly on a cumulative sum" in c.label)
    assert float(tie.inputs[3]) == 0.75


def test_forgetting_the_temperature_draws_another_token():
    assert (_visible_tokens(variant("sampling", "wrong_temperature_forgotten")) != _spec_tokens()).any()


def test_the_hidden_tests_pose_the_ranges_the_text_names():
    for seed in (0, 1, 2**63 - 1):
        cases = SAMPLING.cases(seed)[1:]
        lows = [float(c.inputs[0].min()) for c in cases]
        highs = [float(c.inputs[0].max()) for c in cases]
        assert -356 <= min(lows) < -300 and max(highs) == 400  # the text's range
        assert any(float(c.inputs[3]) == 1.0 for c in cases)
        assert max(c.inputs[0].shape[1] for c in cases) == 256
        for c in cases:
            assert (c.inputs[1] >= 0).all() and (c.inputs[1] < 1).all()


def test_the_random_tests_are_decided_by_a_wide_margin():
    """No random row's token depends on the order of summation: moving the cut or the draw by
    1e-4 either way draws the same token (in float64), and the reference draws MLX's token."""
    from metal_puzzles.puzzles.part5.sampling import MARGIN, _decided

    assert MARGIN >= 1e-4
    for c in SAMPLING.cases(11)[1:-1]:
        logits, u, temperature, top_p = c.inputs
        assert all(_decided(logits[r], float(u[r]), float(temperature), float(top_p)) for r in range(len(u)))
    # The tie test is the designed edge: a row the margin rule leaves undecided, exact in float32.
    tie = SAMPLING.cases(11)[-1]
    logits, u, temperature, top_p = tie.inputs
    assert not all(_decided(logits[r], float(u[r]), float(temperature), float(top_p)) for r in range(len(u)))


def test_the_sampler_within_budget_sorts_with_one_barrier_a_step():
    from metal_puzzles.puzzles.part5.sampling import BARRIERS, SORT_STEPS

    assert SORT_STEPS == 36 and BARRIERS == 40
    # One more barrier (after the scan's read of the slots) is over budget.
    extra = solution_source(SAMPLING).replace("// 4. The nucleus", "threadgroup_barrier(mem_flags::mem_threadgroup);\n// 4. The nucleus")
    result = check_source(SAMPLING, extra)
    assert result.status == PuzzleStatus.OVER_BUDGET, result.report()
    assert "41 barriers" in " ".join(result.report().split())
