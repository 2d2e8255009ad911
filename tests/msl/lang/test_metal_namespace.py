"""The one rule for the standard library's qualified names (msl/lang/metal_namespace.py): a
leading '::' and then a leading 'metal::' go, each only as a whole qualifier. The old sites
disagreed on '::metal::x' (some kept the '::'); names with 'metal' elsewhere are left alone."""

import pytest

from metal_puzzles.msl.lang.metal_namespace import is_metal_qualified, strip_metal_namespace


@pytest.mark.parametrize(("name", "plain"), [
    ("exp", "exp"),
    ("metal::exp", "exp"),
    ("::metal::exp", "exp"),
    ("::exp", "exp"),
    ("metal::fast::exp", "fast::exp"),
    ("::metal::numeric_limits<>::max", "numeric_limits<>::max"),
    ("metal::metal::exp", "metal::exp"),  # only one qualifier goes
    ("metalx::exp", "metalx::exp"),  # not a whole qualifier
    ("c10::metal::max", "c10::metal::max"),  # PyTorch's namespace, not the library's
    ("metal_exp", "metal_exp"),
    ("metal", "metal"),
    (":metal::exp", ":metal::exp"),
])
def test_strip_metal_namespace(name: str, plain: str) -> None:
    assert strip_metal_namespace(name) == plain


@pytest.mark.parametrize(("name", "qualified"), [
    ("metal::exp", True), ("::metal::exp", True), ("exp", False), ("::exp", False),
    ("c10::metal::max", False), ("metalx::exp", False), ("metal", False),
])
def test_is_metal_qualified(name: str, qualified: bool) -> None:
    assert is_metal_qualified(name) is qualified
