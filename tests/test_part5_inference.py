"""Part V's inference puzzles beyond the decode step (issue 40): the KV-cache append, sampling
and prefill attention. Each puzzle's text is a list of claims; each claim is a test here (the
reference passing and the template failing are tests/test_part5.py's, for every Part V puzzle;
the seed sweeps are tests/test_fairness.py's, over tests/fairness_variants/)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from metal_puzzles.checking import PuzzleStatus, check_source
from metal_puzzles.puzzles import get_puzzle, part5, solution_source

VARIANTS = Path(__file__).parent / "fairness_variants"


def variant(pid: str, name: str) -> str:
    return (VARIANTS / pid / f"{name}.metal").read_text()


# ----------------------------------------------------------------------------- V.9 KV-cache append
KV = get_puzzle("kv_cache_append")


def test_the_kv_cache_append_comes_before_the_finale():
    ids = [p.id for p in part5.PART_V.puzzles]
    assert ids.index("kv_cache_append") == len(ids) - 2 and ids[-1] == "decode_step"


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
