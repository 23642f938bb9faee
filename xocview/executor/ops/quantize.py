"""Linear quantization kernels: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
QLinearMatMul, QLinearConv and ConvInteger.

Quantized values are the integer types numpy holds (int8, uint8, int16, uint16; int32 for
DequantizeLinear's input). float8, float4, int4 and int2 are refused by name: the runtime
usually refuses their tensors first. Rounding is half to even (np.rint), then the result
saturates to the type's range. Integer products are summed in float64, exact for any sum below
2**53 and handed to BLAS, as MatMulInteger does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xocview.executor.ops.constants import onnx_numpy_dtype
from xocview.executor.ops.conv import conv
from xocview.executor.registry import kernel

__all__ = [
    "conv_integer",
    "dequantize_linear",
    "dynamic_quantize_linear",
    "qlinear_conv",
    "qlinear_matmul",
    "quantize_linear",
]

# The quantized types numpy holds, and the range each saturates to.
_RANGES: dict[np.dtype, tuple[int, int]] = {
    np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
    for t in (np.int8, np.uint8, np.int16, np.uint16)
}
_EIGHT_BIT = (np.dtype(np.int8), np.dtype(np.uint8))


def _names(dtypes: Sequence[np.dtype]) -> str:
    return ", ".join(str(d) for d in dtypes)


def _check_dtype(op: str, name: str, a: np.ndarray, allowed: Sequence[np.dtype]) -> None:
    """ValueError ("not supported") unless ``a`` has one of the ``allowed`` dtypes."""
    if a.dtype not in allowed:
        raise ValueError(
            f"{op}: {name} of dtype {a.dtype} is not supported; expected {_names(allowed)}"
        )


def _check_float(op: str, name: str, a: np.ndarray) -> None:
    """ValueError ("not supported") unless ``a`` holds floats (ml_dtypes' bfloat16 counts)."""
    if a.dtype.kind not in "fV":
        raise ValueError(f"{op}: {name} of dtype {a.dtype} is not supported; expected a float")


def _axis(op: str, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: axis {axis} is out of range for rank {rank}")
    return axis % rank


def _granular(
    op: str, name: str, p: np.ndarray, shape: tuple[int, ...], axis: int, block_size: int
) -> np.ndarray:
    """A scale or zero point as an array that broadcasts to ``shape``: a scalar (per tensor),
    a 1-D tensor along ``axis`` (per axis), or, with ``block_size``, x's shape with the axis
    cut into blocks (each entry repeated ``block_size`` times, the last block possibly short).
    """
    if block_size < 0:
        raise ValueError(f"{op}: block_size {block_size} is negative")
    if block_size == 0 and (p.ndim == 0 or (p.size == 1 and p.ndim == 1)):
        return p.reshape(())
    ax = _axis(op, axis, len(shape))
    if block_size == 0:
        if p.ndim != 1 or p.shape[0] != shape[ax]:
            raise ValueError(
                f"{op}: {name} has shape {list(p.shape)}; expected a scalar or "
                f"[{shape[ax]}] along axis {ax} of {list(shape)}"
            )
        dims = [1] * len(shape)
        dims[ax] = p.shape[0]
        return p.reshape(dims)
    blocks = -(-shape[ax] // block_size)
    want = (*shape[:ax], blocks, *shape[ax + 1 :])
    if p.shape != want:
        raise ValueError(
            f"{op}: {name} has shape {list(p.shape)}; expected {list(want)} for blocks of "
            f"{block_size} along axis {ax} of {list(shape)}"
        )
    full = np.repeat(p, block_size, axis=ax)
    return full[(slice(None),) * ax + (slice(0, shape[ax]),)]


def _saturate(q: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Float values already rounded, clipped to ``dtype``'s range and converted; NaN gives 0."""
    lo, hi = _RANGES[dtype]
    out = np.clip(q, lo, hi)
    np.copyto(out, 0, where=np.isnan(out))
    return out.astype(dtype)


def _quantize_rounded(q: np.ndarray, zero: np.ndarray | None, dtype: np.dtype) -> np.ndarray:
    """saturate(rint(q) + zero) in ``dtype``, the zero point added exactly in float64."""
    r = np.rint(q).astype(np.float64)
    if zero is not None:
        r += zero
    return _saturate(r, dtype)


# --- QuantizeLinear ------------------------------------------------------------------------------


def _dtype_attribute(op: str, attribute: str, code: int) -> np.dtype:
    """The numpy dtype of an ONNX type code given as ``attribute``; "not supported" if none."""
    try:
        return onnx_numpy_dtype(code, op)
    except ValueError as e:
        raise ValueError(f"{op}: {attribute} {code} is not supported ({e})") from None


def _quantize(
    x: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray | None,
    *,
    axis: int = 1,
    block_size: int = 0,
    output_dtype: int = 0,
    precision: int = 0,
) -> np.ndarray:
    """saturate(rint(x / y_scale) + y_zero_point); y_zero_point's dtype, else output_dtype,
    else uint8, is the output's.

    The division runs in ``precision``'s type when given, else in y_scale's (float64 for an
    int32 scale); bfloat16 quotients are computed in float32 and rounded to bfloat16.
    """
    op = "QuantizeLinear"
    if y_zero_point is not None:
        dtype = y_zero_point.dtype
        if output_dtype and _dtype_attribute(op, "output_dtype", output_dtype) != dtype:
            raise ValueError(
                f"{op}: output_dtype {output_dtype} disagrees with y_zero_point's {dtype}"
            )
    elif output_dtype:
        dtype = _dtype_attribute(op, "output_dtype", output_dtype)
    else:
        dtype = np.dtype(np.uint8)
    if dtype not in _RANGES:
        raise ValueError(
            f"{op}: output type {dtype} is not supported; expected {_names(list(_RANGES))}"
        )
    if x.dtype.kind not in "fV" and x.dtype != np.int32:
        raise ValueError(f"{op}: x of dtype {x.dtype} is not supported; expected float or int32")
    if y_scale.dtype.kind not in "fV" and y_scale.dtype != np.int32:
        raise ValueError(
            f"{op}: y_scale of dtype {y_scale.dtype} is not supported; expected float or int32"
        )
    scale = _granular(op, "y_scale", y_scale, x.shape, axis, block_size)
    zero = None
    if y_zero_point is not None:
        if y_zero_point.shape != y_scale.shape:
            raise ValueError(
                f"{op}: y_zero_point has shape {list(y_zero_point.shape)}, "
                f"y_scale {list(y_scale.shape)}; they must agree"
            )
        zero = _granular(op, "y_zero_point", y_zero_point, x.shape, axis, block_size)
        zero = zero.astype(np.float64)
    if precision:
        rounded_to = _dtype_attribute(op, "precision", precision)
        if rounded_to.kind not in "fV":
            raise ValueError(f"{op}: precision {precision} ({rounded_to}) is not supported")
    else:
        rounded_to = scale.dtype if scale.dtype.kind in "fV" else np.dtype(np.float64)
    work = rounded_to if rounded_to.kind == "f" else np.dtype(np.float32)
    xs = x.astype(rounded_to).astype(work)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = np.divide(xs, scale.astype(rounded_to).astype(work))
        if rounded_to != work:
            q = q.astype(rounded_to).astype(work)
        return _quantize_rounded(q, zero, dtype)


@kernel("QuantizeLinear", since=10)
def quantize_linear_10(
    x: np.ndarray, y_scale: np.ndarray, y_zero_point: np.ndarray | None = None
) -> np.ndarray:
    """Opset 10: per tensor (a 1-D scale runs along axis 1, as onnx's reference does)."""
    return _quantize(x, y_scale, y_zero_point)


@kernel("QuantizeLinear", since=13)
def quantize_linear_13(
    x: np.ndarray, y_scale: np.ndarray, y_zero_point: np.ndarray | None = None, *, axis: int = 1
) -> np.ndarray:
    """Opset 13: per tensor or per ``axis``."""
    return _quantize(x, y_scale, y_zero_point, axis=axis)


@kernel("QuantizeLinear", since=19)
def quantize_linear_19(
    x: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray | None = None,
    *,
    axis: int = 1,
    saturate: int = 1,
) -> np.ndarray:
    """Opset 19: ``saturate`` only matters for float8 outputs, which are not supported."""
    return _quantize(x, y_scale, y_zero_point, axis=axis)


@kernel("QuantizeLinear", since=21)
def quantize_linear_21(
    x: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray | None = None,
    *,
    axis: int = 1,
    block_size: int = 0,
    output_dtype: int = 0,
    saturate: int = 1,
) -> np.ndarray:
    """Opset 21: blocked quantization and ``output_dtype``."""
    return _quantize(
        x, y_scale, y_zero_point, axis=axis, block_size=block_size, output_dtype=output_dtype
    )


@kernel("QuantizeLinear", since=23)
def quantize_linear(
    x: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray | None = None,
    *,
    axis: int = 1,
    block_size: int = 0,
    output_dtype: int = 0,
    precision: int = 0,
    saturate: int = 1,
) -> np.ndarray:
    """Opset 23 on (24, 25 and 28 only added types numpy lacks): ``precision`` of the division."""
    return _quantize(
        x,
        y_scale,
        y_zero_point,
        axis=axis,
        block_size=block_size,
        output_dtype=output_dtype,
        precision=precision,
    )


# --- DequantizeLinear ----------------------------------------------------------------------------

_DEQUANT_INPUTS = (*_RANGES, np.dtype(np.int32))


def _dequantize(
    x: np.ndarray,
    x_scale: np.ndarray,
    x_zero_point: np.ndarray | None,
    *,
    axis: int = 1,
    block_size: int = 0,
    output_dtype: int = 0,
) -> np.ndarray:
    """(x - x_zero_point) * x_scale in output_dtype, else x_scale's dtype.

    The difference is exact; the product runs in float32 for half-precision outputs and in
    the output's type otherwise, then is rounded to the output type.
    """
    op = "DequantizeLinear"
    _check_dtype(op, "x", x, _DEQUANT_INPUTS)
    _check_float(op, "x_scale", x_scale)
    out = _dtype_attribute(op, "output_dtype", output_dtype) if output_dtype else x_scale.dtype
    if out.kind not in "fV":
        raise ValueError(f"{op}: output_dtype {output_dtype} ({out}) is not supported")
    work = np.promote_types(out, np.float32) if out.kind == "f" else np.dtype(np.float32)
    scale = _granular(op, "x_scale", x_scale, x.shape, axis, block_size).astype(work)
    diff = x.astype(np.int64) if x_zero_point is not None else x
    if x_zero_point is not None:
        if x_zero_point.dtype != x.dtype:
            raise ValueError(
                f"{op}: x_zero_point has dtype {x_zero_point.dtype}, x {x.dtype}; they must agree"
            )
        if x_zero_point.shape != x_scale.shape:
            raise ValueError(
                f"{op}: x_zero_point has shape {list(x_zero_point.shape)}, "
                f"x_scale {list(x_scale.shape)}; they must agree"
            )
        diff = diff - _granular(op, "x_zero_point", x_zero_point, x.shape, axis, block_size)
    y = np.multiply(diff.astype(work), scale)
    return y.astype(out, copy=False)


@kernel("DequantizeLinear", since=10)
def dequantize_linear_10(
    x: np.ndarray, x_scale: np.ndarray, x_zero_point: np.ndarray | None = None
) -> np.ndarray:
    """Opset 10: per tensor."""
    return _dequantize(x, x_scale, x_zero_point)


@kernel("DequantizeLinear", since=13)
def dequantize_linear_13(
    x: np.ndarray, x_scale: np.ndarray, x_zero_point: np.ndarray | None = None, *, axis: int = 1
) -> np.ndarray:
    """Opsets 13 and 19: per tensor or per ``axis``."""
    return _dequantize(x, x_scale, x_zero_point, axis=axis)


@kernel("DequantizeLinear", since=21)
def dequantize_linear_21(
    x: np.ndarray,
    x_scale: np.ndarray,
    x_zero_point: np.ndarray | None = None,
    *,
    axis: int = 1,
    block_size: int = 0,
) -> np.ndarray:
    """Opset 21: blocked dequantization."""
    return _dequantize(x, x_scale, x_zero_point, axis=axis, block_size=block_size)


@kernel("DequantizeLinear", since=23)
def dequantize_linear(
    x: np.ndarray,
    x_scale: np.ndarray,
    x_zero_point: np.ndarray | None = None,
    *,
    axis: int = 1,
    block_size: int = 0,
    output_dtype: int = 0,
) -> np.ndarray:
    """Opset 23 on (24, 25 and 28 only added types numpy lacks): ``output_dtype``."""
    return _dequantize(
        x, x_scale, x_zero_point, axis=axis, block_size=block_size, output_dtype=output_dtype
    )


# --- DynamicQuantizeLinear -----------------------------------------------------------------------


@kernel("DynamicQuantizeLinear", since=11)
def dynamic_quantize_linear(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """uint8 y, y_scale and y_zero_point for x's range widened to include 0, in float32.

    A range of zero (x empty or all zeros) gives scale 1, as onnxruntime does.
    """
    op = "DynamicQuantizeLinear"
    _check_dtype(op, "x", x, (np.dtype(np.float32),))
    f = np.float32
    hi = f(max(0.0, float(np.max(x)))) if x.size else f(0)
    lo = f(min(0.0, float(np.min(x)))) if x.size else f(0)
    scale = f(1) if hi == lo else f(hi - lo) / f(255)
    zero = np.rint(np.clip(f(0) - lo / scale, 0, 255))
    with np.errstate(invalid="ignore", over="ignore"):
        y = _quantize_rounded(x / scale, np.asarray(zero, dtype=np.float64), np.dtype(np.uint8))
    return y, np.asarray(scale, dtype=x.dtype), np.asarray(zero, dtype=np.uint8)


# --- QLinearMatMul -------------------------------------------------------------------------------


def _requantize(
    acc: np.ndarray,
    multiplier: np.ndarray,
    y_zero_point: np.ndarray,
    op: str,
) -> np.ndarray:
    """saturate(rint(acc * multiplier) + y_zero_point) in y_zero_point's dtype."""
    _check_dtype(op, "y_zero_point", y_zero_point, _EIGHT_BIT)
    zero = y_zero_point.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return _quantize_rounded(acc * multiplier.astype(np.float64), zero, y_zero_point.dtype)


def _per_row(p: np.ndarray) -> np.ndarray:
    """A 1-D per-row parameter of A (M entries) as a column; other shapes broadcast as given."""
    return p.reshape(-1, 1) if p.ndim == 1 and p.size > 1 else p


@kernel("QLinearMatMul", since=10)
def qlinear_matmul(
    a: np.ndarray,
    a_scale: np.ndarray,
    a_zero_point: np.ndarray,
    b: np.ndarray,
    b_scale: np.ndarray,
    b_zero_point: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray,
) -> np.ndarray:
    """saturate(rint((A - a_zero) @ (B - b_zero) * a_scale * b_scale / y_scale) + y_zero).

    Per-row A and per-column B parameters broadcast (a 1-D per-row one has M entries). The
    requantisation multiplier is computed in the scales' own type, as onnx's reference does.
    Opset 21 only added float16 and bfloat16 scales.
    """
    op = "QLinearMatMul"
    for name, t in (("a", a), ("a_zero_point", a_zero_point), ("b", b)):
        _check_dtype(op, name, t, _EIGHT_BIT)
    _check_dtype(op, "b_zero_point", b_zero_point, _EIGHT_BIT)
    for name, s in (("a_scale", a_scale), ("b_scale", b_scale), ("y_scale", y_scale)):
        _check_float(op, name, s)
    a64 = a.astype(np.float64) - _per_row(a_zero_point).astype(np.float64)
    b64 = b.astype(np.float64) - b_zero_point.astype(np.float64)
    acc = np.matmul(a64, b64)
    multiplier = np.asarray(_per_row(a_scale) * b_scale / y_scale)
    return _requantize(acc, multiplier, y_zero_point, op)


# --- ConvInteger and QLinearConv -----------------------------------------------------------------


def _shifted(
    op: str,
    x: np.ndarray,
    x_zero_point: np.ndarray | None,
    w: np.ndarray,
    w_zero_point: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """x - x_zero_point and w - w_zero_point in float64 (exact integers), so that the Conv
    kernel pads with the zero point. w_zero_point may hold one entry per output channel."""
    _check_dtype(op, "x", x, _EIGHT_BIT)
    _check_dtype(op, "w", w, _EIGHT_BIT)
    if x.ndim < 3:
        raise ValueError(f"{op}: x has shape {list(x.shape)}; expected (N, C, d1, ...)")
    xs = x.astype(np.float64)
    if x_zero_point is not None:
        _check_dtype(op, "x_zero_point", x_zero_point, (x.dtype,))
        if x_zero_point.size != 1:
            raise ValueError(
                f"{op}: x_zero_point has shape {list(x_zero_point.shape)}; "
                "a per-channel x_zero_point is not supported"
            )
        xs -= float(x_zero_point.reshape(-1)[0])
    ws = w.astype(np.float64)
    if w_zero_point is not None:
        _check_dtype(op, "w_zero_point", w_zero_point, (w.dtype,))
        if w_zero_point.size == 1:
            ws -= float(w_zero_point.reshape(-1)[0])
        elif w_zero_point.shape == (w.shape[0],):
            ws -= w_zero_point.astype(np.float64).reshape((-1,) + (1,) * (w.ndim - 1))
        else:
            raise ValueError(
                f"{op}: w_zero_point has shape {list(w_zero_point.shape)}; "
                f"expected a scalar or [{w.shape[0]}]"
            )
    return xs, ws


@kernel("ConvInteger", since=10)
def conv_integer(
    x: np.ndarray,
    w: np.ndarray,
    x_zero_point: np.ndarray | None = None,
    w_zero_point: np.ndarray | None = None,
    *,
    auto_pad: str = "NOTSET",
    dilations: Sequence[int] | None = None,
    group: int = 1,
    kernel_shape: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
) -> np.ndarray:
    """Conv of the zero-point-shifted 8-bit operands, as int32."""
    xs, ws = _shifted("ConvInteger", x, x_zero_point, w, w_zero_point)
    y = conv(
        xs,
        ws,
        auto_pad=auto_pad,
        dilations=dilations,
        group=group,
        kernel_shape=kernel_shape,
        pads=pads,
        strides=strides,
    )
    return np.rint(y).astype(np.int32)


@kernel("QLinearConv", since=10)
def qlinear_conv(
    x: np.ndarray,
    x_scale: np.ndarray,
    x_zero_point: np.ndarray,
    w: np.ndarray,
    w_scale: np.ndarray,
    w_zero_point: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray,
    B: np.ndarray | None = None,
    *,
    auto_pad: str = "NOTSET",
    dilations: Sequence[int] | None = None,
    group: int = 1,
    kernel_shape: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
) -> np.ndarray:
    """saturate(rint((conv(x - x_zero, w - w_zero) + B) * x_scale * w_scale / y_scale) + y_zero).

    w_scale and w_zero_point may hold one entry per output channel; B is int32, quantised with
    scale x_scale * w_scale and zero point 0.
    """
    op = "QLinearConv"
    for name, s in (("x_scale", x_scale), ("w_scale", w_scale), ("y_scale", y_scale)):
        _check_float(op, name, s)
    xs, ws = _shifted(op, x, x_zero_point, w, w_zero_point)
    acc = conv(
        xs,
        ws,
        auto_pad=auto_pad,
        dilations=dilations,
        group=group,
        kernel_shape=kernel_shape,
        pads=pads,
        strides=strides,
    )
    spatial = (1,) * (acc.ndim - 2)
    if B is not None:
        _check_dtype(op, "B", B, (np.dtype(np.int32),))
        if B.shape != (w.shape[0],):
            raise ValueError(f"{op}: B has shape {list(B.shape)}; expected [{w.shape[0]}]")
        acc += B.astype(np.float64).reshape((1, -1, *spatial))
    if w_scale.size == 1:
        wsc = w_scale.reshape(())
    elif w_scale.shape == (w.shape[0],):
        wsc = w_scale.reshape((1, -1, *spatial))
    else:
        raise ValueError(
            f"{op}: w_scale has shape {list(w_scale.shape)}; expected a scalar or [{w.shape[0]}]"
        )
    multiplier = np.asarray(x_scale.reshape(()) * wsc / y_scale.reshape(()))
    if y_zero_point.size != 1:
        raise ValueError(
            f"{op}: y_zero_point has shape {list(y_zero_point.shape)}; "
            "a per-channel y_zero_point is not supported"
        )
    return _requantize(acc, multiplier, y_zero_point.reshape(()), op)
