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
