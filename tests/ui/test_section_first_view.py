"""The first view of flat graphs split into derived sections: it opens on the first part."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from xocview.formats import load, save
from xocview.model import Graph, Hierarchy, Node, Tensor, visible_graph
from xocview.model.boxes import box_weights
from xocview.ui.document import FIRST_VIEW_BOXES, initial_expanded

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def light(name: str) -> Graph:
    path = LIGHT / f"light_{name}.onnx"
    if not path.exists():
        pytest.skip(f"{path} is absent (it ships with the onnx package)")
    return load(path)


def first_view(graph: Graph) -> tuple[set[str], int, int]:
    """The groups open at first sight, the visible node boxes, and of those the boxes drawn
    (constant-making nodes are folded into their readers)."""
    h = Hierarchy(graph)
    expanded = initial_expanded(graph, h)
    items = visible_graph(graph, expanded, tensor_kinds=()).node_items
    return expanded, len(items), int(box_weights(graph, h)[items].sum())


def section_ids(graph: Graph) -> list[str]:
    return [nd.id for nd in graph.nodes if nd.metadata.get("derived") == "section"]


@pytest.mark.parametrize("name", ["densenet121", "inception_v2"])
def test_a_flat_cnn_opens_its_first_part_and_shows_the_others_as_boxes(name: str) -> None:
    graph = light(name)
    parts = section_ids(graph)
    assert len(parts) > 1
    expanded, visible, drawn = first_view(graph)
    assert 10 <= drawn <= visible <= 400
    assert expanded == {parts[0]}  # the first part, on the graph's inputs


def test_a_cnn_of_fewer_boxes_than_the_limit_stays_whole() -> None:
    graph = light("resnet50")  # 415 nodes, but 239 of them are folded constants
    assert section_ids(graph) == []
    _, visible, drawn = first_view(graph)
    assert visible == len(graph.nodes) and drawn == 176


def test_a_huge_flat_graph_opens_down_to_nodes(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    tensors = [Tensor("x", "input", [1], "float32")]
    nodes = []
    for i in range(30_000):
        ins = [len(tensors) - 1]
        if i > 4 and rng.random() < 0.3:
            ins.append(int(rng.integers(max(1, len(tensors) - 40), len(tensors) - 1)))
        tensors.append(Tensor(f"t{i}", "activation", [1], "float32"))
        nodes.append(Node(f"n{i}", "Add", ins, [len(tensors) - 1]))
    path = tmp_path / "flat.json"
    save(Graph("g", "g", tensors, nodes, [0], [len(tensors) - 1]), path)
    graph = load(path)
    h = Hierarchy(graph)
    assert h.max_depth == 2  # parts of parts, then nodes
    expanded, visible, _ = first_view(graph)
    assert 10 <= visible <= FIRST_VIEW_BOXES
    items = visible_graph(graph, expanded, tensor_kinds=()).node_items
    assert "n0" in {graph.nodes[i].id for i in items.tolist()}  # the inputs' end is open
