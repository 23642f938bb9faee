"""Weights no node reads are dropped from graphs a reader wrote as ONNX ops, and the indices
of everything else follow."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from xocview.formats import load, save
from xocview.model import Graph, Node, Tensor, validate
from xocview.model.unread import drop_unread_weights

DATA = Path(__file__).resolve().parents[1] / "data"


def test_unread_weights_go_and_the_indices_follow() -> None:
    tensors = [
        Tensor("x", "input", [2], "float32"),
        Tensor("unread", "weight", [2], "float32", data=np.ones(2, np.float32)),
        Tensor("w", "weight", [2], "float32", data=np.ones(2, np.float32)),
        Tensor("kept_output", "weight", [1], "float32", data=np.ones(1, np.float32)),
        Tensor("y", "output", [2], "float32"),
    ]
    graph = Graph("g", "g", tensors, [Node("add", "Add", [0, 2], [4])], [0], [4, 3])
    assert drop_unread_weights(graph) == 1
    assert [t.id for t in graph.tensors] == ["x", "w", "kept_output", "y"]
    assert graph.nodes[0].inputs == [0, 1] and graph.nodes[0].outputs == [3]
    assert graph.inputs == [0] and graph.outputs == [3, 2]
    assert drop_unread_weights(graph) == 0


def test_tensorflow_and_tflite_graphs_save_no_unused_initializer(tmp_path: Path) -> None:
    for name in ("same_model/saved_model", "same_model/model.tflite", "tensorflow/ops_frozen.pb"):
        graph = load(DATA / name)
        assert not [f for f in validate(graph) if f.severity == "error"]
        read = {t for n in graph.nodes for t in n.inputs} | set(graph.outputs)
        assert all(i in read for i, t in enumerate(graph.tensors) if t.kind == "weight"), name
        save(graph, tmp_path / "m.onnx")
        g = onnx.load(tmp_path / "m.onnx").graph
        used = {i for n in g.node for i in n.input} | {o.name for o in g.output}
        assert {init.name for init in g.initializer} <= used, name
