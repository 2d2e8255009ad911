"""What every stage of the simulator shares: source positions and diagnostics (``errors``), the
MSL type system with C's conversions (``types``) and C/Metal value semantics on NumPy arrays
(``values``: casts, rounding, integer division)."""
