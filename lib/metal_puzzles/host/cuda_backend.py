"""The thin path that runs a kernel on an NVIDIA GPU through MLX's ``mx.fast.cuda_kernel``.

As with real Metal (``metal_backend``), the simulator stays the default: the GPU is used only
when asked for (``backend="cuda"`` or ``METAL_PUZZLES_BACKEND=cuda``), and asking for it where
``mx.cuda.is_available()`` is False raises RuntimeError, never falls back silently.

The kernel's Metal source is translated to CUDA by the simulator's front end (``to_cuda``), once
per instance (input dtypes and sizes, output dtypes, template), and handed to ``cuda_kernel``
with the same input and output names; the Metal grid reaches it as three template constants and
the threadgroup as MLX's block (shrunk to the grid, as Metal does). The factory is injectable so
tests can record what would reach MLX on a machine with no GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..msl.cuda import CudaTranslation, launch_dims
from .metal_backend import CALL_ARGUMENTS, KernelFactory, cuda_available, cuda_unavailable_error

#: Translates a call's inputs, output dtypes and template (the drop-in's ``to_cuda``).
Translator = Callable[..., CudaTranslation]


class CudaBackendKernel:
    """A kernel that runs through ``mx.fast.cuda_kernel``: translated once per instance, the MLX
    kernel made once per translation (MLX caches its NVRTC compile by source)."""

    def __init__(self, name: str, input_names: Sequence[str], output_names: Sequence[str], translate: Translator,
                 ensure_row_contiguous: bool = True, *, factory: KernelFactory | None = None) -> None:
        self.name = name
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self.translate = translate
        self.ensure_row_contiguous = ensure_row_contiguous
        self._factory = factory
        self._kernels: dict[tuple[str, str], Callable[..., Any]] = {}
        #: The last call's translation (what ran on the GPU).
        self.last_translation: CudaTranslation | None = None

    def _resolve_factory(self) -> KernelFactory:
        if self._factory is not None:
            return self._factory
        if not cuda_available():
            raise cuda_unavailable_error("a CudaBackendKernel was called")
        import mlx.core as mx

        # MLX's stub types the kernel cuda_kernel makes as 'object'; it is the callable a kernel is.
        return mx.fast.cuda_kernel  # type: ignore[return-value]

    def __call__(self, **kwargs: Any) -> Any:
        unknown = sorted(set(kwargs) - set(CALL_ARGUMENTS))
        if unknown:
            raise TypeError(f"unexpected keyword argument(s) {unknown} for a CUDA kernel call; "
                            f"accepted: {', '.join(CALL_ARGUMENTS)}")
        template = list(kwargs.pop("template", None) or [])
        tr = self.translate(inputs=kwargs["inputs"], output_shapes=kwargs["output_shapes"],
                            output_dtypes=kwargs["output_dtypes"], template=template)
        grid, threadgroup = kwargs["grid"], kwargs["threadgroup"]
        tr.check_launch(grid, threadgroup)
        _, threads = launch_dims(grid, threadgroup)
        key = (tr.body, tr.header)
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = self._resolve_factory()(
                name=self.name, input_names=self.input_names, output_names=self.output_names, source=tr.body,
                header=tr.header, ensure_row_contiguous=self.ensure_row_contiguous)
        self.last_translation = tr
        gx, gy, gz = (list(grid) + [1, 1])[:3]
        kwargs["threadgroup"] = threads
        kwargs["template"] = template + [(n, v) for n, v in tr.cuda_template((gx, gy, gz), [])]
        return kernel(**kwargs)
