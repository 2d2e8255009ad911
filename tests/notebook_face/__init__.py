"""The tests of the package's ``notebook/`` (the notebook's face). Not ``tests/notebook/``: pytest
puts ``tests/`` on ``sys.path``, where that folder would be the package ``notebook`` and hide
Jupyter's Notebook 7 (``tests/codebase/test_test_packages.py``)."""
