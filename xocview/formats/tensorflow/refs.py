"""How NodeDefs name the tensors they read, and what each output of a node is.

A graph's node reads ``name`` or ``name:k``; a function body's node reads ``node:arg:k``
(an output argument of ``node`` and an index within it) or a function argument by name;
``^name`` is a control edge, which carries no value. An op with several output arguments
(FusedBatchNormV3's ``y``, ``batch_mean``...) numbers its outputs argument after argument.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from xocview.formats.tensorflow.protos import shape_of, xoc_dtype

__all__ = ["ZERO_OUTPUT_OPS", "Ref", "output_meta", "parse_ref", "position"]

# Ops that make no tensor: as a sink they are not a graph output.
ZERO_OUTPUT_OPS = frozenset(
    {
        "NoOp",
        "Assert",
        "AssignVariableOp",
        "AssignAddVariableOp",
        "AssignSubVariableOp",
        "SaveV2",
        "MergeV2Checkpoints",
        "DestroyResourceOp",
        "PrintV2",
        "ResourceApplyGradientDescent",
        "ResourceApplyAdam",
    }
)
_BN = ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2")
# Output arguments of the multi-output ops common in saved graphs; an op not named here has
# one output argument (a single tensor or a list).
OUT_ARGS: dict[str, tuple[str, ...]] = {
    "FusedBatchNorm": _BN,
    "FusedBatchNormV2": _BN,
    "FusedBatchNormV3": (*_BN, "reserve_space_3"),
    "TopKV2": ("values", "indices"),
    "Unique": ("y", "idx"),
    "UniqueV2": ("y", "idx"),
    "Switch": ("output_false", "output_true"),
    "Merge": ("output", "value_index"),
    "QuantizeV2": ("output", "output_min", "output_max"),
}
# Attributes that give an op's output dtype, in the order they are tried.
_DTYPE_ATTRS = ("dtype", "out_type", "DstT", "output_type", "Tout", "output_types", "T")
_BOOL_OPS = frozenset(
    {"Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "IsNan", "IsInf"}
)


class Ref(NamedTuple):
    """One input of a NodeDef: the node (or function argument), output argument, index."""

    node: str
    arg: str | None
    k: int
    control: bool


def parse_ref(text: str) -> Ref | None:
    """``text`` as a Ref; None when it does not have the form of one."""
    control = text.startswith("^")
    body = text[1:] if control else text
    parts = body.split(":")
    if not parts[0]:
        return None
    if len(parts) == 1:
        return Ref(parts[0], None, 0, control)
    if not parts[-1].isdigit() or len(parts) > 3:
        return None
    arg = parts[1] if len(parts) == 3 else None
    return Ref(parts[0], arg, int(parts[-1]), control)


def position(op: str, out_args: tuple[str, ...] | None, ref: Ref) -> int:
    """The output position ``ref`` names, counting the output arguments before its own."""
    if ref.arg is None:
        return ref.k
    names = out_args if out_args is not None else OUT_ARGS.get(op)
    if names and ref.arg in names:
        return names.index(ref.arg) + ref.k
    return ref.k


def output_meta(nd: Any, k: int) -> tuple[list[int], str]:
    """(shape, dtype) of output ``k`` as the NodeDef's attributes give them ([] / undefined
    when they do not: a function body's nodes rarely carry ``_output_shapes``)."""
    attr = nd.attr
    shape: list[int] = []
    if "_output_shapes" in attr:
        shapes = attr["_output_shapes"].list.shape
        if k < len(shapes):
            shape = shape_of(shapes[k]) or []
    elif nd.op in ("Placeholder", "VarHandleOp") and "shape" in attr:
        shape = shape_of(attr["shape"].shape) or []
    if nd.op == "Const" and "value" in attr:
        return shape_of(attr["value"].tensor.tensor_shape) or [], xoc_dtype(
            attr["value"].tensor.dtype
        )
    if nd.op == "VarHandleOp":
        return shape, "undefined"
    if nd.op in _BOOL_OPS:
        return shape, "bool"
    for name in _DTYPE_ATTRS:
        if name in attr:
            v = attr[name]
            if v.WhichOneof("value") == "type":
                return shape, xoc_dtype(v.type)
            types = v.list.type
            if k < len(types):
                return shape, xoc_dtype(types[k])
    return shape, "undefined"
