"""TensorFlow GraphDefs and SavedModels read without TensorFlow: the graph's nodes, inputs,
outputs, constants and groups as TensorFlow wrote them, and damaged files as located
FormatErrors.

The files were made by tests/data/tensorflow/make_graphdef.py and make_savedmodel.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xocview.errors import FormatError
from xocview.formats import load
from xocview.formats.source import Source
from xocview.formats.tensorflow import reader
from xocview.formats.tensorflow.protos import message
from xocview.model import Graph, validate

DATA = Path(__file__).resolve().parents[2] / "data" / "tensorflow"


def _load(name: str) -> Graph:
    return reader.load(Source(DATA / name))


@pytest.mark.parametrize("name", ["cnn_frozen.pb", "cnn_frozen.pbtxt", "ops_frozen.pb"])
def test_frozen_graph_opens_with_its_placeholders_and_results(name: str) -> None:
    graph = _load(name)
    assert not [f for f in validate(graph) if f.severity == "error"]
    with np.load(DATA / name.replace(".pbtxt", ".pb").replace(".pb", "_io.npz")) as z:
        feeds = [k[3:] for k in z.files if k.startswith("in:")]
        sinks = [k[4:] for k in z.files if k.startswith("out:")]
        fed = {k[3:]: z[k] for k in z.files if k.startswith("in:")}
    assert [graph.tensors[i].id for i in graph.inputs] == feeds
    assert sorted(graph.tensors[i].id for i in graph.outputs) == sorted(sinks)
    for i in graph.inputs:
        assert list(graph.tensors[i].shape) == list(fed[graph.tensors[i].id].shape)


def test_binary_and_text_forms_give_the_same_graph() -> None:
    assert _load("cnn_frozen.pb") == _load("cnn_frozen.pbtxt")


def test_constants_are_weights_with_the_values_tensorflow_wrote() -> None:
    graph = _load("cnn_frozen.pb")
    gd = message("GraphDef").FromString((DATA / "cnn_frozen.pb").read_bytes())
    consts = [nd for nd in gd.node if nd.op == "Const"]
    weights = {t.id: t for t in graph.tensors if t.kind == "weight"}
    # every learned weight stays; a Const a mapping took into an attribute (a Reshape's shape)
    # is read by nobody and dropped
    kept = {nd.name for nd in consts} & set(weights)
    assert len(kept) >= 10 and not any(name.endswith("Reshape/shape") for name in kept)
    kernel = next(
        nd for nd in consts if nd.name.endswith("conv2d_1/convolution/ReadVariableOp/resource")
    )
    t = weights[kernel.name]
    assert list(t.shape) == [3, 3, 3, 8] and t.dtype == "float32"
    raw = np.frombuffer(kernel.attr["value"].tensor.tensor_content, np.float32)
    np.testing.assert_array_equal(t.data.reshape(-1), raw)


def test_name_scopes_become_groups_and_keep_the_op_names() -> None:
    graph = _load("cnn_frozen.pb")
    groups = {n.id: n for n in graph.nodes if "children_ids" in n.metadata}
    scopes = {n.metadata["scope"] for n in groups.values() if n.metadata.get("derived") == "scope"}
    assert any(s.endswith("batch_normalization_1") for s in scopes)
    conv = next(n for n in graph.nodes if n.metadata.get("tf", {}).get("op") == "Conv2D")
    attrs = conv.metadata["tf"]["attrs"]
    assert attrs["strides"] == [1, 2, 2, 1] and attrs["padding"] == "SAME"
    assert conv.metadata["parent_id"] in groups


def test_saved_model_signature_is_drawn_through_its_functions() -> None:
    graph = _load("keras_cnn/saved_model.pb")
    assert not [f for f in validate(graph) if f.severity == "error"]
    info = graph.metadata["tensorflow"]
    assert info["signature"] == "serving_default" and info["variables"] == 8
    calls = [n for n in graph.nodes if "function" in n.metadata.get("tf", {})]
    assert len(calls) >= 2 and all(n.metadata.get("children_ids") for n in calls)
    weights = [t for t in graph.tensors if t.kind == "weight" and "checkpoint_key" in t.metadata]
    assert len(weights) == 8
    with np.load(DATA / "keras_cnn_values.npz") as z:
        for t in weights:
            np.testing.assert_array_equal(t.data, z[t.metadata["checkpoint_key"]])
    # the saver's functions are not part of the serving graph
    assert not any(
        "traced_save" in n.metadata.get("tf", {}).get("function", "") for n in graph.nodes
    )


def test_a_saved_model_folder_opens_through_its_saved_model_pb() -> None:
    graph = load(DATA / "keras_cnn")
    assert graph == _load("keras_cnn/saved_model.pb")
    with pytest.raises(FormatError, match="is a folder, not a file"):
        load(DATA)


def _graph_bytes(text: str) -> bytes:
    from google.protobuf import text_format

    return text_format.Parse(text, message("GraphDef")()).SerializeToString()


@pytest.mark.parametrize(
    ("text", "place", "problem"),
    [
        ('node { name: "a" op: "Relu" input: "b" }', "node[0].input[0]", "'b' names no node"),
        (
            'node { name: "a" op: "Identity" } node { name: "a" op: "Identity" }',
            "node[1]",
            "used twice",
        ),
    ],
)
def test_broken_references_are_located(tmp_path: Path, text: str, place: str, problem: str) -> None:
    path = tmp_path / "g.pb"
    path.write_bytes(_graph_bytes(text))
    with pytest.raises(FormatError) as e:
        reader.load(Source(path))
    assert e.value.place == place and problem in e.value.problem and "g.pb" in str(e.value)


def test_bad_text_and_truncated_binary_are_format_errors(tmp_path: Path) -> None:
    text = tmp_path / "g.pbtxt"
    text.write_text('node {\n  name: "a"\n  op: Const\n  attr { key: "value" value { tensor {')
    with pytest.raises(FormatError, match=r"g\.pbtxt: line \d+"):
        reader.load(Source(text))
    binary = tmp_path / "g.pb"
    binary.write_bytes((DATA / "cnn_frozen.pb").read_bytes()[:5000])
    with pytest.raises(FormatError, match=r"g\.pb: .*does not parse"):
        reader.load(Source(binary))


def test_a_constant_whose_bytes_do_not_fit_its_shape_says_so_when_read(tmp_path: Path) -> None:
    path = tmp_path / "g.pb"
    path.write_bytes(
        _graph_bytes(
            'node { name: "c" op: "Const" attr { key: "value" value { tensor { dtype: DT_FLOAT'
            ' tensor_shape { dim { size: 4 } } tensor_content: "abc" } } } }'
            ' node { name: "r" op: "Relu" input: "c" }'
        )
    )
    graph = reader.load(Source(path))
    with pytest.raises(FormatError, match=r"Const c: tensor_content holds 3 bytes"):
        _ = graph.tensor("c").data


def test_onnx_and_other_protobufs_are_not_taken_for_tensorflow() -> None:
    onnx_file = DATA.parent / "contrib" / "bert_fast_gelu.onnx"
    assert reader.sniff(Source(onnx_file)) is not None


def test_a_tf1_saved_model_binds_its_variables_by_name_and_runs() -> None:
    from xocview.executor import run

    graph = load(DATA / "tf1_mlp")
    keys = {t.metadata.get("checkpoint_key") for t in graph.tensors if t.kind == "weight"}
    assert {"hidden/kernel", "hidden/bias", "out/kernel"} <= keys
    with np.load(DATA / "tf1_mlp_io.npz") as z:
        out = run(graph, {"x": z["x"]}).outputs["y"]
        np.testing.assert_allclose(np.asarray(out), z["y"], rtol=1e-5, atol=1e-6)


def test_a_run_refusing_an_unmapped_op_says_why_the_reader_left_it() -> None:
    from xocview.errors import RunError
    from xocview.executor import run

    path_graph = _load("ops_frozen.pb")
    node = next(n for n in path_graph.nodes if n.op_type == "Softmax")
    node.op_type = "Bucketize"
    node.metadata.update(domain="tensorflow", not_mapped="its boundaries are not constant")
    with np.load(DATA / "ops_frozen_io.npz") as z:
        feeds = {k[3:]: z[k] for k in z.files if k.startswith("in:")}
    with pytest.raises(RunError, match=r"'Bucketize' of domain 'tensorflow': its boundaries"):
        run(path_graph, feeds)
