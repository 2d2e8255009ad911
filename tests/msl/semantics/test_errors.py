"""Compile errors read like a compiler's — `source:LINE:COL: error: message`, the offending
line, a caret — with positions counted in the learner's own `source` or `header` string, and
"did you mean" hints for misspelt names. Constructs outside the supported subset are compile
errors, never wrong answers. Runtime errors name the thread."""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import CompileError, KernelRuntimeError

from .conftest import run


def compile_error(source: str, header: str = "", **kw: object) -> CompileError:
    """Run a kernel that must fail to compile and return the error."""
    with pytest.raises(CompileError) as info:
        run(source, header=header, **kw)
    return info.value


def caret_column(err: CompileError) -> int:
    """1-based column of the caret in the rendered error (the line after the quoted source)."""
    lines = str(err).splitlines()
    caret = next(line for line in lines[1:] if line.strip() == "^")
    return caret.index("^") + 1


def test_undeclared_identifier_position_and_hint() -> None:
    """A misspelt local: file/line/column point at it, the message suggests the real name."""
    src = "uint local_i = thread_position_in_grid.x;\nout[local_i] = locl_i * 2;"
    err = compile_error(src, out=((4,), "float32"), grid=(4, 1, 1))
    assert (err.file, err.line, err.col) == ("source", 2, 16)
    assert "use of undeclared identifier 'locl_i'" in err.message
    assert "did you mean 'local_i'?" in err.message
    text = str(err)
    assert text.splitlines()[0].startswith("source:2:16: error: ")
    assert "out[local_i] = locl_i * 2;" in text.splitlines()
    assert caret_column(err) == 16


def test_error_in_header_points_into_header() -> None:
    """An error inside a header helper is reported against `header`, with header line numbers."""
    header = "float f(float x) {\n  return y;\n}"
    err = compile_error("out[0] = f(1.0f);", header=header)
    assert (err.file, err.line, err.col) == ("header", 2, 10)
    assert "'y'" in err.message
    assert str(err).startswith("header:2:10: error: ")


def test_source_line_numbers_ignore_header_and_signature() -> None:
    """With a multi-line header, source errors still count lines from the source's first line."""
    header = "#define N 4\nconstant float k = 2.0f;\nfloat g(float x) { return x * k; }\n"
    src = "float v = g(1.0f);\nfloat w = v + N;\nout[0] = w + oops;"
    err = compile_error(src, header=header)
    assert (err.file, err.line, err.col) == ("source", 3, 14)


def test_misspelt_thread_attribute_suggests_real_one() -> None:
    """thread_position_in_grd is not an attribute; the hint names thread_position_in_grid."""
    err = compile_error("out[thread_position_in_grd.x] = 1;", out=((2,), "float32"), grid=(2, 1, 1))
    assert "thread_position_in_grd" in err.message
    assert "did you mean 'thread_position_in_grid'?" in err.message
    assert (err.line, err.col) == (1, 5)


def test_misspelt_builtin_function_suggests_real_one() -> None:
    """sqrtt(...) suggests sqrt."""
    err = compile_error("out[0] = sqrtt(2.0f);")
    assert "sqrtt" in err.message
    assert "did you mean 'sqrt'?" in err.message
    assert (err.line, err.col) == (1, 10)


def test_misspelt_type_name() -> None:
    """`flaot x` is an unknown type name with a hint."""
    err = compile_error("flaot x = 1.0f;\nout[0] = x;")
    assert "flaot" in err.message
    assert "did you mean 'float'?" in err.message
    assert (err.line, err.col) == (1, 1)


def test_misspelt_input_name_suggests_input() -> None:
    """Kernel parameters are candidates for the hint too."""
    err = compile_error("out[0] = inptu[0];", inputs={"input": np.ones(8, np.float32)})
    assert "did you mean 'input'?" in err.message


def test_missing_semicolon() -> None:
    """A missing ';' is a syntax error located at the end of the statement or the next token."""
    err = compile_error("int x = 1\nout[0] = x;")
    assert "expected ';'" in err.message
    assert (err.line, err.col) in {(1, 10), (2, 1)}


def test_unexpected_token_in_expression() -> None:
    """`(1 + ;` is an incomplete expression."""
    err = compile_error("out[0] = (1 + );")
    assert err.file == "source"
    assert err.line == 1
    assert "expected" in err.message


def test_unbalanced_brace() -> None:
    """A block that never closes is a compile error."""
    err = compile_error("if (true) {\nout[0] = 1;")
    assert err.file == "source"


def test_assign_to_const_input() -> None:
    """Inputs are `const device T*`: writing one is an error."""
    err = compile_error("a[0] = 1.0f; out[0] = 0;", inputs={"a": np.ones(8, np.float32)})
    # clang marks either the left operand (col 1) or the `=` (col 6).
    assert (err.line, err.col) in {(1, 1), (1, 6)}
    assert "const" in err.message or "read-only" in err.message


def test_redefinition_in_same_scope() -> None:
    """Declaring one name twice in a scope is an error naming it."""
    err = compile_error("int x = 1;\nint x = 2;\nout[0] = x;")
    assert err.line == 2
    assert "redefinition" in err.message and "'x'" in err.message


def test_vector_to_scalar_initialisation_is_an_error() -> None:
    """A float4 cannot initialise an int."""
    err = compile_error("float4 v = float4(1, 2, 3, 4);\nint x = v;\nout[0] = x;")
    assert err.line == 2


def test_wrong_argument_count_to_helper() -> None:
    """Calling a helper with too many arguments is an error at the call."""
    err = compile_error("out[0] = sq(1.0f, 2.0f);", header="float sq(float x) { return x * x; }")
    assert err.file == "source"
    assert (err.line, err.col) == (1, 10)


def test_undeclared_shape_of_unknown_input() -> None:
    """b_shape only exists for an input named b."""
    err = compile_error("out[0] = b_shape[0];", inputs={"a": np.ones(8, np.float32)})
    assert "b_shape" in err.message


@pytest.mark.parametrize(
    "body",
    [
        "double d = 1.0; out[0] = d;",
        "throw 1;",
        "float* p = new float[4]; out[0] = p[0];",
        "goto done; done: out[0] = 1;",
        "out[0] = (float)typeid(int).hash_code();",
    ],
    ids=["double", "throw", "new", "goto", "typeid"],
)
def test_unsupported_constructs_are_compile_errors(body: str) -> None:
    """Constructs outside the MSL subset raise CompileError (never run to a wrong answer)."""
    err = compile_error(body)
    assert err.file == "source"
    assert err.line >= 1


def test_recursion_runs_and_a_runaway_one_stops_with_a_message() -> None:
    """Metal compiles recursive calls (PyTorch's gamma and log_gamma call each other); a thread's
    stack is small, so a recursion that does not end stops at the depth limit, at its call."""
    header = ("int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }\n"
              "int forever(int n) { return forever(n + 1); }")
    assert run("out[0] = fact(5);", header=header, out=((1,), "int32")).outputs[0][0] == 120
    with pytest.raises(KernelRuntimeError, match="'forever' is called more than 64 calls deep") as info:
        run("out[0] = forever(0);", header=header, out=((1,), "int32"))
    assert info.value.pos.file == "header" and info.value.pos.line == 2


def test_error_in_macro_expansion_points_at_use_in_source() -> None:
    """An undeclared name inside a macro body is reported; the location is a real position in
    the learner's text (header where the macro is defined, or source where it is used)."""
    header = "#define USE_MISSING (missing_thing + 1)"
    err = compile_error("float ok = 1.0f;\nout[0] = USE_MISSING;", header=header)
    assert "missing_thing" in err.message
    assert (err.file, err.line) in {("source", 2), ("header", 1)}


# -------------------------------------------------------------------- runtime


def test_integer_division_by_zero_names_the_thread() -> None:
    """Thread 2 divides by zero: the runtime error names it, as every message names a thread."""
    src = "uint i = thread_position_in_grid.x; out[i] = 10 / a[i];"
    a = np.array([1, 2, 0, 4], dtype=np.int32)
    with pytest.raises(KernelRuntimeError) as info:
        run(src, inputs={"a": a}, out=((4,), "int32"), grid=(4, 1, 1))
    err = info.value
    assert getattr(err, "thread", None) == (2, 0, 0)
    assert "thread 2 computes an integer division by zero" in str(err)


def test_out_of_bounds_read_names_the_thread() -> None:
    """Threads 4..7 read past a 4-element input: the error names one of them."""
    src = "uint i = thread_position_in_grid.x; out[i] = a[i];"
    a = np.arange(4, dtype=np.float32)
    with pytest.raises(KernelRuntimeError) as info:
        run(src, inputs={"a": a}, out=((8,), "float32"), grid=(8, 1, 1))
    text = str(info.value)
    culprits = [(t, 0, 0) for t in range(4, 8)]
    assert getattr(info.value, "thread", None) in culprits or any(str(c) in text for c in culprits)


def test_infinite_loop_hits_step_budget() -> None:
    """A loop that never ends stops with a runtime error instead of hanging."""
    src = "uint i = thread_position_in_grid.x; int k = 0; while (k >= 0) { k = (k + 1) % 10; } out[i] = k;"
    with pytest.raises(KernelRuntimeError):
        run(src, out=((2,), "int32"), grid=(2, 1, 1))


# ----------------------------------------------------------- type-check errors


def test_bool_vector_in_if_is_an_error() -> None:
    """`if (a == b)` with float4 operands: bool4 is not contextually convertible to bool."""
    src = "float4 a = float4(1);\nfloat4 b = float4(1);\nif (a == b) { out[0] = 1; }"
    err = compile_error(src)
    assert err.line == 3


def test_implicit_vector_type_conversion_is_an_error() -> None:
    """Vector types do not convert implicitly: `float2 f = int2(1, 2);` is rejected."""
    err = compile_error("float2 f = int2(1, 2);\nout[0] = f.x;")
    assert err.line == 1


def test_assign_to_const_local_is_an_error() -> None:
    """A const local cannot be assigned."""
    err = compile_error("const int k = 3;\nk = 4;\nout[0] = k;")
    assert err.line == 2


def test_error_directive() -> None:
    """#error stops compilation with its message."""
    err = compile_error("#error custom stop here\nout[0] = 1;")
    assert "custom stop here" in err.message
    assert err.line == 1


def test_unknown_member_of_vector() -> None:
    """float2 has no .z component."""
    err = compile_error("float2 v = float2(1, 2);\nout[0] = v.z;")
    assert err.line == 2


def test_swizzle_assignment_with_repeated_component_is_an_error() -> None:
    """`v.xx = ...` writes one component twice and is not assignable."""
    err = compile_error("float2 v = float2(1, 2);\nv.xx = float2(3, 4);\nout[0] = v.x;")
    assert err.line == 2


def test_writing_a_constant_global_is_an_error() -> None:
    """Program-scope `constant` data is read-only."""
    err = compile_error("k[0] = 2.0f;\nout[0] = k[0];", header="constant float k[2] = {1.0f, 2.0f};")
    assert (err.file, err.line) == ("source", 1)


def test_threadgroup_variable_with_initialiser_is_an_error() -> None:
    """Metal forbids initialisers on threadgroup variables."""
    err = compile_error("threadgroup float s[4] = {0, 0, 0, 0};\nout[0] = s[0];")
    assert err.line == 1


def test_break_outside_loop_is_an_error() -> None:
    """break outside a loop (or switch) does not compile."""
    err = compile_error("out[0] = 1;\nbreak;")
    assert err.line == 2


def test_return_value_from_kernel_is_an_error() -> None:
    """The kernel returns void: `return 1;` is rejected."""
    err = compile_error("out[0] = 1;\nreturn 1;")
    assert err.line == 2


def test_windows_line_endings_count_lines_normally() -> None:
    """CRLF line endings (notebooks saved on Windows) do not shift line or column numbers."""
    err = compile_error("int x = 1;\r\nout[0] = y;\r\n")
    assert (err.file, err.line, err.col) == ("source", 2, 10)


def test_tab_counts_as_one_column_like_clang() -> None:
    """Columns count characters (a tab is one column, as clang counts it)."""
    err = compile_error("\tout[0] = zz;")
    assert (err.line, err.col) == (1, 11)


@pytest.mark.parametrize(
    ("body", "col"),
    [("out[threadIdx.x] = 1;", 5), ("__syncthreads();", 1), ("for i in range(4):\n    out[i] = 1", 5)],
    ids=["cuda-threadIdx", "cuda-syncthreads", "python-for"],
)
def test_foreign_idioms_are_located_errors(body: str, col: int) -> None:
    """CUDA or Python habits fail to compile, pointing at the first offending token."""
    err = compile_error(body, out=((4,), "float32"), grid=(4, 1, 1))
    assert (err.file, err.line, err.col) == ("source", 1, col)


def test_uint3_position_assigned_to_uint_is_an_error() -> None:
    """`uint i = thread_position_in_grid;` forgets `.x`: a uint3 does not convert to uint."""
    err = compile_error("uint i = thread_position_in_grid;\nout[i] = 1;", out=((4,), "float32"),
                        grid=(4, 1, 1))
    assert (err.line, err.col) in {(1, 10), (1, 6)}


def test_mutual_recursion_through_a_forward_declaration() -> None:
    """Two functions calling each other, as PyTorch's gamma and log_gamma do: up(x) adds 5 until
    x reaches 12, each step through down(); from 3: 3 -> 8 -> 13, plus 100 for each down()."""
    header = ("float down(float x);\n"
              "float up(float x) { return x >= 12.0f ? x : down(x + 5.0f); }\n"
              "float down(float x) { return up(x) + 100.0f; }")
    assert run("out[0] = up(3.0f);", header=header).outputs[0][0] == 213.0
