"""Every piece of advice, applied as written, fixes the kernel it was given for.

One row per finding kind and cause that has advice: a kernel with the bug planted, the advice
its check must give (quoted from the report a learner reads), and the same kernel changed
exactly as that advice says. The planted kernel must fail with the advice; the changed one must
pass (right output on every test, no finding). A piece of advice that, applied literally, leaves
the kernel broken (a barrier put inside a branch some threads skip, say) fails its row.

No advice goes without its row: ``advice_texts`` calls every advice function of findings/advice.py with
every value that picks its text, and each text must be quoted by a row (a launch option only a
kernel's caller can apply is quoted, and applied, by its test in tests/msl/sanitizer/, listed in
``CALLER_ADVICE``); advice written where a run's context is known is listed in
``ADVICE_IN_CONTEXT``, and each finding kind's fixed text in the registry needs a row too. A new
advice function fails ``test_every_advice_function_is_enumerated`` until it is added here.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from metal_puzzles.checking import check_source
from metal_puzzles.msl.executor import runtime
from metal_puzzles.msl.executor.codegen import locations, subscript_checks
from metal_puzzles.msl.findings import advice
from metal_puzzles.msl.findings.advice import Audience, HostApi
from metal_puzzles.msl.findings.registry import FINDING_KINDS
from metal_puzzles.msl.lang.errors import Pos
from metal_puzzles.msl.lang.types import AddressSpace
from metal_puzzles.puzzles import get_puzzle

SOLUTIONS = Path(__file__).resolve().parents[3] / "solutions"


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

SCATTER_ADD = solution("part2/scatter_add.metal")
MVMR_SHADER = solution("part4/mvmr_shader.metal")
MVMR_ROW_FROM_GROUPS = edit(MVMR_SHADER, "uint row [[thread_position_in_grid]]) {",
                            "uint tg [[threadgroup_position_in_grid]],\n"
                            "                        uint tpt [[threads_per_threadgroup]],\n"
                            "                        uint lid [[thread_position_in_threadgroup]]) {\n"
                            "  uint row = tg * tpt + lid;")

MATMUL = solution("part1/matmul_simple.metal")
B_TILE_ROW = "    b_tile[local_row][local_col] = "
# Every row of the threadgroup loads into b_tile's first row: threads of one column write one element.
MATMUL_ONE_TILE_ROW = edit(MATMUL, B_TILE_ROW, "    b_tile[0][local_col] = ")

# A SIMD-group's threads add their neighbour's value through a tile only they share (64 threads a
# threadgroup, so the threadgroup barrier is not the only cure).
SIMD_PAIRS = """\
threadgroup float tile[TG];
threadgroup float partial[SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
float mine = 0.0f;
for (uint i = j; i < N; i += TG) {
    mine += x[r * N + i];
}
tile[j] = mine;
float pair = j % 2 == 0 ? mine + tile[j + 1] : 0.0f;
float group_total = simd_sum(pair);
if (thread_index_in_simdgroup == 0) {
    partial[simdgroup_index_in_threadgroup] = group_total;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (simdgroup_index_in_threadgroup == 0) {
    float total = simd_sum(thread_index_in_simdgroup < SIMD_GROUPS ? partial[thread_index_in_simdgroup] : 0.0f);
    if (j == 0) {
        out[r] = total;
    }
}
"""

# Threads add 10 to the element four places back, which a thread of the previous threadgroup wrote.
OTHER_GROUPS_ELEMENT = """\
uint i = thread_position_in_grid.x;
uint n = a_shape[0];
if (i < n) {
    out[i] = a[i];
}
if (i >= 4 && i < n) {
    out[i - 4] += 10;
}
"""

MVMR_ATOMIC = ("  device atomic_float* target = (device atomic_float*)&o[(o_idx[t] * G + g) * M + m];\n"
               "  atomic_fetch_add_explicit(target, acc, memory_order_relaxed);")
MVMR_PLAIN_ADD = edit(MVMR_SHADER, MVMR_ATOMIC, "  o[(o_idx[t] * G + g) * M + m] += acc;")

# A threadgroup accumulator set to 0 with a plain write and added to atomically, with no barrier between.
SHARED_ACCUMULATOR = """\
threadgroup float acc[1];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
if (local_i == 0) {
    acc[0] = 0.0f;
}
if (i < a_shape[0]) {
    atomic_fetch_add_explicit((threadgroup atomic_float*)&acc[0], a[i] * b[i], memory_order_relaxed);
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (local_i == 0) {
    out[0] = acc[0];
}
"""

# A row's output zeroed with a plain write, then added to atomically across a barrier that orders
# threadgroup memory only.
ROW_SUM_ATOMIC = """\
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
float mine = 0.0f;
for (uint i = j; i < N; i += TG) {
    mine += x[r * N + i];
}
if (j == 0) {
    out[r] = 0.0f;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
atomic_fetch_add_explicit((device atomic_float*)&out[r], mine, memory_order_relaxed);
"""

# A scan whose loop runs as many rounds as the thread's index allows: a barrier some threads leave.
SCAN_THREAD_ROUNDS = SCAN_LOOP_HEAD.replace("offset < THREADGROUP_MEM_SIZE", "offset <= local_i") + """\
    float v = cache[local_i - offset];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    cache[local_i] += v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
""" + SCAN_TAIL
SCAN_SAME_ROUNDS = SCAN_LOOP_HEAD + """\
    float v = 0.0f;
    if (offset <= local_i) {
        v = cache[local_i - offset];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (offset <= local_i) {
        cache[local_i] += v;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
""" + SCAN_TAIL

# A scan kept in a register, published each round: the next round's write overwrites what a
# neighbour is still to read.
SCAN_IN_REGISTER = """\
threadgroup float cache[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
float total = i < a_shape[0] ? a[i] : 0.0f;
for (uint offset = 1; offset < THREADGROUP_MEM_SIZE; offset *= 2) {
    cache[local_i] = total;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (local_i >= offset) {
        total += cache[local_i - offset];
    }
}
if (local_i == THREADGROUP_MEM_SIZE - 1) {
    out[threadgroup_position_in_grid.x] = total;
}
"""

# Hillis-Steele with the read of a neighbour's element and the update of one's own in one round and
# no barrier between them (issue 36): the writer also read its own element ('+='), which must not hide
# the other thread's read at the line before, where the barrier goes. In a loop, and unrolled.
HILLIS_STEELE_HEAD = """\
threadgroup float tmp[BLOCK];
uint i = thread_position_in_grid.x;
uint b = thread_position_in_threadgroup.x;
uint n = a_shape[0];
tmp[b] = (i < n) ? a[i] : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);
"""
HILLIS_STEELE_TAIL = """\
if (i < n) {
    out[i] = tmp[b];
}
"""
HILLIS_STEELE_LOOP = HILLIS_STEELE_HEAD + """\
for (uint s = 1; s < BLOCK; s *= 2) {
    float v = b >= s ? tmp[b - s] : 0;
    tmp[b] += v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
""" + HILLIS_STEELE_TAIL
# The rounds of an 8-element block written out; the first lacks its barrier between read and write.
HILLIS_STEELE_UNROLLED = HILLIS_STEELE_HEAD + """\
float v1 = b >= 1 ? tmp[b - 1] : 0;
tmp[b] += v1;
threadgroup_barrier(mem_flags::mem_threadgroup);
float v2 = b >= 2 ? tmp[b - 2] : 0;
threadgroup_barrier(mem_flags::mem_threadgroup);
tmp[b] += v2;
threadgroup_barrier(mem_flags::mem_threadgroup);
float v4 = b >= 4 ? tmp[b - 4] : 0;
threadgroup_barrier(mem_flags::mem_threadgroup);
tmp[b] += v4;
threadgroup_barrier(mem_flags::mem_threadgroup);
""" + HILLIS_STEELE_TAIL

TWO_BY_TWO = """\
uint i = thread_position_in_grid.x;
float v = a[i];
float t[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
for (uint k = 0; k <= 2; k++) {
    t[1][k] = v;
}
out[i] = t[1][0] + 10;
"""

STRUCT_MEMBER = """\
struct P { float x; float y; };
uint i = thread_position_in_grid.x;
P p;
p.x = a[i];
out[i] = p.x + p.y + 10;
"""

SIMDGROUP_MATMUL = solution("part3/simdgroup_matmul.metal")
SIMDGROUP_STORE = "simdgroup_store(acc, c + row0 * n + col0, n);\n"

SQUARES_SIZE_VARIABLE = edit(get_puzzle("detective_squares").template,
                             "uint i = group * threads_per_threadgroup.x + local_i;",
                             "uint size = threads_per_threadgroup.x;\nuint i = group * size + local_i;")

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
        edit(solution("debugging/detective_block_sum.metal"), f"shared[local_i] = a[i];\n{BARRIER}\n", "shared[local_i] = a[i];\n"),
        f"add {BARRIER[:-1]} between the two accesses", solution("debugging/detective_block_sum.metal")),
    Row("race between two statements of one line, in a branch", "threadgroup_memory", ONE_LINE,
        f"add {BARRIER[:-1]} between the write and the read of line 5 (outside any if, so that every thread of "
        "the threadgroup reaches it)",
        edit(ONE_LINE, "    shared[local_i] = a[i]; out[i]", f"    shared[local_i] = a[i];\n}}\n{BARRIER}\n"
                                                             "if (i < a_shape[0]) {\n    out[i]")),
    Row("a read of a neighbour's element, then an update of one's own, in one loop iteration", "block_scan",
        HILLIS_STEELE_LOOP,
        f"read by thread 1 = 1 of threadgroup 0 in the same barrier phase (line 8): add {BARRIER[:-1]} between the "
        "two accesses (line 8, then line 9; outside any if",
        edit(HILLIS_STEELE_LOOP, "    tmp[b] += v;\n", f"    {BARRIER}\n    tmp[b] += v;\n")),
    Row("a read of a neighbour's element, then an update of one's own, outside a loop", "block_scan",
        HILLIS_STEELE_UNROLLED,
        f"read by thread 1 = 1 of threadgroup 0 in the same barrier phase (line 7): add {BARRIER[:-1]} between the "
        "two accesses (line 7, then line 8; outside any if",
        edit(HILLIS_STEELE_UNROLLED, "tmp[b] += v1;\n", f"{BARRIER}\ntmp[b] += v1;\n")),
    Row("a barrier whose flags do not order threadgroup memory", "detective_block_sum",
        edit(solution("debugging/detective_block_sum.metal"), f"shared[local_i] = a[i];\n{BARRIER}",
             "shared[local_i] = a[i];\nthreadgroup_barrier(mem_flags::mem_none);"),
        "use threadgroup_barrier(mem_flags::mem_threadgroup) between the two accesses",
        solution("debugging/detective_block_sum.metal")),
    Row("unsigned wrap-around in an index", "detective_blur", get_puzzle("detective_blur").template,
        "Test before subtracting (if (i >= 1))",
        edit(get_puzzle("detective_blur").template, "if (i - 1 >= 0) {", "if (i >= 1) {")),
    Row("unsigned wrap-around in an index, the signed way", "detective_blur", get_puzzle("detective_blur").template,
        "or compute in a signed type (int(i) - 1)",
        edit(get_puzzle("detective_blur").template, "if (i - 1 >= 0) {", "if (int(i) - 1 >= 0) {")),
    Row("barrier divergence", "detective_neighbour_sum", get_puzzle("detective_neighbour_sum").template,
        "move it out of the branch that only some threads enter",
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
    Row("partial threadgroup, the size kept in a variable", "detective_squares", SQUARES_SIZE_VARIABLE,
        "Use dispatch_threads_per_threadgroup (the threadgroup size the launch asked for)",
        edit(SQUARES_SIZE_VARIABLE, "uint size = threads_per_threadgroup.x;",
             "uint size = dispatch_threads_per_threadgroup.x;")),
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
        solution("part1/dot_product.metal")),
    Row("an uninitialised thread-private array", "map",
        "uint i = thread_position_in_grid.x;\nfloat x[2];\nx[1] = a[i];\nout[i] = x[0] + x[1] + 10;\n",
        "initialise the array, e.g. 'float x[4] = {0};'",
        "uint i = thread_position_in_grid.x;\nfloat x[2] = {0};\nx[1] = a[i];\nout[i] = x[0] + x[1] + 10;\n"),
    Row("an uninitialised local variable", "dot_product",
        edit(solution("part1/dot_product.metal"), "float total = 0.0f;", "float total;"),
        "initialise it where it is declared",
        solution("part1/dot_product.metal")),
    Row("an output read before any thread wrote it", "map", "uint i = thread_position_in_grid.x;\nout[i] += a[i] + 10;\n",
        "compute the value in a local variable or in threadgroup memory and write it once",
        "uint i = thread_position_in_grid.x;\nfloat v = a[i] + 10;\nout[i] = v;\n"),
    Row("a loop that never ends", "detective_block_sum",
        edit(solution("debugging/detective_block_sum.metal"), "s > 0;", "s >= 0;"),
        "every loop must end for every thread: check each loop's condition and step",
        solution("debugging/detective_block_sum.metal")),
    Row("race across loop iterations, the next iteration's writes", "prefix_sum_simple", SCAN_IN_REGISTER,
        "line 9 ran in an earlier iteration of the loop and line 6 in the next one, with no barrier between: put a "
        f"{BARRIER[:-1]} at the end of the loop body, before the next iteration's writes",
        edit(SCAN_IN_REGISTER, "        total += cache[local_i - offset];\n    }\n}\n",
             f"        total += cache[local_i - offset];\n    }}\n    {BARRIER}\n}}\n")),
    Row("two threads of a threadgroup write one shared element", "matmul_full", MATMUL_ONE_TILE_ROW,
        "make each thread write its own element", MATMUL),
    Row("a race inside one SIMD-group of a larger threadgroup", "simd_row_sum", SIMD_PAIRS,
        "if only the threads of one SIMD-group share these elements, simdgroup_barrier(mem_flags::mem_threadgroup) "
        "is enough",
        edit(SIMD_PAIRS, "tile[j] = mine;\n", "tile[j] = mine;\nsimdgroup_barrier(mem_flags::mem_threadgroup);\n")),
    Row("a device element another threadgroup wrote", "threadgroups", OTHER_GROUPS_ELEMENT,
        "threads of different threadgroups cannot synchronise within a kernel: read only what this thread wrote",
        edit(OTHER_GROUPS_ELEMENT, "if (i >= 4 && i < n) {\n    out[i - 4] += 10;", "if (i < n) {\n    out[i] += 10;")),
    Row("threads of several threadgroups update one device element, the atomic cure", "mvmr_shader", MVMR_PLAIN_ADD,
        "threads of different threadgroups cannot synchronise within a kernel: read only what this thread wrote, "
        "accumulate with atomics (update it atomically through a cast: "
        "atomic_fetch_add_explicit((device atomic_float*)&out[i], value, memory_order_relaxed))",
        MVMR_SHADER),
    Row("several threads update an output that starts uninitialised: no atomics offered", "dot_product",
        "uint i = thread_position_in_grid.x;\nif (i < a_shape[0]) {\n    out[0] += a[i] * b[i];\n}\n",
        "combine the values in threadgroup memory and let one thread write the result (outputs start "
        "uninitialised in this puzzle, so atomic adds would add to garbage)",
        solution("part1/dot_product.metal")),
    Row("an atomic and a plain access to a threadgroup element", "dot_product", SHARED_ACCUMULATOR,
        f"an atomic and a plain access to one element race: put {BARRIER[:-1]} between them (line 5, then line 8; "
        "outside any if",
        edit(SHARED_ACCUMULATOR, "    acc[0] = 0.0f;\n}\n", f"    acc[0] = 0.0f;\n}}\n{BARRIER}\n")),
    Row("an atomic and a plain access across a barrier that does not order device memory", "simd_row_sum",
        ROW_SUM_ATOMIC,
        "the barrier at line 11 synchronises execution but does not order device memory (its mem_flags lack "
        "mem_device): use threadgroup_barrier(mem_flags::mem_device) between the two accesses",
        edit(ROW_SUM_ATOMIC, "threadgroup_barrier(mem_flags::mem_threadgroup);",
             "threadgroup_barrier(mem_flags::mem_device);")),
    Row("an atomic and a plain access to a device element, no barrier", "simd_row_sum",
        edit(ROW_SUM_ATOMIC, "threadgroup_barrier(mem_flags::mem_threadgroup);\n", ""),
        "an atomic and a plain access to one element race: put threadgroup_barrier(mem_flags::mem_device) between "
        "them (line 9, then line 11; outside any if",
        edit(ROW_SUM_ATOMIC, "threadgroup_barrier(mem_flags::mem_threadgroup);",
             "threadgroup_barrier(mem_flags::mem_device);")),
    Row("barrier divergence in a branch inside a loop every thread runs", "detective_block_sum",
        edit(solution("debugging/detective_block_sum.metal"), "        shared[local_i] += shared[local_i + s];\n    }\n",
             f"        shared[local_i] += shared[local_i + s];\n        {BARRIER}\n    }}\n").replace(
            f"    // Every round reads what the previous round wrote: all threads wait here, in every round.\n    {BARRIER}\n",
            ""),
        "move it out of the branch that only some threads enter", solution("debugging/detective_block_sum.metal")),
    Row("barrier divergence in a loop whose rounds differ by thread", "prefix_sum_simple", SCAN_THREAD_ROUNDS,
        "the loop at line 6 runs more iterations in some threads than in others (its condition depends on the "
        "thread). Give every thread of the threadgroup the same iterations (a condition that does not depend on "
        "the thread) and put the thread's own test in an if inside the body, with the barrier outside that if",
        SCAN_SAME_ROUNDS),
    Row("threads past the end of the array", "guard", "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;\n",
        "only threads whose index lies inside 'a' may access it: guard the access with its length (if (i < n))",
        solution("part1/guard.metal")),
    Row("a subscript past its dimension", "map", TWO_BY_TWO,
        "uses index 2 on a dimension of size 2 of 't' (element 4 of its 4): check the loop bounds of this subscript",
        edit(TWO_BY_TWO, "k <= 2", "k < 2")),
    Row("an unassigned struct member", "map", STRUCT_MEMBER,
        "initialise the struct ('S s = {...};')", edit(STRUCT_MEMBER, "P p;", "P p = {0.0f, 0.0f};")),
    Row("an output element no thread writes", "map",
        "uint i = thread_position_in_grid.x;\nif (i < a_shape[0] - 1) {\n    out[i] = a[i] + 10;\n}\n",
        "Make sure some thread writes every element",
        "uint i = thread_position_in_grid.x;\nif (i < a_shape[0]) {\n    out[i] = a[i] + 10;\n}\n"),
    Row("an integer division by zero", "map", "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10 * int(i / i);\n",
        "test the divisor before dividing ('d != 0 ? x / d : v', with v what a thread whose divisor is zero should "
        "get)",
        "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10 * (i != 0 ? int(i / i) : 1);\n"),
    Row("a SIMD-group matrix operation in a branch that splits the SIMD-group", "simdgroup_matmul",
        edit(SIMDGROUP_MATMUL, SIMDGROUP_STORE, "if (thread_index_in_simdgroup == 0) {\n    " + SIMDGROUP_STORE + "}\n"),
        "keep them out of branches that split a SIMD-group", SIMDGROUP_MATMUL),
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


# ----------------------------------------------------------------------------- the benign race
BENIGN = """\
uint i = thread_position_in_grid.x;
if (i < a_shape[0]) {
    out[i] = a[i] + 10;
}
out[0] = a[0] + 10;
"""


BENIGN_NOTE = ("with the same value: a benign race (GPUs store whole elements, so the result is that value either way); "
               "let one thread write it to make the kernel race-free")


def test_a_benign_race_passes_with_its_note_and_the_note_s_advice_removes_it():
    """Two threads storing one value is a note, never a failure: the kernel passes with it, and
    the kernel changed as the note says passes without it."""
    puzzle = get_puzzle("threadgroups")
    planted = check_source(puzzle, BENIGN)
    assert planted.correct, planted.report()
    notes = [f for o in planted.outcomes for f in o.findings if not f.is_error]
    assert notes and not [f for o in planted.outcomes for f in o.findings if f.is_error]
    assert flat(BENIGN_NOTE) in flat(planted.report())
    fixed = check_source(puzzle, edit(BENIGN, "out[0] = a[0] + 10;", "if (i == 0) {\n    out[0] = a[0] + 10;\n}"))
    assert fixed.correct, fixed.report()
    assert not [f for o in fixed.outcomes for f in o.findings], fixed.report()


# ----------------------------------------------------------------------------- every piece of advice has its row
def _pos(line: int) -> Pos:
    return Pos("kernel", line, 1)


def advice_texts() -> dict[str, list[str]]:
    """Every text each advice function of findings/advice.py can give, by function: called with every value
    of the enums and flags that choose between its texts (the numbers in them are placeholders)."""
    p, q = _pos(5), _pos(9)
    texts: dict[str, list[str]] = {
        "atomic_update_spelling": [t for a in Audience for h in HostApi for pre in (True, False)
                                   if (t := advice.atomic_update_spelling(a, h, pre)) is not None],
        "device_write_race_fix": [advice.device_write_race_fix(a, h, pre) for a in Audience for h in HostApi
                                  for pre in (True, False)],
        "device_update_race_fix": [advice.device_update_race_fix(a, h, same, pre) for a in Audience for h in HostApi
                                   for same in (True, False) for pre in (True, False)],
        "uninitialized_fix": [advice.uninitialized_fix(space, a) for space in
                              (AddressSpace.THREADGROUP, AddressSpace.THREAD, AddressSpace.DEVICE) for a in Audience]
        + [advice.uninitialized_fix(AddressSpace.THREAD, Audience.PUZZLE, member=True)],
        "step_budget_advice": [advice.step_budget_advice(a) for a in Audience],
        "bounds_fix": [advice.bounds_fix("a")],
        "threadgroup_race_fix": [
            advice.threadgroup_race_fix(p, p),  # RaceShape.SAME_ACCESS
            advice.threadgroup_race_fix(p, Pos("kernel", 5, 20)),  # RaceShape.ONE_STATEMENT
            advice.threadgroup_race_fix(p, Pos("kernel", 5, 20), later_writes=False),  # across iterations, one line
            advice.threadgroup_race_fix(p, q, later_writes=False),  # across iterations, reads
            advice.threadgroup_race_fix(p, q, later_writes=True),  # across iterations, writes
            advice.threadgroup_race_fix(p, Pos("kernel", 5, 20), later_writes=False, in_loop=False),  # in order, one line
            advice.threadgroup_race_fix(q, p),  # in order
        ],
        "simdgroup_barrier_fix": [advice.simdgroup_barrier_fix(0)],
        "simdgroup_size_fix": [advice.simdgroup_size_fix(32)],
        "barrier_flags_fix": [advice.barrier_flags_fix(_pos(7), space, p, q)
                              for space in (AddressSpace.THREADGROUP, AddressSpace.DEVICE)],
        "barrier_divergence_fix": [advice.barrier_divergence_fix(None), advice.barrier_divergence_fix(6)],
        "atomic_plain_race_fix": [advice.atomic_plain_race_fix(space, same, p, q)
                                  for space in (AddressSpace.THREADGROUP, AddressSpace.DEVICE) for same in (True, False)],
        "benign_race_fix": [advice.benign_race_fix()],
    }
    return {name: sorted(set(found)) for name, found in texts.items()}


#: Advice made where the code knows what happened (a run's context, the executor), by where its
#: text lives and a phrase of it: each phrase must be in that module and quoted by a row.
ADVICE_IN_CONTEXT = {
    "advice.partial_group_fix": (advice, "Use dispatch_threads_per_threadgroup"),
    "advice.WrapAroundExplainer": (advice, "Test before subtracting"),
    "runtime.Ctx._note_lost_stores": (runtime, "only one of their updates survives"),
    "codegen: an unassigned local variable": (locations, "initialise it where it is declared"),
    "codegen: a subscript past its dimension": (subscript_checks, "check the loop bounds of this subscript"),
}

#: Advice only the caller of a kernel can apply (a launch option, a second kernel): the test that
#: applies it, and the phrase that test asserts.
CALLER_ADVICE = {
    "launch with atomic_outputs=True": "msl/sanitizer/test_write_race_advice.py",
    "launch with init_value=0 and atomic_outputs=True": "msl/sanitizer/test_write_race_advice.py",
    "write it before reading it, or launch with init_value": "msl/sanitizer/test_caller_advice.py",
    "raise max_steps if the kernel really needs more": "msl/sanitizer/test_caller_advice.py",
    "passing init_value to the call also fills them": "msl/sanitizer/test_caller_advice.py",
    "or split the work into two kernels": "msl/sanitizer/test_write_race_advice.py",
    "launch with threadgroups of a multiple of N threads": "msl/sanitizer/test_caller_advice.py",
    # Not a launch option, but a kernel no puzzle asks for (words read from a byte buffer).
    "read the bytes one by one through the byte pointer and combine them": "msl/sanitizer/test_caller_advice.py",
}


def _shape(text: str) -> str:
    """A text with its numbers (lines, SIMD-groups) made alike, for matching a row's quote."""
    return re.sub(r"\d+", "N", flat(text))


def _covered(text: str) -> bool:
    quotes = [r.advice for r in ROWS] + list(CALLER_ADVICE) + [BENIGN_NOTE]
    # A quote may hold the whole text (a spelling inside the fix that gives it) or a part of it.
    return any(_shape(q) in _shape(text) or _shape(text) in _shape(q) for q in quotes)


def test_every_advice_function_is_enumerated():
    """A new advice function in findings/advice.py must be added to ``advice_texts`` (and so get its row)."""
    made = {name for name in dir(advice) if name.endswith(("_fix", "_advice", "_spelling", "Explainer"))
            and callable(getattr(advice, name))}
    known = set(advice_texts()) | {name.split(".")[1] for name in ADVICE_IN_CONTEXT if name.startswith("advice.")}
    assert made == known, made ^ known


@pytest.mark.parametrize("name, text", [(n, t) for n, ts in advice_texts().items() for t in ts])
def test_every_advice_text_has_a_row(name: str, text: str):
    """Each text an advice function can give is quoted by a row of the table (or, for a caller's
    launch option, by the test that applies it)."""
    assert _covered(text), f"{name} gives advice no row applies: {text}"


@pytest.mark.parametrize("name", list(ADVICE_IN_CONTEXT))
def test_advice_made_in_context_has_a_row(name: str):
    module, phrase = ADVICE_IN_CONTEXT[name]
    assert phrase in inspect.getsource(module), f"{name} no longer says {phrase!r}: update this table"
    assert any(phrase in flat(r.advice) for r in ROWS), f"{name}: no row quotes {phrase!r}"


@pytest.mark.parametrize("phrase", list(CALLER_ADVICE))
def test_caller_advice_is_applied_by_its_test(phrase: str):
    test_file = Path(__file__).resolve().parents[2] / CALLER_ADVICE[phrase]
    assert _shape(phrase) in _shape(test_file.read_text(encoding="utf-8")), f"{test_file.name} does not apply {phrase!r}"


def test_every_finding_kind_s_fix_has_a_row():
    """The registry's fixed texts (one per kind, whatever the cause) are quoted by a row too."""
    for kind, entry in FINDING_KINDS.items():
        if entry.fix is not None:
            assert _covered(entry.fix), kind
