"""The reference solutions, installed as the package ``metal_puzzles.solutions``.

Each ``.metal`` file is a kernel body; each ``.py`` file is a notebook cell of the finale, read as
text (it runs in the notebook's scope, not as a module). ``metal_puzzles.puzzles.solutions``
finds them with ``importlib.resources``, whether the package is installed editable, from a wheel,
an sdist or a git URL; setup.py maps this folder into the package.
"""
