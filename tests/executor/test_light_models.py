"""Every ONNX light model runs: its expected output, and random weights against onnxruntime.

The light models make each weight 0.02 with ConstantOfShape, so their outputs are nearly
constant and prove little; the second test gives every weight seeded random values and
compares with onnxruntime on the same model.

With equal weights every channel of a layer computes the same sum, and most of these models
end in a Softmax of logits of 1e9 and more, where one float32 ULP is far over 1; their
expected output (uniform 0.001) then holds only if the logits of all channels are equal to
the bit. BLAS does not promise that: OpenBLAS's Haswell sgemm kernel, run on AMD EPYC,
rounds rows 6-11 of each 12-row tile a ULP apart from rows 0-5 (as accurate, measured
against float64), so light_squeezenet's 1x1 Conv channels drift a few ULPs apart and its
Softmax of ~9.5e9 is far from uniform. Such an output is checked at the Softmax's input
instead (see ``_check_ill_conditioned_softmax``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

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


# Tolerance of an output against its expected value.
RTOL, ATOL = 1e-4, 1e-5
# Tolerance of a logit difference, relative to the largest logit: about eight float32 ULPs
# (light_squeezenet's logits spread 2048 at 9.5e9, 2.2e-7, on AMD EPYC; 0 in onnxruntime).
LOGIT_RTOL = 1e-6


@pytest.mark.parametrize("name", MODELS)
def test_light_model_matches_its_expected_output(name: str, tmp_path: Path) -> None:
    model = onnx.load(LIGHT / f"{name}.onnx")
    expected = numpy_helper.to_array(onnx.load_tensor(str(LIGHT / f"{name}_output_0.pb")))
    softmax = _producer(model, model.graph.output[0].name, "Softmax")
    path = LIGHT / f"{name}.onnx"
    if softmax is not None:  # also return the Softmax's input, to judge its conditioning
        model.graph.output.append(helper.make_empty_tensor_value_info(softmax.input[0]))
        path = tmp_path / f"{name}.onnx"
        onnx.save(model, path)
    feeds = _backend_feeds(model)
    result = run(load(path), feeds)
    got = result.outputs[model.graph.output[0].name]
    assert got.shape == expected.shape and got.dtype == expected.dtype
    logits = None if softmax is None else result.outputs[softmax.input[0]]
    if logits is None or not _ill_conditioned(logits):
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)
        return
    _check_ill_conditioned_softmax(model, softmax, got, expected, logits, path, feeds)


def _producer(model: onnx.ModelProto, name: str, op: str) -> onnx.NodeProto | None:
    """The node of type ``op`` that makes tensor ``name``, if one does."""
    return next((n for n in model.graph.node if name in n.output and n.op_type == op), None)


def _ill_conditioned(logits: np.ndarray) -> bool:
    """Whether one float32 ULP of the largest logit moves a Softmax output past RTOL.

    d p_i / p_i is about the change of logit i, so past this point the output comparison
    asks for logits equal to the bit, which float32 BLAS does not promise across CPUs.
    """
    return bool(np.spacing(np.abs(logits).max().astype(np.float32)) > RTOL)


def _check_ill_conditioned_softmax(
    model: onnx.ModelProto,
    softmax: onnx.NodeProto,
    got: np.ndarray,
    expected: np.ndarray,
    logits: np.ndarray,
    path: Path,
    feeds: dict[str, np.ndarray],
) -> None:
    """Check a Softmax output whose input is ill-conditioned at that input instead.

    Ours must imply the expected output within what float32 logits of that size can tell
    (``_check_logit_gaps``), still sum to 1 per row, and, where onnxruntime is installed,
    match its logits at RTOL (the softmax alone cannot tell their scale).
    """
    rows = _softmax_rows(model, softmax, logits.shape)
    _check_logit_gaps(logits.reshape(rows), expected.reshape(rows))
    np.testing.assert_allclose(got.reshape(rows).sum(axis=1), 1.0, rtol=RTOL)
    try:
        import onnxruntime as ort
    except ImportError:
        return
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (reference,) = session.run([softmax.input[0]], feeds)
    np.testing.assert_allclose(logits, reference, rtol=0, atol=RTOL * np.abs(reference).max())


def _check_logit_gaps(logits: np.ndarray, expected: np.ndarray) -> None:
    """The expected (rows, classes) softmax implies each logit's gap below its row's largest.

    z_i - max z = log p_i - max log p, which ours must meet within LOGIT_RTOL of the largest
    logit; where p underflowed to 0 the gap need only be below log(float32 tiny). A gap the
    expected output implies below that tolerance (at 1e10, anything under ~1e4) is beyond
    what float32 logits can carry, so is not checked.
    """
    atol = LOGIT_RTOL * float(np.abs(logits).max())
    have = logits.astype(np.float64)
    have -= have.max(axis=1, keepdims=True)
    kept = expected > 0
    with np.errstate(divide="ignore"):
        want = np.log(expected.astype(np.float64))
    want -= want.max(axis=1, keepdims=True)
    np.testing.assert_allclose(have[kept], want[kept], rtol=0, atol=atol)
    floor = float(np.log(np.finfo(np.float32).tiny))
    assert (have[~kept] <= floor + atol).all(), "a logit is too large for its underflowed p"


def _softmax_rows(
    model: onnx.ModelProto, softmax: onnx.NodeProto, shape: tuple[int, ...]
) -> tuple[int, int]:
    """(rows, classes) of a Softmax: from axis on (opset < 13, default 1) or one axis (13+)."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    attrs = {a.name: helper.get_attribute_value(a) for a in softmax.attribute}
    axis = int(attrs.get("axis", 1 if opset < 13 else -1)) % len(shape)
    if opset >= 13 and axis != len(shape) - 1:
        raise AssertionError(f"Softmax over inner axis {axis} of {shape}: not handled here")
    classes = int(np.prod(shape[axis:]))
    return int(np.prod(shape)) // classes, classes


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
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
