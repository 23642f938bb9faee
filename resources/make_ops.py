"""Writes resources/ops.json, the operator facts the viewer reads: run again when onnx adds ops.

Categories, key attributes and FLOPs rules come from the hand-written tables below, never from
guessing at schema descriptions; input names and attribute defaults are copied from the newest
schema of each operator (``onnx.defs``). An operator that no table names is written as
"custom" and reported, so that a new onnx release shows what still needs a decision.

Usage: ``python resources/make_ops.py`` (from any folder; writes beside this script).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import onnx
import onnx.defs
from onnx import helper

DOMAINS = ("", "ai.onnx.ml")

CATEGORIES: dict[str, list[str]] = {
    "convolution": ["CausalConvWithState", "Col2Im", "Conv", "ConvInteger", "ConvTranspose",
                    "DeformConv", "QLinearConv"],
    "activation": ["Celu", "Clip", "Elu", "Gelu", "HardSigmoid", "HardSwish", "Hardmax",
                   "LeakyRelu", "LogSoftmax", "Mish", "PRelu", "Relu", "Selu", "Shrink",
                   "Sigmoid", "Softmax", "Softplus", "Softsign", "SwiGLU", "Swish", "Tanh",
                   "ThresholdedRelu"],
    "pooling": ["AveragePool", "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool", "LpPool",
                "MaxPool", "MaxRoiPool", "MaxUnpool", "RoiAlign"],
    "normalization": ["BatchNormalization", "GroupNormalization", "InstanceNormalization", "LRN",
                      "LayerNormalization", "LpNormalization", "MeanVarianceNormalization",
                      "Normalizer", "RMSNormalization"],
    "elementwise": ["Abs", "Acos", "Acosh", "Add", "And", "Asin", "Asinh", "Atan", "Atanh",
                    "Binarizer", "BitCast", "BitShift", "BitwiseAnd", "BitwiseNot", "BitwiseOr",
                    "BitwiseXor", "Cast", "CastLike", "CategoryMapper", "Ceil", "Cos", "Cosh",
                    "Div", "Equal", "Erf", "Exp", "Floor", "Greater", "GreaterOrEqual", "Imputer",
                    "IsInf", "IsNaN", "LabelEncoder", "Less", "LessOrEqual", "Log", "Max", "Mean",
                    "Min", "Mod", "Mul", "Neg", "Not", "Or", "Pow", "Reciprocal",
                    "RegexFullMatch", "RotaryEmbedding", "Round", "Scaler", "Sign", "Sin", "Sinh",
                    "Sqrt", "StringConcat", "StringNormalizer", "Sub", "Sum", "Tan", "Where",
                    "Xor"],
    "shape": ["AffineGrid", "ArrayFeatureExtractor", "CastMap", "CenterCropPad", "Compress",
              "Concat", "ConcatFromSequence", "DepthToSpace", "DictVectorizer", "Expand",
              "FeatureVectorizer", "Flatten", "Gather", "GatherElements", "GatherND",
              "GridSample", "NonZero", "OneHot", "OneHotEncoder", "Pad", "Reshape", "Resize",
              "ReverseSequence", "Scatter", "ScatterElements", "ScatterND", "Shape", "Size",
              "Slice", "SpaceToDepth", "Split", "SplitToSequence", "Squeeze", "StringSplit",
              "TensorScatter", "Tile", "Transpose", "Trilu", "Unique", "Unsqueeze", "Upsample",
              "ZipMap"],
    # Losses and NonMaxSuppression reduce many values to a few, so they sit with the reductions.
    "reduction": ["ArgMax", "ArgMin", "CumProd", "CumSum", "NegativeLogLikelihoodLoss",
                  "NonMaxSuppression", "ReduceL1", "ReduceL2", "ReduceLogSum",
                  "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
                  "ReduceSum", "ReduceSumSquare", "SoftmaxCrossEntropyLoss", "TopK"],
    # Dense linear algebra (and the linear models of ai.onnx.ml, which are dot products).
    "matmul": ["Attention", "DFT", "Det", "Einsum", "Gemm", "LinearAttention",
               "LinearClassifier", "LinearRegressor", "MatMul", "MatMulInteger", "QLinearMatMul",
               "STFT", "SVMClassifier", "SVMRegressor"],
    "recurrent": ["GRU", "LSTM", "RNN"],
    "control": ["If", "Loop", "Scan", "SequenceMap"],
    "quantization": ["DequantizeLinear", "DynamicQuantizeLinear", "QuantizeLinear"],
    # Sources, generators, containers and identities (Dropout is the identity at inference).
    "io": ["Bernoulli", "BlackmanWindow", "Constant", "ConstantOfShape", "Dropout", "EyeLike",
           "HammingWindow", "HannWindow", "Identity", "ImageDecoder", "MelWeightMatrix",
           "Multinomial", "Optional", "OptionalGetElement", "OptionalHasElement",
           "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Range",
           "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase",
           "SequenceInsert", "SequenceLength"],
    # No category fits: decision trees and n-gram counting are drawn as custom on purpose.
    "custom": ["TfIdfVectorizer", "TreeEnsemble", "TreeEnsembleClassifier",
               "TreeEnsembleRegressor"],
}  # fmt: skip


def each(ops: list[str], value: Any) -> dict[str, Any]:
    """The same (never mutated) value for each op: one table row for a family of ops."""
    return {op: value for op in ops}


# Key attributes: what a node box shows. format: dims "3x3", uniform "2" when all equal else
# "2x1", list "0,2,3,1", value as is, flag shows "text" when true, dtype an ONNX type code's
# name; "hide" suppresses a value equal to it (for a list: every element equal to it).
KERNEL = {"name": "kernel_shape", "format": "dims"}
STRIDES = {"name": "strides", "format": "uniform", "prefix": "/", "hide": 1}
DILATIONS = {"name": "dilations", "format": "uniform", "prefix": "d", "hide": 1}
GROUP = {"name": "group", "format": "value", "prefix": "g", "hide": 1}
AXIS = {"name": "axis", "format": "value", "prefix": "axis="}
AXES = {"name": "axes", "format": "list", "prefix": "axes="}
KEEPDIMS = {"name": "keepdims", "format": "value", "prefix": "keepdims=", "hide": 1}
RECURRENT = [
    {"name": "hidden_size", "format": "value", "prefix": "h="},
    {"name": "direction", "format": "value", "hide": "forward"},
]
REDUCE_OPS = [op for op in CATEGORIES["reduction"] if op.startswith("Reduce")]

KEY_ATTRIBUTES: dict[str, list[dict[str, Any]]] = {
    **each(["Conv", "ConvInteger", "ConvTranspose", "DeformConv", "QLinearConv"],
           [KERNEL, STRIDES, DILATIONS, GROUP]),
    **each(["AveragePool", "LpPool", "MaxPool"], [KERNEL, STRIDES]),
    **each(["ArgMax", "ArgMin", "Compress", "Concat", "ConcatFromSequence",
            "DequantizeLinear", "Flatten", "Gather", "GatherElements", "Hardmax",
            "LayerNormalization", "LogSoftmax", "OneHot", "QuantizeLinear", "Scatter",
            "ScatterElements", "Softmax", "Split", "TopK"], [AXIS]),
    **each(["Squeeze", "Unsqueeze"], [AXES]),
    **each(REDUCE_OPS, [AXES, KEEPDIMS]),
    **each(["GRU", "LSTM", "RNN"], RECURRENT),
    **each(["DepthToSpace", "SpaceToDepth"],
           [{"name": "blocksize", "format": "value", "prefix": "blocksize="}]),
    **each(["Resize", "Upsample"], [{"name": "mode", "format": "value"}]),
    "Transpose": [{"name": "perm", "format": "list", "prefix": "perm="}],
    "Gemm": [{"name": "transA", "format": "flag", "text": "transA"},
             {"name": "transB", "format": "flag", "text": "transB"}],
    "Cast": [{"name": "to", "format": "dtype", "prefix": "to="}],
    "Pad": [{"name": "mode", "format": "value", "hide": "constant"}],
    "LeakyRelu": [{"name": "alpha", "format": "value", "prefix": "alpha="}],
    "Gelu": [{"name": "approximate", "format": "value", "hide": "none"}],
    "Einsum": [{"name": "equation", "format": "value"}],
    # Reshape, Slice, BatchNormalization and the rest show nothing: no entry.
}  # fmt: skip

# FLOPs rules (xocview/model/analyses/opfacts.py implements them); a multiply-add counts as 2.
# "per" is the FLOPs per element where the rule counts elements:
#   BatchNormalization 2 (inference: scale and shift folded into one multiply-add);
#   Layer/Instance/GroupNormalization 7 (mean 1, centre 1, square and sum 2, times 1/std 1,
#   scale 1, shift 1); RMSNormalization 4; MeanVarianceNormalization 5; LpNormalization 3;
#   Softmax/LogSoftmax 5 (max, subtract, exp, sum, divide or log);
#   Gelu 8 (tanh form: cube 2, multiply-add 2, tanh 1, add 1, two multiplies 2);
#   RotaryEmbedding 3 (x * cos + rotate(x) * sin). String and lookup ops have no rule.
# Recurrent "pointwise" is per hidden unit and step: LSTM 9 (4 gate activations, cell update 3,
# tanh of the cell 1, output gate 1), GRU 8 (3 gate activations, reset 1, blend 4), RNN 1.
ZERO = ["BitCast", "Cast", "CastLike", "Concat", "Constant", "ConstantOfShape", "DepthToSpace",
        "Dropout", "Expand", "Flatten", "Gather", "GatherElements", "GatherND", "Identity", "Pad",
        "Reshape", "Shape", "Size", "Slice", "SpaceToDepth", "Split", "Squeeze", "Tile",
        "Transpose", "Unsqueeze"]  # fmt: skip
VARIADIC = ["Max", "Mean", "Min", "Sum"]
PER_OUTPUT_CONSTANTS = {
    "BatchNormalization": 2,
    "GroupNormalization": 7,
    "InstanceNormalization": 7,
    "LayerNormalization": 7,
    "LpNormalization": 3,
    "MeanVarianceNormalization": 5,
    "RMSNormalization": 4,
    "Softmax": 5,
    "LogSoftmax": 5,
    "Gelu": 8,
    "RotaryEmbedding": 3,
}
NO_ARITHMETIC = ["CategoryMapper", "LabelEncoder", "RegexFullMatch", "StringConcat",
                 "StringNormalizer"]  # fmt: skip
FLOPS: dict[str, dict[str, Any]] = {
    **{op: {"rule": "per_output", "per": 1}
       for op in CATEGORIES["elementwise"] + CATEGORIES["activation"]
       if op not in ZERO + VARIADIC + NO_ARITHMETIC},
    **{op: {"rule": "per_output", "per": n} for op, n in PER_OUTPUT_CONSTANTS.items()},
    **each(VARIADIC, {"rule": "variadic"}),
    **each(ZERO, {"rule": "zero"}),
    # Input positions where they differ from x 0, w 1, bias 2 (a 0, b 1 for matmul):
    # ConvInteger's third input is a zero point, QLinearConv's weight is its fourth input.
    "Conv": {"rule": "conv"},
    "ConvInteger": {"rule": "conv", "b": None},
    "QLinearConv": {"rule": "conv", "w": 3, "b": 8},
    "ConvTranspose": {"rule": "conv_transpose"},
    "Gemm": {"rule": "gemm"},
    "MatMul": {"rule": "matmul"},
    "MatMulInteger": {"rule": "matmul"},
    "QLinearMatMul": {"rule": "matmul", "b": 3},
    **each(["AveragePool", "LpPool", "MaxPool"], {"rule": "pool"}),
    **each(["GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool"],
           {"rule": "per_input", "per": 1}),
    **each(["ArgMax", "ArgMin", "CumProd", "CumSum", *REDUCE_OPS],
           {"rule": "per_input", "per": 1}),
    "LRN": {"rule": "lrn"},
    "LSTM": {"rule": "recurrent", "gates": 4, "pointwise": 9},
    "GRU": {"rule": "recurrent", "gates": 3, "pointwise": 8},
    "RNN": {"rule": "recurrent", "gates": 1, "pointwise": 1},
}  # fmt: skip

# Ops whose outputs are fixed values: what they feed counts as parameters (the light ONNX
# models ship every weight as a ConstantOfShape).
CONSTANT_SOURCES = ["Constant", "ConstantOfShape"]


def newest_schemas() -> dict[str, list[onnx.defs.OpSchema]]:
    """Every version of every operator of DOMAINS, newest first, by name."""
    out: dict[str, list[onnx.defs.OpSchema]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain in DOMAINS and not schema.name.startswith("_"):
            out.setdefault(schema.name, []).append(schema)
    for versions in out.values():
        versions.sort(key=lambda s: s.since_version, reverse=True)
    return dict(sorted(out.items()))


def defaults(versions: list[onnx.defs.OpSchema]) -> dict[str, Any]:
    """Attribute defaults; the newest version that defines an attribute wins."""
    out: dict[str, Any] = {}
    for schema in versions:
        for name, attr in schema.attributes.items():
            if name in out or not attr.default_value.name:
                continue
            value = helper.get_attribute_value(attr.default_value)
            if isinstance(value, bytes):
                value = value.decode()
            elif isinstance(value, list):
                value = [v.decode() if isinstance(v, bytes) else v for v in value]
            if isinstance(value, (int, float, str, list)):
                out[name] = value
    return dict(sorted(out.items()))


def build() -> tuple[dict[str, Any], list[str]]:
    """The JSON document and the operators that no table names."""
    category_of: dict[str, str] = {}
    for cat, ops in CATEGORIES.items():
        for op in ops:
            if op in category_of:
                raise SystemExit(f"{op} is in both {category_of[op]} and {cat}")
            category_of[op] = cat
    schemas = newest_schemas()
    for table in (category_of, KEY_ATTRIBUTES, FLOPS):
        stale = sorted(set(table) - set(schemas))
        if stale:
            print(f"warning: onnx {onnx.__version__} has no {', '.join(stale)}", file=sys.stderr)
    ops: dict[str, Any] = {}
    for name, versions in schemas.items():
        newest = versions[0]
        entry: dict[str, Any] = {"category": category_of.get(name, "custom")}
        if newest.domain:
            entry["domain"] = newest.domain
        entry["inputs"] = [p.name for p in newest.inputs]
        if found := defaults(versions):
            entry["defaults"] = found
        if name in KEY_ATTRIBUTES:
            entry["key_attributes"] = KEY_ATTRIBUTES[name]
        if name in FLOPS:
            entry["flops"] = FLOPS[name]
        if name in CONSTANT_SOURCES:
            entry["constant"] = True
        ops[name] = entry
    doc = {"onnx_version": onnx.__version__, "categories": list(CATEGORIES), "ops": ops}
    return doc, sorted(set(schemas) - set(category_of))


def main() -> None:
    doc, unassigned = build()
    if unassigned:
        print(f"warning: written as custom: {', '.join(unassigned)}", file=sys.stderr)
    path = Path(__file__).resolve().parent / "ops.json"
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{path}: {len(doc['ops'])} operators from onnx {onnx.__version__}")


if __name__ == "__main__":
    main()
