"""The MSL kernel variants of benchmarks/gpu_evidence/ compute what their NumPy references say.

Each variant runs in the simulator at its model size (the launch that measure.py profiles on the
NVIDIA GPU), with the sanitizer on, so a race or an out-of-bounds access fails too. Every variant
runs, the simdgroup_matrix one included.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from metal_puzzles.msl import simulate

EVIDENCE = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_evidence"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"gpu_evidence_{name}", EVIDENCE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


V = _load("variants")

def _simulate(case):
    v = case.variant
    return simulate(v.name, v.input_names, v.output_names, v.source, v.header, inputs=case.inputs,
                    output_shapes=case.output_shapes, output_dtypes=case.output_dtypes,
                    grid=case.launch.grid, threadgroup=case.launch.threadgroup, trace=False)


@pytest.mark.parametrize("variant", V.VARIANTS, ids=lambda v: v.name)
def test_variant_matches_reference_at_model_size(variant):
    case = variant.case(V.Size.MODEL, seed=11)
    result = _simulate(case)
    assert V.mismatch(case, result.outputs) is None


def test_wrong_outputs_are_caught():
    """The comparison the tests rely on fails on a wrong permutation and on an unwritten element."""
    case = V.COPY_STRIDED.case(V.Size.MODEL, seed=3)
    assert V.mismatch(case, [case.inputs[0].copy()]) is not None
    case = V.SOFTMAX_FUSED.case(V.Size.MODEL, seed=3)
    out = case.reference()[0].astype(np.float32)
    out[2, 17] = np.nan
    assert V.mismatch(case, [out]) is not None


def test_every_variant_has_a_cuda_twin_and_whole_threadgroups():
    cuda = (EVIDENCE / "kernels.cu").read_text()
    defined = set(re.findall(r'extern "C" __global__ void (\w+)\(', cuda))
    for v in V.VARIANTS:
        assert v.cuda_kernel in defined, f"{v.name}: no kernel {v.cuda_kernel} in kernels.cu"
        for size in V.Size:
            launch = v.launch(v.sizes[size])  # raises unless the grid is whole threadgroups
            assert launch.threads_per_group <= 1024
    assert len({v.name for v in V.VARIANTS}) == len(V.VARIANTS)
