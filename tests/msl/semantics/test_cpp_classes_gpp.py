"""Static member functions, constructors, type transforms and function pointer parameters
checked against g++ (issue 23): one portable C++ header computes a float per thread id; g++
runs it natively (``metal::`` names map to ``std::``) and the simulator runs it as a kernel's
header; every output agrees bit for bit.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from .conftest import out0

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ as the reference")

THREADS = 32

HEADER = """
struct MaxOp {
    static constexpr float identity() { return -1.0e30f; }
    static float apply(float a, float b) { return a > b ? a : b; }
};
struct SumOp {
    static constexpr float identity() { return 0.0f; }
    static float apply(float a, float b) { return a + b; }
};
template <typename T> struct Scaled {
    static T apply(T a, T b) { return a * T(3) - b; }
    static constexpr int width() { return int(sizeof(T)) * 2; }
};
template <typename Op> float reduce(int i) {
    float acc = Op::identity();
    for (int k = 0; k < 4; k++) acc = Op::apply(acc, float((i * 7 + k * 5) % 11) * 0.25f);
    return acc;
}
struct Welford {
    float mean;
    float m2;
    int count;
    Welford() : mean(0.0f), m2(0.0f), count(0) {}
    Welford(float first) : mean(first), m2(0.0f), count(1) {}
    void push(float x) {
        count += 1;
        float d = x - mean;
        mean += d / float(count);
        m2 += d * (x - mean);
    }
    float variance() const { return count > 1 ? m2 / float(count - 1) : 0.0f; }
};
template <typename T, int N> struct Tile {
    T base;
    int stride;
    T bias = T(1);
    Tile(T b, int s) : base(b * T(N)), stride(s) {}
    T at(int r) const { return base + T(r * stride) + bias; }
};
float add(float a, float b) { return a + b; }
float diff(float a, float b) { return a - b; }
template <typename T> T fold3(T x, T y, T z, T (*op)(T, T)) { return op(op(x, y), z); }
template <typename T> float kind(T x, metal::true_type) { return float(x) * 0.5f; }
template <typename T> float kind(T x, metal::false_type) { return float(x) + 0.75f; }
float compute(int i) {
    float r = reduce<MaxOp>(i) + reduce<SumOp>(i) * 0.5f;
    r += Scaled<float>::apply(float(i), 1.5f) + float(Scaled<int>::apply(i, 2)) + float(Scaled<short>::width());
    Welford w{float(i)};
    for (int k = 1; k < 5; k++) w.push(float((i + k * 3) % 7) * 1.25f);
    r += w.variance() + w.mean;
    Welford empty;
    r += empty.variance() + Welford(2.0f).mean;
    Tile<float, 2> t(float(i), 3);
    r += t.at(i % 4) + float(Tile<int, 3>(i, 2).at(1));
    r += fold3(float(i), 0.5f, 2.0f, add) + fold3(float(i), 0.5f, 2.0f, diff);
    metal::make_unsigned_t<int> u = metal::make_unsigned_t<int>(i) - 5u;
    r += float(u % 1000u);
    metal::remove_cv_t<const float> f = float(i) / 3.0f;
    r += f + kind(i, metal::bool_constant<metal::is_floating_point<float>::value>{}) + kind(i, metal::false_type{});
    return r;
}
"""

CXX_MAIN = """
#include <cstdio>
#include <type_traits>
namespace metal { using namespace std; }
%s
int main() {
    for (int i = 0; i < %d; i++) std::printf("%%a\\n", double(compute(i)));
    return 0;
}
"""


def _gpp_outputs(tmp_path: Path) -> np.ndarray:
    src = tmp_path / "classes.cpp"
    exe = tmp_path / "classes"
    src.write_text(CXX_MAIN % (HEADER, THREADS))
    subprocess.run(["g++", "-std=c++17", "-O0", "-ffp-contract=off", "-o", str(exe), str(src)], check=True,
                   capture_output=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    return np.array([float.fromhex(x) for x in lines], dtype=np.float32)


def test_the_simulator_agrees_with_gpp_bit_for_bit(tmp_path: Path) -> None:
    want = _gpp_outputs(tmp_path)
    got = out0("uint i = thread_position_in_grid.x; out[i] = compute(int(i));", out=((THREADS,), "float32"),
               grid=(THREADS, 1, 1), header=HEADER)
    assert want.shape == (THREADS,)
    assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()
