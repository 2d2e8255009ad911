"""Grading is fair under any seed: the same class graded with two different hidden-test seeds
gets the same grades. The class: a student who solved the whole book (reference solutions, the
conditioned puzzles included), one who solved half and broke the rest, and one whose Layer Norm
takes the one-pass variance (a numerical mistake every seed must catch)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import nbformat

from metal_puzzles.puzzles import get_puzzle

from .conftest import grade, kernel_cell, write_nb

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_grading.py"
ONE_PASS = (Path(__file__).resolve().parents[1] / "fairness_variants" / "layer_norm"
            / "wrong_one_pass_variance.metal")


def _bench_grading():
    spec = importlib.util.spec_from_file_location("bench_grading", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_two_seeds_give_the_same_grades(tmp_path, capsys) -> None:
    bench = _bench_grading()
    d = tmp_path / "class"
    d.mkdir()
    nbformat.write(bench.notebook(0, 1), str(d / "solved.ipynb"))
    nbformat.write(bench.notebook(2, 2), str(d / "half.ipynb"))
    layer_norm = get_puzzle("layer_norm")
    write_nb(d / "one_pass.ipynb", [kernel_cell("layer_norm", ONE_PASS.read_text(), layer_norm.header)])
    runs = [grade(capsys, [d], tmp_path / f"out{seed}", "--seed", seed) for seed in ("11", "4242424242")]
    assert [r.status for r in runs] == [0, 0], [r.stderr for r in runs]
    first, second = (r.rows() for r in runs)
    drop = {"report"}  # the report file names are the same; their seeds differ
    assert [{k: v for k, v in row.items() if k not in drop} for row in first.values()] == \
        [{k: v for k, v in row.items() if k not in drop} for row in second.values()]
    solved = runs[0].student("solved")["puzzles"]
    # (Correct everywhere; the occupancy puzzle's answer is a header constant this notebook leaves as given.)
    assert all(s["correct"] for s in solved.values()), [pid for pid, s in solved.items() if not s["correct"]]
    assert first["one_pass"]["layer_norm"] == "0"
