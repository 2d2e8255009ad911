"""benchmarks/cuda_learner_session.py, the README's Colab recipe run where a GPU is: here, with no
GPU, it still runs the learner's cell and records that MLX has no CUDA (its GPU lines absent)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "cuda_learner_session.py"


def test_the_session_runs_the_learners_cell_and_records_what_it_printed(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--puzzle", "map"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "cuda_learner_session.json").read_text())
    assert "simulator" in record["backends"] and record["cuda_available"] is False
    (row,) = record["puzzles"]
    assert row["puzzle"] == "map" and row["passed"] is True
    assert "Passed" in row["printed"] and row["gpu_check"] is None and row["measured_us"] is None
