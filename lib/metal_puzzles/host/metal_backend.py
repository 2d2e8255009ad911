"""The thin path that runs a learner's kernel on a real GPU through ``mx.fast.metal_kernel``.

Everything runs in the simulator by default, on every machine. Real Metal is used only when
asked for, because it needs Apple silicon and gives none of the simulator's counts or checks.

Backend selection (see :func:`resolve_backend`):

1. a ``backend=`` keyword (``"metal"``, ``"cuda"`` or ``"simulator"``) wins when given;
2. otherwise the environment variable ``METAL_PUZZLES_BACKEND`` (same values, case and
   surrounding blanks ignored, empty means unset);
3. otherwise ``"simulator"``.

Asking for ``"metal"`` where ``mx.metal.is_available()`` is False raises RuntimeError saying so;
it never falls back silently, so a learner who believes the GPU checked the kernel is not misled.

:class:`MetalBackendKernel` adds nothing to MLX: it creates ``mx.fast.metal_kernel`` lazily with
exactly the constructor's keyword arguments and forwards each call's MLX keyword arguments
unchanged. The factory is injectable so tests can record what would reach MLX on any machine.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

BACKEND_ENV_VAR = "METAL_PUZZLES_BACKEND"
SIMULATOR = "simulator"
METAL = "metal"
#: An NVIDIA GPU through MLX's CUDA back end (host/cuda_backend.py), the kernel translated to CUDA.
CUDA = "cuda"
BACKENDS = (SIMULATOR, METAL, CUDA)
DEFAULT_BACKEND = SIMULATOR

#: The keyword arguments MLX 0.32's kernel call accepts, in its order.
CALL_ARGUMENTS = (
    "inputs",
    "output_shapes",
    "output_dtypes",
    "grid",
    "threadgroup",
    "template",
    "init_value",
    "verbose",
    "stream",
)

KernelFactory = Callable[..., Callable[..., Any]]


def metal_available() -> bool:
    """True when mlx imports and reports a usable Metal device."""
    try:
        import mlx.core as mx
    except ImportError:
        return False
    return bool(mx.metal.is_available())


def cuda_available() -> bool:
    """True when mlx imports and reports a usable CUDA device (MLX's CUDA back end)."""
    try:
        import mlx.core as mx
    except ImportError:
        return False
    cuda = getattr(mx, "cuda", None)
    return bool(cuda is not None and cuda.is_available())


def cuda_unavailable_error(requested_by: str) -> RuntimeError:
    return RuntimeError(
        f"The CUDA backend was requested ({requested_by}), but mx.cuda.is_available() is False on this "
        "machine (it needs Linux, an NVIDIA GPU of SM 7.5 or newer and pip install \"metal-puzzles[cuda12]\" "
        f"or \"[cuda13]\"). Use the simulator backend (backend='{SIMULATOR}' or unset {BACKEND_ENV_VAR}).")


def _metal_unavailable_error(requested_by: str) -> RuntimeError:
    return RuntimeError(
        f"The Metal backend was requested ({requested_by}), but mx.metal.is_available() is "
        "False on this machine, so there is no GPU to run on. Use the simulator backend "
        f"(backend='{SIMULATOR}' or unset {BACKEND_ENV_VAR}), or run on a Mac with Metal."
    )


def _parse_backend(value: str, origin: str) -> str:
    choice = value.strip().lower()
    if choice not in BACKENDS:
        raise ValueError(f"unknown backend {value!r} from {origin}; choose one of {BACKENDS}")
    return choice


def resolve_backend(backend: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """Return ``"simulator"``, ``"metal"`` or ``"cuda"`` following the rule in the module docstring.

    ``environ`` defaults to ``os.environ``. Raises ValueError for an unknown name and
    RuntimeError when Metal is chosen but unavailable.
    """
    env = os.environ if environ is None else environ
    if backend is not None:
        choice, origin = _parse_backend(backend, "the backend= keyword"), f"backend={backend!r}"
    elif env.get(BACKEND_ENV_VAR, "").strip():
        raw = env[BACKEND_ENV_VAR]
        choice = _parse_backend(raw, f"the {BACKEND_ENV_VAR} environment variable")
        origin = f"{BACKEND_ENV_VAR}={raw}"
    else:
        return DEFAULT_BACKEND
    if choice == METAL and not metal_available():
        raise _metal_unavailable_error(origin)
    if choice == CUDA and not cuda_available():
        raise cuda_unavailable_error(origin)
    return choice


class MetalBackendKernel:
    """A kernel that runs through ``mx.fast.metal_kernel`` on a real GPU.

    Construction is cheap and never touches mlx; the MLX kernel is made on the first call, with
    the seven keyword arguments below and nothing else. ``factory`` replaces
    ``mx.fast.metal_kernel`` (tests pass a recording stand-in); with the default factory the first
    call raises RuntimeError when Metal is unavailable, before MLX's own less helpful error.
    """

    def __init__(
        self,
        name: str,
        input_names: Sequence[str],
        output_names: Sequence[str],
        source: str,
        header: str = "",
        ensure_row_contiguous: bool = True,
        atomic_outputs: bool = False,
        *,
        factory: KernelFactory | None = None,
    ) -> None:
        self.name = name
        self.input_names = input_names
        self.output_names = output_names
        self.source = source
        self.header = header
        self.ensure_row_contiguous = ensure_row_contiguous
        self.atomic_outputs = atomic_outputs
        self._factory = factory
        self._kernel: Callable[..., Any] | None = None

    def constructor_kwargs(self) -> dict[str, Any]:
        """The keyword arguments handed to ``mx.fast.metal_kernel``, as given to us."""
        return {
            "name": self.name,
            "input_names": self.input_names,
            "output_names": self.output_names,
            "source": self.source,
            "header": self.header,
            "ensure_row_contiguous": self.ensure_row_contiguous,
            "atomic_outputs": self.atomic_outputs,
        }

    def _resolve_factory(self) -> KernelFactory:
        if self._factory is not None:
            return self._factory
        if not metal_available():
            raise _metal_unavailable_error("a MetalBackendKernel was called")
        import mlx.core as mx

        # MLX's stub types the kernel metal_kernel makes as 'object'; it is the callable a kernel is.
        return mx.fast.metal_kernel  # type: ignore[return-value]

    def kernel(self) -> Callable[..., Any]:
        """The MLX kernel object, created on first use and then reused (MLX caches by source)."""
        if self._kernel is None:
            self._kernel = self._resolve_factory()(**self.constructor_kwargs())
        return self._kernel

    def __call__(self, **kwargs: Any) -> Any:
        """Run on the GPU; ``kwargs`` use MLX's names and reach MLX untouched.

        Unknown names raise TypeError here (listing the accepted ones) so a typo is not reported
        as an opaque nanobind signature mismatch. Missing or ill-typed arguments are MLX's to
        reject.
        """
        unknown = sorted(set(kwargs) - set(CALL_ARGUMENTS))
        if unknown:
            raise TypeError(
                f"unexpected keyword argument(s) {unknown} for a Metal kernel call; "
                f"accepted: {', '.join(CALL_ARGUMENTS)}"
            )
        return self.kernel()(**kwargs)
