"""Activations spelled out node by node (as torch's exporters write SiLU, GELU and HardSwish)
run as one step: recognised by their values, compared with onnxruntime, timed per node."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from xocview.executor import run
from xocview.executor.activation_fusion import ActivationCluster
from xocview.executor.plan import make_plan
from xocview.formats import load

RNG = np.random.default_rng(7)


def load_bytes(data: bytes, name: str) -> object:
    """The model read by xocview's own loader, from a file as a user opens it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        return load(path)


SHAPE = (2, 3, 40, 50)


def _x(dtype: type = np.float32) -> np.ndarray:
    x = RNG.standard_normal(SHAPE) * 4
    x.reshape(-1)[:6] = [-100.0, -30.0, 0.0, 1e-4, 30.0, 100.0]
    return x.astype(dtype)


def _model(
    nodes: list[onnx.NodeProto],
    scalars: dict[str, float],
    outputs: tuple[str, ...] = ("y",),
    elem: int = TensorProto.FLOAT,
) -> bytes:
    dtype = helper.tensor_dtype_to_np_dtype(elem)
    inits = [numpy_helper.from_array(np.array(v, dtype=dtype), k) for k, v in scalars.items()]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", elem, SHAPE)],
        [helper.make_tensor_value_info(o, elem, None) for o in outputs],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def _both(data: bytes, x: np.ndarray) -> tuple[dict[str, np.ndarray], list[np.ndarray], object]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": x})
    result = run(load_bytes(data, "act.onnx"), feeds={"x": x}, repeat=2)
    return result.outputs, want, result


def _recognised(data: bytes, x: np.ndarray) -> list[str | None]:
    """What each fused cluster of the plan recognises when called on ``x``."""
    graph = load_bytes(data, "act.onnx")
    plan = make_plan(graph)
    named = {graph.tensors[t].id: t for t in range(len(graph.tensors))}
    known = []
    for step in plan.steps:
        fn = step.kernel.fn if step.kernel else None
        if isinstance(fn, ActivationCluster):
            consts = [
                numpy_helper.to_array(i)
                for t in step.inputs[1:]
                for i in onnx.load_from_string(data).graph.initializer
                if named.get(i.name) == t
            ]
            fn(x, *consts)
            known.append(fn.known)
    return known


def n(op: str, ins: list[str], out: str, **attrs: object) -> onnx.NodeProto:
    return helper.make_node(op, ins, [out], name=out, **attrs)


SQRT2 = 1.4142135381698608
CASES = {
    "silu": ([n("Sigmoid", ["x"], "s"), n("Mul", ["x", "s"], "y")], {}, "SiLU"),
    "silu_swapped": ([n("Sigmoid", ["x"], "s"), n("Mul", ["s", "x"], "y")], {}, "SiLU"),
    "gelu_torchscript": (
        [
            n("Div", ["x", "r2"], "d"),
            n("Erf", ["d"], "e"),
            n("Add", ["e", "one"], "a"),
            n("Mul", ["x", "a"], "m"),
            n("Mul", ["m", "half"], "y"),
        ],
        {"r2": SQRT2, "one": 1.0, "half": 0.5},
        "Gelu",
    ),
    "gelu_half_first": (
        [
            n("Mul", ["x", "half"], "h"),
            n("Mul", ["x", "ir2"], "d"),
            n("Erf", ["d"], "e"),
            n("Add", ["one", "e"], "a"),
            n("Mul", ["h", "a"], "y"),
        ],
        {"ir2": 1 / SQRT2, "one": 1.0, "half": 0.5},
        "Gelu",
    ),
    "gelu_tanh_pow": (
        [
            n("Mul", ["x", "half"], "h"),
            n("Pow", ["x", "three"], "p"),
            n("Mul", ["p", "k"], "c"),
            n("Add", ["x", "c"], "s"),
            n("Mul", ["s", "a"], "u"),
            n("Tanh", ["u"], "t"),
            n("Add", ["t", "one"], "o"),
            n("Mul", ["h", "o"], "y"),
        ],
        {"half": 0.5, "three": 3.0, "k": 0.044715, "a": math.sqrt(2 / math.pi), "one": 1.0},
        "Gelu(tanh)",
    ),
    "hardswish_before_opset14": (
        [n("HardSigmoid", ["x"], "h", alpha=1 / 6, beta=0.5), n("Mul", ["x", "h"], "y")],
        {},
        "HardSwish",
    ),
    "quick_gelu": (
        [n("Mul", ["x", "k"], "m"), n("Sigmoid", ["m"], "s"), n("Mul", ["x", "s"], "y")],
        {"k": 1.702},
        "QuickGelu",
    ),
    "unknown_curve_replays": (
        [n("Tanh", ["x"], "t"), n("Mul", ["x", "t"], "y")],
        {},
        None,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_spelled_out_activation_runs_as_one_step_and_matches_onnxruntime(name: str) -> None:
    nodes, scalars, expected = CASES[name]
    data = _model(nodes, scalars)
    x = _x()
    ours, want, result = _both(data, x)
    np.testing.assert_allclose(ours["y"], want[0], rtol=1e-5, atol=1e-5)
    assert ours["y"].dtype == np.float32 and ours["y"].shape == SHAPE
    fused = result.fused  # type: ignore[attr-defined]
    assert len(fused) == 1 and len(next(iter(fused.values()))) == len(nodes) - 1
    assert _recognised(data, x) == [expected]
    times = result.node_times  # type: ignore[attr-defined]
    assert {nd.name for nd in nodes} <= set(times)
    shares = {times[nd.name] for nd in nodes}
    assert len(shares) == 1  # the step's time split evenly over its nodes


def test_an_inner_tensor_the_graph_returns_stays_unfused() -> None:
    data = _model(CASES["silu"][0], {}, outputs=("y", "s"))
    ours, want, result = _both(data, _x())
    assert result.fused == {}  # type: ignore[attr-defined]
    np.testing.assert_allclose(ours["s"], want[1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours["y"], want[0], rtol=1e-5, atol=1e-5)


def test_an_inner_tensor_read_outside_stays_a_tensor() -> None:
    nodes = [*CASES["silu"][0], n("Neg", ["s"], "z")]
    data = _model(nodes, {}, outputs=("y", "z"))
    ours, want, result = _both(data, _x())
    assert result.fused == {}  # type: ignore[attr-defined]
    np.testing.assert_allclose(ours["z"], want[1], rtol=1e-5, atol=1e-6)


def test_a_per_channel_constant_ends_the_cluster() -> None:
    """Mul by a per-channel weight is not element-wise with a scalar: the SiLU after it fuses,
    the Mul stays its own node."""
    graph_nodes = [n("Mul", ["x", "w"], "m"), n("Sigmoid", ["m"], "s"), n("Mul", ["m", "s"], "y")]
    w = numpy_helper.from_array(RNG.standard_normal((3, 1, 1)).astype(np.float32), "w")
    graph = helper.make_graph(
        graph_nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    data = model.SerializeToString()
    ours, want, result = _both(data, _x())
    assert result.fused == {"s": ["y"]}  # type: ignore[attr-defined]
    np.testing.assert_allclose(ours["y"], want[0], rtol=1e-5, atol=1e-5)


def test_half_precision_replays_the_nodes_as_onnxruntime_rounds_them() -> None:
    nodes, scalars, _ = CASES["gelu_torchscript"]
    data = _model(nodes, scalars, elem=TensorProto.FLOAT16)
    x = _x(np.float16)
    ours, want, _ = _both(data, x)
    assert ours["y"].dtype == np.float16
    np.testing.assert_allclose(ours["y"].astype(np.float32), want[0], rtol=2e-3, atol=2e-3)
    assert _recognised(data, x) == [None]
