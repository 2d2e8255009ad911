"""The front end never crashes: any source, valid or not, compiles or gets a CompileError.

Issue 20: ``using namespace metal;`` before a body raised AttributeError, and the checking
layer reported that internal error as the student's mistake. Besides that regression, a small
deterministic fuzz: token sequences taken from valid kernels (bodies and headers) are mutated
(tokens dropped, repeated, swapped, replaced by other tokens, the text cut short) and compiled.
Each must either compile or raise ``CompileError`` pointing at a line and column of the
kernel's own text; any other exception is a bug in the simulator.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from metal_puzzles.msl import CompileError, get_kernel, simulate
from metal_puzzles.msl.abi.signature import describe_input
from metal_puzzles.msl.front.lexer import strip_comments, tokenize_line

SEED = 20
MUTANTS_PER_SEED_SOURCE = 60

# (header, body) pairs that compile; the fuzz starts from their tokens.
VALID_SOURCES = [
    ("", "uint i = thread_position_in_grid.x; if (i < 4) { out[i] = a[i] * 2.0f + 1.0f; }"),
    ("", "using namespace metal;\nfloat s = 0.0f; for (int k = 0; k < 4; k++) { s += metal::max(a[k], 0.0f); }"
         " out[0] = s;"),
    ("inline float sq(float v) { return v * v; }\n"
     "template <typename T> T twice(T v) { return v + v; }",
     "out[0] = twice(sq(a[1])) - static_cast<float>(int(a[2]) >> 1);"),
    ("struct P { float x; float y; float dot(P o) const { return x * o.x + y * o.y; } };\n"
     "constant float K[3] = {1.0f, 2.0f, 3.0f};",
     "P p = {a[0], a[1]}; out[0] = p.dot(p) + K[2];"),
    ("namespace ns { inline float f(float v) { return v - 1.0f; } }\ntypedef float real;",
     "real r = ns::f(a[0]); switch (int(r)) { case 0: out[0] = 1; break; default: out[0] = r; }"),
    ("namespace c10 { namespace metal { template <typename T> T mx(T a, T b) { return ::metal::max(a, b); }\n"
     "struct Acc { float s; float get() const { return s; } }; } }",
     "using namespace c10::metal; Acc acc = {mx(a[0], a[1])}; out[0] = ::c10::metal::mx(acc.get(), 1.0f);"),
    ("template <typename T, typename = metal::enable_if_t<metal::is_floating_point_v<T>>> T half_of(T v) "
     "{ static_assert(sizeof(T) >= 2, \"wide\"); return v / T(2); }\n"
     "template <typename T> using acc_t = metal::conditional_t<metal::is_same_v<T, half>, float, T>;\n"
     "struct V { float x; V operator+(V o) const { V r = {x + o.x}; return r; } float operator[](int k) const "
     "{ return x; } };\ninline V operator*(float s, V v) { V r = {s * v.x}; return r; }",
     "V v = {a[0]}; V w = 2.0f * (v + v); acc_t<half> h = half_of(w[0]); out[0] = h;"),
    ("namespace u { template <typename T> struct Op { using type = T; static constexpr int rank = 0; };\n"
     "template <> struct Op<half> { using type = float; static constexpr int rank = 1; };\n"
     "template <typename T> struct Op<vec<T, 2>> { using type = float2; static constexpr int rank = 2; };\n"
     "template <typename T, int N = 2> struct Box { T v[N]; T first() const { return v[0]; } };\n"
     "constexpr int twice(int n) { return 2 * n; }\ntemplate <int N> constexpr constant int pow2 = 1 << N; }",
     "using namespace u; typename Op<half>::type f = a[0]; Box<float, twice(1)> b = {{f, 1.0f}};"
     " float arr[pow2<2> + Op<int2>::rank]; arr[0] = b.first(); out[0] = arr[0];"),
    ("", "threadgroup float tg[4]; tg[thread_position_in_threadgroup.x] = a[0];\n"
         "threadgroup_barrier(mem_flags::mem_threadgroup); float4 v = float4(tg[0]); out[0] = v.x ? v.y : -v.z;"),
]

# Tokens a mutation may insert: C++ that headers use, and punctuation that unbalances things.
ODD_TOKENS = [
    "namespace", "using", "template", "typename", "static_assert", "operator", "constexpr", "::", "<", ">",
    ">>", "{", "}", "(", ")", "[", "]", "[[", "]]", ";", ",", "struct", "class", "enum", "union", "auto",
    "decltype", "sizeof", "const", "device", "thread", "kernel", "void", "return", "=", "&", "&&", "*", "...",
    "0", "1.5f", "'a'", "metal", "T", "x", "?", ":", ".", "->", "~", "#", "typedef", "goto", "friend",
]


def _tokens(text: str) -> list[str]:
    out = []
    for lineno, line in enumerate(strip_comments(text).split("\n"), 1):
        out.extend(t.text for t in tokenize_line(line, "source", lineno))
    return out


def _mutate(tokens: list[str], rng: random.Random, vocabulary: list[str]) -> list[str]:
    """Drop, repeat, swap or replace a few tokens, cut the text short, or splice in a token or
    a short run of tokens from any of the valid sources."""
    toks = list(tokens)
    for _ in range(rng.randint(1, 3)):
        if not toks:
            break
        k = rng.randrange(len(toks))
        action = rng.randrange(7)
        if action == 0:
            del toks[k]
        elif action == 1:
            toks.insert(k, toks[k])
        elif action == 2 and k + 1 < len(toks):
            toks[k], toks[k + 1] = toks[k + 1], toks[k]
        elif action == 3:
            toks[k] = rng.choice(ODD_TOKENS)
        elif action == 4:
            toks[k] = rng.choice(vocabulary)
        elif action == 5:
            start = rng.randrange(len(vocabulary))
            toks[k:k] = vocabulary[start:start + rng.randint(2, 6)]
        else:
            toks = toks[:k] if rng.random() < 0.3 else toks[:k] + [rng.choice(ODD_TOKENS)] + toks[k:]
    return toks


def _compile(header: str, body: str) -> None:
    inputs = [np.arange(8, dtype=np.float32)]
    descs = [describe_input("a", x) for x in inputs]
    get_kernel("fuzz", ["a"], ["out"], body, header, descs, ["float32"], [], False)


def _cases() -> list[tuple[str, str]]:
    rng = random.Random(SEED)
    vocabulary = [t for header, body in VALID_SOURCES for t in _tokens(header) + _tokens(body)]
    cases = []
    for header, body in VALID_SOURCES:
        header_toks, body_toks = _tokens(header), _tokens(body)
        for _ in range(MUTANTS_PER_SEED_SOURCE):
            if header_toks and rng.random() < 0.4:
                cases.append((" ".join(_mutate(header_toks, rng, vocabulary)), body))
            else:
                cases.append((header, " ".join(_mutate(body_toks, rng, vocabulary))))
    return cases


@pytest.mark.parametrize(("header", "body"), VALID_SOURCES)
def test_the_fuzz_starts_from_sources_that_compile(header: str, body: str) -> None:
    _compile(header, body)


def test_mutated_sources_compile_or_give_a_located_compile_error() -> None:
    failures = []
    rejected = 0
    for header, body in _cases():
        try:
            _compile(header, body)
        except CompileError as err:
            rejected += 1
            if err.pos.file not in ("source", "header") or err.pos.line < 1 or err.pos.col < 1:
                failures.append((header, body, f"unlocated: {err.pos} {err.message}"))
        except Exception as exc:  # noqa: BLE001 - any other exception is what this test hunts for
            failures.append((header, body, f"{type(exc).__name__}: {exc}"))
    assert not failures, "\n".join(f"header={h!r}\nbody={b!r}\n  -> {why}" for h, b, why in failures[:10])
    # The mutations mostly break the source: the test exercises the error paths, not only the happy one.
    assert rejected > len(VALID_SOURCES) * MUTANTS_PER_SEED_SOURCE // 2


def _one(body: str) -> float:
    result = simulate("probe", [], ["out"], body, inputs=[], output_shapes=[(1,)], output_dtypes=["float32"],
                      grid=(1, 1, 1), threadgroup=(1, 1, 1))
    return float(result.outputs[0][0])


def test_using_namespace_metal_before_a_body_runs_the_body() -> None:
    # Issue 20: this crashed the parser with AttributeError.
    assert _one("using namespace metal;\nout[0] = max(2.0f, 3.5f);") == 3.5
    assert _one("using metal::min;\nout[0] = min(2.0f, 3.5f);") == 2.0
