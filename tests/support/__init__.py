"""Modules the tests in every folder of tests/ share, and that benchmarks/ scripts import too (pytest
puts tests/ on sys.path, and the scripts put it there themselves): ``from support.paths import ...``."""
