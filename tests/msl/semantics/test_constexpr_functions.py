"""``constexpr`` functions where C++ needs a constant: array sizes, ``static_assert``,
``constexpr`` variables, template arguments; and, called with constant arguments anywhere,
computed at compile time (so a recursive constexpr function works although Metal has no
recursion at run time). Values worked out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import CompileError

from .conftest import one, out0

HEADER = """
namespace util {
constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
constexpr int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }
constexpr float half_of(float x) { return x / 2; }
constexpr int words(int bytes) { return ceil_div(bytes, int(sizeof(uint))); }
inline int not_constexpr(int a) { return a + 1; }
}
constant constexpr int TILES = util::ceil_div(10, 4);
static_assert(util::fact(5) == 120, "5! is 120");
template <int N> float scaled(float x) { return x * N; }
"""


def test_constexpr_calls_where_constants_are_needed() -> None:
    got = out0("float t[util::ceil_div(17, 8)]; out[0] = sizeof(t);"          # 3 floats
               "constexpr int k = util::fact(4); int arr[k]; out[1] = sizeof(arr);"  # 24 ints
               "out[2] = TILES; out[3] = scaled<util::words(9)>(1.0f);"     # 3; 9 bytes are 3 words
               "out[4] = util::half_of(3.0f);",
               out=((5,), "float32"), header=HEADER)
    assert got.tolist() == [12.0, 96.0, 3.0, 3.0, 1.5]


def test_arguments_convert_to_parameter_types_as_in_a_call() -> None:
    # 7.9 becomes int 7 for ceil_div's 'int a': (7 + 2 - 1) / 2 = 4.
    assert one("int a[util::ceil_div(7.9f, 2)]; out[0] = sizeof(a) / sizeof(int);", header=HEADER) == 4.0


def test_with_run_time_arguments_it_is_an_ordinary_call() -> None:
    got = out0("int n = int(thread_position_in_grid.x) + 10; out[0] = util::ceil_div(n, 4);"
               "out[1] = util::half_of(float(n));", out=((2,), "float32"), header=HEADER)
    assert got.tolist() == [3.0, 5.0]


@pytest.mark.parametrize(("body", "message"), [
    ("float t[util::not_constexpr(2)]; out[0] = 0;", "array size must be a compile-time constant"),
    ("int n = 3; float t[util::ceil_div(n, 2)]; out[0] = 0;", "array size must be a compile-time constant"),
    ("static_assert(util::fact(3) == 7, \"3! is 6\"); out[0] = 0;", "static assertion failed: 3! is 6"),
])
def test_what_is_not_a_constant_is_a_compile_error(body: str, message: str) -> None:
    with pytest.raises(CompileError, match=message):
        one(body, header=HEADER)


def test_runaway_constexpr_recursion_is_a_compile_error() -> None:
    header = "constexpr int forever(int n) { return forever(n + 1); }"
    with pytest.raises(CompileError, match="nests more than 256 calls"):
        one("int a[forever(0)]; out[0] = 0;", header=header)


VARIABLES = """
namespace c10 { namespace metal {
template <typename T> constexpr T pi_v = T(3.14159265358979);
template <int N> constexpr constant int pow2 = 1 << N;
template <typename T, int Extra = 0> constexpr int bits_v = int(sizeof(T)) * 8 + Extra;
} }
"""


def test_variable_templates_one_constant_per_argument_list() -> None:
    got = out0("using namespace c10::metal; out[0] = pi_v<float>;"
               "out[1] = float(pi_v<int>) + float(pi_v<half>);"      # 3 + 3.140625 (pi rounded to half)
               "int a[pow2<3>]; out[2] = sizeof(a);"                   # 8 ints
               "out[3] = bits_v<half> + bits_v<uint, 1> * 100;",       # 16 + 33 * 100
               out=((4,), "float32"), header=VARIABLES)
    assert got.tolist() == [float(np.float32(3.14159265358979)), 6.140625, 32.0, 3316.0]


def test_variable_template_mistakes() -> None:
    with pytest.raises(CompileError, match="needs template arguments"):
        one("out[0] = c10::metal::pi_v;", header=VARIABLES)
    with pytest.raises(CompileError, match="takes 2 template argument"):
        one("out[0] = c10::metal::bits_v<int, 1, 2>;", header=VARIABLES)
