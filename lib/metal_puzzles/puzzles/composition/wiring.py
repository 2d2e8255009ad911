"""The reference wiring of the finale: forward and backward launchers composed into an
``mx.custom_function`` with a vjp, so ``mx.grad`` flows through the kernels. The finale's
entries use it to grade learners' kernels, and ``metal_puzzles.ops`` to build its operations
on the reference kernels."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import mlx.core as mx

from .launchers import (
    run_mvmr,
    run_mvmr_backward_b,
    run_segment_sum,
    run_segment_sum_backward,
    run_vvor,
)

#: The gradients of a differentiable operation from its arguments (``primals``, a tuple) and the
#: cotangent of its output: one per argument, in order (zeros for an index array, None for an int).
Vjp = Callable[[tuple[Any, ...], mx.array], tuple[Any, ...]]


def differentiable(forward: Callable[..., mx.array], vjp: Vjp) -> Callable[..., mx.array]:
    """``forward`` as an ``mx.custom_function`` whose vector-Jacobian product is ``vjp``, so that
    ``mx.grad`` and ``mx.vjp`` go through kernels MLX cannot differentiate itself. The one place the
    wiring of a kernel's backward pass is written (this module's operations and ``metal_puzzles.ops``)."""
    op = mx.custom_function(forward)

    @op.vjp
    def op_vjp(primals: tuple[Any, ...], cotangent: mx.array, output: mx.array) -> tuple[Any, ...]:
        return vjp(primals, cotangent)

    # MLX's stub types a call of a custom_function as returning object; it returns what ``forward``
    # does, an array.
    return cast(Callable[..., mx.array], op)


def build_mvmr(forward: Callable, da: Callable, db: Callable) -> Callable:
    """MVMR as an ``mx.custom_function`` from three launch functions.

    ``forward(a, a_idx, b, b_idx, o_idx, n)`` computes o; ``da(...)`` is a VVOR launch and
    ``db(...)`` a transposed-MVMR launch, called with the arguments DESIGN §6 gives them.
    """

    def mvmr_vjp(primals: tuple[Any, ...], cotangent: mx.array) -> tuple[Any, ...]:
        a, a_idx, b, b_idx, o_idx, n = primals
        # da[a_idx[t], g, c, m] += b[b_idx[t], g, c] * do[o_idx[t], g, m]: a VVOR with (C, M) as (M, C).
        grad_a = da(b, b_idx, cotangent, o_idx, a_idx, a.shape[0])
        # db[b_idx[t], g, c] += sum_m do[o_idx[t], g, m] * a[a_idx[t], g, c, m]: MVMR with a transposed.
        grad_b = db(a, a_idx, cotangent, o_idx, b_idx, b.shape[0])
        # MLX lines gradients up with the array arguments: index arrays get zeros, not None.
        return grad_a, mx.zeros_like(a_idx), grad_b, mx.zeros_like(b_idx), mx.zeros_like(o_idx), None

    return differentiable(forward, mvmr_vjp)


def build_segment_sum(forward: Callable, backward: Callable) -> Callable:
    """Segment sum as an ``mx.custom_function``: ``forward(x, lengths, offsets)`` and
    ``backward(dy, lengths, offsets, rows)`` are launch functions."""

    def segment_sum_vjp(primals: tuple[Any, ...], cotangent: mx.array) -> tuple[Any, ...]:
        x, lengths = primals
        return backward(cotangent, lengths, exclusive_scan(lengths), x.shape[0]), mx.zeros_like(lengths)

    return differentiable(lambda x, lengths: forward(x, lengths, exclusive_scan(lengths)), segment_sum_vjp)


def exclusive_scan(lengths: mx.array) -> mx.array:
    """Where each segment starts (int32)."""
    return (mx.cumsum(lengths) - lengths).astype(mx.int32)


def _bind(launcher: Callable, kernel: Any, **options: Any) -> Callable:
    return lambda *args: launcher(kernel, *args, **options)


def mvmr_from_kernels(forward: Any, vvor: Any, backward_b: Any, **options: Any) -> Callable:
    """The reference wiring around II.7b's, II.8's and II.9's kernels (or notebook functions)."""
    return build_mvmr(_bind(run_mvmr, forward, **options), _bind(run_vvor, vvor, **options),
                      _bind(run_mvmr_backward_b, backward_b, **options))


def segment_sum_from_kernels(forward: Any, backward: Any, **options: Any) -> Callable:
    """The reference wiring around II.4's and II.6's kernels (or notebook functions)."""
    return build_segment_sum(_bind(run_segment_sum, forward, **options),
                             _bind(run_segment_sum_backward, backward, **options))


def mvmr_wire(kernels: Mapping[str, Any], **options: Any) -> Callable:
    """MVMR wired from kernels by name (``mvmr``, ``vvor``, ``mvmr_backward_b``)."""
    return mvmr_from_kernels(kernels["mvmr"], kernels["vvor"], kernels["mvmr_backward_b"], **options)


def segment_sum_wire(kernels: Mapping[str, Any], **options: Any) -> Callable:
    """Segment sum wired from kernels by name (``segment_sum``, ``segment_sum_backward``)."""
    return segment_sum_from_kernels(kernels["segment_sum"], kernels["segment_sum_backward"], **options)
