"""Conv -> BatchNormalization -> Relu chains run as one step with the same outputs, and the
step's time is split back over the chain's nodes by their FLOPs."""

from __future__ import annotations

from pathlib import Path

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
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if tap:
        outputs.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, None))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, 9, 9])],
        outputs,
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    return path


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
