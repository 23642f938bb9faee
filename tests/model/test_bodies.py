"""The inputs of Loop and If bodies that the TFLite and TensorFlow readers write are marked
as the ONNX reader marks them, so the graphs validate without dangling-input warnings."""

from __future__ import annotations

from pathlib import Path

import pytest

from xocview.formats import load
from xocview.model import validate

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize(
    "name", ["tflite/tfl_loop.tflite", "tensorflow/while_frozen.pb", "tensorflow/keras_lstm"]
)
def test_loop_body_inputs_are_inputs_of_their_loop(name: str) -> None:
    graph = load(DATA / name)
    assert validate(graph) == []
    loops = [n for n in graph.nodes if n.op_type == "Loop"]
    assert loops
    for loop in loops:
        for tid in loop.attributes["body"]["inputs"]:
            t = graph.tensor(tid)
            assert t.kind == "input" and t.metadata["subgraph_of"] == loop.id
        assert not set(loop.attributes["body"]["inputs"]) & {
            graph.tensors[i].id for i in graph.inputs
        }
