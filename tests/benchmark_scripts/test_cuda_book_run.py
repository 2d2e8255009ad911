"""benchmarks/cuda_book_run.py without a GPU: how it judges the GPU's output against the simulator's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "cuda_book_run.py"


@pytest.fixture(scope="module")
def book_run():
    spec = importlib.util.spec_from_file_location("cuda_book_run", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def _rope_decode_step():
    """rope's hidden 'one decode step in the thousands' (position 7581 for seed 0), its simulator output
    and the comparison check() makes."""
    from metal_puzzles.checking.case_runner import launched_case, run_case
    from metal_puzzles.puzzles import PUZZLES, solution_kernel

    rope = next(p for p in PUZZLES if p.id == "rope")
    case = next(c for c in rope.cases(0) if "one decode step" in c.label)
    assert int(case.inputs[1]) == 7581
    kernel = solution_kernel(rope)
    case = launched_case(kernel, case, rope.launch_options)
    simulated = np.asarray(run_case(kernel, case, rope.launch_options).outputs[0])
    return rope, case, simulated


def test_rope_at_position_7581_is_judged_by_the_puzzles_error_model_as_check_judges_it(book_run):
    """On the H200 (first run), rope at position 7581 came back 2.0e-3 from the simulator: the float32
    angle ``pos * inv_freq`` rounded another way. The old comparison (rope's atol/rtol alone) called
    that a disagreement; the puzzle's own model, with its 96-ulp angle Allowance, accepts it, as
    ``check()`` accepts the GPU's output. A wrong value (a position off by one) stays outside."""
    rope, case, simulated = _rope_decode_step()
    comparison = book_run.puzzle_comparison(rope, case)
    i = np.unravel_index(np.argmax(comparison.allowed), simulated.shape)
    assert comparison.allowed[i] > 0.02  # the angle allowance at 7581, far above atol/rtol
    gpu = simulated.copy()
    gpu[i] += np.float32(2.0e-3)  # what the H200 gave, at that element
    assert not np.allclose(gpu, simulated, atol=rope.atol, rtol=rope.rtol)  # the old, fixed comparison
    judged = book_run.compare(gpu, simulated, comparison)
    assert judged["agree"] and not judged["bit_exact"]
    assert judged["agreement"] == book_run.Agreement.WITHIN_MODEL.value
    assert 0 < judged["worst_share"] < 1 and judged["simulator_passes"]
    assert abs(judged["max_abs_diff"] - 2.0e-3) < 1e-4

    exact = book_run.compare(simulated.copy(), simulated, comparison)
    assert exact["agreement"] == book_run.Agreement.BIT_EXACT.value and exact["max_abs_diff"] == 0.0

    # The same decode step one position further on: every pair rotated by one more position's angle.
    import mlx.core as mx

    from metal_puzzles.puzzles.part5.rope import rope_spec

    shifted = np.asarray(rope_spec(mx.array(case.inputs[0]), int(case.inputs[1]) + 1))
    wrong = book_run.compare(shifted, simulated, comparison)
    assert not wrong["agree"] and wrong["agreement"] == book_run.Agreement.OUTSIDE_MODEL.value
    assert wrong["elements_outside_model"] > 0 and wrong["worst_share"] > 1


def test_integer_outputs_agree_only_bit_for_bit(book_run):
    from metal_puzzles.checking.tolerance import ErrorModel, compare_with_spec

    want = np.array([7, 1 << 30, -3], dtype=np.int32)
    comparison = compare_with_spec(lambda x: x, (want,), want.shape, ErrorModel.EXACT_SUMS, 0.0, 0.0)
    assert book_run.compare(want.copy(), want, comparison)["agreement"] == book_run.Agreement.BIT_EXACT.value
    off = book_run.compare(want + np.int32(1), want, comparison)
    assert not off["agree"] and off["agreement"] == book_run.Agreement.OUTSIDE_MODEL.value


def test_two_nans_agree_bit_for_bit_whatever_their_payloads(book_run):
    a = np.array([np.nan, 1.5], dtype=np.float32)
    b = a.copy()
    b.view(np.uint32)[0] = 0x7FC00001
    assert book_run.same_bits(a, b)
    assert not book_run.same_bits(a, np.array([np.nan, -1.5], dtype=np.float32))
    c = np.array([0.0], dtype=np.float16)
    assert not book_run.same_bits(c, -c)  # -0.0 is other bits
