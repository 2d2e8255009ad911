"""Buffer parameters are pointers the body owns a copy of (C++ passes pointers by value).

MLX declares every array input ``const device T* x`` and every output ``device T* y``; a body may
move them (``x += off;``, ``y++``, ``p = p + k``) and then index from the new place, as
recurrences over time steps and per-row kernels do. Counting and the sanitizer keep naming the
element of the buffer (``src[10]``), not an offset from the moved pointer. What a pointer to an
input points to stays read-only, and a 0-d input (``const constant T& s``) is a reference, not a
pointer: it cannot be moved or assigned.
"""

from __future__ import annotations

import numpy as np
import pytest

from metal_puzzles.msl import CompileError, SanitizerError

from .conftest import one, out0, run


def test_move_input_and_output_to_the_row_of_the_thread() -> None:
    src = np.arange(12, dtype=np.float32)
    got = out0("""
        uint r = thread_position_in_grid.y, c = thread_position_in_grid.x;
        src += r * 4;
        dst += r * 4;
        dst[c] = src[c] + float(r);
    """, inputs={"src": src}, out={"dst": ((12,), "float32")}, grid=(4, 3, 1))
    assert got.tolist() == (src.reshape(3, 4) + np.arange(3)[:, None]).reshape(-1).tolist()


def test_walk_both_pointers_through_time_steps() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = out0("""
        uint j = thread_position_in_grid.x;
        float running = 0.0f;
        for (int t = 0; t < STEPS; ++t) {
            running += x[j];
            y[j] = running;
            x += 4;
            y += 4;
        }
    """, inputs={"x": x}, out={"y": ((3, 4), "float32")}, grid=(4, 1, 1), template=[("STEPS", 3)])
    assert got.tolist() == np.cumsum(x, axis=0).tolist()


def test_post_increment_stores_walk_the_output() -> None:
    got = out0("""
        uint i = thread_position_in_grid.x;
        out += 3 * i;
        *out++ = float(i);
        *out++ = float(i) + 0.5f;
        *out = inp[i] * 2.0f;
    """, inputs={"inp": np.array([5, 7], np.float32)}, out=((6,), "float32"), grid=(2, 1, 1))
    assert got.tolist() == [0.0, 0.5, 10.0, 1.0, 1.5, 14.0]


def test_assignment_and_decrement_of_a_parameter() -> None:
    got = out0("""
        uint i = thread_position_in_grid.x;
        inp = inp + 7;
        inp--;
        out[i] = inp[-int(i)];
    """, inputs={"inp": np.arange(10, dtype=np.float32)}, out=((4,), "float32"), grid=(4, 1, 1))
    assert got.tolist() == [6.0, 5.0, 4.0, 3.0]


def test_moved_pointer_out_of_bounds_names_the_buffer_element() -> None:
    with pytest.raises(SanitizerError) as info:
        run("""
            uint i = thread_position_in_grid.x;
            src += 8;
            out[i] = src[i];
        """, inputs={"src": np.arange(10, dtype=np.float32)}, out=((3,), "float32"), grid=(3, 1, 1))
    (f,) = info.value.findings
    assert f.kind == "out-of-bounds" and f.buffer == "src" and f.index == 10
    assert f.threads[0]["grid"] == (2, 0, 0)


def test_moving_an_output_pointer_per_step_is_not_a_race() -> None:
    """Each thread writes y[t*4 + j] through a pointer moved every step: its own elements only."""
    res = run("""
        uint j = thread_position_in_grid.x;
        for (int t = 0; t < 3; ++t) {
            y[j] = float(t * 10) + float(j);
            y += 4;
        }
    """, out={"y": ((12,), "float32")}, grid=(4, 1, 1))
    assert res.findings == []
    assert res.outputs[0].tolist() == [float(10 * t + j) for t in range(3) for j in range(4)]


def test_moving_a_small_constant_input() -> None:
    # Fewer than 8 elements: MLX passes a 'const constant float*', just as movable.
    got = out0("""
        uint i = thread_position_in_grid.x;
        w += 1;
        out[i] = w[i];
    """, inputs={"w": np.array([1, 2, 3, 4], np.float32)}, out=((3,), "float32"), grid=(3, 1, 1))
    assert got.tolist() == [2.0, 3.0, 4.0]


def test_moved_input_still_points_to_read_only_memory() -> None:
    with pytest.raises(CompileError, match="read-only"):
        run("inp += 1; inp[0] = 2.0f;", inputs={"inp": np.zeros(8, np.float32)})


def test_scalar_input_is_a_reference_and_cannot_be_assigned() -> None:
    with pytest.raises(CompileError) as info:
        run("s += 1.0f; out[0] = s;", inputs={"s": np.float32(2.0)})
    assert info.value.line == 1 and "read-only" in info.value.message


def test_counts_follow_the_moved_pointer() -> None:
    res = run("""
        uint i = thread_position_in_grid.x;
        a += i;
        out[i] = a[0] + a[1];
    """, inputs={"a": np.arange(9, dtype=np.float32)}, out=((8,), "float32"), grid=(8, 1, 1))
    assert res.outputs[0].tolist() == [float(2 * i + 1) for i in range(8)]
    assert res.counts.max() == {"global_reads": 2, "global_writes": 1, "shared_reads": 0, "shared_writes": 0,
                                "atomics": 0}


def test_an_unsized_array_parameter_is_a_pointer_to_its_first_element() -> None:
    """'const float c[]' as a parameter is 'const thread float* c' (C's array parameter decay):
    the callee reads the caller's array through it."""
    header = """
    float horner(float x, const float c[], int n) {
      float acc = 0.0f;
      for (int k = 0; k < n; k++) { acc = acc * x + c[k]; }
      return acc;
    }"""
    assert one("const float c[3] = {1.0f, 2.0f, 3.0f};\nout[0] = horner(2.0f, c, 3);", header=header) == 11.0


def test_a_parameter_named_like_a_type_hides_it_in_the_body() -> None:
    """A parameter called 'array' (metal::array is a type) or named like a struct is the
    parameter inside the function, as in C++ (PyTorch's special_math.h names one 'array')."""
    header = """
    using namespace metal;
    struct Pair { float a; float b; };
    float first(const float array[], int Pair) { return array[0] + float(Pair); }
    """
    assert one("const float v[2] = {4.0f, 5.0f};\nPair p = {1.0f, 2.0f};\nout[0] = first(v, 3) + p.b;",
               header=header) == 9.0
