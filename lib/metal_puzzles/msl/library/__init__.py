"""The Metal standard library as the simulator knows it: every builtin function and constant,
each with its type rule (used by the checker) and its vectorised implementation (used by the
executor)."""
