"""The sanitize modes and the launch limits.

'error' (the default) raises SanitizerError carrying the findings and the run's result; 'warn'
returns the result with its findings and emits RuntimeWarnings, running on with defined
stand-in values (0 for out-of-bounds and uninitialised reads, out-of-bounds writes dropped,
integer x / 0 and x % 0 equal to 0); 'off' reports nothing. Threadgroup memory over 32 KiB is a
compile error at the declaration; more than 1024 threads per threadgroup is an ArgumentError.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from metal_puzzles.msl import (
    ArgumentError,
    CompileError,
    KernelRuntimeError,
    SanitizerError,
    simulate,
)

from .conftest import f32, i32, kernel, launch, line_of

OOB_READ = kernel("""
    uint i = thread_position_in_grid.x;
    out[i] = a[i + 2] + 1.0f;  // @BUG
""")


def _oob_read(**kw: object):
    return launch(OOB_READ, {"a": f32(np.arange(8) + 10)}, {"out": ((8,), "float32")},
                  grid=(8, 1, 1), tg=(4, 1, 1), **kw)


def test_default_mode_is_error() -> None:
    """simulate() without sanitize= raises on findings."""
    with pytest.raises(SanitizerError):
        simulate("k", ["a"], ["out"], OOB_READ, inputs=[f32(np.arange(8))], output_shapes=[(8,)],
                 output_dtypes=["float32"], grid=(8, 1, 1), threadgroup=(4, 1, 1), init_value=0)


def test_error_mode_carries_findings_and_result() -> None:
    with pytest.raises(SanitizerError) as info:
        _oob_read(sanitize="error")
    err = info.value
    assert isinstance(err, KernelRuntimeError)
    assert [f.kind for f in err.findings] and all(f.kind == "out-of-bounds" for f in err.findings)
    assert err.result is not None
    assert err.result.findings == err.findings
    # The run finished with stand-ins, so the result's outputs are usable for a diagram.
    assert err.result.outputs[0][:6].tolist() == [13, 14, 15, 16, 17, 18]
    text = str(err)
    assert f"source:{line_of(OOB_READ, '@BUG')}:" in text and "out-of-bounds" in text


def test_warn_mode_returns_findings_and_warns() -> None:
    with pytest.warns(RuntimeWarning, match="out-of-bounds"):
        res = _oob_read(sanitize="warn")
    assert res.findings and all(f.kind == "out-of-bounds" for f in res.findings)
    assert {f.index for f in res.findings} <= {8, 9}


def test_warn_mode_shows_each_finding_once_per_caller_set() -> None:
    """A caller that keeps a ``warned`` set (the drop-in keeps one per kernel) sees each finding
    as a warning once, however often the kernel runs; the run records keep them all."""
    seen: set = set()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = _oob_read(sanitize="warn", warned=seen)
        second = _oob_read(sanitize="warn", warned=seen)
    assert first.findings and len(second.findings) == len(first.findings)
    assert len([w for w in caught if issubclass(w.category, RuntimeWarning)]) == len(first.findings)
    for w in caught:  # the whole message: position, kind and the finding's sentence
        assert str(w.message).startswith("source:") and "outside the 8 elements of 'a'" in str(w.message)


def test_off_mode_reports_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = _oob_read(sanitize="off")
    assert res.findings == []


def test_unknown_mode_is_an_argument_error() -> None:
    with pytest.raises(ArgumentError):
        _oob_read(sanitize="loud")


def _warn(src: str, *args: object, **kw: object):
    """Run in 'warn' mode, insisting on at least one RuntimeWarning."""
    with pytest.warns(RuntimeWarning):
        return launch(src, *args, sanitize="warn", **kw)


def test_stand_in_out_of_bounds_read_is_zero() -> None:
    res = _warn(OOB_READ, {"a": f32(np.arange(8) + 10)}, {"out": ((8,), "float32")},
                grid=(8, 1, 1), tg=(4, 1, 1))
    assert res.outputs[0].tolist() == [13, 14, 15, 16, 17, 18, 1, 1]


def test_stand_in_out_of_bounds_write_is_dropped() -> None:
    """Writes past the end of `out` change nothing: not `out`, not the next output."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[i + 3] = a[i];
        out2[i] = -1.0f;
    """)
    res = _warn(src, {"a": f32(np.arange(8) + 1)},
                {"out": ((8,), "float32"), "out2": ((8,), "float32")},
                grid=(8, 1, 1), tg=(8, 1, 1), init_value=7)
    assert [f.kind for f in res.findings] and all(f.kind == "out-of-bounds" for f in res.findings)
    assert res.outputs[0].tolist() == [7, 7, 7, 1, 2, 3, 4, 5]
    assert res.outputs[1].tolist() == [-1] * 8


def test_stand_in_threadgroup_out_of_bounds_write_does_not_reach_other_copy() -> None:
    """A write past a threadgroup array must not land in the next threadgroup's copy."""
    src = kernel("""
        uint gid = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        threadgroup float s[4];
        s[t] = a[gid];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (t == 3) {
            s[t + 1] = 99.0f;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[gid] = s[t];
    """)
    a = f32(np.arange(8))
    res = _warn(src, {"a": a}, grid=(8, 1, 1), tg=(4, 1, 1))
    assert res.outputs[0].tolist() == a.tolist()


def test_stand_in_uninitialised_reads_are_zero() -> None:
    """Thread-local scalar, thread-local array element and threadgroup memory never written:
    each reads as 0 in warn mode."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        threadgroup float s[8];
        float v;
        float r[2];
        r[0] = 5.0f;
        if (i == 0) {
            v = 1.0f;
        }
        out[i] = v + r[1] + s[i] + 10.0f * r[0];
    """)
    res = _warn(src, {}, {"out": ((4,), "float32")}, grid=(4, 1, 1), tg=(4, 1, 1),
                init_value=None)
    kinds = {f.kind for f in res.findings}
    assert "uninitialized-read" in kinds
    assert res.outputs[0].tolist() == [51, 50, 50, 50]


def test_stand_in_uninitialised_output_read_is_zero() -> None:
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[i] = out[i] + a[i];
    """)
    a = f32(np.arange(4) + 1)
    res = _warn(src, {"a": a}, {"out": ((4,), "float32")}, grid=(4, 1, 1), tg=(4, 1, 1),
                init_value=None)
    assert {f.kind for f in res.findings} == {"uninitialized-read"}
    assert res.outputs[0].tolist() == a.tolist()


def test_stand_in_integer_division_and_remainder_by_zero_are_zero() -> None:
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[i] = a[i] / b[i];
        out2[i] = a[i] % b[i];
        out3[i] = ua[i] / ub[i] + ua[i] % ub[i];
    """)
    inputs = {"a": i32([7, -7, 9, 4]), "b": i32([2, 0, 0, 3]),
              "ua": np.array([5, 6, 7, 8], dtype=np.uint32), "ub": np.array([0, 4, 0, 3], dtype=np.uint32)}
    outs = {"out": ((4,), "int32"), "out2": ((4,), "int32"), "out3": ((4,), "uint32")}
    res = _warn(src, inputs, outs, grid=(4, 1, 1), tg=(4, 1, 1))
    assert {f.kind for f in res.findings} == {"division-by-zero"}
    assert res.outputs[0].tolist() == [3, 0, 0, 1]
    assert res.outputs[1].tolist() == [1, 0, 0, 1]
    assert res.outputs[2].tolist() == [0, 3, 0, 4]


def test_warn_mode_collects_several_kinds_in_one_run() -> None:
    """One run with an out-of-bounds read, a division by zero and an unwritten output element
    reports all three, each at its own line."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        float x = a[i + 1];  // @OOB
        int q = 10 / int(i);  // @DIV
        if (i < 3) {
            out[i] = x + float(q);
        }
    """)
    res = _warn(src, {"a": f32(np.arange(4))}, {"out": ((4,), "float32")}, grid=(4, 1, 1),
                tg=(4, 1, 1), init_value=None)
    by_kind = {f.kind: f for f in res.findings}
    assert set(by_kind) == {"out-of-bounds", "division-by-zero", "unwritten-output"}
    assert by_kind["out-of-bounds"].pos.line == line_of(src, "@OOB")
    assert by_kind["division-by-zero"].pos.line == line_of(src, "@DIV")
    assert (by_kind["unwritten-output"].buffer, by_kind["unwritten-output"].index) == ("out", 3)
    assert res.outputs[0][:3].tolist() == [1, 12, 8]


def test_error_mode_reports_every_kind_of_a_run() -> None:
    """'error' does not stop at the first finding: the error lists the same findings as 'warn'."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        int q = 10 / int(i);
        out[i] = a[i + 1] + float(q);
    """)
    args = ({"a": f32(np.arange(4))}, {"out": ((4,), "float32")})
    with pytest.raises(SanitizerError) as info:
        launch(src, *args, grid=(4, 1, 1), tg=(4, 1, 1))
    with pytest.warns(RuntimeWarning):
        res = launch(src, *args, grid=(4, 1, 1), tg=(4, 1, 1), sanitize="warn")
    assert sorted(f.kind for f in info.value.findings) == sorted(f.kind for f in res.findings)
    assert {f.kind for f in res.findings} == {"out-of-bounds", "division-by-zero"}


def test_off_mode_runs_to_the_end_silently() -> None:
    """'off' reports nothing: a kernel with an out-of-bounds read and a division by zero runs
    to the end with no exception and no warning."""
    src = kernel("""
        uint i = thread_position_in_grid.x;
        out[i] = float(10 / int(i)) + a[i + 3];
    """)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = launch(src, {"a": f32(np.arange(4))}, {"out": ((4,), "float32")},
                     grid=(4, 1, 1), tg=(4, 1, 1), sanitize="off")
    assert res.findings == []
    assert res.outputs[0].shape == (4,)


def test_threadgroup_memory_over_32_kib_is_a_compile_error() -> None:
    src = kernel("""
        uint t = thread_position_in_threadgroup.x;
        threadgroup float big[8193];  // @DECL
        big[t] = 1.0f;
        out[t] = big[t];
    """)
    with pytest.raises(CompileError) as info:
        launch(src, {}, {"out": ((4,), "float32")}, grid=(4, 1, 1), tg=(4, 1, 1))
    assert (info.value.file, info.value.line) == ("source", line_of(src, "@DECL"))


def test_threadgroup_memory_over_32_kib_across_two_arrays() -> None:
    src = kernel("""
        uint t = thread_position_in_threadgroup.x;
        threadgroup float a_tile[4096];  // @FIRST
        threadgroup int b_tile[4097];  // @SECOND
        a_tile[t] = 1.0f;
        b_tile[t] = 2;
        out[t] = a_tile[t] + float(b_tile[t]);
    """)
    with pytest.raises(CompileError) as info:
        launch(src, {}, {"out": ((4,), "float32")}, grid=(4, 1, 1), tg=(4, 1, 1))
    assert info.value.file == "source"
    assert info.value.line in (line_of(src, "@FIRST"), line_of(src, "@SECOND"))


def test_more_than_1024_threads_per_threadgroup_is_an_argument_error() -> None:
    src = "out[thread_position_in_grid.x] = 1.0f;"
    with pytest.raises(ArgumentError):
        launch(src, {}, {"out": ((4096,), "float32")}, grid=(64, 64, 1), tg=(32, 64, 1),
               sanitize="off")
    res = launch(src, {}, {"out": ((1024,), "float32")}, grid=(1024, 1, 1), tg=(1024, 1, 1))
    assert res.findings == []


def test_finding_fields_are_well_formed() -> None:
    """Finding fields have the documented types: Pos with file/line/col, thread dicts of 3-tuples."""
    with pytest.warns(RuntimeWarning):
        res = _oob_read(sanitize="warn")
    f = res.findings[0]
    assert (f.pos.file, f.pos.line) == ("source", line_of(OOB_READ, "@BUG")) and f.pos.col >= 1
    assert f.threads and set(f.threads[0]) == {"grid", "group", "local"}
    assert all(len(v) == 3 and all(isinstance(c, int) for c in v) for v in f.threads[0].values())
    assert isinstance(f.extra, dict) and isinstance(f.message, str)
    assert f.threads[0] == {"grid": (6, 0, 0), "group": (1, 0, 0), "local": (2, 0, 0)}
