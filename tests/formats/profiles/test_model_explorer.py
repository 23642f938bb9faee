"""Model Explorer's node data (the schema of google-ai-edge/model-explorer's node_data_builder:
one graph's ``{"results": {key: {"value": ...}}}`` or such objects by graph id) put onto a light
model as a named metric."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.formats.profiles.make_profiles import LIGHT
from xocview.errors import FormatError
from xocview.formats import load
from xocview.formats.profiles import read_profile
from xocview.model import Graph

SQUEEZENET = LIGHT / "light_squeezenet.onnx"


@pytest.fixture(scope="module")
def graph() -> Graph:
    return load(SQUEEZENET)


def _conv_ids(graph: Graph, n: int) -> list[str]:
    return [node.id for node in graph.nodes if node.op_type == "Conv"][:n]


def _write(folder: Path, name: str, data: Any) -> Path:
    path = folder / name
    path.write_text(json.dumps(data))
    return path


def test_one_graphs_node_data_by_node_id_and_output_tensor(graph: Graph, tmp_path: Path) -> None:
    a, b = _conv_ids(graph, 2)
    node_b = next(n for n in graph.nodes if n.id == b)
    tensor_b = graph.tensors[node_b.outputs[0]].id
    data = {
        "name": "quant error",
        "results": {
            a: {"value": 0.25, "bgColor": "#ff0000"},
            tensor_b: {"value": 3},
            "no_such_node": {"value": 1.0},
            "a_label": {"value": "high"},
        },
        "thresholds": [{"value": 1, "bgColor": "green"}, {"value": 5, "bgColor": "red"}],
        "gradient": [{"stop": 0, "bgColor": "white"}, {"stop": 1, "bgColor": "red"}],
    }
    result = read_profile(_write(tmp_path, "errors.json", data), graph)
    assert not result.is_time and result.source == "quant_error"
    assert result.key == "performance.quant_error"
    assert result.values == {a: 0.25, b: 3.0}
    assert result.events == 4 and result.matched == 2
    assert sorted(u.name for u in result.unmatched) == ["a_label", "no_such_node"]


def test_a_models_node_data_picks_the_graph_and_names_the_metric(
    graph: Graph, tmp_path: Path
) -> None:
    a, b = _conv_ids(graph, 2)
    data = {
        graph.id: {"results": {a: {"value": 7}}},
        "another_graph": {"results": {b: {"value": 9}}},
    }
    result = read_profile(_write(tmp_path, "latency.json", data), graph, "mem kb")
    assert result.values == {a: 7.0} and result.source == "mem_kb"  # sanitised
    only = {"main": {"results": {b: {"value": 1}}}}  # the only graph: read whatever its id
    result = read_profile(_write(tmp_path, "latency.json", only), graph)
    assert result.values == {b: 1.0} and result.source == "latency"  # from the file's name


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"results": {"x": 5}}, r"results\.x: not an object with a 'value'"),
        ({"results": {"x": {"value": [1]}}}, r"results\.x\.value: \[1\] is not a number"),
        ({"g": {"results": {"x": {"value": True}}}}, r"g\.results\.x\.value: True is not a number"),
    ],
)
def test_a_damaged_result_is_named(graph: Graph, tmp_path: Path, data: Any, message: str) -> None:
    with pytest.raises(FormatError, match=r"nd\.json: " + message):
        read_profile(_write(tmp_path, "nd.json", data), graph)


def test_a_metric_may_not_take_the_place_of_the_times(graph: Graph, tmp_path: Path) -> None:
    data = {"results": {_conv_ids(graph, 1)[0]: {"value": 1}}}
    with pytest.raises(FormatError, match="a metric cannot be named 'time'"):
        read_profile(_write(tmp_path, "time.json", data), graph)
