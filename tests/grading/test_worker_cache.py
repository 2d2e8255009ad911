"""Second red team, one student's work hurting another's: a grading worker keeps the kernels it
compiled for the students after (students converge on the same answers). Bounded by count
alone, a notebook of large dead-code kernels filled a worker's memory and the next students
lost puzzles to MemoryError. The cache is bounded by what its kernels weigh (the tokens they
were compiled from) as well."""

from __future__ import annotations

import numpy as np

from metal_puzzles.msl import api
from metal_puzzles.msl.api import compile_cache_size, simulate

BUDGET = 3_000


def dead_code_map(k: int, lines: int = 100) -> str:
    body = [f"  out[i] = a[i] * {n}.0f + {k};" for n in range(lines)]
    return "\n".join(["uint i = thread_position_in_grid.x;", "if (i > 100000u) {", *body, "}",
                      "out[i] = a[i] + 10;"])


def run(source: str) -> np.ndarray:
    return simulate("map", ["a"], ["out"], source, inputs=[np.arange(4, dtype=np.float32)], output_shapes=[(4,)],
                    output_dtypes=["float32"], grid=(4, 1, 1), threadgroup=(4, 1, 1)).outputs[0]


def test_large_kernels_are_evicted_by_weight_not_only_by_count(monkeypatch) -> None:
    monkeypatch.setattr(api, "_CACHE_TOKEN_BUDGET", BUDGET)
    mine = [dead_code_map(k) for k in range(6)]
    for source in mine:
        np.testing.assert_array_equal(run(source), np.arange(4) + 10)
        entries, tokens = compile_cache_size()
        assert tokens <= BUDGET or entries == 1
    kept = sum(key[3] in mine for key in api._CACHE)  # key[3]: the source
    assert 1 <= kept < 6  # the count bound (256) alone would have kept all six
    small = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;\n"
    compiles, hits = api.compile_cache_stats()
    run(small)
    run(small)
    assert api.compile_cache_stats() == (compiles + 1, hits + 1)  # the next student's kernel is cached as before
    assert compile_cache_size()[1] <= BUDGET


def test_one_kernel_over_the_budget_is_kept_alone(monkeypatch) -> None:
    monkeypatch.setattr(api, "_CACHE_TOKEN_BUDGET", 10)
    run(dead_code_map(99, lines=20))
    assert compile_cache_size()[0] == 1
