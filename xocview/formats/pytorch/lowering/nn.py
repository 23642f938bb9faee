"""Network ATen ops: convolution, normalization, matrix products, attention, softmax,
reductions and pooling."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from xocview.formats.pytorch.lowering.emit import FLOATS, Emit, NotMapped
from xocview.model.dtypes import DTYPES

__all__ = ["conv", "linear", "sdpa"]

Lower = Callable[[Emit], None]


def _pads(padding: list[int]) -> list[int]:
    return list(padding) + list(padding)


def conv(transposed: bool | None = False) -> Lower:
    """conv1d/2d/3d (``transposed`` False), conv_transpose* (True) and convolution (None:
    the node's ``transposed`` argument says)."""

    def lower(e: Emit) -> None:
        x, w = e.x("input"), e.x("weight")
        spatial = e.rank(w) - 2
        flip = e.arg("transposed", False) if transposed is None else transposed
        attrs: dict[str, Any] = {
            "strides": _n(e.arg("stride", [1]), spatial),
            "dilations": _n(e.arg("dilation", [1]), spatial),
            "group": int(e.arg("groups", 1)),
        }
        padding = e.arg("padding", [0])
        if isinstance(padding, str):
            if padding == "same":
                attrs["auto_pad"] = "SAME_UPPER"
            elif padding != "valid":
                raise NotMapped(f"padding {padding!r}")
        else:
            attrs["pads"] = _pads(_n(padding, spatial))
        if flip:
            out_pad = _n(e.arg("output_padding", [0]), spatial)
            if any(out_pad):
                attrs["output_padding"] = out_pad
        bias = e.x("bias") if e.has("bias") else None
        e.emit(
            "ConvTranspose" if flip else "Conv",
            [x, w] + ([bias] if bias is not None else []),
            attrs,
        )

    return lower


def _n(values: Any, count: int) -> list[int]:
    """A size list of ``count`` entries (torch allows one for all)."""
    items = list(values) if isinstance(values, list) else [values]
    if len(items) == 1 and count > 1:
        items = items * count
    if len(items) != count or not all(isinstance(v, int) for v in items):
        raise NotMapped(f"size list {values!r} for {count} spatial dims")
    return items


def _channel_const(e: Emit, x: int, value: float, label: str) -> int:
    return e.const([value] * e.dim(x, 1), e.dtype(x), label)


def batch_norm(e: Emit) -> None:
    """batch_norm / _native_batch_norm_legit_no_training (inference): BatchNormalization."""
    if e.arg("training", False):
        raise NotMapped("batch norm in training mode")
    x = e.x("input")
    scale = e.x("weight") if e.has("weight") else _channel_const(e, x, 1.0, "weight")
    bias = e.x("bias") if e.has("bias") else _channel_const(e, x, 0.0, "bias")
    stats = [e.x("running_mean"), e.x("running_var")]
    attrs = {"epsilon": float(e.arg("eps", 1e-5)), "momentum": float(e.arg("momentum", 0.1))}
    e.op("BatchNormalization", [x, scale, bias, *stats], attrs, out=e.outs)


def layer_norm(e: Emit) -> None:
    """layer_norm / native_layer_norm: LayerNormalization over the last len(shape) dims; the
    native op's mean and 1/std are its second and third outputs, as ONNX's."""
    x = e.x("input")
    normalized = list(e.arg("normalized_shape"))
    dtype = e.dtype(x)
    scale = e.x("weight") if e.has("weight") else e.const(np.ones(normalized), dtype, "weight")
    ins = [x, scale] + ([e.x("bias")] if e.has("bias") else [])
    attrs = {"axis": -len(normalized), "epsilon": float(e.arg("eps", 1e-5))}
    used = [e.used(k) for k in (0, 1, 2)]
    outs = [e.out(0)]
    if used[1] or used[2]:
        outs.append(e.out(1) if used[1] else e.fresh("mean", "float32"))
    if used[2]:
        outs.append(e.out(2))
    e.op("LayerNormalization", ins, attrs, out=outs)


def linear(e: Emit) -> None:
    """x @ W.T + b: one Gemm for 2-D input, else MatMul with the transposed weight (also
    for an input of unknown rank: a scripted TorchScript module without traced inputs)."""
    x, w = e.x("input"), e.x("weight")
    bias = e.x("bias") if e.has("bias") else None
    if not e.values.tensors[x].metadata.get("rank_unknown") and e.rank(x) == 2:
        e.emit("Gemm", [x, w] + ([bias] if bias is not None else []), {"transB": 1})
        return
    wt = e.op1("Transpose", [w], attrs={"perm": [1, 0]})
    if bias is None:
        e.emit("MatMul", [x, wt])
    else:
        e.emit("Add", [e.op1("MatMul", [x, wt]), bias])


def addmm(e: Emit) -> None:
    """beta * self + alpha * (mat1 @ mat2): one Gemm."""
    attrs = {"alpha": float(e.arg("alpha", 1)), "beta": float(e.arg("beta", 1))}
    e.emit("Gemm", [e.x("mat1"), e.x("mat2"), e.x("self")], attrs)


def matmul(e: Emit) -> None:
    other = e.x("mat2") if e.has("mat2") else e.x("other")
    e.emit("MatMul", [e.x("self"), other])


def baddbmm(e: Emit) -> None:
    dtype = e.out_dtype()
    prod = e.op1("MatMul", [e.x("batch1"), e.x("batch2")])
    alpha, beta = e.arg("alpha", 1), e.arg("beta", 1)
    if alpha != 1:
        prod = e.op1("Mul", [prod, e.const(alpha, dtype, "alpha")])
    base = e.x("self")
    if beta != 1:
        base = e.op1("Mul", [base, e.const(beta, dtype, "beta")])
    e.emit("Add", [base, prod])


def sdpa(e: Emit) -> None:
    """scaled_dot_product_attention as its math: softmax(q k^T * scale + mask) v."""
    if e.arg("dropout_p", 0.0) or e.arg("enable_gqa", False):
        raise NotMapped("attention with dropout or grouped-query heads")
    q, k, v = e.x("query"), e.x("key"), e.x("value")
    rank, dtype = e.rank(q), e.dtype(q)
    scale = e.arg("scale", None)
    if scale is None:
        scale = 1.0 / math.sqrt(e.dim(q, -1))
    perm = [*range(rank - 2), rank - 1, rank - 2]
    kt = e.op1("Transpose", [k], attrs={"perm": perm})
    scores = e.op1("Mul", [e.op1("MatMul", [q, kt]), e.const(scale, dtype, "scale")])
    if e.arg("is_causal", False):
        n, m = e.dim(q, -2), e.dim(k, -2)
        keep = e.const(np.tril(np.ones((n, m), bool)), "bool", "causal")
        scores = e.op1("Where", [keep, scores, e.const(-math.inf, dtype, "neg_inf")])
    if e.has("attn_mask"):
        mask = e.x("attn_mask")
        if e.dtype(mask) == "bool":
            scores = e.op1("Where", [mask, scores, e.const(-math.inf, dtype, "neg_inf")])
        else:
            scores = e.op1("Add", [scores, e.cast(mask, dtype)])
    probs = e.op1("Softmax", [scores], attrs={"axis": -1})
    e.emit("MatMul", [probs, v])


def softmax(op: str) -> Lower:
    """softmax / _softmax / log_softmax / _log_softmax along ``dim``, then the output dtype."""

    def lower(e: Emit) -> None:
        x = e.x("self")
        dtype = e.out_dtype()
        if dtype in FLOATS:
            x = e.cast(x, dtype)
        e.emit(op, [x], {"axis": int(e.arg("dim"))})

    return lower


def reduce(op: str, cast: str | None = None) -> Lower:
    """mean / sum / amax / amin / prod / any / all over ``dim`` (all dims when none);
    ``cast`` is the dtype worked in (any/all reduce booleans as int32)."""

    def lower(e: Emit) -> None:
        x = e.x("self")
        dtype = e.out_dtype()
        work = cast or (dtype if dtype != "bool" else "int32")
        x = e.cast(x, work)
        dims = e.arg("dim", None)
        if isinstance(dims, int):
            dims = [dims]
        keep = int(bool(e.arg("keepdim", False)))
        ins = [x] + ([e.const(list(dims), "int64", "dim")] if dims else [])
        attrs = {"keepdims": keep}
        if work == dtype:
            e.emit(op, ins, attrs)
        else:
            e.emit("Cast", [e.op1(op, ins, attrs=attrs)], {"to": _code(dtype)})

    return lower


def _code(dtype: str) -> int:
    return DTYPES[dtype].onnx_code


def max_dim(op: str, arg_op: str) -> Lower:
    """max.dim / min.dim: (values, indices) along ``dim``."""

    def lower(e: Emit) -> None:
        x = e.x("self")
        d, keep = int(e.arg("dim")), int(bool(e.arg("keepdim", False)))
        e.op(op, [x, e.const([d], "int64", "dim")], {"keepdims": keep}, out=[e.out(0)])
        if e.used(1):
            e.op(arg_op, [x], {"axis": d, "keepdims": keep}, out=[e.out(1)])

    return lower


def argmax(op: str) -> Lower:
    def lower(e: Emit) -> None:
        x = e.x("self")
        if not e.has("dim"):
            x = e.op1("Reshape", [x, e.const([-1], "int64", "flat")])
            e.emit(op, [x], {"axis": 0, "keepdims": 0})
            return
        e.emit(op, [x], {"axis": int(e.arg("dim")), "keepdims": int(bool(e.arg("keepdim", False)))})

    return lower


def max_pool(e: Emit) -> None:
    """max_pool1d/2d/3d (and *_with_indices when the indices are unused)."""
    if e.used(1):
        raise NotMapped("max pooling whose indices are used (ONNX numbers them differently)")
    x = e.x("self")
    n = e.rank(x) - 2
    kernel = _n(e.arg("kernel_size"), n)
    stride = e.arg("stride", [])
    attrs = {
        "kernel_shape": kernel,
        "strides": _n(stride, n) if stride else kernel,
        "pads": _pads(_n(e.arg("padding", [0]), n)),
        "dilations": _n(e.arg("dilation", [1]), n),
        "ceil_mode": int(bool(e.arg("ceil_mode", False))),
    }
    e.op("MaxPool", [x], attrs, out=[e.out(0)])


def avg_pool(e: Emit) -> None:
    if e.arg("divisor_override", None) is not None:
        raise NotMapped("average pooling with divisor_override")
    x = e.x("self")
    n = e.rank(x) - 2
    kernel = _n(e.arg("kernel_size"), n)
    stride = e.arg("stride", [])
    attrs = {
        "kernel_shape": kernel,
        "strides": _n(stride, n) if stride else kernel,
        "pads": _pads(_n(e.arg("padding", [0]), n)),
        "ceil_mode": int(bool(e.arg("ceil_mode", False))),
        "count_include_pad": int(bool(e.arg("count_include_pad", True))),
    }
    e.emit("AveragePool", [x], attrs)


def adaptive_avg_pool(e: Emit) -> None:
    """GlobalAveragePool for output size 1, AveragePool when the input divides evenly."""
    x = e.x("self")
    n = e.rank(x) - 2
    out = _n(e.arg("output_size"), n)
    if all(s == 1 for s in out):
        e.emit("GlobalAveragePool", [x])
        return
    sizes = [e.dim(x, 2 + k) for k in range(n)]
    if any(s % o for s, o in zip(sizes, out, strict=True)):
        raise NotMapped("adaptive pooling to a size that does not divide the input")
    kernel = [s // o for s, o in zip(sizes, out, strict=True)]
    e.emit("AveragePool", [x], {"kernel_shape": kernel, "strides": kernel})


def topk(e: Emit) -> None:
    x = e.x("self")
    attrs = {
        "axis": int(e.arg("dim", -1)),
        "largest": int(bool(e.arg("largest", True))),
        "sorted": 1,
    }
    outs = [e.out(k) if e.used(k) else e.fresh("unused", e.dtype(x)) for k in range(2)]
    e.op("TopK", [x, e.const([e.arg("k")], "int64", "k")], attrs, out=outs)


def einsum(e: Emit) -> None:
    e.emit("Einsum", e.xs("tensors"), {"equation": str(e.arg("equation"))})


def group_norm(e: Emit) -> None:
    """group_norm / native_group_norm: InstanceNormalization of the input folded to
    [N, G, -1], then the per-channel weight and bias (the native op's mean and 1/std, its
    other outputs, only when unused)."""
    if e.used(1) or e.used(2):
        raise NotMapped("group norm whose mean or 1/std are used")
    x = e.x("input")
    groups = int(e.arg("num_groups") if e.has("num_groups") else e.arg("group"))
    dtype = e.dtype(x)
    channels = e.dim(x, 1)
    folded = e.op1("Reshape", [x, e.const([0, groups, -1], "int64", "groups")])
    ones = e.const([1.0] * groups, dtype, "ones")
    zeros = e.const([0.0] * groups, dtype, "zeros")
    eps = float(e.arg("eps", 1e-5))
    normed = e.op1("InstanceNormalization", [folded, ones, zeros], attrs={"epsilon": eps})
    y = e.op1("Reshape", [normed, e.op1("Shape", [x], dtype="int64")])
    view = [channels] + [1] * (e.rank(x) - 2)
    if e.has("weight"):
        y = e.op1("Mul", [y, e.op1("Reshape", [e.x("weight"), e.const(view, "int64", "view")])])
    if e.has("bias"):
        y = e.op1("Add", [y, e.op1("Reshape", [e.x("bias"), e.const(view, "int64", "view")])])
    e.op("Identity", [y], out=[e.out(0)])


def variance(sqrt: bool) -> Lower:
    """var / std with ``correction`` (default 1) over ``dim`` (all when none): the mean of
    squared deviations times n / (n - correction), n counted from the static sizes."""

    def lower(e: Emit) -> None:
        x = e.x("self")
        dtype, rank = e.dtype(x), e.rank(x)
        dims = e.arg("dim", None)
        dims = (
            list(range(rank))
            if not dims
            else [d % rank for d in (dims if isinstance(dims, list) else [dims])]
        )
        n = int(np.prod([e.dim(x, d) for d in dims]))
        correction = e.arg("correction", 1 if not e.has("unbiased") or e.arg("unbiased") else 0)
        axes = e.const(dims, "int64", "dim")
        keep = int(bool(e.arg("keepdim", False)))
        dev = e.op1("Sub", [x, e.op1("ReduceMean", [x, axes], attrs={"keepdims": 1})])
        ss = e.op1("ReduceSum", [e.op1("Mul", [dev, dev]), axes], attrs={"keepdims": keep})
        var_ = e.op1("Div", [ss, e.const(max(n - correction, 0), dtype, "count")])
        e.emit("Sqrt" if sqrt else "Identity", [var_])

    return lower
