"""Keras layers that move pixels around, as ONNX operators: zero padding, cropping,
up-sampling, transposed and separable convolutions.

Padding and cropping work on the channels-last tensor as it is (``Pad``, ``Slice``);
up-sampling is ``Resize`` with scales on the spatial axes (nearest repeats each pixel as
Keras's ``repeat`` does: asymmetric coordinates and floor; bilinear is TensorFlow's
half-pixel resize). Transposed convolutions place their padding as TensorFlow's
``conv_transpose`` does for the output size Keras asks for.
"""

from __future__ import annotations

from collections.abc import Callable

from xocview.formats.keras.call import Call, NotMapped
from xocview.formats.keras.common import (
    activate,
    channels_last,
    pads,
    to_first,
    to_last,
    tuple_of,
)

__all__ = ["SPATIAL"]

Lower = Callable[[Call], int]
_END = 2**62  # a Slice end past any size


def _pairs(c: Call, key: str, n: int) -> list[tuple[int, int]]:
    """Keras's padding or cropping: an int, n ints or n (before, after) pairs."""
    value = c.cfg(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return [(value, value)] * n
    if n == 1 and isinstance(value, list | tuple) and len(value) == 2:
        value = [value]  # the 1D layers give one (before, after) pair
    if not isinstance(value, list | tuple) or len(value) != n:
        raise NotMapped(f"config value {key!r} is not {n} sizes")
    out = []
    for v in value:
        if isinstance(v, int) and not isinstance(v, bool):
            out.append((v, v))
        elif isinstance(v, list | tuple) and len(v) == 2 and all(isinstance(a, int) for a in v):
            out.append((int(v[0]), int(v[1])))
        else:
            raise NotMapped(f"config value {key!r} is not {n} sizes")
    return out


def _spatial_axes(c: Call, n: int) -> list[int]:
    return list(range(1, n + 1)) if channels_last(c) else list(range(2, n + 2))


def _zero_padding(n: int) -> Lower:
    def lower(c: Call) -> int:
        pairs = _pairs(c, "padding", n)
        axes = [1] if n == 1 else _spatial_axes(c, n)
        rank = n + 2
        begin, end = [0] * rank, [0] * rank
        for a, (b, e) in zip(axes, pairs, strict=True):
            begin[a], end[a] = b, e
        return c.op("Pad", [c.x, c.ints(begin + end, "pads")], {"mode": "constant"})

    return lower


def _cropping(n: int) -> Lower:
    def lower(c: Call) -> int:
        pairs = _pairs(c, "cropping", n)
        axes = [1] if n == 1 else _spatial_axes(c, n)
        starts = [b for b, _ in pairs]
        ends = [-e if e else _END for _, e in pairs]
        ins = [c.x, c.ints(starts, "starts"), c.ints(ends, "ends"), c.ints(axes, "axes")]
        return c.op("Slice", ins)

    return lower


def _upsampling(n: int) -> Lower:
    def lower(c: Call) -> int:
        if n == 1:
            sizes, axes, how = [int(c.cfg("size", 2))], [1], "nearest"
        else:
            sizes, axes = tuple_of(c, "size", n, 2), _spatial_axes(c, n)
            how = str(c.cfg("interpolation", "nearest"))
        scales = [1.0] * (n + 2)
        for a, s in zip(axes, sizes, strict=True):
            scales[a] = float(s)
        if how == "nearest":
            attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric"}
            attrs["nearest_mode"] = "floor"
        elif how == "bilinear":
            attrs = {"mode": "linear", "coordinate_transformation_mode": "half_pixel"}
        else:
            raise NotMapped(f"interpolation {how!r}")
        scale = c.const(scales, "float32", "scales")
        return c.op1("Resize", [c.x, None, scale], attrs=attrs)  # no roi

    return lower


def _transpose_pads(c: Call, n: int, kernel: list[int]) -> tuple[list[int], list[int]]:
    """ONNX ``pads`` and ``output_padding`` giving Keras's output size with TensorFlow's
    placement: the forward convolution's padding, the odd pixel at the end, and output
    positions no input reaches (valid padding, output_padding) filled by the bias alone."""
    strides = tuple_of(c, "strides", n, 1)
    dilation = tuple_of(c, "dilation_rate", n, 1)
    given = c.cfg("output_padding", None)
    extra = None if given is None else tuple_of(c, "output_padding", n)
    same = pads(c) == "SAME_UPPER"
    begin, end, out_pad = [], [], []
    for d in range(n):
        k = (kernel[d] - 1) * dilation[d] + 1
        s = strides[d]
        if extra is None:  # Keras: in * s (same) or in * s + max(k - s, 0) (valid)
            total = k - s if same else min(k - s, 0)
        else:  # (in - 1) * s + k - 2 * pad + output_padding, pad = k // 2 when same
            total = (2 * (k // 2) if same else 0) - extra[d]
        b = max(total, 0) // 2
        e = total - b
        begin.append(b)
        end.append(max(e, 0))
        out_pad.append(max(-e, 0))
    if any(p >= s for p, s in zip(out_pad, strides, strict=True)):
        raise NotMapped("output_padding not smaller than the strides")
    return begin + end, out_pad


def _conv_transpose(c: Call) -> int:
    kernel = c.weight_shape(0)  # (*spatial, out, in)
    n = len(kernel) - 2
    if int(c.cfg("groups", 1)) != 1:
        raise NotMapped("grouped transposed convolution")
    pad_list, out_pad = _transpose_pads(c, n, kernel)
    k = c.op("Transpose", [c.w(0)], {"perm": [n + 1, n, *range(n)]})  # -> (in, out, *spatial)
    attrs = {
        "kernel_shape": kernel[:n],
        "strides": tuple_of(c, "strides", n, 1),
        "dilations": tuple_of(c, "dilation_rate", n, 1),
        "pads": pad_list,
        "output_padding": out_pad,
    }
    ins = [to_first(c, c.x, n), k]
    if c.cfg("use_bias", True):
        ins.append(c.w(1))
    y = to_last(c, c.op("ConvTranspose", ins, attrs), n)
    return activate(c, y, c.cfg("activation", "linear"))


def _separable(c: Call) -> int:
    """A depthwise convolution (no bias) then a 1x1 pointwise one with the bias."""
    depth = c.weight_shape(0)  # (*spatial, in, multiplier)
    n = len(depth) - 2
    cin, mult = depth[-2], depth[-1]
    k = c.op("Reshape", [c.w(0), c.ints([*depth[:n], 1, cin * mult], "shape")])
    k = c.op("Transpose", [k], {"perm": [n + 1, n, *range(n)]})
    attrs = {
        "kernel_shape": depth[:n],
        "strides": tuple_of(c, "strides", n, 1),
        "dilations": tuple_of(c, "dilation_rate", n, 1),
        "auto_pad": pads(c),
        "group": cin,
    }
    y = c.op("Conv", [to_first(c, c.x, n), k], attrs)
    point = c.op("Transpose", [c.w(1)], {"perm": [n + 1, n, *range(n)]})
    ins = [y, point] + ([c.w(2)] if c.cfg("use_bias", True) else [])
    y = to_last(c, c.op("Conv", ins, {"kernel_shape": [1] * n}), n)
    return activate(c, y, c.cfg("activation", "linear"))


SPATIAL: dict[str, Lower] = {
    **{f"ZeroPadding{n}D": _zero_padding(n) for n in (1, 2, 3)},
    **{f"Cropping{n}D": _cropping(n) for n in (1, 2, 3)},
    **{f"UpSampling{n}D": _upsampling(n) for n in (1, 2, 3)},
    **{f"Conv{n}DTranspose": _conv_transpose for n in (1, 2, 3)},
    "SeparableConv1D": _separable,
    "SeparableConv2D": _separable,
}
