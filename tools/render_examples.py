"""Render example run diagrams to a folder (default /tmp/diagrams) as SVG and PNG, for looking at
them.

    python tools/render_examples.py [OUTDIR] [NAME...]   # the kernels below
    python tools/render_examples.py --book [OUTDIR]      # every puzzle's reference solution, visible test

The kernels here are short reference-style solutions written for this purpose only.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from metal_puzzles.diagrams.draw import draw_run, save_png, to_svg
from metal_puzzles.msl import simulate

F32 = np.float32


def _run(name, ins, outs, src, inputs, out_shapes, grid, tg, header="", **kw):
    return simulate(name, ins, outs, src, header, inputs=inputs, output_shapes=out_shapes,
                    output_dtypes=kw.pop("dtypes", ["float32"] * len(outs)), grid=grid, threadgroup=tg,
                    trace=True, **kw)


def ex_map():
    src = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;"
    return _run("map", ["a"], ["out"], src, [np.arange(4, dtype=F32)], [(4,)], (4, 1, 1), (4, 1, 1))


def ex_zip():
    src = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + b[i];"
    return _run("zip", ["a", "b"], ["out"], src, [np.arange(4, dtype=F32), np.arange(4, dtype=F32) * 10],
                [(4,)], (4, 1, 1), (4, 1, 1))


def ex_guard():
    src = "uint i = thread_position_in_grid.x;\nif (i < a_shape[0]) out[i] = a[i] + 10;"
    return _run("guard", ["a"], ["out"], src, [np.arange(4, dtype=F32)], [(4,)], (8, 1, 1), (8, 1, 1))


def ex_map2d():
    src = """uint i = thread_position_in_grid.x; uint j = thread_position_in_grid.y;
if (i < a_shape[0] && j < a_shape[1]) out[i * a_shape[1] + j] = a[i * a_shape[1] + j] + 10;"""
    return _run("map 2D", ["a"], ["out"], src, [np.arange(4, dtype=F32).reshape(2, 2)], [(2, 2)],
                (3, 3, 1), (3, 3, 1))


def ex_broadcast():
    src = """uint i = thread_position_in_grid.x; uint j = thread_position_in_grid.y;
if (i < 2 && j < 2) out[i * 2 + j] = a[i] + b[j];"""
    return _run("broadcast", ["a", "b"], ["out"], src,
                [np.arange(2, dtype=F32).reshape(2, 1), np.arange(2, dtype=F32).reshape(1, 2) * 10],
                [(2, 2)], (3, 3, 1), (3, 3, 1))


def ex_threadgroups():
    src = "uint i = thread_position_in_grid.x;\nif (i < a_shape[0]) out[i] = a[i] + 10;"
    return _run("threadgroups", ["a"], ["out"], src, [np.arange(9, dtype=F32)], [(9,)], (12, 1, 1), (4, 1, 1))


def ex_threadgroups2d():
    src = """uint i = thread_position_in_grid.y; uint j = thread_position_in_grid.x;
if (i < a_shape[0] && j < a_shape[1]) out[i * a_shape[1] + j] = a[i * a_shape[1] + j] + 10;"""
    return _run("threadgroups 2D", ["a"], ["out"], src, [np.ones((5, 5), F32)], [(5, 5)], (6, 6, 1), (3, 3, 1))


def ex_shared():
    header = "constant uint TPB = 4;"
    src = """threadgroup float cache[TPB];
uint i = thread_position_in_grid.x; uint li = thread_position_in_threadgroup.x;
if (i < a_shape[0]) cache[li] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < a_shape[0]) out[i] = cache[li] + 10;"""
    return _run("threadgroup memory", ["a"], ["out"], src, [np.ones(8, F32)], [(8,)], (8, 1, 1), (4, 1, 1),
                header=header)


def ex_pooling():
    header = "constant uint TPB = 8;"
    src = """threadgroup float cache[TPB];
uint i = thread_position_in_grid.x; uint li = thread_position_in_threadgroup.x;
if (i < a_shape[0]) cache[li] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < a_shape[0]) {
  float s = cache[li];
  if (li >= 1) s += cache[li - 1];
  if (li >= 2) s += cache[li - 2];
  out[i] = s;
}"""
    return _run("pooling", ["a"], ["out"], src, [np.arange(8, dtype=F32)], [(8,)], (8, 1, 1), (8, 1, 1),
                header=header)


def ex_dot():
    header = "constant uint TPB = 8;"
    src = """threadgroup float cache[TPB];
uint i = thread_position_in_grid.x; uint li = thread_position_in_threadgroup.x;
cache[li] = a[i] * b[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint s = TPB / 2; s > 0; s /= 2) {
  if (li < s) cache[li] += cache[li + s];
  threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (li == 0) out[0] = cache[0];"""
    return _run("dot product", ["a", "b"], ["out"], src, [np.arange(8, dtype=F32), np.arange(8, dtype=F32)],
                [(1,)], (8, 1, 1), (8, 1, 1), header=header)


def ex_conv():
    header = "constant uint TPB = 8; constant uint MAX_CONV = 4;"
    src = """threadgroup float sa[TPB + MAX_CONV];
threadgroup float sb[MAX_CONV];
uint i = thread_position_in_grid.x; uint li = thread_position_in_threadgroup.x;
uint n = a_shape[0]; uint k = b_shape[0];
if (i < n) sa[li] = a[i];
if (li < k - 1 && i + TPB < n) sa[li + TPB] = a[i + TPB];
if (li < k) sb[li] = b[li];
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < n) {
  float acc = 0;
  for (uint j = 0; j < k; j++) if (i + j < n) acc += sa[li + j] * sb[j];
  out[i] = acc;
}"""
    return _run("1D convolution", ["a", "b"], ["out"], src, [np.arange(15, dtype=F32), np.arange(4, dtype=F32)],
                [(15,)], (16, 1, 1), (8, 1, 1), header=header)


def ex_prefix():
    header = "constant uint TPB = 8;"
    src = """threadgroup float cache[TPB];
uint i = thread_position_in_grid.x; uint li = thread_position_in_threadgroup.x;
cache[li] = i < a_shape[0] ? a[i] : 0;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint s = 1; s < TPB; s *= 2) {
  float v = li >= s ? cache[li - s] : 0;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  cache[li] += v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (li == TPB - 1) out[threadgroup_position_in_grid.x] = cache[li];"""
    return _run("prefix sum", ["a"], ["out"], src, [np.arange(15, dtype=F32)], [(2,)], (16, 1, 1), (8, 1, 1),
                header=header)


def ex_axis_sum():
    header = "constant uint TPB = 8;"
    src = """threadgroup float cache[TPB];
uint i = thread_position_in_grid.x; uint row = thread_position_in_grid.y;
uint li = thread_position_in_threadgroup.x; uint n = a_shape[1];
cache[li] = i < n ? a[row * n + i] : 0;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint s = TPB / 2; s > 0; s /= 2) {
  if (li < s) cache[li] += cache[li + s];
  threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (li == 0) out[row] = cache[0];"""
    return _run("axis sum", ["a"], ["out"], src, [np.arange(24, dtype=F32).reshape(4, 6)], [(4, 1)], (8, 4, 1),
                (8, 1, 1), header=header)


def ex_matmul():
    header = "constant uint TPB = 3;"
    src = """threadgroup float sa[TPB][TPB];
threadgroup float sb[TPB][TPB];
uint i = thread_position_in_grid.y; uint j = thread_position_in_grid.x;
uint li = thread_position_in_threadgroup.y; uint lj = thread_position_in_threadgroup.x;
uint n = a_shape[0];
float acc = 0;
for (uint t = 0; t < n; t += TPB) {
  sa[li][lj] = (i < n && t + lj < n) ? a[i * n + t + lj] : 0;
  sb[li][lj] = (j < n && t + li < n) ? b[(t + li) * n + j] : 0;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint k = 0; k < TPB; k++) acc += sa[li][k] * sb[k][lj];
  threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (i < n && j < n) out[i * n + j] = acc;"""
    a = np.arange(64, dtype=F32).reshape(8, 8)
    b = np.eye(8, dtype=F32) * 2
    return _run("matrix multiply", ["a", "b"], ["out"], src, [a, b], [(8, 8)], (9, 9, 1), (3, 3, 1), header=header)


def ex_scatter_add():
    src = """uint t = thread_position_in_grid.x;
atomic_fetch_add_explicit(&out[idx[t]], x[t], memory_order_relaxed);"""
    return _run("scatter add", ["x", "idx"], ["out"], src,
                [np.arange(8, dtype=F32), np.array([0, 2, 1, 0, 3, 2, 0, 1], np.int32)], [(4,)], (8, 1, 1),
                (8, 1, 1), atomic_outputs=True, init_value=0)


def ex_segment_sum():
    src = """uint c = thread_position_in_grid.x; uint k = thread_position_in_grid.y;
uint C = x_shape[1];
int start = 0;
for (uint s = 0; s < k; s++) start += lengths[s];
float acc = 0;
for (int r = start; r < start + lengths[k]; r++) acc += x[r * C + c];
out[k * C + c] = acc;"""
    return _run("segment sum", ["x", "lengths"], ["out"], src,
                [np.arange(12, dtype=F32).reshape(6, 2), np.array([2, 0, 3, 1], np.int32)], [(4, 2)], (2, 4, 1),
                (2, 4, 1))


def ex_no_writes():
    src = "uint i = thread_position_in_grid.x;\nfloat v = a[i];\n(void)v;"
    return _run("no writes", ["a"], ["out"], src, [np.arange(4, dtype=F32)], [(4,)], (4, 1, 1), (4, 1, 1),
                init_value=0)


EXAMPLES = {name[3:]: fn for name, fn in globals().items() if name.startswith("ex_")}


def book_runs():
    """(file stem, title, run) for every puzzle of the catalogue that has a reference solution."""
    from metal_puzzles.checking import WiredPuzzle
    from metal_puzzles.puzzles import PUZZLES, solution_source

    for p in PUZZLES:
        if isinstance(p, WiredPuzzle):
            continue
        case = p.visible
        src = solution_source(p)
        run = simulate(p.kernel_name, list(p.input_names), list(p.output_names), src, p.header,
                       inputs=list(case.inputs), output_shapes=[case.output_shape], output_dtypes=[p.output_dtype],
                       grid=case.grid, threadgroup=case.threadgroup, init_value=p.init_value,
                       atomic_outputs=p.atomic_outputs, trace=True, sanitize="warn")
        yield f"book_{p.id}", p.title, run


def example_runs(names):
    for name in names:
        yield name, name.replace("_", " "), EXAMPLES[name]()


def render(out: Path, runs) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for stem, title, result in runs:
        t0 = time.perf_counter()
        d = draw_run(result, title=title)
        (out / f"{stem}.svg").write_text(to_svg(d), encoding="utf-8")
        save_png(d, str(out / f"{stem}.png"))
        print(f"{stem}: draw+render {time.perf_counter() - t0:.2f}s -> {out / stem}.png")


def main(argv: list[str]) -> int:
    book = "--book" in argv
    argv = [a for a in argv if a != "--book"]
    out = Path(argv[0]) if argv else Path("/tmp/diagrams")
    render(out, book_runs() if book else example_runs(argv[1:] or list(EXAMPLES)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
