"""The cost model on small kernels whose answers are worked out by hand: segments per SIMD-group,
bank conflicts (broadcast, padding, wide accesses, 16 banks), SIMD efficiency under divergence,
barriers, arithmetic by kind, occupancy arithmetic and the roofline's choice of bound."""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import ArgumentError, simulate
from metal_puzzles.msl.counting.op_kinds import BuiltinCost, OpKind, builtin_kind
from metal_puzzles.msl.lang.types import FLOAT, HALF, INT, vector
from metal_puzzles.msl.library import BUILTINS
from metal_puzzles.msl.library.constants import NUMERIC_LIMITS
from metal_puzzles.msl.observe.gpu_models import (
    APPLE_16_BANKS,
    GPU_MODELS,
    H100,
    Evidence,
    gpu_model,
)
from metal_puzzles.msl.observe.roofline import (
    Bound,
    OccupancyLimit,
    Workload,
    estimate_time,
    occupancy,
)

M1 = GPU_MODELS["M1"]


def profile(source: str, n: int = 64, tg: int = 64, *, cost=True, header: str = "", inputs=None, out_n=None,
            grid=None, sanitize="error"):
    a = np.arange(n, dtype=np.float32) if inputs is None else inputs
    result = simulate("k", ["a"], ["out"], source, header, inputs=[a], output_shapes=[(out_n or n,)],
                      output_dtypes=["float32"], grid=grid or (n, 1, 1), threadgroup=(tg, 1, 1), cost=cost,
                      trace=False, sanitize=sanitize)
    return result.cost


def line(p, number: int):
    return p.lines[("source", number)]


# ----------------------------------------------------------------------------------- segments
COPY = """
uint i = thread_position_in_grid.x;
out[i] = a[i];
"""


def test_a_coalesced_simdgroup_touches_one_128_byte_segment_on_apple_and_four_sectors_on_nvidia():
    apple = profile(COPY)
    loads = line(apple, 3).loads
    assert (loads.requests, loads.segments, loads.max_segments) == (2, 2, 1)
    assert loads.bytes_requested == 64 * 4 and loads.bytes_moved == 2 * 128 and loads.efficiency == 1.0
    nvidia = profile(COPY, cost="H100")
    assert (line(nvidia, 3).loads.segments, line(nvidia, 3).loads.max_segments) == (8, 4)


def test_a_misaligned_simdgroup_touches_two_segments():
    p = profile("uint i = thread_position_in_grid.x;\nout[i] = a[i + 1];\n", n=65, out_n=64, grid=(64, 1, 1))
    loads = line(p, 2).loads
    assert (loads.requests, loads.segments, loads.max_segments) == (2, 4, 2)
    assert loads.efficiency == pytest.approx(0.5)


def test_lanes_a_row_apart_touch_one_segment_each():
    src = "uint i = thread_position_in_grid.x;\nout[i] = a[(i % 32) * 32 + i / 32];\n"
    p = profile(src, n=1024, tg=256)
    loads = line(p, 2).loads
    assert loads.requests == 32 and loads.max_segments == 32 and loads.segments == 32 * 32
    assert line(p, 2).stores.max_segments == 1
    assert p.figures().load_segments.value == 32 and p.figures().load_segments.line == 2


def test_a_partial_simdgroup_requests_only_what_its_lanes_touch():
    p = profile(COPY, n=40, tg=64)
    loads = line(p, 3).loads
    assert (loads.requests, loads.segments, loads.bytes_requested) == (2, 2, 160)
    # The second SIMD-group has 8 threads: its statements use 8 of 32 lanes.
    assert line(p, 3).simd_efficiency == pytest.approx(40 / 64)


def test_reads_per_element_counts_each_distinct_element_once():
    src = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + a[i] + a[63 - i];\n"
    p = profile(src)
    assert p.unique_bytes_read == 256 and p.kernel.loads.bytes_requested == 3 * 256
    assert p.reads_per_element == pytest.approx(3.0)
    assert p.unique_bytes_written == 256


def test_uniform_and_constant_reads():
    # Every lane reads one element: one segment per SIMD-group. Shapes (constant memory) cost nothing.
    p = profile("uint i = thread_position_in_grid.x;\nout[i] = a[0] * float(a_shape[0]);\n")
    assert line(p, 2).loads.segments == 2 and line(p, 2).loads.max_segments == 1


# -------------------------------------------------------------------------------------- banks
def tg_profile(decl: str, access: str, gpu=True, n: int = 32):
    src = f"""
{decl}
uint l = thread_position_in_threadgroup.x;
{access}
out[l] = 1.0f;
"""
    # Several lanes write one element in some of these probes: a race the sanitizer would stop.
    return line(profile(src, n=n, tg=n, cost=gpu, sanitize="off"), 4)


@pytest.mark.parametrize("access, ways, wavefronts", [
    ("t[l][0] = 1.0f;", 32, 32),  # a column of a 32-float-wide tile: every lane in bank 0
    ("t[0][l] = 1.0f;", 1, 1),  # a row: 32 lanes, 32 banks
    ("t[2 * l % 32][0] = 1.0f;", 16, 16),  # 16 distinct words in bank 0, each written by two lanes
    ("t[0][(2 * l) % 32] = 1.0f;", 1, 1),  # two lanes per word: one word each, no conflict
    ("t[l / 2][(2 * l) % 32] = 1.0f;", 2, 2),  # lanes l and l + 16 in one even bank, different rows
])
def test_bank_conflicts_of_a_32_by_32_tile(access, ways, wavefronts):
    c = tg_profile("threadgroup float t[32][32];", access)
    assert c.tg_stores.max_ways == ways
    assert c.tg_stores.wavefronts == wavefronts and c.tg_stores.conflicts == wavefronts - 1


def test_a_broadcast_is_free():
    src = """
threadgroup float t[32][32];
uint l = thread_position_in_threadgroup.x;
t[0][l] = float(l);
threadgroup_barrier(mem_flags::mem_threadgroup);
out[l] = t[0][5];
"""
    p = profile(src, n=32, tg=32)
    assert (line(p, 6).tg_loads.wavefronts, line(p, 6).tg_loads.max_ways) == (1, 1)


def test_padding_a_row_by_one_float_spreads_a_column_over_the_banks():
    tiled = tg_profile("threadgroup float t[32][32];", "t[l][3] = 1.0f;")
    padded = tg_profile("threadgroup float t[32][33];", "t[l][3] = 1.0f;")
    assert tiled.tg_stores.max_ways == 32 and padded.tg_stores.max_ways == 1


def test_sixteen_banks_serve_32_lanes_in_two_passes_and_padding_still_works():
    m16 = M1.with_memory(APPLE_16_BANKS)
    row = tg_profile("threadgroup float t[32][32];", "t[0][l] = 1.0f;", m16)
    assert (row.tg_stores.wavefronts, row.tg_stores.phases, row.tg_stores.conflicts) == (2, 2, 0)
    column = tg_profile("threadgroup float t[32][32];", "t[l][0] = 1.0f;", m16)
    assert column.tg_stores.max_ways == 16 and column.tg_stores.wavefronts == 32
    padded = tg_profile("threadgroup float t[32][33];", "t[l][0] = 1.0f;", m16)
    assert padded.tg_stores.conflicts == 0


def test_wide_accesses_are_served_in_half_and_quarter_simdgroup_phases():
    f2 = tg_profile("threadgroup float2 t[32];", "t[l] = float2(1.0f);")
    assert (f2.tg_stores.wavefronts, f2.tg_stores.phases, f2.tg_stores.max_ways) == (2, 2, 1)
    f4 = tg_profile("threadgroup float4 t[32];", "t[l] = float4(1.0f);")
    assert (f4.tg_stores.wavefronts, f4.tg_stores.phases, f4.tg_stores.max_ways) == (4, 4, 1)
    # float4 with a stride of two: each quarter's 8 lanes put 2 words in every bank it uses.
    f4s = tg_profile("threadgroup float4 t[64];", "t[2 * l] = float4(1.0f);")
    assert (f4s.tg_stores.wavefronts, f4s.tg_stores.max_ways) == (8, 2)


def test_two_byte_lanes_sharing_a_word_do_not_conflict():
    c = tg_profile("threadgroup half t[64];", "t[l] = half(1.0f);")
    assert (c.tg_stores.wavefronts, c.tg_stores.max_ways) == (1, 1)


def test_arrays_are_laid_out_in_declaration_order_with_16_byte_alignment():
    # 'pad' takes 4 bytes, so 't' starts at byte 16 (word 4): a row still uses 32 distinct banks.
    src = """
threadgroup float pad[1];
threadgroup float t[32];
uint l = thread_position_in_threadgroup.x;
t[l] = 1.0f;
pad[0] = 0.0f;
out[l] = 1.0f;
"""
    result = simulate("k", ["a"], ["out"], src, inputs=[np.zeros(32, np.float32)], output_shapes=[(32,)],
                      output_dtypes=["float32"], grid=(32, 1, 1), threadgroup=(32, 1, 1), cost=True, sanitize="off")
    assert result.cost.workload.threadgroup_memory == 16 + 128
    assert result.cost.lines[("source", 5)].tg_stores.max_ways == 1


# ----------------------------------------------------------------------------- SIMD efficiency
def test_a_branch_on_odd_and_even_lanes_runs_both_sides_at_half_width():
    src = """
uint i = thread_position_in_grid.x;
if (i % 2 == 0) {
    out[i] = 1.0f;
} else {
    out[i] = 2.0f;
}
"""
    p = profile(src)
    assert line(p, 4).simd_issues == 2 and line(p, 4).simd_efficiency == 0.5
    assert line(p, 6).simd_issues == 2 and line(p, 6).simd_efficiency == 0.5
    # 2 + 2 full statements and 2 + 2 half ones: 192 of 256 issued lanes.
    assert p.kernel.simd_efficiency == pytest.approx(192 / 256)
    assert p.figures().simd_efficiency == pytest.approx(0.75)


def test_a_branch_uniform_per_simdgroup_costs_no_idle_lanes():
    src = """
uint i = thread_position_in_grid.x;
if (i < 32) {
    out[i] = 1.0f;
} else {
    out[i] = 2.0f;
}
"""
    p = profile(src)
    assert line(p, 4).simd_issues == 1 and line(p, 6).simd_issues == 1
    assert p.kernel.simd_efficiency == 1.0


def test_loop_iterations_count_as_statements():
    src = """
uint i = thread_position_in_grid.x;
float x = 0.0f;
for (uint k = 0; k < i % 4; ++k) {
    x += 1.0f;
}
out[i] = x;
"""
    p = profile(src, n=32, tg=32)
    # Iterations 0, 1, 2 run with 24, 16 and 8 lanes active.
    assert line(p, 4).simd_issues == 3 and line(p, 4).active_lanes == 48
    assert line(p, 5).ops[OpKind.FLOAT_ADD].lane_ops == 48
    assert line(p, 5).ops[OpKind.FLOAT_ADD].lane_slots == 3 * 32


# ------------------------------------------------------------------------ arithmetic, barriers
def test_arithmetic_is_counted_by_kind_and_flops_follow():
    src = """
uint i = thread_position_in_grid.x;
float x = a[i];
float4 v = float4(x);
v = v * 2.0f;
x = fma(x, 2.0f, 1.0f) + exp(x) / 3.0f;
out[i] = x + v.x;
"""
    p = profile(src, n=32, tg=32)
    assert line(p, 5).ops[OpKind.FLOAT_MUL].lane_ops == 32 * 4  # a float4 multiply: 4 per lane
    ops = line(p, 6).ops
    assert ops[OpKind.FLOAT_FMA].lane_ops == 32 and ops[OpKind.FLOAT_SPECIAL].lane_ops == 32
    assert ops[OpKind.FLOAT_DIV].lane_ops == 32 and ops[OpKind.FLOAT_ADD].lane_ops == 32
    assert line(p, 6).flops == 32 * (2 + 1 + 1 + 1)


def test_every_builtin_declares_its_cost_on_its_row():
    """The cost class is part of each builtin's registration (issue 38): a builtin without one is
    an error here, not a call the cost model silently counts as nothing (fma once was, when its
    name was missing from a set in op_kinds)."""
    rows = {**BUILTINS, "numeric_limits": NUMERIC_LIMITS}
    missing = sorted(name for name, b in rows.items() if not isinstance(getattr(b, "cost", None), BuiltinCost))
    assert not missing, f"builtins without a BuiltinCost: {missing}"
    assert BUILTINS["fma"].cost == BUILTINS["mad"].cost == BuiltinCost.FMA
    assert BUILTINS["threadgroup_barrier"].cost == BuiltinCost.NOT_ARITHMETIC


@pytest.mark.parametrize("cost", list(BuiltinCost))
def test_every_cost_class_counts_on_every_argument_type(cost: BuiltinCost) -> None:
    for ty in (FLOAT, vector(HALF, 4), INT, None):
        found = builtin_kind(cost, ty)
        assert found is None or (isinstance(found[0], OpKind) and found[1] >= 1)
    assert (builtin_kind(cost, FLOAT) is None) == (cost == BuiltinCost.NOT_ARITHMETIC)


def test_a_shuffle_is_one_simd_step_and_a_reduction_five():
    """Only reductions and scans are log2(32) shuffle steps: simd_shuffle_xor, simd_shuffle_and_fill_down
    and a vote's all() are one exchange each (their names, matched by substrings, once made them
    reductions: 'xor', 'and', 'all')."""
    src = """
uint i = thread_position_in_grid.x;
float x = simd_shuffle_xor(a[i], 1u);
float y = simd_shuffle_and_fill_down(x, 0.0f, 1u);
bool all = simd_active_threads_mask().all();
out[i] = simd_sum(y) + float(all);
"""
    p = profile(src, n=64, tg=64)
    assert line(p, 3).ops[OpKind.SIMD].instructions == 2  # two SIMD-groups, one shuffle each
    assert line(p, 4).ops[OpKind.SIMD].instructions == 2
    assert line(p, 5).ops[OpKind.SIMD].instructions == 2 * 2  # the mask, then its all()
    assert line(p, 6).ops[OpKind.SIMD].instructions == 2 * 5


def test_a_numeric_limit_is_a_constant_not_an_instruction():
    p = profile("uint i = thread_position_in_grid.x;\nout[i] = metal::numeric_limits<float>::max();\n", n=32, tg=32)
    assert OpKind.FLOAT_OTHER not in line(p, 2).ops


def test_integer_division_by_a_constant_power_of_two_is_a_shift():
    src = """
uint i = thread_position_in_grid.x;
uint n = uint(a_shape[0]);
out[i] = float(i / 32 + i % 8 + i / 3 + i / n);
"""
    ops = line(profile(src, n=32, tg=32), 4).ops
    # i / 32 and i % 8 are shifts and masks; i / 3 a multiply; i / n a division routine.
    assert ops[OpKind.INT_DIV].lane_ops == 32 and ops[OpKind.INT_MUL].lane_ops == 32
    assert ops[OpKind.INT_ADD].lane_ops == 5 * 32


def test_simd_sum_is_five_shuffle_steps_and_a_tree_counts_its_barriers():
    src = """
threadgroup float sh[64];
uint t = thread_position_in_threadgroup.x;
sh[t] = simd_sum(a[thread_position_in_grid.x]);
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint s = 32; s > 0; s >>= 1) {
    if (t < s) {
        sh[t] += sh[t + s];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
out[thread_position_in_grid.x] = sh[0];
"""
    p = profile(src, n=128, tg=64)
    assert line(p, 4).ops[OpKind.SIMD].instructions == 4 * 5
    assert p.barriers_per_threadgroup == 7
    assert line(p, 10).barriers == 6 * 2  # six steps, two threadgroups
    # t < s (s <= 32) keeps SIMD-group 0 only: two loads per step, six steps, two threadgroups.
    assert line(p, 8).tg_loads.requests == 6 * 2 * 2


def test_atomic_contention_is_the_lanes_of_a_simdgroup_on_one_address():
    src = "atomic_fetch_add_explicit(&out[0], 1.0f, memory_order_relaxed);\n"
    result = simulate("k", ["a"], ["out"], src, inputs=[np.zeros(64, np.float32)], output_shapes=[(1,)],
                      output_dtypes=["float32"], grid=(64, 1, 1), threadgroup=(64, 1, 1), cost=True,
                      atomic_outputs=True, init_value=0.0)
    c = result.cost.lines[("source", 1)]
    assert c.atomic_contention == 32 and c.atomics.requests == 2 and c.atomics.segments == 2


# --------------------------------------------------------------------------------- occupancy
@pytest.mark.parametrize("gpu, threads, memory, groups, simdgroups, limit", [
    (M1, 256, 32 * 1024, 1, 8, OccupancyLimit.THREADGROUP_MEMORY),  # 60 KiB hold one 32 KiB group
    (M1, 256, 1024, 12, 96, OccupancyLimit.SIMDGROUPS),  # 60 would fit; 96 SIMD-groups cap at 12
    (M1, 256, 20 * 1024, 3, 24, OccupancyLimit.THREADGROUP_MEMORY),
    (M1, 32, 0, 96, 96, OccupancyLimit.SIMDGROUPS),  # no cap on threadgroups per core is published
    (M1, 48, 0, 48, 96, OccupancyLimit.SIMDGROUPS),  # 48 threads take two SIMD-groups
    (M1, 1024, 0, 3, 96, OccupancyLimit.SIMDGROUPS),
    (M1, 256, 1000, 12, 96, OccupancyLimit.SIMDGROUPS),  # 1000 B round up to 1008 (16-byte granule)
    (H100, 32, 0, 32, 32, OccupancyLimit.THREADGROUPS),  # 32 blocks per SM: 50%
    (H100, 256, 32 * 1024, 6, 48, OccupancyLimit.THREADGROUP_MEMORY),  # (32 + 1) KiB each: 75%
    (H100, 256, 1024, 8, 64, OccupancyLimit.SIMDGROUPS),
])
def test_occupancy(gpu, threads, memory, groups, simdgroups, limit):
    occ = occupancy(gpu, threads, memory)
    assert (occ.threadgroups_per_core, occ.simdgroups_per_core, occ.limited_by) == (groups, simdgroups, limit)
    assert occ.fraction == pytest.approx(simdgroups / gpu.max_simdgroups_per_core)


def test_the_profile_knows_the_launch_occupancy():
    src = "threadgroup float big[8192];\nuint l = thread_position_in_threadgroup.x;\nbig[l] = 1.0f;\nout[l] = 1.0f;\n"
    result = simulate("k", ["a"], ["out"], src, inputs=[np.zeros(256, np.float32)], output_shapes=[(256,)],
                      output_dtypes=["float32"], grid=(256, 1, 1), threadgroup=(256, 1, 1), cost=True)
    assert result.cost.occupancy.simdgroups_per_core == 8
    assert result.cost.figures().occupancy == pytest.approx(8 / 96)


# ---------------------------------------------------------------------------------- roofline
def work(bytes_moved=0, wavefronts=0, fma=0, threads=256, groups=10_000, memory=0, barriers=0):
    return Workload(threads, groups, memory, bytes_moved, wavefronts, {OpKind.FLOAT_FMA: fma} if fma else {},
                    barriers_per_threadgroup=barriers)


def test_the_roofline_names_the_binding_resource():
    assert estimate_time(work(bytes_moved=10**9), M1).bound == Bound.MEMORY
    assert estimate_time(work(wavefronts=10**9), M1).bound == Bound.THREADGROUP_MEMORY
    assert estimate_time(work(fma=10**11), M1).bound == Bound.COMPUTE
    assert estimate_time(work(bytes_moved=1000, groups=4), M1).bound == Bound.LAUNCH


def test_the_roofline_times_by_hand():
    # M1: 8 cores, 68.25 GB/s at 80%; 1 GB is 18.3 ms.
    t = estimate_time(work(bytes_moved=10**9), M1, whole_gpu=True)
    assert t.seconds == pytest.approx(1e9 / (68.25e9 * 0.8))
    # 1e11 lane-FMAs at 128 per cycle per core, 8 cores, 1.278 GHz, 90%.
    t = estimate_time(work(fma=10**11), M1, whole_gpu=True)
    assert t.seconds == pytest.approx(1e11 / 128 / (8 * 1.278e9 * 0.9))
    # Wavefronts at half a pass per core-cycle.
    t = estimate_time(work(wavefronts=10**9), M1, whole_gpu=True)
    assert t.seconds == pytest.approx(1e9 / (0.5 * 8 * 1.278e9))


def test_barriers_cost_a_wait_per_wave_of_threadgroups():
    """80 cycles per barrier on the M1 model (1.278 GHz); threadgroups resident on one core wait
    side by side, so a launch waits once per wave."""
    # Two threadgroups on two cores, one each: one wave, nine barriers.
    t = estimate_time(work(barriers=9, groups=2), M1)
    assert t.ceilings[Bound.BARRIERS] == pytest.approx(9 * 80 / 1.278e9)
    assert t.kernel_bound == Bound.BARRIERS and t.bound == Bound.LAUNCH
    # 40 threadgroups holding 16 KiB each: 5 per core, 3 at once (60 KiB per core), so two waves.
    t = estimate_time(work(barriers=9, groups=40, memory=16 * 1024), M1)
    assert t.ceilings[Bound.BARRIERS] == pytest.approx(2 * 9 * 80 / 1.278e9)
    # As part of a launch that fills the GPU: 12 threadgroups of 256 threads per core, 8 cores.
    t = estimate_time(work(barriers=9, groups=960), M1, whole_gpu=True)
    assert t.ceilings[Bound.BARRIERS] == pytest.approx(10 * 9 * 80 / 1.278e9)
    assert estimate_time(work(groups=2), M1).ceilings[Bound.BARRIERS] == 0


def test_the_time_says_the_kernel_time_apart_from_the_launch_overhead():
    t = estimate_time(work(bytes_moved=10**4, groups=2), M1)
    memory = 10**4 / (68.25e9 * 0.8 * (2 / 8) * (8 / 24))
    assert t.kernel_seconds == pytest.approx(memory) and t.seconds == pytest.approx(memory + 10e-6)
    text = t.describe()
    assert text.startswith(f"kernel ~{memory * 1e6:.3g} us on M1, bound by device-memory traffic")
    assert text.endswith(f"plus the launch overhead of 10 us: ~{(memory + 10e-6) * 1e6:.3g} us in all")


def test_too_few_resident_simdgroups_slow_everything_down():
    full = estimate_time(work(bytes_moved=10**9, memory=1024), M1, whole_gpu=True)
    starved = estimate_time(work(bytes_moved=10**9, memory=32 * 1024), M1, whole_gpu=True)
    assert full.latency_hiding == 1.0 and starved.latency_hiding == pytest.approx(8 / 24)
    assert starved.seconds == pytest.approx(full.seconds * 3)


def test_a_small_launch_keeps_few_cores_busy():
    t = estimate_time(work(bytes_moved=10**8, groups=2), M1)
    assert t.active_cores == 2
    assert t.ceilings[Bound.MEMORY] == pytest.approx(1e8 / (68.25e9 * 0.8 * (2 / 8) * (8 / 24)))


# ------------------------------------------------------------------------ off the hot path
def test_no_profile_unless_asked_and_the_same_outputs_either_way():
    src = "uint i = thread_position_in_grid.x;\nout[i] = a[63 - i] * 2.0f;\n"
    a = np.arange(64, dtype=np.float32)
    kw = dict(inputs=[a], output_shapes=[(64,)], output_dtypes=["float32"], grid=(64, 1, 1), threadgroup=(32, 1, 1))
    plain = simulate("k", ["a"], ["out"], src, **kw)
    costed = simulate("k", ["a"], ["out"], src, cost="M3 Max", **kw)
    assert plain.cost is None and costed.cost.gpu.name == "M3 Max"
    np.testing.assert_array_equal(plain.outputs[0], costed.outputs[0])
    assert plain.counts.max() == costed.counts.max()


def test_header_functions_are_profiled_on_their_own_lines():
    header = "float twice(float x) {\n    return x * 2.0f;\n}\n"
    p = profile("uint i = thread_position_in_grid.x;\nout[i] = twice(a[i]);\n", header=header)
    assert p.lines[("header", 2)].ops[OpKind.FLOAT_MUL].lane_ops == 64


def test_the_text_says_it_is_a_model_and_names_the_bound():
    text = profile(COPY).text()
    assert "This is a model, not a measurement" in text
    assert "bound by" in text and "M1" in text
    assert "out[i] = a[i];" in text


def test_bad_model_names_are_refused_with_the_known_ones():
    with pytest.raises(ArgumentError, match="no GPU model named 'M9'.*M1 Pro"):
        profile(COPY, cost="M9")
    assert gpu_model("m3 max") is GPU_MODELS["M3 Max"]


# ------------------------------------------------------------------------------- parameters
REQUIRED_SOURCES = ("cores", "clock_hz", "dram_bandwidth", "alus_per_core", "memory.segment_bytes", "memory.banks",
                    "max_threadgroup_memory", "threadgroup_memory_per_core", "max_simdgroups_per_core",
                    "max_threadgroups_per_core", "saturating_simdgroups_per_core", "threadgroup_wavefronts_per_cycle",
                    "op_rates", "memory_efficiency", "alu_efficiency", "launch_overhead", "barrier_cycles")


@pytest.mark.parametrize("name", list(GPU_MODELS))
def test_every_parameter_has_a_source_and_an_uncertainty(name):
    model = GPU_MODELS[name]
    for key in REQUIRED_SOURCES:
        src = model.sources[key]
        assert src.text and src.uncertainty and isinstance(src.evidence, Evidence), (name, key)
    assert set(model.op_rates) == set(OpKind)
    assert name in model.describe()


def test_derived_peaks_reproduce_published_figures():
    # Apple's own figures: M1 2.6, M1 Max 10.4, M2 Ultra 27.2 TFLOPS; NVIDIA's H100 SXM 67.
    assert GPU_MODELS["M1"].peak_flops / 1e12 == pytest.approx(2.6, rel=0.02)
    assert GPU_MODELS["M1 Max"].peak_flops / 1e12 == pytest.approx(10.4, rel=0.03)
    assert GPU_MODELS["M2 Ultra"].peak_flops / 1e12 == pytest.approx(27.2, rel=0.01)
    assert H100.peak_flops / 1e12 == pytest.approx(66.9, rel=0.01)
