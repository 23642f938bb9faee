"""onnxruntime's com.microsoft ops next to ours: one-node (or small) models written to disk,
loaded by xocview's reader and run by its executor, compared with onnxruntime on the same feeds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from xocview.executor import run
from xocview.formats.registry import load

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the contrib suite's yardstick")

MS = "com.microsoft"
RTOL, ATOL = 1e-4, 1e-5


def node_model(
    op_type: str,
    inputs: list[np.ndarray | None],
    attrs: dict[str, Any] | None = None,
    *,
    outputs: int | list[str] = 1,
    domain: str = MS,
    initializers: set[int] | None = None,
    opset: int = 17,
    typed: dict[str, int] | None = None,
) -> tuple[onnx.ModelProto, dict[str, np.ndarray], list[str]]:
    """A model of one ``op_type`` node, its feeds and the output names it asks for.

    Inputs are x0, x1... (None: left out by an empty name; indices in ``initializers`` become
    weights); ``outputs`` is a count, or names where "" leaves an optional output out;
    ``typed`` gives outputs an element type where onnxruntime cannot infer one."""
    names = ["" if x is None else f"x{i}" for i, x in enumerate(inputs)]
    while names and names[-1] == "":
        names.pop()
    outs = [f"y{i}" for i in range(outputs)] if isinstance(outputs, int) else outputs
    node = helper.make_node(op_type, names, outs, domain=domain or None, **(attrs or {}))
    weights = initializers or set()
    graph_inputs, inits, feeds = [], [], {}
    for i, (name, x) in enumerate(zip(names, inputs, strict=False)):
        if x is None:
            continue
        if i in weights:
            inits.append(numpy_helper.from_array(x, name))
            continue
        kind = helper.np_dtype_to_tensor_dtype(x.dtype)
        graph_inputs.append(helper.make_tensor_value_info(name, kind, list(x.shape)))
        feeds[name] = x
    kinds = typed or {}
    graph_outputs = [
        helper.make_tensor_value_info(n, kinds[n], None)
        if n in kinds
        else onnx.ValueInfoProto(name=n)
        for n in outs
        if n
    ]
    imports = [helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)]
    graph = helper.make_graph([node], "contrib", graph_inputs, graph_outputs, inits)
    model = helper.make_model(graph, opset_imports=imports, ir_version=9)
    return model, feeds, [n for n in outs if n]


def ort_outputs(
    model: onnx.ModelProto | Path, feeds: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """onnxruntime's outputs, on one thread, its graph optimisations off (the node as it is)."""
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    data = str(model) if isinstance(model, Path) else model.SerializeToString()
    session = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds), strict=True))


def our_outputs(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """xocview's outputs: the file read by its loader, run by its executor."""
    return run(load(path), feeds).outputs


def assert_same(
    got: dict[str, np.ndarray],
    want: dict[str, np.ndarray],
    names: list[str] | None = None,
    rtol: float = RTOL,
    atol: float = ATOL,
) -> None:
    for name in names or list(want):
        g, w = np.asarray(got[name]), want[name]
        assert g.shape == w.shape, f"{name}: shape {g.shape}, onnxruntime {w.shape}"
        assert g.dtype == w.dtype, f"{name}: dtype {g.dtype}, onnxruntime {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=name)


def check_node(
    tmp_path: Path,
    op_type: str,
    inputs: list[np.ndarray | None],
    attrs: dict[str, Any] | None = None,
    *,
    outputs: int | list[str] = 1,
    compare: list[str] | None = None,
    **kwargs: Any,
) -> dict[str, np.ndarray]:
    """Run one node in both engines and assert they agree (on ``compare``, default all outputs)."""
    model, feeds, _ = node_model(op_type, inputs, attrs, outputs=outputs, **kwargs)
    path = tmp_path / f"{op_type}.onnx"
    onnx.save(model, path)
    want = ort_outputs(model, feeds)
    got = our_outputs(path, feeds)
    assert_same(got, want, compare)
    return got


def int32(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.int32)


__all__ = [
    "MS",
    "TensorProto",
    "assert_same",
    "check_node",
    "int32",
    "node_model",
    "ort_outputs",
    "our_outputs",
]
