"""Mappings of TFLite's channel-last spatial builtins that the main table lacks: space/batch
blocks (what dilated convolutions convert to), L2 pooling, local response normalisation and
3-D (transposed) convolution, merged into the one table of ``ops``.

Channels-last is explicit as in ``ops``: Transpose -> the NC... ONNX op -> Transpose back. The
space/batch blocks are Reshape -> Transpose -> Reshape on the file's fixed sizes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xocview.formats.tflite.lower import Lower, NotMapped

__all__ = ["SPATIAL"]

Map = Callable[[Lower], None]
_INT_MAX = 2**63 - 1


def _first_last(rank: int) -> tuple[list[int], list[int]]:
    """The perms moving channels first (N, C, spatial...) and back to last."""
    return [0, rank - 1, *range(1, rank - 1)], [0, *range(2, rank), 1]


def _channels_first(
    e: Lower, op_type: str, x: int, more: list[int | None], attrs: dict[str, object]
) -> None:
    """``op_type`` (channels first) on ``x`` (channels last) between two Transposes."""
    first, last = _first_last(e.rank(x))
    xt = e.op1("Transpose", [x], attrs={"perm": first})
    y = e.op1(op_type, [xt, *more], attrs=attrs)
    e.last("Transpose", [y], {"perm": last})


def space_to_batch_nd(e: Lower) -> None:
    """[B, s.., C] padded, each spatial axis split (s/b, b), the blocks moved before B."""
    x, block, pads = e.x(0), e.ints(1), e.value(2).reshape(-1, 2).tolist()
    shape = e.shape(x)
    m = len(block)
    if min(shape) < 0:
        raise NotMapped("sizes that are not fixed")
    flat = [int(p) for pair in pads for p in pair]
    onnx_pads = [0, *flat[0::2], *[0] * (len(shape) - m - 1)]
    onnx_pads += [0, *flat[1::2], *[0] * (len(shape) - m - 1)]
    padded = [s + a + b for s, (a, b) in zip(shape[1 : m + 1], pads, strict=True)]
    if any(p % b for p, b in zip(padded, block, strict=True)):
        raise NotMapped("padded sizes that are not multiples of the block")
    rest = shape[m + 1 :]
    split = [shape[0], *[v for p, b in zip(padded, block, strict=True) for v in (p // b, b)], *rest]
    perm = [*range(2, 2 * m + 1, 2), 0, *range(1, 2 * m, 2), *range(2 * m + 1, len(split))]
    out = [
        shape[0] * int(np.prod(block)),
        *[p // b for p, b in zip(padded, block, strict=True)],
        *rest,
    ]
    y = x
    if any(flat):
        y = e.op1("Pad", [x, e.i64(onnx_pads, "pads")], attrs={"mode": "constant"})
    y = e.op1("Reshape", [y, e.i64(split, "split")])
    y = e.op1("Transpose", [y], attrs={"perm": perm})
    e.last("Reshape", [y, e.i64(out, "shape")])


def batch_to_space_nd(e: Lower) -> None:
    """[b.., B, s.., C] interleaved back into [B, s*b.., C], then the crops cut off."""
    x, block, crops = e.x(0), e.ints(1), e.value(2).reshape(-1, 2).tolist()
    shape = e.shape(x)
    m = len(block)
    if min(shape) < 0:
        raise NotMapped("sizes that are not fixed")
    batch = shape[0] // int(np.prod(block))
    rest = shape[m + 1 :]
    split = [*block, batch, *shape[1 : m + 1], *rest]
    perm = [m, *[v for d in range(m) for v in (m + 1 + d, d)], *range(2 * m + 1, len(split))]
    full = [s * b for s, b in zip(shape[1 : m + 1], block, strict=True)]
    y = e.op1("Reshape", [x, e.i64(split, "split")])
    y = e.op1("Transpose", [y], attrs={"perm": perm})
    if not any(int(c) for pair in crops for c in pair):
        e.last("Reshape", [y, e.i64([batch, *full, *rest], "shape")])
        return
    y = e.op1("Reshape", [y, e.i64([batch, *full, *rest], "shape")])
    starts = [int(a) for a, _ in crops]
    ends = [f - int(b) for f, (_, b) in zip(full, crops, strict=True)]
    axes = e.i64(list(range(1, m + 1)), "axes")
    e.last("Slice", [y, e.i64(starts, "starts"), e.i64(ends, "ends"), axes])


def _pool_attrs(e: Lower, kernel: list[int]) -> dict[str, object]:
    padding = e.opt("padding", "SAME")
    if padding not in ("SAME", "VALID"):
        raise NotMapped(f"padding {padding}")
    strides = [int(e.opt("stride_h", 1)), int(e.opt("stride_w", 1))]
    auto = "SAME_UPPER" if padding == "SAME" else "VALID"
    return {"kernel_shape": kernel, "strides": strides, "auto_pad": auto}


def l2_pool_2d(e: Lower) -> None:
    """sqrt(mean(x^2)) over each window (padding not counted), as TFLite computes it."""
    x = e.x(0)
    kernel = [int(e.opt("filter_height")), int(e.opt("filter_width"))]
    first, last = _first_last(4)
    sq = e.op1("Mul", [x, x])
    xt = e.op1("Transpose", [sq], attrs={"perm": first})
    mean = e.op1("AveragePool", [xt], attrs=_pool_attrs(e, kernel))
    root = e.op1("Sqrt", [mean])
    e.last("Transpose", [root], {"perm": last})


def local_response_normalization(e: Lower) -> None:
    """TFLite sums over radius r each side with alpha per element; ONNX's alpha is over the
    window of 2r+1, so it is scaled by the window."""
    r = int(e.opt("radius", 5))
    size = 2 * r + 1
    attrs: dict[str, object] = {
        "size": size,
        "alpha": float(e.opt("alpha", 1.0)) * size,
        "beta": float(e.opt("beta", 0.5)),
        "bias": float(e.opt("bias", 1.0)),
    }
    _channels_first(e, "LRN", e.x(0), [], attrs)


def _conv3d_attrs(e: Lower, kernel: list[int]) -> dict[str, object]:
    padding = e.opt("padding", "SAME")
    if padding not in ("SAME", "VALID"):
        raise NotMapped(f"padding {padding}")
    strides = [int(e.opt(f"stride_{a}", 1)) for a in "dhw"]
    dilations = [int(e.opt(f"dilation_{a}_factor", 1)) for a in "dhw"]
    auto = "SAME_UPPER" if padding == "SAME" else "VALID"
    return {"kernel_shape": kernel, "strides": strides, "dilations": dilations, "auto_pad": auto}


def conv_3d(e: Lower) -> None:
    """NDHWC input, DHWIO filter -> Conv on NCDHW with an OIDHW weight."""
    x, w = e.x(0), e.x(1)
    kernel = [e.dim(w, d) for d in range(3)]
    attrs = _conv3d_attrs(e, kernel)
    cin = e.dim(x, 4)
    if cin % e.dim(w, 3):
        raise NotMapped("input channels are not a multiple of the filter's")
    attrs["group"] = cin // e.dim(w, 3)
    wt = e.op1("Transpose", [w], attrs={"perm": [4, 3, 0, 1, 2]})
    _channels_first(e, "Conv", x, [wt, e.ins[2] if e.has(2) else None], attrs)


def conv_3d_transpose(e: Lower) -> None:
    """(output_shape, filter DHW-out-in, input, bias?) as ConvTranspose with explicit pads."""
    out_shape, w, x = e.ints(0), e.x(1), e.x(2)
    kernel = [e.dim(w, d) for d in range(3)]
    strides = [int(e.opt(f"stride_{a}", 1)) for a in "dhw"]
    dilations = [int(e.opt(f"dilation_{a}_factor", 1)) for a in "dhw"]
    if dilations != [1, 1, 1]:
        raise NotMapped("a dilated transposed 3-D convolution")
    size_in = [e.dim(x, d) for d in (1, 2, 3)]
    full = [s * (n - 1) + k for s, n, k in zip(strides, size_in, kernel, strict=True)]
    total = [f - o for f, o in zip(full, out_shape[1:4], strict=True)]
    if e.opt("padding", "SAME") == "VALID":
        total = [min(t, 0) for t in total]
    begin = [max(t, 0) // 2 for t in total]
    end = [max(t, 0) - b for t, b in zip(total, begin, strict=True)]
    extra = [max(-t, 0) for t in total]
    attrs: dict[str, object] = {
        "kernel_shape": kernel,
        "strides": strides,
        "pads": begin + end,
        "output_padding": extra,
    }
    wt = e.op1("Transpose", [w], attrs={"perm": [4, 3, 0, 1, 2]})
    bias = e.x(3) if e.has(3) else None
    _channels_first(e, "ConvTranspose", x, [wt, bias], attrs)


SPATIAL: dict[str, Map] = {
    "SPACE_TO_BATCH_ND": space_to_batch_nd,
    "BATCH_TO_SPACE_ND": batch_to_space_nd,
    "L2_POOL_2D": l2_pool_2d,
    "LOCAL_RESPONSE_NORMALIZATION": local_response_normalization,
    "CONV_3D": conv_3d,
    "CONV_3D_TRANSPOSE": conv_3d_transpose,
}
