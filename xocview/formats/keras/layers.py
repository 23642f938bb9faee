"""The one table of Keras layers and the ONNX operators they run as (``KERAS_ONNX``).

Keys are Keras class names. Each value lowers one layer call with ``call.Call`` and returns
the tensor that is the layer's output: one ONNX op, or several that the reader groups under
the layer (metadata ``derived: keras``). Keras keeps images channels-last (NHWC) and kernels
as HWIO; ONNX convolutions and pools are channels-first, so they are written between explicit
``Transpose`` ops, and kernels pass through a ``Transpose`` (and a ``Reshape`` for depthwise
kernels) into ONNX's OIHW. A layer that is not here stays a node of domain ``keras``, which
the executor refuses by name; its config is only ever read as data.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xocview.formats.keras.attention import ATTENTION
from xocview.formats.keras.call import Call, NotMapped
from xocview.formats.keras.common import (
    activate,
    channels_last,
    clip,
    pads,
    to_first,
    to_last,
    tuple_of,
)
from xocview.formats.keras.more_layers import MORE
from xocview.formats.keras.recurrent import RECURRENT
from xocview.formats.keras.spatial import SPATIAL

__all__ = ["KERAS_ONNX", "WEIGHTLESS", "activate"]

Lower = Callable[[Call], int]


def _dense(c: Call) -> int:
    y = c.op("MatMul", [c.x, c.w(0)])
    if c.cfg("use_bias", True):
        y = c.op("Add", [y, c.w(1)])
    return activate(c, y, c.cfg("activation", "linear"))


def _conv(depthwise: bool) -> Lower:
    def lower(c: Call) -> int:
        kernel = c.weight_shape(0)
        n = len(kernel) - 2
        k = c.w(0)
        if depthwise:  # (H, W, Cin, mult) -> (H, W, 1, Cin*mult); out channel = c*mult + m
            groups = kernel[-2]
            k = c.op("Reshape", [k, c.ints([*kernel[:n], 1, kernel[-2] * kernel[-1]], "shape")])
        else:
            groups = int(c.cfg("groups", 1))
        k = c.op("Transpose", [k], {"perm": [n + 1, n, *range(n)]})
        attrs = {
            "kernel_shape": kernel[:n],
            "strides": tuple_of(c, "strides", n, 1),
            "dilations": tuple_of(c, "dilation_rate", n, 1),
            "auto_pad": pads(c),
            "group": groups,
        }
        ins = [to_first(c, c.x, n), k]
        if c.cfg("use_bias", True):
            ins.append(c.w(1))
        y = to_last(c, c.op("Conv", ins, attrs), n)
        return activate(c, y, c.cfg("activation", "linear"))

    return lower


def _pool(op_type: str, n: int) -> Lower:
    def lower(c: Call) -> int:
        size = tuple_of(c, "pool_size", n)
        attrs = {
            "kernel_shape": size,
            "strides": tuple_of(c, "strides", n, size),
            "auto_pad": pads(c),
        }
        return to_last(c, c.op(op_type, [to_first(c, c.x, n)], attrs), n)

    return lower


def _global_pool(op_type: str, n: int) -> Lower:
    def lower(c: Call) -> int:
        axes = list(range(1, n + 1)) if channels_last(c) else list(range(2, n + 2))
        keep = 1 if c.cfg("keepdims", False) else 0
        return c.op(op_type, [c.x, c.ints(axes, "axes")], {"keepdims": keep})

    return lower


def _batch_norm(c: Call) -> int:
    """(x - mean) * gamma / sqrt(var + eps) + beta on the config's axis, by broadcasting."""
    k = 0
    gamma = beta = None
    if c.cfg("scale", True):
        gamma, k = c.w(k), k + 1
    if c.cfg("center", True):
        beta, k = c.w(k), k + 1
    mean, var = c.w(k), c.w(k + 1)
    axis = c.cfg("axis", -1)
    axis = axis[0] if isinstance(axis, list) and len(axis) == 1 else axis
    x = c.x
    if axis != -1:
        if not isinstance(axis, int):
            raise NotMapped(f"axis {axis!r}")
        shape = _channel_shape(c, x, axis)
        if shape is not None:  # the per-channel values as (C, 1, ..., 1) on that axis
            mean, var = (c.op("Reshape", [t, shape]) for t in (mean, var))
            gamma = None if gamma is None else c.op("Reshape", [gamma, shape])
            beta = None if beta is None else c.op("Reshape", [beta, shape])
    eps = c.const(float(c.cfg("epsilon", 1e-3)), c.dtype(var), "epsilon")
    inv = c.op("Reciprocal", [c.op("Sqrt", [c.op("Add", [var, eps])])])
    if gamma is not None:
        inv = c.op("Mul", [inv, gamma])
    y = c.op("Mul", [c.op("Sub", [x, mean]), inv])
    return y if beta is None else c.op("Add", [y, beta])


def _channel_shape(c: Call, x: int, axis: int) -> int | None:
    """The shape ``(-1, 1, ..., 1)`` that puts per-channel values on ``axis`` of ``x``; None
    when it is the last axis. tf.keras 2 names the axis from the front (``[3]``) and records
    no shapes: the ones are then counted from ``x``'s rank when it runs."""
    tensor = c.tensors[x]
    if not tensor.metadata.get("rank_unknown"):
        rank = len(tensor.shape)
        tail = rank - 1 - (axis % rank)
        return c.ints([-1] + [1] * tail, "shape") if tail else None
    if axis < 0:
        return c.ints([-1] + [1] * (-1 - axis), "shape") if axis != -1 else None
    c.by_rank = True
    rank = c.op("Size", [c.op("Shape", [x], dtype="int64")], dtype="int64")
    tail = c.op("Sub", [c.op("Reshape", [rank, c.ints([1], "one")]), c.ints([axis + 1], "n")])
    ones = c.op("Slice", [c.ints([1] * 8, "ones"), c.ints([0], "zero"), tail])
    return c.op("Concat", [c.ints([-1], "channels"), ones], {"axis": 0})


def _trailing_axis(c: Call, axis: object) -> int:
    """ONNX LayerNormalization's ``axis`` for Keras's normalized ``axis`` list, which must be
    the trailing axes. tf.keras 2 counts from the front ([2]) and records no shapes: one axis
    from the front on an input of unknown rank is taken as the last, and a mismatch of the
    scale's shape then stops the run."""
    given = axis if isinstance(axis, list) else [axis]
    if not given or not all(isinstance(a, int) and not isinstance(a, bool) for a in given):
        raise NotMapped(f"axis {axis!r}")
    axes = [a for a in given if isinstance(a, int)]
    tensor = c.tensors[c.x]
    if not tensor.metadata.get("rank_unknown"):
        rank = len(tensor.shape)
        axes = sorted(a % rank - rank for a in axes)
    elif len(axes) == 1 and axes[0] >= 0:
        return int(axes[0])
    if axes != list(range(-len(axes), 0)):
        raise NotMapped(f"axis {axis!r} (only the trailing axes map)")
    return -len(axes)


def _layer_norm(c: Call) -> int:
    if c.cfg("rms_scaling", False):
        raise NotMapped("rms_scaling")
    axis = _trailing_axis(c, c.cfg("axis", -1))
    scale = c.w(0) if c.cfg("scale", True) else None
    bias = c.w(0 if scale is None else 1) if c.cfg("center", True) else None
    if scale is None:
        if bias is None:
            raise NotMapped("neither scale nor center")
        shape = list(c.tensors[bias].shape)
        scale = c.const(np.ones(shape), c.dtype(bias), "ones")
    ins = [c.x, scale] + ([bias] if bias is not None else [])
    return c.op("LayerNormalization", ins, {"axis": axis, "epsilon": float(c.cfg("epsilon", 1e-3))})


def _relu(c: Call) -> int:
    slope = float(c.cfg("negative_slope", 0.0))
    if float(c.cfg("threshold", 0.0)) != 0.0:
        raise NotMapped("a ReLU threshold")
    high = c.cfg("max_value", None)
    if slope:
        if high is not None:
            raise NotMapped("a leaky ReLU with max_value")
        return c.op("LeakyRelu", [c.x], {"alpha": slope})
    if high is None:
        return c.op("Relu", [c.x])
    return clip(c, c.x, 0.0, float(high))


def _leaky_relu(c: Call) -> int:
    slope = c.cfg("negative_slope", c.cfg("alpha", 0.3))  # tf.keras 2 called it alpha
    return c.op("LeakyRelu", [c.x], {"alpha": float(slope)})


def _softmax(c: Call) -> int:
    axis = c.cfg("axis", -1)
    if isinstance(axis, list):
        if len(axis) != 1:
            raise NotMapped(f"softmax over axes {axis}")
        axis = axis[0]
    return c.op("Softmax", [c.x], {"axis": int(axis)})


def _flatten(c: Call) -> int:
    if not channels_last(c):
        raise NotMapped("channels_first Flatten")
    return c.op("Flatten", [c.x], {"axis": 1})


def _reshape(c: Call) -> int:
    target = c.cfg("target_shape")
    if not isinstance(target, list) or not all(isinstance(v, int) for v in target):
        raise NotMapped("target_shape is not a list of integers")
    return c.op("Reshape", [c.x, c.ints([0, *target], "shape")])  # 0 keeps the batch


def _permute(c: Call) -> int:
    return c.op("Transpose", [c.x], {"perm": [0, *(int(d) for d in c.cfg("dims"))]})


def _merge(op_type: str) -> Lower:
    def lower(c: Call) -> int:
        xs = c.xs
        if len(xs) < 2:
            raise NotMapped(f"merges {len(xs)} inputs")
        y = xs[0]
        for other in xs[1:]:
            y = c.op(op_type, [y, other])
        return y

    return lower


def _average(c: Call) -> int:
    return c.op("Mean", c.xs)


def _concat(c: Call) -> int:
    return c.op("Concat", c.xs, {"axis": int(c.cfg("axis", -1))})


def _embedding(c: Call) -> int:
    if c.cfg("mask_zero", False):  # later recurrent, pooling and attention layers skip steps
        raise NotMapped("mask_zero=True (the mask Keras passes on to later layers)")
    table = c.w(0)
    return c.op("Gather", [table, c.x], {"axis": 0}, dtype=c.dtype(table))


def _identity(c: Call) -> int:
    return c.op("Identity", [c.x])


def _activation(c: Call) -> int:
    y = activate(c, c.x, c.cfg("activation"))
    return y if y != c.x else _identity(c)


def _rescaling(c: Call) -> int:
    scale, offset = c.cfg("scale", 1.0), c.cfg("offset", 0.0)
    if not all(isinstance(v, int | float) for v in (scale, offset)):
        raise NotMapped("per-channel scale or offset")
    y = c.op("Mul", [c.x, c.const(float(scale), c.dtype(c.x), "scale")])
    return c.op("Add", [y, c.const(float(offset), c.dtype(c.x), "offset")])


_POOLS = {
    f"{kind}Pooling{n}D": _pool(op, n)
    for kind, op in (("Max", "MaxPool"), ("Average", "AveragePool"))
    for n in (1, 2, 3)
}
_GLOBAL = {
    f"Global{kind}Pooling{n}D": _global_pool(op, n)
    for kind, op in (("Max", "ReduceMax"), ("Average", "ReduceMean"))
    for n in (1, 2, 3)
}
_IDENTITY = ("Dropout", "SpatialDropout1D", "SpatialDropout2D", "GaussianNoise", "GaussianDropout")

KERAS_ONNX: dict[str, Lower] = {
    "Dense": _dense,
    **{f"Conv{n}D": _conv(False) for n in (1, 2, 3)},
    "DepthwiseConv1D": _conv(True),
    "DepthwiseConv2D": _conv(True),
    **_POOLS,
    **_GLOBAL,
    "BatchNormalization": _batch_norm,
    "LayerNormalization": _layer_norm,
    "Activation": _activation,
    "ReLU": _relu,
    "Softmax": _softmax,
    "LeakyReLU": _leaky_relu,
    "ELU": lambda c: c.op("Elu", [c.x], {"alpha": float(c.cfg("alpha", 1.0))}),
    "Flatten": _flatten,
    "Reshape": _reshape,
    "Permute": _permute,
    **{name: _identity for name in _IDENTITY},
    "Add": _merge("Add"),
    "Subtract": _merge("Sub"),
    "Multiply": _merge("Mul"),
    "Maximum": _merge("Max"),
    "Minimum": _merge("Min"),
    "Average": _average,
    "Concatenate": _concat,
    "Embedding": _embedding,
    "Rescaling": _rescaling,
    "Identity": _identity,
    **SPATIAL,
    **MORE,
    **RECURRENT,
    **ATTENTION,
}

# Layers that hold no weights of their own, whatever their config (the others take theirs
# in the order Keras lists them: kernel then bias; gamma, beta, moving mean and variance).
WEIGHTLESS = frozenset(KERAS_ONNX) - {
    "Dense",
    "Conv1D",
    "Conv2D",
    "Conv3D",
    "DepthwiseConv1D",
    "DepthwiseConv2D",
    "BatchNormalization",
    "LayerNormalization",
    "Embedding",
    *(f"Conv{n}DTranspose" for n in (1, 2, 3)),
    "SeparableConv1D",
    "SeparableConv2D",
    "PReLU",
    "GroupNormalization",
    *RECURRENT,
    *ATTENTION,
}
