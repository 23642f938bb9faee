"""Graphs of the JSON formats (XOC, NNVM, LightNet) saved as ONNX: written where every op maps
onto an ONNX operator (weights without values become inputs, and the save says so), refused
with the node named where one does not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.conftest import REPO, corpus_path
from tests.formats.onnx.running import outputs, random_feeds
from xocview.errors import FormatError
from xocview.executor import run
from xocview.formats import load, save

SAMPLES = REPO / "sample_graphs"


def test_an_xoc_graph_becomes_a_model_onnxruntime_runs_as_we_do(tmp_path: Path) -> None:
    graph = load(SAMPLES / "tiny_transformer.json")
    out = tmp_path / "tiny.onnx"
    notes = save(graph, out)
    assert notes[0].startswith("21 weights without values ('embed.weight'")
    assert "written as graph inputs" in notes[0]
    assert notes[1].startswith("7 groups with no ONNX meaning")
    onnx.checker.check_model(str(out), full_check=True)
    written = onnx.load(str(out))
    assert [(o.domain, o.version) for o in written.opset_import] == [("", 21)]
    assert "embed.weight" in [vi.name for vi in written.graph.input]
    feeds = random_feeds(out)
    ours = run(graph, feeds).outputs
    names = [graph.tensors[t].id for t in graph.outputs]
    for name, got in zip(names, outputs(out, feeds), strict=True):
        np.testing.assert_allclose(got, ours[name], rtol=1e-4, atol=1e-2)


def test_node_and_graph_metadata_of_an_xoc_graph_come_back(tmp_path: Path) -> None:
    graph = load(SAMPLES / "tiny_transformer.json")
    out = tmp_path / "tiny.onnx"
    save(graph, out)
    back = load(out)
    for key, value in graph.metadata.items():
        assert back.metadata[key] == value
    for node in graph.nodes:
        if "children_ids" in node.metadata:
            continue  # groups are not kept
        want = {k: v for k, v in node.metadata.items() if k != "parent_id"}
        got = {k: v for k, v in back.node(node.id).metadata.items() if k != "parent_id"}
        assert got == want, node.id
        assert back.node(node.id).attributes == node.attributes


@pytest.mark.parametrize("name", ["xoc_resnet18.json", "xoc_mobilenetv2.json", "xoc_vgg11.json"])
def test_xoc_files_of_other_tools_become_valid_models(name: str, tmp_path: Path) -> None:
    graph = load(corpus_path("xoc", name))
    out = tmp_path / "out.onnx"
    notes = save(graph, out)
    assert len(notes) == 1 and "weights without values" in notes[0]
    onnx.checker.check_model(str(out), full_check=True)
    assert len(load(out).nodes) >= len([n for n in graph.nodes if "children_ids" not in n.metadata])


def test_lightnet_weights_with_values_become_initializers(tmp_path: Path) -> None:
    graph = load(corpus_path("lightnet", "lightnet_yolov3_ir.json"))
    out = tmp_path / "yolo.onnx"
    assert save(graph, out) == []
    onnx.checker.check_model(str(out), full_check=True)
    written = onnx.load(str(out))
    assert len(written.graph.initializer) == len([t for t in graph.tensors if t.kind == "weight"])


@pytest.mark.parametrize(
    ("folder", "name", "place", "problem"),
    [
        (
            "lightnet",
            "lightnet_trt_test.json",
            "node 'print2'",
            "op 'print' is not an ONNX operator",
        ),
        (
            "nnvm",
            "mxnet08_deepwater_symbol_mlp-py.json",
            "node 'softmax'",
            "Softmax-13 takes 1 inputs, not 2",
        ),
        (
            "nnvm",
            "mxnet14_mtcnn_det1-symbol.json",
            "tensor 'data'",
            "the graph input has no known element type",
        ),
    ],
)
def test_a_graph_onnx_cannot_hold_is_refused_naming_the_place(
    folder: str, name: str, place: str, problem: str, tmp_path: Path
) -> None:
    graph = load(corpus_path(folder, name))
    with pytest.raises(FormatError) as e:
        save(graph, tmp_path / "out.onnx")
    assert e.value.place == place
    assert problem in e.value.problem
    assert list(tmp_path.iterdir()) == []


def test_an_attribute_the_checker_refuses_names_the_node(tmp_path: Path) -> None:
    graph = load(SAMPLES / "simple_model.json")  # a Conv with two pads for two axes
    with pytest.raises(FormatError) as e:
        save(graph, tmp_path / "out.onnx")
    assert e.value.place == "node 'node_0'"
    assert "pads has incorrect size" in e.value.problem
    assert list(tmp_path.iterdir()) == []


def test_a_group_with_inputs_of_its_own_is_named(tmp_path: Path) -> None:
    """A node that other nodes name as their parent is a group; its op is not written, and
    whoever reads its output is told why."""
    graph = load(corpus_path("xoc", "xoc_example-complete_graph-wrapper.json"))
    with pytest.raises(FormatError) as e:
        save(graph, tmp_path / "out.onnx")
    assert e.value.place == "node 'relu1'"
    assert "made by 'conv1', which is a group" in e.value.problem
