"""The committed images in imgs/ are exactly what `metal-puzzles images` draws today."""

import re
from pathlib import Path

import pytest

from metal_puzzles.notebook.images import image_files

IMGS = Path(__file__).resolve().parents[2] / "imgs"


@pytest.fixture(scope="module")
def fresh():
    return image_files()


def test_every_image_is_committed_and_current(fresh):
    stale = [name for name, svg in fresh.items()
             if not (IMGS / name).exists() or (IMGS / name).read_text(encoding="utf-8") != svg]
    assert not stale, f"stale or missing images (run `metal-puzzles images`): {stale}"


def test_no_leftover_images(fresh):
    extra = sorted(name for name in (p.relative_to(IMGS).as_posix() for p in IMGS.rglob("*.svg"))
                   if name not in fresh)
    assert not extra, f"images no puzzle draws any more: {extra}"


def test_each_diagram_is_named_by_its_puzzles_part_and_id(fresh):
    """Was: '11a_conv_simple.svg', 'B_2_layer_norm.svg', 'V_9_kv_cache_append.svg': a number
    scheme per part, and a renumbered puzzle's image renamed."""
    from metal_puzzles.checking import WiredPuzzle
    from metal_puzzles.notebook.images import figure_file
    from metal_puzzles.puzzles import ENTRIES, PARTS

    drawn = {f"{part.folder}/{p.id}.svg" for part in PARTS for p in part.puzzles if not isinstance(p, WiredPuzzle)}
    figures = {name for name in map(figure_file, ENTRIES) if name is not None}  # in the part's folder, by name
    assert figures == {"part5/online_softmax.svg"}
    assert set(fresh) == drawn | figures | {"logo.svg"}
    assert "part5/kv_cache_append.svg" in fresh and "V.7. " in fresh["part5/kv_cache_append.svg"]


def test_diagrams_show_the_solution_run(fresh):
    svg = fresh["part1/map.svg"]
    assert "1. Map" in svg and "<svg" in svg


def test_the_book_stays_light(fresh):
    # An executed book holds one of these per puzzle (what show() draws is the same picture):
    # they were 0.2-1.6 MB each and 10.5 MB in all, then 2.99 MB (arrows and texts one element
    # each, with their style), now 1.93 MB (grouped by colour, grids as lines, touching fills
    # merged); tests/notebook_face/test_notebook.py bounds the executed book itself (3.41 MB, now 2.35 MB) and
    # benchmarks/bench_image_sizes.py weighs both before and after a change.
    sizes = {name: len(svg.encode("utf-8")) for name, svg in fresh.items()}
    assert sum(sizes.values()) < 3_000_000, sizes
    heaviest = max(sizes, key=sizes.get)
    assert sizes[heaviest] < 500_000, (heaviest, sizes[heaviest])
    # The Part III access maps: a few tens of kilobytes each.
    assert all(size < 150_000 for name, size in sizes.items() if name.startswith("part3/")), sizes


def test_diagrams_are_compact_svg(fresh):
    svg = fresh["part1/pooling.svg"]
    assert "matrix(" not in svg and "vector-effect" not in svg  # no per-shape transforms or styles
    coordinates = " ".join(re.findall(r"(?:d|x|y)='([^']*)'", svg))
    assert coordinates and not re.search(r"\d\.\d\d", coordinates)  # to a tenth of a pixel
    assert svg.count("<path") < 120  # arrows, cells of one colour, marks: few elements
