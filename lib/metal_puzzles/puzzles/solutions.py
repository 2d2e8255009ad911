"""Where the reference solutions live (the repository's solutions/ folder)."""

from __future__ import annotations

from pathlib import Path

#: The repository's solutions/ folder (beside lib/); present in a checkout and an editable install.
SOLUTIONS_DIR = Path(__file__).resolve().parents[3] / "solutions"


def solution_file(name: str) -> Path:
    """A file of the solutions folder, with a clear error where it is not installed."""
    path = SOLUTIONS_DIR / name
    if not path.exists():
        raise FileNotFoundError(
            f"reference solution {name} not found in {SOLUTIONS_DIR}: the solutions live in the repository's "
            "solutions/ folder, which only a checkout (pip install -e .) provides")
    return path
