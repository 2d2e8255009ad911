"""benchmarks/cuda_wild_run.py without a GPU: every simulator launch of the wild-kernel tests is
translated, compiled (NVRTC, for compute_75) and launched on a stand-in device with the buffers
the simulator bound, the GPU's outputs are compared bit for bit and handed to the test, whose own
assertion then judges them. The stand-in writes nothing, so every output keeps its poison and the
tests that check values fail: what a GPU that ran nothing would earn."""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from metal_puzzles.host.nvrtc import compile_to_ptx, nvrtc_available

SCRIPT = next(p / "benchmarks" / "cuda_wild_run.py" for p in Path(__file__).resolve().parents
              if (p / "benchmarks" / "cuda_wild_run.py").exists())
POISON_F32 = float(np.array([0xA5A5A5A5], dtype=np.uint32).view(np.float32)[0])


@pytest.fixture(scope="module")
def wild_run():
    spec = importlib.util.spec_from_file_location("cuda_wild_run", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


class _DeviceError(RuntimeError):
    pass


class WritesNothing:
    """A stand-in launcher: NumPy arrays for device memory, NVRTC's PTX compile for the compile
    (a unit NVRTC refuses fails here as on the GPU), and kernels that record their launch and
    write nothing."""

    def __init__(self) -> None:
        device = types.SimpleNamespace(synchronize=lambda: None)
        self.cp = types.SimpleNamespace(
            asarray=lambda a: np.array(a, copy=True), asnumpy=lambda a: np.array(a, copy=True),
            cuda=types.SimpleNamespace(Device=lambda *a: device,
                                       driver=types.SimpleNamespace(CUDADriverError=_DeviceError),
                                       runtime=types.SimpleNamespace(CUDARuntimeError=_DeviceError)))
        self.launches: list[tuple[str, tuple, tuple, list]] = []

    def device_name(self) -> str:
        return "a stand-in that writes nothing"

    def compile(self, tr):
        compile_to_ptx(tr.unit, options=["--fmad=false", "--ftz=false"])

        def kernel(blocks, threads, args, shared_mem=0):
            self.launches.append((tr.entry, blocks, threads, list(args)))

        return kernel


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC is not installed (the 'test' extra installs it)")
def test_each_launch_runs_on_the_device_with_the_simulators_buffers_and_the_test_judges_the_result(wild_run, tmp_path):
    from metal_puzzles.msl import program, shader_program

    launches = (program.CompiledKernel.__init__, program.CompiledKernel.launch, shader_program.ShaderKernel.launch)
    launcher = WritesNothing()
    code = wild_run.main(["--out", str(tmp_path), "--modules", "test_wild_kernels.py",
                          "test_whole_shader_kernels.py", "-k",
                          "(exp_strided_elem_to_loc and transpose and not 3d) or mvmr_with_its_buffer_layout"],
                         launcher=launcher)
    data = json.loads((tmp_path / "cuda_wild_run.json").read_text())
    summary, records = data["summary"], data["records"]
    assert code == 1  # the tests failed on the stand-in's outputs
    kinds = {r["kind"] for r in records}
    assert kinds == {"kernel body", "whole shader"}
    assert len(launcher.launches) == len(records) == summary["launches"]
    assert all(r["status"] == "differ" for r in records)
    # The strided exp: the buffer, its shape, its strides (a transpose: not row-major), ndim, the
    # output, the Metal grid.
    entry, blocks, threads, args = next(x for x in launcher.launches if "myexp_strided" in x[0])
    assert len(args) == 8 and [int(g) for g in args[-3:]] == [128, 1, 1]
    assert list(args[2].view(np.int64)) == [1, 16]
    exp = next(r for r in records if r["kernel"] == "myexp_strided")
    assert exp["outputs"][0]["gpu"] == repr(POISON_F32) and exp["outputs"][0]["differing"] == 128
    # Each test judged the device's outputs with its own assertion, and said no.
    assert summary["tests_with_gpu_launches"] == 2 and summary["tests_passed_on_gpu_outputs"] == 0
    assert len(summary["tests_failed_on_gpu_outputs"]) == 2 and not summary["tests_failed_without_gpu_launches"]
    assert summary["compile error"] == summary["launch error"] == 0
    # The simulator's launches are its own again once the session is over.
    assert (program.CompiledKernel.__init__, program.CompiledKernel.launch, shader_program.ShaderKernel.launch) == launches


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC is not installed (the 'test' extra installs it)")
def test_the_books_pipeline_runs_stage_by_stage_on_the_device(monkeypatch):
    """cuda_book_run's radix pipeline: each stage launched on the device with the buffers the
    simulator bound, the next stage fed the device's output, the last one judged as check() does."""
    book_spec = importlib.util.spec_from_file_location("cuda_book_run", SCRIPT.parent / "cuda_book_run.py")
    book_run = importlib.util.module_from_spec(book_spec)
    monkeypatch.setitem(sys.modules, "cuda_book_run", book_run)
    book_spec.loader.exec_module(book_run)
    from metal_puzzles.msl import shader_program
    from metal_puzzles.puzzles import PUZZLES, solution_kernel

    launcher = WritesNothing()
    monkeypatch.setattr(book_run, "launcher", lambda: launcher)
    puzzle = next(p for p in PUZZLES if p.launch_options.pipeline is not None)
    real = shader_program.ShaderKernel.launch
    records = book_run.pipeline_on_gpu(puzzle, solution_kernel(puzzle))
    assert shader_program.ShaderKernel.launch is real
    stages = len(puzzle.launch_options.pipeline.stages)
    assert len(records) == len(puzzle.cases()) and len(launcher.launches) == stages * len(records)
    for rec in records:
        assert rec["status"] == "ran", rec.get("error")
        assert [s["kernel"] for s in rec["stages"]] == [s.kernel for s in puzzle.launch_options.pipeline.stages]
        assert not rec["agree"] and rec["agreement"] == book_run.Agreement.OUTSIDE_MODEL.value


def test_ulps_and_first_difference(wild_run):
    want = np.array([1.0, -2.0, 3.0], dtype=np.float32)
    got = want.copy()
    got.view(np.int32)[1] += 3  # three ulps further from zero
    result = wild_run.compare_outputs([got], [want], ["out"])["outputs"][0]
    assert not result["bit_exact"] and result["differing"] == 1 and result["first_index"] == [1]
    assert result["max_ulps"] == 3.0
    across_zero = wild_run.ulps_apart(np.array([-0.0], np.float32), np.array([0.0], np.float32))
    assert across_zero == 0.0 and wild_run.compare_outputs([np.array([-0.0], np.float32)], [np.array([0.0], np.float32)],
                                                           ["o"])["outputs"][0]["differing"] == 1
