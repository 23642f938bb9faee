"""The one table of TFLite builtin operators and the ONNX operators they run as.

TFLite lays activations out NHWC and convolution weights OHWI (depthwise: 1HW(C*M)); ONNX
wants NCHW and OIHW. The layout is explicit in the graph: a convolution or pooling becomes
Transpose -> Conv/Pool -> Transpose, its weight goes through a Transpose (folded once, as a
constant, by the executor), and a fused activation is its own op after them. An operator that
needs several ONNX ops is drawn as one group. Keys are builtin names (``BuiltinOperator``).
"""

from __future__ import annotations

from collections.abc import Callable

from xocview.formats.tflite.index_ops import INDEX
from xocview.formats.tflite.lower import Lower, NotMapped
from xocview.formats.tflite.more_ops import MORE
from xocview.formats.tflite.recurrent import RECURRENT
from xocview.formats.tflite.spatial_ops import SPATIAL

__all__ = ["TFLITE_ONNX", "mapping", "quant_params"]

Map = Callable[[Lower], None]

TO_NCHW = [0, 3, 1, 2]
TO_NHWC = [0, 2, 3, 1]
_INT_MAX = 2**63 - 1

_UNARY = {
    "RELU": "Relu",
    "LOGISTIC": "Sigmoid",
    "TANH": "Tanh",
    "HARD_SWISH": "HardSwish",
    "EXP": "Exp",
    "LOG": "Log",
    "SQRT": "Sqrt",
    "NEG": "Neg",
    "ABS": "Abs",
    "SIN": "Sin",
    "COS": "Cos",
    "FLOOR": "Floor",
    "CEIL": "Ceil",
    "ROUND": "Round",
    "SIGN": "Sign",
    "ELU": "Elu",
    "LOGICAL_NOT": "Not",
}
_BINARY = {
    "ADD": "Add",
    "SUB": "Sub",
    "MUL": "Mul",
    "DIV": "Div",
    "POW": "Pow",
    "MAXIMUM": "Max",
    "MINIMUM": "Min",
    "LESS": "Less",
    "LESS_EQUAL": "LessOrEqual",
    "GREATER": "Greater",
    "GREATER_EQUAL": "GreaterOrEqual",
    "EQUAL": "Equal",
    "LOGICAL_AND": "And",
    "LOGICAL_OR": "Or",
}
_REDUCE = {
    "MEAN": "ReduceMean",
    "SUM": "ReduceSum",
    "REDUCE_MAX": "ReduceMax",
    "REDUCE_MIN": "ReduceMin",
    "REDUCE_PROD": "ReduceProd",
}


def unary(op_type: str) -> Map:
    return lambda e: e.last(op_type, [e.x(0)])


def binary(op_type: str) -> Map:
    def lower(e: Lower) -> None:
        out = "bool" if op_type in ("Less", "LessOrEqual", "Greater", "GreaterOrEqual") else None
        if out or op_type == "Equal":
            e.op(op_type, [e.x(0), e.x(1)], out=[e.outs[0]])
            return
        e.last(op_type, [e.x(0), e.x(1)])

    return lower


def reduce(op_type: str) -> Map:
    def lower(e: Lower) -> None:
        keep = 1 if e.opt("keep_dims", False) else 0
        axes = e.i64(e.ints(1), "axes")
        e.last(op_type, [e.x(0), axes], {"keepdims": keep})

    return lower


def _clip(low: float, high: float) -> Map:
    def lower(e: Lower) -> None:
        dt = e.dtype(e.x(0))
        e.last("Clip", [e.x(0), e.const(low, dt, "min"), e.const(high, dt, "max")])

    return lower


def _nhwc(e: Lower, op_type: str, inputs: list[int | None], attrs: dict[str, object]) -> None:
    """``op_type`` (NCHW) on input 0 (NHWC) between two Transposes, then the activation."""
    x = e.op1("Transpose", [inputs[0]], attrs={"perm": TO_NCHW})
    y = e.op1(op_type, [x, *inputs[1:]], attrs=attrs)
    e.last("Transpose", [y], {"perm": TO_NHWC})


def _window(e: Lower, kernel: list[int]) -> dict[str, object]:
    strides = [int(e.opt("stride_h", 1)), int(e.opt("stride_w", 1))]
    padding = e.opt("padding", "SAME")
    if padding not in ("SAME", "VALID"):
        raise NotMapped(f"padding {padding}")
    attrs: dict[str, object] = {"kernel_shape": kernel, "strides": strides}
    attrs["auto_pad"] = "SAME_UPPER" if padding == "SAME" else "VALID"
    return attrs


def conv_2d(e: Lower) -> None:
    w = e.x(1)
    kernel = [e.dim(w, 1), e.dim(w, 2)]
    attrs = _window(e, kernel)
    attrs["dilations"] = [int(e.opt("dilation_h_factor", 1)), int(e.opt("dilation_w_factor", 1))]
    cin = e.dim(e.x(0), 3)
    if cin % e.dim(w, 3):
        raise NotMapped("input channels are not a multiple of the filter's")
    attrs["group"] = cin // e.dim(w, 3)
    wt = e.op1("Transpose", [w], attrs={"perm": [0, 3, 1, 2]})
    _nhwc(e, "Conv", [e.x(0), wt, e.ins[2] if e.has(2) else None], attrs)


def depthwise_conv_2d(e: Lower) -> None:
    w = e.x(1)
    attrs = _window(e, [e.dim(w, 1), e.dim(w, 2)])
    attrs["dilations"] = [int(e.opt("dilation_h_factor", 1)), int(e.opt("dilation_w_factor", 1))]
    attrs["group"] = e.dim(e.x(0), 3)
    wt = e.op1("Transpose", [w], attrs={"perm": [3, 0, 1, 2]})
    _nhwc(e, "Conv", [e.x(0), wt, e.ins[2] if e.has(2) else None], attrs)


def pool(op_type: str) -> Map:
    def lower(e: Lower) -> None:
        kernel = [int(e.opt("filter_height")), int(e.opt("filter_width"))]
        _nhwc(e, op_type, [e.x(0)], _window(e, kernel))

    return lower


def fully_connected(e: Lower) -> None:
    """y = x W^T + b over the last axis; without keep_num_dims the rows are flattened."""
    if e.opt("weights_format", "DEFAULT") not in ("DEFAULT", 0):
        raise NotMapped("shuffled weights")
    w = e.x(1)
    x = e.x(0)
    if not e.opt("keep_num_dims", False) and e.rank(x) != 2:
        x = e.op1("Reshape", [x, e.i64([-1, e.dim(w, 1)], "rows")])
    wt = e.op1("Transpose", [w], attrs={"perm": [1, 0]})
    if not e.has(2):
        e.last("MatMul", [x, wt])
        return
    e.last("Add", [e.op1("MatMul", [x, wt]), e.x(2)])


def batch_matmul(e: Lower) -> None:
    a, b = e.x(0), e.x(1)
    if e.opt("adj_x", False):
        a = e.op1("Transpose", [a], attrs={"perm": _swap_last(e.rank(a))})
    if e.opt("adj_y", False):
        b = e.op1("Transpose", [b], attrs={"perm": _swap_last(e.rank(b))})
    e.last("MatMul", [a, b])


def _swap_last(rank: int) -> list[int]:
    return [*range(rank - 2), rank - 1, rank - 2]


def softmax(e: Lower) -> None:
    beta = float(e.opt("beta", 1.0))
    x = e.x(0)
    if beta != 1.0:
        x = e.op1("Mul", [x, e.const(beta, e.dtype(x), "beta")])
    e.last("Softmax", [x], {"axis": -1})


def reshape(e: Lower) -> None:
    """The output's shape as written in the file (its signature: -1 for a free size)."""
    out = e.tensors[e.outs[0]]
    shape = list(out.metadata.get("shape_signature", out.shape))
    if shape.count(-1) > 1:
        if not e.has(1):
            raise NotMapped("more than one free dimension and no shape input")
        e.last("Reshape", [e.x(0), e.op1("Cast", [e.x(1)], attrs={"to": 7}, dtype="int64")])
        return
    e.last("Reshape", [e.x(0), e.i64(shape, "shape")])


def concatenation(e: Lower) -> None:
    e.last("Concat", [t for t in e.ins if t is not None], {"axis": int(e.opt("axis", 0))})


def transpose(e: Lower) -> None:
    e.last("Transpose", [e.x(0)], {"perm": e.ints(1)})


def pad(e: Lower) -> None:
    pads = e.value(1).reshape(-1, 2)
    onnx_pads = e.i64([*pads[:, 0].tolist(), *pads[:, 1].tolist()], "pads")
    value = e.x(2) if e.has(2) else None
    e.last("Pad", [e.x(0), onnx_pads, value], {"mode": "constant"})


def mirror_pad(e: Lower) -> None:
    if e.opt("mode", "REFLECT") != "REFLECT":
        raise NotMapped("SYMMETRIC mirror padding")
    pads = e.value(1).reshape(-1, 2)
    onnx_pads = e.i64([*pads[:, 0].tolist(), *pads[:, 1].tolist()], "pads")
    e.last("Pad", [e.x(0), onnx_pads], {"mode": "reflect"})


def gather(e: Lower) -> None:
    if int(e.opt("batch_dims", 0)) != 0:
        raise NotMapped("batch_dims other than 0")
    e.last("Gather", [e.x(0), e.x(1)], {"axis": int(e.opt("axis", 0))})


def strided_slice(e: Lower) -> None:
    """begin/end/strides with begin, end and shrink masks (no ellipsis, no new axes)."""
    if e.opt("ellipsis_mask", 0) or e.opt("new_axis_mask", 0) or e.opt("offset", False):
        raise NotMapped("ellipsis, new-axis masks or offset")
    begin, end, steps = e.ints(1), e.ints(2), e.ints(3)
    bmask, emask = int(e.opt("begin_mask", 0)), int(e.opt("end_mask", 0))
    shrink = int(e.opt("shrink_axis_mask", 0))
    starts, ends, squeeze = [], [], []
    for d, (b, n, s) in enumerate(zip(begin, end, steps, strict=True)):
        if shrink >> d & 1:
            starts.append(b)
            ends.append(b + 1 if b != -1 else _INT_MAX)
            steps[d] = 1
            squeeze.append(d)
            continue
        starts.append((0 if s > 0 else -1) if bmask >> d & 1 else b)
        ends.append((_INT_MAX if s > 0 else -_INT_MAX) if emask >> d & 1 else n)
    axes = list(range(len(starts)))
    ins = [e.x(0), e.i64(starts, "starts"), e.i64(ends, "ends"), e.i64(axes, "axes")]
    if not squeeze:
        e.last("Slice", [*ins, e.i64(steps, "steps")])
        return
    y = e.op1("Slice", [*ins, e.i64(steps, "steps")])
    e.last("Squeeze", [y, e.i64(squeeze, "shrink")])


def slice_(e: Lower) -> None:
    if not all(e.tensors[e.x(k)].kind == "weight" for k in (1, 2)):
        _slice_computed(e)
        return
    begin, size = e.ints(1), e.ints(2)
    ends = [_INT_MAX if n == -1 else b + n for b, n in zip(begin, size, strict=True)]
    axes = list(range(len(begin)))
    e.last("Slice", [e.x(0), e.i64(begin, "starts"), e.i64(ends, "ends"), e.i64(axes, "axes")])


def _slice_computed(e: Lower) -> None:
    """begin and size made by the graph (as a WHILE body's TensorList reads are): a size of -1
    runs to the end."""
    n = e.dim(e.x(1), 0)
    begin = e.cast(e.x(1), "int64")
    size = e.cast(e.x(2), "int64")
    whole = e.op1("Equal", [size, e.i64([-1], "to_end")])
    ends = e.op1("Where", [whole, e.i64([_INT_MAX], "end"), e.op1("Add", [begin, size])])
    e.last("Slice", [e.x(0), begin, ends, e.i64(list(range(n)), "axes")])


def squeeze(e: Lower) -> None:
    dims = list(e.opt("squeeze_dims", []))
    if not dims:
        dims = [d for d, n in enumerate(e.shape(e.x(0))) if n == 1]
    e.last("Squeeze", [e.x(0), e.i64(dims, "axes")])


def expand_dims(e: Lower) -> None:
    axis = e.ints(1)[0]
    if axis < 0:
        axis += e.rank(e.x(0)) + 1
    e.last("Unsqueeze", [e.x(0), e.i64([axis], "axes")])


def squared_difference(e: Lower) -> None:
    d = e.op1("Sub", [e.x(0), e.x(1)])
    e.last("Mul", [d, d])


def rsqrt(e: Lower) -> None:
    e.last("Reciprocal", [e.op1("Sqrt", [e.x(0)])])


def leaky_relu(e: Lower) -> None:
    e.last("LeakyRelu", [e.x(0)], {"alpha": float(e.opt("alpha", 0.2))})


def prelu(e: Lower) -> None:
    e.last("PRelu", [e.x(0), e.x(1)])


def log_softmax(e: Lower) -> None:
    e.last("LogSoftmax", [e.x(0)], {"axis": -1})


def cast(e: Lower) -> None:
    from xocview.model.dtypes import DTYPES

    to = e.tensors[e.outs[0]].dtype
    e.last("Cast", [e.x(0)], {"to": DTYPES[to].onnx_code})


def quantize(e: Lower) -> None:
    """float -> integer with the output's parameters; integer -> integer through float."""
    x = e.x(0)
    if e.dtype(x) not in ("float32", "float16"):
        x = _dequantized(e, x)
    scale, zero, axis = quant_params(e, e.outs[0])
    e.last("QuantizeLinear", [x, scale, zero], axis)


def dequantize(e: Lower) -> None:
    x = e.x(0)
    if e.dtype(x) == "float16":
        e.last("Cast", [x], {"to": 1})
        return
    scale, zero, axis = quant_params(e, x)
    e.last("DequantizeLinear", [x, scale, zero], axis)


def _dequantized(e: Lower, t: int) -> int:
    scale, zero, axis = quant_params(e, t)
    return e.op1("DequantizeLinear", [t, scale, zero], attrs=axis, dtype="float32")


def quant_params(e: Lower, t: int) -> tuple[int, int, dict[str, object]]:
    """Scale and zero point constants of a quantized tensor, and the axis when per channel."""
    q = e.tensors[t].metadata.get("quantization")
    if not q or not q.get("scale"):
        raise NotMapped(f"{e.tensors[t].id!r} has no quantization parameters")
    scale, zero = list(q["scale"]), list(q.get("zero_point") or [0] * len(q["scale"]))
    attrs: dict[str, object] = {}
    if len(scale) > 1:
        attrs["axis"] = int(q.get("quantized_dimension", 0))
    else:
        scale, zero = scale[0], zero[0]
    return e.const(scale, "float32", "scale"), e.const(zero, e.dtype(t), "zero_point"), attrs


TFLITE_ONNX: dict[str, Map] = {
    **{name: unary(op) for name, op in _UNARY.items()},
    **{name: binary(op) for name, op in _BINARY.items()},
    **{name: reduce(op) for name, op in _REDUCE.items()},
    "RELU6": _clip(0.0, 6.0),
    "RELU_N1_TO_1": _clip(-1.0, 1.0),
    "RELU_0_TO_1": _clip(0.0, 1.0),
    "CONV_2D": conv_2d,
    "DEPTHWISE_CONV_2D": depthwise_conv_2d,
    "AVERAGE_POOL_2D": pool("AveragePool"),
    "MAX_POOL_2D": pool("MaxPool"),
    "FULLY_CONNECTED": fully_connected,
    "BATCH_MATMUL": batch_matmul,
    "SOFTMAX": softmax,
    "LOG_SOFTMAX": log_softmax,
    "RESHAPE": reshape,
    "CONCATENATION": concatenation,
    "TRANSPOSE": transpose,
    "PAD": pad,
    "PADV2": pad,
    "MIRROR_PAD": mirror_pad,
    "GATHER": gather,
    "STRIDED_SLICE": strided_slice,
    "SLICE": slice_,
    "SQUEEZE": squeeze,
    "EXPAND_DIMS": expand_dims,
    "SQUARED_DIFFERENCE": squared_difference,
    "RSQRT": rsqrt,
    "LEAKY_RELU": leaky_relu,
    "PRELU": prelu,
    "CAST": cast,
    "QUANTIZE": quantize,
    "DEQUANTIZE": dequantize,
    **MORE,
    **INDEX,
    **SPATIAL,
    **RECURRENT,
}


def mapping(name: str) -> Map | None:
    """The mapping of a builtin operator, None when it has none (it stays a tflite node)."""
    return TFLITE_ONNX.get(name)
