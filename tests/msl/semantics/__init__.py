"""Semantics suite for the MSL simulator: every expected value is known independently
(by hand, by C rules spelled out in NumPy, or by well-known constants), never by asking
the simulator itself."""
