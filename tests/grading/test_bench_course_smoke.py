"""Keep benchmarks/bench_course.py from rotting: its class is what it says (unique sources, or
the second half copying the first), and it runs end to end on a tiny class. (The benchmark
itself reports figures; nothing here is timed.)"""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_course.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_course", BENCH_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shared_class_copies_the_first_half(tmp_path):
    bench = _bench()
    (tmp_path / "unique").mkdir()
    (tmp_path / "shared").mkdir()
    bench.write_class(tmp_path / "unique", 4, shared=False)
    bench.write_class(tmp_path / "shared", 4, shared=True)
    unique = [p.read_bytes() for p in sorted((tmp_path / "unique").iterdir())]
    shared = [p.read_bytes() for p in sorted((tmp_path / "shared").iterdir())]
    assert len(set(unique)) == 4
    assert shared[2:] == shared[:2] and len(set(shared)) == 2


def test_the_benchmark_runs_on_a_tiny_class(capsys):
    assert _bench().main(["--students", "2", "--shared"]) == 0
    out = capsys.readouterr().out
    assert "2 notebooks x 33 puzzles, half the class sharing answers" in out
    assert "30 shared" in out and "5,000 students" in out
