"""benchmarks/cuda_lessons.py without a GPU: the committed plan matches the book and the cost
model, the large-launch recipes fit the kernels (the simulator runs each lesson at the recipes'
smallest sizes, every kernel agreeing with the plan and with the taught kernel), and the rankings
and the report are right. The GPU run itself is recorded by the lead on an H200."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from metal_puzzles.host.nvrtc import nvrtc_available

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "cuda_lessons.py"
SMALLEST = 1 << 30  # divides every recipe's size down to its floor


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("cuda_lessons", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_the_committed_plan_is_the_book_and_the_cost_model_of_today(script):
    committed = json.loads(script.PLAN.read_text())
    assert script.build_plan() == committed, (
        "benchmarks/cuda_lessons_plan.json is stale: run 'python benchmarks/cuda_lessons.py plan' and commit it")
    lessons = [lesson["lesson"] for lesson in committed["lessons"]]
    assert lessons == ["III.1", "III.2", "III.3", "III.4", "III.5", "III.6", "III.7"]
    for lesson in committed["lessons"]:
        roles = [v["role"] for v in lesson["variants"]]
        assert roles.count("slow") == 1 and roles.count("taught") == 1, lesson["lesson"]
        assert all(not v["findings"] for v in lesson["variants"])


def test_every_lesson_runs_at_the_recipes_smallest_sizes_on_the_stand_in(script, tmp_path, capsys):
    assert "cupy" not in sys.modules
    code = script.main(["--out", str(tmp_path), "--device", "simulator", "--scale", str(SMALLEST),
                        "--repeats", "1", "--in-process"])
    assert code == 0
    report = json.loads((tmp_path / "cuda_lessons.json").read_text())
    assert len(report["lessons"]) == 7
    for lesson in report["lessons"]:
        for v in lesson["variants"]:
            assert "error" not in v, (lesson["lesson"], v["label"], v.get("traceback"))
            assert v["visible"]["bitwise"], (lesson["lesson"], v["label"])  # the simulator against its own plan
            if v["role"] != "taught":
                assert v["large"]["vs_taught"]["close"], (lesson["lesson"], v["label"])
        assert set(lesson["ranking"]) >= {"model_order", "gpu_order", "headline_agrees", "order_agrees"}
    table = (tmp_path / "cuda_lessons.md").read_text()
    assert "| III.7 | simdgroup matrices (taught) |" in table and "**ranking**" in table
    assert report["summary"] in capsys.readouterr().out
    assert "cupy" not in sys.modules


def test_a_lesson_runs_in_a_worker_process(script, tmp_path):
    results = script.run_lessons(script.read_plan(), "simulator", lessons=["III.2"], repeats=1, scale=SMALLEST,
                                 timeout=300)
    assert [r["lesson"] for r in results] == ["III.2"] and "error" not in results[0]
    assert [v["visible"]["bitwise"] for v in results[0]["variants"]] == [True, True]


def _timed(label, role, model, gpu):
    return {"label": label, "role": role, "model_kernel_seconds": model, "large": {"median_seconds": gpu}}


def test_rankings_compare_the_slow_and_the_taught_kernel_and_every_pair_the_model_separates(script):
    agree = script.rankings({"variants": [_timed("slow", "slow", 3.0, 30.0), _timed("mid", "variant", 2.0, 20.0),
                                          _timed("taught", "taught", 1.0, 10.0)]})
    assert agree["headline_agrees"] and agree["order_agrees"]
    assert agree["model_slow_over_taught"] == 3.0 and agree["gpu_slow_over_taught"] == 3.0
    # The GPU finds the slow kernel faster: the headline disagrees.
    flipped = script.rankings({"variants": [_timed("slow", "slow", 3.0, 5.0), _timed("taught", "taught", 1.0, 10.0)]})
    assert flipped["headline_agrees"] is False and flipped["order_agrees"] is False
    # A tie in the model (within 2%) orders nothing: the GPU may put those two either way.
    tie = script.rankings({"variants": [_timed("slow", "slow", 3.0, 30.0), _timed("a", "variant", 1.0, 9.0),
                                        _timed("taught", "taught", 1.01, 10.0)]})
    assert tie["order_agrees"] and tie["headline_agrees"]


def test_a_plan_that_is_not_one_is_a_located_error(script, tmp_path, capsys):
    bad = tmp_path / "plan.json"
    bad.write_text('{"lessons": [{"lesson": "III.1", "recipe": "nope"}]}')
    with pytest.raises(ValueError, match="plan.json: not a cuda_lessons plan"):
        script.read_plan(bad)
    assert script.main(["--out", str(tmp_path), "--plan", str(bad), "--device", "simulator"]) == 2
    assert "regenerate it" in capsys.readouterr().err


@pytest.mark.skipif(not nvrtc_available(), reason="needs NVRTC (the 'test' extra's nvidia-cuda-nvrtc wheel)")
def test_every_lesson_kernel_translates_and_nvrtc_compiles_it(script):
    """What the GPU run compiles, compiled here for sm_75 (no GPU needed), at both launch sizes."""
    from differential.cuda_launch import NVRTC_OPTIONS
    from metal_puzzles.host.nvrtc import compile_to_ptx

    for lesson in script.read_plan()["lessons"]:
        visible = [script.decode_array(a) for a in lesson["visible"]["inputs"]]
        for v in lesson["variants"]:
            tr = script.translate_variant(lesson, v, visible)
            tr.check_launch(v["grid"], v["threadgroup"])
            compile_to_ptx(tr.unit, options=[o for o in NVRTC_OPTIONS if not o.startswith("--std")])
            large, _, grid, tg = script.RECIPES[lesson["recipe"]](np.random.default_rng(0), SMALLEST, v["threadgroup"])
            assert script.translate_variant(lesson, v, large).unit == tr.unit, (lesson["lesson"], v["label"])
            tr.check_launch(grid, tg)
