"""An explicit instantiation must instantiate a template, as clang requires (issue 29): its
parameter types, once the template's arguments are given or deduced, are exactly the
template's. Clang refuses the shader otherwise ("explicit instantiation of 'f' does not refer to
a function template..."); so does the library, when it is built, with both signatures.

C++ has the same rule, so g++ is the reference for everything but address spaces: each
instantiation below is written once with macros that are Metal's attributes and address spaces
in the shader and nothing (or 'const' for constant) in C++, and the simulator must accept
exactly what g++ accepts. Address spaces, which g++ does not have, are checked on their own.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from metal_puzzles.msl import CompileError
from metal_puzzles.msl.shader_program import ShaderLibrary

TEMPLATE = """
template <typename T>
KERNEL void f(DEVICE const T* a BUF(0), DEVICE T* b BUF(1), CONSTANT float& w BUF(2), CONSTANT uint& n BUF(3),
              uint i ATTR) {
  if (i < n) b[i] = T(a[i] * w);
}
"""

METAL_MACROS = """\
#define KERNEL kernel
#define DEVICE device
#define CONSTANT constant
#define BUF(k) [[buffer(k)]]
#define ATTR [[thread_position_in_grid]]
#define HOST(name) [[host_name(name)]]
"""

CXX_MACROS = """\
#include <cstdint>
typedef unsigned int uint;
#define KERNEL
#define DEVICE
#define CONSTANT const
#define BUF(k)
#define ATTR
#define HOST(name)
"""

INSTANTIATION = 'template HOST("k") KERNEL void '

# (the instantiation after 'void ', what clang / g++ do with it)
CASES = [
    ("f<float>(DEVICE const float*, DEVICE float*, CONSTANT float&, CONSTANT uint&, uint);", True),
    # The mistake: a reference to another integer type.
    ("f<float>(DEVICE const float*, DEVICE float*, CONSTANT float&, CONSTANT int&, uint);", False),
    # A value parameter's own const is not part of the function's type; a pointer's own neither.
    ("f<float>(DEVICE const float*, DEVICE float*, CONSTANT float&, CONSTANT uint&, const uint);", True),
    ("f<float>(DEVICE const float* const, DEVICE float*, CONSTANT float&, CONSTANT uint&, uint);", True),
    # The pointee's const is.
    ("f<float>(DEVICE float*, DEVICE float*, CONSTANT float&, CONSTANT uint&, uint);", False),
    # A reference is not a value, nor a reference to non-const one to const.
    ("f<float>(DEVICE const float*, DEVICE float*, CONSTANT float&, uint, uint);", False),
    ("f<float>(DEVICE const float*, DEVICE float*, float&, CONSTANT uint&, uint);", False),
    ("f<float>(DEVICE const float*, DEVICE float*, CONSTANT float&, CONSTANT uint&, int);", False),
    # Another spelling of one type, and arrays as pointers.
    ("f<float>(DEVICE const float*, DEVICE float*, CONSTANT float&, CONSTANT uint32_t&, unsigned int);", True),
    ("f<float>(DEVICE const float a[], DEVICE float b[], CONSTANT float&, CONSTANT uint&, uint);", True),
    # A template argument the parameters contradict, and a parameter too few.
    ("f<float>(DEVICE const int*, DEVICE float*, CONSTANT float&, CONSTANT uint&, uint);", False),
    ("f<float>(DEVICE const float*, DEVICE float*, CONSTANT float&, CONSTANT uint&);", False),
    ("f<float, int>(DEVICE const float*, DEVICE float*, CONSTANT float&, CONSTANT uint&, uint);", False),
    # Deduced template arguments: consistent, conflicting, and deduced but contradicted elsewhere.
    ("f(DEVICE const float*, DEVICE float*, CONSTANT float&, CONSTANT uint&, uint);", True),
    ("f(DEVICE const int*, DEVICE int*, CONSTANT float&, CONSTANT uint&, uint);", True),
    ("f(DEVICE const float*, DEVICE int*, CONSTANT float&, CONSTANT uint&, uint);", False),
    ("f(DEVICE const float*, DEVICE float*, CONSTANT float&, CONSTANT int&, uint);", False),
    ("f(DEVICE const float*, DEVICE float*, CONSTANT float&, CONSTANT uint&, uint, uint);", False),
]


def shader(instantiation: str) -> str:
    return METAL_MACROS + TEMPLATE + INSTANTIATION + instantiation + "\n"


def simulator_accepts(instantiation: str) -> bool:
    try:
        ShaderLibrary(shader(instantiation)).kernel("k")
    except CompileError:
        return False
    return True


def gpp_accepts(instantiation: str, tmp_path) -> bool:
    path = tmp_path / "instantiation.cpp"
    path.write_text(CXX_MACROS + TEMPLATE + INSTANTIATION + instantiation + "\n", encoding="utf-8")
    done = subprocess.run(["g++", "-std=c++14", "-fsyntax-only", str(path)], capture_output=True, text=True)
    return done.returncode == 0


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ as the reference")
@pytest.mark.parametrize(("instantiation", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_simulator_accepts_an_instantiation_exactly_when_gpp_does(instantiation, expected, tmp_path):
    assert gpp_accepts(instantiation, tmp_path) is expected  # the table says what C++ does
    assert simulator_accepts(instantiation) is expected


@pytest.mark.parametrize(("instantiation", "expected"), [c for c in CASES if not c[1]], ids=[c[0] for c in CASES if not c[1]])
def test_a_refused_instantiation_fails_when_the_library_is_built(instantiation, expected):
    with pytest.raises(CompileError):
        ShaderLibrary(shader(instantiation))


def test_the_error_is_clang_s_located_at_the_parameter_with_both_signatures():
    source = shader("f<float>(DEVICE const float*, DEVICE float*, CONSTANT float&, CONSTANT int&, uint);")
    with pytest.raises(CompileError) as info:
        ShaderLibrary(source)
    err = info.value
    assert err.message.startswith("explicit instantiation of 'f' does not refer to a function template, variable "
                                  "template, member function, member class, or static data member")
    assert "parameter 4 is 'constant int&' here, but the template's 'n' is 'constant uint&'" in err.message
    assert ("the template is 'f(device const T* a, device T* b, constant float& w, constant uint& n, uint i)', the "
            "instantiation declares 'f(const device float*, device float*, constant float&, constant int&, uint)'"
            ) in err.message
    line = source.splitlines()[err.pos.line - 1]
    assert line.startswith(INSTANTIATION) and line[err.pos.col - 1:].startswith("CONSTANT int&")


# ----------------------------------------------------------------------------- Metal's address spaces
@pytest.mark.parametrize(("instantiation", "accepted"), [
    ("f<float>(device const float*, device float*, constant float&, constant uint&, uint);", True),
    # Another address space is another type: of a pointer's pointee, and of a reference.
    ("f<float>(constant float*, device float*, constant float&, constant uint&, uint);", False),
    ("f<float>(device const float*, threadgroup float*, constant float&, constant uint&, uint);", False),
    ("f<float>(device const float*, device float*, device const float&, constant uint&, uint);", False),
    ("f<float>(device const float*, device float*, thread const float&, constant uint&, uint);", False),
    # The constant address space is read-only: 'constant const' is the same type.
    ("f<float>(device const float*, device float*, constant const float&, constant uint&, uint);", True),
])
def test_address_spaces_are_part_of_a_parameter_s_type(instantiation, accepted):
    assert simulator_accepts(instantiation) is accepted


def test_lerp_with_a_signed_count_is_refused_by_compile_shader():
    """The issue's case: IV.2 registering lerp with 'constant int&' where the template has 'constant uint&'."""
    from metal_puzzles import compile_shader
    from metal_puzzles.puzzles import get_puzzle, solution_source

    source = solution_source(get_puzzle("lerp_shader"))
    bad = source.replace("constant float&, constant uint&, uint);", "constant float&, constant int&, uint);")
    assert bad != source
    with pytest.raises(CompileError, match="explicit instantiation of 'lerp' does not refer to a function template"):
        compile_shader(bad)
    lib = compile_shader(source)  # and the right one still runs
    out = np.zeros(4, np.float32)
    lib.lerp_float(np.arange(4, dtype=np.float32), np.full(4, 4, np.float32), out, 0.5, 4, threads=4)
    np.testing.assert_allclose(out, [2, 2.5, 3, 3.5])
