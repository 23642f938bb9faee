"""Saving as ONNX: every light model round trips, edits are in the file, weights and metadata
come back, and a save that cannot succeed leaves nothing behind."""

from __future__ import annotations

import gc
import os
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.formats.onnx import models as m
from tests.formats.onnx.running import (
    LIGHT,
    LIGHT_MODELS,
    assert_same_outputs,
    outputs,
    random_feeds,
)
from xocview.errors import FormatError
from xocview.formats import load, save
from xocview.formats.onnx.sidecar import KEY
from xocview.formats.onnx.writer import EXTERNAL_THRESHOLD
from xocview.model import edits


@pytest.mark.parametrize("model", LIGHT_MODELS, ids=lambda p: p.stem)
def test_every_light_model_round_trips(model: Path, tmp_path: Path) -> None:
    """Opened and saved as ONNX: the checker passes, onnxruntime gives the original's outputs,
    and the file opens as the same graph (ids, kinds, shapes, attributes, metadata)."""
    out = tmp_path / model.name
    graph = load(model)
    assert save(graph, out) == []
    onnx.checker.check_model(str(out), full_check=True)
    assert_same_outputs(model, out)
    assert load(out) == graph
    written, source = onnx.load(str(out)), onnx.load(str(model))
    assert written.ir_version == source.ir_version
    assert written.opset_import == source.opset_import
    assert written.producer_name == source.producer_name
    assert [n.op_type for n in written.graph.node] == [n.op_type for n in source.graph.node]


def test_the_light_models_are_there() -> None:
    if not LIGHT.is_dir():
        pytest.skip("the onnx package ships no light models here")
    assert len(LIGHT_MODELS) >= 9


def _light(name: str, tmp_path: Path) -> Path:
    path = LIGHT / f"light_{name}.onnx"
    if not path.exists():
        pytest.skip(f"{path} is not shipped with this onnx")
    return shutil.copy(path, tmp_path / path.name)


def test_an_attribute_edit_is_in_the_written_model(tmp_path: Path) -> None:
    """Gemm alpha changed with the model's edit: the file has it and runs as the same edit
    made on the protobuf itself. (A light model's weights are constants and its softmax
    evens out any change, so the Gemm's own output is compared.)"""
    source = _light("bvlc_alexnet", tmp_path)
    graph = load(source)
    last = [n for n in graph.nodes if n.op_type == "Gemm"][-1]
    logits = graph.tensors[last.outputs[0]].id
    edits.set_attribute(graph, last.id, "alpha", 2.0)
    edits.mark_output(graph, logits)
    out = tmp_path / "edited.onnx"
    save(graph, out)
    written = onnx.load(str(out))
    node = next(n for n in written.graph.node if n.name == last.id)
    alpha = next(a for a in node.attribute if a.name == "alpha")
    assert helper.get_attribute_value(alpha) == 2.0
    expected = onnx.load(str(source))
    proto = next(n for n in expected.graph.node if logits in n.output)
    proto.attribute.append(helper.make_attribute("alpha", 2.0))
    expected.graph.output.append(helper.make_empty_tensor_value_info(logits))
    onnx.save(expected, str(tmp_path / "expected.onnx"))
    feeds = random_feeds(source)
    want = outputs(tmp_path / "expected.onnx", feeds)
    got = outputs(out, feeds)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    original = load(source)
    edits.mark_output(original, logits)
    save(original, tmp_path / "unedited.onnx")
    assert not np.allclose(outputs(tmp_path / "unedited.onnx", feeds)[1], want[1])


def test_a_bypassed_node_is_gone_and_its_readers_read_its_input(tmp_path: Path) -> None:
    source = _light("squeezenet", tmp_path)
    graph = load(source)
    relu = next(n for n in graph.nodes if n.op_type == "Relu")
    before, after = graph.tensors[relu.inputs[0]].id, graph.tensors[relu.outputs[0]].id
    edits.bypass_node(graph, relu.id)
    out = tmp_path / "edited.onnx"
    save(graph, out)
    written = onnx.load(str(out))
    assert relu.id not in {n.name for n in written.graph.node}
    assert len(written.graph.node) == len(onnx.load(str(source)).graph.node) - 1
    expected = onnx.load(str(source))
    for node in expected.graph.node:
        node.input[:] = [before if name == after else name for name in node.input]
    expected.graph.node.remove(next(n for n in expected.graph.node if after in n.output))
    onnx.save(expected, str(tmp_path / "expected.onnx"))
    assert_same_outputs(tmp_path / "expected.onnx", out)


@pytest.mark.parametrize("name", ["bvlc_alexnet", "inception_v1", "squeezenet"])
def test_a_light_models_dropouts_bypassed_leave_its_outputs_as_they_were(
    name: str, tmp_path: Path
) -> None:
    """Dropout is the identity at inference: with every one bypassed (their masks, which
    nothing reads, go along), the written model computes what the original does."""
    source = _light(name, tmp_path)
    graph = load(source)
    drops = [n.id for n in graph.nodes if n.op_type == "Dropout"]
    assert drops
    for node_id in drops:
        edits.bypass_node(graph, node_id)
    out = tmp_path / "no_dropout.onnx"
    save(graph, out)
    written = onnx.load(str(out))
    assert "Dropout" not in {n.op_type for n in written.graph.node}
    onnx.checker.check_model(written, full_check=True)
    assert_same_outputs(source, out)


def test_bypassing_dropout_and_identity_keeps_the_outputs(tmp_path: Path) -> None:
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "W")
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
        helper.make_node("Dropout", ["h"], ["d"], name="drop"),
        helper.make_node("Identity", ["d"], ["i"], name="ident"),
        helper.make_node("Relu", ["i"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "drop",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    source = m.save(model, tmp_path / "drop.onnx")
    g = load(source)
    edits.bypass_node(g, "drop")
    edits.bypass_node(g, "ident")
    out = tmp_path / "out.onnx"
    save(g, out)
    written = onnx.load(str(out))
    assert [n.op_type for n in written.graph.node] == ["MatMul", "Relu"]
    assert list(written.graph.node[1].input) == ["h"]
    onnx.checker.check_model(written, full_check=True)
    assert_same_outputs(source, out)


def test_renamed_nodes_and_tensors_are_written_under_their_new_names(tmp_path: Path) -> None:
    source = m.save(m.mlp(), tmp_path / "mlp.onnx")
    graph = load(source)
    edits.rename_node(graph, "/encoder/fc/MatMul", "project")
    edits.rename_tensor(graph, "h", "projected")
    out = tmp_path / "out.onnx"
    save(graph, out)
    written = onnx.load(str(out))
    first = written.graph.node[0]
    assert (first.name, list(first.output)) == ("project", ["projected"])
    assert list(written.graph.node[1].input) == ["projected", "b"]
    back = load(out)
    assert back.node("project").outputs == [back.index.tensor_position("projected")]
    assert_same_outputs(source, out)


def test_symbolic_dims_and_the_models_own_fields_are_kept(tmp_path: Path) -> None:
    model = m.mlp()
    model.ir_version = 8
    model.doc_string = "the model"
    model.model_version = 3
    source = m.save(model, tmp_path / "mlp.onnx")
    out = tmp_path / "out.onnx"
    save(load(source), out)
    written = onnx.load(str(out))
    assert written.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"
    assert written.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "N"
    assert (written.producer_name, written.producer_version) == ("tests", "1.0")
    assert (written.doc_string, written.model_version) == ("the model", 3)
    assert written.graph.doc_string == "a tiny mlp"
    props = {p.key: p.value for p in written.metadata_props}
    assert props == {"author": "xocview", "quant.scheme": "none"}
    assert [n.doc_string for n in written.graph.node][1] == "bias"
    h = next(vi for vi in written.graph.value_info if vi.name == "h")
    assert [d.dim_param or d.dim_value for d in h.type.tensor_type.shape.dim] == ["N", 3]
    assert load(out) == load(source)


def test_metadata_that_onnx_has_no_field_for_survives(tmp_path: Path) -> None:
    source = m.save(m.mlp(), tmp_path / "mlp.onnx")
    graph = load(source)
    edits.set_metadata(graph, "performance.time.cpu", 1.25, node="/encoder/fc/MatMul")
    edits.set_metadata(graph, "tags", ["slow", "first"], node="/encoder/fc/MatMul")
    edits.set_metadata(graph, "note", {"by": "me"}, tensor="W")
    edits.set_metadata(graph, "source.units", "ms", tensor="h")
    edits.set_metadata(graph, "owner", "team")
    out = tmp_path / "out.onnx"
    save(graph, out)
    props = {p.key for p in onnx.load(str(out)).metadata_props}
    assert KEY in props
    back = load(out)
    assert back == graph
    assert back.node("/encoder/fc/MatMul").metadata["performance"] == {"time": {"cpu": 1.25}}
    assert back.tensor("W").metadata == {"note": {"by": "me"}}
    assert back.metadata["owner"] == "team"
    assert "xocview" not in back.metadata.get("metadata_props", {})  # not shown as a prop


def test_unnamed_nodes_get_their_ids_as_names_and_open_as_before(tmp_path: Path) -> None:
    source = _light("squeezenet", tmp_path)
    graph = load(source)
    out = tmp_path / "out.onnx"
    save(graph, out)
    names = [n.name for n in onnx.load(str(out)).graph.node]
    assert names == [n.id for n in graph.nodes if "children_ids" not in n.metadata]
    unnamed = [n.id for n in graph.nodes if "name" not in n.metadata]
    assert "ConstantOfShape_0" in unnamed  # the reader's id for the file's unnamed node 0
    assert [n.id for n in load(out).nodes if "name" not in n.metadata] == unnamed


def _external_model(folder: Path, name: str = "model.onnx") -> Path:
    """x[N,64] @ W[64,64] + b[64], W (16 KiB) kept in ``<name>.data``, b inline."""
    big = numpy_helper.from_array(
        np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32), "W"
    )
    small = numpy_helper.from_array(np.ones(64, np.float32), "b")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
            helper.make_node("Add", ["h", "b"], ["y"], name="add"),
        ],
        "ext",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 64])],
        [big, small],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = folder / name
    onnx.save(
        model, str(path), save_as_external_data=True, location=name + ".data", size_threshold=1024
    )
    return path


def test_external_data_stays_external_beside_the_model(tmp_path: Path) -> None:
    src_dir, out_dir = tmp_path / "src", tmp_path / "out"
    src_dir.mkdir()
    out_dir.mkdir()
    source = _external_model(src_dir)
    loaded = load(source)
    out = out_dir / "saved.onnx"
    save(loaded, out)
    assert sorted(os.listdir(out_dir)) == ["saved.onnx", "saved.onnx.data"]
    written = onnx.load(str(out), load_external_data=False)
    inits = {i.name: i for i in written.graph.initializer}
    assert inits["W"].data_location == TensorProto.EXTERNAL
    assert {e.key: e.value for e in inits["W"].external_data}["location"] == "saved.onnx.data"
    assert inits["b"].data_location == TensorProto.DEFAULT  # 256 bytes: below the threshold
    assert EXTERNAL_THRESHOLD <= 64 * 64 * 4
    onnx.checker.check_model(str(out), full_check=True)
    back = load(out)
    want = numpy_helper.to_array(onnx.load(str(source)).graph.initializer[0])
    np.testing.assert_array_equal(back.tensor("W").data, want)
    np.testing.assert_array_equal(back.tensor("b").data, np.ones(64, np.float32))
    assert_same_outputs(source, out)


def test_inline_weights_stay_inline(tmp_path: Path) -> None:
    source = _light("squeezenet", tmp_path)
    out = tmp_path / "out" / "s.onnx"
    out.parent.mkdir()
    save(load(source), out)
    assert os.listdir(out.parent) == ["s.onnx"]


def test_saving_over_the_source_keeps_its_external_weights(tmp_path: Path) -> None:
    """The source's data file, which onnx wrote, is not xocview's: it stays as it was, and the
    weights, read from it, go to the next free name, which the notes give."""
    path = _external_model(tmp_path)
    old_data = (tmp_path / "model.onnx.data").read_bytes()
    before = load(path)
    want = np.array(before.tensor("W").data)
    notes = save(load(path), path)
    assert any("'model.onnx.data' was kept" in n and "'model.onnx.1.data'" in n for n in notes)
    np.testing.assert_array_equal(load(path).tensor("W").data, want)
    after = load(path)
    assert after.tensor("W").metadata.pop("external_data")["location"] == "model.onnx.1.data"
    before.tensor("W").metadata.pop("external_data")
    assert after == before
    assert sorted(os.listdir(tmp_path)) == ["model.onnx", "model.onnx.1.data", "model.onnx.data"]
    assert (tmp_path / "model.onnx.data").read_bytes() == old_data
    del before, after  # their unread weights would keep model.onnx.1.data (see in_use)
    gc.collect()  # a graph and its index refer to each other
    save(load(path), path)  # its own data file is replaced: the names take turns
    assert sorted(os.listdir(tmp_path)) == ["model.onnx", "model.onnx.2.data", "model.onnx.data"]
    assert_same_outputs(tmp_path / "model.onnx", path)


# -- saves that cannot succeed ------------------------------------------------------------------


def test_a_missing_folder_is_a_format_error(tmp_path: Path) -> None:
    graph = load(m.save(m.mlp(), tmp_path / "mlp.onnx"))
    with pytest.raises(FormatError, match="folder does not exist"):
        save(graph, tmp_path / "missing" / "out.onnx")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_folder_is_a_format_error_and_leaves_nothing(tmp_path: Path) -> None:
    graph = load(m.save(m.mlp(), tmp_path / "mlp.onnx"))
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(FormatError, match="cannot save"):
            save(graph, locked / "out.onnx")
        assert os.listdir(locked) == []
    finally:
        locked.chmod(0o700)


def test_a_failed_rename_of_the_model_puts_the_old_data_back(tmp_path: Path) -> None:
    """The data file is renamed into place first; when the model's rename then fails (here a
    folder is in the way, as a read-only file system would be for anyone), the old data file
    is back and no temporary file is left."""
    graph = load(_external_model(tmp_path))
    target = tmp_path / "out.onnx"
    target.mkdir()
    (tmp_path / "out.onnx.data").write_bytes(b"old data")
    with pytest.raises(FormatError, match="cannot save"):
        save(graph, target)
    assert (tmp_path / "out.onnx.data").read_bytes() == b"old data"
    names = ["model.onnx", "model.onnx.data", "out.onnx", "out.onnx.data"]
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    assert list(target.iterdir()) == []
    (tmp_path / "out.onnx.data").unlink()
    with pytest.raises(FormatError, match="cannot save"):
        save(graph, target)
    assert not (tmp_path / "out.onnx.data").exists()  # none before, none after


def test_an_op_without_an_onnx_operator_names_the_node(tmp_path: Path) -> None:
    graph = load(m.save(m.mlp(), tmp_path / "mlp.onnx"))
    graph.node("/encoder/act/Relu").op_type = "Swoosh"
    graph.invalidate()
    target = tmp_path / "out.onnx"
    target.write_bytes(b"old")
    with pytest.raises(FormatError) as e:
        save(graph, target)
    assert e.value.place == "node '/encoder/act/Relu'"
    assert "'Swoosh' is not an ONNX operator" in e.value.problem
    assert target.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["mlp.onnx", "out.onnx"]


def test_a_model_the_checker_refuses_is_not_written(tmp_path: Path) -> None:
    graph = load(_light("squeezenet", tmp_path))
    conv = next(n for n in graph.nodes if n.op_type == "Conv")
    edits.set_attribute(graph, conv.id, "pads", [1, 1])  # a 2-D Conv needs four
    with pytest.raises(FormatError) as e:
        save(graph, tmp_path / "out.onnx")
    assert e.value.place == f"node '{conv.id}'"
    assert "pads" in e.value.problem
    assert not (tmp_path / "out.onnx").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["light_squeezenet.onnx"]


def test_an_input_nothing_makes_names_the_reader(tmp_path: Path) -> None:
    graph = load(m.save(m.mlp(), tmp_path / "mlp.onnx"))
    edits.delete_node(graph, "/encoder/fc/Add")
    with pytest.raises(FormatError) as e:
        save(graph, tmp_path / "out.onnx")
    assert e.value.place == "node '/encoder/act/Relu'"
    assert "'h2' is made by no node" in e.value.problem
    assert not (tmp_path / "out.onnx").exists()


def test_a_failure_while_writing_the_data_leaves_the_old_files(tmp_path: Path) -> None:
    graph = load(_external_model(tmp_path))
    out = tmp_path / "out.onnx"
    out.write_bytes(b"old model")
    (tmp_path / "out.onnx.data").write_bytes(b"old data")
    graph.tensor("W").data = np.zeros((2, 2), np.float32)  # values that no longer fit
    with pytest.raises(FormatError, match="tensor 'W'"):
        save(graph, out)
    assert out.read_bytes() == b"old model"
    assert (tmp_path / "out.onnx.data").read_bytes() == b"old data"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "model.onnx",
        "model.onnx.data",
        "out.onnx",
        "out.onnx.data",
    ]
