"""Quantized integer products: QLinearMatMul, ConvInteger and QLinearConv.

Integer products are summed in float64, exact for any sum below 2**53 and handed to BLAS, as
MatMulInteger does; the result is requantized with QuantizeLinear's rounding and saturation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xocview.executor.ops.conv import conv
from xocview.executor.ops.quantize import EIGHT_BIT, check_dtype, check_float, quantize_rounded
from xocview.executor.registry import kernel

__all__ = ["conv_integer", "qlinear_conv", "qlinear_matmul"]


# --- QLinearMatMul -------------------------------------------------------------------------------


def _requantize(
    acc: np.ndarray,
    multiplier: np.ndarray,
    y_zero_point: np.ndarray,
    op: str,
) -> np.ndarray:
    """saturate(rint(acc * multiplier) + y_zero_point) in y_zero_point's dtype."""
    check_dtype(op, "y_zero_point", y_zero_point, EIGHT_BIT)
    zero = y_zero_point.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return quantize_rounded(acc * multiplier.astype(np.float64), zero, y_zero_point.dtype)


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
        check_dtype(op, name, t, EIGHT_BIT)
    check_dtype(op, "b_zero_point", b_zero_point, EIGHT_BIT)
    for name, s in (("a_scale", a_scale), ("b_scale", b_scale), ("y_scale", y_scale)):
        check_float(op, name, s)
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
    check_dtype(op, "x", x, EIGHT_BIT)
    check_dtype(op, "w", w, EIGHT_BIT)
    if x.ndim < 3:
        raise ValueError(f"{op}: x has shape {list(x.shape)}; expected (N, C, d1, ...)")
    xs = x.astype(np.float64)
    if x_zero_point is not None:
        check_dtype(op, "x_zero_point", x_zero_point, (x.dtype,))
        if x_zero_point.size != 1:
            raise ValueError(
                f"{op}: x_zero_point has shape {list(x_zero_point.shape)}; "
                "a per-channel x_zero_point is not supported"
            )
        xs -= float(x_zero_point.reshape(-1)[0])
    ws = w.astype(np.float64)
    if w_zero_point is not None:
        check_dtype(op, "w_zero_point", w_zero_point, (w.dtype,))
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
        check_float(op, name, s)
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
        check_dtype(op, "B", B, (np.dtype(np.int32),))
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
