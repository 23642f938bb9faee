"""Operator names of other frameworks mapped to ONNX operator types: the one place for it.

Each source format has a table from its op name to rules; a rule may be selected by attribute
values (MXNet's ``Activation(act_type=relu)`` is ONNX ``Relu``) and renames attributes to their
ONNX names and types (``kernel`` -> ``kernel_shape``, ``pad`` (h, w) -> ``pads`` [h, w, h, w]).
Loaders keep the original op name and attributes in metadata; ops without a rule keep their
own name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "LIGHTNET_DERIVED",
    "LIGHTNET_OPS",
    "NNVM_OPS",
    "Rule",
    "Translation",
    "symmetric_pads",
    "translate",
]

Converter = Callable[[Any], Any]


@dataclass(frozen=True)
class Rule:
    """One way a source op becomes an ONNX op.

    ``attrs`` maps a source attribute to its ONNX name, or to (name, converter);
    ``when`` holds source attribute values that must match for the rule to apply (compared
    as lower-case strings); ``fixed`` are ONNX attributes the rule implies.
    """

    onnx_op: str
    attrs: Mapping[str, str | tuple[str, Converter]] = field(default_factory=dict)
    when: Mapping[str, str] = field(default_factory=dict)
    fixed: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Translation:
    """The ONNX op type, its ONNX attributes, and the source attributes no rule consumed."""

    op_type: str
    attributes: dict[str, Any]
    unmapped: dict[str, Any]


def translate(
    table: Mapping[str, Sequence[Rule]], op: str, attrs: Mapping[str, Any]
) -> Translation | None:
    """The first rule for ``op`` whose ``when`` matches ``attrs``; None when none applies."""
    for rule in table.get(op, ()):
        if all(str(attrs.get(k, "")).lower() == v.lower() for k, v in rule.when.items()):
            out: dict[str, Any] = dict(rule.fixed)
            unmapped: dict[str, Any] = {}
            for name, value in attrs.items():
                target = rule.attrs.get(name)
                if name in rule.when:
                    continue
                if target is None:
                    unmapped[name] = value
                elif isinstance(target, str):
                    out[target] = value
                else:
                    out[target[0]] = target[1](value)
            return Translation(rule.onnx_op, out, unmapped)
    return None


def symmetric_pads(value: Any) -> Any:
    """MXNet/NNVM ``pad`` (begin of each spatial axis) as ONNX ``pads`` (begins, then ends)."""
    if isinstance(value, list):
        return [*value, *value]
    return value


# -- NNVM: MXNet symbol files and NNVM (TVM) graphs ------------------------------------------------
#
# Rules see attribute values already parsed by ``attr_text`` ("(3, 3)" is [3, 3], "True" is
# True). A converter returns None when the value has no ONNX form (an empty stride tuple, an
# unknown pooling convention); the loader then leaves the attribute out.


def _ints(value: Any) -> list[int] | None:
    """An int tuple as an ONNX ints attribute; a lone int as a one-element list."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return [value]
    if isinstance(value, list) and value and all(type(v) is int for v in value):
        return list(value)
    return None


def _pads(value: Any) -> list[int] | None:
    ints = _ints(value)
    return None if ints is None else symmetric_pads(ints)


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None  # 2.5, and "1e999" (inf) or nan, which have no int
    return int(value)


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _flag(value: Any) -> int | None:
    """MXNet/NNVM booleans ("True", "1") as ONNX's 0/1 ints."""
    return int(bool(value)) if isinstance(value, (bool, int)) else None


def _ceil_mode(convention: Any) -> int | None:
    """MXNet ``pooling_convention``: "full" rounds output sizes up, "valid" down."""
    return {"full": 1, "valid": 0}.get(str(convention).lower())


def _layouts(*rules: Rule) -> list[Rule]:
    """Each rule for the channel-first layouts ONNX means (absent, or NC.. ), none other."""
    return [
        Rule(r.onnx_op, r.attrs, {**r.when, "layout": layout}, r.fixed)
        for r in rules
        for layout in ("", "none", "NCW", "NCHW", "NCDHW")
    ]


def _same(onnx_op: str, *names: str) -> dict[str, list[Rule]]:
    """Several source names of one attribute-free op."""
    return {name: [Rule(onnx_op)] for name in names}


_MX_CONV = {
    "kernel": ("kernel_shape", _ints),
    "stride": ("strides", _ints),
    "pad": ("pads", _pads),
    "dilate": ("dilations", _ints),
    "num_group": ("group", _int),
}
_MX_POOL = {
    "kernel": ("kernel_shape", _ints),
    "stride": ("strides", _ints),
    "pad": ("pads", _pads),
    "pooling_convention": ("ceil_mode", _ceil_mode),
}
_MX_AVG = {**_MX_POOL, "count_include_pad": ("count_include_pad", _flag)}
_NN_CONV = {
    "kernel_size": ("kernel_shape", _ints),
    "strides": ("strides", _ints),
    "padding": ("pads", _pads),
    "dilation": ("dilations", _ints),
    "groups": ("group", _int),
}
_NN_POOL = {
    "pool_size": ("kernel_shape", _ints),
    "strides": ("strides", _ints),
    "padding": ("pads", _pads),
    "ceil_mode": ("ceil_mode", _flag),
}
_BATCH_NORM = {"eps": ("epsilon", _float), "momentum": ("momentum", _float)}
# MXNet's SliceChannel splits axis 1 by default; with squeeze_axis it also drops that axis,
# which ONNX Split does not do, so only the non-squeezing form maps.
_SPLIT = [
    Rule(
        "Split",
        {"axis": ("axis", _int), "num_outputs": ("num_outputs", _int)},
        {"squeeze_axis": squeeze},
        {"axis": 1},
    )
    for squeeze in ("", "false", "0")
]

_SOFTMAX_OUTPUT = [
    Rule("Softmax", when={"multi_output": "true"}, fixed={"axis": 1}),
    Rule("Softmax"),
]

NNVM_OPS: dict[str, list[Rule]] = {
    # MXNet (symbol files of 0.8 to 1.x)
    "Convolution": _layouts(Rule("Conv", _MX_CONV)),
    "Deconvolution": _layouts(
        Rule("ConvTranspose", {**_MX_CONV, "adj": ("output_padding", _ints)})
    ),
    "FullyConnected": [Rule("Gemm", fixed={"transB": 1})],  # weight is (num_hidden, in)
    "Activation": [
        Rule("Relu", when={"act_type": "relu"}),
        Rule("Sigmoid", when={"act_type": "sigmoid"}),
        Rule("Tanh", when={"act_type": "tanh"}),
        Rule("Softplus", when={"act_type": "softrelu"}),
        Rule("Softsign", when={"act_type": "softsign"}),
    ],
    "LeakyReLU": [
        Rule("PRelu", when={"act_type": "prelu"}),
        Rule("LeakyRelu", {"slope": ("alpha", _float)}, {"act_type": "leaky"}),
        Rule("LeakyRelu", {"slope": ("alpha", _float)}, {"act_type": ""}),  # the default
        Rule("Elu", {"slope": ("alpha", _float)}, {"act_type": "elu"}),
        Rule("Selu", when={"act_type": "selu"}),
        Rule("Gelu", when={"act_type": "gelu"}),
    ],
    "Pooling": _layouts(
        Rule("GlobalMaxPool", when={"pool_type": "max", "global_pool": "true"}),
        Rule("GlobalMaxPool", when={"pool_type": "", "global_pool": "true"}),
        Rule("GlobalAveragePool", when={"pool_type": "avg", "global_pool": "true"}),
        Rule("MaxPool", _MX_POOL, {"pool_type": "max"}),
        Rule("MaxPool", _MX_POOL, {"pool_type": ""}),  # max is the default
        # MXNet counts padding in averages unless told not to; ONNX's default is not to.
        Rule("AveragePool", _MX_AVG, {"pool_type": "avg"}, {"count_include_pad": 1}),
    ),
    "BatchNorm": [Rule("BatchNormalization", _BATCH_NORM)],
    "InstanceNorm": [Rule("InstanceNormalization", {"eps": ("epsilon", _float)})],
    "LRN": [
        Rule(
            "LRN",
            {
                "alpha": ("alpha", _float),
                "beta": ("beta", _float),
                "knorm": ("bias", _float),
                "nsize": ("size", _int),
            },
        )
    ],
    "Concat": [Rule("Concat", {"dim": ("axis", _int)}, fixed={"axis": 1})],
    "concat": [Rule("Concat", {"dim": ("axis", _int)}, fixed={"axis": 1})],
    # The label input of these loss layers is for training; the forward pass is the softmax.
    "SoftmaxOutput": _SOFTMAX_OUTPUT,
    "Softmax": _SOFTMAX_OUTPUT,  # MXNet's old name of SoftmaxOutput
    "SoftmaxActivation": [
        Rule("Softmax", when={"mode": "channel"}, fixed={"axis": 1}),
        Rule("Softmax", when={"mode": "instance"}),
        Rule("Softmax", when={"mode": ""}),
    ],
    "LogisticRegressionOutput": [Rule("Sigmoid")],
    "LinearRegressionOutput": [Rule("Identity")],
    "Dropout": [Rule("Dropout", {"p": ("ratio", _float)})],
    "SliceChannel": _SPLIT,
    "split": _SPLIT,
    "clip": [Rule("Clip", {"a_min": ("min", _float), "a_max": ("max", _float)})],
    "transpose": [Rule("Transpose", {"axes": ("perm", _ints)})],
    **_same("Reshape", "Reshape", "reshape"),  # MXNet's 0/-2/-3/-4 codes stay in metadata
    **_same("Flatten", "Flatten", "flatten"),
    **_same("Identity", "_copy", "identity", "BlockGrad", "stop_gradient"),
    **_same("Add", "elemwise_add", "_Plus", "_plus", "_add", "broadcast_add", "broadcast_plus"),
    **_same("Sub", "elemwise_sub", "_Minus", "_minus", "_sub", "broadcast_sub", "broadcast_minus"),
    **_same("Mul", "elemwise_mul", "_Mul", "_mul", "broadcast_mul"),
    **_same("Div", "elemwise_div", "_Div", "_div", "broadcast_div"),
    **_same("Max", "_maximum", "broadcast_maximum"),
    **_same("Min", "_minimum", "broadcast_minimum"),
    **_same("Sum", "ElementWiseSum", "add_n"),
    **_same("Relu", "relu"),
    **_same("Sigmoid", "sigmoid"),
    **_same("Tanh", "tanh"),
    **_same("Exp", "exp"),
    **_same("Log", "log"),
    **_same("Sqrt", "sqrt"),
    **_same("Abs", "abs"),
    **_same("Neg", "negative"),
    # NNVM's own operator names (nnvm.symbol, the graphs TVM compiled)
    "conv2d": _layouts(Rule("Conv", _NN_CONV)),
    "conv2d_transpose": _layouts(
        Rule("ConvTranspose", {**_NN_CONV, "output_padding": ("output_padding", _ints)})
    ),
    "dense": [Rule("Gemm", fixed={"transB": 1})],  # weight is (units, in)
    "max_pool2d": _layouts(Rule("MaxPool", _NN_POOL)),
    "avg_pool2d": _layouts(
        Rule("AveragePool", {**_NN_POOL, "count_include_pad": ("count_include_pad", _flag)})
    ),
    "global_max_pool2d": _layouts(Rule("GlobalMaxPool")),
    "global_avg_pool2d": _layouts(Rule("GlobalAveragePool")),
    "batch_norm": [Rule("BatchNormalization", {"epsilon": ("epsilon", _float), **_BATCH_NORM})],
    "softmax": [Rule("Softmax", {"axis": ("axis", _int)})],
    "log_softmax": [Rule("LogSoftmax", {"axis": ("axis", _int)})],
    "concatenate": [Rule("Concat", {"axis": ("axis", _int)}, fixed={"axis": 1})],
    "dropout": [Rule("Dropout", {"rate": ("ratio", _float)})],
    "leaky_relu": [Rule("LeakyRelu", {"alpha": ("alpha", _float)})],
    "prelu": [Rule("PRelu")],
}


# -- LightNet --------------------------------------------------------------------------------
# LightNet optypes mapped to ONNX operator types.
#
# The param meanings come from LightNet's operator descriptions (``protos/op/*.op``):
#
# - ``padding`` is ``[top, left, bottom, right]``, i.e. ``[h_begin, w_begin, h_end, w_end]``,
#   which is already ONNX's ``pads`` order, so it is copied, not made symmetric.
# - ``elew`` is one op whose ``elew_op`` picks the arithmetic (``TL_SUM`` is ``Add``).
# - ``batchnorm`` takes ``src, scale, offset, mean, var``: ONNX's input order.
# - ``reshape``'s ``dims`` and ``slice``'s ``axis/start/len`` become the attributes that ONNX
#   Reshape-1 and Slice-1 define (later opsets take them as inputs); ``upsample``'s ``scales``
#   param is Upsample-7's attribute, its ``scales`` input tensor Upsample-9's.
#
# Left with their own names, since ONNX has no op with the same outputs: ``maxreduce`` (some
# versions give the max and its index), ``maxreduce_arg``, ``zeros`` (ConstantOfShape takes the
# shape as a tensor), ``print``, ``create`` (not a node at all; see ``lightnet.reader``).
#
# A converter returns None when a value has no ONNX form; the loader then leaves it out.
def _ln_ints(value: Any) -> list[int] | None:
    if isinstance(value, list) and value and all(type(v) is int for v in value):
        return list(value)
    return None


def _ln_floats(value: Any) -> list[float] | None:
    if isinstance(value, list) and value and all(_ln_number(v) for v in value):
        return [float(v) for v in value]
    return None


def _ln_int(value: Any) -> int | None:
    return value if type(value) is int else None


def _ln_float(value: Any) -> float | None:
    return float(value) if _ln_number(value) else None


def _ln_one(value: Any) -> list[int] | None:
    """A single axis as ONNX's one-element ``axes`` list."""
    return [value] if type(value) is int else None


def _ln_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _auto_pad(value: Any) -> str | None:
    """LightNet accepts ONNX's own four spellings."""
    if isinstance(value, str) and value in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        return value
    return None


def _mode(value: Any) -> str | None:
    """``TL_NEAREST`` / ``TL_LINEAR`` (older files: ``nearest``) as ONNX's lower-case mode."""
    if not isinstance(value, str):
        return None
    mode = value.lower().removeprefix("tl_")
    return mode if mode in ("nearest", "linear") else None


def _slice_ends(params: Mapping[str, Any]) -> dict[str, Any]:
    """Slice-1 ``ends`` from LightNet's ``start`` and ``len``."""
    start, length = params.get("start"), params.get("len")
    if type(start) is int and type(length) is int:
        return {"ends": [start + length]}
    return {}


_WINDOW = {
    "size": ("kernel_shape", _ln_ints),
    "stride": ("strides", _ln_ints),
    "padding": ("pads", _ln_ints),
    "autopad": ("auto_pad", _auto_pad),
}
_CONV = {**_WINDOW, "dilation": ("dilations", _ln_ints), "group": ("group", _ln_int)}
_ELEW = {
    "TL_SUM": "Add",
    "TL_SUB": "Sub",
    "TL_MUL": "Mul",
    "TL_DIV": "Div",
    "TL_MAX": "Max",
    "TL_MIN": "Min",
    "TL_POW": "Pow",
}

LIGHTNET_OPS: dict[str, list[Rule]] = {
    "conv2d": [Rule("Conv", _CONV)],
    "deconv2d": [Rule("ConvTranspose", {**_CONV, "output_padding": ("output_padding", _ln_ints)})],
    "maxpool2d": [Rule("MaxPool", _WINDOW)],
    "avgpool2d": [Rule("AveragePool", _WINDOW)],
    "batchnorm": [Rule("BatchNormalization", {"epsilon": ("epsilon", _ln_float)})],
    "relu": [Rule("Relu")],
    "sigmoid": [Rule("Sigmoid")],
    "lrelu": [Rule("LeakyRelu", {"negslope": ("alpha", _ln_float)})],
    "softmax": [Rule("Softmax", {"axis": ("axis", _ln_int)})],
    "concat": [Rule("Concat", {"axis": ("axis", _ln_int)})],
    "transpose": [Rule("Transpose", {"axes": ("perm", _ln_ints)})],
    "reshape": [Rule("Reshape", {"dims": ("shape", _ln_ints)})],
    "slice": [Rule("Slice", {"axis": ("axes", _ln_one), "start": ("starts", _ln_one)})],
    "upsample": [Rule("Upsample", {"mode": ("mode", _mode), "scales": ("scales", _ln_floats)})],
    "elew": [Rule(onnx_op, when={"elew_op": code}) for code, onnx_op in _ELEW.items()],
}

# ONNX attributes computed from several params at once, which a Rule (one param, one
# attribute) cannot express; merged over the rule's attributes.
LIGHTNET_DERIVED: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "slice": _slice_ends,
}
