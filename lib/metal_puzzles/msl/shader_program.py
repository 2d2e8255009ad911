"""Whole shaders: a ``.metal`` source with its own kernel functions, compiled and launched.

The MLX path (``program.CompiledKernel``) wraps a body in the signature MLX generates; here the
source declares its kernels itself, and each kernel (by host name) is compiled on first use and
launched with NumPy arrays bound to its buffer indices. Both paths share the front end, the code
generator and the launch machinery of ``program`` (context, observers, findings), so the
sanitizer, counts, trace, step-through, cost model and step budget work the same.

An explicit instantiation is matched to its template by the front end
(``front/template_instantiation.py``); a host's arrays are bound to a kernel's buffers, by
parameter name or by the host's buffer layout, in ``host/buffer_binding.py``.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .abi.shader import Binding, DeclaredParam, ShaderParam, describe_params
from .counting.counters import Counted
from .executor.codegen import CodeGen
from .executor.memory import Memory, Ptr, bfloat_bits
from .executor.runtime import Ctx
from .findings.advice import Audience, HostApi
from .findings.modes import SanitizeMode, StopReason
from .front import ast
from .front.checker import Checker, Scope
from .front.preprocessor import MAX_SHADER_EXPANSION_TOKENS, IncludePath, Preprocessor
from .front.shader_unit import (
    Instantiation,
    KernelFunction,
    ShaderUnit,
    declares_kernel,
    parse_shader,
    top_level_items,
)
from .front.template_instantiation import NoMatchingTemplate, bind_template_arguments
from .lang.errors import ArgumentError, CompileError, Pos, SourceRegistry
from .lang.kernel_parameters import ParamRole
from .lang.types import (
    DTYPE_NAMES,
    UCHAR,
    AddressSpace,
    ArrayType,
    PointerType,
    ScalarType,
    Type,
    VectorType,
    VoidType,
    scalar_of,
    size_of,
    storage_scalar,
)
from .library import STANDARD_LIBRARY
from .observe.gpu_models import GpuModel
from .program import (
    MAX_THREADGROUP_MEMORY,
    MAX_THREADS_PER_THREADGROUP,
    MAX_TREE_DEPTH,
    _array_shape,
    _counts,
    _deep_stack,
    _lanes,
    attribute_values,
    bind_parameters,
    bind_threadgroup_arrays,
    check_threadgroup_memory,
    conclude,
    run_observed,
    sanitize_mode,
    start_run,
)
from .record import RunResult

#: The file name positions in a shader carry (what errors, marks and the explorer quote).
SHADER_FILE = "source"
HEADER_FILE = "header"

_NAME_OF_SCALAR = {scalar: name for name, scalar in DTYPE_NAMES.items()}


class ShaderLibrary:
    """A compiled shader source: its kernels by host name, each compiled when first asked for."""

    def __init__(self, source: str, header: str = "", include_dirs: Sequence[str | Path] = (),
                 include_hint: str = "") -> None:
        """``include_dirs``: folders ``#include`` reads header files from (each once), as PyTorch's
        ``compile_shader`` reads ``c10/metal/*.h`` from torch's ``include`` folder; ``include_hint``:
        what an include found in none of them says."""
        self.source = source
        self.registry = SourceRegistry()
        self.registry.add(SHADER_FILE, source)
        self.registry.add(HEADER_FILE, header)
        hint = include_hint or "no include folder has it; pass include_dirs=[...] to name one"
        include_path = IncludePath([Path(d) for d in include_dirs], self.registry, hint)
        # A header (the book's MetalKernel may have one) goes first; '#line' keeps each file's own lines.
        text = f'#line 1 "{HEADER_FILE}"\n{header}\n#line 1 "{SHADER_FILE}"\n{source}' if header else source
        try:
            with _deep_stack(Pos(SHADER_FILE, 1, 1)):
                tokens = Preprocessor(MAX_SHADER_EXPANSION_TOKENS, include_path).process(text, SHADER_FILE)
                self.unit: ShaderUnit = parse_shader(tokens, set(), set())
        except CompileError as err:
            raise err.with_registry(self.registry) from None
        self._instances: dict[str, Instantiation | None] = {}
        for name, kernel in self.unit.kernels.items():
            if not kernel.func.template_params:
                self._instances[name] = None
        for inst in self.unit.instantiations:
            if inst.host_name in self._instances:
                raise CompileError(f"two kernels have the host name '{inst.host_name}'", inst.pos, self.registry)
            self._instances[inst.host_name] = inst
        self._compiled: dict[str, ShaderKernel] = {}
        self._checker: Checker | None = None
        self._check_eagerly()

    def _check_eagerly(self) -> None:
        """Report what the Metal compiler would reject when the library is built: the shared
        declarations (constants, structs, aliases) and every kernel that is not a template. A
        helper function is checked with the first kernel that calls it, and a templated kernel for
        its instantiation when that kernel is first used (PyTorch's libraries have thousands, and
        helpers no kernel of a shader calls)."""
        try:
            with _deep_stack(Pos(SHADER_FILE, 1, 1)):
                self._checker = self._checked_header()
        except CompileError as err:
            raise err.with_registry(self.registry) from None
        for name, inst in self._instances.items():
            if inst is None:
                self.kernel(name)
            else:
                self._check_instantiation(inst)

    def _check_instantiation(self, inst: Instantiation) -> None:
        """An explicit instantiation must name a template it instantiates: its template arguments
        bound (or deduced) and its parameter types the template's, as clang checks them when the
        library is built (the kernel's body is checked when it is first used)."""
        template = self.unit.kernels[inst.function].func
        func = copy.copy(template)
        func.params = copy.deepcopy(template.params)  # the checker may note what it finds on them
        try:
            with _deep_stack(Pos(SHADER_FILE, 1, 1)), self.kernel_checker() as ck:
                ck.scope = Scope(ck.globals)
                bind_template_arguments(ck, func, inst)
        except NoMatchingTemplate as err:
            raise err.with_registry(self.registry) from None
        except CompileError:
            # Something the simulator does not support (an argument buffer, say): a GPU would build
            # the library, so only this kernel fails, when it is first used.
            pass

    def _checked_header(self) -> Checker:
        checker = Checker(STANDARD_LIBRARY)
        checker.add_header(copy.deepcopy(self.unit.helpers))
        return checker

    @contextlib.contextmanager
    def kernel_checker(self) -> Iterator[Checker]:
        """The checker that holds the shader's declarations, checked once, shared by its kernels:
        a helper function or struct template instance a kernel makes serves every kernel after it
        (PyTorch's shaders instantiate thousands of kernels over one large header). A kernel that
        fails to compile may leave it half-done, so it is then made anew for the next."""
        if self._checker is None:
            self._checker = self._checked_header()
        checker = self._checker
        try:
            yield checker
        except BaseException:
            self._checker = None
            raise
        finally:
            checker.func = None
            checker.scope = checker.globals
            checker.namespace = ()
            checker.threadgroup_arrays = []

    @property
    def kernel_names(self) -> list[str]:
        """The host names of the library's kernels (plain kernels and instantiated templates)."""
        return list(self._instances)

    def kernel(self, host_name: str) -> ShaderKernel:
        """The kernel with this host name, compiled for its template arguments."""
        if host_name not in self._instances:
            close = difflib.get_close_matches(host_name, self.kernel_names, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            known = ", ".join(self.kernel_names) or "none (a templated kernel needs a host_name instantiation)"
            raise ArgumentError(f"the shader has no kernel named '{host_name}'{hint} (kernels: {known})")
        found = self._compiled.get(host_name)
        if found is None:
            inst = self._instances[host_name]
            function = self.unit.kernels[inst.function if inst is not None else host_name]
            try:
                with _deep_stack(Pos(SHADER_FILE, 1, 1)):
                    found = ShaderKernel(host_name, self, function, inst)
            except CompileError as err:
                raise err.with_registry(self.registry) from None
            self._compiled[host_name] = found
        return found


@dataclass(frozen=True)
class LaunchGeometry:
    """A dispatch as ``dispatchThreads`` takes it: threads in the grid, threads per threadgroup."""

    threads: tuple[int, int, int]
    group_size: tuple[int, int, int]


class ShaderKernel:
    """One kernel function of a shader, checked and compiled for one set of template arguments."""

    def __init__(self, host_name: str, library: ShaderLibrary, function: KernelFunction,
                 instantiation: Instantiation | None) -> None:
        self.host_name = host_name
        self.library = library
        self.max_total_threads = function.max_total_threads or MAX_THREADS_PER_THREADGROUP
        # Checked before the copy below, which recurses as deep as the tree is.
        too_deep = ast.too_deep(function.func.body, MAX_TREE_DEPTH)
        if too_deep is not None:
            raise CompileError(f"the kernel is nested too deeply here (more than {MAX_TREE_DEPTH} levels)",
                               too_deep.pos)
        # The checker writes its findings into the syntax tree: each instantiation checks its own copy.
        func = copy.deepcopy(function.func)
        with library.kernel_checker() as ck:
            # The template's arguments are names of the kernel's own scope: the helpers it calls
            # do not see them, as in C++.
            template_scope = ck.scope = Scope(ck.globals)
            bind_template_arguments(ck, func, instantiation)
            # A kernel declared in a namespace finds names from there outwards (its parameters' types too).
            ck.namespace = func.namespace
            declared = [_declared(ck, p, attribute)
                        for p, attribute in zip(func.params, function.attributes, strict=True)]
            self.params: list[ShaderParam] = describe_params(host_name, declared)
            self.checked = ck.check_kernel(func.body, [(p.name, p.ty, _role(p)) for p in self.params],
                                           outer=template_scope)
        check_threadgroup_memory(self.checked.threadgroup_arrays)
        self.body, _ = CodeGen().compile_body(self.checked.body)
        self._costed_body: Callable | None = None

    @property
    def buffers(self) -> list[ShaderParam]:
        """The parameters the host binds (buffers and constant values), by index."""
        return sorted((p for p in self.params if p.binding in (Binding.BUFFER, Binding.CONSTANT_VALUE)),
                      key=lambda p: p.index or 0)

    @property
    def threadgroup_params(self) -> list[ShaderParam]:
        return [p for p in self.params if p.binding == Binding.THREADGROUP]

    def costed_body(self):
        if self._costed_body is None:
            self._costed_body, _ = CodeGen(cost=True).compile_body(self.checked.body)
        return self._costed_body

    # ------------------------------------------------------------------ launch
    def launch(self, values: Mapping[int, np.ndarray], geometry: LaunchGeometry, *,
               dtypes: Mapping[int, str] | None = None, threadgroup_memory: Mapping[int, int] | None = None,
               unset: Collection[int] = (),
               sanitize: SanitizeMode | str = SanitizeMode.ERROR, max_steps: int | None = None,
               trace: bool | None = None, steps: bool = False, audience: Audience = Audience.CALLER,
               warned: set | None = None, cost: GpuModel | None = None) -> RunResult:
        """Run the kernel with ``values[i]`` bound to ``[[buffer(i)]]`` (``dtypes[i]`` names a
        dtype NumPy lacks, 'bfloat16' for float32 arrays holding bfloat values) and
        ``threadgroup_memory[i]`` bytes at ``[[threadgroup(i)]]``. ``unset`` lists buffers whose
        contents the host never set (allocated empty): reading them before a write is an
        uninitialised read, and elements no thread writes are reported. The run record's outputs
        are the final contents of the writable (device, non-const) buffers, in index order."""
        sanitize = sanitize_mode(sanitize)
        dtypes = dict(dtypes or {})
        threadgroup_memory = dict(threadgroup_memory or {})
        grid, tg = self._check_geometry(geometry)
        lanes = _lanes(grid, tg)
        ctx, recorder = start_run(self.checked, lanes, sanitize, max_steps, trace, steps, audience,
                                  HostApi.WHOLE_SHADER)
        written: list[tuple[ShaderParam, Memory]] = []
        read: list[tuple[ShaderParam, np.ndarray]] = []
        for p in self.buffers:
            assert p.index is not None
            if p.index not in values:
                raise ArgumentError(f"kernel '{self.host_name}' reads [[buffer({p.index})]] ('{p.name}') but no "
                                    f"argument was bound there ({len(values)} given)")
            mem = _buffer_memory(self.host_name, p, np.asarray(values[p.index]), dtypes.get(p.index))
            ctx.memories[p.name] = mem
            if p.binding == Binding.BUFFER:
                ctx.buffers[p.name] = Ptr(mem, np.int64(0))
            if p.writable:
                written.append((p, mem))
                if ctx.sanitizer is not None:  # the host's data (unless unset); races are watched
                    ctx.sanitizer.watch(mem, initialized=p.index not in unset)
            else:
                read.append((p, np.asarray(values[p.index])))
        for p in self.threadgroup_params:
            ctx.buffers[p.name] = Ptr(self._threadgroup_memory(p, threadgroup_memory, lanes, ctx), np.int64(0))
        every = attribute_values(lanes, grid, tg)
        for p in self.params:
            if p.binding == Binding.ATTRIBUTE:
                ctx.attrs[p.name] = _attribute_value(every[p.attribute or ""], p.ty)
                ctx.attribute_names[p.attribute or ""] = p.name
        bind_parameters(ctx, self.checked)
        bind_threadgroup_arrays(ctx, lanes, self.checked)
        stopped, cost_recorder = run_observed(ctx, lanes, self, cost, self.library.registry)
        if ctx.sanitizer is not None and stopped != StopReason.STEP_BUDGET:
            ctx.sanitizer.finish(ctx, [mem for p, mem in written if p.index in unset], None)
        tg_shapes = {v.name: _array_shape(v.ty) for v in self.checked.threadgroup_arrays}
        result = RunResult(
            outputs=[mem.values() for _, mem in written],
            counts=_counts(ctx, lanes, grid),
            findings=ctx.findings,
            generated_source=self.library.source,
            kernel_name=self.host_name,
            lanes=lanes,
            trace=recorder,
            grid=grid,
            threadgroup=tg,
            output_names=[p.name for p, _ in written],
            input_names=[p.name for p, _ in read],
            inputs=[a for _, a in read],
            threadgroup_shapes=tg_shapes,
            steps=ctx.stepper.steps if ctx.stepper is not None else None,
            source=self.library.source,
            stopped=stopped,
            cost=None if cost_recorder is None else cost_recorder.profile(tg[0] * tg[1] * tg[2], self.library.source),
        )
        return conclude(result, ctx, sanitize, warned, self.library.registry)

    def _check_geometry(self, geometry: LaunchGeometry) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        grid, tg = geometry.threads, geometry.group_size
        if any(g < 0 for g in grid):
            raise ArgumentError(f"threads {grid} has a negative size")
        if any(t <= 0 for t in tg):
            raise ArgumentError(f"group_size {tg} must be positive in every dimension")
        total = tg[0] * tg[1] * tg[2]
        if total > self.max_total_threads:
            raise ArgumentError(f"group_size {tg} has {total} threads; kernel '{self.host_name}' allows at most "
                                f"{self.max_total_threads} per threadgroup")
        # Groups wider than the grid hold no more threads than the grid has (as MLX launches do).
        tg = (max(1, min(tg[0], grid[0])), max(1, min(tg[1], grid[1])), max(1, min(tg[2], grid[2])))
        return grid, tg

    def _threadgroup_memory(self, p: ShaderParam, sizes: Mapping[int, int], lanes, ctx: Ctx) -> Memory:
        if p.index is None or p.index not in sizes:
            raise ArgumentError(f"kernel '{self.host_name}' takes threadgroup memory at [[threadgroup({p.index})]] "
                                f"('{p.name}'): give its size in bytes with threadgroup_memory={{{p.index}: nbytes}}")
        nbytes = int(sizes[p.index])
        elem = p.element
        if nbytes <= 0 or nbytes % size_of(elem):
            raise ArgumentError(f"threadgroup memory '{p.name}' needs a positive multiple of {size_of(elem)} bytes "
                                f"(sizeof({elem})), not {nbytes}")
        static = sum(size_of(v.ty) for v in self.checked.threadgroup_arrays)
        if nbytes + static > MAX_THREADGROUP_MEMORY:
            raise ArgumentError(f"threadgroup memory of {nbytes + static} bytes exceeds the {MAX_THREADGROUP_MEMORY} "
                                "bytes a threadgroup may use")
        ty = ArrayType(elem, nbytes // size_of(elem))
        mem = Memory(p.name, AddressSpace.THREADGROUP, storage_scalar(elem), nbytes, regions=lanes.n_groups,
                     lane_region=lanes.group, counted=Counted.SHARED, writable=True, ty=ty)
        ctx.memories[p.name] = mem
        if ctx.sanitizer is not None:
            ctx.sanitizer.watch(mem, initialized=False)
        return mem


# ---------------------------------------------------------------------------- compiling helpers
def _declared(ck: Checker, p: ast.Param, attribute) -> DeclaredParam:
    if p.name is None:
        raise CompileError("a kernel parameter needs a name", p.pos)
    ty = ck.types.resolve_type(p.type_spec)
    if isinstance(ty, PointerType) and p.type_spec.space is None and len(p.type_spec.pointers) == 1:
        raise CompileError(f"kernel parameter '{p.name}' needs an address space: 'device', 'constant' or "
                           "'threadgroup'", p.pos)
    return DeclaredParam(p.name, ty, p.type_spec.reference, None if attribute is None else attribute.name,
                         None if attribute is None else attribute.index, p.pos, p.type_spec.space,
                         p.type_spec.const)


def _role(p: ShaderParam) -> ParamRole:
    if p.binding == Binding.ATTRIBUTE:
        return ParamRole.ATTRIBUTE
    return ParamRole.OUTPUT if p.writable else ParamRole.INPUT


# ---------------------------------------------------------------------------- binding values
def _buffer_memory(kernel: str, p: ShaderParam, value: np.ndarray, dtype: str | None) -> Memory:
    """The memory behind a buffer or constant value, holding the argument's data."""
    elem = p.element
    if p.binding == Binding.CONSTANT_VALUE:
        space = AddressSpace.CONSTANT
    else:
        space = p.ty.space if isinstance(p.ty, PointerType) else (p.ref_space or AddressSpace.DEVICE)
    if value.dtype == np.complex64:  # a complex tensor is float2 pairs to the GPU
        value = np.ascontiguousarray(value).view(np.float32)
    if isinstance(elem, VoidType):
        return _untyped_memory(p, value, dtype, space)
    scalar = elem.elem if isinstance(elem, VectorType) else elem
    if isinstance(scalar, ScalarType):
        given = dtype or value.dtype.name
        wanted = _NAME_OF_SCALAR.get(scalar)
        if p.binding == Binding.CONSTANT_VALUE and value.ndim == 0:
            return _constant_scalar(kernel, p, value, given, space)
        if given != wanted and same_integer_bits(given, scalar):
            # int32 data in a uint* buffer: the GPU reads the same bits as the other signedness.
            value = np.ascontiguousarray(value).view(scalar.dtype)
        elif given != wanted:
            raise ArgumentError(f"kernel '{kernel}': argument {p.index} ('{p.name}', {written_type(p)}) holds {given} "
                                f"elements; the kernel reads {scalar} ({wanted}): pass a {wanted} array")
        return Memory.of_values(p.name, space, scalar, value.reshape(-1), counted=Counted.GLOBAL,
                                writable=p.writable, ty=ArrayType(elem, max(1, value.size // _components(elem))))
    # Bound as its bytes (an 'atomic<uint>' buffer over half data, as c10/metal/atomic.h declares it);
    # a bfloat16 array's bytes are its stored bits, not the float32 values it is held as.
    bits = bfloat_bits(value) if dtype == "bfloat16" else value
    raw = np.ascontiguousarray(bits).reshape(-1).view(np.uint8)
    if raw.size % size_of(elem):
        raise ArgumentError(f"kernel '{kernel}': argument {p.index} ('{p.name}', {written_type(p)}) has {raw.size} "
                            f"bytes, not a whole number of {elem} ({size_of(elem)} bytes each)")
    mem = Memory(p.name, space, storage_scalar(elem), raw.size, counted=Counted.GLOBAL, writable=p.writable,
                 ty=ArrayType(elem, raw.size // size_of(elem)) if raw.size > size_of(elem) else elem)
    mem.raw[: raw.size] = raw
    return mem


def _untyped_memory(p: ShaderParam, value: np.ndarray, dtype: str | None, space: AddressSpace) -> Memory:
    """The memory behind a 'void*' buffer: the argument's bytes, kept as its own elements so that
    traces and findings name them (a kernel reads it through a typed pointer it casts to)."""
    scalar = DTYPE_NAMES.get(dtype or value.dtype.name)
    if scalar is None:  # no Metal scalar of that dtype: plain bytes
        raw = np.ascontiguousarray(value).reshape(-1).view(np.uint8)
        return Memory.of_values(p.name, space, UCHAR, raw, counted=Counted.GLOBAL, writable=p.writable,
                                ty=ArrayType(UCHAR, max(1, raw.size)))
    flat = value.reshape(-1)
    return Memory.of_values(p.name, space, scalar, flat, counted=Counted.GLOBAL, writable=p.writable,
                            ty=ArrayType(scalar, max(1, flat.size)))


def _constant_scalar(kernel: str, p: ShaderParam, value: np.ndarray, given: str, space) -> Memory:
    """A number set as bytes (``setBytes``): PyTorch passes Python ints as int64 and floats as
    float32; the kernel reads its own type from those bytes, so only a kind or size that would
    read something else is refused."""
    scalar = p.element
    assert isinstance(scalar, ScalarType)
    source = DTYPE_NAMES.get(given)
    if source is None or (source.kind == "float") != (scalar.kind == "float") or source.size < scalar.size or \
            (source.kind == "float" and source.size != scalar.size):
        raise ArgumentError(f"kernel '{kernel}': argument {p.index} ('{p.name}', {written_type(p)}) is a {given} value; "
                            f"its bytes do not hold a {scalar}: pass a value of that type")
    raw = np.asarray(value, dtype=value.dtype).reshape(1).view(np.uint8)[: scalar.size]
    mem = Memory(p.name, space, scalar, scalar.size, counted=Counted.GLOBAL)
    mem.raw[: scalar.size] = raw
    return mem


def same_integer_bits(given: str, scalar: ScalarType) -> bool:
    source = DTYPE_NAMES.get(given)
    return (source is not None and source.kind == "int" and scalar.kind == "int" and source.size == scalar.size)


def _components(elem: Type) -> int:
    return elem.stride if isinstance(elem, VectorType) else 1


def written_type(p: ShaderParam) -> str:
    if isinstance(p.ty, PointerType):
        return f"{p.ty.space} {'const ' if p.ty.const else ''}{p.ty.pointee}*"
    return f"{p.ref_space or AddressSpace.CONSTANT} {'const ' if p.ref_const else ''}{p.ty}&"


def _attribute_value(value, ty: Type):
    """A thread attribute as the parameter declares it: its first components, in its type."""
    width = ty.n if isinstance(ty, VectorType) else 1
    elem = scalar_of(ty)  # attributes are integer scalars and vectors
    v = np.asarray(value)
    if v.ndim and v.shape[-1] == 3:  # a uint3 attribute
        v = v[..., :width] if width > 1 else v[..., 0]
    return v.astype(elem.dtype)


# ---------------------------------------------------------------------------- which kernel a launch means
def declares_kernels(source: str) -> bool:
    """Whether a source defines kernel functions (a whole shader) rather than being a kernel body."""
    try:
        tokens = Preprocessor(MAX_SHADER_EXPANSION_TOKENS).process(source, SHADER_FILE)
    except CompileError:
        return False
    return any(declares_kernel(item) for item in top_level_items(tokens))


def choose_kernel(library: ShaderLibrary, name: str, first_dtype: str | None) -> ShaderKernel:
    """The kernel a named launch means: the one with that host name; else the only kernel; else
    the instantiation for the first input's type, named as PyTorch's shaders name them
    (``name_float``, ``name_half``, ``name_bfloat``)."""
    names = library.kernel_names
    if name in names:
        return library.kernel(name)
    if first_dtype is not None:
        typed = f"{name}_{DTYPE_NAMES[first_dtype]}"
        if typed in names:
            return library.kernel(typed)
        if any(n.startswith(name + "_") for n in names):
            raise ArgumentError(f"the shader has no kernel '{typed}' for {first_dtype} inputs (kernels: "
                                f"{', '.join(names)}): instantiate the template for {DTYPE_NAMES[first_dtype]} with "
                                f'[[host_name("{typed}")]]')
    if len(names) == 1:
        return library.kernel(names[0])
    return library.kernel(name)  # the error names the kernels there are
