"""Record the wild kernels the project tests against, as the CUDA translator's corpus.

Runs the wild-kernel test modules (tests/host/: test_wild_kernels.py, test_dropin_real_kernels.py,
test_whole_shader_kernels.py) with every kernel the simulator compiles recorded: each distinct
instance that compiles (source, header, names, input dtypes and sizes, output dtypes, template,
atomic outputs; or a whole shader's source and header) is written to
tests/msl/cuda/wild_corpus.json, which tests/msl/cuda/test_translation.py translates and compiles.

    python tools/record_cuda_corpus.py [--out tests/msl/cuda/wild_corpus.json]
    python tools/record_cuda_corpus.py --modules tests/msl/semantics --out tests/msl/cuda/semantics_corpus.json.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from pathlib import Path

import pytest

MODULES = ["tests/host/test_wild_kernels.py", "tests/host/test_dropin_real_kernels.py", "tests/host/test_whole_shader_kernels.py"]


class Recorder:
    def __init__(self) -> None:
        self.kernels: dict[str, dict] = {}
        self.shaders: dict[str, dict] = {}

    def pytest_sessionstart(self, session) -> None:  # patch once the test modules can import
        from metal_puzzles.msl import program, shader_program

        recorder = self
        real_init = program.CompiledKernel.__init__

        def init(kernel, name, input_names, output_names, source, header, inputs, output_dtypes, template,
                 atomic_outputs):
            real_init(kernel, name, input_names, output_names, source, header, inputs, output_dtypes, template,
                      atomic_outputs)  # only kernels that compile are recorded
            entry = {
                "name": name, "input_names": list(input_names), "output_names": list(output_names),
                "source": source, "header": header,
                "inputs": [{"name": i.name, "dtype": i.dtype, "ndim": i.ndim, "size": i.size} for i in inputs],
                "output_dtypes": list(output_dtypes), "template": [list(t) for t in template],
                "atomic_outputs": bool(atomic_outputs), "whole_shader": False,
            }
            recorder.kernels.setdefault(json.dumps(entry, sort_keys=True, default=str), entry)

        program.CompiledKernel.__init__ = init
        real_library = shader_program.ShaderLibrary.__init__

        def library(lib, source, header="", *args, **kwargs):
            real_library(lib, source, header, *args, **kwargs)
            recorder.shaders.setdefault(source + header, {"source": source, "header": header})

        shader_program.ShaderLibrary.__init__ = library


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="tests/msl/cuda/wild_corpus.json")
    parser.add_argument("--modules", nargs="*", default=MODULES, help="test modules to record (default: the wild ones)")
    args = parser.parse_args()
    rec = Recorder()
    code = pytest.main(["-q", "-p", "no:cacheprovider", *args.modules], plugins=[rec])
    data = {"modules": args.modules, "kernels": list(rec.kernels.values()), "shaders": list(rec.shaders.values())}
    out = Path(args.out)
    tmp = out.with_suffix(".tmp")
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    if out.suffix == ".gz":  # a large corpus (the semantics suite's) is kept compressed
        tmp.write_bytes(gzip.compress(text.encode(), mtime=0))
    else:
        tmp.write_text(text)
    os.replace(tmp, out)
    print(f"{len(data['kernels'])} kernel instances and {len(data['shaders'])} shaders written to {out} "
          f"(pytest exit {code})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
