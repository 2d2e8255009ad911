"""The preprocessor on its own: macros, conditionals, positions and the expansion cap."""

from __future__ import annotations

import pytest

from metal_puzzles.msl import CompileError
from metal_puzzles.msl.front.preprocessor import (
    MAX_EXPANSION_TOKENS,
    MAX_MACRO_USE_TOKENS,
    MAX_SHADER_EXPANSION_TOKENS,
    Preprocessor,
)


def texts(src: str) -> list[str]:
    return [t.text for t in Preprocessor().process(src, "source")]


def test_object_and_function_like_macros() -> None:
    src = "#define N 4\n#define SQ(x) ((x) * (x))\nint a = SQ(N + 1);"
    assert texts(src) == ["int", "a", "=", "(", "(", "4", "+", "1", ")", "*", "(", "4", "+", "1", ")", ")", ";"]


def test_stringify_and_paste() -> None:
    assert texts('#define CAT(a, b) a##b\nint CAT(x, 1) = 0;') == ["int", "x1", "=", "0", ";"]


def test_conditionals_choose_lines() -> None:
    src = "#define USE 2\n#if USE > 1\nint a;\n#elif USE\nint b;\n#else\nint c;\n#endif\n#ifdef NOPE\nint d;\n#endif"
    assert texts(src) == ["int", "a", ";"]


def test_predefined_metal_version() -> None:
    assert texts("#if __METAL_VERSION__ >= 300\nint new_;\n#endif") == ["int", "new_", ";"]


def test_expanded_tokens_keep_the_use_position() -> None:
    toks = Preprocessor().process("#define ONE 1\n\nint a = ONE;", "source")
    one = next(t for t in toks if t.text == "1")
    assert (one.pos.line, one.pos.file) == (3, "source")


def test_self_reference_does_not_loop() -> None:
    assert texts("#define x x + 1\nint y = x;") == ["int", "y", "=", "x", "+", "1", ";"]


def test_unterminated_conditional_is_an_error() -> None:
    with pytest.raises(CompileError, match="#endif"):
        Preprocessor().process("#if 1\nint a;", "source")


def test_exponential_macro_is_stopped() -> None:
    defs = "#define A0 x\n" + "".join(f"#define A{i} A{i - 1} A{i - 1}\n" for i in range(1, 30))
    with pytest.raises(CompileError, match=f"macro 'A29' expands to more than {MAX_MACRO_USE_TOKENS} tokens") as err:
        Preprocessor().process(defs + "float y = A29;", "source")
    assert (err.value.line, err.value.col) == (31, 11)  # the use of the macro, not its definition


DOUBLING_CHAIN = "#define A0 x\n" + "".join(f"#define A{i} A{i - 1} A{i - 1}\n" for i in range(1, 60))


@pytest.mark.parametrize("bound", [MAX_EXPANSION_TOKENS, MAX_SHADER_EXPANSION_TOKENS])
def test_a_60_level_doubling_chain_is_refused_at_its_use_by_what_it_produced(bound: int) -> None:
    """Issue 27 section 3: 'A59' would expand to 2**59 tokens. It is refused, at the use, once the
    tokens that use produced pass the per-use bound: the work done is that bound, not the file's
    whole budget (a million tokens for a shader file, which took 10 s and 750 MB)."""
    pp = Preprocessor(bound)
    with pytest.raises(CompileError, match=f"macro 'A59' expands to more than {MAX_MACRO_USE_TOKENS} tokens") as err:
        pp.process(DOUBLING_CHAIN + "out[0] = 1;\nint A59;\n", "source")
    assert (err.value.file, err.value.line, err.value.col) == ("source", 62, 5)
    assert pp.work <= MAX_MACRO_USE_TOKENS + 100


@pytest.mark.parametrize("use", ["D(" * 60 + "y" + ")" * 60, "A59(y)"])
def test_doubling_through_macro_arguments_counts_against_the_use(use: str) -> None:
    """Arguments are expanded by nested calls: their tokens count against the use they are
    arguments of, and each argument is expanded once however often the body names it (as C does),
    so nesting does not multiply the work."""
    defs = ("#define D(x) x x\n#define A0(x) x x\n"
            + "".join(f"#define A{i}(x) A{i - 1}(A{i - 1}(x))\n" for i in range(1, 60)))
    pp = Preprocessor(MAX_SHADER_EXPANSION_TOKENS)
    with pytest.raises(CompileError, match="expands to more than") as err:
        pp.process(defs + "int k = " + use + ";\n", "source")
    assert (err.value.line, err.value.col) == (62, 9)
    assert pp.work <= 2 * MAX_MACRO_USE_TOKENS


def test_the_per_use_bound_leaves_large_files_of_small_macros_alone() -> None:
    """The bound is per use: 30,000 uses of a small macro are a large file, not a runaway one."""
    text = "#define F(v) (v + 1)\n" + "int y = F(2);\n" * 3000
    assert len(Preprocessor(MAX_SHADER_EXPANSION_TOKENS).process(text, "source")) == 3000 * 9



def test_expansion_bound_is_the_callers() -> None:
    """A whole shader file gets a larger bound than a kernel body; the message names the bound in force."""
    text = "int y = 0;\n" * 12_000  # 60,000 tokens
    assert len(Preprocessor(MAX_SHADER_EXPANSION_TOKENS).process(text, "source")) == 60_000
    with pytest.raises(CompileError, match="more than 50000 tokens"):
        Preprocessor().process(text, "source")
    with pytest.raises(CompileError, match="more than 1000 tokens"):
        Preprocessor(1000).process(text, "source")

def test_pragma_operator_is_dropped_like_a_pragma_line() -> None:
    """_Pragma("...") (MLX's MLX_MTL_PRAGMA_UNROLL) only hints the compiler: it leaves no tokens."""
    from metal_puzzles.msl.front.preprocessor import Preprocessor

    toks = Preprocessor().process('#define UNROLL _Pragma("clang loop unroll(full)")\nUNROLL for (;;) {}', "source")
    assert [t.text for t in toks] == ["for", "(", ";", ";", ")", "{", "}"]


def test_has_include_says_whether_an_include_would_find_the_header(tmp_path) -> None:
    """'#if __has_include(<...>)' (PyTorch's Convolution.metal guards Metal 4 headers so): true for
    Metal's standard headers and files on the include path, false for the rest."""
    from metal_puzzles.msl.front.preprocessor import IncludePath

    (tmp_path / "mine.h").write_text("#define FROM_MINE 1\n")
    text = ("#if __has_include(<metal_stdlib>) && __has_include(\"mine.h\")\nint yes;\n#endif\n"
            "#if __METAL_VERSION__ >= 400 && __has_include(<MetalPerformancePrimitives/MetalPerformancePrimitives.h>)\n"
            "int metal4;\n#endif\n#if !__has_include(<nowhere/x.h>)\nint absent;\n#endif\n")
    names = [t.text for t in Preprocessor(include_path=IncludePath([tmp_path])).process(text, "source")
             if t.kind == "id"]
    assert names == ["int", "yes", "int", "absent"]
