"""The reference solutions, installed as the package ``metal_puzzles.solutions``.

A folder per part of the book, named as the part's package under ``metal_puzzles/puzzles/``
(``part1/`` ... ``part5/``, ``debugging/``), holds each of its puzzles' solutions named by the
puzzle's id: a ``.metal`` file is a kernel body (or a whole shader); a ``.py`` file is a notebook
cell of a finale, read as text (it runs in the notebook's scope, not as a module).
``metal_puzzles.puzzles.catalogue.solution_files`` finds them with ``importlib.resources``,
whether the package is installed editable, from a wheel, an sdist or a git URL; setup.py maps this
folder into the package.
"""
