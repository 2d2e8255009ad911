"""The committed images in imgs/ are exactly what `metal-puzzles images` draws today."""

from pathlib import Path

import pytest

from metal_puzzles.images import image_files

IMGS = Path(__file__).resolve().parents[1] / "imgs"


@pytest.fixture(scope="module")
def fresh():
    return image_files()


def test_every_image_is_committed_and_current(fresh):
    stale = [name for name, svg in fresh.items()
             if not (IMGS / name).exists() or (IMGS / name).read_text(encoding="utf-8") != svg]
    assert not stale, f"stale or missing images (run `metal-puzzles images`): {stale}"


def test_no_leftover_images(fresh):
    extra = sorted(p.name for p in IMGS.glob("*.svg") if p.name not in fresh)
    assert not extra, f"images no puzzle draws any more: {extra}"


def test_diagrams_show_the_solution_run(fresh):
    svg = fresh["1_map.svg"]
    assert "1. Map" in svg and "<svg" in svg
