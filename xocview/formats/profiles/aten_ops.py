"""Which ONNX nodes an ATen op of the PyTorch profiler becomes when the model is exported.

A table, as facts about operators are data: an op name (``aten::addmm`` -> ``addmm``) maps to
the ONNX op types its node may have, most likely first, and to the op types of nodes the export
adds behind it from the same call (a Linear's bias Add after its MatMul). Ops missing from the
table map to the ONNX op of the same name (``aten::softmax`` -> ``Softmax``, ``aten::erf`` ->
``Erf``). Ops that make no node of their own (allocations, copies, views the export folds
away) map to nothing; their time goes to their module's scope.
"""

from __future__ import annotations

__all__ = ["NO_NODE", "aten_name", "onnx_kinds"]

_MATMUL = ("MatMul", "Gemm", "FusedMatMul")
_CONV = ("Conv", "ConvTranspose")

# aten op -> (ONNX op types of its node, ONNX op types the export adds behind that node)
_TABLE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "linear": (_MATMUL, ("Add",)),
    "addmm": (_MATMUL, ("Add",)),
    "mm": (_MATMUL, ()),
    "matmul": (_MATMUL, ()),
    "bmm": (_MATMUL, ()),
    "baddbmm": (_MATMUL, ("Add",)),
    "einsum": (("Einsum", "MatMul"), ()),
    "conv1d": (_CONV, ()),
    "conv2d": (_CONV, ()),
    "conv3d": (_CONV, ()),
    "convolution": (_CONV, ()),
    "conv_transpose1d": (_CONV, ()),
    "conv_transpose2d": (_CONV, ()),
    "conv_transpose3d": (_CONV, ()),
    "layer_norm": (("LayerNormalization",), ()),
    "group_norm": (("GroupNormalization", "InstanceNormalization"), ()),
    "batch_norm": (("BatchNormalization",), ()),
    "instance_norm": (("InstanceNormalization",), ()),
    "rms_norm": (("RMSNormalization", "SimplifiedLayerNormalization"), ()),
    "log_softmax": (("LogSoftmax",), ()),
    "scaled_dot_product_attention": (("Attention", "MatMul"), ()),
    "gelu": (("Gelu",), ()),
    "silu": (("Sigmoid",), ("Mul",)),
    "rsub": (("Sub",), ()),
    "rsqrt": (("Sqrt",), ("Reciprocal", "Div")),
    "t": (("Transpose",), ()),
    "permute": (("Transpose",), ()),
    "view": (("Reshape",), ()),
    "reshape": (("Reshape",), ()),
    "flatten": (("Flatten", "Reshape"), ()),
    "cat": (("Concat",), ()),
    "stack": (("Concat", "Unsqueeze"), ()),
    "chunk": (("Split",), ()),
    "split_with_sizes": (("Split",), ()),
    "index_select": (("Gather",), ()),
    "embedding": (("Gather",), ()),
    "select": (("Gather",), ()),
    "masked_fill": (("Where",), ()),
    "max_pool1d": (("MaxPool",), ()),
    "max_pool2d": (("MaxPool",), ()),
    "max_pool3d": (("MaxPool",), ()),
    "avg_pool1d": (("AveragePool",), ()),
    "avg_pool2d": (("AveragePool",), ()),
    "avg_pool3d": (("AveragePool",), ()),
    "adaptive_avg_pool1d": (("GlobalAveragePool", "AveragePool", "ReduceMean"), ()),
    "adaptive_avg_pool2d": (("GlobalAveragePool", "AveragePool", "ReduceMean"), ()),
    "mean": (("ReduceMean",), ()),
    "sum": (("ReduceSum",), ()),
    "amax": (("ReduceMax",), ()),
    "amin": (("ReduceMin",), ()),
    "dropout": (("Dropout", "Identity"), ()),
    "hardtanh": (("Clip",), ()),
    "clamp": (("Clip",), ()),
    "eq": (("Equal",), ()),
    "lt": (("Less",), ()),
    "gt": (("Greater",), ()),
    "ne": (("Equal",), ("Not",)),
    "arange": (("Range",), ()),
    "full": (("ConstantOfShape",), ()),
    "pad": (("Pad",), ()),
    "constant_pad_nd": (("Pad",), ()),
    "upsample_nearest2d": (("Resize",), ()),
    "upsample_bilinear2d": (("Resize",), ()),
}

# Allocation, copies and views the export folds away: no node to look for.
NO_NODE = frozenset(
    {
        "empty",
        "empty_strided",
        "empty_like",
        "zeros",
        "zeros_like",
        "ones",
        "ones_like",
        "copy_",
        "clone",
        "contiguous",
        "to",
        "_to_copy",
        "detach",
        "alias",
        "lift_fresh",
        "as_strided",
        "expand_as",
        "resolve_conj",
        "resolve_neg",
        "_reshape_alias",
        "_unsafe_view",
        "set_",
        "item",
        "_local_scalar_dense",
        "is_nonzero",
        "result_type",
    }
)


def aten_name(event_name: str) -> str | None:
    """``addmm`` for ``aten::addmm`` (an in-place ``add_`` is ``add``); None for a name that is
    not an ATen op's."""
    if not event_name.startswith("aten::"):
        return None
    name = event_name[len("aten::") :]
    if name.endswith("_") and not name.endswith("__") and name not in NO_NODE:
        name = name[:-1]  # add_ -> add
    return name


def _camel(name: str) -> str:
    """``log_softmax`` -> ``LogSoftmax``: how ONNX spells the op of the same name."""
    return "".join(part[:1].upper() + part[1:] for part in name.strip("_").split("_"))


def onnx_kinds(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ONNX op types the ATen op ``name`` becomes, and those the export adds behind it;
    empty for an op that makes no node."""
    if name in NO_NODE:
        return (), ()
    if name in _TABLE:
        return _TABLE[name]
    return (_camel(name),), ()
