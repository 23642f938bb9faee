"""onnxruntime's quantized com.microsoft kernels, one node at a time, against onnxruntime on
seeded inputs: integer outputs exact, float outputs to 1e-4 relative."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

from tests.executor.quant_models import ort_contrib
from xocview.executor.registry import lookup

pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(29)
EIGHT = [np.uint8, np.int8]


@pytest.fixture(autouse=True)
def _own_draws() -> None:
    """Each test draws the same inputs whichever tests ran before it (``-k``, order)."""
    global RNG
    RNG = np.random.default_rng(29)


def ours(op: str, inputs: list[np.ndarray | None], attrs: dict | None = None, n: int = 1) -> list:
    k = lookup(op, 1, "com.microsoft")
    kwargs: dict[str, Any] = dict(attrs or {})
    if k.wants_num_outputs:
        kwargs["num_outputs"] = n
    out = k.call(*inputs, **kwargs)
    return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]


def check(op: str, inputs: list[np.ndarray | None], attrs: dict | None = None, n: int = 1) -> None:
    want = ort_contrib(op, inputs, attrs, n)
    got = ours(op, inputs, attrs, n)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype, (op, g.shape, w.shape, g.dtype, w.dtype)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=op)
        else:
            np.testing.assert_array_equal(g, w, err_msg=op)


def q(dtype: Any, *shape: int, bits: int = 8) -> np.ndarray:
    info = np.iinfo(dtype)
    lo = info.min >> (8 - bits)
    return RNG.integers(lo, lo + (1 << bits), shape).astype(dtype)


def scale(*shape: int) -> np.ndarray:
    return np.asarray(RNG.uniform(0.002, 0.2, shape), dtype=np.float32)


def zero(dtype: Any) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.asarray(RNG.integers(info.min // 2, info.max // 2), dtype=dtype)


def floats(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# --- QLinear element-wise ops: the rounding half to even and the saturation of onnxruntime ----


@pytest.mark.parametrize("dtype", EIGHT)
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("shapes", [((3, 4, 5), (4, 5)), ((2, 1, 5), (3, 1)), ((), (2, 3))])
def test_qlinear_binary(op: str, dtype: Any, shapes: tuple) -> None:
    for _ in range(5):  # random scales: ties and both saturation ends come up
        a, b = q(dtype, *shapes[0]), q(dtype, *shapes[1])
        check(op, [a, scale(), zero(dtype), b, scale(), zero(dtype), scale(), zero(dtype)])


@pytest.mark.parametrize("dtype", EIGHT)
def test_qlinear_sigmoid_and_leaky_relu_tables(dtype: Any) -> None:
    x = np.arange(np.iinfo(dtype).min, np.iinfo(dtype).max + 1).astype(dtype).reshape(4, 64)
    for _ in range(5):
        check(
            "QLinearSigmoid",
            [x, scale(), zero(dtype), np.asarray(1 / 256, np.float32), zero(dtype)],
        )
        check("QLinearLeakyRelu", [x, scale(), zero(dtype), scale(), zero(dtype)], {"alpha": 0.2})


@pytest.mark.parametrize("dtype", EIGHT)
@pytest.mark.parametrize(("axis", "opset"), [(-1, 13), (1, 13), (1, 12), (0, 13)])
def test_qlinear_softmax(dtype: Any, axis: int, opset: int) -> None:
    y_zero = np.asarray(0 if dtype == np.uint8 else -128, dtype)
    for y_scale in (np.asarray(1 / 256, np.float32), np.asarray(1 / 255, np.float32)):
        x = q(dtype, 3, 4, 7)
        check(
            "QLinearSoftmax",
            [x, scale(), zero(dtype), y_scale, y_zero],
            {"axis": axis, "opset": opset},
        )


def test_qlinear_softmax_one_dominant_entry_saturates() -> None:
    x = np.array([[0, 0, 100], [5, 5, 5]], np.int8)
    check(
        "QLinearSoftmax",
        [
            x,
            *(
                np.asarray(v, t)
                for v, t in ((1, np.float32), (0, np.int8), (1 / 256, np.float32), (-128, np.int8))
            ),
        ],
        {"opset": 13},
    )


@pytest.mark.parametrize("dtype", EIGHT)
def test_qlinear_concat_and_where(dtype: Any) -> None:
    a, b = q(dtype, 2, 3, 5), q(dtype, 2, 4, 5)
    y_scale, y_zero = scale(), zero(dtype)
    check(
        "QLinearConcat", [y_scale, y_zero, a, scale(), zero(dtype), b, y_scale, y_zero], {"axis": 1}
    )
    cond = RNG.random((3, 5)) > 0.5
    args = [
        cond,
        a,
        scale(),
        zero(dtype),
        q(dtype, 2, 1, 5),
        scale(),
        zero(dtype),
        scale(),
        zero(dtype),
    ]
    check("QLinearWhere", args)


POOLS = [
    {"kernel_shape": [2, 2], "strides": [2, 2]},
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    {
        "kernel_shape": [3, 3],
        "strides": [2, 2],
        "ceil_mode": 1,
        "pads": [1, 1, 1, 1],
        "count_include_pad": 1,
    },
    {"kernel_shape": [3, 2], "auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"kernel_shape": [2, 2], "channels_last": 1},
]


@pytest.mark.parametrize("dtype", EIGHT)
@pytest.mark.parametrize("attrs", POOLS)
def test_qlinear_average_pool(dtype: Any, attrs: dict) -> None:
    check(
        "QLinearAveragePool",
        [q(dtype, 2, 3, 7, 8), scale(), zero(dtype), scale(), zero(dtype)],
        attrs,
    )


@pytest.mark.parametrize("dtype", EIGHT)
@pytest.mark.parametrize("channels_last", [0, 1])
def test_qlinear_global_average_pool(dtype: Any, channels_last: int) -> None:
    x = q(dtype, 2, 3, 7, 8)
    check(
        "QLinearGlobalAveragePool",
        [x, scale(), zero(dtype), scale(), zero(dtype)],
        {"channels_last": channels_last},
    )


# --- 8-bit products -----------------------------------------------------------------------------
# onnxruntime's AVX2 kernel for uint8 x int8 (vpmaddubsw) saturates each sum of two adjacent
# products to int16, where the documented product (and onnxruntime on VNNI or ARM) is exact;
# int8 weights here keep to 7 bits, as the quantizers' reduce_range makes them, to stay clear.


def _weights(dtype: Any, *shape: int) -> np.ndarray:
    return q(dtype, *shape, bits=7 if dtype == np.int8 else 8)


@pytest.mark.parametrize("b_dtype", EIGHT)
@pytest.mark.parametrize("per_column", [False, True])
def test_dynamic_quantize_matmul(b_dtype: Any, per_column: bool) -> None:
    b = _weights(b_dtype, 16, 12)
    b_scale = scale(12) if per_column else scale()
    b_zero = np.full(12, zero(b_dtype), b_dtype) if per_column else zero(b_dtype)
    check("DynamicQuantizeMatMul", [floats(2, 3, 16), b, b_scale, b_zero, floats(12)])


@pytest.mark.parametrize(
    ("a_dtype", "b_dtype"), [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)]
)
def test_matmul_integer_to_float(a_dtype: Any, b_dtype: Any) -> None:
    a = q(a_dtype, 2, 3, 16)
    args = [
        a,
        _weights(b_dtype, 16, 12),
        scale(),
        scale(12),
        zero(a_dtype),
        zero(b_dtype),
        floats(12),
    ]
    check("MatMulIntegerToFloat", args)


@pytest.mark.parametrize(
    ("a_dtype", "b_dtype"), [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)]
)
@pytest.mark.parametrize("trans", [0, 1])
@pytest.mark.parametrize("quantized_out", [False, True])
def test_qgemm(a_dtype: Any, b_dtype: Any, trans: int, quantized_out: bool) -> None:
    a, b = q(a_dtype, 5, 16), _weights(b_dtype, 16, 12)
    a, b = (a.T.copy(), b.T.copy()) if trans else (a, b)
    c = RNG.integers(-500, 500, 12).astype(np.int32)
    args = [a, scale(), zero(a_dtype), b, scale(12), np.full(12, zero(b_dtype)), c]
    if quantized_out:
        args += [scale(), zero(a_dtype)]
    check("QGemm", args, {"transA": trans, "transB": trans, "alpha": 0.7})


# --- Block-quantized weights ---------------------------------------------------------------------


@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize(("K", "N", "block"), [(64, 10, 32), (80, 6, 16)])
@pytest.mark.parametrize("zeros", ["none", "packed", "float", "bias"])
def test_matmul_nbits(bits: int, K: int, N: int, block: int, zeros: str) -> None:
    if bits == 8 and zeros == "float":
        pytest.skip("onnxruntime's CPU kernel refuses 8-bit weights with float zero points")
    blocks = -(-K // block)
    b = RNG.integers(0, 256, (N, blocks, block * bits // 8)).astype(np.uint8)
    inputs: list[np.ndarray | None] = [floats(2, 3, K), b, scale(N, blocks)]
    if zeros == "packed":
        inputs.append(RNG.integers(0, 256, (N, -(-blocks * bits // 8))).astype(np.uint8))
    elif zeros == "float":
        inputs.append(floats(N, blocks))
    elif zeros == "bias":
        inputs += [None, None, floats(N)]
    check("MatMulNBits", inputs, {"K": K, "N": N, "bits": bits, "block_size": block})


def test_matmul_nbits_float16() -> None:
    b = RNG.integers(0, 256, (6, 2, 16)).astype(np.uint8)
    check(
        "MatMulNBits",
        [floats(3, 64).astype(np.float16), b, scale(6, 2).astype(np.float16)],
        {"K": 64, "N": 6, "block_size": 32},
    )


@pytest.mark.parametrize(
    ("attrs", "extra", "message"),
    [
        ({"bits": 3}, [], "bits 3 is not supported"),
        ({"weight_prepacked": 1}, [], "weight_prepacked 1"),
        ({}, [None, np.arange(64, dtype=np.int32) // 32], "g_idx"),
        ({"block_size": 24}, [], "block_size 24"),
    ],
)
def test_matmul_nbits_refusals(attrs: dict, extra: list, message: str) -> None:
    b = np.zeros((4, 2, 16), np.uint8)
    full = {"K": 64, "N": 4, "block_size": 32, **attrs}
    with pytest.raises(ValueError, match=message):
        ours("MatMulNBits", [floats(2, 64), b, scale(4, 2), *extra], full)


def _gather_ort(
    data: np.ndarray,
    tensor_type: int,
    idx: np.ndarray,
    scales: np.ndarray,
    zp: np.ndarray | None,
    attrs: dict,
) -> np.ndarray:
    """GatherBlockQuantized by onnxruntime with data, scales and zero points as initializers
    (onnxruntime's Python API takes no int4 inputs)."""
    import onnx
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    def init(name: str, a: np.ndarray) -> onnx.TensorProto:
        if a.dtype == np.uint8:
            return numpy_helper.from_array(a, name)
        return helper.make_tensor(name, tensor_type, a.shape, a.astype(np.int32).ravel().tolist())

    inits = [init("d", data), numpy_helper.from_array(scales, "s")] + (
        [init("z", zp)] if zp is not None else []
    )
    names = ["d", "i", "s"] + (["z"] if zp is not None else [])
    node = helper.make_node("GatherBlockQuantized", names, ["y"], domain="com.microsoft", **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("i", onnx.TensorProto.INT64, idx.shape)],
        [onnx.ValueInfoProto(name="y")],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 10
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"i": idx}
    )[0]


@pytest.mark.parametrize("kind", ["int4", "uint4"])
@pytest.mark.parametrize(("gather_axis", "quantize_axis"), [(0, 1), (1, 0), (0, -1)])
@pytest.mark.parametrize("with_zeros", [False, True])
def test_gather_block_quantized_int4(
    kind: str, gather_axis: int, quantize_axis: int, with_zeros: bool
) -> None:
    import onnx

    lo, hi = (-8, 8) if kind == "int4" else (0, 16)
    np_type = ml_dtypes.int4 if kind == "int4" else ml_dtypes.uint4
    tensor_type = onnx.TensorProto.INT4 if kind == "int4" else onnx.TensorProto.UINT4
    data = RNG.integers(lo, hi, (6, 64))
    shape = list(data.shape)
    shape[quantize_axis] = -(-shape[quantize_axis] // 32)
    scales, zp = scale(*shape), RNG.integers(lo, hi, shape) if with_zeros else None
    idx = np.array([[0, 3], [5, -1], [7, 2]]) if gather_axis == 0 else np.array([1, 63, -64, 40])
    attrs = {
        "gather_axis": gather_axis,
        "quantize_axis": quantize_axis,
        "block_size": 32,
        "bits": 4,
    }
    want = _gather_ort(data, tensor_type, idx, scales, zp, attrs)
    zq = None if zp is None else zp.astype(np_type)
    (got,) = ours("GatherBlockQuantized", [data.astype(np_type), idx, scales, zq], attrs)
    np.testing.assert_allclose(got, want, rtol=1e-6)  # index 7 is out of range: zeros


@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("with_zeros", [False, True])
def test_gather_block_quantized_uint8(bits: int, with_zeros: bool) -> None:
    per = 8 // bits
    data = RNG.integers(0, 256, (5, 64 // per)).astype(np.uint8)
    scales = scale(5, 4)
    zp = RNG.integers(0, 256, (5, -(-4 // per))).astype(np.uint8) if with_zeros else None
    idx = np.array([4, 0, 9, -2])
    attrs = {"gather_axis": 0, "quantize_axis": 1, "block_size": 16, "bits": bits}
    want = _gather_ort(data, 0, idx, scales, zp, attrs)
    (got,) = ours("GatherBlockQuantized", [data, idx, scales, zp], attrs)
    np.testing.assert_allclose(got, want, rtol=1e-6)


# --- DynamicQuantizeLSTM -------------------------------------------------------------------------


@pytest.mark.parametrize("w_dtype", EIGHT)
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("steps", [1, 5])
def test_dynamic_quantize_lstm(w_dtype: Any, direction: str, steps: int) -> None:
    hidden, width, d = 8, 6, 2 if direction == "bidirectional" else 1
    w, r = _weights(w_dtype, d, width, 4 * hidden), _weights(w_dtype, d, hidden, 4 * hidden)
    zp = np.full(d, 128 if w_dtype == np.uint8 else 0, w_dtype)
    h0, c0 = floats(d, 3, hidden) * 0.5, floats(d, 3, hidden) * 0.5
    bias = floats(d, 8 * hidden) * 0.1
    inputs = [
        floats(steps, 3, width),
        w,
        r,
        bias,
        None,
        h0,
        c0,
        None,
        np.full(d, 0.01, np.float32),
        zp,
        scale(d),
        zp,
    ]
    check("DynamicQuantizeLSTM", inputs, {"hidden_size": hidden, "direction": direction}, n=3)
