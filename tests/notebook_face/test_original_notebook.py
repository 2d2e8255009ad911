"""The original Metal-Puzzles notebook's fourteen puzzles, written the original way: its templates
(positions from ``threadgroup_position_in_grid * threads_per_threadgroup``, the barrier inside the
``if`` of Threadgroup Memory), its launch sizes, its specs written as Python loops, and solutions
as its learners would write them for those launches. Only the import line changes.

The contract rule makes the verdicts fair: a kernel that is correct for a puzzle as the original
posed it passes (with notes where hidden tests pose more than its visible test does), and the
typical wrong ones fail, for the right reason.
"""

from __future__ import annotations

import mlx.core as mx
import pytest

from metal_puzzles import MetalKernel, MetalProblem
from metal_puzzles.checking import CheckResult

# The original's shared position line, as its templates write it.
POSITION = "uint i = threads_per_threadgroup.x * threadgroup_position_in_grid.x + thread_position_in_threadgroup.x;"
THREADGROUP_MEM_SIZE = 8


# ----------------------------------------------------------------------------- the original's specs
def map_spec(a: mx.array):
    return a + 10


def zip_spec(a: mx.array, b: mx.array):
    return a + b


def pooling_spec(a: mx.array):
    out = mx.zeros(*a.shape)
    for i in range(a.shape[0]):
        out[i] = a[max(i - 2, 0) : i + 1].sum()
    return out


def dot_spec(a: mx.array, b: mx.array):
    return a @ b


def conv_spec(a: mx.array, b: mx.array):
    out = mx.zeros(*a.shape)
    taps = b.shape[0]
    for i in range(a.shape[0]):
        out[i] = sum([a[i + j] * b[j] for j in range(taps) if i + j < a.shape[0]])
    return out


def _block_sums(a: mx.array) -> mx.array:
    """Sums of consecutive blocks of THREADGROUP_MEM_SIZE along the last axis (a short last block
    counts what it has)."""
    n = a.shape[-1]
    blocks = -(-n // THREADGROUP_MEM_SIZE)
    widths = [(0, 0)] * (a.ndim - 1) + [(0, blocks * THREADGROUP_MEM_SIZE - n)]
    padded = mx.pad(a, widths)
    return padded.reshape(*a.shape[:-1], blocks, THREADGROUP_MEM_SIZE).sum(axis=-1)


def prefix_sum_spec(a: mx.array):
    return _block_sums(a)


def axis_sum_spec(a: mx.array):
    return _block_sums(a)


def matmul_spec(a: mx.array, b: mx.array):
    return a @ b


# ----------------------------------------------------------------------------- kernels, the original way
def kernel(name: str, inputs: list[str], source: str, header: str = ""):
    """The notebook's test function: it returns the MetalKernel built from a source string."""

    def test_fn(*arrays: mx.array) -> MetalKernel:
        return MetalKernel(name=name, input_names=inputs, output_names=["out"], source=source, header=header)

    return test_fn


HEADER_4 = "\nconstant uint THREADGROUP_MEM_SIZE = 4;\n"
HEADER_8 = "\nconstant uint THREADGROUP_MEM_SIZE = 8;\n"
HEADER_3 = "\nconstant uint THREADGROUP_MEM_SIZE = 3;\n"
HEADER_CONV = "\nconstant uint THREADGROUP_MAX_CONV_SIZE = 12;\nconstant uint MAX_CONV = 4;\n"

CORRECT = {
    "map": """
uint local_i = thread_position_in_grid.x;
out[local_i] = a[local_i] + 10;
""",
    "zip": """
uint local_i = thread_position_in_grid.x;
out[local_i] = a[local_i] + b[local_i];
""",
    "guard": """
uint local_i = thread_position_in_grid.x;
if (local_i < a_shape[0]) {
    out[local_i] = a[local_i] + 10;
}
""",
    "map_2d": """
uint thread_x = thread_position_in_grid.x;
uint thread_y = thread_position_in_grid.y;
uint size = a_shape[0];
if (thread_x < size && thread_y < size) {
    out[thread_y * size + thread_x] = a[thread_y * size + thread_x] + 10;
}
""",
    # Square, as the original poses it: one size for rows and columns.
    "broadcast": """
uint thread_x = thread_position_in_grid.x;
uint thread_y = thread_position_in_grid.y;
uint size = a_shape[0];
if (thread_x < size && thread_y < size) {
    out[thread_y * size + thread_x] = a[thread_y] + b[thread_x];
}
""",
    "threadgroups": f"""
{POSITION}
if (i < a_shape[0]) {{
    out[i] = a[i] + 10;
}}
""",
    "threadgroups_2d": f"""
{POSITION}
uint j = threadgroup_position_in_grid.y * threads_per_threadgroup.y + thread_position_in_threadgroup.y;
uint size = a_shape[0];
if (i < size && j < size) {{
    out[j * size + i] = a[j * size + i] + 10;
}}
""",
    # The original template: the barrier inside the if.
    "threadgroup_memory": f"""
threadgroup float shared[THREADGROUP_MEM_SIZE];
{POSITION}
uint local_i = thread_position_in_threadgroup.x;

if (i < a_shape[0]) {{
    shared[local_i] = a[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
}}

if (i < a_shape[0]) {{
    out[i] = shared[local_i] + 10;
}}
""",
    # One thread per element, as in the original's launch: no guard.
    "pooling": f"""
threadgroup float shared[THREADGROUP_MEM_SIZE];
{POSITION}
uint local_i = thread_position_in_threadgroup.x;
shared[local_i] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
float total = shared[local_i];
if (local_i > 0) {{
    total += shared[local_i - 1];
}}
if (local_i > 1) {{
    total += shared[local_i - 2];
}}
out[i] = total;
""",
    "dot_product": f"""
threadgroup float shared[THREADGROUP_MEM_SIZE];
{POSITION}
uint local_i = thread_position_in_threadgroup.x;
shared[local_i] = a[i] * b[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
if (local_i == 0) {{
    float total = 0;
    for (uint k = 0; k < THREADGROUP_MEM_SIZE; k++) {{
        total += shared[k];
    }}
    out[0] = total;
}}
""",
    # Both tests with one kernel: a tail of the next group's elements loaded by the last threads.
    "conv": f"""
threadgroup float a_shared[THREADGROUP_MAX_CONV_SIZE];
threadgroup float b_shared[MAX_CONV];
{POSITION}
uint local_i = thread_position_in_threadgroup.x;
uint size = a_shape[0];
uint taps = b_shape[0];
uint group_size = threads_per_threadgroup.x;
a_shared[local_i] = i < size ? a[i] : 0;
if (local_i < taps) {{
    b_shared[local_i] = b[local_i];
}}
if (local_i + taps - 1 >= group_size) {{
    uint k = i + taps - 1;
    a_shared[local_i + taps - 1] = k < size ? a[k] : 0;
}}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < size) {{
    float total = 0;
    for (uint j = 0; j < taps; j++) {{
        total += a_shared[local_i + j] * b_shared[j];
    }}
    out[i] = total;
}}
""",
    "prefix_sum": f"""
threadgroup float cache[THREADGROUP_MEM_SIZE];
{POSITION}
uint local_i = thread_position_in_threadgroup.x;
cache[local_i] = i < a_shape[0] ? a[i] : 0;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint stride = 1; stride < THREADGROUP_MEM_SIZE; stride *= 2) {{
    if (local_i % (2 * stride) == 0) {{
        cache[local_i] += cache[local_i + stride];
    }}
    threadgroup_barrier(mem_flags::mem_threadgroup);
}}
if (local_i == 0) {{
    out[threadgroup_position_in_grid.x] = cache[0];
}}
""",
    # Every row fits in one threadgroup in the original's test: one sum per row.
    "axis_sum": f"""
threadgroup float cache[THREADGROUP_MEM_SIZE];
{POSITION}
uint local_i = thread_position_in_threadgroup.x;
uint batch = threadgroup_position_in_grid.y;
uint size = a_shape[1];
cache[local_i] = i < size ? a[batch * size + i] : 0;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint stride = 1; stride < THREADGROUP_MEM_SIZE; stride *= 2) {{
    if (local_i % (2 * stride) == 0) {{
        cache[local_i] += cache[local_i + stride];
    }}
    threadgroup_barrier(mem_flags::mem_threadgroup);
}}
if (local_i == 0) {{
    out[batch] = cache[0];
}}
""",
    "matmul": f"""
threadgroup float tile_a[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];
threadgroup float tile_b[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];

{POSITION}
uint j = threadgroup_position_in_grid.y * threads_per_threadgroup.y + thread_position_in_threadgroup.y;

uint local_i = thread_position_in_threadgroup.x;
uint local_j = thread_position_in_threadgroup.y;
uint size = a_shape[0];
float total = 0;
for (uint tile = 0; tile < size; tile += THREADGROUP_MEM_SIZE) {{
    tile_a[local_j][local_i] = (j < size && tile + local_i < size) ? a[j * size + tile + local_i] : 0;
    tile_b[local_j][local_i] = (i < size && tile + local_j < size) ? b[(tile + local_j) * size + i] : 0;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 0; k < THREADGROUP_MEM_SIZE; k++) {{
        total += tile_a[local_j][k] * tile_b[k][local_i];
    }}
    threadgroup_barrier(mem_flags::mem_threadgroup);
}}
if (i < size && j < size) {{
    out[j * size + i] = total;
}}
""",
}


def square(n: int, dtype=mx.int32) -> mx.array:
    return mx.arange(n * n, dtype=dtype).reshape(n, n)


def problem(title: str, source: str) -> MetalProblem:
    """Each of the original's problems, with its own inputs, launch and spec."""
    if title == "Map":
        return MetalProblem("Map", kernel("map", ["a"], source), [mx.arange(4)], (4,), grid=(4, 1, 1), spec=map_spec)
    if title == "Zip":
        return MetalProblem("Zip", kernel("zip", ["a", "b"], source), [mx.arange(4), mx.arange(4)], (4,),
                            grid=(4, 1, 1), spec=zip_spec)
    if title == "Guard":
        return MetalProblem("Guard", kernel("guard", ["a"], source), [mx.arange(4)], (4,), grid=(8, 1, 1),
                            spec=map_spec)
    if title == "Map 2D":
        return MetalProblem("Map 2D", kernel("map_2D", ["a"], source), [square(2)], (2, 2), grid=(3, 3, 1),
                            spec=map_spec)
    if title == "Broadcast":
        return MetalProblem("Broadcast", kernel("broadcast", ["a", "b"], source),
                            [mx.arange(2).reshape(2, 1), mx.arange(2).reshape(1, 2)], (2, 2), grid=(3, 3, 1),
                            spec=zip_spec)
    if title == "Threadgroups":
        return MetalProblem("Threadgroups", kernel("threadgroups", ["a"], source), [mx.arange(9)], (9,),
                            grid=(12, 1, 1), threadgroup=(4, 1, 1), spec=map_spec)
    if title == "Threadgroups 2D":
        return MetalProblem("Threadgroups 2D", kernel("threadgroups_2D", ["a"], source), [mx.ones((5, 5))], (5, 5),
                            grid=(6, 6, 1), threadgroup=(3, 3, 1), spec=map_spec)
    if title == "Threadgroup Memory":
        return MetalProblem("Threadgroup Memory", kernel("threadgroup_memory", ["a"], source, HEADER_4),
                            [mx.ones(8)], (8,), grid=(8, 1, 1), threadgroup=(4, 1, 1), spec=map_spec)
    if title == "Pooling":
        return MetalProblem("Pooling", kernel("pooling", ["a"], source, HEADER_8), [mx.arange(8)], (8,),
                            grid=(8, 1, 1), threadgroup=(8, 1, 1), spec=pooling_spec)
    if title == "Dot Product":
        a = mx.arange(8, dtype=mx.float32)
        return MetalProblem("Dot Product", kernel("dot_product", ["a", "b"], source, HEADER_8), [a, a], (1,),
                            grid=(8, 1, 1), threadgroup=(8, 1, 1), spec=dot_spec)
    if title == "1D Conv (Simple)":
        return MetalProblem(title, kernel("1D_conv", ["a", "b"], source, HEADER_CONV),
                            [mx.arange(6, dtype=mx.float32), mx.arange(3, dtype=mx.float32)], (6,),
                            grid=(8, 1, 1), threadgroup=(8, 1, 1), spec=conv_spec)
    if title == "1D Conv (Full)":
        return MetalProblem(title, kernel("1D_conv", ["a", "b"], source, HEADER_CONV),
                            [mx.arange(15, dtype=mx.float32), mx.arange(4, dtype=mx.float32)], (15,),
                            grid=(16, 1, 1), threadgroup=(8, 1, 1), spec=conv_spec)
    if title == "Prefix Sum (Simple)":
        return MetalProblem(title, kernel("prefix_sum", ["a"], source, HEADER_8), [mx.arange(8)], (1,),
                            grid=(8, 1, 1), threadgroup=(8, 1, 1), spec=prefix_sum_spec)
    if title == "Prefix Sum (Full)":
        return MetalProblem(title, kernel("prefix_sum", ["a"], source, HEADER_8), [mx.arange(15)], (2,),
                            grid=(16, 1, 1), threadgroup=(8, 1, 1), spec=prefix_sum_spec)
    if title == "Axis Sum":
        return MetalProblem(title, kernel("axis_sum", ["a"], source, HEADER_8), [mx.arange(24).reshape(4, 6)],
                            (4, 1), grid=(8, 4, 1), threadgroup=(8, 1, 1), spec=axis_sum_spec)
    if title == "Matmul (Simple)":
        a = square(2, mx.float32)
        return MetalProblem(title, kernel("matmul", ["a", "b"], source, HEADER_3), [a, a.T], (2, 2),
                            grid=(3, 3, 1), threadgroup=(3, 3, 1), spec=matmul_spec)
    if title == "Matmul (Full)":
        a = square(8, mx.float32)
        return MetalProblem(title, kernel("matmul", ["a", "b"], source, HEADER_3), [a, a.T], (8, 8),
                            grid=(9, 9, 1), threadgroup=(3, 3, 1), spec=matmul_spec)
    raise KeyError(title)


# (title, key of CORRECT, conditions its hidden tests may note: none means no notes expected)
BOOK = [
    ("Map", "map"), ("Zip", "zip"), ("Guard", "guard"), ("Map 2D", "map_2d"), ("Broadcast", "broadcast"),
    ("Threadgroups", "threadgroups"), ("Threadgroups 2D", "threadgroups_2d"),
    ("Threadgroup Memory", "threadgroup_memory"), ("Pooling", "pooling"), ("Dot Product", "dot_product"),
    ("1D Conv (Simple)", "conv"), ("1D Conv (Full)", "conv"), ("Prefix Sum (Simple)", "prefix_sum"),
    ("Prefix Sum (Full)", "prefix_sum"), ("Axis Sum", "axis_sum"), ("Matmul (Simple)", "matmul"),
    ("Matmul (Full)", "matmul"),
]

# Where the original's launch poses less than the hidden tests try, the correct kernels get notes:
# partial threadgroups, spare threads, rows longer than a threadgroup, matrices that are not square.
NOTED = {"Broadcast", "Threadgroups", "Threadgroups 2D", "Threadgroup Memory", "Pooling", "Dot Product",
         "1D Conv (Full)", "Prefix Sum (Full)", "Axis Sum"}


def check(title: str, source: str) -> CheckResult:
    return problem(title, source).check(quiet=True)


@pytest.mark.parametrize("title, key", BOOK)
def test_correct_original_solutions_pass(title, key):
    result = check(title, CORRECT[key])
    assert result.passed, result.report()
    assert result.report().startswith(f"Passed: {title} is correct")
    assert bool(result.notes) == (title in NOTED), result.report()
    if result.notes:
        assert "Note: correct for this puzzle as its visible test poses it." in result.report()


def test_the_notes_say_what_would_go_wrong_and_why():
    report = check("Threadgroups", CORRECT["threadgroups"]).report()
    assert "(a partial last threadgroup)" in report and "it would write out[" in report
    assert "dispatch_threads_per_threadgroup" in report
    report = check("Threadgroup Memory", CORRECT["threadgroup_memory"]).report()
    assert "barrier" in report
    report = check("Axis Sum", CORRECT["axis_sum"]).report()
    assert "several threadgroups along x" in report
    report = check("Broadcast", CORRECT["broadcast"]).report()
    assert "a non-square out" in report


# ----------------------------------------------------------------------------- typical wrong answers
def test_unguarded_guard_reads_past_the_end():
    result = check("Guard", CORRECT["map"])
    assert not result and result.status == "findings"
    assert "out-of-bounds" in result.report() and "reads a[4]" in result.report()


def test_map_2d_with_the_wrong_row_length_fails():
    # Rows of the 3x3 grid instead of rows of the 2x2 matrix.
    src = CORRECT["map_2d"].replace("thread_y * size + thread_x", "thread_y * 3 + thread_x")
    result = check("Map 2D", src)
    assert not result and not result.outcomes[0].ok


def test_pooling_without_a_barrier_races():
    src = CORRECT["pooling"].replace("threadgroup_barrier(mem_flags::mem_threadgroup);", "")
    result = check("Pooling", src)
    assert not result and result.status == "findings"
    assert "race" in result.report() and "threadgroup_barrier" in result.report()


def test_pooling_window_without_a_test_wraps_around():
    # shared[local_i - 1] for local_i == 0: the uint index wraps around to 4294967295.
    src = CORRECT["pooling"].replace("if (local_i > 0) {\n    total += shared[local_i - 1];\n}",
                                     "total += shared[local_i - 1];")
    assert src != CORRECT["pooling"]
    report = " ".join(check("Pooling", src).report().split())  # reports break long lines between words
    assert "shared[4294967295]" in report
    assert "'local_i - 1', which is unsigned (uint) arithmetic" in report and "with local_i = 0" in report
    assert "if (local_i >= 1)" in report


def test_dot_product_where_every_thread_adds_into_out_races():
    src = f"{POSITION}\nout[0] += a[i] * b[i];\n"
    result = check("Dot Product", src)
    assert not result and any(f.kind == "race" for f in result.findings)


def test_prefix_sum_without_a_barrier_in_the_loop_races():
    src = CORRECT["prefix_sum"].replace(
        "    }\n    threadgroup_barrier(mem_flags::mem_threadgroup);\n}", "    }\n}")
    assert src != CORRECT["prefix_sum"]
    result = check("Prefix Sum (Simple)", src)
    assert not result and any(f.kind == "race" for f in result.findings)


def test_matmul_reading_global_memory_directly_is_over_budget():
    src = f"""
{POSITION}
uint j = threadgroup_position_in_grid.y * threads_per_threadgroup.y + thread_position_in_threadgroup.y;
uint size = a_shape[0];
if (i < size && j < size) {{
    float total = 0;
    for (uint k = 0; k < size; k++) {{
        total += a[j * size + k] * b[k * size + i];
    }}
    out[j * size + i] = total;
}}
"""
    result = check("Matmul (Full)", src)
    assert result.correct and not result and result.status == "over-budget"


def test_threadgroup_memory_template_alone_fails_politely():
    src = CORRECT["threadgroup_memory"].split("if (i < a_shape[0]) {\n    out[i]")[0] + "// FILL ME IN (roughly 1-3 lines)\n"
    result = check("Threadgroup Memory", src)
    assert not result and "unwritten-output" in result.report()
