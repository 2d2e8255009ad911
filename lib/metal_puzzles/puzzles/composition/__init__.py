"""The learner's kernels used as parts of larger programs: launched from Python as MLX would
(``launchers``), wired into differentiable operations (``wiring``), and run as the stages of a
tiny transformer's decode step (``decode_model``)."""
