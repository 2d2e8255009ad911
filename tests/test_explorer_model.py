"""The model behind the explorer widgets: highlights per thread and phase, variables per step."""

import numpy as np
import pytest

from metal_puzzles.explorer_model import ExplorerModel
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


@pytest.fixture(scope="module")
def model():
    r = simulate("pool", ["a"], ["out"], POOL, inputs=[np.arange(8, dtype=np.float32)], output_shapes=[(8,)],
                 output_dtypes=["float32"], grid=(8, 1, 1), threadgroup=(4, 1, 1), trace=True, steps=True)
    return ExplorerModel(r)


def test_threads_are_addressed_by_group_and_index(model):
    assert model.n_groups == 2 and model.threads_in_group(1) == 4
    lane = model.lane(1, 2)
    assert model.describe(lane) == "thread (2,0,0) of threadgroup (1,0,0)"


def test_highlight_per_phase(model):
    lane = model.lane(1, 2)  # grid thread 6
    before = model.highlighted(lane, phase=0)
    assert before["read"] == {("a", 6)} and before["write"] == {("s", 2)}
    after = model.highlighted(lane, phase=1)
    assert after["read"] == {("s", 2), ("s", 1)} and after["write"] == {("out", 6)}
    assert [a.line for a in model.accesses(lane)] == [5, 5, 7, 8, 9]


def test_first_thread_skips_the_guarded_read(model):
    lane = model.lane(0, 0)
    assert model.highlighted(lane, phase=1)["read"] == {("s", 0)}
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
    from metal_puzzles.draw import ARROW_W, draw_run, to_svg

    lane = model.lane(1, 2)
    svg = to_svg(draw_run(model.filtered_result(lane, phase=1), only_group=1))
    assert ">s<" in svg and "after phase 0" in svg  # the threadgroup-memory row is drawn
    # Arrows from s[2] and s[1] into out[6]: the thread's two reads in phase 1.
    assert svg.count(f"stroke-width='{ARROW_W:g}'") == 2


def test_step_through_shows_variables_and_inactive_threads(model):
    lines = [model.step(k, 0)["line"] for k in range(model.n_steps)]
    # The threadgroup declaration allocates nothing at run time; line 8 is the 'if', then its body.
    assert lines == [3, 4, 5, 6, 7, 8, 8, 9]
    lane0, lane1 = model.lane(0, 0), model.lane(0, 1)
    guarded = len(lines) - 2  # the body of the if
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
    assert racy.describe(race.lane) == "thread (1,0,0) of threadgroup (0,0,0)"
    assert racy.describe(race.other_lane) == "thread (0,0,0) of threadgroup (0,0,0)"
    assert race.label.startswith("① race on s[0] in phase 1: thread 1 reads it (line 9) while thread 0 writes it")
    assert racy.finding_lines() == {9}


def test_a_finding_jumps_to_its_thread_phase_and_line(racy):
    jump = racy.jump(1)
    assert (jump.group, jump.thread, jump.phase, jump.line) == (0, 1, 1, 9)
    step = racy.step(jump.step, racy.lane(jump.group, jump.thread))
    assert step["line"] == 9 and step["active"]


def test_a_run_without_findings_lists_none(model):
    assert model.findings() == [] and model.finding_lines() == set()


def test_the_explorer_widget_jumps_on_a_click(racy):
    from metal_puzzles.widgets import Explorer

    ex = Explorer(racy.result, "racy")
    (button,) = ex.finding_buttons
    assert button.description.startswith("① race on s[0] in phase 1")
    button.click()
    assert (ex.group.value, ex.thread.value, ex.phase.value) == (0, 1, 1)
    assert "line 9" in ex.step_label.value and "mp-current" in ex.source.value
    assert "race: thread (1,0,0) of threadgroup (0,0,0) reads s[0]" in ex.finding_detail.value
    assert "stroke-width='2.5'" in ex.diagram.value  # the marks of the finding
    assert "mp-finding-line" in ex.source.value
