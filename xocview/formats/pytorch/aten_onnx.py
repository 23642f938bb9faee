"""The one table of ATen operators and the ONNX operators they run as.

Keys are ATen op names, with the overload where overloads differ (``div.Tensor_mode``), else
the bare name for all of them (``add``); ``_operator.*`` are Python's operators on symbolic
ints. Each value writes the op with ``lowering.emit.Emit``: one ONNX op, or several that the
reader groups under the ATen op. An ATen op that is not here stays an ATen node, which the
executor refuses by name. ``NO_OP`` ops check or constrain only and are left out of graphs.
"""

from __future__ import annotations

from collections.abc import Callable

from xocview.formats.pytorch.lowering import elementwise as ew
from xocview.formats.pytorch.lowering import nn
from xocview.formats.pytorch.lowering import shapes as sh
from xocview.formats.pytorch.lowering.emit import Emit
from xocview.formats.pytorch.lowering.recurrent import rnn
from xocview.formats.pytorch.lowering.resize import upsample

__all__ = ["ATEN_ONNX", "NO_OP", "lowering"]

Lower = Callable[[Emit], None]

_UNARY = {
    "relu": "Relu",
    "sigmoid": "Sigmoid",
    "tanh": "Tanh",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "neg": "Neg",
    "abs": "Abs",
    "sin": "Sin",
    "cos": "Cos",
    "floor": "Floor",
    "ceil": "Ceil",
    "round": "Round",
    "sign": "Sign",
    "erf": "Erf",
    "reciprocal": "Reciprocal",
    "hardswish": "HardSwish",
}
_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "maximum": "Max", "minimum": "Min"}
_COMPARE = {
    "eq": ("Equal", False),
    "ne": ("Equal", True),
    "lt": ("Less", False),
    "le": ("LessOrEqual", False),
    "gt": ("Greater", False),
    "ge": ("GreaterOrEqual", False),
}
_SAME = ("dropout", "feature_dropout", "clone", "alias", "detach", "lift_fresh_copy")
_CASTS = ("to", "_to_copy", "type_as", "contiguous")

ATEN_ONNX: dict[str, Lower] = {
    **{name: ew.unary(op) for name, op in _UNARY.items()},
    **{name: ew.binary(op) for name, op in _BINARY.items()},
    **{name: ew.compare(op, negate) for name, (op, negate) in _COMPARE.items()},
    **{name: ew.identity("input" if "dropout" in name else "self") for name in _SAME},
    **{name: ew.to_dtype for name in _CASTS},
    "isnan": ew.unary("IsNaN", cast=False),
    "logical_not": ew.unary("Not", cast=False),
    "bitwise_not": ew.bitwise("Not", "BitwiseNot"),
    "logical_and": ew.logical("And"),
    "logical_or": ew.logical("Or"),
    "logical_xor": ew.logical("Xor"),
    "bitwise_and": ew.bitwise("And", "BitwiseAnd"),
    "__and__": ew.bitwise("And", "BitwiseAnd"),
    "bitwise_or": ew.bitwise("Or", "BitwiseOr"),
    "__or__": ew.bitwise("Or", "BitwiseOr"),
    "bitwise_xor": ew.bitwise("Xor", "BitwiseXor"),
    "rsub": ew.rsub,
    "div": ew.div,
    "floor_divide": ew.floor_divide,
    "remainder": ew.remainder(0),
    "fmod": ew.remainder(1),
    "pow": ew.pow_,
    "square": ew.square,
    "rsqrt": ew.rsqrt,
    "where": ew.where,
    "masked_fill": ew.masked_fill,
    "clamp": ew.clamp("min", "max"),
    "clip": ew.clamp("min", "max"),
    "clamp_min": ew.clamp("min", "max"),
    "clamp_max": ew.clamp("min", "max"),
    "hardtanh": ew.clamp("min_val", "max_val", -1.0, 1.0),
    "relu6": ew.clamp("min", "max", 0.0, 6.0),
    "gelu": ew.gelu,
    "silu": ew.silu,
    "mish": ew.mish,
    "log1p": ew.log1p,
    "expm1": ew.expm1,
    "leaky_relu": ew.leaky_relu,
    "elu": ew.elu,
    "softplus": ew.softplus,
    "hardsigmoid": ew.hardsigmoid,
    "native_dropout": ew.native_dropout,
    "_operator.add": ew.sym_arith("Add"),
    "_operator.sub": ew.sym_arith("Sub"),
    "_operator.mul": ew.sym_arith("Mul"),
    "_operator.floordiv": ew.sym_arith("FloorDiv"),
    "_operator.getitem": sh.getitem,
    # shapes, indexing, factories
    "view": sh.reshape,
    "reshape": sh.reshape,
    "_unsafe_view": sh.reshape,
    "flatten": sh.flatten,
    "unflatten": sh.unflatten,
    "permute": sh.permute,
    "transpose": sh.transpose,
    "t": sh.t,
    "numpy_T": sh.reverse,
    "mT": sh.swap_last,
    "mH": sh.swap_last,
    "adjoint": sh.swap_last,
    "unsqueeze": sh.unsqueeze,
    "squeeze": sh.squeeze,
    "expand": sh.expand,
    "broadcast_to": sh.expand,
    "expand_as": sh.expand_as,
    "repeat": sh.repeat,
    "cat": sh.cat,
    "concat": sh.cat,
    "stack": sh.stack,
    "slice": sh.slice_,
    "narrow": sh.narrow,
    "select": sh.select,
    "index_select": sh.index_select,
    "index": sh.index,
    "gather": sh.gather,
    "embedding": sh.embedding,
    "split": sh.split,
    "split_with_sizes": sh.split,
    "chunk": sh.split,
    "unbind": sh.unbind,
    "flip": sh.flip,
    "constant_pad_nd": sh.constant_pad,
    "pad": sh.constant_pad,
    "tril": sh.trilu(0),
    "triu": sh.trilu(1),
    "cumsum": sh.cumsum,
    "diff": sh.diff,
    "sym_size": sh.sym_size,
    "sym_numel": sh.sym_numel,
    "arange": sh.arange,
    "full": sh.full("fill_value"),
    "new_full": sh.full("fill_value"),
    "ones": sh.full(None, 1),
    "new_ones": sh.full(None, 1),
    "zeros": sh.full(None, 0),
    "new_zeros": sh.full(None, 0),
    "empty": sh.full(None, 0),
    "new_empty": sh.full(None, 0),
    "scalar_tensor": sh.full("s"),
    "full_like": sh.full("fill_value", like=True),
    "ones_like": sh.full(None, 1, like=True),
    "zeros_like": sh.full(None, 0, like=True),
    "empty_like": sh.full(None, 0, like=True),
    # network ops
    "conv1d": nn.conv(False),
    "conv2d": nn.conv(False),
    "conv3d": nn.conv(False),
    "conv_transpose1d": nn.conv(True),
    "conv_transpose2d": nn.conv(True),
    "conv_transpose3d": nn.conv(True),
    "convolution": nn.conv(None),
    "batch_norm": nn.batch_norm,
    "_native_batch_norm_legit_no_training": nn.batch_norm,
    "layer_norm": nn.layer_norm,
    "native_layer_norm": nn.layer_norm,
    "group_norm": nn.group_norm,
    "native_group_norm": nn.group_norm,
    "var": nn.variance(False),
    "std": nn.variance(True),
    "linear": nn.linear,
    "addmm": nn.addmm,
    "mm": nn.matmul,
    "bmm": nn.matmul,
    "matmul": nn.matmul,
    "baddbmm": nn.baddbmm,
    "scaled_dot_product_attention": nn.sdpa,
    "softmax": nn.softmax("Softmax"),
    "_softmax": nn.softmax("Softmax"),
    "log_softmax": nn.softmax("LogSoftmax"),
    "_log_softmax": nn.softmax("LogSoftmax"),
    "mean": nn.reduce("ReduceMean"),
    "sum": nn.reduce("ReduceSum"),
    "prod": nn.reduce("ReduceProd"),
    "amax": nn.reduce("ReduceMax"),
    "amin": nn.reduce("ReduceMin"),
    "any": nn.reduce("ReduceMax", cast="int32"),
    "all": nn.reduce("ReduceMin", cast="int32"),
    "max.dim": nn.max_dim("ReduceMax", "ArgMax"),
    "min.dim": nn.max_dim("ReduceMin", "ArgMin"),
    "max.default": nn.reduce("ReduceMax"),
    "min.default": nn.reduce("ReduceMin"),
    "max.other": ew.binary("Max"),
    "min.other": ew.binary("Min"),
    "argmax": nn.argmax("ArgMax"),
    "argmin": nn.argmax("ArgMin"),
    "max_pool1d": nn.max_pool,
    "max_pool2d": nn.max_pool,
    "max_pool3d": nn.max_pool,
    "max_pool2d_with_indices": nn.max_pool,
    "avg_pool1d": nn.avg_pool,
    "avg_pool2d": nn.avg_pool,
    "avg_pool3d": nn.avg_pool,
    "adaptive_avg_pool1d": nn.adaptive_avg_pool,
    "adaptive_avg_pool2d": nn.adaptive_avg_pool,
    "_adaptive_avg_pool2d": nn.adaptive_avg_pool,
    "topk": nn.topk,
    "einsum": nn.einsum,
    # F.interpolate
    "upsample_nearest1d": upsample("nearest"),
    "upsample_nearest2d": upsample("nearest"),
    "upsample_nearest3d": upsample("nearest"),
    "upsample_linear1d": upsample("linear"),
    "upsample_bilinear2d": upsample("linear"),
    "upsample_trilinear3d": upsample("linear"),
    "upsample_bicubic2d": upsample("cubic"),
    # recurrent layers
    "lstm": rnn("LSTM"),
    "gru": rnn("GRU"),
}

# Ops that only check or constrain values at trace time: no output, nothing to run.
NO_OP = frozenset(
    {
        "_assert_tensor_metadata",
        "_assert_scalar",
        "_assert_async",
        "sym_constrain_range",
        "sym_constrain_range_for_size",
        "_print",
    }
)


def lowering(name: str, overload: str) -> Lower | None:
    """The lowering of ATen op ``name.overload``, or None when it has none."""
    return ATEN_ONNX.get(f"{name}.{overload}") or ATEN_ONNX.get(name)
