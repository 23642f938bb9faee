"""Keras files (.keras zips and legacy .h5) read without TensorFlow: the layer graph is the
config's, nested models are groups, weights are read lazily, the executor's outputs equal
Keras's own (made by tests/data/keras/make_keras.py), and bad files are located errors."""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from xocview.errors import FormatError, RunError
from xocview.executor import run
from xocview.formats.keras import keras_file
from xocview.formats.source import Source
from xocview.model import Graph, validate

DATA = Path(__file__).resolve().parents[2] / "data" / "keras"
NAMES = ("cnn", "mlp", "text", "pair")
# .keras and .h5 by Keras 3; _tf2.h5 by tf.keras 2 (the tf_keras package): its older config
# (inbound_nodes as lists, batch_input_shape) and weight names (kernel:0)
FILES = [f"{n}{ext}" for n in NAMES for ext in (".keras", ".h5", "_tf2.h5")]
_PY_NAMES = re.compile(r"\b\w+(Error|Exception)\b|Traceback")


def _load(path: Path) -> Graph:
    return keras_file.load(Source(path))


def _config(path: Path) -> Any:
    if path.suffix == ".keras":
        with zipfile.ZipFile(path) as z:
            return json.loads(z.read("config.json"))
    with h5py.File(path, "r") as f:
        return json.loads(f.attrs["model_config"])


def _layers(doc: dict, prefix: str = "") -> dict[str, str]:
    """Every layer's node id (nested ones under their model's) and its class, InputLayers left
    out (they are the inputs)."""
    found: dict[str, str] = {}
    for entry in doc["config"]["layers"]:
        cls = entry["class_name"]
        name = entry.get("name") or entry["config"]["name"]
        if cls == "InputLayer":
            continue
        found[prefix + name] = cls
        for n in range(1, len(entry.get("inbound_nodes", []))):  # a shared layer's calls
            found[f"{prefix}{name}@{n}"] = cls
        if cls in ("Functional", "Sequential"):
            found.update(_layers(entry, f"{prefix}{name}/"))
    return found


def _rewrite(src: Path, dst: Path, edit: Callable[[dict], Any], drop: str = "") -> Path:
    """A copy of a .keras zip whose config.json is ``edit``ed (bytes or a changed dict)."""
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as out:
        for info in z.infolist():
            if info.filename == drop:
                continue
            data = z.read(info)
            if info.filename == "config.json":
                doc = json.loads(data)
                got = edit(doc)
                data = got if isinstance(got, bytes) else json.dumps(doc).encode()
            out.writestr(info, data)
    return dst


@pytest.mark.parametrize("name", FILES)
def test_every_file_loads_sniffs_and_validates(name: str) -> None:
    source = Source(DATA / name)
    assert keras_file.sniff(source) is None
    graph = keras_file.load(source)
    assert [f for f in validate(graph) if f.severity == "error"] == []
    weights = [t for t in graph.tensors if "h5" in t.metadata]
    assert weights and all(not isinstance(t._data, np.ndarray) for t in weights)  # lazy


@pytest.mark.parametrize("name", FILES)
def test_layer_graph_is_the_configs(name: str) -> None:
    graph = _load(DATA / name)
    layers = _layers(_config(DATA / name))
    by_id = {n.id: n for n in graph.nodes}
    assert {i: by_id[i].metadata["class_name"] for i in layers} == layers
    tops = {n.id for n in graph.nodes if "parent_id" not in n.metadata}
    assert tops == {i for i in layers if "/" not in i}


def test_nested_models_are_groups_of_their_layers() -> None:
    for ext in ("keras", "h5"):
        graph = _load(DATA / f"text.{ext}")
        by_id = {n.id: n for n in graph.nodes}
        block, tail = by_id["block"], by_id["tail"]
        assert block.metadata["children_ids"] == [
            "block/proj",
            "block/gate",
            "block/gated",
            "block/cat",
        ]
        assert tail.metadata["children_ids"] == ["tail/logits", "tail/probs"]
        assert (
            block.metadata["config"]["name"] == "block" and "layers" not in block.metadata["config"]
        )
        assert all(
            by_id[c].metadata["parent_id"] == "block" for c in block.metadata["children_ids"]
        )
        assert by_id["block/gated"].op_type == "Mul"


def test_multi_op_layers_are_keras_groups_with_their_config() -> None:
    graph = _load(DATA / "cnn.keras")
    by_id = {n.id: n for n in graph.nodes}
    conv = by_id["conv1"]
    assert conv.metadata["derived"] == "keras" and conv.op_type == "Conv2D"
    assert [by_id[c].op_type for c in conv.metadata["children_ids"]] == [
        "Transpose",
        "Transpose",
        "Conv",
        "Transpose",
    ]
    assert conv.metadata["config"]["padding"] == "same" and conv.metadata["class_name"] == "Conv2D"
    head = by_id["head"]
    assert [by_id[c].op_type for c in head.metadata["children_ids"]] == ["MatMul", "Add", "Softmax"]
    assert by_id["residual"].op_type == "Add" and "children_ids" not in by_id["residual"].metadata


@pytest.mark.parametrize("name", FILES)
def test_executor_outputs_equal_keras(name: str) -> None:
    stem = name.partition(".")[0]
    tag = "_tf2" if stem.endswith("_tf2") else ""
    model = stem.removesuffix("_tf2")
    expected = np.load(DATA / "keras_outputs.npz")
    graph = _load(DATA / name)
    feeds = {
        graph.tensors[t].id: expected[f"{model}{tag}_input_{k}"] for k, t in enumerate(graph.inputs)
    }
    got = run(graph, feeds).outputs
    assert len(graph.outputs) == len([k for k in expected if k.startswith(f"{model}{tag}_output_")])
    for k, t in enumerate(graph.outputs):
        want = expected[f"{model}{tag}_output_{k}"]
        np.testing.assert_allclose(got[graph.tensors[t].id], want, rtol=1e-3, atol=1e-4)


def test_sniff_refuses_other_files(tmp_path: Path) -> None:
    weights_only = tmp_path / "w.h5"
    with h5py.File(weights_only, "w") as f:
        f["x"] = np.zeros(3)
    assert "model_config" in str(keras_file.sniff(Source(weights_only)))
    other = tmp_path / "a.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("x.txt", "hi")
    assert "not a .keras file" in str(keras_file.sniff(Source(other)))
    text = tmp_path / "t.keras"
    text.write_text("hello")
    assert keras_file.sniff(Source(text)) is not None


def _error(path: Path) -> str:
    with pytest.raises(FormatError) as err:
        _load(path)
    message = str(err.value)
    assert str(path) in message and not _PY_NAMES.search(message)
    return message


def test_a_call_of_a_layer_that_does_not_exist_is_located(tmp_path: Path) -> None:
    def edit(doc: dict) -> None:
        history = doc["config"]["layers"][2]["inbound_nodes"][0]["args"][0]["config"]
        history["keras_history"][0] = "nowhere"

    message = _error(_rewrite(DATA / "cnn.keras", tmp_path / "bad.keras", edit))
    assert "config.layers[2].inbound_nodes[0]" in message and "'nowhere'" in message


def test_damaged_json_and_missing_weights_are_located(tmp_path: Path) -> None:
    bad = _rewrite(DATA / "mlp.keras", tmp_path / "bad.keras", lambda d: b'{"class_name": ')
    message = _error(bad)
    assert "config.json" in message and "line 1" in message and "not JSON" in message
    gone = _rewrite(DATA / "mlp.keras", tmp_path / "gone.keras", lambda d: None, "model.weights.h5")
    assert "model.weights.h5" in _error(gone) and "missing" in _error(gone)


def test_a_damaged_legacy_config_is_located(tmp_path: Path) -> None:
    path = tmp_path / "bad.h5"
    shutil.copy(DATA / "text.h5", path)
    with h5py.File(path, "r+") as f:
        doc = json.loads(f.attrs["model_config"])
        doc["config"]["layers"][1]["inbound_nodes"] = "oops"
        f.attrs["model_config"] = json.dumps(doc)
    message = _error(path)
    assert "model_config" in message and "config.layers[1].inbound_nodes" in message


def test_a_lambda_layer_loads_but_is_refused_at_run(tmp_path: Path) -> None:
    def edit(doc: dict) -> None:
        entry = doc["config"]["layers"][6]  # act, an Activation
        entry["class_name"] = "Lambda"
        entry["config"] = {
            "name": "act",
            "function": {"class_name": "__lambda__", "config": {"code": "raise SystemExit"}},
        }

    graph = _load(_rewrite(DATA / "mlp.keras", tmp_path / "lam.keras", edit))
    node = next(n for n in graph.nodes if n.id == "act")
    assert (node.op_type, node.metadata["domain"]) == ("Lambda", "keras")
    assert graph.metadata["keras"]["not_mapped"] == ["Lambda"]
    with pytest.raises(RunError) as err:
        run(graph, {"input_layer": np.zeros((1, 2, 5), np.float32)})
    message = str(err.value)
    assert "'act'" in message and "Lambda" in message and not _PY_NAMES.search(message)


@pytest.mark.parametrize("name", ["cnn.keras", "text.h5"])
def test_cut_files_are_located_errors(tmp_path: Path, name: str) -> None:
    """Files cut short anywhere (the HDF5 library's own errors included) fail as FormatErrors
    naming the file, on opening or when a weight is first read."""
    data = (DATA / name).read_bytes()
    for k, cut in enumerate(np.random.default_rng(0).integers(100, len(data), 12)):
        path = tmp_path / f"cut{k}{Path(name).suffix}"
        path.write_bytes(data[:cut])
        with pytest.raises(FormatError) as err:
            graph = _load(path)
            for t in graph.tensors:
                if t.kind == "weight":
                    assert t.data is not None
        assert str(path) in str(err.value) and not _PY_NAMES.search(str(err.value))


def test_a_deflated_weights_member_is_inflated_and_runs(tmp_path: Path) -> None:
    """Keras stores its members; another zip tool may deflate them: read into memory then."""
    path = tmp_path / "deflated.keras"
    with zipfile.ZipFile(DATA / "cnn.keras") as z, zipfile.ZipFile(path, "w") as out:
        for info in z.infolist():
            out.writestr(info.filename, z.read(info), zipfile.ZIP_DEFLATED)
    expected = np.load(DATA / "keras_outputs.npz")
    graph = _load(path)
    feeds = {graph.tensors[graph.inputs[0]].id: expected["cnn_input_0"]}
    got = run(graph, feeds).outputs[graph.tensors[graph.outputs[0]].id]
    np.testing.assert_allclose(got, expected["cnn_output_0"], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("model", NAMES)
def test_all_three_savings_give_the_same_ops_and_shapes(model: str) -> None:
    """tf.keras 2 records no shapes: inferred ones (and a second build where a lowering needed
    a rank, BatchNormalization's axis [3]) give the ops and shapes of the Keras 3 files."""
    graphs = [_load(DATA / f"{model}{ext}") for ext in (".keras", ".h5", "_tf2.h5")]
    ops = [[(n.id, n.op_type) for n in g.nodes] for g in graphs]
    assert ops[0] == ops[1] == ops[2]
    shapes = [
        {t.id: t.shape for t in g.tensors if t.kind in ("activation", "output")} for g in graphs
    ]
    assert shapes[0] == shapes[1] == shapes[2]
    inputs = [[g.tensors[t].shape for t in g.inputs] for g in graphs]  # tf.keras 2: input_1
    assert inputs[0] == inputs[1] == inputs[2]
    assert not any(t.metadata.get("rank_unknown") for t in graphs[2].tensors)
