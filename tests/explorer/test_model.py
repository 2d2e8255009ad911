"""The model behind the explorer widgets: accesses per thread and phase, variables per step."""

import re

import numpy as np
import pytest

from metal_puzzles.explorer.run_model import ExplorerModel
from metal_puzzles.msl import simulate

POOL = """
threadgroup float s[4];
uint i = thread_position_in_grid.x;
uint li = thread_position_in_threadgroup.x;
s[li] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
float acc = s[li];
if (li > 0) acc += s[li - 1];
out[i] = acc;
"""


def cells(m: ExplorerModel, lane: int, phase: int | None = None) -> dict[str, set[tuple[str, int]]]:
    """The (buffer, index) cells a thread read, wrote or updated in a phase (as the explorer lists
    them), and under "out_of_bounds" those it asked for outside its memory."""
    out: dict[str, set[tuple[str, int]]] = {"read": set(), "write": set(), "atomic": set(), "out_of_bounds": set()}
    for a in m.accesses(lane, phase):
        out[a.kind if a.in_bounds else "out_of_bounds"].add((a.buffer, a.index))
    return out


def accesses_at(m: ExplorerModel, step: int, lane: int) -> list:
    """What the statement of step ``step`` did for one thread."""
    return [a for a in m.accesses(lane) if a.step == step]


@pytest.fixture(scope="module")
def model():
    r = simulate("pool", ["a"], ["out"], POOL, inputs=[np.arange(8, dtype=np.float32)], output_shapes=[(8,)],
                 output_dtypes=["float32"], grid=(8, 1, 1), threadgroup=(4, 1, 1), trace=True, steps=True)
    return ExplorerModel(r)


def test_threads_are_addressed_by_group_and_index(model):
    assert model.n_groups == 2 and model.threads_in_group(1) == 4
    lane = model.lane(1, 2)
    assert model.label(lane) == "thread 6 = 2 of threadgroup 1"


def test_highlight_per_phase(model):
    lane = model.lane(1, 2)  # grid thread 6
    before = cells(model, lane, phase=0)
    assert before["read"] == {("a", 6)} and before["write"] == {("s", 2)}
    after = cells(model, lane, phase=1)
    assert after["read"] == {("s", 2), ("s", 1)} and after["write"] == {("out", 6)}
    assert [a.line for a in model.accesses(lane)] == [5, 5, 7, 8, 9]


def test_first_thread_skips_the_guarded_read(model):
    lane = model.lane(0, 0)
    assert cells(model, lane, phase=1)["read"] == {("s", 0)}
    assert model.counts(lane)["shared_reads"] == 1 and model.counts_max()["shared_reads"] == 2


def test_filtered_result_keeps_only_the_thread(model):
    lane = model.lane(0, 3)
    r = model.filtered_result(lane)
    # Only this thread's accesses carry provenance (arrows); its threadgroup's writes to threadgroup
    # memory stay as context, without it, so the snapshots it read from are drawn.
    mine = [e for e in r.trace.accesses() if set(e.lanes.tolist()) == {lane}]
    assert [(e.kind, e.buffer) for e in mine] == [("read", "a"), ("write", "s"), ("read", "s"), ("read", "s"),
                                                  ("write", "out")]
    assert all(e.sources is not None for e in mine if e.kind == "write")
    context = [e for e in r.trace.accesses() if lane not in e.lanes]
    assert context and all(e.space == "threadgroup" and e.kind == "write" and e.sources is None for e in context)
    assert {int(g) for e in context for g in e.group} == {0}
    assert model.result.trace is not r.trace  # the original run is untouched
    assert len({int(x) for e in model.result.trace.accesses() for x in e.lanes}) == 8


def test_a_later_phase_still_shows_threadgroup_memory_and_its_arrows(model):
    from metal_puzzles.diagrams.draw import draw_run, to_svg
    from metal_puzzles.diagrams.style import ARROW_W

    lane = model.lane(1, 2)
    svg = to_svg(draw_run(model.filtered_result(lane, phase=1), only_group=1))
    assert ">s<" in svg and "after phase 0" in svg  # the threadgroup-memory row is drawn
    # Arrows from s[2] and s[1] into out[6]: the thread's two reads in phase 1.
    shafts = re.findall(rf"<g [^>]*stroke-width='{ARROW_W:g}'[^>]*>(.*?)</g>", svg)
    assert sum(g.count("<path") for g in shafts) == 2


def test_step_through_shows_variables_and_inactive_threads(model):
    lines = [model.step(k, 0)["line"] for k in range(model.n_steps)]
    # The threadgroup declaration allocates nothing at run time; line 8 is the 'if', then its body;
    # the last step is the end, after the last line (no line is current there).
    assert lines == [3, 4, 5, 6, 7, 8, 8, 9, None]
    lane0, lane1 = model.lane(0, 0), model.lane(0, 1)
    guarded = len(lines) - 3  # the body of the if
    assert model.step(guarded, lane0)["active"] is False  # li == 0 does not enter the if
    assert model.step(guarded, lane1)["active"] is True
    assert model.step(guarded, lane1)["variables"]["acc"] == "1"  # s[1] = a[1] before adding s[0]
    last = model.step(model.n_steps - 1, model.lane(1, 3))
    assert last["variables"] == {"i": "7", "li": "3", "acc": "13"}


# ----------------------------------------------------------------------------- findings
RACY = """
threadgroup float s[4];
uint i = thread_position_in_grid.x;
uint li = thread_position_in_threadgroup.x;
s[li] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
float acc = s[li];
s[li] = 0;
if (li > 0) acc += s[li - 1];
out[i] = acc;
"""


@pytest.fixture(scope="module")
def racy():
    with pytest.warns(RuntimeWarning, match="race"):
            r = simulate("racy", ["a"], ["out"], RACY, inputs=[np.arange(8, dtype=np.float32)], output_shapes=[(8,)],
                     output_dtypes=["float32"], grid=(8, 1, 1), threadgroup=(4, 1, 1), trace=True, steps=True,
                     sanitize="warn")
    return ExplorerModel(r)


def test_findings_are_listed_with_where_they_happened(racy):
    (race,) = racy.findings()
    assert race.kind == "race" and race.number == 1
    assert race.buffer == "s" and race.index == 0 and race.phase == 1
    assert race.line == 9 and race.other_line == 8
    assert racy.label(race.lane) == "thread 1 = 1 of threadgroup 0"
    assert racy.label(race.other_lane) == "thread 0 = 0 of threadgroup 0"
    assert race.label.startswith("① race on s[0] in phase 1: thread 1 = 1 of threadgroup 0 reads it (line 9) while "
                                 "thread 0 = 0 of threadgroup 0 writes it")
    assert racy.finding_lines() == {9}


def test_a_finding_jumps_to_its_thread_phase_and_line(racy):
    jump = racy.jump(1)
    assert (jump.group, jump.thread, jump.phase, jump.line) == (0, 1, 1, 9)
    step = racy.step(jump.step, racy.lane(jump.group, jump.thread))
    assert step["line"] == 9 and step["active"]


def test_a_run_without_findings_lists_none(model):
    assert model.findings() == [] and model.finding_lines() == set()


def test_the_explorer_widget_jumps_on_a_click(racy):
    from metal_puzzles.explorer.widgets import Explorer

    ex = Explorer(racy.result, "racy")
    (button,) = ex.finding_buttons
    assert button.description.startswith("① race on s[0] in phase 1")
    button.click()
    assert (ex.group.value, ex.thread.value, ex.phase.value) == (0, 1, 1)
    assert "line 9" in ex.step_label.value and "mp-current" in ex.source.value
    assert "race: thread 1 = 1 of threadgroup 0 reads s[0]" in ex.finding_detail.value
    assert "stroke-width='2.5'" in ex.diagram_svg  # the marks of the finding
    assert "mp-finding-line" in ex.source.value


# ------------------------------------------------------------------- what threads attempted
def run(source, inputs, out_shape, grid, tg, **kw):
    """A traced, stepped run with findings as warnings (the explorer's way of running)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = simulate("k", [f"a{k}" if k else "a" for k in range(len(inputs))], ["out"], source, inputs=inputs,
                     output_shapes=[out_shape], output_dtypes=["float32"], grid=grid, threadgroup=tg, trace=True,
                     steps=True, sanitize="warn", **kw)
    return ExplorerModel(r)


GUARD_MISSING = """
uint local_i = thread_position_in_grid.x;
out[local_i] = a[local_i] + 10;
"""


def test_an_out_of_bounds_thread_shows_the_index_it_computed():
    m = run(GUARD_MISSING, [np.arange(4, dtype=np.float32)], (4,), (8, 1, 1), (8, 1, 1))
    lane = m.lane(0, 5)
    got = [(a.kind, a.buffer, a.index, a.in_bounds, a.line) for a in m.accesses(lane)]
    assert got == [("read", "a", 5, False, 3), ("write", "out", 5, False, 3)]
    # Counts say what the thread attempted: one read and one write, neither of which happened.
    assert m.counts(lane)["global_reads"] == 1 and m.counts(lane)["global_writes"] == 1
    lit = cells(m, lane)
    assert lit["read"] == set() and lit["write"] == set() and lit["out_of_bounds"] == {("a", 5), ("out", 5)}
    # The run's own trace holds no stand-in for it (no read of a[0] by thread 5, anywhere).
    assert all(lane not in e.lanes for e in m.result.trace.accesses())
    # A thread in bounds still reads and writes its element.
    assert [(a.kind, a.index, a.in_bounds) for a in m.accesses(m.lane(0, 2))] == [("read", 2, True),
                                                                                  ("write", 2, True)]


def test_the_diagram_of_an_out_of_bounds_thread_draws_only_its_true_accesses():
    m = run(GUARD_MISSING, [np.arange(4, dtype=np.float32)], (4,), (8, 1, 1), (8, 1, 1))
    lane = m.lane(0, 5)
    r = m.filtered_result(lane)
    assert r.trace.accesses() == []  # nothing it did happened inside a buffer
    assert [(a.lane, a.buffer, a.index) for a in r.trace.out_of_bounds_accesses()] == [(lane, "a", 5),
                                                                                       (lane, "out", 5)]


SHARED_SHIFT = """
threadgroup float s[4];
uint i = thread_position_in_grid.x;
uint li = thread_position_in_threadgroup.x;
s[li] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
s[li + 1] = s[li + 1] * 2;
out[i] = s[li];
"""


def test_out_of_bounds_in_threadgroup_memory_reads_and_writes():
    m = run(SHARED_SHIFT, [np.arange(8, dtype=np.float32)], (8,), (8, 1, 1), (4, 1, 1))
    lane = m.lane(1, 3)  # grid thread 7: li + 1 = 4 is past s's 4 elements
    line7 = [(a.kind, a.space, a.index, a.in_bounds) for a in m.accesses(lane) if a.line == 7]
    assert line7 == [("read", "threadgroup", 4, False), ("write", "threadgroup", 4, False)]
    assert m.counts(lane)["shared_reads"] == 2 and m.counts(lane)["shared_writes"] == 2
    assert ("s", 4) in cells(m, lane, phase=1)["out_of_bounds"]
    assert ("s", 0) not in cells(m, lane, phase=1)["read"]  # no stand-in at index 0
    assert m.label(lane) == "thread 7 = 3 of threadgroup 1"


GUARD_2D = """
uint x = thread_position_in_grid.x;
uint y = thread_position_in_grid.y;
out[y * 2 + x] = a[y * 2 + x] + 10;
"""


def test_out_of_bounds_in_two_dimensions():
    m = run(GUARD_2D, [np.arange(4, dtype=np.float32).reshape(2, 2)], (2, 2), (3, 3, 1), (2, 2, 1))
    lane = next(k for k in range(m.result.lanes.n) if tuple(m.result.lanes.pos[k][:2]) == (2, 1))
    assert m.label(lane) == "thread (2,1) = (0,1) of threadgroup (1,0)"
    assert [(a.kind, a.index, a.in_bounds) for a in m.accesses(lane)] == [("read", 4, False), ("write", 4, False)]
    inside = next(k for k in range(m.result.lanes.n) if tuple(m.result.lanes.pos[k][:2]) == (1, 1))
    assert [(a.kind, a.index, a.in_bounds) for a in m.accesses(inside)] == [("read", 3, True), ("write", 3, True)]


def test_one_name_for_a_thread():
    lanes = run(GUARD_MISSING, [np.arange(4, dtype=np.float32)], (4,), (8, 1, 1), (8, 1, 1)).result.lanes
    assert lanes.label(5) == "thread 5"  # one threadgroup: the grid position is the position in it
    lanes = run(GUARD_MISSING, [np.arange(4, dtype=np.float32)], (4,), (8, 1, 1), (4, 1, 1)).result.lanes
    assert lanes.label(7) == "thread 7 = 3 of threadgroup 1"


# --------------------------------------------------------------- a finding lands on its step
DOT_NO_INNER_BARRIER = """
threadgroup float shared[8];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
shared[local_i] = a[i] * a1[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint s = 4; s > 0; s /= 2) {
    if (local_i < s) {
        shared[local_i] += shared[local_i + s];
    }
}
if (local_i == 0) {
    out[0] = shared[0];
}
"""


def test_a_race_in_a_loop_lands_on_its_iteration():
    x = np.arange(8, dtype=np.float32)
    m = run(DOT_NO_INNER_BARRIER, [x, x], (1,), (8, 1, 1), (8, 1, 1))
    (race,) = [s for s in m.findings() if s.kind == "race"]
    assert race.buffer == "shared" and race.index == 2 and race.line == 9
    jump = m.jump(race.number)
    lane = m.lane(jump.group, jump.thread)
    assert m.label(lane) == "thread 0"
    step = m.step(jump.step, lane)
    assert step["line"] == 9 and step["variables"]["s"] == "2"  # not the first time line 9 runs (s = 4)
    assert m.step(m.step_at(9, lane), lane)["variables"]["s"] == "4"
    assert m.finding_step(race.number) == jump.step
    # The statement of that step reads shared[2], the element the finding names.
    assert ("read", "shared", 2) in [(a.kind, a.buffer, a.index) for a in accesses_at(m, jump.step, lane)]


OOB_IN_LOOP = """
uint i = thread_position_in_grid.x;
float acc = 0;
for (uint k = 0; k < 3; k++) {
    acc += a[i + k];
}
out[i] = acc;
"""


def test_an_out_of_bounds_access_in_a_loop_lands_on_its_iteration():
    m = run(OOB_IN_LOOP, [np.arange(4, dtype=np.float32)], (4,), (4, 1, 1), (4, 1, 1))
    (oob,) = m.findings()
    assert oob.kind == "out-of-bounds" and oob.index == 4
    jump = m.jump(oob.number)
    lane = m.lane(jump.group, jump.thread)
    assert m.label(lane) == "thread 3"
    step = m.step(jump.step, lane)
    assert step["line"] == 5 and step["variables"]["k"] == "1"  # i + k = 4 first at k = 1
    here = accesses_at(m, jump.step, lane)
    assert [(a.buffer, a.index, a.in_bounds) for a in here] == [("a", 4, False)]


DIVERGENT_IN_LOOP = """
uint li = thread_position_in_threadgroup.x;
for (uint k = 0; k < 3; k++) {
    if (li + k < 5) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
}
out[li] = 1;
"""


def test_barrier_divergence_lands_on_its_iteration():
    m = run(DIVERGENT_IN_LOOP, [np.zeros(4, dtype=np.float32)], (4,), (4, 1, 1), (4, 1, 1))
    (site,) = [s for s in m.findings() if s.kind == "barrier-divergence"]
    jump = m.jump(site.number)
    missing = m.lane(jump.group, jump.thread)
    assert m.label(missing) == "thread 3"
    step = m.step(jump.step, missing)
    assert step["line"] == 5 and step["variables"]["k"] == "2" and not step["active"]  # it misses the barrier


UNINITIALISED = """
threadgroup float s[4];
uint li = thread_position_in_threadgroup.x;
if (li < 2) {
    s[li] = a[li];
}
threadgroup_barrier(mem_flags::mem_threadgroup);
float mine = li;
out[li] = s[3 - li] + mine;
"""


def test_an_uninitialised_read_lands_on_its_step():
    m = run(UNINITIALISED, [np.arange(4, dtype=np.float32)], (4,), (4, 1, 1), (4, 1, 1))
    (site,) = [s for s in m.findings() if s.kind == "uninitialized-read"]
    jump = m.jump(site.number)
    lane = m.lane(jump.group, jump.thread)
    step = m.step(jump.step, lane)
    assert step["line"] == 9 and step["variables"]["mine"] == str(int(m.result.lanes.local[lane][0]))
    assert (site.buffer, site.index) in [(a.buffer, a.index) for a in accesses_at(m, jump.step, lane)]


def test_an_output_never_written_lands_on_the_end():
    m = run("uint i = thread_position_in_grid.x;\nif (i < 2) out[i] = a[i];\n", [np.arange(4, dtype=np.float32)],
            (4,), (4, 1, 1), (4, 1, 1))
    (site,) = [s for s in m.findings() if s.kind == "unwritten-output"]
    assert m.finding_step(site.number) == m.last_step and m.step(m.last_step, 0)["end"]


# ----------------------------------------------------------------- the end and memory per step
MAP = """
uint i = thread_position_in_grid.x;
out[i] = a[i] + 10;
"""


def test_the_last_step_shows_what_the_last_line_did():
    m = run(MAP, [np.arange(4, dtype=np.float32)], (4,), (4, 1, 1), (4, 1, 1))
    assert m.n_steps == 3 and m.last_step == 2
    before, end = m.step(1, 0), m.step(m.last_step, 0)
    assert before["line"] == 3 and not before["end"]
    assert end["line"] is None and end["end"] and end["last"] and end["variables"] == {"i": "0"}
    # Memory: before the last line out holds its initial zeros; at the end, what the kernel wrote.
    assert m.memory_at(1)["out"].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert m.memory_at(m.last_step)["out"].tolist() == [10.0, 11.0, 12.0, 13.0]
    # The diagram's run at a step: no write to out before the last line, out[0] written at the end.
    assert [e.buffer for e in m.filtered_result(0, step=1).trace.accesses()] == []
    at_end = m.filtered_result(0, step=m.last_step)
    assert [(e.kind, e.buffer, int(e.index[0])) for e in at_end.trace.accesses()] == [("read", "a", 0),
                                                                                    ("write", "out", 0)]
    assert at_end.outputs[0].tolist() == [10.0, 11.0, 12.0, 13.0]
    assert m.filtered_result(0, step=1).outputs[0].tolist() == [0.0, 0.0, 0.0, 0.0]


def test_threadgroup_memory_per_step_follows_the_loop():
    x = np.arange(8, dtype=np.float32)
    m = run(DOT_NO_INNER_BARRIER, [x, x], (1,), (8, 1, 1), (8, 1, 1))
    race = next(s for s in m.findings() if s.kind == "race")
    step = m.finding_step(race.number)
    shared = m.memory_at(step)["shared"]
    # After the s = 4 iteration, shared[2] holds 4 + 36; before it ran (at its barrier), only 4.
    assert shared[2] == 40.0 and shared[6] == 36.0
    barrier_step = next(k for k in range(m.n_steps) if m.step(k, 0)["line"] == 6)
    assert m.memory_at(barrier_step)["shared"].tolist() == (x * x).tolist()
    assert m.memory_at(0)["shared"].tolist() == [None] * 8
    assert m.memory_at(m.last_step)["out"].tolist() == m.result.outputs[0].tolist()


def test_the_cost_model_prices_no_stand_in_for_an_out_of_bounds_read():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = simulate("k", ["a"], ["out"], "uint i = thread_position_in_grid.x;\nfloat x = out[i];\nif (i < 4) out[i] = x + a[i];\n",
                     inputs=[np.arange(4, dtype=np.float32)], output_shapes=[(4,)], output_dtypes=["float32"],
                     grid=(8, 1, 1), threadgroup=(8, 1, 1), sanitize="warn", cost=True)
    loads = r.cost.lines[("source", 2)].loads
    # The four threads in bounds asked for 16 bytes of out (device memory; the input is in constant
    # memory, which the model does not price); the four past the end read nothing (not out[0]).
    assert loads.bytes_requested == 16
    assert int(r.counts.global_reads[7]) == 1  # but they tried


def test_the_explorer_benchmark_runs_its_model_figures():
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_explorer.py"
    spec = importlib.util.spec_from_file_location("bench_explorer", path)
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    try:
        spec.loader.exec_module(bench)
        x = np.arange(8, dtype=np.float32)
        figures = dict(bench.model_figures(run(DOT_NO_INNER_BARRIER, [x, x], (1,), (8, 1, 1), (8, 1, 1)).result, 1))
    finally:
        sys.modules.pop(spec.name, None)
    assert "a finding jump (where, variables there)" in figures and all(ms >= 0 for ms in figures.values())


OOB_IN_A_CONDITION = """
uint i = thread_position_in_grid.x;
uint k = i;
while (k < 6 && a[k] >= 0) {
    k += 2;
}
out[i] = k;
"""


def test_an_out_of_bounds_read_in_a_loop_condition_lands_on_the_loop_step():
    m = run(OOB_IN_A_CONDITION, [np.arange(4, dtype=np.float32)], (2,), (2, 1, 1), (2, 1, 1))
    (oob,) = [s for s in m.findings() if s.kind == "out-of-bounds"]
    jump = m.jump(oob.number)
    lane = m.lane(jump.group, jump.thread)
    step = m.step(jump.step, lane)
    assert (oob.line, step["line"], step["variables"]["k"]) == (4, 4, "4")  # the condition saw a[4]


GUARDED = """
uint i = thread_position_in_grid.x;
if (i < 4) {
    out[i] = a[i] + 10;
}
"""


def test_a_spare_thread_says_where_it_sat_out():
    m = run(GUARDED, [np.arange(4, dtype=np.float32)], (4,), (8, 1, 1), (8, 1, 1))
    spare = m.skipped(m.lane(0, 6))
    assert spare is not None and spare.guard_line == 3 and m.step(spare.step, m.lane(0, 6))["line"] == 4
    assert m.skipped(m.lane(0, 2)) is None  # it read and wrote
    # A thread that went out of bounds did something (it tried): it is not idle.
    assert run(GUARD_MISSING, [np.arange(4, dtype=np.float32)], (4,), (8, 1, 1), (8, 1, 1)).skipped(5) is None


def test_a_click_on_a_cell_finds_the_threads_that_touched_it():
    m = run(SHARED_SHIFT, [np.arange(8, dtype=np.float32)], (8,), (8, 1, 1), (4, 1, 1))
    # s[2] of threadgroup 1: thread 2 wrote it at line 5, thread 1 read and wrote it at line 7,
    # thread 2 read it at line 8.
    assert m.threads_touching("s", 2, group=1) == [m.lane(1, 1), m.lane(1, 2)]
    assert m.threads_touching("s", 4, group=1) == [m.lane(1, 3)]  # past the end, as it asked
    assert m.threads_touching("s", 2, group=1, step=m.step_at(7, m.lane(1, 1))) == [m.lane(1, 2)]
    assert m.threads_touching("a", 6) == [m.lane(1, 2)]


def test_an_out_of_bounds_atomic_is_counted_and_shown_where_it_aimed():
    import warnings

    src = ("uint i = thread_position_in_grid.x;\n"
           "atomic_fetch_add_explicit((device atomic_uint*)out + i, 1u, memory_order_relaxed);\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = simulate("k", [], ["out"], src, inputs=[], output_shapes=[(4,)], output_dtypes=["uint32"],
                     grid=(6, 1, 1), threadgroup=(6, 1, 1), trace=True, steps=True, sanitize="warn")
    m = ExplorerModel(r)
    assert [(a.kind, a.index, a.in_bounds) for a in m.accesses(5)] == [("atomic", 5, False)]
    assert m.counts(5)["atomics"] == 1 and m.counts(2)["atomics"] == 1
    assert m.memory_at(m.last_step)["out"].tolist() == [1, 1, 1, 1]
    assert m.memory_at(1)["out"].tolist() == [0, 0, 0, 0]  # before the atomic line ran
