"""How a host binds arrays to a whole shader's kernel and launches it: by the names of the
kernel's buffer parameters (``metal_kernel`` given a whole shader as its source), or by a host's
buffer layout, index by index, as Part IV's host code binds them (``run_by_layout``), where a
kernel whose parameters sit at other indices than the host binds is an error naming the index,
the parameter and what the host puts there."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..msl.abi.shader import Binding, ShaderParam
from ..msl.lang.errors import ArgumentError
from ..msl.lang.types import DTYPE_NAMES, ScalarType, VectorType
from ..msl.record import RunResult
from ..msl.shader_program import (
    LaunchGeometry,
    ShaderKernel,
    ShaderLibrary,
    choose_kernel,
    same_integer_bits,
    written_type,
)


def run_by_names(library: ShaderLibrary, name: str, inputs: Mapping[str, np.ndarray],
                 input_dtypes: Mapping[str, str], outputs: Mapping[str, tuple[tuple[int, ...], str]],
                 geometry: LaunchGeometry, init_value: float | None, **options) -> RunResult:
    """Launch a whole shader's kernel with arrays bound to the parameters of the same names
    (wherever their buffer indices are); outputs start filled with ``init_value`` (unset without
    one, as a kernel body's outputs are) and come back in the order given, in their shapes."""
    first = next(iter(input_dtypes.values()), None)
    kernel = choose_kernel(library, name, first)
    by_name = {p.name: p for p in kernel.buffers}
    values: dict[int, np.ndarray] = {}
    dtypes: dict[int, str] = {}
    unset: list[int] = []
    for array_name, value in inputs.items():
        index = _named(kernel, by_name, array_name).bound_index
        values[index] = value
        dtypes[index] = input_dtypes[array_name]
    for array_name, (shape, dtype) in outputs.items():
        index = _named(kernel, by_name, array_name).bound_index
        size = int(np.prod(shape, dtype=np.int64))
        storage = np.float32 if dtype == "bfloat16" else dtype
        values[index] = np.full(size, 0 if init_value is None else init_value, dtype=storage)
        dtypes[index] = dtype
        if init_value is None:
            unset.append(index)
    missing = [p.name for p in kernel.buffers if p.index not in values]
    if missing:
        raise ArgumentError(f"kernel '{kernel.host_name}' has buffer parameter(s) {missing} that no input or output "
                            f"name binds (inputs {list(inputs)}, outputs {list(outputs)})")
    result = kernel.launch(values, geometry, dtypes=dtypes, unset=unset, **options)
    written = dict(zip(result.output_names, result.outputs, strict=True))
    order = [n for n in outputs if n in written]
    shaped = [written[n].reshape(outputs[n][0]) for n in order]
    return dataclasses.replace(result, outputs=shaped, output_names=order)


def run_by_layout(library: ShaderLibrary, name: str, layout: Sequence[str], inputs: Mapping[str, np.ndarray],
                  input_dtypes: Mapping[str, str], outputs: Mapping[str, tuple[tuple[int, ...], str]],
                  geometry: LaunchGeometry, init_value: float | None, **options) -> RunResult:
    """Launch a whole shader's kernel as a host does: ``layout[i]`` names the array (an input or
    an output) the host binds at ``[[buffer(i)]]``, whatever the kernel calls its parameters. A
    kernel whose parameters sit at other indices would read and write the wrong buffers on a
    GPU: that is an error naming the index, the parameter and what the host puts there."""
    first = next(iter(input_dtypes.values()), None)
    kernel = choose_kernel(library, name, first)
    arrays = _host_arrays(layout, inputs, input_dtypes, outputs)
    at = {p.index: p for p in kernel.buffers}
    for p in kernel.buffers:
        _check_host_binding(kernel, p, layout, arrays)
    for out in outputs:
        index = layout.index(out)
        bound = at.get(index)
        if bound is None or not bound.writable:
            declared = ("does not declare it" if bound is None
                        else f"declares it read-only ('{bound.name}', {written_type(bound)})")
            raise ArgumentError(f"kernel '{kernel.host_name}': the host reads its output '{out}' back from "
                                f"[[buffer({index})]], but the kernel {declared}; {_host_layout(layout)}")
    values: dict[int, np.ndarray] = {}
    dtypes: dict[int, str] = {}
    unset: list[int] = []
    for p in kernel.buffers:
        index = p.bound_index
        array_name = layout[index]
        if array_name in inputs:
            values[index] = inputs[array_name]
            dtypes[index] = input_dtypes[array_name]
            continue
        shape, dtype = outputs[array_name]
        storage = np.float32 if dtype == "bfloat16" else dtype
        size = int(np.prod(shape, dtype=np.int64))
        values[index] = np.full(size, 0 if init_value is None else init_value, dtype=storage)
        dtypes[index] = dtype
        if init_value is None:
            unset.append(index)
    result = kernel.launch(values, geometry, dtypes=dtypes, unset=unset, **options)
    written = dict(zip(result.output_names, result.outputs, strict=True))
    shaped = [written[at[layout.index(out)].name].reshape(outputs[out][0]) for out in outputs]
    return dataclasses.replace(result, outputs=shaped, output_names=list(outputs))


@dataclass(frozen=True)
class _HostArray:
    """An array a host binds: what a message calls it, and its element type."""

    text: str  # 'the output o (24 float32 elements)'
    dtype: str


def _host_arrays(layout: Sequence[str], inputs: Mapping[str, np.ndarray], input_dtypes: Mapping[str, str],
                 outputs: Mapping[str, tuple[tuple[int, ...], str]]) -> dict[str, _HostArray]:
    def words(kind: str, name: str, size: int, dtype: str) -> _HostArray:
        return _HostArray(f"the {kind} {name} ({size} {dtype} element{'s' if size != 1 else ''})", dtype)

    arrays = {n: words("input", n, np.asarray(v).size, input_dtypes[n]) for n, v in inputs.items()}
    for n, (shape, dtype) in outputs.items():
        arrays[n] = words("output", n, int(np.prod(shape, dtype=np.int64)), dtype)
    if sorted(layout) != sorted(arrays):
        raise ArgumentError(f"the host's buffer layout {list(layout)} must name each input and output once "
                            f"(inputs {list(inputs)}, outputs {list(outputs)})")
    return arrays


def _host_layout(layout: Sequence[str]) -> str:
    return "the host binds " + ", ".join(f"[[buffer({i})]] {n}" for i, n in enumerate(layout))


def _check_host_binding(kernel: ShaderKernel, p: ShaderParam, layout: Sequence[str],
                        arrays: Mapping[str, _HostArray]) -> None:
    """A parameter at an index the host binds nothing at, named after an array the host binds at
    another index, or reading elements of another type than the host's would read or write the
    wrong memory on a GPU."""
    index = p.bound_index
    there = layout[index] if index < len(layout) else None
    head = f"kernel '{kernel.host_name}': [[buffer({index})]] is '{p.name}' ({written_type(p)})"
    if there is None:
        raise ArgumentError(f"{head}, an index the host binds nothing at; {_host_layout(layout)}")
    if there != p.name and p.name in layout:
        raise ArgumentError(f"{head}, but the host puts {arrays[there].text} there, and {p.name} at "
                            f"[[buffer({layout.index(p.name)})]]: a host binds buffers by index, not by name; "
                            f"{_host_layout(layout)}")
    elem = p.element.elem if isinstance(p.element, VectorType) else p.element
    if isinstance(elem, ScalarType):
        host = DTYPE_NAMES.get(arrays[there].dtype)
        if host is not None and host != elem and not same_integer_bits(arrays[there].dtype, elem) and not (
                p.binding == Binding.CONSTANT_VALUE and host.kind == elem.kind):
            raise ArgumentError(f"{head}, which reads {elem} elements, but the host puts {arrays[there].text} there; "
                                f"{_host_layout(layout)}")


def _named(kernel: ShaderKernel, by_name: Mapping[str, ShaderParam], array_name: str) -> ShaderParam:
    p = by_name.get(array_name)
    if p is None:
        raise ArgumentError(f"kernel '{kernel.host_name}' has no buffer parameter named '{array_name}' (its buffers: "
                            f"{', '.join(by_name) or 'none'})")
    return p


__all__ = ["run_by_layout", "run_by_names"]
