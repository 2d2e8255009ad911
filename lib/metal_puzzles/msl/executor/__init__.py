"""The executor: a checked tree compiled to closures (``codegen``) that run every thread of the
grid in lock-step over NumPy arrays (``runtime``: lanes, masks, frames, counting, bounds checks),
reading and writing simulated memory (``memory``)."""
