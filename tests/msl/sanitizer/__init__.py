"""Corpus for the simulator's GPU sanitizer: planted bugs per finding kind, correct kernels
that must stay silent, and the error / warn / off modes."""
