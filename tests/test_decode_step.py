"""The start of Part V's finale: a decode step of a tiny transformer on Part V's reference kernels
gives MLX's logits and next token, and a wrong kernel is named with its stage, layer and token."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from metal_puzzles.puzzles import get_puzzle, solution_source
from metal_puzzles.puzzles.decode_step import (
    LOGITS_RTOL,
    PROMPTS,
    DecodeKernels,
    TinyModel,
    check_decode_step,
    decode_with_kernels,
    decode_with_mlx,
)


@pytest.fixture(scope="module")
def model() -> TinyModel:
    return TinyModel.from_seed(0)


def test_the_prompts_next_tokens_are_clear_winners(model):
    """Each prompt's top two logits are far apart next to the allowed error, so the next token
    is decided by the model and not by rounding."""
    for prompt in PROMPTS:
        logits, _ = decode_with_mlx(model, prompt)
        top = np.sort(np.asarray(logits))[::-1]
        assert top[0] - top[1] > 100 * LOGITS_RTOL * np.max(np.abs(top))


def test_the_reference_kernels_decode_as_mlx_does():
    verdict = check_decode_step(DecodeKernels.reference())
    assert verdict.passed, verdict.report()
    assert len(verdict.lines) == 1 + len(PROMPTS)


def test_every_stage_of_the_reference_matches_mlx(model):
    logits, token, mismatches = decode_with_kernels(model, PROMPTS[1], DecodeKernels.reference())
    assert mismatches == []
    want_logits, want = decode_with_mlx(model, PROMPTS[1])
    assert token == want
    np.testing.assert_allclose(np.asarray(logits), np.asarray(want_logits), atol=1e-5)


def test_the_interleaved_rope_kernel_is_named_as_the_failing_stage():
    interleaved = get_puzzle("rope_traditional").kernel(solution_source(get_puzzle("rope_traditional")))
    kernels = dataclasses.replace(DecodeKernels.reference(), rope=interleaved)
    verdict = check_decode_step(kernels, prompts=PROMPTS[:1])
    assert not verdict.passed
    report = " ".join(verdict.report().split())
    # Position 0 turns nothing: the first token's rotation is the identity in either layout.
    assert "the rotary kernel is off at layer 0, token 1 (queries)" in report


def test_an_attention_kernel_with_the_wrong_heads_is_named():
    p = get_puzzle("decode_attention")
    wrong = p.kernel(solution_source(p).replace("uint kv = h / (H / KV);", "uint kv = h;"))
    kernels = dataclasses.replace(DecodeKernels.reference(), decode_attention=wrong)
    report = check_decode_step(kernels, prompts=PROMPTS[:1]).report()
    assert "Failed" in report and "the kernels did not run" in report and "out-of-bounds" in report
