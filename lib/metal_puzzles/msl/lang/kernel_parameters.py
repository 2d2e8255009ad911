"""What a kernel's parameters can carry, as the Metal language defines it: the thread attributes
(``[[thread_position_in_grid]]`` and the others, with their types) and the role each parameter of a
kernel plays (an input, an output, an input's shape, a thread attribute). The front end declares
kernel parameters by these and the ABIs (MLX's generated signature, a whole shader's declared one)
make them; neither depends on the other for it."""

from __future__ import annotations

from ...compat import StrEnum

#: The thread attributes MLX knows, with their parameter types, in the order MLX appends them
#: (the order of its table, which is alphabetical).
METAL_ATTRIBUTES: tuple[tuple[str, str], ...] = (
    ("dispatch_quadgroups_per_threadgroup", "uint"),
    ("dispatch_simdgroups_per_threadgroup", "uint"),
    ("dispatch_threads_per_threadgroup", "uint3"),
    ("grid_origin", "uint3"),
    ("grid_size", "uint3"),
    ("quadgroup_index_in_threadgroup", "uint"),
    ("quadgroups_per_threadgroup", "uint"),
    ("simdgroup_index_in_threadgroup", "uint"),
    ("simdgroups_per_threadgroup", "uint"),
    ("thread_execution_width", "uint"),
    ("thread_index_in_quadgroup", "uint"),
    ("thread_index_in_simdgroup", "uint"),
    ("thread_index_in_threadgroup", "uint"),
    ("thread_position_in_grid", "uint3"),
    ("thread_position_in_threadgroup", "uint3"),
    ("threadgroup_position_in_grid", "uint3"),
    ("threadgroups_per_grid", "uint3"),
    ("threads_per_grid", "uint3"),
    ("threads_per_simdgroup", "uint"),
    ("threads_per_threadgroup", "uint3"),
)


class ParamRole(StrEnum):
    """What a generated parameter carries."""

    INPUT = "input"
    OUTPUT = "output"
    SHAPE = "shape"  # <input>_shape
    STRIDES = "strides"  # <input>_strides
    NDIM = "ndim"  # <input>_ndim
    ATTRIBUTE = "attribute"  # a thread attribute such as thread_position_in_grid


__all__ = ["METAL_ATTRIBUTES", "ParamRole"]
