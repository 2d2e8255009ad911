"""What a large shader file costs ``compile_shader``: building the library, then each kernel the
first time it is asked for, and the memory the process holds, for a synthetic shader in the
shape of PyTorch's elementwise files (a namespace of helper and trait templates with static_asserts, functors, then
host_name instantiations of two kernel templates per functor and dtype).

    python benchmarks/bench_shader_library.py [--ops 40] [--kernels 200] [--helpers 300]

Run it in two checkouts to compare them (the figures are per process, printed as one table).
It checks every kernel it runs against NumPy and exits 1 on a wrong result; it never judges times.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np

from metal_puzzles import compile_shader

HEADER = """
#include <metal_stdlib>
using namespace metal;
namespace bench {
template <typename T> struct opmath { using type = T; };
template <> struct opmath<half> { using type = float; };
template <typename T> using opmath_t = typename opmath<T>::type;
template <typename T, enable_if_t<is_floating_point_v<T>, bool> = true>
inline opmath_t<T> widen(T x) { return static_cast<opmath_t<T>>(x); }
template <typename T, enable_if_t<is_integral_v<T>, bool> = true>
inline float widen(T x) { return static_cast<float>(x); }
template <typename F, typename T> using result_of = decltype(declval<F>()(declval<T>()));
"""

HELPER = """
template <typename T> struct traits{k} {{ static constexpr int width = sizeof(T) * {k1}; using type = T; }};
static_assert(traits{k}<float>::width == 4 * {k1}, "helper {k}");
template <typename T> inline T helper{k}(T x, int n) {{
  T acc = x;
  for (int j = 0; j < n; ++j) {{ acc = acc * T({k1}) + T(j); }}
  return acc;
}}
"""

FUNCTOR = """
struct op{k}_functor {{
  template <typename T>
  inline float operator()(const T x) {{ return widen(x) * {a}.0f + {b}.0f; }}
}};
"""

KERNELS = """
template <typename T, typename F>
kernel void dense(device float* out [[buffer(0)]], constant T* in [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  F f;
  out[i] = f(in[i]);
}
template <typename T, typename F>
kernel void strided(device float* out [[buffer(0)]], constant T* in [[buffer(1)]], constant long& stride [[buffer(2)]],
                    uint i [[thread_position_in_grid]]) {
  F f;
  out[i] = f(in[i * stride]);
}
} // namespace bench
#define REGISTER(K, T)                                                                                   \\
  template [[host_name("op" #K "_dense_" #T)]] kernel void ::bench::dense<T, ::bench::op##K##_functor>(  \\
      device float*, constant T*, uint);                                                                   \\
  template [[host_name("op" #K "_strided_" #T)]] kernel void ::bench::strided<T, ::bench::op##K##_functor>( \\
      device float*, constant T*, constant long&, uint);
"""

DTYPES = {"float": np.float32, "half": np.float16, "int": np.int32}


def shader(ops: int, helpers: int) -> str:
    body = "".join(HELPER.format(k=k, k1=k % 9 + 1) for k in range(helpers))
    body += "".join(FUNCTOR.format(k=k, a=k % 7 + 1, b=k % 5) for k in range(ops))
    regs = "".join(f"REGISTER({k}, {t})\n" for k in range(ops) for t in DTYPES)
    return HEADER + body + KERNELS + regs


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=40, help="functors in the shader (x3 dtypes x2 kernels)")
    parser.add_argument("--kernels", type=int, default=200, help="how many of its kernels to compile and run")
    parser.add_argument("--helpers", type=int, default=300,
                        help="helper templates and static_asserts around them (PyTorch's c10/metal has hundreds)")
    args = parser.parse_args(argv)
    source = shader(args.ops, args.helpers)
    start = time.perf_counter()
    lib = compile_shader(source)
    built = time.perf_counter() - start
    names = sorted(dir(lib))[: args.kernels]
    x = np.arange(16)
    times = []
    for name in names:
        k = int(name[2:].split("_")[0])
        dtype = DTYPES[name.rsplit("_", 1)[1]]
        data = x.astype(dtype)
        out = np.zeros(8 if "strided" in name else 16, np.float32)
        t = time.perf_counter()
        fn = getattr(lib, name)
        times.append(time.perf_counter() - t)
        args_ = (out, data, 2) if "strided" in name else (out, data)
        fn(*args_, threads=out.size)
        step = 2 if "strided" in name else 1
        want = data[::step][: out.size].astype(np.float32) * np.float32(k % 7 + 1) + np.float32(k % 5)
        if not np.array_equal(out, want):
            print(f"WRONG: {name}: {out[:4]} != {want[:4]}")
            return 1
    t = np.array(times)
    print(f"{'shader':<28}{len(source) // 1024} KiB, {len(dir(lib))} kernels")
    print(f"{'library built':<28}{built:.2f} s")
    print(f"{'first kernel':<28}{t[0]:.3f} s")
    print(f"{'each further kernel':<28}median {np.median(t[1:]):.3f} s, max {t[1:].max():.3f} s "
          f"({len(t) - 1} kernels)")
    print(f"{'all kernels compiled in':<28}{t.sum():.1f} s")
    print(f"{'peak resident memory':<28}{peak_mib():.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
