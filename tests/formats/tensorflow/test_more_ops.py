"""The TF ops TFLite's builtins share (SpaceToBatchND, BatchToSpaceND, Conv3D,
Conv3DBackpropInputV2, MaxPool3D, AvgPool3D, Unique, ResizeBicubic) run as ONNX ops and give
TensorFlow's outputs.

more_ops.pb and TensorFlow's outputs for its seeded inputs (more_ops_io.npz) are made by
tests/data/tensorflow/make_more_ops.py; most of the ops read activations whose shapes the
frozen graph does not give.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from xocview.errors import RunError
from xocview.executor import run
from xocview.formats.source import Source
from xocview.formats.tensorflow import reader
from xocview.formats.tensorflow.ops import TF_ONNX
from xocview.formats.tensorflow.protos import message
from xocview.model import Graph, validate

DATA = Path(__file__).resolve().parents[2] / "data" / "tensorflow"
RTOL, ATOL = 1e-4, 1e-5
OPS = (
    "SpaceToBatchND",
    "BatchToSpaceND",
    "Conv3D",
    "Conv3DBackpropInputV2",
    "MaxPool3D",
    "AvgPool3D",
    "Unique",
    "ResizeBicubic",
)


@pytest.fixture(scope="module")
def graph() -> Graph:
    return reader.load(Source(DATA / "more_ops.pb"))


@pytest.fixture(scope="module")
def io() -> dict[str, np.ndarray]:
    with np.load(DATA / "more_ops_io.npz") as z:
        return {k: z[k] for k in z.files}


def test_every_op_is_mapped(graph: Graph) -> None:
    assert set(OPS) <= set(TF_ONNX)
    left = [
        n.op_type
        for n in graph.nodes
        if n.metadata.get("domain") == "tensorflow" and "children_ids" not in n.metadata
    ]
    assert left == []
    groups = {n.op_type for n in graph.nodes if n.metadata.get("derived") == "tensorflow"}
    assert set(OPS) <= groups  # (each drawn as the group of ONNX ops it runs as)
    assert not [f for f in validate(graph) if f.severity == "error"]


def test_outputs_equal_tensorflows(graph: Graph, io: dict[str, np.ndarray]) -> None:
    feeds = {k[3:]: v for k, v in io.items() if k.startswith("in:")}
    want = {k[4:]: v for k, v in io.items() if k.startswith("out:")}
    got = run(graph, feeds).outputs
    assert sorted(graph.tensors[t].id for t in graph.outputs) == sorted(want)
    assert len(want) == 18
    for name, value in want.items():
        assert got[name].shape == value.shape and got[name].dtype == value.dtype, name
        np.testing.assert_allclose(got[name], value, rtol=RTOL, atol=ATOL, err_msg=name)


def _changed(tmp_path: Path, op: str, change: Callable[[Any], None]) -> Graph:
    """more_ops.pb with the first ``op`` node changed by ``change``."""
    gd = message("GraphDef")()
    gd.ParseFromString((DATA / "more_ops.pb").read_bytes())
    change(next(n for n in gd.node if n.op == op))
    path = tmp_path / "changed.pb"
    path.write_bytes(gd.SerializeToString())
    return reader.load(Source(path))


def _reason(graph: Graph, op: str) -> str:
    node = next(n for n in graph.nodes if n.op_type == op and "children_ids" not in n.metadata)
    assert node.metadata["domain"] == "tensorflow"
    assert len(graph.tensors) == len({t.id for t in graph.tensors})  # nothing half-written
    return str(node.metadata["not_mapped"])


def test_crops_that_are_not_constant_leave_the_op_with_its_reason(
    tmp_path: Path, io: dict[str, np.ndarray]
) -> None:
    def crops_from_input(nd: Any) -> None:
        nd.input[2] = "k"

    graph = _changed(tmp_path, "BatchToSpaceND", crops_from_input)
    assert "not a constant" in _reason(graph, "BatchToSpaceND")
    with pytest.raises(RunError, match="BatchToSpaceND"):
        run(graph, {k[3:]: v for k, v in io.items() if k.startswith("in:")})


@pytest.mark.parametrize(
    ("op", "attr", "value", "reason"),
    [
        ("Conv3D", "strides", [1, 1, 1, 1], "strides has 4 entries, not 5"),
        ("MaxPool3D", "padding", "EXPLICIT", "padding EXPLICIT"),
        ("Conv3DBackpropInputV2", "data_format", "NHWC", "data_format NHWC"),
    ],
)
def test_attributes_that_do_not_fit_leave_the_op_with_its_reason(
    tmp_path: Path, op: str, attr: str, value: object, reason: str
) -> None:
    def set_attr(nd: Any) -> None:
        if isinstance(value, list):
            del nd.attr[attr].list.i[:]
            nd.attr[attr].list.i.extend(value)
        else:
            nd.attr[attr].s = str(value).encode()

    assert reason in _reason(_changed(tmp_path, op, set_attr), op)


def _const(gd: Any, name: str, value: np.ndarray) -> None:
    nd = gd.node.add(name=name, op="Const")
    code = 1 if value.dtype == np.float32 else 3
    nd.attr["dtype"].type = code
    nd.attr["value"].tensor.dtype = code
    for d in value.shape:
        nd.attr["value"].tensor.tensor_shape.dim.add(size=d)
    nd.attr["value"].tensor.tensor_content = value.tobytes()


def _layout_3d(tmp_path: Path, fmt: str) -> Path:
    """x -> Conv3D -> Conv3DBackpropInputV2, MaxPool3D and AvgPool3D, in data format ``fmt``,
    the same seeded weights either way."""
    rng = np.random.default_rng(8)
    gd = message("GraphDef")()
    gd.node.add(name="x", op="Placeholder").attr["dtype"].type = 1
    _const(gd, "w", rng.standard_normal((2, 3, 2, 3, 4)).astype(np.float32))
    _const(gd, "wt", rng.standard_normal((3, 2, 2, 2, 4)).astype(np.float32))
    sizes = [1, 2, 5, 7, 6] if fmt == "NCDHW" else [1, 5, 7, 6, 2]
    _const(gd, "sizes", np.array(sizes, np.int32))

    def five(d: int, h: int, w: int) -> list[int]:
        return [1, 1, d, h, w] if fmt == "NCDHW" else [1, d, h, w, 1]

    def add(name: str, op: str, inputs: list[str], padding: str, **lists: list[int]) -> None:
        nd = gd.node.add(name=name, op=op, input=inputs)
        nd.attr["T"].type = 1
        nd.attr["data_format"].s = fmt.encode()
        nd.attr["padding"].s = padding.encode()
        for key, value in lists.items():
            nd.attr[key].list.i.extend(value)

    add("conv", "Conv3D", ["x", "w"], "SAME", strides=five(1, 2, 2))
    add("back", "Conv3DBackpropInputV2", ["sizes", "wt", "conv"], "SAME", strides=five(1, 2, 2))
    add("max", "MaxPool3D", ["conv"], "SAME", ksize=five(2, 2, 3), strides=five(2, 1, 2))
    add("avg", "AvgPool3D", ["conv"], "VALID", ksize=five(3, 2, 2), strides=five(1, 2, 1))
    path = tmp_path / f"{fmt}.pb"
    path.write_bytes(gd.SerializeToString())
    return path


def test_ncdhw_ops_give_the_ndhwc_results_transposed(tmp_path: Path) -> None:
    """TensorFlow runs NCDHW 3-D ops only on GPUs: that mapping is held to the NDHWC one,
    which matches TensorFlow's outputs above."""
    volume = np.random.default_rng(9).standard_normal((1, 5, 7, 6, 3)).astype(np.float32)
    ndhwc = reader.load(Source(_layout_3d(tmp_path, "NDHWC")))
    ncdhw = reader.load(Source(_layout_3d(tmp_path, "NCDHW")))
    for graph in (ndhwc, ncdhw):
        assert not [n for n in graph.nodes if n.metadata.get("not_mapped")]
    want = run(ndhwc, {"x": volume}).outputs
    got = run(ncdhw, {"x": volume.transpose(0, 4, 1, 2, 3)}).outputs
    assert want["back"].shape == (1, 5, 7, 6, 2)
    for name in ("back", "max", "avg"):
        assert want[name].ndim == 5 and want[name].size > 8
        expect = want[name].transpose(0, 4, 1, 2, 3)
        np.testing.assert_allclose(got[name], expect, rtol=RTOL, atol=ATOL, err_msg=name)
