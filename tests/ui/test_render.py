"""Pictures of huge graphs: scaled to a bounded image, painted in seconds, written whole."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtGui import QImage

from xocview.errors import FormatError
from xocview.model import Graph, Node, Tensor
from xocview.ui import render
from xocview.ui.canvas.drawing import build_drawing


def flat_graph(n: int) -> Graph:
    """A layered DAG of ``n`` Relu nodes, each fed by one or two nodes one to three layers up."""
    rng = np.random.default_rng(0)
    src: list[int] = []
    dst: list[int] = []
    for v in range(25, n):
        for _ in range(1 + int(rng.random() < 0.35)):
            src.append(v - 25 * int(rng.integers(1, 4)) + int(rng.integers(0, 25)) - 12)
            dst.append(v)
    pairs = [(a, b) for a, b in zip(src, dst, strict=True) if 0 <= a < b]
    tensors = [Tensor("x", "input", [1, 8], "float32")]
    tensors += [Tensor(f"t{v}", "activation", [1, 8], "float32") for v in range(n)]
    ins: list[list[int]] = [[] for _ in range(n)]
    for a, b in pairs:
        ins[b].append(a + 1)
    nodes = [Node(f"n{v}", "Relu", ins[v] or [0], [v + 1]) for v in range(n)]
    return Graph("flat", "flat", tensors, nodes, [0], [n])


def test_a_drawing_larger_than_the_pixel_budget_is_scaled_into_it(
    qapp: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = build_drawing(flat_graph(3000))
    monkeypatch.setattr(render, "MAX_AREA", 1_000_000)
    out = tmp_path / "flat.png"
    started = time.perf_counter()
    width, height = render.render_to_file(d, out)
    assert time.perf_counter() - started < 20
    assert width * height <= 1_000_000
    full = (d.width + 2 * render.MARGIN) / (d.height + 2 * render.MARGIN)
    assert width / height == pytest.approx(full, rel=0.02)
    image = QImage(str(out))
    assert (image.width(), image.height()) == (width, height)
    pixels = np.frombuffer(image.constBits(), np.uint8, image.sizeInBytes())
    background = pixels.reshape(-1, 4)[0]
    assert (pixels.reshape(-1, 4) != background).any(axis=1).mean() > 0.05  # boxes and edges
    assert [p.name for p in tmp_path.iterdir()] == ["flat.png"]


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_a_picture_that_cannot_be_written_names_the_path_and_leaves_nothing(
    qapp: object, tmp_path: Path, suffix: str
) -> None:
    d = build_drawing(flat_graph(20))
    target = tmp_path / "missing" / f"g{suffix}"
    with pytest.raises(FormatError, match="folder does not exist") as info:
        render.render_to_file(d, target)
    assert str(target) in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_an_overview_of_a_huge_drawing_leaves_the_edges_out(
    qapp: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from xocview.ui.canvas import overview
    from xocview.ui.canvas.style import theme

    d = build_drawing(flat_graph(600))
    small = overview.render_overview(d, theme("light"), 0.05)
    assert len(d.paint_cache["far_edges"]) == len(d.edges)  # each edge drawn once, kept
    d = build_drawing(flat_graph(600))
    monkeypatch.setattr(overview, "OVERVIEW_MAX_EDGES", len(d.edges) - 1)
    huge = overview.render_overview(d, theme("light"), 0.05)
    assert "far_edges" not in d.paint_cache
    assert (huge.width(), huge.height()) == (small.width(), small.height())
