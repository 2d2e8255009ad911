"""Keep benchmarks/bench_simulator.py from rotting: run its workloads at small sizes.

Only correctness is checked here, never timing (the benchmark itself reports timings).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_simulator.py"


@pytest.fixture(scope="module")
def bench():
    """The benchmark script loaded as a module (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location("bench_simulator", BENCH_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


@pytest.mark.parametrize("n", [16, 20])
def test_tiled_matmul_matches_numpy(bench, n):
    # 16 is whole tiles; 20 is not, so the bounds guards and zero padding of the tiles matter.
    a, b = bench.matmul_inputs(n)
    c = bench.run_matmul_ours(a, b)
    assert c.shape == (n, n) and c.dtype == np.float32
    assert bench.matmul_error(a, b, c) is None


def test_matmul_check_rejects_a_wrong_answer(bench):
    a, b = bench.matmul_inputs(16)
    c = (a @ b).astype(np.float32)
    c[3, 5] += 0.5
    assert "max |c - a@b|" in bench.matmul_error(a, b, c)


def test_cost_profiled_runs_give_the_same_results(bench):
    a, b = bench.matmul_inputs(16)
    assert bench.matmul_error(a, b, bench.run_matmul_ours(a, b, cost=True)) is None
    m = np.linspace(-3, 3, 300, dtype=np.float32)
    assert bench.map_error(m, bench.run_map_ours(m, cost=True)) is None


def test_map_matches_numpy_with_partial_threadgroup(bench):
    a = np.linspace(-3, 3, 300, dtype=np.float32)  # 300 = one full and one partial group of 256
    out = bench.run_map_ours(a)
    assert bench.map_error(a, out) is None
    assert bench.map_error(a, out + 1) is not None


def test_time_ours_reports_first_and_steady_calls(bench):
    calls = []
    timing = bench.time_ours(lambda: calls.append(1) or np.zeros(1), repeats=2)
    assert len(calls) == 3
    assert timing.first >= 0 and timing.steady >= 0


def test_memory_worker_reports_positive_peak(bench):
    m = bench.measure_memory(1 << 12)
    assert m.error is None
    assert m.threads == 4096 and m.tracemalloc_peak > 0


def test_numba_extrapolation_is_cubic(bench):
    assert bench.numba_extrapolation(2.0, 64, 256) == pytest.approx(128.0)


def test_table_aligns_columns(bench):
    text = bench.render_table([bench.Row("a", "1 ms", "2 s", "2,000x", ">= 1000x faster", "yes")])
    header, rule, row = text.splitlines()
    assert header.split() == ["name", "ours", "numba", "ratio", "target", "met?"]
    assert row.index("1 ms") == header.index("ours")


def test_grading_benchmark_runs_on_a_small_class(capsys):
    """The grading benchmark builds a class from the catalogue and grades it (no timing asserted)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_grading.py"
    spec = importlib.util.spec_from_file_location("bench_grading", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--students", "3", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "graded 3 notebooks" in out and "distinct totals" in out


def test_shader_library_benchmark_runs_a_small_shader(capsys):
    """The compile_shader benchmark compiles and checks a small synthetic shader (no timing asserted)."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_shader_library.py"
    spec = importlib.util.spec_from_file_location("bench_shader_library", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--ops", "3", "--kernels", "18", "--helpers", "4"]) == 0
    out = capsys.readouterr().out
    assert "18 kernels" in out and "each further kernel" in out and "WRONG" not in out


def test_part_five_check_benchmark_builds_the_books_problem_and_checks_it():
    """bench_part5_checks makes each problem as the book's cell does: the reference passes, the
    template fails (no timing asserted)."""
    from metal_puzzles.puzzles import entry_of, get_puzzle

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_part5_checks.py"
    spec = importlib.util.spec_from_file_location("bench_part5_checks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    entry = entry_of(get_puzzle("radix_pass"))
    assert module.timed(module.problem(entry, entry.solution_source()), 1)[2]
    assert not module.timed(module.problem(entry, entry.puzzle.template), 1)[2]
