"""Part V's finale: a decode step of a tiny transformer on Part V's reference kernels gives MLX's
logits and next token; a wrong kernel is named with its stage, layer and token, in the book
(``DecodeStepProblem``) and in the grader (``check_kernel_sources``, ``metal-puzzles grade``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import nbformat
import numpy as np
import pytest

from metal_puzzles import DecodeStepProblem
from metal_puzzles.checking import CaseStatus, Subject, WiredPuzzle, check_kernel_sources
from metal_puzzles.grading.extract import extract_kernels
from metal_puzzles.grading.grade import grade_submissions
from metal_puzzles.grading.pool import Limits
from metal_puzzles.puzzles import entry_of, get_puzzle, part_of, solution_source
from metal_puzzles.puzzles.composition.decode_model import (
    LOGITS_RTOL,
    PROMPTS,
    STAGE_PUZZLES,
    DecodeKernels,
    TinyModel,
    decode_with_kernels,
    decode_with_mlx,
    stage_name,
)
from metal_puzzles.puzzles.part5.decode_step import ENTRY as PART_V_FINALE

FINALE = get_puzzle("decode_step")


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


#: The halves kernel's puzzle given the interleaved layout's answer.
WRONG_LAYOUT = get_puzzle("rope").kernel(solution_source(get_puzzle("rope_traditional")))
#: Attention whose scores are not scaled by 1 / sqrt(D).
UNSCALED = _planted("decode_attention", "float scale = rsqrt(float(D));", "float scale = 1.0f;")


def test_the_prompts_next_tokens_are_clear_winners(model):
    """Each prompt's top two logits are far apart next to the allowed error, so the next token
    is decided by the model and not by rounding."""
    for prompt in PROMPTS:
        logits, _ = decode_with_mlx(model, prompt)
        top = np.sort(np.asarray(logits))[::-1]
        assert top[0] - top[1] > 100 * LOGITS_RTOL * np.max(np.abs(top))


def test_the_finale_is_the_last_entry_of_part_v():
    assert isinstance(FINALE, WiredPuzzle) and FINALE.subject == Subject.MODEL
    assert part_of(FINALE).entries[-1] is entry_of(FINALE) is PART_V_FINALE
    assert FINALE.kernels == ("rms_norm", "rope", "quantized_matvec", "decode_attention", "argmax")
    assert [c.label for c in FINALE.cases(0)] == [f"{'visible' if n == 0 else 'hidden'} test: {p.describe()}"
                                                  for n, p in enumerate(PROMPTS)]


def test_each_stage_puzzle_fills_the_field_of_its_kernel_name():
    # DecodeKernels.wire takes the kernels by these names: a stage added to STAGE_PUZZLES must
    # be a field too, and the reference wiring puts each puzzle's kernel in its own field.
    stages = [f.name for f in dataclasses.fields(DecodeKernels) if f.name != "options"]
    assert stages == list(STAGE_PUZZLES) == list(FINALE.kernels)
    reference = DecodeKernels.reference()
    assert all(getattr(reference, name).name == name for name in stages)


def test_the_reference_kernels_decode_as_mlx_does():
    result = FINALE.check_wired(DecodeKernels.reference())
    assert result.passed, result.report()
    assert [o.status for o in result.outcomes] == [CaseStatus.PASS] * len(PROMPTS)
    assert result.report().startswith("Passed: A Decode Step on Your Kernels: on your kernels the model gives "
                                      f"MLX's next token and logits for all {len(PROMPTS)} prompts.")


def test_every_stage_of_the_reference_is_within_its_puzzles_error_model(model):
    logits, token, mismatches = decode_with_kernels(model, PROMPTS[1], DecodeKernels.reference())
    assert mismatches == []
    want_logits, want = decode_with_mlx(model, PROMPTS[1])
    assert token == want
    np.testing.assert_allclose(np.asarray(logits), np.asarray(want_logits), atol=1e-5)


VARIANTS = Path(__file__).resolve().parents[2] / "fairness_variants"
STAGES = ("rms_norm", "rope", "quantized_matvec", "decode_attention", "argmax")


@pytest.mark.parametrize("variant", [f for pid in STAGES for f in sorted((VARIANTS / pid).glob("[!w]*.metal"))],
                         ids=lambda f: f"{f.parent.name}/{f.stem}")
def test_every_correct_variant_of_a_stage_passes_the_finale(variant):
    """The error model keeps correct kernels passing: each correct variant of tests/fairness_variants
    (another summation order, exp2, fma, a shuffle tree...) in place of its reference."""
    pid = variant.parent.name
    kernels = dataclasses.replace(DecodeKernels.reference(), **{pid: get_puzzle(pid).kernel(variant.read_text())})
    result = FINALE.check_wired(kernels)
    assert result.passed, result.report()


#: The wrong variants a model's decode shows: all but argmax's two (they break ties, which random
#: logits do not have).
SHOWN_WRONG = [f for pid in STAGES[:-1] for f in sorted((VARIANTS / pid).glob("wrong_*.metal"))]


@pytest.mark.parametrize("variant", SHOWN_WRONG, ids=lambda f: f"{f.parent.name}/{f.stem}")
def test_every_wrong_variant_of_a_stage_fails_the_finale_naming_it(variant):
    """Each wrong variant fails its own puzzle on every seed (test_fairness.py) and the finale: the
    visible prompt, or the long one (a position rounded to half is off past 2048 only)."""
    pid = variant.parent.name
    kernels = dataclasses.replace(DecodeKernels.reference(), **{pid: get_puzzle(pid).kernel(variant.read_text())})
    result = FINALE.check_prompts(kernels, [FINALE.visible, FINALE.cases(0)[-1]])
    assert not result.passed
    assert f"{stage_name(pid)} is off at layer 0, token " in _one_line(result.report()), result.report()


def test_the_interleaved_rope_kernel_is_named_as_the_failing_stage():
    kernels = dataclasses.replace(DecodeKernels.reference(), rope=WRONG_LAYOUT)
    result = FINALE.check_prompts(kernels, [FINALE.visible])
    assert not result.passed and result.outcomes[0].status == CaseStatus.WRONG
    report = _one_line(result.report())
    # Position 0 turns nothing: the first token's rotation is the identity in either layout.
    assert ("your Rotary Embeddings (halves) kernel (V.2b) is off at layer 0, token 1 (queries): 128 of 128 values "
            "beyond the error its puzzle allows, the largest off by") in report, report


def test_attention_without_its_scale_is_named_with_its_layer():
    kernels = dataclasses.replace(DecodeKernels.reference(), decode_attention=UNSCALED)
    report = _one_line(FINALE.check_prompts(kernels, [FINALE.visible]).report())
    assert report.startswith("Failed: A Decode Step on Your Kernels: on your kernels the model differs from MLX's "
                             "on 1 of 1 prompt.")
    # One cached token: its softmax weight is 1 whatever the scale, so token 0 is right.
    assert "your Decode Attention kernel (V.4) is off at layer 0, token 1:" in report, report


def test_an_attention_kernel_with_the_wrong_heads_is_named_with_its_finding():
    wrong = _planted("decode_attention", "uint kv = h / (H / KV);", "uint kv = h;")
    kernels = dataclasses.replace(DecodeKernels.reference(), decode_attention=wrong)
    result = FINALE.check_prompts(kernels, [FINALE.visible])
    assert result.outcomes[0].status == CaseStatus.FINDINGS
    report = _one_line(result.report())
    assert ("visible test: prompt [5, 17, 42], your Decode Attention kernel (V.4) at layer 0, token 0: the sanitizer "
            "found a problem in a kernel: out-of-bounds") in report, report


def test_a_kernel_that_does_not_compile_stops_the_check_at_once():
    kernels = dataclasses.replace(DecodeKernels.reference(), argmax=get_puzzle("argmax").kernel("out[0] = x[;"))
    result = FINALE.check_wired(kernels)
    assert [o.status for o in result.outcomes] == [CaseStatus.COMPILE_ERROR]  # the other prompts would repeat it
    report = _one_line(result.report())
    assert "your Argmax Sampling kernel (V.5) at token 2 (next token): a kernel does not compile." in report
    assert "error: expected an expression, found ';'" in report


def test_a_kernel_that_never_finishes_is_run_once():
    endless = _planted("rms_norm", "uint N = x_shape[1];", "uint N = x_shape[1];\nwhile (N > 0) { N = N + 1; }")
    kernels = dataclasses.replace(DecodeKernels.reference(), rms_norm=endless, options={"max_steps": 5_000})
    result = FINALE.check_wired(kernels)
    assert [o.status for o in result.outcomes] == [CaseStatus.FINDINGS]  # not once a prompt
    report = _one_line(result.report())
    assert "your RMSNorm kernel (V.1) at layer 0, token 0 (attention norm)" in report and "step-budget" in report


def test_the_notebooks_problem_checks_the_learners_test_functions(capsys):
    def rope_test(x, offset):  # a notebook test function, called with each launch's inputs
        return WRONG_LAYOUT

    reference = DecodeKernels.reference()
    problem = DecodeStepProblem(rms_norm=reference.rms_norm, rope=rope_test,
                                quantized_matvec=reference.quantized_matvec,
                                decode_attention=reference.decode_attention, argmax=reference.argmax)
    problem.show()
    shown = _one_line(capsys.readouterr().out)
    assert shown.startswith("# A Decode Step on Your Kernels Failed:") and "on 1 of 1 prompt" in shown
    assert "(V.2b) is off at layer 0, token 1 (queries)" in shown


# ----------------------------------------------------------------------------- the grader
def _fields(pid: str, source: str | None = None) -> dict:
    p = get_puzzle(pid)
    return {"source": solution_source(p) if source is None else source, "header": p.header,
            "input_names": list(p.input_names), "output_names": list(p.output_names)}


def _extracted(**changed: str) -> dict[str, dict]:
    """The five kernels as the grader hands them over, by kernel name (some changed)."""
    kernels = {get_puzzle(pid).kernel_name: _fields(pid) for pid in
               ("rms_norm", "rope", "quantized_matvec", "decode_attention", "argmax")}
    for name, source in changed.items():
        kernels[name]["source"] = source
    return kernels


def test_the_grader_wires_the_kernels_it_read_and_names_a_wrong_one():
    wrong = solution_source(get_puzzle("rope_traditional"))
    result = check_kernel_sources(FINALE, _extracted(rope=wrong), seed=3, max_steps=Limits().max_steps)
    assert result.subject == Subject.MODEL and not result.passed
    assert [o.status for o in result.outcomes] == [CaseStatus.WRONG] * len(PROMPTS)
    assert "(V.2b) is off at layer 0, token 1 (queries)" in _one_line(result.report())


def test_the_grader_says_which_kernel_is_missing():
    kernels = _extracted()
    del kernels["decode_attention"]
    result = check_kernel_sources(FINALE, kernels)
    assert not result.passed and "missing kernel(s): decode_attention" in result.report()


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
    """Without V.5's cell, the finale's cell stops at a NameError; the four kernels built before it
    are still read (the grader reads kernels from their own cells, not from the finale's problem)."""
    pids = ("rms_norm", "rope", "quantized_matvec", "decode_attention")
    _notebook(tmp_path / "nb.ipynb", [*(_kernel_cell(pid) for pid in pids), solution_source(FINALE)])
    read = extract_kernels(tmp_path / "nb.ipynb")
    assert read.issues == []
    assert {name: k.source for name, k in read.kernels.items()} == {pid: solution_source(get_puzzle(pid))
                                                                     for pid in pids}


def test_a_students_finale_is_graded_from_their_notebook(tmp_path):
    """Three students with the book's finale cell: one with the five reference kernels passes the
    finale; one whose attention forgot its scale fails it, the report naming the stage and layer
    (their attention kernel fails its own puzzle too); one without an argmax kernel is told so."""
    finale_cell = solution_source(FINALE)
    pids = ("rms_norm", "rope", "quantized_matvec", "decode_attention", "argmax")
    _notebook(tmp_path / "good.ipynb", [*(_kernel_cell(pid) for pid in pids), finale_cell])
    unscaled = solution_source(get_puzzle("decode_attention")).replace("rsqrt(float(D))", "1.0f")
    _notebook(tmp_path / "unscaled.ipynb", [*(_kernel_cell(pid, unscaled if pid == "decode_attention" else None)
                                              for pid in pids), finale_cell])
    _notebook(tmp_path / "no_argmax.ipynb", [*(_kernel_cell(pid) for pid in pids[:-1]), finale_cell])
    run = grade_submissions([tmp_path], limits=Limits(), progress=False,
                            workers=1)
    by_id = {st.id: st for st in run.students}
    good, bad = by_id["good"].puzzles["decode_step"], by_id["unscaled"].puzzles["decode_step"]
    assert good["status"] == "passed", good["report"]
    assert bad["status"] == "wrong"
    assert "your Decode Attention kernel (V.4) is off at layer 0, token 1:" in _one_line(bad["report"])
    assert by_id["unscaled"].puzzles["decode_attention"]["status"] == "wrong"
    missing = by_id["no_argmax"].puzzles["decode_step"]
    assert missing["status"] == "missing" and "it wires kernel 'argmax', which was not found" in missing["report"]
