"""One ONNX node run by onnxruntime (or onnx's ReferenceEvaluator) next to our kernel: the
per-op suite's yardsticks."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from xocview.executor.registry import lookup

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the per-op suite's reference")


# The dtypes the per-op suites try, and (A, B) shapes for binary ops: equal, either side
# broadcasting, rank mismatch, scalars, zero-length dims.
FLOATS = ["float32", "float64", "float16"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
BROADCAST_SHAPES = [
    ((2, 3, 4), (2, 3, 4)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 3, 4)),
    ((2, 1, 4), (3, 1)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((), ()),
    ((0, 3), (3,)),
    ((2, 0, 3), (1, 3)),
]


def _attr_for_onnx(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return numpy_helper.from_array(value)
    return value


# The default domain's opset in a model whose node is of another domain (ai.onnx.ml,
# ai.onnx.preview, ai.onnx.preview.training): needed beside it, not used by the node.
DEFAULT_DOMAIN_OPSET = 21


def _one_node_model(
    op_type: str,
    inputs: list[np.ndarray | None],
    attrs: dict[str, Any] | None,
    *,
    opset: int,
    domain: str,
    num_outputs: int,
) -> tuple[onnx.ModelProto, dict[str, np.ndarray], list[str]]:
    """A model of one ``op_type`` node of ``domain`` at ``opset``, its feeds and its output
    names. Inputs are x0, x1... (a None input is left out: an empty name), outputs y0, y1...
    of unknown type; numpy attributes become tensors."""
    in_names = ["" if x is None else f"x{i}" for i, x in enumerate(inputs)]
    out_names = [f"y{i}" for i in range(num_outputs)]
    node = helper.make_node(
        op_type,
        in_names,
        out_names,
        domain=domain or None,
        **{k: _attr_for_onnx(v) for k, v in (attrs or {}).items()},
    )
    graph_inputs = [
        helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(x.dtype), list(x.shape))
        for name, x in zip(in_names, inputs, strict=True)
        if x is not None
    ]
    graph_outputs = [onnx.ValueInfoProto(name=name) for name in out_names]
    imports = [helper.make_opsetid("", DEFAULT_DOMAIN_OPSET if domain else opset)]
    if domain:
        imports.append(helper.make_opsetid(domain, opset))
    model = helper.make_model(
        helper.make_graph([node], "single", graph_inputs, graph_outputs), opset_imports=imports
    )
    feeds = {n: x for n, x in zip(in_names, inputs, strict=True) if x is not None}
    return model, feeds, out_names


def ort_run(
    op_type: str,
    inputs: list[np.ndarray | None],
    attrs: dict[str, Any] | None = None,
    *,
    opset: int = 17,
    num_outputs: int = 1,
) -> list[np.ndarray]:
    """Outputs of one ``op_type`` node run by onnxruntime (None inputs are omitted)."""
    model, feeds, out_names = _one_node_model(
        op_type, inputs, attrs, opset=opset, domain="", num_outputs=num_outputs
    )
    model.ir_version = min(model.ir_version, 9)
    model = onnx.shape_inference.infer_shapes(model)
    del model.graph.output[:]
    by_name = {vi.name: vi for vi in model.graph.value_info}
    model.graph.output.extend(
        by_name[n] if n in by_name else onnx.ValueInfoProto(name=n) for n in out_names
    )
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
    )
    return list(session.run(out_names, feeds))


def reference_run(
    op_type: str,
    inputs: list[np.ndarray | None],
    attrs: dict[str, Any] | None = None,
    *,
    opset: int,
    domain: str = "",
    num_outputs: int = 1,
) -> list[np.ndarray]:
    """Outputs of one ``op_type`` node run by onnx's ReferenceEvaluator, the spec's own
    (Python) implementation: the yardstick where onnxruntime lacks the op or the type (preview
    and training domains, opsets past onnxruntime's, bfloat16, float8, int4...) or departs
    from the spec.

    ``opset`` is ``domain``'s (a node of another domain than the default also gets the default
    domain, at DEFAULT_DOMAIN_OPSET); None inputs are omitted and numpy attributes become
    tensors, as in ort_run. Unpack one output as ``(want,) = reference_run(...)``.
    """
    model, feeds, _ = _one_node_model(
        op_type, inputs, attrs, opset=opset, domain=domain, num_outputs=num_outputs
    )
    return list(ReferenceEvaluator(model).run(None, feeds))


def ours(
    op_type: str,
    inputs: list[np.ndarray | None],
    attrs: dict[str, Any] | None = None,
    *,
    opset: int = 17,
    num_outputs: int = 1,
) -> list[np.ndarray]:
    """Outputs of our kernel for the same node, as the runtime would call it."""
    k = lookup(op_type, opset)
    kwargs = dict(attrs or {})
    if k.wants_num_outputs:
        kwargs["num_outputs"] = num_outputs
    out = k.call(*inputs, **kwargs)
    outs = list(out) if isinstance(out, tuple) else [out]
    return [np.asarray(o) for o in outs[:num_outputs]]


def check_op(
    op_type: str,
    inputs: list[np.ndarray | None],
    attrs: dict[str, Any] | None = None,
    *,
    opset: int = 17,
    num_outputs: int = 1,
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> list[np.ndarray]:
    """Assert our kernel matches onnxruntime in values, shape and dtype; returns our outputs."""
    expected = ort_run(op_type, inputs, attrs, opset=opset, num_outputs=num_outputs)
    got = ours(op_type, inputs, attrs, opset=opset, num_outputs=num_outputs)
    assert len(got) == len(expected), f"{op_type}: {len(got)} outputs, expected {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert g.shape == e.shape, f"{op_type} output {i}: shape {g.shape}, expected {e.shape}"
        assert g.dtype == e.dtype, f"{op_type} output {i}: dtype {g.dtype}, expected {e.dtype}"
        if e.dtype.kind in "fc":
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"{op_type} out {i}")
        else:
            np.testing.assert_array_equal(g, e, err_msg=f"{op_type} out {i}")
    return got
