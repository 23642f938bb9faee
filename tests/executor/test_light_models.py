"""Every ONNX light model runs: its expected output, and random weights against onnxruntime.

The light models make each weight 0.02 with ConstantOfShape, so their outputs are nearly
constant and prove little; the second test gives every weight seeded random values and
compares with onnxruntime on the same model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from xocview.executor import run
from xocview.formats import load

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = sorted(p.stem for p in LIGHT.glob("*.onnx"))


def _graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    inits = {i.name for i in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in inits]


def _dims(vi: onnx.ValueInfoProto) -> tuple[int, ...]:
    return tuple(
        d.dim_value if d.HasField("dim_value") else 1 for d in vi.type.tensor_type.shape.dim
    )


def _backend_feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """The inputs ONNX's backend test gives light models: arange(n) / n of each shape."""
    feeds = {}
    for vi in _graph_inputs(model):
        shape = _dims(vi)
        n = int(np.prod(shape))
        feeds[vi.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
    return feeds


def test_every_light_model_is_found() -> None:
    assert len(MODELS) >= 9, f"expected the ONNX light models under {LIGHT}"


@pytest.mark.parametrize("name", MODELS)
def test_light_model_matches_its_expected_output(name: str) -> None:
    model = onnx.load(LIGHT / f"{name}.onnx")
    expected = numpy_helper.to_array(onnx.load_tensor(str(LIGHT / f"{name}_output_0.pb")))
    result = run(load(LIGHT / f"{name}.onnx"), _backend_feeds(model))
    got = result.outputs[model.graph.output[0].name]
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def _with_random_weights(model: onnx.ModelProto, rng: np.random.Generator) -> onnx.ModelProto:
    """The model with each ConstantOfShape weight replaced by an initializer of random values."""
    shapes = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    keep = []
    for node in model.graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in shapes:
            shape = tuple(int(d) for d in shapes[node.input[0]])
            model.graph.initializer.append(
                numpy_helper.from_array(_weight(shape, rng), node.output[0])
            )
        else:
            keep.append(node)
    del model.graph.node[:]
    model.graph.node.extend(keep)
    return model


def _weight(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if len(shape) >= 2:
        fan_in = max(1, int(np.prod(shape[1:])))
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
    return (rng.random(shape) + 0.5).astype(np.float32)  # scales, biases, variances


@pytest.mark.parametrize("name", MODELS)
def test_light_model_with_random_weights_matches_onnxruntime(name: str, tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the comparison's reference")
    rng = np.random.default_rng(7)
    model = _with_random_weights(onnx.load(LIGHT / f"{name}.onnx"), rng)
    feeds = {}
    for k, vi in enumerate(_graph_inputs(model)):
        shape = _dims(vi)
        feeds[vi.name] = rng.random(shape).astype(np.float32) if k == 0 else _weight(shape, rng)
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    expected = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    result = run(load(path), feeds)
    for vi, want in zip(model.graph.output, expected, strict=True):
        got = result.outputs[vi.name]
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
