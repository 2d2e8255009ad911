"""``metal_kernel``: a drop-in for ``mx.fast.metal_kernel`` that runs on the simulator (or, when
asked and available, on the real GPU), and ``MetalKernel``, the puzzle wrapper of the original
Metal-Puzzles notebook.

This is the boundary between MLX and the NumPy-only simulator: MLX arrays and dtypes are
converted here and nowhere else.
"""

from __future__ import annotations

import ast
import inspect
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

import mlx.core as mx
import numpy as np

from ..msl import ArgumentError, Audience, CompileError, KernelRuntimeError, RunResult, simulate
from ..msl.abi.signature import InputDesc, check_names, normalize_dtype_name
from ..msl.api import cost_model
from ..msl.cuda import CudaTranslation, translate_kernel, translate_shader
from ..msl.program import NO_STEP_BUDGET, interrupted_message
from ..msl.shader_program import LaunchGeometry, ShaderLibrary, declares_kernels
from .buffer_binding import run_by_layout, run_by_names
from .cuda_backend import CudaBackendKernel
from .metal_backend import CUDA, METAL, MetalBackendKernel, resolve_backend

#: What a kernel's author got wrong (not the simulator): raised without the simulator's own frames.
KERNEL_ERRORS = (CompileError, KernelRuntimeError, ArgumentError)

_MX_DTYPES = {
    "bool": mx.bool_, "int8": mx.int8, "uint8": mx.uint8, "int16": mx.int16, "uint16": mx.uint16,
    "int32": mx.int32, "uint32": mx.uint32, "int64": mx.int64, "uint64": mx.uint64,
    "float16": mx.float16, "bfloat16": mx.bfloat16, "float32": mx.float32,
}


_MX_NAMES = {v: k for k, v in _MX_DTYPES.items()}


def dtype_name(dtype: Any) -> str:
    """NumPy-style name of an MLX or NumPy dtype ('float32', 'bfloat16', ...)."""
    if isinstance(dtype, mx.Dtype):
        if dtype not in _MX_NAMES:
            raise ValueError(f"dtype {dtype} cannot be used in a Metal kernel")
        return _MX_NAMES[dtype]
    return normalize_dtype_name(dtype)


def to_numpy(x: Any) -> tuple[Any, str | None]:
    """An input as the simulator takes it, plus a dtype override for bfloat16.

    MLX views keep their strides (``np.asarray`` shares the buffer), which is what
    ``ensure_row_contiguous=False`` kernels expect to see. NumPy has no bfloat16, so those
    arrays travel as float32 holding bfloat16 values.
    """
    if isinstance(x, mx.array):
        if x.dtype == mx.bfloat16:
            return np.asarray(x.astype(mx.float32)), "bfloat16"
        return np.asarray(x), None
    if isinstance(x, bool | int | float):
        return x, None
    return np.asarray(x), None


def to_mlx(arr: np.ndarray, dtype: str) -> mx.array:
    if dtype == "bfloat16":
        return mx.array(arr.astype(np.float32)).astype(mx.bfloat16)
    return mx.array(arr)


# ----------------------------------------------------------------------------- where the source was written
@dataclass(frozen=True)
class SourceOrigin:
    """The function that made a kernel, so that an error in its ``source`` or ``header`` string
    can also name the line in the learner's own code ('your cell, line 5') when the string is a
    literal written there. Looked up only when an error needs it."""

    code: CodeType

    def where(self, text: str, line: int) -> str:
        """' (your cell, line N)' for line ``line`` of ``text``, or '' when ``text`` is not a
        literal of this function (built at run time, or defined elsewhere)."""
        try:
            tree = ast.parse(inspect.getsource(self.code).expandtabs())
        except (OSError, TypeError, SyntaxError, ValueError):
            return ""
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value == text and node.end_lineno is not None:
                # Line k of the string sits k - 1 lines below the line its literal opens on, as long
                # as no escaped line break joins lines of the literal.
                if node.end_lineno - node.lineno != text.count("\n"):
                    return ""
                at = self.code.co_firstlineno + node.lineno - 1 + line - 1
                return f" ({_file_words(self.code.co_filename)}, line {at})"
        return ""


def _file_words(filename: str) -> str:
    """'your cell' for a notebook cell, else the file's name."""
    if "ipykernel_" in filename or filename.startswith("<ipython-input"):
        return "your cell"
    return os.path.basename(filename)


def caller_origin() -> SourceOrigin | None:
    """The nearest calling function outside this package (the learner's)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("metal_puzzles"):
        frame = frame.f_back
    if frame is None or frame.f_code.co_name == "<module>":
        return None  # a literal at a module's top level is not "a function the learner wrote"
    return SourceOrigin(frame.f_code)


class SimulatedKernel:
    """What ``metal_kernel`` returns: call it like the object ``mx.fast.metal_kernel`` returns.

    Besides MLX's keyword arguments it takes ``backend`` ('simulator', 'metal' or 'cuda', default from
    the METAL_PUZZLES_BACKEND environment variable, else 'simulator'), ``sanitize``, ``trace``
    and ``cost`` (a cost profile on a GPU model). ``sanitize='warn'`` (the default) shows what
    the sanitizer finds as Python warnings, each finding once per kernel object however often it
    is called, and returns the outputs as a GPU would: production kernels that run on GPUs keep
    running here. 'error' raises SanitizerError on an error finding (what puzzles and the grader
    use; notes never raise), 'off' does not look. The last simulator run is kept in ``last_run``
    (counts, trace, findings, cost profile) for diagrams; ``metal_puzzles.explore(kernel)`` opens
    the explorer on it.
    """

    def __init__(self, name: str, input_names: Sequence[str], output_names: Sequence[str], source: str,
                 header: str = "", ensure_row_contiguous: bool = True, atomic_outputs: bool = False,
                 compile_options: dict | None = None, origin: SourceOrigin | None = None,
                 whole_shaders: bool = False) -> None:
        try:  # odd names fail here, when the kernel is made, as they would make MLX's signature invalid
            check_names(input_names, output_names)
        except ValueError as exc:
            raise ArgumentError(str(exc)) from None
        self.name = name
        #: The function the source was written in, to point errors at the learner's own lines.
        self.origin = origin
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self.source = source
        self.header = header
        self.ensure_row_contiguous = ensure_row_contiguous
        self.atomic_outputs = atomic_outputs
        self.compile_options = compile_options
        self.last_run: RunResult | None = None
        self.last_call: dict | None = None
        self._warned: set = set()  # findings already shown as warnings (once per kernel)
        self._metal: MetalBackendKernel | None = None
        self._cuda: CudaBackendKernel | None = None
        #: The book's MetalKernel also takes a whole kernel function (MLX's drop-in refuses one, as MLX does).
        self.whole_shaders = whole_shaders
        self._shader: ShaderLibrary | None = None

    def __call__(self, *, inputs: Sequence[Any], output_shapes: Sequence[Sequence[int]],
                 output_dtypes: Sequence[Any], grid: Sequence[int], threadgroup: Sequence[int],
                 template: Sequence[tuple[str, Any]] | None = None, init_value: float | None = None,
                 verbose: bool = False, stream: Any = None, backend: str | None = None,
                 sanitize: str = "warn", trace: bool | None = None, max_steps: int | None = None,
                 cost: Any = None) -> list[mx.array]:
        __tracebackhide__ = True  # IPython and pytest show the learner's frames, not ours
        chosen = resolve_backend(backend)
        if chosen == CUDA:
            return self._run_cuda(inputs=inputs, output_shapes=output_shapes, output_dtypes=output_dtypes,
                                  grid=grid, threadgroup=threadgroup, template=template, init_value=init_value,
                                  verbose=verbose, stream=stream)
        if chosen == METAL:
            return self._run_metal(inputs=inputs, output_shapes=output_shapes, output_dtypes=output_dtypes,
                                   grid=grid, threadgroup=threadgroup, template=template, init_value=init_value,
                                   verbose=verbose, stream=stream)
        result = self.run(inputs=inputs, output_shapes=output_shapes, output_dtypes=output_dtypes, grid=grid,
                          threadgroup=threadgroup, template=template, init_value=init_value, verbose=verbose,
                          sanitize=sanitize, trace=trace, max_steps=max_steps, cost=cost)
        return [to_mlx(o, dtype_name(d)) for o, d in zip(result.outputs, output_dtypes, strict=True)]

    def run(self, *, inputs: Sequence[Any], output_shapes: Sequence[Sequence[int]], output_dtypes: Sequence[Any],
            grid: Sequence[int], threadgroup: Sequence[int], template: Sequence[tuple[str, Any]] | None = None,
            init_value: float | None = None, verbose: bool = False, sanitize: str = "warn",
            trace: bool | None = None, max_steps: int | None = None, steps: bool = False, cost: Any = None,
            audience: Audience = Audience.CALLER, buffer_layout: Sequence[str] | None = None) -> RunResult:
        """Run on the simulator and return the full run record (outputs as NumPy arrays).
        ``audience`` is who reads the findings (a puzzle's learner cannot change the launch).
        ``cost`` asks for a cost profile in ``RunResult.cost`` (True: the default GPU model,
        Apple M1; or a model's name such as 'M3 Max' or 'H100'). ``buffer_layout`` (whole
        shaders): the input and output names in the order a host binds them, [[buffer(0)]]
        first; without it each array is bound to the buffer parameter of its name.

        A kernel that does not compile, a bad launch or a run stopped by its findings raises the
        simulator's error without the simulator's frames: the mistake is the kernel author's.
        """
        __tracebackhide__ = True
        self.last_call = dict(inputs=inputs, output_shapes=output_shapes, output_dtypes=output_dtypes, grid=grid,
                              threadgroup=threadgroup, template=template, init_value=init_value, max_steps=max_steps)
        arrays, overrides = zip(*(to_numpy(x) for x in inputs), strict=True) if inputs else ((), ())
        # MLX dtypes become names here; any other value is checked by the simulator as MLX checks it.
        tmpl = [(n, dtype_name(v) if isinstance(v, mx.Dtype) else v) for n, v in (template or [])]
        try:
            if self.whole_shaders and declares_kernels(self.source):
                result = self._run_shader(arrays, overrides, output_shapes, output_dtypes, grid, threadgroup,
                                          init_value, buffer_layout, sanitize=sanitize, trace=trace, steps=steps, audience=audience,
                                          max_steps=NO_STEP_BUDGET if max_steps is None else max_steps,
                                          warned=self._warned, cost=cost_model(cost))
                self.last_run = result
                return result
            result = simulate(
                self.name, self.input_names, self.output_names, self.source, self.header,
                inputs=list(arrays), output_shapes=[tuple(s) for s in output_shapes],
                output_dtypes=[dtype_name(d) for d in output_dtypes], grid=tuple(grid),
                threadgroup=tuple(threadgroup), template=tmpl, init_value=init_value,
                atomic_outputs=self.atomic_outputs, ensure_row_contiguous=self.ensure_row_contiguous,
                verbose=verbose, input_dtypes=list(overrides), sanitize=sanitize, trace=trace,
                max_steps=NO_STEP_BUDGET if max_steps is None else max_steps,
                steps=steps, audience=audience, warned=self._warned, cost=cost)
        except KERNEL_ERRORS as err:
            raise self._in_learners_code(err).with_traceback(None) from None
        except KeyboardInterrupt:
            raise KeyboardInterrupt(interrupted_message(self.name, max_steps)) from None
        self.last_run = result
        return result

    def _run_shader(self, arrays, overrides, output_shapes, output_dtypes, grid, threadgroup, init_value,
                    buffer_layout: Sequence[str] | None, **options: Any) -> RunResult:
        """A whole kernel function (header and source together form the shader): each input and
        output is bound at its index in ``buffer_layout``, as a host binds them, or without one
        to the buffer parameter of its name."""
        if self._shader is None:
            self._shader = ShaderLibrary(self.source, self.header)
        inputs = {n: np.asarray(a) for n, a in zip(self.input_names, arrays, strict=True)}
        dtypes = {n: o or dtype_name(np.asarray(a).dtype) for n, a, o in zip(self.input_names, arrays, overrides,
                                                                             strict=True)}
        outputs = {n: (tuple(s), dtype_name(d)) for n, s, d in zip(self.output_names, output_shapes, output_dtypes,
                                                                  strict=True)}
        geometry = LaunchGeometry(tuple(grid), tuple(threadgroup))
        if buffer_layout is not None:
            return run_by_layout(self._shader, self.name, buffer_layout, inputs, dtypes, outputs, geometry, init_value,
                                 **options)
        return run_by_names(self._shader, self.name, inputs, dtypes, outputs, geometry, init_value, **options)

    def shader_library(self) -> ShaderLibrary:
        """The whole shader this kernel's source (and header) make, compiled once: a pipeline of its
        kernels launches them from it one by one. A compile error names the learner's line."""
        if self._shader is None:
            try:
                self._shader = ShaderLibrary(self.source, self.header)
            except KERNEL_ERRORS as err:
                raise self._in_learners_code(err).with_traceback(None) from None
        return self._shader

    def to_cuda(self, *, inputs: Sequence[Any], output_shapes: Sequence[Sequence[int]] | None = None,
                output_dtypes: Sequence[Any], template: Sequence[tuple[str, Any]] | None = None) -> CudaTranslation:
        """The kernel translated to CUDA C++ for these inputs, output dtypes and template (one
        instance, as MLX compiles one per call): ``.unit`` for NVRTC or CuPy, ``.body`` and
        ``.header`` for ``mx.fast.cuda_kernel`` (see ``metal_puzzles.msl.cuda.CudaTranslation``).
        ``output_shapes`` is taken for symmetry with a call; a translation does not depend on it.
        A construct with no faithful CUDA form is a compile error naming its line."""
        __tracebackhide__ = True
        arrays, overrides = zip(*(to_numpy(x) for x in inputs), strict=True) if inputs else ((), ())
        descs = []
        for n, a, o in zip(self.input_names, arrays, overrides, strict=True):
            arr = np.asarray(a)
            descs.append(InputDesc(n, o or dtype_name(arr.dtype), arr.ndim, int(arr.size)))
        tmpl = [(n, dtype_name(v) if isinstance(v, mx.Dtype) else v) for n, v in (template or [])]
        if self.whole_shaders and declares_kernels(self.source):
            found = translate_shader(self.shader_library())
            if self.name not in found:
                raise ArgumentError(f"the shader has no kernel named '{self.name}' (kernels: {', '.join(found)})")
            return found[self.name]
        try:
            return translate_kernel(self.name, self.input_names, self.output_names, self.source, self.header, descs,
                                    [dtype_name(d) for d in output_dtypes], tmpl, self.atomic_outputs)
        except KERNEL_ERRORS as err:
            raise self._in_learners_code(err).with_traceback(None) from None

    def _in_learners_code(self, err: Exception) -> Exception:
        """A compile error that also names the line in the learner's code, when it can."""
        if not isinstance(err, CompileError) or self.origin is None or err.pos.file not in ("source", "header"):
            return err
        text = self.source if err.pos.file == "source" else self.header
        where = self.origin.where(text, err.pos.line)
        return err.located(where) if where else err

    def replay(self, **options: Any) -> RunResult:
        """Run the last call again on the simulator, with other options (``trace=True``,
        ``steps=True``, ``sanitize='warn'``...): what the explorer shows."""
        if self.last_call is None:
            raise RuntimeError("call the kernel once before replaying (or exploring) it")
        return self.run(**{**self.last_call, **options})

    def _run_cuda(self, **call: Any) -> list[mx.array]:
        """On an NVIDIA GPU through mx.fast.cuda_kernel: the kernel translated to CUDA (``to_cuda``)."""
        if self._cuda is None:
            self._cuda = CudaBackendKernel(self.name, self.input_names, self.output_names, self.to_cuda,
                                           self.ensure_row_contiguous)
        call = {k: v for k, v in call.items() if v is not None or k in ("init_value",)}
        return self._cuda(**call)

    def _run_metal(self, **call: Any) -> list[mx.array]:
        if self._metal is None:
            self._metal = MetalBackendKernel(self.name, self.input_names, self.output_names, self.source,
                                             self.header, self.ensure_row_contiguous, self.atomic_outputs)
        call = {k: v for k, v in call.items() if v is not None or k in ("init_value",)}
        return self._metal(**call)


def metal_kernel(name: str, input_names: Sequence[str], output_names: Sequence[str], source: str,
                 header: str = "", ensure_row_contiguous: bool = True, atomic_outputs: bool = False,
                 compile_options: dict | None = None) -> SimulatedKernel:
    """Drop-in for ``mx.fast.metal_kernel`` (MLX 0.32 arguments) running on the simulator."""
    return SimulatedKernel(name, input_names, output_names, source, header, ensure_row_contiguous,
                           atomic_outputs, compile_options, origin=caller_origin())


@dataclass
class MetalKernel:
    """The puzzle wrapper: holds a kernel's definition.

    ``kernel(inputs=..., output_shapes=..., ...)`` runs it; ``kernel()`` returns a callable that
    takes those arguments (the original notebook's style).
    """

    name: str
    input_names: list[str]
    output_names: list[str]
    source: str
    header: str = ""
    ensure_row_contiguous: bool = True
    atomic_outputs: bool = False
    _kernel: SimulatedKernel | None = field(default=None, init=False, repr=False, compare=False)
    #: The function that made this kernel (the learner's), for errors that name its lines.
    _origin: SourceOrigin | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:  # as metal_kernel(...) does: odd names are an error when the kernel is made
            check_names(self.input_names, self.output_names)
        except ValueError as exc:
            raise ArgumentError(str(exc)) from None
        self._origin = caller_origin()

    @property
    def kernel(self) -> SimulatedKernel:
        if self._kernel is None:
            self._kernel = SimulatedKernel(self.name, self.input_names, self.output_names, self.source, self.header,
                                           self.ensure_row_contiguous, self.atomic_outputs, origin=self._origin,
                                           whole_shaders=True)
        return self._kernel

    def __call__(self, *args: Any, **kwargs: Any):
        __tracebackhide__ = True
        if not args and not kwargs:
            return self.kernel
        if args:
            raise TypeError("MetalKernel takes keyword arguments (inputs=..., output_shapes=..., ...)")
        return self.kernel(**kwargs)

    def to_cuda(self, **kwargs: Any) -> CudaTranslation:
        """The kernel translated to CUDA C++ (``SimulatedKernel.to_cuda``)."""
        __tracebackhide__ = True
        return self.kernel.to_cuda(**kwargs)
