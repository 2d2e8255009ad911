"""Function pointer parameters (issue 23), as c10/metal/atomic.h passes an operation:
``T (*op)(T, T)``. The argument must name a function declared in the source (``add``, ``&add``,
or the caller's own function pointer parameter passed on): each call site instantiates the
function with the function it names, as Metal's compiler inlines it. Function pointer
variables, and arguments that are not function names, are precise compile errors.

Expected values are plain arithmetic worked out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles import compile_shader
from metal_puzzles.msl import CompileError

from .conftest import out0

OPS = """
float add(float a, float b) { return a + b; }
float mul(float a, float b) { return a * b; }
int sub(int a, int b) { return a - b; }
template <typename T> T fold3(T x, T y, T z, T (*op)(T, T)) { return op(op(x, y), z); }
float cube_of(float x, float (*op)(float, float)) { return fold3(x, x, x, op); }  // passed on
"""


def test_each_call_site_runs_the_function_its_argument_names() -> None:
    got = out0("out[0] = fold3(1.0f, 2.0f, 3.0f, add);"   # (1 + 2) + 3
               "out[1] = fold3(1.0f, 2.0f, 3.0f, &mul);"  # (1 * 2) * 3
               "out[2] = fold3(10, 2, 3, sub);"           # (10 - 2) - 3, in int
               "out[3] = cube_of(2.0f, mul);"             # 2 * 2 * 2
               "out[4] = cube_of(2.0f, add);",            # 2 + 2 + 2
               out=((5,), "float32"), header=OPS)
    assert got.tolist() == [6.0, 6.0, 5.0, 8.0, 6.0]


@pytest.mark.parametrize(("body", "message", "column"), [
    ("out[0] = fold3(1.0f, 2.0f, 3.0f, 4.0f);",
     "argument 'op' of 'fold3' is a function pointer: the simulator needs the name of a function", 34),
    ("out[0] = fold3(1.0f, 2.0f, 3.0f);", "too few arguments to 'fold3': the function pointer 'op' needs one", 10),
    ("float (*op)(float, float) = add; out[0] = op(1.0f, 2.0f);",
     "function pointers are supported by the simulator only as function parameters", 7),
])
def test_what_stays_outside_is_a_precise_error(body: str, message: str, column: int) -> None:
    with pytest.raises(CompileError, match=message) as info:
        out0(body, header=OPS)
    assert info.value.pos.col == column


def test_a_function_of_another_arity_is_refused() -> None:
    header = OPS + "float neg(float a) { return -a; }"
    with pytest.raises(CompileError, match=r"'neg' does not take 2 argument\(s\), as the function pointer 'op'"):
        out0("out[0] = fold3(1.0f, 2.0f, 3.0f, neg);", header=header)


# The shape of c10/metal/atomic.h (written afresh): overloaded helpers taking the operation as a
# function pointer, reached through static member functions of a specialised struct template.
ATOMIC_SHADER = """
namespace ops {
template <typename A, typename T>
static inline void cas_apply(device metal::atomic<A>* data, long offset, T value, T (*op)(T, T)) {
  auto p = data + offset;
  auto old = metal::atomic_load_explicit(p, metal::memory_order_relaxed);
  T next;
  do { next = op(old, value); } while (!metal::atomic_compare_exchange_weak_explicit(p, &old, next,
           metal::memory_order_relaxed, metal::memory_order_relaxed));
}
template <typename T>
static inline void cas_apply(device metal::atomic<uint>* data, long offset, T value, T (*op)(T, T)) {
  auto p = data + offset;
  uint old = metal::atomic_load_explicit(p, metal::memory_order_relaxed);
  while (!metal::atomic_compare_exchange_weak_explicit(p, &old, uint(op(T(old), value)),
           metal::memory_order_relaxed, metal::memory_order_relaxed)) {}
}
template <typename T> struct Atomic {};
template <> struct Atomic<float> {
  using type = metal::atomic<float>;
  static inline void apply(device type* data, long offset, float value, float (*op)(float, float)) {
    cas_apply(data, offset, value, op);
  }
};
template <> struct Atomic<ushort> {
  using type = metal::atomic<uint>;
  static inline void apply(device type* data, long offset, ushort value, ushort (*op)(ushort, ushort)) {
    cas_apply(data, offset, value, op);
  }
};
}
float fmax2(float a, float b) { return metal::max(a, b); }
ushort umax2(ushort a, ushort b) { return a > b ? a : b; }
kernel void amax(device metal::atomic<float>* out [[buffer(0)]], device metal::atomic<uint>* out2 [[buffer(1)]],
                 constant float* x [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  ops::Atomic<float>::apply(out, 0, x[i], fmax2);
  ops::Atomic<ushort>::apply(out2, 0, ushort(x[i]), umax2);
}
"""


def test_an_atomic_helper_in_c10_metals_shape_applies_the_named_operation() -> None:
    lib = compile_shader(ATOMIC_SHADER)
    x = np.array([3.0, 1.0, 7.5, 2.0, 6.0], dtype=np.float32)
    fmax = np.full(1, -100.0, dtype=np.float32)
    umax = np.zeros(1, dtype=np.uint32)
    lib.amax(fmax, umax, x, threads=5)
    # Maximum of x as float, and of ushort(x) (7.5 truncates to 7) in the uint word.
    assert fmax.tolist() == [7.5] and umax.tolist() == [7]
