"""The installed package's version, as its metadata (``pyproject.toml``) gives it: one place."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("metal-puzzles")
except PackageNotFoundError:  # lib/ put on the path without installing: no metadata to read
    __version__ = "unknown"
