"""``simulate``: run a kernel body on the simulator with NumPy inputs (the MLX-free entry point)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from .abi.signature import (
    InputDesc,
    check_names,
    describe_input,
    normalize_dtype_name,
    template_value,
    verbose_text,
)
from .findings.advice import Audience
from .findings.modes import SanitizeMode
from .lang.errors import ArgumentError
from .observe.gpu_models import DEFAULT_GPU, GpuModel, gpu_model
from .program import CompiledKernel, sanitize_mode
from .record import RunResult

_CACHE: OrderedDict[tuple, CompiledKernel] = OrderedDict()
#: Bounds on the compile cache: kernels, and the tokens they were compiled from (about a kilobyte
#: of compiled code a token, so about 100 MiB). A count alone let a notebook of large dead-code
#: kernels fill a grading worker's memory for the students after it.
_CACHE_SIZE = 256
_CACHE_TOKEN_BUDGET = 100_000
_cache_tokens = 0
#: Kernel instances compiled, and compilations saved by the cache, in this process (for cost reports).
_COMPILES = 0
_CACHE_HITS = 0


def compile_cache_stats() -> tuple[int, int]:
    """(kernel instances compiled, compilations the cache saved) so far in this process."""
    return _COMPILES, _CACHE_HITS


def compile_cache_size() -> tuple[int, int]:
    """(kernels in the compile cache, the tokens they were compiled from) now."""
    return len(_CACHE), _cache_tokens


def _template_key(template) -> tuple:
    return tuple((name, type(value).__name__, value) for name, value in _normalize_template(template))


def _normalize_template(template) -> list[tuple[str, Any]]:
    try:
        return [(name, template_value(value)) for name, value in template]
    except ValueError as exc:  # a float or an unknown name: what MLX refuses
        raise ArgumentError(str(exc)) from None


def get_kernel(name, input_names, output_names, source, header, descs: Sequence[InputDesc],
               output_dtypes: Sequence[str], template, atomic_outputs) -> CompiledKernel:
    """Compile (or fetch from the cache) the kernel instance for these argument types."""
    global _COMPILES, _CACHE_HITS, _cache_tokens
    key = (name, tuple(input_names), tuple(output_names), source, header, bool(atomic_outputs),
           tuple((d.dtype, d.ndim == 0, d.size < 8) for d in descs), tuple(output_dtypes), _template_key(template))
    k = _CACHE.get(key)
    if k is None:
        _COMPILES += 1
        k = CompiledKernel(name, input_names, output_names, source, header, descs, output_dtypes,
                           _normalize_template(template), atomic_outputs)
        _CACHE[key] = k
        _cache_tokens += k.tokens
        # Least recently used first; the kernel just compiled stays even if it alone is over budget.
        while len(_CACHE) > 1 and (len(_CACHE) > _CACHE_SIZE or _cache_tokens > _CACHE_TOKEN_BUDGET):
            _, old = _CACHE.popitem(last=False)
            _cache_tokens -= old.tokens
    else:
        _CACHE_HITS += 1
        _CACHE.move_to_end(key)
    return k


def simulate(name: str, input_names: Sequence[str], output_names: Sequence[str], source: str,
             header: str = "", *, inputs: Sequence[Any], output_shapes: Sequence[Sequence[int]],
             output_dtypes: Sequence[Any], grid: Sequence[int], threadgroup: Sequence[int],
             template: Sequence[tuple[str, Any]] = (), init_value: float | None = None,
             atomic_outputs: bool = False, ensure_row_contiguous: bool = True, verbose: bool = False,
             input_dtypes: Sequence[Any] | None = None, sanitize: SanitizeMode | str = SanitizeMode.ERROR,
             max_steps: int | None = None, trace: bool | None = None, steps: bool = False,
             audience: Audience = Audience.CALLER, warned: set | None = None,
             cost: GpuModel | str | bool | None = None) -> RunResult:
    """Run a Metal kernel body on the simulator.

    Arguments follow ``mx.fast.metal_kernel`` (construction and call merged), with NumPy arrays
    for inputs. ``sanitize`` is 'error' (an error finding raises SanitizerError; notes are
    warnings), 'warn' (every finding is a warning) or 'off'; ``warned`` is a set the caller keeps
    to show each finding only once over several runs. ``trace`` records every access for
    diagrams (default: for launches of up to 1024 threads, stopping after 200,000 element
    accesses, see ``RunResult.trace``); ``steps`` records a step-through view (every statement,
    active threads, local variables). ``audience`` says who reads the findings, for the fixes
    their hints suggest (a puzzle's learner cannot change the launch). ``cost`` records a cost
    profile (``RunResult.cost``) on a GPU model: True for the default (Apple M1), a model's name
    ('M3 Max', 'H100') or a ``GpuModel``; runs without it pay nothing.
    """
    mode = sanitize_mode(sanitize)
    try:
        check_names(input_names, output_names)
    except ValueError as exc:
        raise ArgumentError(str(exc)) from None
    input_names = list(input_names)
    output_names = list(output_names)
    if len(inputs) != len(input_names):
        raise ArgumentError(f"kernel '{name}' has {len(input_names)} input name(s) {input_names} but "
                            f"{len(inputs)} input(s) were given")
    if len(output_shapes) != len(output_names) or len(output_dtypes) != len(output_names):
        raise ArgumentError(f"kernel '{name}' has {len(output_names)} output name(s) {output_names} but "
                            f"{len(output_shapes)} output shape(s) and {len(output_dtypes)} output dtype(s)")
    overrides = list(input_dtypes) if input_dtypes is not None else [None] * len(inputs)
    descs = []
    arrays = []
    for n, v, dt in zip(input_names, inputs, overrides, strict=True):
        d = describe_input(n, v, None if dt is None else normalize_dtype_name(dt))
        if d.dtype not in _SUPPORTED:
            raise ArgumentError(f"input '{n}' has dtype {d.dtype}, which Metal kernels cannot take")
        descs.append(d)
        arrays.append(_as_array(v, d))
    out_dtypes = [normalize_dtype_name(d) for d in output_dtypes]
    for n, dt in zip(output_names, out_dtypes, strict=True):
        if dt not in _SUPPORTED:
            raise ArgumentError(f"output '{n}' has dtype {dt}, which Metal kernels cannot produce")
    shapes = []
    for n, s in zip(output_names, output_shapes, strict=True):
        try:
            shape = tuple(int(x) for x in s)
        except TypeError:
            raise ArgumentError(f"output shape for '{n}' must be a tuple of integers, got {s!r}") from None
        if any(x < 0 for x in shape):
            raise ArgumentError(f"output shape {shape} for '{n}' has a negative dimension")
        shapes.append(shape)
    kernel = get_kernel(name, input_names, output_names, source, header, descs, out_dtypes, template,
                        atomic_outputs)
    if verbose:
        print(verbose_text(name, kernel.generated))
    return kernel.launch(arrays, [d.dtype for d in descs], shapes, out_dtypes, grid, threadgroup, init_value,
                         ensure_row_contiguous, mode, max_steps, trace, steps, Audience(audience), warned,
                         cost_model(cost))


def cost_model(cost: GpuModel | str | bool | None) -> GpuModel | None:
    """The GPU model a ``cost=`` argument asks for (None: no profile)."""
    if cost is None or cost is False:
        return None
    if cost is True:
        return DEFAULT_GPU
    return gpu_model(cost)


_SUPPORTED = {"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
              "bfloat16", "float32"}


def _as_array(v, desc: InputDesc) -> np.ndarray:
    if isinstance(v, bool | int | float):
        return np.asarray(v, dtype=np.float32 if desc.dtype == "bfloat16" else desc.dtype)
    return np.asarray(v)
