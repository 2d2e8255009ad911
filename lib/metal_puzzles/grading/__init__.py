"""Grading: find each puzzle's kernel in a notebook by static analysis (a submission's Python is
never executed), check it in the simulator in worker processes with limits, and write a
gradebook, a JSON record and a report per student."""

from .extract import ExtractedKernel, NotebookKernels, extract_kernels
from .grade import GradeRun, grade_submissions

__all__ = ["extract_kernels", "ExtractedKernel", "NotebookKernels", "grade_submissions", "GradeRun"]
