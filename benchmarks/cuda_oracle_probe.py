"""Where an oracle kernel that differs on the GPU goes wrong: the simulator, the translation, or
the CUDA compiler, and which part of it (NVRTC's front end and optimiser, which write PTX, or
ptxas, which turns PTX into machine code).

For each seed, kernel SEED of ``tests/differential/multithread.py`` is translated once and run on
the GPU from several compiles of the same unit, each compared bit for bit with the simulator:

* ``nvrtc-cubin``: this machine's NVRTC to the device's machine code (what the oracle runs);
* ``nvrtc-ptx+driver``: this machine's NVRTC to PTX, which the driver's own ptxas assembles at load;
* ``reference-ptx+driver``: PTX made elsewhere by another NVRTC (``--ptx-dir``: files
  ``oracle_<seed>_compute_<cc>.ptx``, written by ``--write-ptx`` on a machine without a GPU),
  assembled by the driver;
* ``nvrtc-cubin-ptxas-O0``: this NVRTC's machine code with ptxas's optimisations off;
* ``nvrtc-cubin-Ofast-compile=max``: NVVM's optimisations cut to the fewest.

It writes ``DIR/oracle_probe_<seed>.txt``: the NVRTC and driver versions, each compile's outcome
(agree, or the first difference), the kernel, the unit, this NVRTC's PTX of the entry and the
machine code (``cuobjdump -sass``, when it is on the PATH). Needs CuPy and a GPU, except
``--write-ptx``, which needs only NVRTC:

    python benchmarks/cuda_oracle_probe.py 740 303 --out DIR [--ptx-dir benchmarks/cuda_runs/ptx]
    python benchmarks/cuda_oracle_probe.py 740 303 --write-ptx benchmarks/cuda_runs/ptx [--arch 90]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
for path in (REPO / "lib", REPO / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from differential.cuda_launch import NVRTC_OPTIONS  # noqa: E402

#: NVRTC's options besides the target (compile_to_* set the standard themselves).
OPTIONS = [o for o in NVRTC_OPTIONS if not o.startswith("--std")]


def ptx_name(seed: int, cc: str) -> str:
    return f"oracle_{seed}_compute_{cc}.ptx"


def write_ptx(seeds: Sequence[int], folder: Path, cc: str) -> int:
    """This machine's NVRTC's PTX of each kernel, for a GPU machine to load (another NVRTC's code)."""
    from differential.multithread import generate
    from differential.oracle import translate
    from metal_puzzles.host.nvrtc import compile_to_ptx, load_nvrtc

    folder.mkdir(parents=True, exist_ok=True)
    major, minor = load_nvrtc().version()
    for seed in seeds:
        tr = translate(generate(seed))
        ptx = compile_to_ptx(tr.unit, f"oracle_{seed}.cu", arch=f"compute_{cc}", options=OPTIONS)
        target = folder / ptx_name(seed, cc)
        tmp = target.with_suffix(".tmp")
        tmp.write_text(f"// NVRTC {major}.{minor}, compute_{cc}, {' '.join(OPTIONS)}\n{ptx}")
        os.replace(tmp, target)
        print(f"{target}: {len(ptx)} characters of PTX from NVRTC {major}.{minor}")
    return 0


def ptx_isa(ptx: str) -> str:
    """The PTX ISA version a PTX text declares ('9.0')."""
    found = re.search(r"^\.version (\d+\.\d+)$", ptx, flags=re.M)
    return found.group(1) if found else "?"


def sass(cubin: bytes) -> str:
    """The machine code of a cubin as cuobjdump prints it (or why there is none)."""
    tool = shutil.which("cuobjdump") or next((str(p) for p in (Path("/usr/local/cuda/bin/cuobjdump"),) if p.exists()),
                                              None)
    if tool is None:
        return "(cuobjdump is neither on the PATH nor in /usr/local/cuda/bin)"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        done = subprocess.run([tool, "-sass", f.name], capture_output=True, text=True, timeout=120, check=False)
    return done.stdout or done.stderr


def probe(seed: int, out: Path, ptx_dir: Path | None) -> str:
    """Run kernel ``seed`` from each compile; write the report; return its one-line summary."""
    from cupy.cuda import function as cuda_function
    from cupy.cuda import runtime

    from differential.cuda_launch import CudaLauncher, initial_outputs
    from differential.multithread import generate, simulate_kernel
    from differential.oracle import compare_outputs, translate
    from metal_puzzles.host.nvrtc import compile_to_cubin, compile_to_ptx, load_nvrtc

    launcher = CudaLauncher()
    cc = launcher.device_arch().removeprefix("sm_")
    nv = load_nvrtc()
    k = generate(seed)
    tr = translate(k)
    expected = [o for o in simulate_kernel(k).outputs]
    inputs = dict(zip(k.input_names, k.inputs, strict=True))
    lines = [f"kernel {seed} on {launcher.device_name()} (sm_{cc}); NVRTC {'.'.join(map(str, nv.version()))} from "
             f"{nv.path}; driver {runtime.driverGetVersion()}, runtime {runtime.runtimeGetVersion()}",
             f"NVRTC options: {' '.join(OPTIONS)}", ""]

    def loaded(image: bytes) -> Any:
        module = cuda_function.Module()
        module.load(image)
        return module.get_function(tr.entry)

    def attempt(label: str, make: Callable[[], Any]) -> str:
        try:
            kernel = make()
            got = launcher.run(tr, kernel, inputs, initial_outputs(k.output_shapes, k.output_dtypes, k.init_value),
                               k.grid, k.threadgroup)
        except Exception as exc:  # noqa: BLE001 - each compile's failure is that attempt's outcome
            return f"{label}: could not run ({type(exc).__name__}: {str(exc)[:300]})"
        diff = compare_outputs(k, expected, got)
        if diff is None:
            return f"{label}: agrees with the simulator"
        return (f"{label}: DIFFERS at {diff.output}[{diff.index}] ({diff.where}): simulator {diff.expected}, "
                f"GPU {diff.got}; {diff.differing} element(s)")

    cubin = compile_to_cubin(tr.unit, f"sm_{cc}", f"oracle_{seed}.cu", OPTIONS)
    ptx = compile_to_ptx(tr.unit, f"oracle_{seed}.cu", arch=f"compute_{cc}", options=OPTIONS)
    outcomes = [attempt("nvrtc-cubin", lambda: loaded(cubin)),
                attempt("nvrtc-ptx+driver", lambda: loaded(ptx.encode() + b"\0"))]
    reference = ptx_dir / ptx_name(seed, cc) if ptx_dir is not None else None
    if reference is not None and reference.exists():
        text = reference.read_text()
        made_by = text.splitlines()[0].lstrip("/ ")
        outcomes.append(attempt(f"reference-ptx+driver ({made_by})", lambda: loaded(text.encode() + b"\0")))
        # A newer NVRTC writes a newer PTX ISA than an older driver reads (13.5 writes 9.5; CUDA 13.0's
        # driver reads up to 9.0): the same instructions, declared as the driver's own ISA.
        older = re.sub(r"^\.version \d+\.\d+$", f".version {ptx_isa(ptx)}", text, count=1, flags=re.M)
        outcomes.append(attempt(f"reference-ptx as ISA {ptx_isa(ptx)}+driver ({made_by})",
                                lambda: loaded(older.encode() + b"\0")))
    else:
        outcomes.append(f"reference-ptx+driver: no file {reference}")
    outcomes.append(attempt("nvrtc-cubin-ptxas-O0", lambda: loaded(
        compile_to_cubin(tr.unit, f"sm_{cc}", f"oracle_{seed}.cu", [*OPTIONS, "--ptxas-options=-O0"]))))
    # NVVM's optimisations cut to the fewest (CUDA 12.8's --Ofast-compile): an optimiser's mistake goes.
    outcomes.append(attempt("nvrtc-cubin-Ofast-compile=max", lambda: loaded(
        compile_to_cubin(tr.unit, f"sm_{cc}", f"oracle_{seed}.cu", [*OPTIONS, "--Ofast-compile=max"]))))
    lines += outcomes + ["", "---- kernel", k.listing(), "", "---- CUDA unit", tr.unit, "", "---- PTX (this NVRTC)",
                         ptx, "", "---- machine code (this NVRTC's cubin)", sass(cubin)]
    target = out / f"oracle_probe_{seed}.txt"
    out.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, target)
    return f"seed {seed}: " + "; ".join(outcomes)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("seeds", type=int, nargs="+")
    p.add_argument("--out", type=Path, help="directory for oracle_probe_<seed>.txt (on the GPU)")
    p.add_argument("--ptx-dir", type=Path, default=None, help="PTX written by --write-ptx elsewhere")
    p.add_argument("--write-ptx", type=Path, default=None, metavar="DIR", help="write this NVRTC's PTX and stop")
    p.add_argument("--arch", default="90", help="compute capability for --write-ptx (90: the H200)")
    args = p.parse_args(argv)
    if args.write_ptx is not None:
        return write_ptx(args.seeds, args.write_ptx, args.arch)
    if args.out is None:
        p.error("--out is required (or --write-ptx)")
    for seed in args.seeds:
        print(probe(seed, args.out, args.ptx_dir), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
