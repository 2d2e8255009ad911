"""Modules that tests in several folders of tests/ share, and that benchmarks/ scripts import too
(pytest puts tests/ on sys.path; a script puts it there itself): ``from support.msl_snippets import ...``."""
