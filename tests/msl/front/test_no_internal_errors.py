"""Issue 27, section 2: inputs that made a Python exception escape the front end (ValueError,
OverflowError, TypeError) get what clang gives them: a located compile error, or, where clang
only warns, its warning (``CompileWarning``, located) and the value clang folds.

clang's behaviour, case by case (Lex/PPDirectives, Lex/LiteralSupport, Lex/PPExpressions, Sema):
* ``#line`` takes a simple decimal digit sequence: ``0x10`` and ``1u`` are "#line directive requires
  a simple digit sequence" at the first character that is not a digit; a number past its 32-bit
  line counter is "#line directive requires a positive integer argument";
* an octal escape past 255 is "octal escape sequence out of range" (and ``\\x100`` "hex escape
  sequence out of range"), errors;
* a floating constant too large for its type is a warning (-Wliteral-range), the value infinity;
* a multi-character constant is an ``int`` of its last four bytes: 2 or 3 characters warn
  "multi-character character constant", more than 4 "character constant too long for its type";
* in ``#if``, a shift by a negative count or by 64 or more is clang's 64-bit APInt arithmetic
  (``<<`` gives 0, ``>>`` shifts by 63) with the warning "integer overflow in preprocessor
  expression"; in a C++ constant expression it is an error.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from metal_puzzles.msl import CompileError, simulate
from metal_puzzles.msl.lang.errors import CompileWarning


def _run(source: str, dtype: str = "int32", header: str = "") -> np.ndarray:
    res = simulate("k", [], ["out"], source, header, inputs=[], output_shapes=[(1,)], output_dtypes=[dtype],
                   grid=(1, 1, 1), threadgroup=(1, 1, 1))
    return res.outputs[0]


def _error(source: str, header: str = "") -> CompileError:
    with pytest.raises(CompileError) as info:
        _run(source, header=header)
    return info.value


@pytest.mark.parametrize(("source", "col"), [("#line 0x10\nout[0] = 1;", 8), ("#line 1u\nout[0] = 1;", 8),
                                             ("#line 1.5\nout[0] = 1;", 8)])
def test_line_takes_a_simple_digit_sequence(source: str, col: int) -> None:
    err = _error(source)
    assert err.message == "#line directive requires a simple digit sequence"
    assert (err.file, err.line, err.col) == ("source", 1, col)
    assert "^" in str(err)  # the caret under the offending character, as every compile error has


@pytest.mark.parametrize("number", ["9" * 5000, "4294967296"])
def test_line_number_too_large_for_the_line_counter(number: str) -> None:
    err = _error(f"out[0] = 1;\n#line {number}\nout[0] = 2;")
    assert err.message == "#line directive requires a positive integer argument"
    assert (err.line, err.col) == (2, 7)


def test_line_without_a_number() -> None:
    err = _error('#line "file"\nout[0] = 1;')
    assert err.message == "#line directive requires a positive integer argument"
    assert (err.line, err.col) == (1, 7)


def test_line_numbers_still_renumber_what_follows() -> None:
    err = _error("#line 1'000\nout[0] = nope;")
    assert (err.line, err.col) == (1000, 10)
    assert "nope" in err.message


def test_a_5000_digit_integer_literal_is_too_large() -> None:
    err = _error("out[0] = " + "9" * 5000 + ";")
    assert err.message == "integer literal is too large to be represented in any integer type"
    assert (err.line, err.col) == (1, 10)


@pytest.mark.parametrize(("literal", "message", "col"), [
    (r"'\777'", "octal escape sequence out of range", 11),
    (r"'\400'", "octal escape sequence out of range", 11),
    (r"'\x100'", "hex escape sequence out of range", 11),
    (r"'a\x'", "\\x used with no following hex digits", 12),
    (r"'\u00e9'", "character too large for enclosing character literal type", 11),
    (r"'\u12'", "incomplete universal character name (\\u takes 4 hex digits)", 11),
])
def test_escape_sequences_out_of_range(literal: str, message: str, col: int) -> None:
    err = _error(f"out[0] = {literal};")
    assert err.message == message
    assert (err.line, err.col) == (1, col)


@pytest.mark.parametrize(("literal", "value"), [(r"'\377'", -1), (r"'\0'", 0), (r"'\x7f'", 127), ("'A'", 65),
                                                (r"'\n'", 10), (r"'\''", 39), (r"'\101'", 65)])
def test_single_characters_are_signed_chars(literal: str, value: int) -> None:
    assert _run(f"out[0] = {literal};")[0] == value


@pytest.mark.parametrize(("literal", "value", "warning"), [
    ("'abcdefgh'", 0x65666768, "character constant too long for its type"),  # the last four bytes
    ("'abcde'", 0x62636465, "character constant too long for its type"),
    ("'ab'", 0x6162, "multi-character character constant"),
    ("'abcd'", 0x61626364, None),  # -Wfour-char-constants is off by default
    (r"'\377\377\377\377'", -1, None),  # an int: the bytes' two's complement
])
def test_multi_character_constants_are_ints_of_their_last_four_bytes(literal, value, warning) -> None:
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _run(f"int v = {literal}; out[0] = v;")[0] == value
    shown = [str(w.message) for w in caught if issubclass(w.category, CompileWarning)]
    if warning is None:
        assert shown == []
    else:
        assert shown == [f"source:1:9: warning: {warning}"]


def test_an_unknown_escape_is_the_character_with_a_warning() -> None:
    with pytest.warns(CompileWarning, match=r"source:1:11: warning: unknown escape sequence '\\q'"):
        assert _run(r"out[0] = '\q';")[0] == ord("q")


@pytest.mark.parametrize(("literal", "type_name"), [("0x1p99999", "float"), ("0x1p99999f", "float"),
                                                    ("1e39", "float"), ("7e4h", "half")])
def test_floating_constants_too_large_are_an_infinity_with_clangs_warning(literal: str, type_name: str) -> None:
    with pytest.warns(CompileWarning, match=f"source:1:10: warning: magnitude of floating-point constant too "
                                            f"large for type '{type_name}'"):
        assert _run(f"out[0] = {literal};", "float32")[0] == np.inf


def test_the_largest_float_written_out_is_not_an_overflow() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        assert _run("out[0] = 3.40282347e+38f;", "float32")[0] == np.finfo(np.float32).max
        assert _run("out[0] = 0x1.fffffep127f;", "float32")[0] == np.finfo(np.float32).max


def test_a_floating_constant_too_small_is_zero_with_clangs_warning() -> None:
    with pytest.warns(CompileWarning, match="too small for type 'float'"):
        assert _run("out[0] = 1e-50f;", "float32")[0] == 0.0


@pytest.mark.parametrize(("condition", "taken"), [("(1 << -1)", False), ("(1 << 64)", False), ("(1 >> -1)", False),
                                                  ("(-8 >> 99)", True)])
def test_out_of_range_shifts_in_if_fold_as_clang_does(condition: str, taken: bool) -> None:
    col = len("#if ") + 1 + condition.index("<<" if "<<" in condition else ">>")  # at the operator
    with pytest.warns(CompileWarning, match=f"source:1:{col}: warning: integer overflow in preprocessor expression"):
        out = _run(f"#if {condition}\nout[0] = 1;\n#else\nout[0] = 2;\n#endif\n")
    assert out[0] == (1 if taken else 2)


@pytest.mark.parametrize(("expr", "problem"), [("1 << -1", "is negative"), ("1 << 99", ">= width of type")])
def test_out_of_range_shifts_in_a_constant_expression_are_errors(expr: str, problem: str) -> None:
    err = _error("out[0] = K;", header=f"constant int K = {expr};")
    assert err.message.startswith(f"shift count {problem}")
    assert (err.file, err.line, err.col) == ("header", 1, 20)


@pytest.mark.parametrize("literal", ["5849e102841F", "1.5", "0x1p3"])
def test_a_floating_literal_in_if_is_an_error(literal: str) -> None:
    """Found by the fuzz: '#if 1e999f' raised OverflowError (an infinity read as an integer).
    clang refuses the literal without reading its value, so it does not also warn that the value
    is out of range."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        err = _error(f"out[0] = 1;\n#if {literal}\n#endif\n")
    assert err.message == "floating point literal in preprocessor expression"
    assert (err.line, err.col) == (2, 5)


# ---------------------------------------------------------------- found by the fuzz and its probes
def _shader_error(body: str) -> CompileError:
    from metal_puzzles.msl.shader_program import ShaderLibrary

    src = f"kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {{\n{body}\n}}\n"
    with pytest.raises(CompileError) as info:
        ShaderLibrary(src).kernel("k")
    return info.value


@pytest.mark.parametrize(("body", "col"), [
    ("out[0] = " + "1 ? " * 2000 + "1" + " : 0" * 2000 + ";", 258),  # the 63rd 1
    ("float x; " + "x = " * 3000 + "1;", 262),  # the 64th x
])
def test_conditional_and_assignment_chains_are_nesting(body: str, col: int) -> None:
    """'a ? b ? c ...' and 'a = b = c ...' nest to the right: they count against the parser's
    nesting bound like parentheses. They raised RecursionError through compile_shader's path
    and, in a body, got the last-resort error at 1:1."""
    for err, line in ((_error(body), 1), (_shader_error(body), 2)):
        assert err.message.startswith("the kernel is nested too deeply here")
        assert (err.line, err.col) == (line, col)


def test_a_deep_tree_is_refused_before_the_shader_copies_it() -> None:
    """A 20,000-term sum is a tree 20,000 deep: compile_shader copied it (RecursionError) before
    checking its depth."""
    err = _shader_error("out[0] = " + " + ".join(["1"] * 20000) + ";")
    assert err.message.startswith("the kernel is nested too deeply here")
    assert err.line == 2


@pytest.mark.parametrize("levels", [300, 2000])
def test_nested_macro_calls_count_their_arguments(levels: int) -> None:
    """'F(F(F(...)))' read the rest of the text again at each level without counting it: 2,000
    levels took 44 s before RecursionError (shader) or an error. The arguments a use reads count
    against its bound: refused at once, at the use."""
    from metal_puzzles.msl.front.preprocessor import MAX_MACRO_USE_TOKENS, Preprocessor

    pp = Preprocessor()
    with pytest.raises(CompileError, match=f"macro 'F' expands to more than {MAX_MACRO_USE_TOKENS} tokens") as info:
        pp.process("#define F(x) (x)\nint y = " + "F(" * levels + "1" + ")" * levels + ";", "source")
    assert (info.value.line, info.value.col) == (2, 9)
    assert pp.work < 100  # refused while reading the arguments, before expanding anything


def test_nested_macro_calls_of_modest_depth_still_expand() -> None:
    from metal_puzzles.msl.front.preprocessor import Preprocessor

    toks = Preprocessor().process("#define F(x) (x)\nint y = " + "F(" * 20 + "1" + ")" * 20 + ";", "source")
    assert "".join(t.text for t in toks) == "inty=" + "(" * 20 + "1" + ")" * 20 + ";"


def test_a_variadic_template_instantiating_itself_forever_is_refused_at_the_call() -> None:
    """'g(t..., 1)' instantiates g with one more parameter at every level: it took 25-90 s and
    ended in the last-resort error at 1:1. Refused like clang's 'recursive template instantiation
    exceeded maximum depth', at the call that goes one level too deep."""
    err = _error("out[0] = g(1);", header="template<typename... T> int g(T... t) { return g(t..., 1); }")
    assert err.message.startswith("recursive template instantiation exceeded maximum depth of 64")
    assert (err.file, err.line, err.col) == ("header", 1, 48)


def test_a_call_chain_deeper_than_a_thread_may_call_is_refused_when_compiled() -> None:
    fns = "int f0(int x) { return x + 1; }\n" + "".join(
        f"int f{k}(int x) {{ return f{k - 1}(x) + 1; }}\n" for k in range(1, 100))
    err = _error("out[0] = f99(0);", header=fns)
    assert err.message.startswith("'f35' is called more than 64 calls deep")
    assert (err.file, err.line) == ("header", 37)
    assert _run("out[0] = f63(0);", header=fns)[0] == 64  # 64 deep compiles and runs


@pytest.mark.parametrize("path", ["body", "shader"])
def test_recursion_the_bounds_miss_is_a_compile_error_on_both_paths(path: str, monkeypatch) -> None:
    """The last resort: nesting that no bound catches (here the instantiation bound lifted)
    reaches Python's recursion limit. A kernel body turned that into a compile error; a whole
    shader let RecursionError escape. Both compile paths now share the one conversion."""
    from metal_puzzles.msl import program
    from metal_puzzles.msl.front.checker import calls

    monkeypatch.setattr(calls, "MAX_INSTANTIATION_DEPTH", 10**6)
    monkeypatch.setattr(program, "COMPILE_RECURSION_LIMIT", 1500)  # reached sooner, the same way
    header = "template<typename... T> int g(T... t) { return g(t..., 1); }"
    if path == "body":
        err = _error("out[0] = g(1);", header=header)
    else:
        from metal_puzzles.msl.shader_program import ShaderLibrary

        src = header + "\nkernel void k(device float* out [[buffer(0)]]) { out[0] = g(1); }\n"
        with pytest.raises(CompileError) as info:
            ShaderLibrary(src).kernel("k")
        err = info.value
    assert err.message == "the kernel is nested too deeply for the simulator to compile"
    assert err.line == 1


@pytest.mark.parametrize(("size", "col"), [("(auto)NAN > 1", 19), ("(int)NAN", 9), ("uint(NAN)", 9),
                                         ("int(INFINITY)", 9)])
def test_an_infinity_or_nan_made_an_integer_is_not_a_constant(size: str, col: int) -> None:
    """Found by the long fuzz ('thread size_t out[(auto)NAN > F];'): converting NaN or an
    infinity to an integer is undefined in C, so not a constant; it raised ValueError."""
    err = _error(f"float t[{size}];\nout[0] = 1;")
    assert err.message == "array size must be a compile-time constant"
    assert (err.line, err.col) == (1, col)


@pytest.mark.parametrize(("size", "col"), [("1 & NAN", 11), ("~NAN", 9), ("NAN << 1", 13), ("1 << INFINITY", 11)])
def test_bitwise_operators_on_floating_values_are_errors(size: str, col: int) -> None:
    err = _error(f"float t[{size}];\nout[0] = 1;")
    assert "a floating-point value where an integer is needed" in err.message
    assert (err.line, err.col) == (1, col)


@pytest.mark.parametrize(("body", "message", "col"), [
    ("threadgroup void t[4];", "array has incomplete element type 'void'", 1),
    ("void t[2][2];", "array has incomplete element type 'void'", 1),
    ("const void t[2] = {};", "array has incomplete element type 'void'", 1),
    ("threadgroup void t;", "cannot declare a variable of type 'void'", 18),
])
def test_void_arrays_and_threadgroup_variables_are_errors(body: str, message: str, col: int) -> None:
    """Found by the long fuzz ('threadgroup void lokál[sizeof(INT_MAX)];' in a mutated solution):
    the size of threadgroup memory raised TypeError: sizeof(void)."""
    err = _error(body + "\nout[0] = 1;")
    assert err.message == message
    assert (err.line, err.col) == (1, col)


def test_as_type_of_a_value_without_a_size_is_an_error() -> None:
    """Found by the long fuzz in a mutated solution ('as_type<uint>(mem_flags::mem_threadgroup)'):
    the error message itself asked for sizeof(mem_flags) and raised TypeError."""
    err = _error("out[0] = as_type<uint>(mem_flags::mem_threadgroup);")
    assert err.message == "as_type<uint> needs a scalar or vector value of the same size (got 'mem_flags')"
    assert (err.line, err.col) == (1, 10)
