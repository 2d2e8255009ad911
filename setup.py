"""Only what pyproject.toml cannot say: the package list.

The reference solutions are read where people read them, in the top-level solutions/ folder, and
installed as the package ``metal_puzzles.solutions`` (package data, found with importlib.resources).
A package that lives outside lib/ needs a ``package_dir`` entry of its own, and pyproject.toml's
``packages.find`` cannot add one to what it finds; everything else is configured in pyproject.toml.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages("lib"), "metal_puzzles.solutions"],
    package_dir={"": "lib", "metal_puzzles.solutions": "solutions"},
)
