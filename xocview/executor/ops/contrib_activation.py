"""onnxruntime's fused activations and products (com.microsoft): Gelu, FastGelu, BiasGelu,
QuickGelu, BiasAdd, FusedMatMul and FusedConv, as its transformer optimizer writes them."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from xocview.executor.ops.activation import clipped, gelu, hard_sigmoid, leaky_relu, sigmoid
from xocview.executor.ops.blockwise import blockwise, quick_gelu_block
from xocview.executor.ops.conv import conv
from xocview.executor.registry import kernel

__all__ = [
    "bias_add",
    "bias_gelu",
    "fast_gelu",
    "fused_conv",
    "fused_matmul",
    "ms_gelu",
    "quick_gelu",
]

MS = "com.microsoft"


@kernel("Gelu", domain=MS)
def ms_gelu(x: np.ndarray) -> np.ndarray:
    """The exact Gelu, x * Phi(x) (ONNX's Gelu-20 without ``approximate``)."""
    return gelu(x)


@kernel("FastGelu", domain=MS)
def fast_gelu(x: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """0.5 x (1 + tanh(0.797885 x + 0.035677 x^3)) of x + bias: Gelu's tanh approximation."""
    return gelu(x if bias is None else x + bias, approximate="tanh")


@kernel("BiasGelu", domain=MS)
def bias_gelu(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The exact Gelu of A + B (B a 1-D bias over A's last axis)."""
    return gelu(a + b)


@kernel("QuickGelu", domain=MS)
def quick_gelu(x: np.ndarray, *, alpha: float = 1.702) -> np.ndarray:
    """x * sigmoid(alpha * x), as x / (1 + exp(-alpha x)) over blocks for float32."""
    if x.dtype == np.float32:
        return blockwise(functools.partial(quick_gelu_block, alpha=alpha), x, 1)
    y = sigmoid(x * x.dtype.type(alpha))
    y *= x
    return y


@kernel("BiasAdd", domain=MS)
def bias_add(x: np.ndarray, bias: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """X (N, S, C) + bias (C) + skip (N, S, C): a diffusion model's residual."""
    y = x + bias
    y += skip
    return y


def _batch_first(x: np.ndarray) -> np.ndarray:
    """transBatch: an operand laid out (M, B1..Bk, K) read as (B1..Bk, M, K)."""
    return np.moveaxis(x, 0, -2) if x.ndim > 2 else x


@kernel("FusedMatMul", domain=MS)
def fused_matmul(
    a: np.ndarray,
    b: np.ndarray,
    *,
    alpha: float = 1.0,
    transA: int = 0,
    transB: int = 0,
    transBatchA: int = 0,
    transBatchB: int = 0,
) -> np.ndarray:
    """alpha * A' @ B', numpy's matmul on operands transposed as the attributes say: the
    batch flag first (the leading axis moves next to the last), then the last two axes.
    Transposes are views, which np.matmul hands to BLAS without copying."""
    if transBatchA:
        a = _batch_first(a)
    if transBatchB:
        b = _batch_first(b)
    if transA and a.ndim > 1:
        a = np.swapaxes(a, -1, -2)
    if transB and b.ndim > 1:
        b = np.swapaxes(b, -1, -2)
    y = np.matmul(a, b)
    if alpha != 1:
        y *= y.dtype.type(alpha)
    return y


def _activate(y: np.ndarray, activation: str, params: Sequence[float]) -> np.ndarray:
    """FusedConv's ``activation`` with its ``activation_params``, in place where it can be."""
    p = [float(v) for v in params]
    if activation in ("", "Identity"):
        return y
    if activation == "Relu":
        return clipped(y, y.dtype.type(0), None, out=y)
    if activation == "Tanh":
        return np.tanh(y, out=y)
    if activation == "Sigmoid":
        return sigmoid(y)
    if activation == "LeakyRelu":
        return leaky_relu(y, alpha=p[0] if p else 0.01)
    if activation == "HardSigmoid":
        return hard_sigmoid(y, alpha=p[0] if p else 0.2, beta=p[1] if len(p) > 1 else 0.5)
    if activation == "Clip":
        if len(p) != 2:
            raise ValueError(f"FusedConv: Clip takes 2 activation_params (min, max), got {len(p)}")
        return clipped(y, y.dtype.type(p[0]), y.dtype.type(p[1]), out=y)
    raise ValueError(
        f"FusedConv: activation {activation!r} is not supported; expected Relu, Tanh, Sigmoid, "
        "LeakyRelu, HardSigmoid, Clip or Identity"
    )


@kernel("FusedConv", domain=MS)
def fused_conv(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None = None,
    z: np.ndarray | None = None,
    *,
    activation: str | bytes = "",
    activation_params: Sequence[float] | None = None,
    auto_pad: str = "NOTSET",
    dilations: Sequence[int] | None = None,
    group: int = 1,
    kernel_shape: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
) -> np.ndarray:
    """activation(Conv(X, W, B) + Z): Conv's attributes and bias, then the optional sum
    input Z, then the named activation."""
    y = conv(
        x,
        w,
        b,
        auto_pad=auto_pad,
        dilations=dilations,
        group=group,
        kernel_shape=kernel_shape,
        pads=pads,
        strides=strides,
    )
    if z is not None:
        y = y + z if y.shape != np.broadcast_shapes(y.shape, z.shape) else np.add(y, z, out=y)
    name = activation.decode() if isinstance(activation, bytes) else activation
    return _activate(y, name, activation_params or ())
