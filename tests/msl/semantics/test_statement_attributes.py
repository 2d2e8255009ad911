"""Attributes in front of a statement (``[[likely]] if (c) ...``, ``[[unroll]] for (...)``).

C++ (and Metal, which is C++) lets a statement, a label and a declaration begin with attributes;
they change nothing a kernel computes. The simulator parses each attributed statement as its
unattributed twin, runs it to the twin's outputs and to g++'s (``[[likely]]``/``[[unlikely]]``
are C++20), and warns as clang does about an attribute it does not know, which it ignores.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from metal_puzzles.msl import simulate
from metal_puzzles.msl.front.parser import Parser
from metal_puzzles.msl.front.preprocessor import Preprocessor
from metal_puzzles.msl.lang.errors import CompileWarning

CASES = {
    "[[likely]] if, [[unlikely]] else": (
        "int c = 3;\n[[likely]] if (c > 2) out[0] = 2.0f; else [[unlikely]] out[0] = 3.0f;\n"
        "[[unlikely]] if (c > 5) { out[1] = 4.0f; } else { out[1] = 5.0f; }"),
    "[[unroll]] for": "float s = 0.0f;\n[[unroll]] for (int k = 0; k < 4; k++) s += float(k);\nout[0] = s;",
    "while and do": ("int k = 0;\n[[likely]] while (k < 5) k++;\nout[0] = float(k);\n"
                     "[[unlikely]] do { k--; } while (k > 2);\nout[1] = float(k);"),
    "a block and an empty statement": "[[likely]] { out[0] = 4.0f; }\n[[unlikely]] ;\nout[1] = 1.0f;",
    "a declaration": "[[maybe_unused]] int x = 3;\n[[maybe_unused]] float y(2.5f);\nout[0] = float(x) * y;",
    "an expression statement": "[[unlikely]] out[0] = 5.0f;\n[[likely]] out[1] += 1.0f;",
    "labels and [[fallthrough]]": (
        "int n = 0;\nfor (int k = 0; k < 3; k++) {\n  switch (k) {\n  [[likely]] case 0: n += 1; [[fallthrough]];\n"
        "  [[unlikely]] case 1: n += 10; break;\n  [[likely]] default: n += 100;\n  }\n}\nout[0] = float(n);"),
    "several attributes": "[[likely]] [[maybe_unused]] int z = 7;\n[[likely, unroll]] for (int k = 0; k < 2; k++) z++;\n"
                          "out[0] = float(z);",
}

#: Attributes clang does not know: ignored, with a warning.
UNKNOWN = {"[[unroll]] for": ["unroll"], "several attributes": ["unroll"]}


def _run(body: str) -> np.ndarray:
    res = simulate("k", [], ["out"], body, inputs=[], output_shapes=[(2,)], output_dtypes=["float32"],
                   grid=(1, 1, 1), threadgroup=(1, 1, 1), init_value=0.0)
    return res.outputs[0]


def _quiet_run(body: str) -> np.ndarray:
    """The outputs, the warnings aside (a kernel compiled before, from the cache, warns no more)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        return _run(body)


def _parse_warnings(body: str) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Parser(Preprocessor().process(body, "source")).parse_body()
    return [str(w.message) for w in caught if issubclass(w.category, CompileWarning)]


def _unattributed(body: str) -> str:
    return re.sub(r"\[\[[^\]]*\]\]", "", body)


def _gpp(body: str, tmp_path: Path) -> np.ndarray:
    """``body`` run by g++ (C++20) as the body of a function with ``float out[2]`` zeroed."""
    cpp = tmp_path / "k.cpp"
    cpp.write_text("#include <cstdio>\nint main() {\nfloat out[2] = {0.0f, 0.0f};\n" + body
                   + '\nstd::printf("%.9g %.9g\\n", out[0], out[1]);\n}\n', encoding="utf-8")
    exe = tmp_path / "k"
    subprocess.run(["g++", "-std=c++20", "-o", str(exe), str(cpp)], check=True, capture_output=True)
    done = subprocess.run([str(exe)], check=True, capture_output=True, text=True)
    return np.array([float(v) for v in done.stdout.split()], dtype=np.float32)


@pytest.mark.parametrize("name", CASES)
def test_an_attributed_statement_runs_as_its_unattributed_twin(name: str) -> None:
    np.testing.assert_array_equal(_quiet_run(CASES[name]), _run(_unattributed(CASES[name])))


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
@pytest.mark.parametrize("name", CASES)
def test_gpp_runs_them_the_same(name: str, tmp_path: Path) -> None:
    np.testing.assert_array_equal(_quiet_run(CASES[name]), _gpp(CASES[name], tmp_path))


@pytest.mark.parametrize("name", CASES)
def test_only_attributes_clang_does_not_know_warn(name: str) -> None:
    expected = [f"unknown attribute '{a}' ignored" for a in UNKNOWN.get(name, [])]
    shown = _parse_warnings(CASES[name])
    assert len(shown) == len(expected) and all(e in m for e, m in zip(expected, shown, strict=True)), shown


def test_scoped_attributes_and_attribute_arguments_are_not_judged() -> None:
    assert _parse_warnings("int a = 1;\n[[clang::nomerge]] a++;\n[[assume(a > 0, b)]] a++;") == []


def test_an_unknown_attribute_is_ignored_with_clangs_warning_at_its_name() -> None:
    with pytest.warns(CompileWarning, match=r"source:2:3: warning: unknown attribute 'unroll' ignored"):
        out = _run("float s = 1.0f;\n[[unroll]] while (s < 8.0f) s *= 2.0f;\nout[0] = s;")
    assert out[0] == 8.0


@pytest.mark.parametrize("header", ["[[maybe_unused]] typedef float T;\n[[maybe_unused]];\nconstant T K = 2.5f;",
                                    "[[maybe_unused]] constant float K = 2.5f;"])
def test_a_header_declaration_with_attributes_in_front_means_its_twin(header: str) -> None:
    """The header's top level skipped the attributes after taking its first token (the statements'
    gap): '[[maybe_unused]] typedef float T;' was read as a variable of type 'typedef'."""
    res = simulate("k", [], ["out"], "out[0] = K;", header, inputs=[], output_shapes=[(1,)],
                   output_dtypes=["float32"], grid=(1, 1, 1), threadgroup=(1, 1, 1))
    assert res.outputs[0][0] == 2.5
