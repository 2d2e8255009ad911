"""The kernels the CUDA translator is held to: every reference solution of the book, each
translated for its puzzle's visible test (and each dtype its tests use)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

from metal_puzzles.checking.case_runner import launched_case
from metal_puzzles.checking.wired import WiredPuzzle
from metal_puzzles.msl import CompileError
from metal_puzzles.msl.abi.signature import InputDesc
from metal_puzzles.msl.cuda import CudaTranslation, translate_kernel, translate_shader
from metal_puzzles.msl.cuda.prelude import CUDA_PRELUDE
from metal_puzzles.msl.shader_program import ShaderLibrary, declares_kernels
from metal_puzzles.puzzles import PUZZLES, solution_kernel


def book_translations() -> Iterator[tuple[str, CudaTranslation | Exception]]:
    """(label, translation or the error translating it) for every puzzle's reference kernel."""
    for puzzle in PUZZLES:
        if isinstance(puzzle, WiredPuzzle):  # wires other puzzles' kernels in Python: those are here already
            continue
        kernel = solution_kernel(puzzle)
        options = puzzle.launch_options
        case = launched_case(kernel, puzzle.visible, options)
        label = puzzle.id
        try:
            if declares_kernels(kernel.source) or options.pipeline is not None:
                for host_name, tr in translate_shader(kernel.kernel.shader_library()).items():
                    yield f"{label}:{host_name}", tr
                continue
            dtypes = {case.output_dtype or options.output_dtype}
            for dtype in sorted(dtypes):
                tr = kernel.to_cuda(inputs=list(case.inputs), output_shapes=[case.output_shape], output_dtypes=[dtype])
                yield f"{label}:{dtype}", tr
        except Exception as exc:  # noqa: BLE001 - reported per kernel by the test
            yield label, exc


def batch_unit(translations: list[CudaTranslation]) -> str:
    """Many translation units as one (NVRTC's cost is mostly per program): the prelude once,
    each unit's own declarations in a namespace of its own, each entry renamed apart."""
    prelude = CUDA_PRELUDE.strip("\n")
    parts = [prelude]
    for k, tr in enumerate(translations):
        assert tr.unit.startswith(prelude), "a unit starts with the prelude"
        own = tr.unit[len(prelude):].replace(f"void {tr.entry}(", f"void {tr.entry}_{k}(")
        parts.append(f"namespace mp_unit_{k} {{\n{own}\n}}  // namespace mp_unit_{k}")
    return "\n".join(parts)


HERE = Path(__file__).parent


def load_corpus(name: str) -> dict:
    """A recorded corpus (tools/record_cuda_corpus.py): kernel instances and whole shaders."""
    path = HERE / name
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def translate_entry(entry: dict) -> CudaTranslation:
    """One recorded kernel instance, translated as it was compiled."""
    inputs = [InputDesc(i["name"], i["dtype"], i["ndim"], i["size"]) for i in entry["inputs"]]
    return translate_kernel(entry["name"], entry["input_names"], entry["output_names"], entry["source"],
                            entry["header"], inputs, entry["output_dtypes"], [tuple(t) for t in entry["template"]],
                            entry["atomic_outputs"])


def shader_translations(entry: dict) -> Iterator[tuple[str, CudaTranslation | CompileError]]:
    """Each kernel of a recorded whole shader that the simulator compiles, translated (or the
    translator's refusal); kernels the simulator itself refuses are not the translator's."""
    library = ShaderLibrary(entry["source"], entry.get("header", ""))
    for host_name in library.kernel_names:
        try:
            library.kernel(host_name)
        except CompileError:
            continue
        try:
            yield host_name, translate_shader(library, [host_name])[host_name]
        except CompileError as err:
            yield host_name, err
