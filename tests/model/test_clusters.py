"""Runs of loose operators beside scope groups become derived "cluster" groups, never saved."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

from xocview.formats import load, save
from xocview.model import Hierarchy
from xocview.model.clusters import CLUSTER_BOXES


def _model(loose: int, scoped: int) -> onnx.ModelProto:
    """``mask`` through ``loose`` unscoped ops; ``x`` through ``scoped`` ops in two layer
    scopes; the two meet in a last scoped Add."""
    nodes, prev = [], "mask"
    for i in range(loose):
        nodes.append(helper.make_node("Relu", [prev], [f"m{i}"], name=f"Relu_{i}"))
        prev = f"m{i}"
    x = "x"
    for i in range(scoped):
        layer = i * 2 // scoped
        nodes.append(helper.make_node("Tanh", [x], [f"s{i}"], name=f"/layer.{layer}/Tanh_{i}"))
        x = f"s{i}"
    nodes.append(helper.make_node("Add", [x, prev], ["y"], name="/layer.1/Add"))
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("mask", "x", "y")]
    graph = helper.make_graph(nodes, "g", vi[:2], vi[2:])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _clusters(path: Path) -> list[tuple[str, int]]:
    graph = load(path)
    h = Hierarchy(graph)
    return [
        (nd.metadata["name"], int(h.child_count[i]))
        for i, nd in enumerate(graph.nodes)
        if nd.metadata.get("derived") == "cluster"
    ]


def test_a_loose_run_beside_scopes_becomes_one_group_named_for_its_input(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_model(8, 30), path)
    assert _clusters(path) == [("ops on mask", 8)]
    graph = load(path)
    h = Hierarchy(graph)
    top = {graph.nodes[i].id for i in range(len(graph.nodes)) if h.parent[i] < 0}
    assert not any(k.startswith("Relu_") for k in top)


def test_short_runs_and_runs_as_big_as_their_level_stay_loose(tmp_path: Path) -> None:
    short, big = tmp_path / "short.onnx", tmp_path / "big.onnx"
    onnx.save(_model(CLUSTER_BOXES - 1, 30), short)
    onnx.save(_model(40, 20), big)  # the loose run is most of the graph: it is the graph
    assert _clusters(short) == [] and _clusters(big) == []


def test_clusters_are_not_saved_but_made_again(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_model(8, 30), path)
    graph = load(path)
    save(graph, tmp_path / "m.json")
    saved = (tmp_path / "m.json").read_text()
    assert '"cluster"' not in saved and "#ops" not in saved
    assert load(tmp_path / "m.json") == graph  # the scopes it kept make the same cluster


def test_a_files_own_groups_get_no_clusters(tmp_path: Path) -> None:
    """Groups a file declares are the user's: the loose run beside them stays as it is."""
    path = tmp_path / "m.onnx"
    onnx.save(_model(8, 30), path)
    graph = load(path)
    for nd in graph.nodes:  # as if the file had declared the scopes itself
        if nd.metadata.get("derived") == "scope":
            nd.metadata = {k: v for k, v in nd.metadata.items() if k != "derived"}
    save(graph, tmp_path / "own.json")
    again = load(tmp_path / "own.json")
    assert not any(nd.metadata.get("derived") == "cluster" for nd in again.nodes)
