"""The host boundary: what a host API hands the simulator. ``kernel`` is MLX's
(``metal_kernel``, ``MetalKernel``), ``shader_library`` PyTorch's (``compile_shader``), ``arrays``
turns host arrays into NumPy views, ``metal_backend`` is the thin path to real Metal on a Mac."""
