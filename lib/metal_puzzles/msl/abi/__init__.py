"""MLX's side of a custom kernel: the signature ``mx.fast.metal_kernel`` generates around a body
(parameters, names, template instantiation, ``verbose`` text) and the utility header it prepends."""
