"""What onnxruntime's quantizers write runs in xocview as in onnxruntime: small seeded float
models (tests/executor/quant_models.py) quantized here, loaded with xocview's reader and run by
its executor, next to onnxruntime on seeded inputs."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.executor import quant_models as qm
from xocview.executor import run
from xocview.formats.registry import load

ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")
QuantFormat, QuantType = quantization.QuantFormat, quantization.QuantType


@pytest.fixture(autouse=True)
def _quiet_quantizers() -> None:
    logging.getLogger().setLevel(logging.ERROR)  # "consider pre-processing" on every call


def _both(path: Path, x: np.ndarray, optimized: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(ours, onnxruntime's) output y; onnxruntime on one thread, optimized as a user runs it
    unless ``optimized`` is False (then it runs the file's own nodes)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    if not optimized:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    (want,) = session.run(["y"], {"x": x})
    got = run(load(path), {"x": x}).outputs["y"]
    assert got.shape == want.shape and got.dtype == want.dtype
    return got, want


def _contrib_ops(path: Path) -> set[str]:
    return {n.op_type for n in onnx.load(path).graph.node if n.domain == "com.microsoft"}


def _seeded(shape: tuple[int, ...], seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


U8, S8 = QuantType.QUInt8, QuantType.QInt8
# (activations, weights, per_channel, reduce_range): every pairing with 7-bit weights, and the
# full 8-bit ones that do not pair uint8 activations with int8 weights (onnxruntime's AVX2
# uint8 x int8 product saturates sums of product pairs to int16: QLinearConv differs by up to
# 9 there, the documented product does not; per-channel uint8 weights come out int8).
STATIC = [(a, w, pc, True) for a, w in ((U8, U8), (U8, S8), (S8, S8)) for pc in (False, True)]
STATIC += [(U8, U8, False, False), (S8, S8, False, False), (S8, S8, True, False)]


@pytest.mark.parametrize(("activations", "weights", "per_channel", "reduce_range"), STATIC)
def test_static_qoperator_cnn_matches_exactly(
    tmp_path: Path, activations: object, weights: object, per_channel: bool, reduce_range: bool
) -> None:
    """The QLinear family and QGemm from quantize_static: the float output is the last
    DequantizeLinear of integers, so equal integers give equal floats."""
    source = qm.save(qm.cnn(), tmp_path, "cnn.onnx")
    out = tmp_path / "cnn.qop.onnx"
    quantization.quantize_static(
        source,
        out,
        qm.Calibration("x", qm.CNN_INPUT),
        quant_format=QuantFormat.QOperator,
        activation_type=activations,
        weight_type=weights,
        per_channel=per_channel,
        reduce_range=reduce_range,
    )
    assert {"QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu", "QGemm"} <= (
        _contrib_ops(out)
    )
    assert {"QLinearAveragePool", "QLinearGlobalAveragePool", "QLinearConcat"} <= _contrib_ops(out)
    assert "QLinearSoftmax" in _contrib_ops(out)
    for seed in range(3):
        got, want = _both(out, _seeded(qm.CNN_INPUT, seed))
        np.testing.assert_array_equal(got, want)


def test_static_qdq_cnn_within_one_output_step(tmp_path: Path) -> None:
    """A QDQ file's float ops (Conv, AveragePool...) add in another order than onnxruntime's,
    so a value at a rounding tie of the next QuantizeLinear may land one step away, and the
    step travels on: the softmax output (scale 1/255) is allowed one step. (With int8 weights
    2-3 steps were seen: AveragePool's last-bit difference flips two values, which then flip
    others downstream.)"""
    source = qm.save(qm.cnn(), tmp_path, "cnn.onnx")
    out = tmp_path / "cnn.qdq.onnx"
    quantization.quantize_static(
        source, out, qm.Calibration("x", qm.CNN_INPUT), quant_format=QuantFormat.QDQ
    )
    step = 1 / 255 + 1e-6
    for seed in range(3):
        got, want = _both(out, _seeded(qm.CNN_INPUT, seed), optimized=False)
        np.testing.assert_allclose(got, want, rtol=0, atol=step)


@pytest.mark.parametrize(
    ("model", "shape"), [(qm.mlp, qm.MLP_INPUT), (qm.lstm, qm.LSTM_INPUT)], ids=["mlp", "lstm"]
)
@pytest.mark.parametrize("weights", [QuantType.QUInt8, QuantType.QInt8])
def test_dynamic_quantization_matches(
    tmp_path: Path, model: object, shape: tuple[int, ...], weights: object
) -> None:
    """quantize_dynamic: DynamicQuantizeLinear/MatMulInteger chains and DynamicQuantizeLSTM.
    With reduce_range (7-bit weights, onnxruntime's own advice for AVX2): onnxruntime's uint8 x
    int8 AVX2 kernel saturates sums of product pairs to int16, the documented product does not."""
    source = qm.save(model(), tmp_path, "float.onnx")  # type: ignore[operator]
    out = tmp_path / "dynamic.onnx"
    quantization.quantize_dynamic(source, out, weight_type=weights, reduce_range=True)
    for seed in range(3):
        got, want = _both(out, _seeded(shape, seed))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


_QUANT_DATA = Path(__file__).resolve().parents[1] / "data" / "quant"


@pytest.mark.parametrize("kind", ["sym", "asym"])
def test_matmul_nbits_quantizer_4bit(kind: str) -> None:
    """Files onnxruntime's MatMulNBitsQuantizer wrote (block 32) from qm.mlp(): made by
    tests/data/quant/make_nbits_models.py, as the quantizer needs onnx_ir."""
    out = _QUANT_DATA / f"mlp_nbits4_{kind}.onnx"
    assert "MatMulNBits" in _contrib_ops(out)
    for seed in range(3):
        got, want = _both(out, _seeded(qm.MLP_INPUT, seed))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("weights", [QuantType.QUInt8, QuantType.QInt8])
def test_dynamic_quantization_of_fused_bert_ops(tmp_path: Path, weights: object) -> None:
    """EmbedLayerNormalization and Attention become QEmbedLayerNormalization and QAttention
    (7-bit weights, as above)."""
    source = qm.save(qm.bert_block(), tmp_path, "bert.onnx")
    out = tmp_path / "bert.dynamic.onnx"
    quantization.quantize_dynamic(source, out, weight_type=weights, reduce_range=True)
    assert {"QAttention", "QEmbedLayerNormalization"} <= _contrib_ops(out)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(out), options, providers=["CPUExecutionProvider"])
    graph = load(out)
    for seed in range(3):
        feeds = qm.bert_feeds(seed)
        (want,) = session.run(["y"], feeds)
        np.testing.assert_allclose(run(graph, feeds).outputs["y"], want, rtol=1e-4, atol=1e-5)
