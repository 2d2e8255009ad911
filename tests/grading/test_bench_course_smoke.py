"""Keep benchmarks/bench_course.py from rotting: its class is what it says (unique sources, or
the second half copying the first), and it runs end to end on a tiny class. (The benchmark
itself reports figures; nothing here is timed.)"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from metal_puzzles.puzzles import PUZZLES

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
    assert f"2 notebooks x {len(PUZZLES)} puzzles, half the class sharing answers" in out
    # The second student's notebook is the first's: every one of its kernel checks is shared.
    m = re.search(r"(\d+) kernel checks, (\d+) unique, (\d+) run, (\d+) shared", out)
    assert m is not None, out
    asked, unique, run, shared = map(int, m.groups())
    assert asked == 2 * unique and run == unique == shared > 30
    assert "5,000 students" in out
