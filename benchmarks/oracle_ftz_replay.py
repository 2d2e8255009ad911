"""Which differences of a ``cuda_oracle.py`` report a GPU that flushes float denormals explains.

    python benchmarks/oracle_ftz_replay.py REPORT [--seeds S ...]

Every kernel the report says differed is simulated twice: as the oracle does, then with the x86
MXCSR's FTZ and DAZ bits set, so NumPy's float arithmetic and comparisons flush denormal inputs
and results to zero as PTX's ``.ftz`` instructions do. A kernel is *explained* when the flushing
simulation differs from the plain one at exactly the element the GPU did, with the GPU's value
there, and in as many elements of that output. (NumPy negates by flipping the sign bit, which no
MXCSR bit flushes, so a difference made by ``neg.ftz.f32`` alone stays unexplained here.)

Written for the H200 run whose 98 differences came from CuPy appending ``-ftz=true`` to every
compile (benchmarks/README.md, "What the GPU found"): 92 explained. Needs a C compiler (``cc``) for
the three-line helper that sets MXCSR; x86-64 only. Prints one line per kernel and a summary.
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import json
import platform
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO / "lib", REPO / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from differential.multithread import generate, simulate_kernel  # noqa: E402
from differential.oracle import Difference, compare_outputs  # noqa: E402

MXCSR_FTZ_DAZ = 0x8040  # bit 15 flushes denormal results, bit 6 treats denormal inputs as zero

HELPER = f"""
#include <xmmintrin.h>
void mp_set_ftz_daz(int on) {{
  unsigned c = _mm_getcsr();
  _mm_setcsr(on ? (c | {MXCSR_FTZ_DAZ}u) : (c & ~{MXCSR_FTZ_DAZ}u));
}}
"""


def load_helper(workdir: Path) -> ctypes.CDLL:
    """Compile and load the MXCSR helper (MXCSR is per thread: the simulation runs on this one)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        raise SystemExit("oracle_ftz_replay: needs an x86-64 machine (MXCSR)")
    src, lib = workdir / "ftz.c", workdir / "libftz.so"
    src.write_text(HELPER)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    return ctypes.CDLL(str(lib))


@contextmanager
def flushing(helper: ctypes.CDLL) -> Iterator[None]:
    helper.mp_set_ftz_daz(1)
    try:
        yield
    finally:
        helper.mp_set_ftz_daz(0)


def value_of(text: str) -> str:
    """'np.float32(-0.0) (0x80000000)' -> 'np.float32(-0.0)': NaN payloads aside, the value."""
    return text.rsplit(" (0x", 1)[0]


def replay(seed: int, recorded: dict, helper: ctypes.CDLL) -> tuple[bool, Difference | None]:
    """(explained, the flushing simulation's first difference from the plain one)."""
    k = generate(seed)
    plain = list(simulate_kernel(k).outputs)
    with flushing(helper):
        flushed = list(simulate_kernel(k).outputs)
    # Compare only the output the GPU differed in: the first difference of the whole kernel
    # may lie in an earlier output that the GPU got right for another reason.
    i = k.output_names.index(recorded["output"])
    one = dataclasses.replace(k, outputs=[k.outputs[i]])
    diff = compare_outputs(one, [plain[i]], [flushed[i]])
    explained = (diff is not None and diff.index == recorded["index"] and diff.differing == recorded["differing"]
                 and value_of(diff.got) == value_of(recorded["got"]))
    return explained, diff


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("report", type=Path, help="a cuda_oracle.json")
    p.add_argument("--seeds", type=int, nargs="*", help="only these kernels (default: every one that differed)")
    args = p.parse_args(argv)
    data = json.loads(args.report.read_text())
    records = {r["seed"]: r for r in data.get("kernels", []) if r.get("status") == "differ"}
    seeds = [s for s in (args.seeds or sorted(records)) if s in records]
    explained = []
    with tempfile.TemporaryDirectory() as tmp:
        helper = load_helper(Path(tmp))
        for seed in seeds:
            ok, diff = replay(seed, records[seed]["difference"], helper)
            explained += [seed] if ok else []
            rec = records[seed]["difference"]
            mine = f"{diff.output}[{diff.index}] {value_of(diff.got)}, {diff.differing} differ" if diff else "no difference"
            print(f"{seed:5d} {'explained' if ok else 'not explained':13s} GPU: {rec['output']}[{rec['index']}] "
                  f"{value_of(rec['got'])}, {rec['differing']} differ | flushing simulator: {mine}", flush=True)
    rest = [s for s in seeds if s not in explained]
    print(f"oracle_ftz_replay: {len(explained)} of {len(seeds)} differences explained by flushing denormals"
          + (f"; not explained: {', '.join(map(str, rest))}" if rest else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
