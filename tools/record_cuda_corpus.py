"""Record the wild kernels the project tests against, as the CUDA translator's corpus.

Runs the wild-kernel test modules (tests/test_wild_kernels.py, test_dropin_real_kernels.py,
test_whole_shader_kernels.py) with every simulated kernel call and every compiled shader
recorded: each distinct instance (source, header, names, input dtypes and sizes, output dtypes,
template, atomic outputs; or a whole shader's source) is written to
tests/cuda_translation/wild_corpus.json, which tests/test_cuda_translation.py translates and compiles.

    python tools/record_cuda_corpus.py [--out tests/cuda_translation/wild_corpus.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

MODULES = ["tests/test_wild_kernels.py", "tests/test_dropin_real_kernels.py", "tests/test_whole_shader_kernels.py"]


class Recorder:
    def __init__(self) -> None:
        self.kernels: dict[str, dict] = {}
        self.shaders: dict[str, dict] = {}

    def pytest_sessionstart(self, session) -> None:  # patch once the test modules can import
        from metal_puzzles.host import kernel as host_kernel
        from metal_puzzles.host import shader_library as host_shader
        from metal_puzzles.host.kernel import dtype_name, to_numpy

        recorder = self
        real_run = host_kernel.SimulatedKernel.run

        def run(kernel, **call):
            try:
                arrays = [to_numpy(x) for x in call["inputs"]]
                inputs = []
                for name, (a, override) in zip(kernel.input_names, arrays, strict=True):
                    arr = np.asarray(a)
                    inputs.append({"name": name, "dtype": override or dtype_name(arr.dtype), "ndim": arr.ndim,
                                   "size": int(arr.size)})
                entry = {
                    "name": kernel.name, "input_names": kernel.input_names, "output_names": kernel.output_names,
                    "source": kernel.source, "header": kernel.header, "inputs": inputs,
                    "output_dtypes": [dtype_name(d) for d in call["output_dtypes"]],
                    "template": [[n, dtype_name(v) if not isinstance(v, bool | int) else v]
                                 for n, v in (call.get("template") or [])],
                    "atomic_outputs": kernel.atomic_outputs,
                    "grid": list(call["grid"]), "threadgroup": list(call["threadgroup"]),
                    "whole_shader": bool(kernel.whole_shaders),
                }
                key = json.dumps({k: v for k, v in entry.items() if k not in ("grid", "threadgroup")}, sort_keys=True)
                recorder.kernels.setdefault(key, entry)
            except Exception:  # noqa: BLE001 - a call the recorder cannot describe is left out
                pass
            return real_run(kernel, **call)

        host_kernel.SimulatedKernel.run = run
        real_init = host_shader.SimulatedShaderLibrary.__init__

        def init(lib, source, include_dirs=None):
            real_init(lib, source, include_dirs)
            recorder.shaders.setdefault(source, {"source": source})

        host_shader.SimulatedShaderLibrary.__init__ = init


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="tests/cuda_translation/wild_corpus.json")
    parser.add_argument("--modules", nargs="*", default=MODULES, help="test modules to record (default: the wild ones)")
    args = parser.parse_args()
    rec = Recorder()
    code = pytest.main(["-q", "-p", "no:cacheprovider", *args.modules], plugins=[rec])
    data = {"modules": args.modules, "kernels": list(rec.kernels.values()), "shaders": list(rec.shaders.values())}
    out = Path(args.out)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, out)
    print(f"{len(data['kernels'])} kernel instances and {len(data['shaders'])} shaders written to {out} "
          f"(pytest exit {code})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
