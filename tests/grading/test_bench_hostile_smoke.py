"""Keep benchmarks/bench_hostile.py from rotting: its notebooks are what it says, its memory
sampler sees this process. (The benchmark itself grades and reports figures.)"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from metal_puzzles.checking import WiredPuzzle
from metal_puzzles.grading.extract import extract_from_bytes
from metal_puzzles.puzzles import PUZZLES

BENCH_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_hostile.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_hostile", BENCH_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_exponential_notebook_has_every_kernel_statically() -> None:
    bench = _bench()
    text, shapes = bench.exponential_notebook()
    nb = extract_from_bytes(text.encode(), "exponential.ipynb")
    assert nb.readable and not nb.issues
    # One kernel per distinct kernel name of the catalogue's (non-gradient) puzzles.
    distinct = {p.kernel_name for p in PUZZLES if not isinstance(p, WiredPuzzle)}
    assert len(nb.kernels) == len(shapes) == len(distinct)
    assert all(k.source for k in nb.kernels.values())
    assert set(shapes) == {name for name, _, _ in bench.SHAPES}


def test_tree_memory_sees_this_process() -> None:
    bench = _bench()
    with bench.TreeMemory(period=0.01) as mem:
        pass  # however short the block, the exit's own sample measures this process
    assert mem.peak_rss_sum > 0 and len(mem.hwm) >= 1
