"""Part V's finale: a tiny transformer prefills a prompt, then decodes and samples, on Part V's
reference kernels, and gives MLX's tokens and logits; a wrong kernel is named with its stage, phase,
layer and token, in the book (``DecodeStepProblem``) and in the grader (``check_kernel_sources``,
``metal-puzzles grade``)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import mlx.core as mx
import nbformat
import numpy as np
import pytest

from metal_puzzles import DecodeStepProblem
from metal_puzzles.checking import CaseStatus, Subject, WiredPuzzle, check_kernel_sources
from metal_puzzles.checking.tolerance import ErrorModel, compare_conditioned, compare_with_spec
from metal_puzzles.grading.extract import extract_kernels
from metal_puzzles.grading.grade import grade_submissions
from metal_puzzles.grading.pool import Limits
from metal_puzzles.puzzles import entry_of, get_puzzle, part_of, solution_source
from metal_puzzles.puzzles.composition.closed_form import (
    attention_condition,
    decode_attention_condition,
    gated_mlp_condition,
    rms_norm_condition,
)
from metal_puzzles.puzzles.composition.decode_model import (
    COOL,
    LOGITS_RTOL,
    LOUD_GATE_SCALE,
    PROMPT_LENGTH,
    PROMPTS,
    STAGE_PUZZLES,
    TIED_TOKENS,
    DecodeKernels,
    KernelOps,
    MlxOps,
    Phase,
    Prompt,
    StageFailed,
    TinyModel,
    generate,
    generate_with_kernels,
    generate_with_mlx,
    prompt_case,
    stage_name,
)
from metal_puzzles.puzzles.part5.decode_step import ENTRY as PART_V_FINALE

FINALE = get_puzzle("decode_step")
VISIBLE, LONG = PROMPTS[0], PROMPTS[1]
STAGES = tuple(STAGE_PUZZLES)


@pytest.fixture(scope="module")
def model() -> TinyModel:
    return TinyModel.from_seed()


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _planted(pid: str, old: str, new: str):
    """The reference kernel of ``pid`` with one planted mistake."""
    p = get_puzzle(pid)
    source = solution_source(p)
    assert old in source, (pid, old)
    return p.kernel(source.replace(old, new))


def _with(**kernels) -> DecodeKernels:
    return dataclasses.replace(DecodeKernels.reference(), **kernels)


#: The halves kernel's puzzle given the interleaved layout's answer.
WRONG_LAYOUT = get_puzzle("rope").kernel(solution_source(get_puzzle("rope_traditional")))


# ----------------------------------------------------------------------------- what the check poses
def _draw_slack(logits: np.ndarray, u: float, temperature: float, top_p: float) -> float:
    """How far (in probability, float64) the draw's target u * P and the top-p cut lie from the
    nearest boundary that would change the token drawn."""
    s = logits / temperature
    p = np.exp(s - s.max())
    p = np.sort(p / p.sum())[::-1]
    above = np.cumsum(p) - p
    inside = above < top_p
    cdf = np.cumsum(np.where(inside, p, 0.0))
    target = u * cdf[-1]
    return float(min(np.min(np.abs(above - top_p)), np.min(np.abs(cdf[inside] - target))))


#: Below this share of the two tied tokens' mass, the rest's vanishes in float32 (a quarter of
#: float32's half unit in the last place of 1): 1 + 1 + rest is 2 in any order of summation.
VANISHING = 2.0**-26


def _tie_alone(logits: np.ndarray, temperature: float, error: float) -> tuple[int, int] | None:
    """The two tokens whose logits tie bit for bit at the top, when every other token's probability
    vanishes beside theirs in float32 even with every logit moved by ten times ``error``: then each
    of the two has probability exactly 1/2, every cumulative sum is exact (0, 1/2, 1) and V.8's
    rules (ties in index order, the mass above below top_p) decide the draw, not rounding."""
    first, second, *rest = np.argsort(-logits, kind="stable")
    if logits[first] != logits[second]:
        return None
    others = np.exp((logits[rest] - logits[first] + 2 * 10 * error) / temperature).sum()
    return (int(first), int(second)) if others < VANISHING else None


def test_the_reference_kernels_sample_each_token_by_far_more_than_their_logits_error(model):
    """Logits off by at most e move each probability by a factor of at most exp(2 e / temperature),
    every cumulative sum by less than that minus 1. On the reference kernels, each draw's target and
    top-p cut lie further than twice that from a boundary even at ten times their logits' error:
    the tokens are the model's, not rounding's (a kernel whose logits err near LOGITS_RTOL could
    flip a draw; its logits are then also the reason the verdict gives). The one exception is the
    cool prompt's exact tie, where the boundary is exact on purpose: there the two tied logits are
    equal bit for bit on the kernels too, and the rest vanish beside them even at ten times the error."""
    reference = DecodeKernels.reference()
    ties = 0
    for prompt in PROMPTS:
        want = generate_with_mlx(model, prompt)
        got, mismatches = generate_with_kernels(model, prompt, reference, want.tokens)
        assert mismatches == [] and got.tokens == want.tokens and len(got.tokens) == prompt.generate
        error = max(float(np.max(np.abs(g - w))) for g, w in zip(got.logits, want.logits, strict=True))
        assert error < LOGITS_RTOL * min(float(np.max(np.abs(w))) for w in want.logits)
        for logits, kernels_logits, u in zip(want.logits, got.logits, prompt.uniforms(), strict=True):
            tie = _tie_alone(logits, prompt.temperature, error)
            if tie is not None:
                assert kernels_logits[tie[0]] == kernels_logits[tie[1]], prompt.describe()
                ties += 1
                continue
            assert _draw_slack(logits, float(u), prompt.temperature, prompt.top_p) > \
                2 * (np.exp(2 * 10 * error / prompt.temperature) - 1), prompt.describe()
    assert ties == 1  # the cool prompt's first draw


class _Gates(MlxOps):
    """The reference model, recording layer 0's largest gate pre-activation."""

    largest = -np.inf

    def gated_mlp(self, x, layer, where):
        if where.layer == 0:
            self.largest = max(self.largest, float(np.asarray(layer.gate.matmul(x)).max()))
        return super().gated_mlp(x, layer, where)


def test_the_model_poses_what_the_naive_sampler_and_silu_get_wrong(model):
    """What V.8 and V.10 test and random weights would never pose (issues 36 and 40): in layer 0,
    gate pre-activations past 100 (exp overflows float32 past 88.7); in the cool prompt, logits /
    temperature past 88.7 (a softmax that does not subtract the maximum overflows), and a first
    draw between two tokens tied bit for bit, each of probability exactly 1/2 in MLX's own float32
    softmax, with top-p exactly 1/2 on the cumulative sum after the first and u above it."""
    gates = _Gates()
    generate(model, VISIBLE, gates)
    assert gates.largest > 100 and LOUD_GATE_SCALE > 1
    logits = generate_with_mlx(model, COOL).logits[0]
    assert float(np.max(logits)) / COOL.temperature > 88.8
    kept, duplicate = TIED_TOKENS
    assert np.argsort(-logits, kind="stable")[:2].tolist() == sorted(TIED_TOKENS) and logits[kept] == logits[duplicate]
    probs = np.asarray(mx.softmax(mx.array(logits.astype(np.float32)) / COOL.temperature))
    assert probs[kept] == probs[duplicate] == 0.5 and np.float32(COOL.top_p) == 0.5
    # With the cut's rule broken both are in the nucleus: u * P then lands in the second's interval,
    # far from the boundary at 1/2 between the two.
    assert 0.6 < COOL.uniforms()[0] < 0.95


def test_the_prompts_are_of_realistic_length_and_one_is_prefilled_past_2048():
    assert all(len(p.prompt) >= PROMPT_LENGTH == 32 for p in PROMPTS)
    assert VISIBLE.cached == 0 and LONG.cached > 2048 and len({(p.temperature, p.top_p) for p in PROMPTS}) == len(PROMPTS)
    assert all(p.generate >= 3 for p in PROMPTS)  # decoded steps after the prefill's token
    assert LONG.t_max % 256 == 0 and LONG.t_max >= len(LONG.tokens) + LONG.generate - 1


class _Scores(MlxOps):
    """The reference model, recording the largest attention score and the phases' positions."""

    def __init__(self) -> None:
        self.largest = 0.0
        self.positions: dict[Phase, set[int]] = {Phase.PREFILL: set(), Phase.DECODE: set()}

    def _score(self, q, k) -> None:
        heads = q.shape[0] // k.shape[0]
        s = np.einsum("hld,htd->hlt", np.asarray(q), np.repeat(np.asarray(k), heads, axis=0)) / np.sqrt(q.shape[-1])
        self.largest = max(self.largest, float(np.abs(s).max()))

    def prefill_attention(self, q, k, v, where):
        self._score(q, k)
        self.positions[Phase.PREFILL] |= set(where.positions)
        return super().prefill_attention(q, k, v, where)

    def decode_attention(self, q, k, v, where):
        self._score(q[:, None, :], k)
        self.positions[Phase.DECODE] |= set(where.positions)
        return super().decode_attention(q, k, v, where)


def test_the_model_poses_scores_in_the_hundreds_and_both_phases_past_2048(model):
    ops = _Scores()
    generate(model, LONG, ops)
    assert ops.largest > 100
    assert min(ops.positions[Phase.PREFILL]) == LONG.cached > 2048
    assert min(ops.positions[Phase.DECODE]) == len(LONG.tokens) and len(ops.positions[Phase.DECODE]) == 3


# ----------------------------------------------------------------------------- the closed forms
def _autodiff_and_closed(spec, inputs, shape, condition, atol=1e-6, rtol=1e-5):
    return (compare_with_spec(spec, inputs, shape, ErrorModel.CONDITIONED, atol, rtol),
            compare_conditioned(spec, inputs, shape, atol, rtol, condition))


def test_the_closed_form_conditions_allow_what_the_autodiff_jacobian_allows():
    """Small cases with a causal offset, grouped heads and a sharp head (scores in the hundreds):
    the allowance from the closed form is the autodiff one's, to rounding, or a little larger
    where MLX's autodiff flushes a weight below float32's range (it counts no partial for it)."""
    rng = np.random.default_rng(5)
    q = rng.standard_normal((4, 5, 8)).astype(np.float32)
    q[0] *= 30
    k, v = (rng.standard_normal((2, 9, 8)).astype(np.float32) for _ in range(2))
    x = (0.02 * rng.standard_normal((3, 128))).astype(np.float32)
    w = (1 + 0.1 * rng.standard_normal(128)).astype(np.float32)
    gate, up = (tuple(np.asarray(a) for a in mx.quantize(mx.array(rng.standard_normal((16, 128)).astype(np.float32)
                                                                   / 11), group_size=64, bits=4)) for _ in range(2))
    mlp_x = rng.standard_normal((3, 128)).astype(np.float32)
    pairs = [_autodiff_and_closed(STAGE_PUZZLES["prefill_attention"].spec, (q, k, v), q.shape, attention_condition),
             _autodiff_and_closed(STAGE_PUZZLES["decode_attention"].spec, (q[:, 0], k, v), (4, 8),
                                  decode_attention_condition),
             _autodiff_and_closed(STAGE_PUZZLES["rms_norm"].spec, (x, w), x.shape, rms_norm_condition),
             _autodiff_and_closed(STAGE_PUZZLES["gated_mlp"].spec, (mlp_x, *gate, *up), (3, 16), gated_mlp_condition)]
    for autodiff, closed in pairs:
        np.testing.assert_array_equal(closed.expected, autodiff.expected)
        ratio = closed.allowed / autodiff.allowed
        assert ratio.min() > 1 - 1e-2 and ratio.max() < 1.5, (ratio.min(), ratio.max())


def test_the_finales_stages_keep_their_puzzles_error_models():
    """The closed forms stand in for the conditioned model only: each stage is compared by the
    error model its own puzzle declares."""
    assert {pid: STAGE_PUZZLES[pid].error_model for pid in ("rms_norm", "prefill_attention", "gated_mlp",
                                                            "decode_attention")} == \
        dict.fromkeys(("rms_norm", "prefill_attention", "gated_mlp", "decode_attention"), ErrorModel.CONDITIONED)


# ----------------------------------------------------------------------------- the entry and the reference
def test_the_finale_is_the_last_entry_of_part_v():
    assert isinstance(FINALE, WiredPuzzle) and FINALE.subject == Subject.MODEL and FINALE.number == "V.12"
    assert part_of(FINALE).entries[-1] is entry_of(FINALE) is PART_V_FINALE
    assert FINALE.kernels == ("rms_norm", "rope", "quantized_matvec", "kv_cache_append", "prefill_attention",
                              "gated_mlp", "decode_attention", "sampling")
    assert [c.label for c in FINALE.cases(0)] == [f"{'visible' if n == 0 else 'hidden'} test: {p.describe()}"
                                                  for n, p in enumerate(PROMPTS)]


def test_each_stage_puzzle_fills_the_field_of_its_kernel_name():
    # DecodeKernels.wire takes the kernels by these names: a stage added to STAGE_PUZZLES must
    # be a field too, and the reference wiring puts each puzzle's kernel in its own field.
    stages = [f.name for f in dataclasses.fields(DecodeKernels) if f.name != "options"]
    assert stages == list(STAGE_PUZZLES) == list(FINALE.kernels)
    reference = DecodeKernels.reference()
    assert all(getattr(reference, name).name == name for name in stages)


def test_the_reference_kernels_generate_as_mlx_does():
    result = FINALE.check_wired(DecodeKernels.reference())
    assert result.passed, result.report()
    assert [o.status for o in result.outcomes] == [CaseStatus.PASS] * len(PROMPTS)
    assert result.report().startswith("Passed: Prefill and Decode on Your Kernels: on your kernels the model samples "
                                      f"MLX's tokens from MLX's logits for all {len(PROMPTS)} prompts.")


# ----------------------------------------------------------------------------- one stage at a time
class _OneStage(KernelOps):
    """One stage on its kernel (compared with its puzzle's spec as the finale does), every other
    stage its puzzle's spec, MLX's operation, on the same inputs: a variant of one kernel tried at
    the cost of that kernel's launches alone."""

    def __init__(self, kernels: DecodeKernels, stage: str) -> None:
        super().__init__(kernels)
        self.stage = stage

    def _stage(self, kernel, where, run, *inputs):
        if kernel == self.stage:
            return super()._stage(kernel, where, run, *inputs)
        return STAGE_PUZZLES[kernel].spec(*inputs)


def _one_stage(model, prompt: Prompt, stage: str, kernel) -> tuple[list[int], list[str]]:
    """The tokens sampled with ``kernel`` alone on its stage, and what the verdict would say of it:
    its first mismatch, or why it did not run (a sanitizer finding)."""
    ops = _OneStage(_with(**{stage: kernel}), stage)
    try:
        got = generate(model, prompt, ops).tokens
    except StageFailed as failed:
        return [], [str(failed)]
    except Exception as exc:  # _FirstMismatch: the verdict's sentence is the first mismatch's
        if not ops.mismatches:
            raise
        assert type(exc).__name__ == "_FirstMismatch"
        got = []
    return got, [m.sentence() for m in ops.mismatches]


VARIANTS = Path(__file__).resolve().parents[2] / "fairness_variants"


@pytest.mark.parametrize("variant", [f for pid in STAGES for f in sorted((VARIANTS / pid).glob("[!w]*.metal"))],
                         ids=lambda f: f"{f.parent.name}/{f.stem}")
def test_every_correct_variant_of_a_stage_passes_the_finales_long_prompt(model, variant):
    """The error model keeps correct kernels passing: each correct variant of tests/fairness_variants
    (another summation order, exp2, fma, a shuffle tree...) in place of its reference, on the prompt
    prefilled past 2048 over thousands of cached keys."""
    pid = variant.parent.name
    tokens, said = _one_stage(model, LONG, pid, get_puzzle(pid).kernel(variant.read_text()))
    assert said == [], said[0]
    assert tokens == generate_with_mlx(model, LONG).tokens


WRONG = [f for pid in STAGES for f in sorted((VARIANTS / pid).glob("wrong_*.metal"))]


def test_the_four_variants_of_issues_36_and_40_are_held_to_the_finale():
    # No wrong variant is left to its own puzzle alone: the four that random weights let through
    # (the cool prompt and the loud gate pose what they get wrong) are among those the finale fails.
    assert {("sampling", "wrong_without_the_maximum"), ("sampling", "wrong_ties_by_the_larger_token"),
            ("sampling", "wrong_cut_at_or_below_top_p"), ("gated_mlp", "wrong_silu_overflows")} <= \
        {(f.parent.name, f.stem) for f in WRONG}


@pytest.mark.parametrize("variant", WRONG, ids=lambda f: f"{f.parent.name}/{f.stem}")
def test_every_wrong_variant_of_a_stage_fails_the_finale_naming_it(model, variant):
    """Each wrong variant fails its own puzzle on every seed (test_fairness.py) and the finale: the
    visible prompt, the long one (a position rounded to half is off past 2048 only) or the cool one
    (a softmax without its maximum overflows, ties and the top-p cut decide its first draw), the
    first mismatch naming the kernel, the phase, layer 0 (or the sampling) and a token."""
    pid = variant.parent.name
    kernel = get_puzzle(pid).kernel(variant.read_text())
    said: list[str] = []
    for prompt in PROMPTS:  # the first prompt that shows it: a check runs every prompt
        said = _one_stage(model, prompt, pid, kernel)[1]
        if said:
            break
    assert said
    phases = "(the prefill|the decode)" + ("" if pid == "sampling" else ", layer 0")
    assert re.match(rf"{re.escape(stage_name(pid))}( is off)? in {phases}, (token \d+|tokens \d+ to \d+)",
                    said[0]), said[0]


# ----------------------------------------------------------------------------- named failures
def test_the_interleaved_rope_kernel_is_named_in_the_prefill_at_token_1():
    result = FINALE.check_prompts(_with(rope=WRONG_LAYOUT), [FINALE.visible])
    assert not result.passed and result.outcomes[0].status == CaseStatus.WRONG
    report = _one_line(result.report())
    # Position 0 turns nothing: the first token's rotation is the identity in either layout.
    assert ("your Rotary Embeddings (halves) kernel (V.2b) is off in the prefill, layer 0, token 1 (queries): "
            "3965 of 4096 values beyond the error its puzzle allows, the largest off by") in report, report


def test_prefill_attention_without_the_causal_mask_fails_in_the_prefill():
    """Every query sees the whole cache: query 0 of the visible prompt attends to keys 1 to 31, its
    future. At the long prompt's offset, a mask that forgets the offset hides the 2,064 keys of its past.
    The verdict adds V.9's own diagnosis: which query attended to which key."""
    for variant, prompt, token, said in (
            ("wrong_without_the_mask", FINALE.visible, 0,
             "query 0 (position 0) of head 0 attended to key "),
            ("wrong_mask_without_the_offset", prompt_case(LONG, "long"), LONG.cached,
             f"query 0 (position {LONG.cached}) of head 0 attended to keys 0 to 0 only, not 0 to {LONG.cached}")):
        kernel = get_puzzle("prefill_attention").kernel((VARIANTS / "prefill_attention" / f"{variant}.metal")
                                                        .read_text())
        report = _one_line(FINALE.check_prompts(_with(prefill_attention=kernel), [prompt]).report())
        assert (f"{stage_name('prefill_attention')} is off in the prefill, layer 0, token {token} (attention):"
                in report), report
        assert said in report, report


def test_decode_attention_without_its_scale_is_named_in_the_decode():
    unscaled = _planted("decode_attention", "float scale = rsqrt(float(D));", "float scale = 1.0f;")
    report = _one_line(FINALE.check_prompts(_with(decode_attention=unscaled), [FINALE.visible]).report())
    assert report.startswith("Failed: Prefill and Decode on Your Kernels: on your kernels the model differs from "
                             "MLX's on 1 of 1 prompt.")
    assert "your Decode Attention kernel (V.4) is off in the decode, layer 0, token 32 (attention):" in report, report


def test_an_attention_kernel_with_the_wrong_heads_is_named_with_its_finding():
    wrong = _planted("decode_attention", "uint kv = h / (H / KV);", "uint kv = h;")
    result = FINALE.check_prompts(_with(decode_attention=wrong), [FINALE.visible])
    assert result.outcomes[0].status == CaseStatus.FINDINGS
    report = _one_line(result.report())
    assert (f"{FINALE.visible.label}, your Decode Attention kernel (V.4) in the decode, layer 0, token 32 (attention): "
            "the sanitizer found a problem in a kernel: out-of-bounds") in report, report


def test_a_kernel_that_does_not_compile_stops_the_check_at_once():
    result = FINALE.check_wired(_with(sampling=get_puzzle("sampling").kernel("out[0] = logits[;")))
    assert [o.status for o in result.outcomes] == [CaseStatus.COMPILE_ERROR]  # the other prompts would repeat it
    report = _one_line(result.report())
    assert f"{stage_name('sampling')} in the prefill, token 31 (sampling): a kernel does not compile." in report
    assert "error: expected an expression, found ';'" in report


def test_a_kernel_that_never_finishes_is_run_once():
    endless = _planted("rms_norm", "uint N = x_shape[1];", "uint N = x_shape[1];\nwhile (N > 0) { N = N + 1; }")
    result = FINALE.check_wired(_with(rms_norm=endless, options={"max_steps": 5_000}))
    assert [o.status for o in result.outcomes] == [CaseStatus.FINDINGS]  # not once a prompt
    report = _one_line(result.report())
    assert "your RMSNorm kernel (V.1) in the prefill, layer 0, tokens 0 to 31 (attention norm)" in report
    assert "step-budget" in report


def test_the_notebooks_problem_checks_the_learners_test_functions(capsys):
    def rope_test(x, offset):  # a notebook test function, called with each launch's inputs
        return WRONG_LAYOUT

    reference = DecodeKernels.reference()
    problem = DecodeStepProblem(**{name: getattr(reference, name) for name in STAGES if name != "rope"},
                                rope=rope_test)
    problem.show()
    shown = _one_line(capsys.readouterr().out)
    assert shown.startswith("# Prefill and Decode on Your Kernels Failed:") and "on 1 of 1 prompt" in shown
    assert "(V.2b) is off in the prefill, layer 0, token 1 (queries)" in shown


# ----------------------------------------------------------------------------- the grader
def _fields(pid: str, source: str | None = None) -> dict:
    p = get_puzzle(pid)
    return {"source": solution_source(p) if source is None else source, "header": p.header,
            "input_names": list(p.input_names), "output_names": list(p.output_names)}


#: The puzzle id of each kernel the finale wires (the halves RoPE is puzzle 'rope').
PIDS = tuple(p.id for p in FINALE.kernel_puzzles)


def _extracted(**changed: str) -> dict[str, dict]:
    """The eight kernels as the grader hands them over, by kernel name (some changed)."""
    kernels = {get_puzzle(pid).kernel_name: _fields(pid) for pid in PIDS}
    for name, source in changed.items():
        kernels[name]["source"] = source
    return kernels


def test_the_grader_wires_the_kernels_it_read_and_names_a_wrong_one():
    wrong = solution_source(get_puzzle("rope_traditional"))
    result = check_kernel_sources(FINALE, _extracted(rope=wrong), seed=3, max_steps=Limits().max_steps)
    assert result.subject == Subject.MODEL and not result.passed
    assert [o.status for o in result.outcomes] == [CaseStatus.WRONG] * len(PROMPTS)
    assert "(V.2b) is off in the prefill, layer 0, token 1 (queries)" in _one_line(result.report())


def test_the_grader_says_which_kernel_is_missing():
    kernels = _extracted()
    del kernels["prefill_attention"]
    result = check_kernel_sources(FINALE, kernels)
    assert not result.passed and "missing kernel(s): prefill_attention" in result.report()


def _notebook(path, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in ["from metal_puzzles import MetalKernel", *cells]]
    nbformat.write(nb, str(path))


def _kernel_cell(pid: str, source: str | None = None) -> str:
    p = get_puzzle(pid)
    source = solution_source(p) if source is None else source
    return (f"def {p.kernel_name}_test(*inputs):\n    source = {source!r}\n"
            f"    return MetalKernel(name={p.kernel_name!r}, input_names={list(p.input_names)!r}, "
            f"output_names={list(p.output_names)!r}, source=source, header={p.header!r})\n")


def test_a_finale_cell_naming_a_missing_kernel_function_costs_no_other_kernel(tmp_path):
    """Without the sampler's cell, the finale's cell stops at a NameError; the seven kernels built
    before it are still read (the grader reads kernels from their own cells, not from the finale's)."""
    pids = PIDS[:-1]
    _notebook(tmp_path / "nb.ipynb", [*(_kernel_cell(pid) for pid in pids), solution_source(FINALE)])
    read = extract_kernels(tmp_path / "nb.ipynb")
    assert read.issues == []
    assert {name: k.source for name, k in read.kernels.items()} == {get_puzzle(pid).kernel_name:
                                                                     solution_source(get_puzzle(pid)) for pid in pids}


def test_a_students_finale_is_graded_from_their_notebook(tmp_path):
    """Three students with the book's finale cell: one with the eight reference kernels passes the
    finale; one whose prefill attention forgot the causal mask fails it, the report naming the stage,
    the phase and layer (their kernel fails its own puzzle too); one without a sampler is told so."""
    finale_cell = solution_source(FINALE)
    _notebook(tmp_path / "good.ipynb", [*(_kernel_cell(pid) for pid in PIDS), finale_cell])
    unmasked = (VARIANTS / "prefill_attention" / "wrong_without_the_mask.metal").read_text()
    _notebook(tmp_path / "unmasked.ipynb", [*(_kernel_cell(pid, unmasked if pid == "prefill_attention" else None)
                                              for pid in PIDS), finale_cell])
    _notebook(tmp_path / "no_sampler.ipynb", [*(_kernel_cell(pid) for pid in PIDS[:-1]), finale_cell])
    run = grade_submissions([tmp_path], limits=Limits(), progress=False, workers=1)
    by_id = {st.id: st for st in run.students}
    good, bad = by_id["good"].puzzles["decode_step"], by_id["unmasked"].puzzles["decode_step"]
    assert good["status"] == "passed", good["report"]
    assert bad["status"] == "wrong"
    assert (f"{stage_name('prefill_attention')} is off in the prefill, layer 0, token 0 (attention):"
            in _one_line(bad["report"]))
    assert by_id["unmasked"].puzzles["prefill_attention"]["status"] == "wrong"
    missing = by_id["no_sampler"].puzzles["decode_step"]
    assert missing["status"] == "missing" and "it wires kernel 'sampling', which was not found" in missing["report"]
