"""Inputs that once ended in an internal error (exit 3) now end in a located one-line error,
or work (issue 28, item 7): a graph whose outputs are its initializers, with no node; a shape
past int64; a 10,000-deep JSON value for ``edit --set``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.cli.running import run

HUGE = "99999999999999999999"  # past int64: numpy, onnx and onnxruntime all refuse it


def _model(path: Path, nodes: list[onnx.NodeProto], outputs: list[str], rows: int = 2) -> Path:
    """A float model with input ``x`` [2,2] and an initializer ``w`` [rows,2]."""
    w = numpy_helper.from_array(np.ones((rows, 2), np.float32), "w")
    shapes = {"x": [2, 2], "y": [2, 2], "w": [rows, 2]}
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, shapes[o]) for o in outputs],
        [w],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _one_line(r: object) -> str:
    stderr = r.stderr  # type: ignore[attr-defined]
    assert stderr.count("\n") == 1, stderr
    assert "internal error" not in stderr and "Error:" not in stderr, stderr
    return str(stderr)


def test_diff_of_graphs_whose_output_is_an_initializer_and_no_node(tmp_path: Path) -> None:
    only = _model(tmp_path / "only.onnx", [], ["w"])
    wider = _model(tmp_path / "wider.onnx", [], ["w"], rows=3)
    relu = _model(tmp_path / "relu.onnx", [helper.make_node("Relu", ["x"], ["y"], "r")], ["y"])
    r = run("diff", only, only)
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    assert "the graphs are equal" in r.stdout
    r = run("diff", only, wider)
    assert r.returncode == 1, r.stderr
    assert "shape: 2x2 -> 3x2" in r.stdout
    r = run("diff", "--json", only, relu)
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    kinds = {f["kind"] for f in report["findings"]}
    assert {"node added", "output removed", "output added"} <= kinds, kinds
    r = run("diff", relu, only)
    assert r.returncode == 1, r.stderr
    assert "node removed (1):" in r.stdout
