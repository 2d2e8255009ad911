"""The step budget bounds all work, not only the number of statements: a statement with a long
expression, or one that fills a large thread-private array, costs several steps; and compiling is
bounded by a token budget that nested macro arguments or preprocessor directives cannot reset.

Each kernel writes how many loop iterations it completed to ``out`` on every iteration, so the
test sees how far it got before the budget stopped it."""

from __future__ import annotations

import warnings

import pytest

from metal_puzzles.msl import CompileError
from metal_puzzles.msl.front.preprocessor import MAX_EXPANSION_TOKENS, Preprocessor

from .conftest import launch

BUDGET = 2_000


def _balanced_sum(terms: int) -> str:
    """x + x + ... as a balanced tree (a left-leaning chain would be too deep to compile)."""
    if terms == 1:
        return "x"
    half = terms // 2
    return f"({_balanced_sum(half)} + {_balanced_sum(terms - half)})"


def _iterations(source: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = launch(source, grid=(4, 1, 1), tg=(4, 1, 1), sanitize="warn", max_steps=BUDGET)
    assert [f.kind for f in result.findings] == ["step-budget"]
    return int(result.outputs[0][0])


def test_short_statements_run_many_iterations() -> None:
    """The baseline: a loop of three one-step statements runs about BUDGET / 3 times."""
    n = _iterations("uint i = thread_position_in_grid.x;\nfloat x = 1.0f;\nint n = 0;\n"
                    "for (int k = 0; k < 1000000; k++) { x = x * 0.5f; n++; out[i] = float(n); }\n")
    assert BUDGET // 5 < n <= BUDGET // 3


def test_long_expression_costs_in_proportion() -> None:
    """An expression of 512 terms (about 1,000 nodes) per iteration: the budget runs out after a
    few dozen iterations, not hundreds (each would take a thousand array operations)."""
    n = _iterations("uint i = thread_position_in_grid.x;\nfloat x = 1.0f;\nint n = 0;\n"
                    f"for (int k = 0; k < 1000000; k++) {{ x = {_balanced_sum(512)} * 0.0f; n++; "
                    "out[i] = float(n); }\n")
    assert 1 <= n <= BUDGET // 100


def test_long_loop_condition_costs_in_proportion() -> None:
    """The work in a loop's own condition is paid on every iteration too."""
    n = _iterations("uint i = thread_position_in_grid.x;\nfloat x = 0.0f;\nint n = 0;\n"
                    f"for (int k = 0; {_balanced_sum(512)} < 1.0f; k++) {{ n++; out[i] = float(n); }}\n")
    assert 1 <= n <= BUDGET // 50


def test_filling_a_large_private_array_costs_in_proportion() -> None:
    """`float t[4096] = {}` in a loop zero-fills 4,096 elements a thread on every iteration."""
    n = _iterations("uint i = thread_position_in_grid.x;\nint n = 0;\n"
                    "for (int k = 0; k < 1000000; k++) { float t[4096] = {}; n++; out[i] = float(n) + t[k & 7]; }\n")
    assert 1 <= n <= BUDGET // 100


def test_expansion_budget_counts_across_directives() -> None:
    """Directive lines between chunks of code must not restart the count."""
    chunk = "y " * (MAX_EXPANSION_TOKENS // 2)
    src = f"{chunk}\n#define A 1\n{chunk}\n#define B 2\n{chunk}\n"
    with pytest.raises(CompileError, match="tokens"):
        Preprocessor().process(src, "source")


def test_expansion_budget_counts_nested_macro_arguments() -> None:
    """Arguments are expanded by nested calls; their work counts against the same budget, so
    doubling macros nested 24 deep stop after at most the budget's worth of work."""
    pp = Preprocessor()
    src = "#define D(x) x x\n" + "D(" * 24 + "y" + ")" * 24 + "\n"
    with pytest.raises(CompileError, match="tokens"):
        pp.process(src, "source")
    assert pp.work <= MAX_EXPANSION_TOKENS + 1


def test_header_and_source_share_the_budget() -> None:
    """A kernel cannot double its budget by splitting code between header and source."""
    pp = Preprocessor()
    half = "y " * (MAX_EXPANSION_TOKENS * 2 // 3)
    pp.process(half, "header")
    with pytest.raises(CompileError, match="tokens"):
        pp.process(half, "source")
