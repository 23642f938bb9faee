"""Conv -> BatchNormalization -> Relu chains run as one step with the same outputs, and the
step's time is split back over the chain's nodes by their FLOPs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from xocview.executor import run
from xocview.executor.plan import make_plan
from xocview.formats import load

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the yardstick")

RNG = np.random.default_rng(0)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _model(
    tmp_path: Path,
    nodes: list[Any],
    inits: list[Any],
    inputs: dict[str, list[int]],
    outputs: tuple[str, ...] = ("y",),
) -> Path:
    """A model of ``nodes`` returning ``outputs`` (float), opset 15."""
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, s) for k, s in inputs.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, None) for k in outputs],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    return path


def conv_bn_relu(
    tmp_path: Path,
    *,
    bias: bool = True,
    relu: bool = True,
    tap: bool = False,
    training: bool = False,
    group: int = 1,
) -> Path:
    """x[1,4,9,9] -> Conv(8 out, 3x3, pad 1) -> BatchNormalization -> [Relu] -> y; with
    ``tap`` the Conv's output is also a graph output (so the chain is not private)."""
    cin = 4
    w = f32(8, cin // group, 3, 3)
    inits = [numpy_helper.from_array(w, "w")]
    conv_in = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(f32(8), "b"))
        conv_in.append("b")
    scale = RNG.uniform(0.5, 1.5, 8).astype(np.float32)
    var = RNG.uniform(0.5, 1.5, 8).astype(np.float32)
    inits += [
        numpy_helper.from_array(scale, "scale"),
        numpy_helper.from_array(f32(8), "beta"),
        numpy_helper.from_array(f32(8), "mean"),
        numpy_helper.from_array(var, "var"),
    ]
    nodes = [
        helper.make_node("Conv", conv_in, ["c"], "conv", pads=[1, 1, 1, 1], group=group),
        helper.make_node(
            "BatchNormalization",
            ["c", "scale", "beta", "mean", "var"],
            ["n"],
            "bn",
            epsilon=1e-3,
            **({"training_mode": 1} if training else {}),
        ),
    ]
    last = "n"
    if relu:
        nodes.append(helper.make_node("Relu", ["n"], ["r"], "relu"))
        last = "r"
    nodes.append(helper.make_node("Identity", [last], ["y"], "out"))
    outputs = ("y", "c") if tap else ("y",)
    return _model(tmp_path, nodes, inits, {"x": [1, cin, 9, 9]}, outputs)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("relu", [True, False])
@pytest.mark.parametrize("group", [1, 2, 4])
def test_a_fused_chain_gives_what_the_nodes_give_and_what_onnxruntime_gives(
    tmp_path: Path, bias: bool, relu: bool, group: int
) -> None:
    path = conv_bn_relu(tmp_path, bias=bias, relu=relu, group=group)
    g = load(path)
    x = {"x": f32(1, 4, 9, 9)}
    fused = run(g, x, repeat=2)
    plain = run(g, x, repeat=2, fuse=False)
    np.testing.assert_allclose(fused.outputs["y"], plain.outputs["y"], rtol=1e-5, atol=1e-5)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(fused.outputs["y"], session.run(["y"], x)[0], rtol=1e-5, atol=1e-5)
    chain = ["bn", "relu"] if relu else ["bn"]
    assert fused.fused == {"conv": chain} and plain.fused == {}
    assert [s.node_id for s in make_plan(g).steps] == ["conv", "out"]
    assert set(fused.node_times) == set(plain.node_times)  # one time per node of the file
    assert fused.shapes["c"] == fused.shapes["y"]  # the tensors inside the chain, measured


def test_the_fused_time_is_split_by_flops(tmp_path: Path) -> None:
    result = run(load(conv_bn_relu(tmp_path)), {"x": f32(1, 4, 9, 9)}, repeat=3)
    conv, bn, relu = (result.node_times[k] for k in ("conv", "bn", "relu"))
    per_output = 2 * 4 * 3 * 3  # a multiply and an add per tap
    assert conv / bn == pytest.approx(per_output / 2)
    assert bn / relu == pytest.approx(2.0)
    assert result.op_types["bn"] == "BatchNormalization" and result.op_types["relu"] == "Relu"


@pytest.mark.parametrize("case", ["tap", "training"])
def test_a_chain_that_is_not_private_or_not_inference_stays_apart(
    tmp_path: Path, case: str
) -> None:
    path = conv_bn_relu(tmp_path, tap=case == "tap", training=case == "training")
    g = load(path)
    """A Conv output that is also returned must be made; a training BatchNormalization uses the
    batch's statistics, which no folding knows in advance."""
    steps = [s.node_id for s in make_plan(g).steps]
    assert {"conv", "bn"} <= set(steps)
    result = run(g, {"x": f32(1, 4, 9, 9)})
    assert "bn" not in result.fused.get("conv", [])


def _same_as_unfused_and_onnxruntime(path: Path, feeds: dict[str, np.ndarray]) -> Any:
    g = load(path)
    fused = run(g, feeds, repeat=2)
    plain = run(g, feeds, repeat=2, fuse=False)
    np.testing.assert_allclose(fused.outputs["y"], plain.outputs["y"], rtol=1e-5, atol=1e-5)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(
        fused.outputs["y"], session.run(["y"], feeds)[0], rtol=1e-5, atol=1e-5
    )
    assert set(fused.node_times) == set(plain.node_times)
    return fused


@pytest.mark.parametrize("shape", ["per-channel", "scalar", "not per-channel"])
def test_conv_with_batch_norm_mul_add_and_relu_after_it_runs_as_one_step(
    tmp_path: Path, shape: str
) -> None:
    """Inception-v2's and DenseNet's Conv -> BatchNormalization -> Mul -> Add -> Relu: folded
    into the weights when the constants run along the channels, else each node's kernel."""
    cshape = {"per-channel": (8, 1, 1), "scalar": (), "not per-channel": (1, 9)}[shape]
    inits = [
        numpy_helper.from_array(f32(8, 4, 3, 3), "w"),
        numpy_helper.from_array(RNG.uniform(0.5, 1.5, 8).astype(np.float32), "scale"),
        numpy_helper.from_array(f32(8), "beta"),
        numpy_helper.from_array(f32(8), "mean"),
        numpy_helper.from_array(RNG.uniform(0.5, 1.5, 8).astype(np.float32), "var"),
        numpy_helper.from_array(RNG.uniform(0.5, 1.5, cshape).astype(np.float32), "m"),
        numpy_helper.from_array(f32(*cshape), "a"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], "conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "scale", "beta", "mean", "var"], ["n"], "bn"),
        helper.make_node("Mul", ["n", "m"], ["p"], "mul"),
        helper.make_node("Add", ["a", "p"], ["q"], "add"),  # the chain as the second input
        helper.make_node("Relu", ["q"], ["y"], "relu"),
    ]
    result = _same_as_unfused_and_onnxruntime(
        _model(tmp_path, nodes, inits, {"x": [1, 4, 9, 9]}), {"x": f32(1, 4, 9, 9)}
    )
    assert result.fused == {"conv": ["bn", "mul", "add", "relu"]}
    assert result.op_types["mul"] == "Mul" and result.node_times["mul"] > 0


def test_an_affine_chain_after_a_concat_is_one_multiply_add_and_keeps_its_inputs(
    tmp_path: Path,
) -> None:
    """DenseNet's pre-activation: Concat -> BatchNormalization -> Mul -> Add -> Relu."""
    inits = [
        numpy_helper.from_array(RNG.uniform(0.5, 1.5, 6).astype(np.float32), "scale"),
        numpy_helper.from_array(f32(6), "beta"),
        numpy_helper.from_array(f32(6), "mean"),
        numpy_helper.from_array(RNG.uniform(0.5, 1.5, 6).astype(np.float32), "var"),
        numpy_helper.from_array(f32(6, 1, 1), "m"),
        numpy_helper.from_array(f32(1, 6, 1, 1), "a"),
    ]
    nodes = [
        helper.make_node("Concat", ["x1", "x2"], ["c"], "cat", axis=1),
        helper.make_node("BatchNormalization", ["c", "scale", "beta", "mean", "var"], ["n"], "bn"),
        helper.make_node("Mul", ["n", "m"], ["p"], "mul"),
        helper.make_node("Sub", ["p", "a"], ["q"], "sub"),
        helper.make_node("Relu", ["q"], ["y"], "relu"),
    ]
    x1, x2 = f32(1, 2, 5, 5), f32(1, 4, 5, 5)
    kept = (x1.copy(), x2.copy())
    path = _model(tmp_path, nodes, inits, {"x1": [1, 2, 5, 5], "x2": [1, 4, 5, 5]})
    result = _same_as_unfused_and_onnxruntime(path, {"x1": x1, "x2": x2})
    assert result.fused == {"bn": ["mul", "sub", "relu"]}
    np.testing.assert_array_equal(x1, kept[0])
    np.testing.assert_array_equal(x2, kept[1])


def test_a_relu_after_a_sum_works_in_place_but_never_on_an_input(tmp_path: Path) -> None:
    """ResNet's residual Sum -> Relu; a one-input Sum may hand back its input itself."""
    nodes = [
        helper.make_node("Sum", ["x1", "x2"], ["s"], "sum"),
        helper.make_node("Relu", ["s"], ["r"], "relu"),
        helper.make_node("Sum", ["r"], ["s1"], "sum1"),
        helper.make_node("Relu", ["s1"], ["y"], "relu1"),
    ]
    x1, x2 = f32(2, 3), f32(2, 3)
    kept = x1.copy()
    path = _model(tmp_path, nodes, [], {"x1": [2, 3], "x2": [2, 3]})
    result = _same_as_unfused_and_onnxruntime(path, {"x1": x1, "x2": x2})
    assert result.fused == {"sum": ["relu"], "sum1": ["relu1"]}
    np.testing.assert_array_equal(x1, kept)
    g = load(path)
    alone = run(g, {"x1": x1, "x2": x2}, repeat=3)
    np.testing.assert_array_equal(alone.outputs["y"], np.maximum(x1 + x2, 0))


@pytest.mark.parametrize("bounds", ["both", "min only", "max only", "opset 6"])
def test_a_clip_after_a_conv_is_applied_in_place(tmp_path: Path, bounds: str) -> None:
    """MobileNet's Conv -> Clip(0, 6), the bounds as inputs (one may be omitted) or, at
    opset 6, as attributes."""
    inits = [numpy_helper.from_array(f32(8, 4, 3, 3), "w")]
    inits += [
        numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
        numpy_helper.from_array(np.array(0.5, np.float32), "hi"),
    ]
    if bounds == "opset 6":
        clip = helper.make_node("Clip", ["c"], ["y"], "clip", min=0.0, max=0.5)
    else:
        ins = {"both": ["c", "lo", "hi"], "min only": ["c", "lo"], "max only": ["c", "", "hi"]}
        clip = helper.make_node("Clip", ins[bounds], ["y"], "clip")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], "conv", pads=[1, 1, 1, 1]), clip]
    path = _model(tmp_path, nodes, inits, {"x": [1, 4, 9, 9]})
    if bounds == "opset 6":
        model = onnx.load(path)
        model.opset_import[0].version = 6
        model.ir_version = 3
        model.graph.ClearField("initializer")
        model.graph.initializer.append(inits[0])
        onnx.save(model, path)
    result = _same_as_unfused_and_onnxruntime(path, {"x": f32(1, 4, 9, 9)})
    assert result.fused == {"conv": ["clip"]}
    y = result.outputs["y"]
    if bounds != "max only":
        assert y.min() >= 0
    if bounds != "min only":
        assert y.max() <= 0.5
