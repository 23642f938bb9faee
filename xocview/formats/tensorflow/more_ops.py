"""TensorFlow's elementwise, reduction and shape ops as ONNX ops (part of ``ops.TF_ONNX``).

Axes, shapes and sizes TensorFlow passes as tensors become ONNX attributes or int64 inputs:
a constant is read at load, a computed one is cast to int64 where ONNX takes an input.
"""

from __future__ import annotations

from collections.abc import Callable

from xocview.formats.tensorflow.lower import NotMapped, TfEmit
from xocview.formats.tensorflow.slicing import SLICING
from xocview.model.dtypes import DTYPES

__all__ = ["MORE"]

Map = Callable[[TfEmit], None]

_UNARY = {
    "Relu": "Relu",
    "Elu": "Elu",
    "Selu": "Selu",
    "Sigmoid": "Sigmoid",
    "Tanh": "Tanh",
    "Softplus": "Softplus",
    "Softsign": "Softsign",
    "Erf": "Erf",
    "Neg": "Neg",
    "Abs": "Abs",
    "Sqrt": "Sqrt",
    "Exp": "Exp",
    "Log": "Log",
    "Reciprocal": "Reciprocal",
    "Inv": "Reciprocal",
    "Floor": "Floor",
    "Ceil": "Ceil",
    "Round": "Round",
    "Sign": "Sign",
    "Sin": "Sin",
    "Cos": "Cos",
    "Tan": "Tan",
    "Asin": "Asin",
    "Acos": "Acos",
    "Atan": "Atan",
    "Sinh": "Sinh",
    "Cosh": "Cosh",
    "Asinh": "Asinh",
    "Acosh": "Acosh",
    "Atanh": "Atanh",
    "IsNan": "IsNaN",
    "IsInf": "IsInf",
    "LogicalNot": "Not",
    "Identity": "Identity",
    "StopGradient": "Identity",
    "PreventGradient": "Identity",
    "Snapshot": "Identity",
    "ReadVariableOp": "Identity",
    "PlaceholderWithDefault": "Identity",
    "EnsureShape": "Identity",
    "CheckNumerics": "Identity",
}
_BINARY = {
    "Add": "Add",
    "AddV2": "Add",
    "Sub": "Sub",
    "Mul": "Mul",
    "RealDiv": "Div",
    "Div": "Div",
    "Maximum": "Max",
    "Minimum": "Min",
    "Pow": "Pow",
    "Equal": "Equal",
    "Less": "Less",
    "LessEqual": "LessOrEqual",
    "Greater": "Greater",
    "GreaterEqual": "GreaterOrEqual",
    "LogicalAnd": "And",
    "LogicalOr": "Or",
}
_BOOL = frozenset({"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or"})
_REDUCE = {
    "Mean": "ReduceMean",
    "Sum": "ReduceSum",
    "Max": "ReduceMax",
    "Min": "ReduceMin",
    "Prod": "ReduceProd",
    "EuclideanNorm": "ReduceL2",
}
_FLOATS = frozenset({"float16", "bfloat16", "float32", "double"})


def unary(op_type: str) -> Map:
    return lambda e: e.last(op_type, [e.x(0)])


def binary(op_type: str) -> Map:
    def lower(e: TfEmit) -> None:
        if op_type in _BOOL:
            e.op(op_type, [e.x(0), e.x(1)], out=[e.outs[0]])
        else:
            e.last(op_type, [e.x(0), e.x(1)])

    return lower


def _to(e: TfEmit, t: int, dtype: str) -> int:
    """``t`` as ``dtype`` (itself when it already is)."""
    if e.dtype(t) == dtype:
        return t
    return e.op1("Cast", [t], attrs={"to": DTYPES[dtype].onnx_code}, dtype=dtype)


def _int64(e: TfEmit, k: int, label: str) -> int:
    """Input ``k`` as an int64 tensor: a constant read now, else cast when it runs."""
    try:
        return e.i64(e.ints(k), label)
    except NotMapped:
        return _to(e, e.x(k), "int64")


def reduce(op_type: str) -> Map:
    def lower(e: TfEmit) -> None:
        keep = 1 if e.attr("keep_dims", False) else 0
        e.last(op_type, [e.x(0), _int64(e, 1, "axes")], {"keepdims": keep})

    return lower


def relu6(e: TfEmit) -> None:
    dt = e.dtype(e.x(0))
    e.last("Clip", [e.x(0), e.const(0.0, dt, "min"), e.const(6.0, dt, "max")])


def leaky_relu(e: TfEmit) -> None:
    e.last("LeakyRelu", [e.x(0)], {"alpha": float(e.attr("alpha", 0.2))})


def softmax(op_type: str) -> Map:
    return lambda e: e.last(op_type, [e.x(0)], {"axis": -1})


def rsqrt(e: TfEmit) -> None:
    e.last("Reciprocal", [e.op1("Sqrt", [e.x(0)])])


def square(e: TfEmit) -> None:
    e.last("Mul", [e.x(0), e.x(0)])


def log1p(e: TfEmit) -> None:
    e.last("Log", [e.op1("Add", [e.x(0), e.const(1, e.dtype(e.x(0)), "one")])])


def expm1(e: TfEmit) -> None:
    e.last("Sub", [e.op1("Exp", [e.x(0)]), e.const(1, e.dtype(e.x(0)), "one")])


def squared_difference(e: TfEmit) -> None:
    d = e.op1("Sub", [e.x(0), e.x(1)])
    e.last("Mul", [d, d])


def not_equal(e: TfEmit) -> None:
    e.last("Not", [e.op1("Equal", [e.x(0), e.x(1)], dtype="bool")])


def floor_div(e: TfEmit) -> None:
    """Floats: floor(a / b). Integers: (a - floor_mod(a, b)) / b, which divides exactly."""
    a, b = e.x(0), e.x(1)
    if e.dtype(a) in _FLOATS:
        e.last("Floor", [e.op1("Div", [a, b])])
        return
    m = e.op1("Mod", [a, b], attrs={"fmod": 0})
    e.last("Div", [e.op1("Sub", [a, m]), b])


def floor_mod(e: TfEmit) -> None:
    """The remainder with the divisor's sign: ONNX Mod for integers, a - floor(a/b)*b else."""
    a, b = e.x(0), e.x(1)
    if e.dtype(a) not in _FLOATS:
        e.last("Mod", [a, b], {"fmod": 0})
        return
    q = e.op1("Floor", [e.op1("Div", [a, b])])
    e.last("Sub", [a, e.op1("Mul", [q, b])])


def select(e: TfEmit) -> None:
    e.last("Where", [e.x(0), e.x(1), e.x(2)])


def cast(e: TfEmit) -> None:
    to = str(e.attr("DstT"))
    if to not in DTYPES:
        raise NotMapped(f"no ONNX type for {to}")
    e.last("Cast", [e.x(0)], {"to": DTYPES[to].onnx_code})


def arg(op_type: str) -> Map:
    def lower(e: TfEmit) -> None:
        axis = e.int1(1)
        want = str(e.attr("output_type", "int64"))
        if want == "int64":
            e.last(op_type, [e.x(0)], {"axis": axis, "keepdims": 0})
            return
        got = e.op1(op_type, [e.x(0)], attrs={"axis": axis, "keepdims": 0}, dtype="int64")
        e.last("Cast", [got], {"to": DTYPES[want].onnx_code})

    return lower


def add_n(e: TfEmit) -> None:
    e.last("Sum", list(e.ins))


def identity_n(e: TfEmit) -> None:
    for x, y in zip(e.ins, e.outs, strict=False):
        e.op("Identity", [x], out=[y])


def einsum(e: TfEmit) -> None:
    e.last("Einsum", list(e.ins), {"equation": str(e.attr("equation"))})


def shape(e: TfEmit) -> None:
    want = str(e.attr("out_type", "int32"))
    got = e.op1("Shape", [e.x(0)], dtype="int64")
    e.last("Cast", [got], {"to": DTYPES[want].onnx_code})


def size(e: TfEmit) -> None:
    want = str(e.attr("out_type", "int32"))
    got = e.op1("Size", [e.x(0)], dtype="int64")
    e.last("Cast", [got], {"to": DTYPES[want].onnx_code})


def fill(e: TfEmit) -> None:
    e.last("Expand", [e.x(1), _int64(e, 0, "dims")])


def like(value: int) -> Map:
    def lower(e: TfEmit) -> None:
        x = e.x(0)
        dims = e.op1("Shape", [x], dtype="int64")
        e.last("Expand", [e.const(value, e.dtype(x), "value"), dims])

    return lower


def range_(e: TfEmit) -> None:
    e.last("Range", [e.x(0), e.x(1), e.x(2)])


def top_k(e: TfEmit) -> None:
    k = e.op1("Reshape", [_int64(e, 1, "k"), e.i64([1], "one")])
    attrs = {"axis": -1, "largest": 1, "sorted": 1 if e.attr("sorted", True) else 0}
    values = e.outs[0] if e.outs else e.fresh("values", e.dtype(e.x(0)))
    idx = e.fresh("indices", "int64")
    e.op("TopK", [e.x(0), k], attrs, out=[values, idx])
    if len(e.outs) > 1:  # (the graph makes the outputs something reads)
        want = str(e.attr("index_type", "int32"))
        e.op("Cast", [idx], {"to": DTYPES[want].onnx_code}, out=[e.outs[1]])
        e.tensors[e.outs[1]].dtype = want  # (the NodeDef's T names the values' type only)


def resize(nearest: bool) -> Map:
    def lower(e: TfEmit) -> None:
        corners = bool(e.attr("align_corners", False))
        half = bool(e.attr("half_pixel_centers", False))
        attrs: dict[str, object] = {"axes": [1, 2], "mode": "nearest" if nearest else "linear"}
        if corners:
            attrs["coordinate_transformation_mode"] = "align_corners"
        else:
            attrs["coordinate_transformation_mode"] = "half_pixel" if half else "asymmetric"
        if nearest:
            attrs["nearest_mode"] = "round_prefer_ceil" if corners or half else "floor"
        e.last("Resize", [e.x(0), None, None, _int64(e, 1, "sizes")], attrs)

    return lower


def logical_reduce(op_type: str) -> Map:
    """All / Any as ReduceMin / ReduceMax of the booleans as int32."""

    def lower(e: TfEmit) -> None:
        keep = 1 if e.attr("keep_dims", False) else 0
        ints = e.op1("Cast", [e.x(0)], attrs={"to": DTYPES["int32"].onnx_code}, dtype="int32")
        got = e.op1(op_type, [ints, _int64(e, 1, "axes")], attrs={"keepdims": keep})
        e.last("Cast", [got], {"to": DTYPES["bool"].onnx_code})

    return lower


def is_finite(e: TfEmit) -> None:
    bad = e.op1(
        "Or", [e.op1("IsNaN", [e.x(0)], dtype="bool"), e.op1("IsInf", [e.x(0)], dtype="bool")]
    )
    e.last("Not", [bad])


def clip_by_value(e: TfEmit) -> None:
    e.last("Min", [e.op1("Max", [e.x(0), e.x(1)]), e.x(2)])


def rank(e: TfEmit) -> None:
    n = e.op1("Size", [e.op1("Shape", [e.x(0)], dtype="int64")], dtype="int64")
    e.last("Cast", [n], {"to": DTYPES["int32"].onnx_code})


def cumsum(e: TfEmit) -> None:
    attrs = {"exclusive": int(bool(e.attr("exclusive", False)))}
    attrs["reverse"] = int(bool(e.attr("reverse", False)))
    e.last("CumSum", [e.x(0), _int64(e, 1, "axis")], attrs)


MORE: dict[str, Map] = {
    **{tf: unary(onnx) for tf, onnx in _UNARY.items()},
    **{tf: binary(onnx) for tf, onnx in _BINARY.items()},
    **{tf: reduce(onnx) for tf, onnx in _REDUCE.items()},
    "Relu6": relu6,
    "LeakyRelu": leaky_relu,
    "Softmax": softmax("Softmax"),
    "LogSoftmax": softmax("LogSoftmax"),
    "Rsqrt": rsqrt,
    "Square": square,
    "Log1p": log1p,
    "Expm1": expm1,
    "SquaredDifference": squared_difference,
    "NotEqual": not_equal,
    "FloorDiv": floor_div,
    "FloorMod": floor_mod,
    "Select": select,
    "SelectV2": select,
    "Cast": cast,
    "ArgMax": arg("ArgMax"),
    "ArgMin": arg("ArgMin"),
    "AddN": add_n,
    "IdentityN": identity_n,
    "Einsum": einsum,
    "Shape": shape,
    "Size": size,
    "Fill": fill,
    "ZerosLike": like(0),
    "OnesLike": like(1),
    "Range": range_,
    "All": logical_reduce("ReduceMin"),
    "Any": logical_reduce("ReduceMax"),
    "IsFinite": is_finite,
    "ClipByValue": clip_by_value,
    "Rank": rank,
    "Cumsum": cumsum,
    "TopKV2": top_k,
    "ResizeBilinear": resize(False),
    "ResizeNearestNeighbor": resize(True),
    **SLICING,
}
