"""Linear quantization kernels: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (the
integer products, QLinearMatMul, QLinearConv and ConvInteger, are in qlinear.py).

Quantized values are integers (int8, uint8, int16, uint16, and ml_dtypes' int4, uint4, int2,
uint2; int32 for DequantizeLinear's input), rounded half to even (np.rint) and saturated to the
type's range; or floats (float8 types, saturated when asked, and float4e2m1), rounded to the
nearest value of the type as a cast does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xocview.executor.ops.constants import cast_value, onnx_numpy_dtype
from xocview.executor.registry import kernel
from xocview.model.dtypes import numpy_type

__all__ = [
    "EIGHT_BIT",
    "check_dtype",
    "check_float",
    "dequantize_linear",
    "dynamic_quantize_linear",
    "quantize_linear",
    "quantize_rounded",
]


def _ml(name: str) -> np.dtype:
    dtype = numpy_type(name)
    assert dtype is not None, name
    return dtype


# The integer types quantized values take, and the range each saturates to.
_RANGES: dict[np.dtype, tuple[int, int]] = {
    np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
    for t in (np.int8, np.uint8, np.int16, np.uint16)
} | {
    _ml("int4"): (-8, 7),
    _ml("uint4"): (0, 15),
    _ml("int2"): (-2, 1),
    _ml("uint2"): (0, 3),
}
# The float types quantized values take: float8 (saturated when asked) and float4.
_FLOAT8 = tuple(_ml(n) for n in ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz"))
_FLOAT_QUANT = (*_FLOAT8, _ml("float4e2m1"))
EIGHT_BIT = (np.dtype(np.int8), np.dtype(np.uint8))


def _names(dtypes: Sequence[np.dtype]) -> str:
    return ", ".join(str(d) for d in dtypes)


def check_dtype(op: str, name: str, a: np.ndarray, allowed: Sequence[np.dtype]) -> None:
    """ValueError ("not supported") unless ``a`` has one of the ``allowed`` dtypes."""
    if a.dtype not in allowed:
        raise ValueError(
            f"{op}: {name} of dtype {a.dtype} is not supported; expected {_names(allowed)}"
        )


def check_float(op: str, name: str, a: np.ndarray) -> None:
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


def _same_granularity(zero: np.ndarray, scale: np.ndarray) -> bool:
    """A zero point fits its scale: the same shape, or both one value ([] and [1] are both per
    tensor; onnx's own float8 and int4 examples pair them)."""
    per_tensor = zero.size == 1 and scale.size == 1 and zero.ndim <= 1 and scale.ndim <= 1
    return zero.shape == scale.shape or per_tensor


def _saturate(q: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Float values already rounded, clipped to ``dtype``'s range and converted; NaN gives 0."""
    lo, hi = _RANGES[dtype]
    out = np.asarray(np.clip(q, lo, hi))  # a 0-d q clips to a numpy scalar, not an array
    np.copyto(out, 0, where=np.isnan(out))
    if dtype.kind == "V":  # ml_dtypes' int4/int2 convert from their integer twins
        return out.astype(np.int8).astype(dtype)
    return out.astype(dtype)


def quantize_rounded(q: np.ndarray, zero: np.ndarray | None, dtype: np.dtype) -> np.ndarray:
    """saturate(rint(q) + zero) in ``dtype``, the zero point added exactly in float64."""
    r = np.asarray(np.rint(q), dtype=np.float64)
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
    saturate: int = 1,
) -> np.ndarray:
    """saturate(rint(x / y_scale) + y_zero_point); y_zero_point's dtype, else output_dtype,
    else uint8, is the output's. For float outputs, x / y_scale + y_zero_point rounded to the
    type (float8 values beyond its range become its largest with ``saturate``).

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
    if dtype not in _RANGES and dtype not in _FLOAT_QUANT:
        raise ValueError(
            f"{op}: output type {dtype} is not supported; expected "
            f"{_names([*_RANGES, *_FLOAT_QUANT])}"
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
        if not _same_granularity(y_zero_point, y_scale):
            raise ValueError(
                f"{op}: y_zero_point has shape {list(y_zero_point.shape)}, "
                f"y_scale {list(y_scale.shape)}; they must agree"
            )
        zero = _granular(op, "y_zero_point", y_zero_point, x.shape, axis, block_size)
        zero = zero.astype(np.float32 if dtype.kind == "V" else np.float64)
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
        if dtype in _FLOAT_QUANT:
            if zero is not None:
                q = q + zero
            return cast_value(q, dtype, saturate)
        return quantize_rounded(q, zero, dtype)


@kernel("QuantizeLinear", since=10, exact_types=True)
def quantize_linear_10(
    x: np.ndarray, y_scale: np.ndarray, y_zero_point: np.ndarray | None = None
) -> np.ndarray:
    """Opset 10: per tensor (a 1-D scale runs along axis 1, as onnx's reference does)."""
    return _quantize(x, y_scale, y_zero_point)


@kernel("QuantizeLinear", since=13, exact_types=True)
def quantize_linear_13(
    x: np.ndarray, y_scale: np.ndarray, y_zero_point: np.ndarray | None = None, *, axis: int = 1
) -> np.ndarray:
    """Opset 13: per tensor or per ``axis``."""
    return _quantize(x, y_scale, y_zero_point, axis=axis)


@kernel("QuantizeLinear", since=19, exact_types=True)
def quantize_linear_19(
    x: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray | None = None,
    *,
    axis: int = 1,
    saturate: int = 1,
) -> np.ndarray:
    """Opset 19: ``saturate`` for float8 outputs."""
    return _quantize(x, y_scale, y_zero_point, axis=axis, saturate=saturate)


@kernel("QuantizeLinear", since=21, exact_types=True)
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
        x,
        y_scale,
        y_zero_point,
        axis=axis,
        block_size=block_size,
        output_dtype=output_dtype,
        saturate=saturate,
    )


@kernel("QuantizeLinear", since=23, exact_types=True)
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
        saturate=saturate,
    )


# --- DequantizeLinear ----------------------------------------------------------------------------

_DEQUANT_INPUTS = (*_RANGES, *_FLOAT_QUANT, np.dtype(np.int32))


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
    check_dtype(op, "x", x, _DEQUANT_INPUTS)
    check_float(op, "x_scale", x_scale)
    out = _dtype_attribute(op, "output_dtype", output_dtype) if output_dtype else x_scale.dtype
    if out.kind not in "fV":
        raise ValueError(f"{op}: output_dtype {output_dtype} ({out}) is not supported")
    work = np.promote_types(out, np.float32) if out.kind == "f" else np.dtype(np.float32)
    scale = _granular(op, "x_scale", x_scale, x.shape, axis, block_size).astype(work)
    wide = np.float32 if x.dtype in _FLOAT_QUANT else np.int64
    diff = x.astype(wide) if x_zero_point is not None or x.dtype.kind == "V" else x
    if x_zero_point is not None:
        if x_zero_point.dtype != x.dtype:
            raise ValueError(
                f"{op}: x_zero_point has dtype {x_zero_point.dtype}, x {x.dtype}; they must agree"
            )
        if not _same_granularity(x_zero_point, x_scale):
            raise ValueError(
                f"{op}: x_zero_point has shape {list(x_zero_point.shape)}, "
                f"x_scale {list(x_scale.shape)}; they must agree"
            )
        diff = diff - _granular(op, "x_zero_point", x_zero_point, x.shape, axis, block_size)
    y = np.multiply(diff.astype(work), scale)
    return y.astype(out, copy=False)


@kernel("DequantizeLinear", since=10, exact_types=True)
def dequantize_linear_10(
    x: np.ndarray, x_scale: np.ndarray, x_zero_point: np.ndarray | None = None
) -> np.ndarray:
    """Opset 10: per tensor."""
    return _dequantize(x, x_scale, x_zero_point)


@kernel("DequantizeLinear", since=13, exact_types=True)
def dequantize_linear_13(
    x: np.ndarray, x_scale: np.ndarray, x_zero_point: np.ndarray | None = None, *, axis: int = 1
) -> np.ndarray:
    """Opsets 13 and 19: per tensor or per ``axis``."""
    return _dequantize(x, x_scale, x_zero_point, axis=axis)


@kernel("DequantizeLinear", since=21, exact_types=True)
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


@kernel("DequantizeLinear", since=23, exact_types=True)
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


@kernel("DynamicQuantizeLinear", since=11, exact_types=True)
def dynamic_quantize_linear(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """uint8 y, y_scale and y_zero_point for x's range widened to include 0, in float32.

    A range of zero (x empty or all zeros) gives scale 1, as onnxruntime does.
    """
    op = "DynamicQuantizeLinear"
    check_dtype(op, "x", x, (np.dtype(np.float32),))
    f = np.float32
    hi = f(max(0.0, float(np.max(x)))) if x.size else f(0)
    lo = f(min(0.0, float(np.min(x)))) if x.size else f(0)
    scale = f(1) if hi == lo else f(hi - lo) / f(255)
    zero = np.rint(np.clip(f(0) - lo / scale, 0, 255))
    with np.errstate(invalid="ignore", over="ignore"):
        y = quantize_rounded(x / scale, np.asarray(zero, dtype=np.float64), np.dtype(np.uint8))
    return y, np.asarray(scale, dtype=x.dtype), np.asarray(zero, dtype=np.uint8)
