"""V.11: a pipeline debugged stage by stage. One pass of a radix sort as a whole shader of three
kernels (a histogram of one digit, the exclusive scan of the histogram, a stable scatter), run in
turn by the puzzle's host (``checking.pipeline``) on every test, as ``compile_shader`` runs them.
The template's shader is complete and wrong in one stage (its scan is inclusive); the learner
runs the stages one by one against NumPy, as the book cell starts to, finds which, and fixes it.

The check compares the whole pass with the spec (MLX's stable ``mx.argsort`` of the digits: the
order of ``np.argsort(digits, kind="stable")``) and names the first stage that differs from
NumPy's version of it on the inputs it received.
"""

import inspect

import mlx.core as mx
import numpy as np

from ...checking import Budget, Case, ErrorModel, Puzzle
from ...checking.inputs import padded
from ...checking.pipeline import Buffer, Pipeline, Stage
from ..catalogue.entry import Entry

RADIX = 16  # a digit is 4 bits
GROUP = 16  # threads per threadgroup of the histogram and the scatter
INPUTS = ("keys", "shift", "n")


def radix_pass_spec(keys, shift, n):
    # One pass of a radix sort: the keys ordered by one digit, (key >> shift) & 15, keys of
    # equal digits in their own order (MLX's argsort is stable: np.argsort(kind="stable")).
    digits = (keys >> shift) & (RADIX - 1)
    return keys[mx.argsort(digits)]


SPEC_SOURCE = f"RADIX = {RADIX}\n\n\n" + inspect.getsource(radix_pass_spec).strip()


def _digits(arrays) -> np.ndarray:
    return (arrays["keys"] >> arrays["shift"]) & (RADIX - 1)


def _stable_scatter(arrays) -> np.ndarray:
    """Each key at its digit's offset plus the number of earlier keys of that digit, from the
    offsets the scatter received (so that a wrong scan is not blamed on the scatter)."""
    digits = _digits(arrays)
    out = np.zeros_like(arrays["keys"])
    seen = np.zeros(RADIX, np.int64)
    for key, d in zip(arrays["keys"], digits, strict=True):
        place = int(arrays["offsets"][d]) + seen[d]
        if place < out.size:  # offsets past the end are the scan's fault, found before this stage
            out[place] = key
        seen[d] += 1
    return out


def _rows(case: Case):
    return case.grid, case.threadgroup


PIPELINE = Pipeline(
    inputs=INPUTS,
    output="out",
    buffers=(Buffer("hist", lambda case: (RADIX,), "uint32", init_value=0),
             Buffer("offsets", lambda case: (RADIX,), "uint32")),
    stages=(
        Stage("histogram", ("keys", "hist", "shift", "n"), "hist", _rows,
              lambda a: np.bincount(_digits(a), minlength=RADIX).astype(np.uint32),
              "np.bincount(digits, minlength=16)"),
        Stage("scan", ("hist", "offsets"), "offsets", lambda case: ((RADIX, 1, 1), (RADIX, 1, 1)),
              lambda a: (np.cumsum(a["hist"]) - a["hist"]).astype(np.uint32),
              "NumPy's exclusive scan of your histogram, np.cumsum(hist) - hist,"),
        Stage("scatter", ("keys", "offsets", "out", "shift", "n"), "out", _rows, _stable_scatter,
              "placing each key at offsets[digit] plus the number of earlier keys of its digit"),
    ),
)


def pass_case(keys: np.ndarray, shift: int, label: str) -> Case:
    """One pass over ``keys`` by the digit at ``shift``, launched as the puzzle's host launches it."""
    n = keys.size
    scalars = (np.asarray(shift, np.uint32), np.asarray(n, np.uint32))
    return Case((keys.astype(np.uint32), *scalars), (n,), (padded(n, GROUP), 1, 1), (GROUP, 1, 1), label)


def hidden(rng: np.random.Generator) -> list[Case]:
    def keys(n: int) -> np.ndarray:
        return rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)

    same = keys(60) & ~np.uint32(0xF00) | np.uint32(0x700)  # every key's digit (bits 8 to 11) is 7
    two = keys(200) & ~np.uint32(0xF000) | (rng.integers(0, 2, size=200).astype(np.uint32) * 0xA000)
    return [pass_case(keys(1), 0, "hidden test: one key"),
            pass_case(keys(100), 0, "hidden test: 100 keys, the lowest digit"),
            pass_case(keys(256), 28, "hidden test: 256 keys, the highest digit"),
            pass_case(same, 8, "hidden test: 60 keys of one digit (the pass keeps their order)"),
            pass_case(two, 12, "hidden test: 200 keys of two digits, 0 and 10")]


VISIBLE = pass_case((np.arange(24) * 1237 + 91) % 4096, 4, "visible test")

SETUP = """\
k = mx.arange(24, dtype=mx.uint32)
keys = (k * 1237 + 91) % 4096  # 24 different keys, each three hex digits
shift = mx.array(4, dtype=mx.uint32)  # the digit: bits 4 to 7, the middle hex digit
n = mx.array(24, dtype=mx.uint32)
output_shape = (24,)"""

DEBUGGING = """\
# Stage by stage: run one kernel of your shader, as a host would, and compare it with NumPy.
import numpy as np

from metal_puzzles import compile_shader

lib = compile_shader(radix_pass_test(keys, shift, n).source)
hist = np.zeros(16, dtype=np.uint32)
lib.histogram(np.array(keys), hist, 4, 24, threads=32, group_size=16)
digits = (np.array(keys) >> 4) & 15
print("histogram", "matches NumPy:" if (hist == np.bincount(digits, minlength=16)).all() else "DIFFERS:", hist)
# Your turn: offsets = np.zeros(16, dtype=np.uint32); lib.scan(hist, offsets, threads=16, group_size=16),
# then lib.scatter(...) into out = np.zeros(24, dtype=np.uint32), each against NumPy."""

TEMPLATE = """\
#include <metal_stdlib>
using namespace metal;

// One pass of a least-significant-digit radix sort: the keys ordered by one 4-bit digit,
// (key >> shift) & (RADIX - 1), keys of equal digits kept in their order (stable).
constant uint RADIX = 16;

uint digit_of(uint key, uint shift) {
  return (key >> shift) & (RADIX - 1);
}

// Stage 1: how many keys have each digit (the host zeroes hist first).
kernel void histogram(device const uint* keys [[buffer(0)]],
                      device atomic_uint* hist [[buffer(1)]],
                      constant uint& shift [[buffer(2)]],
                      constant uint& n [[buffer(3)]],
                      uint i [[thread_position_in_grid]]) {
  if (i >= n) {
    return;
  }
  atomic_fetch_add_explicit(&hist[digit_of(keys[i], shift)], 1u, memory_order_relaxed);
}

// Stage 2: where each digit's keys start: the exclusive scan of the histogram.
kernel void scan(device const uint* hist [[buffer(0)]],
                 device uint* offsets [[buffer(1)]],
                 uint b [[thread_position_in_grid]]) {
  uint sum = 0;
  for (uint c = 0; c <= b; c++) {
    sum += hist[c];
  }
  offsets[b] = sum;
}

// Stage 3: each key to its digit's start plus the number of earlier keys of its digit.
kernel void scatter(device const uint* keys [[buffer(0)]],
                    device const uint* offsets [[buffer(1)]],
                    device uint* out [[buffer(2)]],
                    constant uint& shift [[buffer(3)]],
                    constant uint& n [[buffer(4)]],
                    uint i [[thread_position_in_grid]]) {
  if (i >= n) {
    return;
  }
  uint d = digit_of(keys[i], shift);
  uint rank = 0;
  for (uint j = 0; j < i; j++) {
    rank += digit_of(keys[j], shift) == d ? 1 : 0;
  }
  out[offsets[d] + rank] = keys[i];
}
"""

PUZZLE = Puzzle(
    id="radix_pass",
    number="V.11",
    title="A Radix Sort Pass, Stage by Stage",
    kernel_name="radix_pass",
    input_names=INPUTS,
    output_dtype="uint32",
    description=f"""\
Top-p sampling sorts a vocabulary's probabilities, and a mixture-of-experts layer sorts its tokens
by the expert they go to. On a GPU, integer keys are often sorted by a **radix sort** (CUB's is
one): a few passes, each ordering the keys by one digit and keeping keys of equal digits in the
order they were (**stable**), lowest digit first. One pass is a pipeline of three kernels, which this
puzzle's shader holds (a whole shader, as in Part IV), and which the host runs in turn:

1. `histogram(keys, hist, shift, n)`: `hist[d]` counts the keys whose digit
   `(key >> shift) & 15` is `d` (`RADIX = {RADIX}` bins, zeroed by the host, atomics);
2. `scan(hist, offsets)`: one thread per bin; `offsets[d]` is where the keys of digit `d` start,
   the **exclusive** scan of the histogram, `hist[0] + ... + hist[d - 1]`;
3. `scatter(keys, offsets, out, shift, n)`: key `i` goes to `offsets[d]` plus the number of
   keys before it with its digit `d`, which keeps equal digits in order.

The host binds the arrays at the `[[buffer(n)]]` of each kernel's signature, in the order
listed, and launches `histogram` and `scatter` with a thread per key in threadgroups of {GROUP}
(`n = 24` keys: 32 threads, the last 8 spare) and `scan` with {RADIX} threads.

**The shader is complete, and one of its stages is wrong.** Run it (the cell below does) and the
scatter is what fails: it writes past the end of `out` and leaves elements unwritten. The bug need
not be where the symptom is. This is how to find it, the way kernel writers do: run the stages
**one at a time** and compare each with a NumPy version of that stage, computed from the inputs
that stage received. `compile_shader` (Part IV) runs one kernel of a shader on NumPy arrays and
writes back into the ones it is given; the cell checks the histogram against `np.bincount`. Do
the same for the scan (against `np.cumsum(hist) - hist`) and for the scatter (against the keys in
the order of `np.argsort(digits, kind="stable")`); the first stage that differs is the one to
fix. `check()` does the same comparison when a test fails, and says where.

The spec is MLX's `mx.argsort` of the digits, which is stable on MLX's CPU build as
`np.argsort(..., kind="stable")` is. (Fast radix sorts rank a key within its threadgroup,
with SIMD-group ballots or a local scan, rather than by a loop over all earlier keys; this pass is
short enough for the loop.)

**Hidden tests** pose random 32-bit keys over the whole range (every digit value, top bits set)
and keys that share their other digits: the pass is integer work, exact or wrong, and stability
(equal digits keep their order) is what the shared digits test.

**Budget**: the scatter writes each key once (1 global write per thread).""",
    spec=radix_pass_spec,
    spec_source=SPEC_SOURCE,
    visible=VISIBLE,
    hidden=hidden,
    template=TEMPLATE,
    budget=Budget(global_writes=1),
    atol=0.0,
    rtol=0.0,
    error_model=ErrorModel.EXACT_SUMS,
    pipeline=PIPELINE,
)


ENTRY = Entry(PUZZLE, setup=SETUP, debugging=DEBUGGING)
