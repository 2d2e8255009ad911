"""Keep benchmarks/bench_sanitizer_cost.py from rotting: its kernels at a hundredth of their loops,
in this process. Only what the runs did is checked, never timing (the benchmark reports timings)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_sanitizer_cost.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_sanitizer_cost", BENCH_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


#: Accesses of all 32 threads at scale 0.01 (40 reads, 60 updates a thread), and the grader's
#: verdict on the Map puzzle (the reads kernels read threadgroup memory Map's budget does not allow).
EXPECTED = {
    "struct reads": (32 * 40 * 64, "over-budget"),
    "scalar reads": (32 * 40, "over-budget"),
    "atomic adds": (32 * 60 + 1, "passed"),  # and thread 0's atomic_store
    "plain updates": (32 * (60 * 2 + 2), "over-budget"),  # and s[t] = 0, float(s[t])
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_kernel_runs_correctly_with_and_without_the_sanitizer(bench, name):
    row = bench.measure(name, scale=0.01)
    accesses, verdict = EXPECTED[name]
    for mode in ("off", "warn"):
        assert row[mode]["ok"], (mode, row[mode]["findings"])
        assert row[mode]["accesses"] == accesses
    assert row["grader_status"] == verdict


def test_the_table_runs_on_this_tree_alone(bench, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["bench", "--before", "none", "--kernels", "atomic adds", "--scale", "0.01"])
    bench.main()
    out = capsys.readouterr().out
    assert "atomic adds    after (this tree)" in out and "WRONG RUN" not in out and "passed" in out
