"""TensorFlow graphs run on xocview's executor through the ONNX ops their TF ops map to, and
give TensorFlow's outputs; an op with no mapping is refused by name.

The frozen graphs' inputs and TensorFlow's outputs are in ``<name>_io.npz``
(tests/data/tensorflow/make_graphdef.py; mapped_ops.pb, 50 results of the mapped ops the
other files do not use, by make_runs.py); the SavedModels' in ``<name>_run.npz``
(tests/data/tensorflow/make_runs.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.formats.tensorflow.checks import ATOL, DATA, RTOL, groups_agree, left_unmapped, load
from xocview.errors import RunError
from xocview.executor import run
from xocview.formats import save
from xocview.formats.source import Source
from xocview.formats.tensorflow import reader
from xocview.formats.tensorflow.ops import TF_ONNX
from xocview.formats.tensorflow.protos import message
from xocview.model import Graph, validate


def _check(graph: Graph, values: Path) -> None:
    groups_agree(graph)
    with np.load(values) as z:
        feeds = {k[3:]: z[k] for k in z.files if k.startswith("in:")}
        want = {k[4:]: z[k] for k in z.files if k.startswith("out:")}
    assert sorted(graph.tensors[t].id for t in graph.inputs) == sorted(feeds)
    got = run(graph, feeds).outputs
    assert sorted(graph.tensors[t].id for t in graph.outputs) == sorted(want)
    for name, value in want.items():
        assert got[name].shape == value.shape and got[name].dtype == value.dtype, name
        np.testing.assert_allclose(got[name], value, rtol=RTOL, atol=ATOL, err_msg=name)


FROZEN = ["cnn_frozen.pb", "cnn_frozen.pbtxt", "ops_frozen.pb", "mapped_ops.pb"]


@pytest.mark.parametrize("name", FROZEN)
def test_frozen_graph_runs_to_tensorflows_outputs(name: str) -> None:
    graph = load(name)
    assert left_unmapped(graph) == []
    assert not [f for f in validate(graph) if f.severity == "error"]
    _check(graph, DATA / f"{name.split('.')[0]}_io.npz")


@pytest.mark.parametrize("name", ["keras_cnn", "module_vars"])
def test_saved_model_runs_to_tensorflows_outputs(name: str) -> None:
    graph = load(f"{name}/saved_model.pb")
    assert left_unmapped(graph) == []
    by_id = {n.id: n for n in graph.nodes}
    matmul = next(n for n in graph.nodes if n.metadata.get("tf", {}).get("op") == "MatMul")
    up, calls = matmul.metadata.get("parent_id"), []  # still inside the call's body
    while up is not None:
        calls += [up] if "function" in by_id[up].metadata.get("tf", {}) else []
        up = by_id[up].metadata.get("parent_id")
    assert calls
    _check(graph, DATA / f"{name}_run.npz")


def test_a_mapped_op_keeps_its_tensorflow_name_attributes_and_group() -> None:
    graph = load("cnn_frozen.pb")
    by_id = {n.id: n for n in graph.nodes}
    conv = next(n for n in graph.nodes if n.metadata.get("tf", {}).get("op") == "Conv2D")
    assert conv.op_type == "Conv2D" and conv.metadata["derived"] == "tensorflow"
    assert conv.metadata["tf"]["attrs"]["padding"] in ("SAME", "VALID")
    kids = [by_id[k] for k in conv.metadata["children_ids"]]
    assert [k.op_type for k in kids].count("Transpose") == 3 and "Conv" in [k.op_type for k in kids]
    assert all(k.metadata["parent_id"] == conv.id for k in kids)
    parent = by_id[conv.metadata["parent_id"]]  # its name scope, as before the mapping
    assert parent.metadata["derived"] == "scope" and conv.id in parent.metadata["children_ids"]
    relu = next(n for n in graph.nodes if n.metadata.get("tf", {}).get("op") == "Relu")
    assert relu.op_type == "Relu" and "domain" not in relu.metadata


def _tiny(tmp_path: Path, op: str) -> Path:
    """x -> ``op`` -> y as a binary GraphDef."""
    gd = message("GraphDef")()
    x = gd.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    axis = gd.node.add(name="axis", op="Const")
    axis.attr["dtype"].type = 3
    axis.attr["value"].tensor.dtype = 3
    axis.attr["value"].tensor.int_val.append(0)
    y = gd.node.add(name="y", op=op, input=["x", "axis"])
    y.attr["T"].type = 1
    path = tmp_path / "tiny.pb"
    path.write_bytes(gd.SerializeToString())
    return path


@pytest.mark.parametrize("op", ["Bucketize", "MadeUpOp"])
def test_an_unmapped_op_is_refused_by_name(tmp_path: Path, op: str) -> None:
    assert op not in TF_ONNX
    graph = reader.load(Source(_tiny(tmp_path, op)))
    node = next(n for n in graph.nodes if n.op_type == op)
    assert node.metadata["domain"] == "tensorflow" and op in node.metadata["not_mapped"]
    with pytest.raises(RunError, match=op):
        run(graph, {"x": np.ones(3, np.float32)})


def test_a_mapping_that_does_not_fit_leaves_the_op_with_its_reason(tmp_path: Path) -> None:
    path = _tiny(tmp_path, "Transpose")  # a perm of one entry is fine; make it not constant
    gd = message("GraphDef")()
    gd.ParseFromString(path.read_bytes())
    gd.node[2].input[1] = "x"
    path.write_bytes(gd.SerializeToString())
    graph = reader.load(Source(path))
    node = next(n for n in graph.nodes if n.op_type == "Transpose")
    assert "not a constant" in node.metadata["not_mapped"]
    assert len(graph.tensors) == len({t.id for t in graph.tensors})  # nothing half-written


@pytest.mark.parametrize(
    ("name", "values"),
    [("cnn_frozen.pb", "cnn_frozen_io.npz"), ("keras_cnn/saved_model.pb", "keras_cnn_run.npz")],
)
def test_saved_as_onnx_runs_in_onnxruntime_to_the_same_outputs(
    tmp_path: Path, name: str, values: str
) -> None:
    ort = pytest.importorskip("onnxruntime")
    graph = load(name)
    out = tmp_path / "m.onnx"
    save(graph, out)
    with np.load(DATA / values) as z:
        feeds = {k[3:]: z[k] for k in z.files if k.startswith("in:")}
        want = {k[4:]: z[k] for k in z.files if k.startswith("out:")}
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    assert sorted(names) == sorted(want)
    for key, got in zip(names, session.run(None, feeds), strict=True):
        np.testing.assert_allclose(got, want[key], rtol=RTOL, atol=ATOL, err_msg=key)


def _const(gd: object, name: str, value: np.ndarray) -> None:
    nd = gd.node.add(name=name, op="Const")  # type: ignore[attr-defined]
    code = 1 if value.dtype == np.float32 else 3
    nd.attr["dtype"].type = code
    nd.attr["value"].tensor.dtype = code
    for d in value.shape:
        nd.attr["value"].tensor.tensor_shape.dim.add(size=d)
    nd.attr["value"].tensor.tensor_content = value.tobytes()


def _layout_graph(tmp_path: Path, fmt: str) -> Path:
    """x -> Conv2D -> BiasAdd -> FusedBatchNormV3 -> DepthwiseConv2dNative -> MaxPool and
    AvgPool, every op in data format ``fmt``, the same seeded weights either way."""
    rng = np.random.default_rng(5)
    gd = message("GraphDef")()
    x = gd.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    _const(gd, "w", rng.standard_normal((3, 3, 4, 6)).astype(np.float32))
    _const(gd, "dw", rng.standard_normal((3, 3, 6, 2)).astype(np.float32))
    for name in ("b", "scale", "offset", "mean"):
        _const(gd, name, rng.standard_normal(6).astype(np.float32))
    _const(gd, "var", rng.uniform(0.5, 2, 6).astype(np.float32))

    def four(h: int, w: int) -> list[int]:
        return [1, 1, h, w] if fmt == "NCHW" else [1, h, w, 1]

    def add(name: str, op: str, inputs: list[str], **attrs: object) -> None:
        nd = gd.node.add(name=name, op=op, input=inputs)
        nd.attr["T"].type = 1
        nd.attr["data_format"].s = fmt.encode()
        for key, value in attrs.items():
            if isinstance(value, list):
                nd.attr[key].list.i.extend(value)
            elif isinstance(value, str):
                nd.attr[key].s = value.encode()
            elif isinstance(value, bool):
                nd.attr[key].b = value
            else:
                nd.attr[key].f = float(value)  # type: ignore[arg-type]

    add("conv", "Conv2D", ["x", "w"], strides=four(2, 1), padding="SAME")
    add("bias", "BiasAdd", ["conv", "b"])
    add("bn", "FusedBatchNormV3", ["bias", "scale", "offset", "mean", "var"], epsilon=0.01)
    gd.node[-1].attr["is_training"].b = False
    add("dw_conv", "DepthwiseConv2dNative", ["bn", "dw"], strides=four(1, 2), padding="VALID")
    add("max", "MaxPool", ["dw_conv"], ksize=four(2, 3), strides=four(1, 2), padding="SAME")
    add("avg", "AvgPool", ["dw_conv"], ksize=four(3, 2), strides=four(2, 1), padding="VALID")
    path = tmp_path / f"{fmt}.pb"
    path.write_bytes(gd.SerializeToString())
    return path


def test_nchw_ops_give_the_nhwc_results_transposed(tmp_path: Path) -> None:
    """TensorFlow runs NCHW convolutions and pools only on GPUs: the NCHW mapping is held to
    the NHWC one, which matches TensorFlow's outputs above."""
    image = np.random.default_rng(6).standard_normal((1, 9, 10, 4)).astype(np.float32)
    nhwc = reader.load(Source(_layout_graph(tmp_path, "NHWC")))
    nchw = reader.load(Source(_layout_graph(tmp_path, "NCHW")))
    assert left_unmapped(nhwc) == left_unmapped(nchw) == []
    assert sum(n.op_type == "Transpose" for n in nchw.nodes) < 3  # (the weights' only)
    want = run(nhwc, {"x": image}).outputs
    got = run(nchw, {"x": image.transpose(0, 3, 1, 2)}).outputs
    for name in ("max", "avg"):
        assert want[name].ndim == 4 and want[name].size > 4
        expect = want[name].transpose(0, 3, 1, 2)
        np.testing.assert_allclose(got[name], expect, rtol=RTOL, atol=ATOL, err_msg=name)
