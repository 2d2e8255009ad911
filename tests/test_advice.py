"""Every piece of advice, applied as written, fixes the kernel it was given for.

One row per finding kind and cause that has advice: a kernel with the bug planted, the advice
its check must give (quoted from the report a learner reads), and the same kernel changed
exactly as that advice says. The planted kernel must fail with the advice; the changed one must
pass (right output on every test, no finding). A piece of advice that, applied literally, leaves
the kernel broken (a barrier put inside a branch some threads skip, say) fails its row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from metal_puzzles.checking import check_source
from metal_puzzles.puzzles import get_puzzle

SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions"


def solution(name: str) -> str:
    return (SOLUTIONS / name).read_text(encoding="utf-8")


@dataclass(frozen=True)
class Row:
    """A planted bug, the advice it gets and the kernel with the advice applied."""

    id: str
    puzzle: str
    planted: str
    advice: str  # quoted from the report, whitespace-insensitive
    applied: str


def edit(text: str, old: str, new: str) -> str:
    """``text`` with ``old`` (which must be there, once) replaced: the change the advice asks for."""
    assert text.count(old) == 1, f"{old!r} is not in the kernel exactly once"
    return text.replace(old, new)


BARRIER = "threadgroup_barrier(mem_flags::mem_threadgroup);"

# D.1 as the book gives it: the loop's rounds race.
BLOCK_SUM = get_puzzle("detective_block_sum").template

# Prefix sum with one statement reading and writing shared memory (inside an if), and the same
# loop with the read and write split but no barrier at the end of the body.
SCAN_LOOP_HEAD = """\
threadgroup float cache[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
cache[local_i] = i < a_shape[0] ? a[i] : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint offset = 1; offset < THREADGROUP_MEM_SIZE; offset *= 2) {
"""
SCAN_TAIL = """\
if (local_i == THREADGROUP_MEM_SIZE - 1) {
    out[threadgroup_position_in_grid.x] = cache[local_i];
}
"""
SCAN_ONE_STATEMENT = SCAN_LOOP_HEAD + """\
    if (local_i >= offset) {
        cache[local_i] += cache[local_i - offset];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
""" + SCAN_TAIL
SCAN_SPLIT = SCAN_LOOP_HEAD + """\
    float v = 0;
    if (local_i >= offset) {
        v = cache[local_i - offset];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (local_i >= offset) {
        cache[local_i] += v;
    }
}
threadgroup_barrier(mem_flags::mem_threadgroup);
""" + SCAN_TAIL

# A copy into shared memory and a read of a neighbour's copy, two statements on one line in a guard
# (a hidden test has spare threads, so a barrier inside the guard would diverge).
ONE_LINE = """\
threadgroup float shared[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
if (i < a_shape[0]) {
    shared[local_i] = a[i]; out[i] = shared[local_i & ~1u] * 0 + shared[local_i] + 10;
}
"""

SCATTER_ADD = solution("II_03_scatter_add.metal")
MVMR_SHADER = solution("IV_01_mvmr_shader.metal")
MVMR_ROW_FROM_GROUPS = edit(MVMR_SHADER, "uint row [[thread_position_in_grid]]) {",
                            "uint tg [[threadgroup_position_in_grid]],\n"
                            "                        uint tpt [[threads_per_threadgroup]],\n"
                            "                        uint lid [[thread_position_in_threadgroup]]) {\n"
                            "  uint row = tg * tpt + lid;")

ROWS = [
    Row("race across loop iterations, one line", "detective_block_sum", BLOCK_SUM,
        f"put a {BARRIER[:-1]} at the end of the loop body, before the next iteration's reads (outside any if",
        edit(BLOCK_SUM, "        shared[local_i] += shared[local_i + s];\n    }\n",
             f"        shared[local_i] += shared[local_i + s];\n    }}\n    {BARRIER}\n")),
    Row("race across loop iterations, two lines", "prefix_sum_simple", SCAN_SPLIT,
        "at the end of the loop body, before the next iteration's reads",
        edit(SCAN_SPLIT, "        cache[local_i] += v;\n    }\n}\n",
             f"        cache[local_i] += v;\n    }}\n    {BARRIER}\n}}\n")),
    Row("race in one statement", "prefix_sum_simple", SCAN_ONE_STATEMENT,
        "read into a register, barrier, then write",
        edit(SCAN_ONE_STATEMENT, "    if (local_i >= offset) {\n        cache[local_i] += cache[local_i - offset];\n    }\n",
             "    float v = 0;\n    if (local_i >= offset) {\n        v = cache[local_i - offset];\n    }\n"
             f"    {BARRIER}\n    if (local_i >= offset) {{\n        cache[local_i] += v;\n    }}\n")),
    Row("race between two lines", "detective_block_sum",
        edit(solution("D_01_block_sum.metal"), f"shared[local_i] = a[i];\n{BARRIER}\n", "shared[local_i] = a[i];\n"),
        f"add {BARRIER[:-1]} between the two accesses", solution("D_01_block_sum.metal")),
    Row("race between two statements of one line, in a branch", "threadgroup_memory", ONE_LINE,
        f"add {BARRIER[:-1]} between the write and the read of line 5 (outside any if, so that every thread of "
        "the threadgroup reaches it)",
        edit(ONE_LINE, "    shared[local_i] = a[i]; out[i]", f"    shared[local_i] = a[i];\n}}\n{BARRIER}\n"
                                                             "if (i < a_shape[0]) {\n    out[i]")),
    Row("a barrier whose flags do not order threadgroup memory", "detective_block_sum",
        edit(solution("D_01_block_sum.metal"), f"shared[local_i] = a[i];\n{BARRIER}",
             "shared[local_i] = a[i];\nthreadgroup_barrier(mem_flags::mem_none);"),
        "use threadgroup_barrier(mem_flags::mem_threadgroup) between the two accesses",
        solution("D_01_block_sum.metal")),
    Row("unsigned wrap-around in an index", "detective_blur", get_puzzle("detective_blur").template,
        "Test before subtracting (if (i >= 1))",
        edit(get_puzzle("detective_blur").template, "if (i - 1 >= 0) {", "if (i >= 1) {")),
    Row("unsigned wrap-around in an index, the signed way", "detective_blur", get_puzzle("detective_blur").template,
        "or compute in a signed type (int(i) - 1)",
        edit(get_puzzle("detective_blur").template, "if (i - 1 >= 0) {", "if (int(i) - 1 >= 0) {")),
    Row("barrier divergence", "detective_neighbour_sum", get_puzzle("detective_neighbour_sum").template,
        "move it out of the branch or loop that only some threads enter",
        edit(get_puzzle("detective_neighbour_sum").template, f"if (i < n) {{\n    {BARRIER}\n",
             f"{BARRIER}\nif (i < n) {{\n")),
    Row("uninitialised threadgroup memory", "detective_block_max", get_puzzle("detective_block_max").template,
        "write it first (and put a threadgroup_barrier between the write and this read)",
        edit(get_puzzle("detective_block_max").template, "if (i < a_shape[0]) {\n    shared[local_i] = a[i];\n}\n",
             "shared[local_i] = i < a_shape[0] ? a[i] : -INFINITY;\n")),
    Row("partial threadgroup, an output left unwritten", "detective_squares",
        get_puzzle("detective_squares").template,
        "Use dispatch_threads_per_threadgroup (the threadgroup size the launch asked for)",
        edit(get_puzzle("detective_squares").template, "threads_per_threadgroup.x",
             "dispatch_threads_per_threadgroup.x")),
    Row("partial threadgroup, the position from the grid", "detective_squares",
        get_puzzle("detective_squares").template, "or thread_position_in_grid",
        edit(get_puzzle("detective_squares").template, "uint i = group * threads_per_threadgroup.x + local_i;",
             "uint i = thread_position_in_grid.x;")),
    Row("partial threadgroup in a whole shader, the position from the grid", "mvmr_shader", MVMR_ROW_FROM_GROUPS,
        "or thread_position_in_grid", MVMR_SHADER),
    Row("partial threadgroup in a whole shader, a wrong output", "mvmr_shader", MVMR_ROW_FROM_GROUPS,
        "a position computed as tg * tpt + lid puts that threadgroup's threads on elements another "
        "threadgroup also covers. Use dispatch_threads_per_threadgroup",
        edit(MVMR_ROW_FROM_GROUPS, "uint tpt [[threads_per_threadgroup]]", "uint tpt [[dispatch_threads_per_threadgroup]]")),
    Row("atomic stores where the threads meant to add", "scatter_add",
        edit(SCATTER_ADD, "atomic_fetch_add_explicit", "atomic_store_explicit"),
        "only one of their updates survives and the others are lost. To add every thread's value, use "
        "atomic_fetch_add_explicit",
        SCATTER_ADD),
    Row("two threads write one output element", "map",
        "uint i = thread_position_in_grid.x;\nout[i / 2] = a[i] + 10;\nout[i] = a[i] + 10;\n",
        "make each output element written by one thread",
        "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;\n"),
    Row("several threads of a threadgroup update one output element", "dot_product",
        "uint i = thread_position_in_grid.x;\nif (i < a_shape[0]) {\n    out[0] += a[i] * b[i];\n}\n",
        "combine the values in threadgroup memory and let one thread write the result",
        solution("10_dot_product.metal")),
    Row("an uninitialised thread-private array", "map",
        "uint i = thread_position_in_grid.x;\nfloat x[2];\nx[1] = a[i];\nout[i] = x[0] + x[1] + 10;\n",
        "initialise the array, e.g. 'float x[4] = {0};'",
        "uint i = thread_position_in_grid.x;\nfloat x[2] = {0};\nx[1] = a[i];\nout[i] = x[0] + x[1] + 10;\n"),
    Row("an uninitialised local variable", "dot_product",
        edit(solution("10_dot_product.metal"), "float total = 0.0f;", "float total;"),
        "initialise it where it is declared",
        solution("10_dot_product.metal")),
    Row("an output read before any thread wrote it", "map", "uint i = thread_position_in_grid.x;\nout[i] += a[i] + 10;\n",
        "compute the value in a local variable or in threadgroup memory and write it once",
        "uint i = thread_position_in_grid.x;\nfloat v = a[i] + 10;\nout[i] = v;\n"),
    Row("a loop that never ends", "detective_block_sum",
        edit(solution("D_01_block_sum.metal"), "s > 0;", "s >= 0;"),
        "every loop must end for every thread: check each loop's condition and step",
        solution("D_01_block_sum.metal")),
]

def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_advice_applied_as_written_fixes_the_kernel(row: Row):
    puzzle = get_puzzle(row.puzzle)
    planted = check_source(puzzle, row.planted)
    assert not planted.correct
    assert flat(row.advice) in flat(planted.report())
    fixed = check_source(puzzle, row.applied)
    assert fixed.correct, fixed.report()
    # No finding on any test, those beyond the visible test's structure included.
    assert not [f for o in fixed.outcomes for f in o.findings], fixed.report()
