"""A compiled kernel program: the front end and the executor's code generation run once per
kernel instance (source, header, argument types, template), then ``launch`` runs it on a grid."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import numpy as np

from .abi.prelude import PRELUDE
from .abi.signature import (
    MAX_CONSTANT_ARRAY_SIZE,
    GeneratedKernel,
    InputDesc,
    Param,
    Passing,
    build_signature,
    normalize_dtype_name,
)
from .counting.counters import Counted, Counter
from .executor.codegen import CodeGen
from .executor.memory import Memory, Ptr
from .executor.runtime import Ctx
from .findings.advice import Audience, HostApi, partial_group_fix
from .findings.finding import Finding, FindingKind
from .findings.modes import SanitizeMode, StopKernel, StopReason
from .front import ast
from .front.checker import CheckedKernel, Checker
from .front.kernel_function_as_body import refuse_kernel_function, starts_a_kernel_function
from .front.parser import Parser
from .front.preprocessor import Preprocessor
from .lang.errors import ArgumentError, CompileError, KernelRuntimeError, Pos, SourceRegistry
from .lang.kernel_parameters import ParamRole
from .lang.lane_values import round_bfloat
from .lang.types import (
    BFLOAT,
    DTYPE_NAMES,
    INT,
    LONG,
    UINT,
    AddressSpace,
    ArrayType,
    AtomicType,
    PointerType,
    Type,
    size_of,
    storage_scalar,
    vector,
)
from .library import STANDARD_LIBRARY
from .observe.cost import CostRecorder
from .observe.gpu_models import GpuModel
from .observe.sanitizer import Sanitizer
from .observe.stepper import Stepper
from .observe.trace import Recorder
from .record import Counts, RunResult, SanitizerError
from .thread_grid import SIMD_WIDTH, Lanes

MAX_THREADS_PER_THREADGROUP = 1024
MAX_THREADGROUP_MEMORY = 32 * 1024
DEFAULT_MAX_STEPS = 100_000
#: A step budget no kernel reaches: the drop-in runs production kernels to their end, as a GPU does.
NO_STEP_BUDGET = sys.maxsize
#: Launches up to this many threads record a trace unless told otherwise ...
AUTO_TRACE_THREADS = 1024
#: ... of at most this many element accesses (``trace=True`` records everything).
AUTO_TRACE_ACCESSES = 200_000
#: Operations and statements nest at most this deep in a kernel's syntax tree ...
MAX_TREE_DEPTH = 160
#: ... which the checker and code generator walk recursively with at least this much stack.
COMPILE_RECURSION_LIMIT = 4000
#: Where template arguments come from, for diagnostics that point at one.
TEMPLATE_POS = Pos("<template>", 0, 0)


@lru_cache(maxsize=1)
def _prelude_tokens() -> Any:
    return Preprocessor().process(PRELUDE, "<mlx utils>")


def param_type(p: Param) -> Type:
    """The MSL type of a generated parameter, from the signature's description of it."""
    if p.role == ParamRole.ATTRIBUTE:
        return vector(UINT, 3) if p.width == 3 else UINT
    scalar = DTYPE_NAMES[p.dtype]
    elem: Type = AtomicType(scalar) if p.atomic else scalar
    if p.passing == Passing.POINTER:
        assert p.space is not None  # the signature names a pointer's address space
        return PointerType(elem, AddressSpace(p.space), p.const)
    return elem  # passed by reference (a 0-d input, an ndim): read like a value


class CompiledKernel:
    """One kernel instance: source + header + the call's types and template arguments."""

    def __init__(self, name: str, input_names: Sequence[str], output_names: Sequence[str], source: str,
                 header: str, inputs: Sequence[InputDesc], output_dtypes: Sequence[str],
                 template: Sequence[tuple[str, Any]], atomic_outputs: bool) -> None:
        self.name = name
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self.source = source
        self.header = header
        self.registry = SourceRegistry()
        self.tokens = 0  # set by _compile
        self.registry.add("source", source)
        self.registry.add("header", header)
        try:
            self.generated: GeneratedKernel = build_signature(
                name, input_names, output_names, source, header, inputs, output_dtypes, template, atomic_outputs)
        except ValueError as exc:
            raise ArgumentError(str(exc)) from None
        try:
            with _deep_stack(Pos("source", 1, 1)):
                self._compile(template)
        except CompileError as err:
            raise err.with_registry(self.registry) from None

    def _compile(self, template: Any) -> None:
        # Template type names must be known while parsing ('T x = ...' is a declaration).
        type_names = {n for n, v in template if isinstance(v, str)}
        pp = Preprocessor()
        prelude_p = Parser(list(_prelude_tokens()), type_names=set(type_names))
        prelude = prelude_p.parse_translation_unit()
        header_tokens = pp.process(self.header, "header")
        header_p = Parser(header_tokens, type_names=prelude_p.type_names, template_names=prelude_p.template_names)
        header = header_p.parse_translation_unit()
        body_tokens = pp.process(self.source, "source")
        # What the compiled kernel weighs in a cache: its code grows with the tokens it was
        # compiled from (after macros), about a kilobyte of trees and closures a token.
        self.tokens = len(header_tokens) + len(body_tokens)
        if starts_a_kernel_function(body_tokens):
            refuse_kernel_function(body_tokens, header_p.type_names, header_p.template_names, self.input_names,
                                   self.output_names)
        body_p = Parser(body_tokens, type_names=header_p.type_names, template_names=header_p.template_names)
        body = body_p.parse_body()
        for tree in (header, body):
            deep = ast.too_deep(tree, MAX_TREE_DEPTH)
            if deep is not None:
                raise CompileError(f"the kernel is nested too deeply here (more than {MAX_TREE_DEPTH} levels of "
                                   "operations or statements inside each other); split the expression, e.g. into "
                                   "partial sums in variables", deep.pos)

        ck = Checker(STANDARD_LIBRARY)
        for tname, value in template:
            bound = DTYPE_NAMES[normalize_dtype_name(value)] if isinstance(value, str) else value
            ck.bind_template(tname, bound, TEMPLATE_POS)
        ck.add_header(prelude)
        ck.add_header(header)
        params = [(p.name, param_type(p), p.role) for p in self.generated.params]
        checked = ck.check_kernel(body, params)
        self.checked = checked
        check_threadgroup_memory(checked.threadgroup_arrays)
        self.body, _ = CodeGen().compile_body(checked.body)
        self._costed_body: Callable | None = None  # the instrumented variant, compiled the first time a profile is asked for

    def costed_body(self) -> Any:
        """The kernel compiled with cost instrumentation (see ``CodeGen``)."""
        if self._costed_body is None:
            self._costed_body, _ = CodeGen(cost=True).compile_body(self.checked.body)
        return self._costed_body

    # ------------------------------------------------------------------ launch
    def launch(self, inputs: Sequence[np.ndarray], input_dtypes: Sequence[str], output_shapes: Any, output_dtypes: Any,
               grid: Any, threadgroup: Any, init_value: Any, ensure_row_contiguous: bool, sanitize: SanitizeMode,
               max_steps: int | None, trace: bool | None, steps: bool = False,
               audience: Audience = Audience.CALLER, warned: set | None = None,
               cost: GpuModel | None = None) -> RunResult:
        grid = _triple(grid, "grid")
        tg = _triple(threadgroup, "threadgroup")
        if any(g < 0 for g in grid):
            raise ArgumentError(f"grid {grid} has a negative size")
        if any(t <= 0 for t in tg):
            raise ArgumentError(f"threadgroup {tg} must be positive in every dimension")
        # MLX shrinks each threadgroup dimension to the grid's before dispatching.
        tg = tuple(max(1, min(t, g)) for t, g in zip(tg, grid, strict=True))
        if tg[0] * tg[1] * tg[2] > MAX_THREADS_PER_THREADGROUP:
            raise ArgumentError(f"threadgroup {tg} has {tg[0] * tg[1] * tg[2]} threads; Metal allows at most "
                                f"{MAX_THREADS_PER_THREADGROUP} threads per threadgroup")
        lanes = _lanes(grid, tg)
        ctx, recorder = start_run(self.checked, lanes, sanitize, max_steps, trace, steps, audience)
        self._bind_inputs(ctx, inputs, input_dtypes, ensure_row_contiguous)
        outputs = self._bind_outputs(ctx, output_shapes, output_dtypes, init_value)
        # What the outputs held before the kernel ran (the explorer replays writes onto it).
        initial_outputs = [mem.values().reshape(shape).copy() for mem, shape in outputs] if steps else []
        self._bind_attributes(ctx, lanes, grid, tg)
        bind_parameters(ctx, self.checked)
        if ctx.sanitizer is not None:
            for mem, _ in outputs:
                ctx.sanitizer.watch(mem, initialized=init_value is not None)
        bind_threadgroup_arrays(ctx, lanes, self.checked)
        stopped, cost_recorder = run_observed(ctx, lanes, self, cost, self.registry)
        if ctx.sanitizer is not None and stopped != StopReason.STEP_BUDGET:
            ctx.sanitizer.finish(ctx, [mem for mem, _ in outputs], init_value)
        result = RunResult(
            outputs=[mem.values().reshape(shape) for mem, shape in outputs],
            counts=_counts(ctx, lanes, grid),
            findings=ctx.findings,
            generated_source=self.generated.full_source,
            kernel_name=self.generated.kernel_name,
            lanes=lanes,
            trace=recorder,
            grid=grid,
            threadgroup=tg,
            output_names=self.output_names,
            input_names=self.input_names,
            inputs=list(inputs),
            threadgroup_shapes={v.name: _array_shape(v.ty) for v in self.checked.threadgroup_arrays},
            steps=ctx.stepper.steps if ctx.stepper is not None else None,
            initial_outputs=initial_outputs,
            source=self.source,
            stopped=stopped,
            cost=None if cost_recorder is None else cost_recorder.profile(tg[0] * tg[1] * tg[2], self.source),
        )
        return conclude(result, ctx, sanitize, warned, self.registry)

    def _bind_inputs(self, ctx: Ctx, inputs: Any, input_dtypes: Any, row_contiguous: bool) -> None:
        for name, value, dtype in zip(self.input_names, inputs, input_dtypes, strict=True):
            scalar = DTYPE_NAMES[dtype]
            arr = np.asarray(value)
            if arr.ndim == 0:
                ctx.memories[name] = Memory.of_values(name, AddressSpace.CONSTANT, scalar, [arr], counted=Counted.GLOBAL)
                continue
            data, strides = _buffer_of(arr, scalar, row_contiguous)
            space = AddressSpace.CONSTANT if arr.size < MAX_CONSTANT_ARRAY_SIZE else AddressSpace.DEVICE
            mem = Memory.of_values(name, space, scalar, data, counted=Counted.GLOBAL)
            ctx.memories[name] = mem
            ctx.buffers[name] = Ptr(mem, np.int64(0))
            shape = Memory.of_values(name + "_shape", AddressSpace.CONSTANT, INT, np.array(arr.shape, dtype=np.int32))
            ctx.buffers[name + "_shape"] = Ptr(shape, np.int64(0))
            st = Memory.of_values(name + "_strides", AddressSpace.CONSTANT, LONG, np.array(strides, dtype=np.int64))
            ctx.buffers[name + "_strides"] = Ptr(st, np.int64(0))
            ctx.scalars[name + "_ndim"] = np.int32(arr.ndim)

    def _bind_outputs(self, ctx: Ctx, shapes: Any, dtypes: Any, init_value: Any) -> Any:
        out = []
        for name, shape, dtype in zip(self.output_names, shapes, dtypes, strict=True):
            scalar = DTYPE_NAMES[dtype]
            size = int(np.prod(shape, dtype=np.int64))
            if init_value is None:
                data = np.zeros(size, dtype=scalar.dtype)
            else:
                data = np.full(size, init_value, dtype=scalar.dtype)
                if scalar == BFLOAT:
                    data = np.asarray(round_bfloat(data), dtype=np.float32)
            mem = Memory.of_values(name, AddressSpace.DEVICE, scalar, data, counted=Counted.GLOBAL, writable=True)
            ctx.memories[name] = mem
            ctx.buffers[name] = Ptr(mem, np.int64(0))
            out.append((mem, tuple(shape)))
        return out

    def _bind_attributes(self, ctx: Ctx, lanes: Lanes, grid: Any, tg: Any) -> None:
        u = np.uint32
        values = attribute_values(lanes, grid, tg)
        for p in self.generated.params:
            if p.role == ParamRole.ATTRIBUTE:
                v = values[p.name]
                ctx.attrs[p.name] = v.astype(u) if isinstance(v, np.ndarray) else u(v)


def attribute_values(lanes: Lanes, grid: Any, tg: Any) -> dict[str, np.ndarray | np.integer]:
    """Every thread attribute's value on this launch: per lane (arrays) or uniform (scalars)."""
    group_size = lanes.group_size[lanes.group]
    simds = lanes.simds_per_group[lanes.group]
    quads = -(-lanes.threads_in_group[lanes.group] // 4)
    tg_total = tg[0] * tg[1] * tg[2]
    values = {
        "thread_position_in_grid": lanes.pos,
        "thread_position_in_threadgroup": lanes.local,
        "threadgroup_position_in_grid": lanes.group_pos[lanes.group],
        "threads_per_threadgroup": np.array(tg) if lanes.uniform_groups else group_size,
        "dispatch_threads_per_threadgroup": np.array(tg),
        "threadgroups_per_grid": np.array(lanes.groups),
        "threads_per_grid": np.array(grid),
        "grid_size": np.array(grid),
        "grid_origin": np.zeros(3),
        "thread_index_in_threadgroup": lanes.index_in_group,
        "thread_index_in_simdgroup": lanes.simd_lane,
        "simdgroup_index_in_threadgroup": lanes.simd_in_group,
        "threads_per_simdgroup": np.int64(SIMD_WIDTH),
        "thread_execution_width": np.int64(SIMD_WIDTH),
        "simdgroups_per_threadgroup": simds if not lanes.uniform_groups else np.int64(-(-tg_total // SIMD_WIDTH)),
        "dispatch_simdgroups_per_threadgroup": np.int64(-(-tg_total // SIMD_WIDTH)),
        "quadgroup_index_in_threadgroup": lanes.index_in_group // 4,
        "thread_index_in_quadgroup": lanes.index_in_group % 4,
        "quadgroups_per_threadgroup": quads if not lanes.uniform_groups else np.int64(-(-tg_total // 4)),
        "dispatch_quadgroups_per_threadgroup": np.int64(-(-tg_total // 4)),
    }
    return values


def interrupted_message(name: str, max_steps: int | None) -> str:
    """What Ctrl-C during a simulated run says: the kernel was stopped by hand, and how to bound it."""
    budget = ("it had no step budget (max_steps=None, the drop-in's default, runs a kernel to its end as a GPU "
              "does)" if max_steps is None else f"it had a budget of {max_steps} steps")
    return (f"the simulated kernel '{name}' was interrupted before it finished; {budget}. A kernel that loops "
            "forever can be stopped with an error instead by passing max_steps=N (e.g. 100000)")


def check_threadgroup_memory(arrays: Any) -> None:
    """The threadgroup arrays a kernel declares fit in a threadgroup's memory (else a compile
    error at the largest)."""
    tg_bytes = sum(size_of(v.ty) for v in arrays)
    if tg_bytes > MAX_THREADGROUP_MEMORY:
        big = max(arrays, key=lambda v: size_of(v.ty))
        raise CompileError(f"threadgroup memory of {tg_bytes} bytes exceeds the {MAX_THREADGROUP_MEMORY} bytes "
                           f"a threadgroup may use (largest: '{big.name}')", big.pos)


def sanitize_mode(value: SanitizeMode | str) -> SanitizeMode:
    """A ``sanitize=`` argument as a mode, or the error that lists the modes."""
    try:
        return SanitizeMode(value)
    except ValueError:
        raise ArgumentError(f"sanitize must be 'error', 'warn' or 'off', not {value!r}") from None


def start_run(checked: CheckedKernel, lanes: Lanes, sanitize: SanitizeMode, max_steps: int | None, trace: bool | None,
              steps: bool, audience: Audience, host: HostApi = HostApi.MLX_BODY) -> tuple[Ctx, Recorder | None]:
    """The execution context of one launch of a checked kernel, with the observers asked for."""
    recorder = None
    if trace is None and lanes.n <= AUTO_TRACE_THREADS:
        # The automatic trace is bounded: a few threads looping long would record without end.
        recorder = Recorder(limit=AUTO_TRACE_ACCESSES)
    elif trace:
        recorder = Recorder()
    ctx = Ctx(lanes, sanitize, max_steps or DEFAULT_MAX_STEPS, recorder, audience, host)
    ctx.slots = [None] * checked.nslots
    ctx.variables = checked.variables  # what a step-budget finding reports a looping thread's values from
    ctx.body = checked.body  # what hints read the code's computations from
    if steps:
        ctx.stepper = Stepper(checked.variables)
    if sanitize != SanitizeMode.OFF:
        ctx.sanitizer = Sanitizer()
    return ctx, recorder


def bind_parameters(ctx: Ctx, checked: CheckedKernel) -> None:
    """Each pointer parameter's slot gets the buffer bound to it (the body's own copy of the pointer)."""
    for var in checked.params:
        if var.slot is not None:
            ctx.slots[var.slot] = ctx.buffers[var.name]


def bind_threadgroup_arrays(ctx: Ctx, lanes: Lanes, checked: CheckedKernel) -> None:
    """Memory for the threadgroup arrays the kernel declares: one region per threadgroup."""
    for var in checked.threadgroup_arrays:
        mem = Memory(var.name, AddressSpace.THREADGROUP, storage_scalar(var.ty), size_of(var.ty),
                     regions=lanes.n_groups, lane_region=lanes.group, counted=Counted.SHARED, writable=True,
                     ty=var.ty)
        ctx.memories[var.name] = mem
        assert var.slot is not None  # the checker gives every threadgroup array a slot
        ctx.slots[var.slot] = Ptr(mem, np.int64(0))
        if ctx.sanitizer is not None:
            ctx.sanitizer.watch(mem, initialized=False)


def run_observed(ctx: Ctx, lanes: Lanes, kernel: Any, cost: GpuModel | None,
                 registry: SourceRegistry) -> tuple[StopReason | None, CostRecorder | None]:
    """Run a compiled kernel (anything with ``body`` and ``costed_body()``) on every lane, priced
    on ``cost`` when a profile is asked for: why it stopped early, and the cost recorder."""
    recorder = None
    if cost is not None:
        recorder = CostRecorder(lanes, cost)
        recorder.attach(ctx)
    body = kernel.body if recorder is None else kernel.costed_body()
    return execute(ctx, body, registry), recorder


def execute(ctx: Ctx, body: Any, registry: SourceRegistry) -> StopReason | None:
    """Run a compiled body on every lane; why it stopped early, if it did."""
    if ctx.lanes.n:
        try:
            with np.errstate(all="ignore"):
                body(ctx, None)
        except StopKernel as stop:
            return stop.reason
        except KernelRuntimeError as err:
            if err.pos is not None and not str(err).startswith(str(err.pos)):
                raise KernelRuntimeError(err.message, err.pos, err.thread, registry) from None
            raise
    if ctx.stepper is not None:
        ctx.stepper.finish(ctx)  # the end step: what the last statement left
    return None


def conclude(result: RunResult, ctx: Ctx, sanitize: SanitizeMode, warned: set | None,
             registry: SourceRegistry) -> RunResult:
    """Raise or warn about a finished run's findings as ``sanitize`` says; return the record."""
    result.output_hints = list(ctx.output_hints.values())
    misplaced = partial_group_fix(ctx)
    if misplaced is not None:
        result.output_hints.append(misplaced)
    errors = [f for f in ctx.findings if f.is_error]
    if errors and sanitize == SanitizeMode.ERROR:
        notes = [f for f in ctx.findings if not f.is_error]
        raise SanitizerError(errors + notes, result, registry)
    if ctx.findings and sanitize != SanitizeMode.OFF:
        # 'warn' shows every finding; 'error' got here with notes only, which never raise.
        warn_findings(ctx.findings, warned)
    elif result.stopped == StopReason.STEP_BUDGET:  # even unsanitized, a runaway kernel is an error
        raise SanitizerError([f for f in ctx.findings if f.kind == FindingKind.STEP_BUDGET], result, registry)
    return result


def warn_findings(findings: Sequence[Finding], warned: set | None) -> None:
    """Issue each finding as a Python warning with its whole message. ``warned`` (kept by the
    caller, e.g. a kernel object) holds the findings already shown, so each is shown once."""
    for f in findings:
        key = (f.kind, f.pos, f.buffer, f.severity)
        if warned is not None:
            if key in warned:
                continue
            warned.add(key)
        warnings.warn(str(f), RuntimeWarning, stacklevel=4)


def _array_shape(ty: Type) -> tuple[int, ...]:
    dims = []
    while isinstance(ty, ArrayType):
        dims.append(ty.n)
        ty = ty.elem
    return tuple(dims) or (1,)


def _triple(v: Any, what: str) -> tuple[int, int, int]:
    try:
        t = tuple(int(x) for x in v)
    except TypeError:
        raise ArgumentError(f"{what} must be a tuple of three integers, got {v!r}") from None
    if len(t) != 3:
        raise ArgumentError(f"{what} must have three dimensions (x, y, z), got {v!r}")
    return t


@contextmanager
def _deep_stack(where: Pos) -> Any:
    """Room on the Python stack for the front end's recursion over nested code (bounded by
    MAX_NESTING, MAX_TREE_DEPTH and the checker's instantiation depth). A RecursionError is a
    last resort, for nesting those bounds missed: a compile error at ``where`` (the file's start),
    never an exception of the simulator's own."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, COMPILE_RECURSION_LIMIT))
    try:
        yield
    except RecursionError:
        raise CompileError("the kernel is nested too deeply for the simulator to compile", where) from None
    finally:
        sys.setrecursionlimit(old)


@lru_cache(maxsize=64)
def _lanes(grid: Any, tg: Any) -> Lanes:
    return Lanes(grid, tg)


def _buffer_of(arr: np.ndarray, scalar: Any, row_contiguous: bool) -> Any:
    """The flat buffer a kernel sees for an input, and its strides in elements."""
    dtype = scalar.dtype
    if row_contiguous or arr.ndim == 0:
        data = np.ascontiguousarray(arr, dtype=dtype).reshape(-1)
        return data.copy(), _row_strides(arr.shape)
    item = arr.itemsize
    strides = arr.strides
    if all(s >= 0 and s % item == 0 for s in strides) and arr.size > 0:
        el = [s // item for s in strides]
        extent = sum((n - 1) * s for n, s in zip(arr.shape, el, strict=True)) + 1
        flat = np.lib.stride_tricks.as_strided(arr, shape=(extent,), strides=(item,))
        return np.array(flat, dtype=dtype), el
    data = np.ascontiguousarray(arr, dtype=dtype).reshape(-1)
    return data.copy(), _row_strides(arr.shape)


def _row_strides(shape: Any) -> list[int]:
    out = []
    acc = 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(int(n), 1)
    return list(reversed(out))


def _counts(ctx: Ctx, lanes: Lanes, grid: Any) -> Counts:
    total = grid[0] * grid[1] * grid[2]
    arrays = {}
    for counter in Counter:
        a = np.zeros(total, dtype=np.int64)
        a[lanes.grid_linear] = ctx.counts[counter]
        arrays[counter.value] = a
    return Counts(**arrays)

