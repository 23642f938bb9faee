"""onnxruntime's element-wise 8-bit operators (com.microsoft): QLinearAdd, QLinearMul,
QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QLinearConcat and QLinearWhere.

Each is ``quantize(f(dequantize(x)))`` with per-tensor scales and zero points. The float work
runs in float32 in the order onnxruntime's CPU kernels use, so that the rounding half to even
and the saturation land on the same integers: a unary op builds a table over all 256 inputs
(dequantize, apply, divide by the output scale) and looks x up in it, as onnxruntime does.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xocview.executor.ops.quantize import EIGHT_BIT, check_dtype, check_float, quantize_rounded
from xocview.executor.registry import kernel

__all__ = [
    "per_tensor_scale",
    "per_tensor_zero",
    "qlinear_add",
    "qlinear_concat",
    "qlinear_leaky_relu",
    "qlinear_mul",
    "qlinear_sigmoid",
    "qlinear_softmax",
    "qlinear_where",
    "requantize_table",
    "to_quantized",
]

MS = "com.microsoft"
F32 = np.float32


def per_tensor_scale(op: str, name: str, s: np.ndarray | None) -> np.float32:
    """A per-tensor scale as a float32 scalar; ValueError unless one float value (a scale
    after an optional input has a default of None in the kernel's signature, but is required)."""
    if s is None:
        raise ValueError(f"{op}: input {name} is required, but the node leaves it out")
    check_float(op, name, s)
    if s.size != 1:
        raise ValueError(f"{op}: {name} has shape {list(s.shape)}; expected a scalar")
    return F32(s.reshape(-1)[0])


def per_tensor_zero(op: str, name: str, z: np.ndarray | None, dtype: np.dtype) -> int:
    """A per-tensor zero point of ``dtype`` as an int (0 when omitted)."""
    if z is None:
        return 0
    check_dtype(op, name, z, (dtype,))
    if z.size != 1:
        raise ValueError(f"{op}: {name} has shape {list(z.shape)}; expected a scalar")
    return int(z.reshape(-1)[0])


def to_quantized(v: np.ndarray, scale: np.float32, zero: int, dtype: np.dtype) -> np.ndarray:
    """saturate(rint(v / scale) + zero) in ``dtype``, dividing in float32 as MLAS does."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = np.divide(np.asarray(v, dtype=F32), scale)
    return quantize_rounded(q, np.asarray(float(zero)), dtype)


def _dequantized(x: np.ndarray, scale: np.float32, zero: int) -> np.ndarray:
    """scale * (x - zero) in float32 (the difference is exact)."""
    return scale * (x.astype(np.int32) - zero).astype(F32)


def requantize_table(
    dtype: np.dtype,
    x_scale: np.float32,
    x_zero: int,
    y_scale: np.float32,
    y_zero: int,
    fn: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """The output for each of the 256 values of ``dtype`` (indexed by value - min): dequantize,
    apply ``fn`` (float32 in and out; None for none), quantize."""
    lo = int(np.iinfo(dtype).min)
    values = np.arange(lo, lo + 256, dtype=np.int32)
    v = _dequantized(values, x_scale, x_zero)
    if fn is not None:
        v = fn(v)
    return to_quantized(v, y_scale, y_zero, dtype)


def _look_up(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    lo = int(np.iinfo(x.dtype).min)
    return table[x.astype(np.int32) - lo] if lo else table[x]


def _unary(
    op: str,
    x: np.ndarray,
    x_scale: np.ndarray,
    x_zero_point: np.ndarray | None,
    y_scale: np.ndarray | None,
    y_zero_point: np.ndarray | None,
    fn: Callable[[np.ndarray], np.ndarray],
) -> np.ndarray:
    check_dtype(op, "X", x, EIGHT_BIT)
    table = requantize_table(
        x.dtype,
        per_tensor_scale(op, "X_scale", x_scale),
        per_tensor_zero(op, "X_zero_point", x_zero_point, x.dtype),
        per_tensor_scale(op, "Y_scale", y_scale),
        per_tensor_zero(op, "Y_zero_point", y_zero_point, x.dtype),
        fn,
    )
    return _look_up(x, table)


def _sigmoid(v: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-v)), worked in float64 and rounded once to float32."""
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-v.astype(np.float64)))).astype(F32)


@kernel("QLinearSigmoid", domain=MS)
def qlinear_sigmoid(
    X: np.ndarray,
    X_scale: np.ndarray,
    X_zero_point: np.ndarray | None = None,
    Y_scale: np.ndarray | None = None,
    Y_zero_point: np.ndarray | None = None,
) -> np.ndarray:
    """quantize(sigmoid(dequantize(X))) by a 256-entry table.

    onnxruntime fills its table with MLAS's rational approximation of the logistic, a few
    float32 ulps from the true value; a table entry right at a rounding tie may differ by 1.
    """
    return _unary("QLinearSigmoid", X, X_scale, X_zero_point, Y_scale, Y_zero_point, _sigmoid)


@kernel("QLinearLeakyRelu", domain=MS)
def qlinear_leaky_relu(
    X: np.ndarray,
    X_scale: np.ndarray,
    X_zero_point: np.ndarray | None = None,
    Y_scale: np.ndarray | None = None,
    Y_zero_point: np.ndarray | None = None,
    *,
    alpha: float = 0.01,
) -> np.ndarray:
    """quantize(leaky_relu(dequantize(X))) by a 256-entry table."""
    a = F32(alpha)

    def leaky(v: np.ndarray) -> np.ndarray:
        return np.where(v >= 0, v, a * v).astype(F32)

    return _unary("QLinearLeakyRelu", X, X_scale, X_zero_point, Y_scale, Y_zero_point, leaky)


# --- Add and Mul ---------------------------------------------------------------------------------


def _binary_operands(
    op: str,
    a: np.ndarray,
    a_zero_point: np.ndarray | None,
    b: np.ndarray | None,
    b_zero_point: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """A - A_zero_point and B - B_zero_point as float32 (exact), after the type checks."""
    check_dtype(op, "A", a, EIGHT_BIT)
    if b is None:
        raise ValueError(f"{op}: input B is required, but the node leaves it out")
    check_dtype(op, "B", b, (a.dtype,))
    da = a.astype(np.int32) - per_tensor_zero(op, "A_zero_point", a_zero_point, a.dtype)
    db = b.astype(np.int32) - per_tensor_zero(op, "B_zero_point", b_zero_point, a.dtype)
    return da.astype(F32), db.astype(F32)


@kernel("QLinearAdd", domain=MS)
def qlinear_add(
    A: np.ndarray,
    A_scale: np.ndarray,
    A_zero_point: np.ndarray | None = None,
    B: np.ndarray | None = None,
    B_scale: np.ndarray | None = None,
    B_zero_point: np.ndarray | None = None,
    C_scale: np.ndarray | None = None,
    C_zero_point: np.ndarray | None = None,
) -> np.ndarray:
    """C = rint((A_scale / C_scale) * (A - A_zero) + (B_scale / C_scale) * (B - B_zero)) + C_zero,
    broadcasting, saturated; in float32 as MLAS computes it."""
    op = "QLinearAdd"
    da, db = _binary_operands(op, A, A_zero_point, B, B_zero_point)
    c_scale = per_tensor_scale(op, "C_scale", C_scale)
    ratio_a = per_tensor_scale(op, "A_scale", A_scale) / c_scale
    ratio_b = per_tensor_scale(op, "B_scale", B_scale) / c_scale
    v = ratio_a * da + ratio_b * db
    zero = per_tensor_zero(op, "C_zero_point", C_zero_point, A.dtype)
    return quantize_rounded(v, np.asarray(float(zero)), A.dtype)


@kernel("QLinearMul", domain=MS)
def qlinear_mul(
    A: np.ndarray,
    A_scale: np.ndarray,
    A_zero_point: np.ndarray | None = None,
    B: np.ndarray | None = None,
    B_scale: np.ndarray | None = None,
    B_zero_point: np.ndarray | None = None,
    C_scale: np.ndarray | None = None,
    C_zero_point: np.ndarray | None = None,
) -> np.ndarray:
    """C = rint((A - A_zero) * (B - B_zero) * (A_scale * B_scale / C_scale)) + C_zero,
    broadcasting, saturated; in float32 as MLAS computes it."""
    op = "QLinearMul"
    da, db = _binary_operands(op, A, A_zero_point, B, B_zero_point)
    ratio = (
        per_tensor_scale(op, "A_scale", A_scale)
        * per_tensor_scale(op, "B_scale", B_scale)
        / per_tensor_scale(op, "C_scale", C_scale)
    )
    v = da * db * ratio
    zero = per_tensor_zero(op, "C_zero_point", C_zero_point, A.dtype)
    return quantize_rounded(v, np.asarray(float(zero)), A.dtype)


# --- Softmax -------------------------------------------------------------------------------------


def _exp_table(x_scale: np.float32, reduce_len: int, signed: bool) -> np.ndarray:
    """onnxruntime's float32 table of exp((i - 255 + shift) * x_scale) for i in 0..255, the
    shift keeping a row's sum of reduce_len entries finite; for int8, entry i sits at i - 128
    taken as a byte, so that x + (127 - max) indexes it directly."""
    shift = max(0.0, float(np.log(np.finfo(F32).max / reduce_len)) - 5.0) / float(x_scale)
    i = np.arange(256, dtype=np.float64)
    with np.errstate(over="ignore"):
        values = np.exp((i - 255 + shift) * float(x_scale)).astype(F32)
    return np.roll(values, -128) if signed else values


@kernel("QLinearSoftmax", domain=MS)
def qlinear_softmax(
    X: np.ndarray,
    X_scale: np.ndarray,
    x_zero_point: np.ndarray | None = None,
    y_scale: np.ndarray | None = None,
    y_zero_point: np.ndarray | None = None,
    *,
    axis: int = -1,
    opset: int,
) -> np.ndarray:
    """quantize(softmax(dequantize(X))) over ``axis`` (opset >= 13) or over all axes from
    ``axis`` on (opset < 13, the old Softmax's 2-D view); x_zero_point cancels out.

    As onnxruntime computes it: each row's max is shifted to the top of a table of float32
    exponentials, the row sums them in order, and an entry becomes
    rint(e * floor(1 / y_scale) / sum) + y_zero_point, saturated.
    """
    op = "QLinearSoftmax"
    check_dtype(op, "X", X, EIGHT_BIT)
    x_scale = per_tensor_scale(op, "X_scale", X_scale)
    inv = F32(np.floor(F32(1) / per_tensor_scale(op, "y_scale", y_scale)))
    zero = per_tensor_zero(op, "y_zero_point", y_zero_point, X.dtype)
    if X.size == 0:
        return X.copy()
    rank = max(X.ndim, 1)
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: axis {axis} is out of range for rank {X.ndim}")
    ax = axis % rank
    x = np.moveaxis(X.reshape(X.shape or (1,)), ax, -1) if opset >= 13 else X
    rows = x.reshape(-1, x.shape[-1]) if opset >= 13 else X.reshape(int(np.prod(X.shape[:ax])), -1)
    signed = X.dtype == np.int8
    table = _exp_table(x_scale, rows.shape[1], signed)
    top = 127 if signed else 255
    index = rows.astype(np.int32) + (top - rows.max(axis=1, keepdims=True).astype(np.int32))
    e = table[index & 0xFF]
    total = np.cumsum(e, axis=1, dtype=F32)[:, -1:]  # in order, as onnxruntime's loop adds
    q = quantize_rounded((e * inv) / total, np.asarray(float(zero)), X.dtype)
    out = q.reshape(x.shape)
    return np.moveaxis(out, -1, ax).reshape(X.shape) if opset >= 13 else out.reshape(X.shape)


# --- Concat and Where ----------------------------------------------------------------------------


@kernel("QLinearConcat", domain=MS)
def qlinear_concat(
    Y_scale: np.ndarray, Y_zero_point: np.ndarray, *inputs: np.ndarray, axis: int
) -> np.ndarray:
    """Concat of (tensor, scale, zero point) triples, each requantized to Y's scale and zero
    point (a copy where they already agree)."""
    op = "QLinearConcat"
    check_dtype(op, "Y_zero_point", Y_zero_point, EIGHT_BIT)
    dtype = Y_zero_point.dtype
    y_scale = per_tensor_scale(op, "Y_scale", Y_scale)
    y_zero = per_tensor_zero(op, "Y_zero_point", Y_zero_point, dtype)
    if not inputs or len(inputs) % 3:
        raise ValueError(
            f"{op}: {len(inputs)} inputs after Y_zero_point; expected (tensor, scale, zero point) "
            "triples"
        )
    parts = []
    for i in range(0, len(inputs), 3):
        x, s, z = inputs[i : i + 3]
        check_dtype(op, f"input {i + 2}", x, (dtype,))
        scale = per_tensor_scale(op, f"input {i + 3}", s)
        zero = per_tensor_zero(op, f"input {i + 4}", z, dtype)
        same = scale == y_scale and zero == y_zero
        parts.append(
            x if same else _look_up(x, requantize_table(dtype, scale, zero, y_scale, y_zero))
        )
    rank = parts[0].ndim
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: axis {axis} is out of range for rank {rank}")
    return np.concatenate(parts, axis=axis)


@kernel("QLinearWhere", domain=MS)
def qlinear_where(
    condition: np.ndarray,
    X: np.ndarray,
    x_scale: np.ndarray,
    x_zero_point: np.ndarray,
    Y: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray,
    z_scale: np.ndarray,
    z_zero_point: np.ndarray,
) -> np.ndarray:
    """where(condition, X, Y) with X and Y requantized to Z's scale and zero point."""
    op = "QLinearWhere"
    check_dtype(op, "condition", condition, (np.dtype(bool),))
    check_dtype(op, "X", X, EIGHT_BIT)
    check_dtype(op, "Y", Y, (X.dtype,))
    dtype = X.dtype
    zs = per_tensor_scale(op, "z_scale", z_scale)
    zz = per_tensor_zero(op, "z_zero_point", z_zero_point, dtype)
    picks = []
    for name, t, s, z in (("x", X, x_scale, x_zero_point), ("y", Y, y_scale, y_zero_point)):
        scale = per_tensor_scale(op, f"{name}_scale", s)
        zero = per_tensor_zero(op, f"{name}_zero_point", z, dtype)
        same = scale == zs and zero == zz
        picks.append(t if same else _look_up(t, requantize_table(dtype, scale, zero, zs, zz)))
    return np.where(condition, picks[0], picks[1])
