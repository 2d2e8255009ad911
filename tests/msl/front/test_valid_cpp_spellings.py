"""Valid C++ the simulator refused (issue 27, section 2), now read as clang reads it:

* a backslash-newline inside a token splices the lines with nothing between (translation phase 2):
  ``ou\\<newline>t[i]`` is ``out[i]``, ``1\\<newline>5`` is ``15``; tokens after a splice keep the
  line and column where they were written;
* identifiers with Unicode letters (``lokál``, ``π``): XID_Start then XID_Continue characters, as
  clang allows; any other character in an identifier is an error at that character;
* a ``//`` comment ending in a backslash goes on into the next line (splicing comes first);
* digraphs: ``<: :> <% %> %: %:%:`` are ``[ ] { } # ##``; ``<::`` followed by neither ``:`` nor
  ``>`` is ``<`` then ``::`` (C++11), so ``static_cast<::metal::uint>`` keeps its meaning.

Each body is also compiled and run by g++ (valid C++ there too), and the outputs compared.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from metal_puzzles.msl import CompileError, simulate


def _run(body: str) -> np.ndarray:
    res = simulate("k", [], ["out"], body, inputs=[], output_shapes=[(2,)], output_dtypes=["float32"],
                   grid=(1, 1, 1), threadgroup=(1, 1, 1), init_value=0.0)
    return res.outputs[0]


def _gpp(body: str, tmp_path: Path) -> np.ndarray:
    """``body`` run by g++ as the body of a function with ``float out[2]`` zeroed."""
    cpp = tmp_path / "k.cpp"
    cpp.write_text("#include <cstdio>\nint main() {\nfloat out[2] = {0.0f, 0.0f};\n" + body
                   + '\nstd::printf("%.9g %.9g\\n", out[0], out[1]);\n}\n', encoding="utf-8")
    exe = tmp_path / "k"
    subprocess.run(["g++", "-std=c++17", "-o", str(exe), str(cpp)], check=True, capture_output=True)
    done = subprocess.run([str(exe)], check=True, capture_output=True, text=True)
    return np.array([float(v) for v in done.stdout.split()], dtype=np.float32)


CASES = {
    "splice inside an identifier": "ou\\\nt[1] = 2.5f;",
    "splice inside a number": "out[0] = 1\\\n5;",
    "splice inside an operator": "float s = 1.0f; s +\\\n= 2.0f; out[0] = s;",
    "splice with spaces after the backslash (clang warns, joins)": "out[1] = 7\\  \n0;",
    "UTF-8 identifiers": "float lokál = 1.5f; float π = 3.0f; out[0] = lokál * π; out[1] = π;",
    "digraph brackets and braces": "out<:1:> = 3.0f; <% out[0] = 4.0f; %>",
    "digraph directive and paste": "%:define CAT(a, b) a %:%: b\nfloat CAT(x, y) = 4.0f; out[0] = xy;",
    "<:: followed by a name is < then ::": "out[0] = static_cast<::uint>(3.9f);",
    "a line comment ending in a backslash goes on": "out[1] = 1.0f; // note \\\nout[0] = 5.0f;",
}
EXPECTED = {
    "splice inside an identifier": [0.0, 2.5], "splice inside a number": [15.0, 0.0],
    "splice inside an operator": [3.0, 0.0], "splice with spaces after the backslash (clang warns, joins)": [0.0, 70.0],
    "UTF-8 identifiers": [4.5, 3.0], "digraph brackets and braces": [4.0, 3.0],
    "digraph directive and paste": [4.0, 0.0], "<:: followed by a name is < then ::": [3.0, 0.0],
    "a line comment ending in a backslash goes on": [0.0, 1.0],
}


@pytest.mark.parametrize("name", CASES)
def test_valid_cpp_spellings_run(name: str) -> None:
    np.testing.assert_array_equal(_run(CASES[name]), np.array(EXPECTED[name], np.float32))


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
@pytest.mark.parametrize("name", [n for n in CASES if "::" not in n])  # ::uint is Metal's, not C++'s
def test_gpp_reads_them_the_same(name: str, tmp_path: Path) -> None:
    np.testing.assert_array_equal(_gpp(CASES[name], tmp_path), _run(CASES[name]))


def test_tokens_after_a_splice_keep_where_they_were_written() -> None:
    with pytest.raises(CompileError) as info:
        _run("float x = 1.0f;\nout[0] = x +\\\n  zz;")
    assert (info.value.line, info.value.col) == (3, 3)
    assert "zz" in info.value.message
    with pytest.raises(CompileError) as info:
        _run("out[0] = no\\\npe;")  # a token spliced from two lines is where it starts
    assert (info.value.line, info.value.col) == (1, 10)
    assert "'nope'" in info.value.message


@pytest.mark.parametrize(("body", "message", "col"), [
    ("float x€ = 1;", "character <U+20AC> not allowed in an identifier", 8),
    ("float \u0301a = 1;", "character <U+0301> not allowed at the start of an identifier", 7),
    ("float a\u200bb = 1;", "character <U+200B> not allowed in an identifier", 8),
])
def test_characters_no_identifier_may_hold_are_errors_at_the_character(body: str, message: str, col: int) -> None:
    with pytest.raises(CompileError) as info:
        _run(body)
    assert info.value.message == message
    assert (info.value.line, info.value.col) == (1, col)
