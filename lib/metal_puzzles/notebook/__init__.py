"""The notebook's face: what a learner calls in the book (``MetalProblem``, ``GradProblem``,
``explore``, ``progress``), ``show()``'s tables, the book's images and the commands that put the
book where a learner works (``metal-puzzles init | lab | notebook``). The book itself is package
data in ``metal_puzzles/notebooks/``."""
