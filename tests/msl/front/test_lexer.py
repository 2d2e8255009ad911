"""The lexer on its own: tokens, positions, literals, comments."""

from __future__ import annotations

import pytest

from metal_puzzles.msl import CompileError
from metal_puzzles.msl.front.lexer import TokenKind, strip_comments, tokenize_line


def kinds_and_texts(line: str) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tokenize_line(line, "source", 1)]


def test_tokens_and_columns() -> None:
    toks = tokenize_line("  out[i] += 0x1Fu;", "source", 7)
    assert [t.text for t in toks] == ["out", "[", "i", "]", "+=", "0x1Fu", ";"]
    assert [t.pos.col for t in toks] == [3, 6, 7, 8, 10, 13, 18]
    assert {t.pos.line for t in toks} == {7} and toks[0].pos.file == "source"


def test_longest_operator_wins() -> None:
    assert [t for _, t in kinds_and_texts("a<<=b>>c->d")] == ["a", "<<=", "b", ">>", "c", "->", "d"]
    assert [t for _, t in kinds_and_texts("x++ + ++y")] == ["x", "++", "+", "++", "y"]


@pytest.mark.parametrize("text", ["1.5f", "1e-3", "0.5h", "3u", "42", "'a'", "1.0"])
def test_number_literals_are_one_token(text) -> None:
    (tok,) = tokenize_line(text, "source", 1)
    assert tok.text == text and tok.kind != "id"


def test_qualified_names_stay_apart_from_colons() -> None:
    texts = [t for _, t in kinds_and_texts("metal::exp(x)")]
    assert "exp" in texts[-4:] and "(" in texts


def test_comments_are_blanked_keeping_positions() -> None:
    text = "a /* one\ntwo */ b // three\nc"
    stripped = strip_comments(text)
    assert stripped.count("\n") == 2  # line numbers survive
    lines = stripped.split("\n")
    assert lines[0].startswith("a ") and "one" not in stripped and "three" not in stripped
    assert lines[1].index("b") == text.split("\n")[1].index("b")  # columns survive


def test_unknown_character_is_a_compile_error_at_its_column() -> None:
    with pytest.raises(CompileError) as err:
        tokenize_line("int x = 1 $ 2;", "source", 3)
    assert (err.value.line, err.value.col) == (3, 11)


def test_each_token_kind_is_a_member_of_the_enum() -> None:
    """A token's kind is read once into ``TokenKind`` (issue 38); a digraph is the token it spells."""
    toks = tokenize_line("x <: 1.5f ] + 'c' \"s\"", "source", 1)
    assert [t.kind for t in toks] == [TokenKind.ID, TokenKind.OP, TokenKind.NUM, TokenKind.OP, TokenKind.OP,
                                      TokenKind.CHAR, TokenKind.STR]
    assert all(type(t.kind) is TokenKind for t in toks) and toks[1].text == "["
