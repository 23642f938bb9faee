"""The types numpy lacks (bfloat16, float8, float4, int4, int2): kernels compute them widened
and give them back narrow; Cast and the quantizers see them as they are. The yardstick is onnx's
ReferenceEvaluator (onnxruntime lacks most of these casts on CPU)."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from tests.executor.ort_reference import ours, reference_run
from xocview.executor import run
from xocview.formats import load

F8 = {
    TensorProto.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
    TensorProto.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
    TensorProto.FLOAT8E5M2: ml_dtypes.float8_e5m2,
    TensorProto.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz,
}
SMALL_INTS = {
    TensorProto.INT4: ml_dtypes.int4,
    TensorProto.UINT4: ml_dtypes.uint4,
    TensorProto.INT2: ml_dtypes.int2,
    TensorProto.UINT2: ml_dtypes.uint2,
}


def same_bits(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.itemsize == 1 and got.dtype.kind == "V":
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    else:
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


def spread(n: int = 200, seed: int = 0) -> np.ndarray:
    """Positive and negative floats over many binades, with zeros and ties."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * np.exp2(rng.integers(-12, 12, n))
    return np.concatenate([x, [0.0, -0.0, 0.5, 1.5, 2.5, -3.5, 7.0, 1e6, -1e6]]).astype(np.float32)


# --- kernels computed wide -------------------------------------------------------------------


def test_a_bfloat16_kernel_returns_bfloat16_close_to_the_float32_result() -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4, 5)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((3, 5, 2)).astype(ml_dtypes.bfloat16)
    (got,) = ours("Einsum", [a, b], {"equation": "bij,bjk->bik"}, opset=12)
    assert got.dtype == ml_dtypes.bfloat16
    wide = np.einsum("bij,bjk->bik", a.astype(np.float32), b.astype(np.float32))
    np.testing.assert_array_equal(got, wide.astype(ml_dtypes.bfloat16))  # rounded once
    (soft,) = ours("Softmax", [a], {"axis": -1}, opset=13)
    assert soft.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(soft.astype(np.float32).sum(-1), 1.0, rtol=2**-6)


def test_int4_data_movement_keeps_the_type() -> None:
    x = np.arange(-8, 8, dtype=np.int8).astype(ml_dtypes.int4).reshape(4, 4)
    (got,) = ours("Transpose", [x], {"perm": [1, 0]}, opset=21)
    assert got.dtype == ml_dtypes.int4
    np.testing.assert_array_equal(got.astype(np.int8), x.astype(np.int8).T)


def test_outputs_of_another_type_are_left_alone() -> None:
    """EyeLike's dtype attribute, ArgMax's int64 and a mix of two narrow types stay as made."""
    x = np.ones((3, 3), ml_dtypes.bfloat16)
    (eye,) = ours("EyeLike", [x], {"dtype": TensorProto.FLOAT}, opset=9)
    assert eye.dtype == np.float32
    (arg,) = ours("ArgMax", [x], {"axis": 1}, opset=13)
    assert arg.dtype == np.int64
    y = np.ones((3, 3), ml_dtypes.float8_e4m3fn)
    (mixed,) = ours("Where", [np.eye(3, dtype=bool), x, y.astype(ml_dtypes.bfloat16)], opset=16)
    assert mixed.dtype == ml_dtypes.bfloat16


# --- Cast ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("to", [*F8, TensorProto.FLOAT4E2M1, TensorProto.BFLOAT16])
@pytest.mark.parametrize("saturate", [0, 1])
def test_cast_to_narrow_floats_matches_the_reference(to: int, saturate: int) -> None:
    x = np.concatenate([spread(), np.array([np.inf, -np.inf, np.nan], np.float32)])
    attrs = {"to": to, "saturate": saturate}
    (got,) = ours("Cast", [x], attrs, opset=25)
    same_bits(got, reference_run("Cast", [x], attrs, opset=25)[0])


@pytest.mark.parametrize("to", list(SMALL_INTS))
@pytest.mark.parametrize("src", [np.float32, np.float16])
def test_cast_between_small_ints_and_floats_matches_the_reference(to: int, src: type) -> None:
    x = np.arange(-9.0, 17.0, 0.5).astype(src)
    (got,) = ours("Cast", [x], {"to": to}, opset=25)
    same_bits(got, reference_run("Cast", [x], {"to": to}, opset=25)[0])
    back = helper.np_dtype_to_tensor_dtype(np.dtype(src))
    (wide,) = ours("Cast", [got], {"to": back}, opset=25)
    same_bits(wide, reference_run("Cast", [got], {"to": back}, opset=25)[0])


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
def test_cast_to_e8m0_rounds_to_a_power_of_two(round_mode: str) -> None:
    x = np.abs(spread())
    x = x[x > 0]
    attrs = {"to": TensorProto.FLOAT8E8M0, "round_mode": round_mode}
    (got,) = ours("Cast", [x], attrs, opset=25)
    same_bits(got, reference_run("Cast", [x], attrs, opset=25)[0])
    value = got.astype(np.float64)
    if round_mode == "up":
        assert np.all(value >= x) and np.all(value < 2 * x)
    elif round_mode == "down":
        assert np.all(value <= x) and np.all(value > x / 2)


def test_cast_to_e8m0_special_values_follow_the_spec_table() -> None:
    """Cast's table: saturate + up gives 0 the smallest code and infinity the largest finite
    one; without saturate, 0 and what is past the largest are NaN."""
    x = np.array([0.0, np.inf, np.nan, 3e38], np.float32)
    e8m0 = TensorProto.FLOAT8E8M0
    (sat,) = ours("Cast", [x], {"to": e8m0, "saturate": 1, "round_mode": "up"}, opset=25)
    assert sat.view(np.uint8).tolist() == [0, 254, 255, 254]
    (raw,) = ours("Cast", [x], {"to": e8m0, "saturate": 0, "round_mode": "nearest"}, opset=25)
    assert raw.view(np.uint8).tolist() == [255, 255, 255, 255]
    with pytest.raises(ValueError, match="round_mode 'sideways' is not supported"):
        ours("Cast", [x], {"to": e8m0, "round_mode": "sideways"}, opset=25)


# --- QuantizeLinear and DequantizeLinear --------------------------------------------------------


@pytest.mark.parametrize("to", [*SMALL_INTS, *F8, TensorProto.FLOAT4E2M1])
def test_quantize_and_dequantize_per_axis_match_the_reference(to: int) -> None:
    rng = np.random.default_rng(to)
    x = (rng.standard_normal((3, 8)) * 4).astype(np.float32)
    scale = rng.uniform(0.2, 1.0, 8).astype(np.float32)
    dtype = {**SMALL_INTS, **F8, TensorProto.FLOAT4E2M1: ml_dtypes.float4_e2m1fn}[to]
    zero = np.zeros(8, dtype)
    if to in SMALL_INTS:
        zero = rng.integers(0, 2, 8).astype(np.int8).astype(dtype)
    attrs = {"axis": 1}
    (q,) = ours("QuantizeLinear", [x, scale, zero], attrs, opset=25)
    same_bits(q, reference_run("QuantizeLinear", [x, scale, zero], attrs, opset=25)[0])
    (d,) = ours("DequantizeLinear", [q, scale, zero], attrs, opset=25)
    same_bits(d, reference_run("DequantizeLinear", [q, scale, zero], attrs, opset=25)[0])


def test_blocked_int4_weights_dequantize_like_the_reference() -> None:
    """The weight-only int4 pattern of quantized LLM exports: blocks of 32 along the input axis."""
    rng = np.random.default_rng(7)
    w = rng.integers(-8, 8, (64, 16)).astype(np.int8).astype(ml_dtypes.int4)
    scale = rng.uniform(0.01, 0.1, (2, 16)).astype(np.float32)
    zero = rng.integers(-2, 2, (2, 16)).astype(np.int8).astype(ml_dtypes.int4)
    attrs = {"axis": 0, "block_size": 32}
    (got,) = ours("DequantizeLinear", [w, scale, zero], attrs, opset=21)
    same_bits(got, reference_run("DequantizeLinear", [w, scale, zero], attrs, opset=21)[0])


def test_quantize_to_float8_saturates_only_when_asked() -> None:
    x = np.array([1e6, -1e6, 3.0], np.float32)
    one = np.array(1.0, np.float32)
    zero = np.zeros((), ml_dtypes.float8_e4m3fn)
    (sat,) = ours("QuantizeLinear", [x, one, zero], {"saturate": 1}, opset=25)
    assert sat.astype(np.float32).tolist() == [448.0, -448.0, 3.0]
    (raw,) = ours("QuantizeLinear", [x, one, zero], {"saturate": 0}, opset=25)
    assert np.isnan(raw.astype(np.float32)[:2]).all()


# --- whole models ------------------------------------------------------------------------------


def _save(model: onnx.ModelProto, tmp_path: Path) -> Path:
    onnx.checker.check_model(model, full_check=True)
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    return path


def test_a_bfloat16_model_runs_and_stays_bfloat16(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    w = rng.standard_normal((8, 4)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal(4).astype(ml_dtypes.bfloat16)
    bf16 = TensorProto.BFLOAT16
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["h"]),
            helper.make_node("Add", ["h", "b"], ["a"]),
            helper.make_node("Gelu", ["a"], ["y"]),
        ],
        "bf16",
        [helper.make_tensor_value_info("x", bf16, [2, 8])],
        [helper.make_tensor_value_info("y", bf16, [2, 4])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    x = rng.standard_normal((2, 8)).astype(ml_dtypes.bfloat16)
    got = run(load(_save(model, tmp_path)), {"x": x}).outputs["y"]
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(
        got.astype(np.float32), want.astype(np.float32), rtol=2**-6, atol=1e-3
    )


def test_an_int4_weight_only_quantized_matmul_runs(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    w = rng.integers(-8, 8, (32, 8)).astype(np.int8).astype(ml_dtypes.int4)
    scale = rng.uniform(0.01, 0.1, (1, 8)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("DequantizeLinear", ["w", "s"], ["wf"], axis=0, block_size=32),
            helper.make_node("MatMul", ["x", "wf"], ["y"]),
        ],
        "int4",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 8])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(scale, "s")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    x = rng.standard_normal((3, 32)).astype(np.float32)
    got = run(load(_save(model, tmp_path)), {"x": x}).outputs["y"]
    want = x @ (w.astype(np.float32) * scale)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
