"""Operator coverage of the TFLite, TensorFlow and Keras readers against the TFLite builtins.

``python tests/reports/op_coverage.py`` prints, for every TFLite builtin (StableHLO ones
apart), whether a ``.tflite`` operator of that builtin runs, and which TensorFlow ops and Keras
layers the LiteRT converter turns into it, each marked by whether xocview's table for that
format maps it. ``--markdown`` prints the table as Markdown; the last lines are the counts.

The TensorFlow side pairs a builtin with the op of the same name (``CONV_2D`` - ``Conv2D``,
``ADD`` - ``Add``/``AddV2``) or the one ``_TF`` names; the Keras side is ``_KERAS``, the
layers whose converted form is that builtin. Builtins no TF op or Keras layer becomes count
only for TFLite.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tflite.utils import BUILTIN_OPCODE2NAME

from xocview.formats.keras.layers import KERAS_ONNX
from xocview.formats.tensorflow.ops import TF_ONNX
from xocview.formats.tflite.ops import TFLITE_ONNX

# Builtins the TFLite reader writes itself rather than through its table; TF's alike.
TFLITE_CONTROL = frozenset({"WHILE", "IF"})
TF_CONTROL = frozenset({"While", "StatelessWhile", "If", "StatelessIf"})
# TF ops whose builtin's name is not theirs.
_TF: dict[str, tuple[str, ...]] = {
    "ADD": ("Add", "AddV2"),
    "AVERAGE_POOL_2D": ("AvgPool",),
    "MAX_POOL_2D": ("MaxPool", "MaxPoolV2"),
    "CONCATENATION": ("ConcatV2",),
    "FULLY_CONNECTED": ("MatMul",),
    "DIV": ("RealDiv", "Div"),
    "LOGISTIC": ("Sigmoid",),
    "MEAN": ("Mean",),
    "SUM": ("Sum",),
    "REDUCE_MAX": ("Max",),
    "REDUCE_MIN": ("Min",),
    "REDUCE_PROD": ("Prod",),
    "REDUCE_ANY": ("Any",),
    "REDUCE_ALL": ("All",),
    "BATCH_MATMUL": ("BatchMatMulV2", "BatchMatMulV3"),
    "GATHER": ("GatherV2",),
    "TRANSPOSE_CONV": ("Conv2DBackpropInput",),
    "LOCAL_RESPONSE_NORMALIZATION": ("LRN",),
    "SELECT": ("Select",),
    "SELECT_V2": ("SelectV2",),
    "TOPK_V2": ("TopKV2",),
    "REVERSE_V2": ("ReverseV2",),
    "PADV2": ("PadV2",),
    "RESIZE_BILINEAR": ("ResizeBilinear",),
    "RESIZE_NEAREST_NEIGHBOR": ("ResizeNearestNeighbor",),
    "DEPTHWISE_CONV_2D": ("DepthwiseConv2dNative",),
    "CONV_2D": ("Conv2D",),
    "CONV_3D": ("Conv3D",),
    "CONV_3D_TRANSPOSE": ("Conv3DBackpropInputV2",),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": (),
    "BIDIRECTIONAL_SEQUENCE_LSTM": (),
    "EMBEDDING_LOOKUP": (),
    "SQUARED_DIFFERENCE": ("SquaredDifference",),
    "ADD_N": ("AddN",),
    "LOG_SOFTMAX": ("LogSoftmax",),
    "LEAKY_RELU": ("LeakyRelu",),
    "ZEROS_LIKE": ("ZerosLike",),
    "ONES_LIKE": ("OnesLike",),
    "GATHER_ND": ("GatherNd",),
    "SCATTER_ND": ("ScatterNd",),
    "FLOOR_DIV": ("FloorDiv",),
    "FLOOR_MOD": ("FloorMod",),
    "BROADCAST_TO": ("BroadcastTo",),
    "ARG_MAX": ("ArgMax",),
    "ARG_MIN": ("ArgMin",),
    "EXPAND_DIMS": ("ExpandDims",),
    "STRIDED_SLICE": ("StridedSlice",),
    "SPACE_TO_DEPTH": ("SpaceToDepth",),
    "DEPTH_TO_SPACE": ("DepthToSpace",),
    "BATCH_TO_SPACE_ND": ("BatchToSpaceND",),
    "SPACE_TO_BATCH_ND": ("SpaceToBatchND",),
    "MIRROR_PAD": ("MirrorPad",),
    "ONE_HOT": ("OneHot",),
    "RELU_0_TO_1": (),
    "RELU_N1_TO_1": (),
    "HARD_SWISH": (),
    "GELU": (),
    "PACK": ("Pack",),
    "UNPACK": ("Unpack",),
    "SPLIT_V": ("SplitV",),
    "LOGICAL_AND": ("LogicalAnd",),
    "LOGICAL_OR": ("LogicalOr",),
    "LOGICAL_NOT": ("LogicalNot",),
    "NOT_EQUAL": ("NotEqual",),
    "GREATER_EQUAL": ("GreaterEqual",),
    "LESS_EQUAL": ("LessEqual",),
    "IS_FINITE": ("IsFinite",),
    "IF": ("If", "StatelessIf"),
    "WHILE": ("While", "StatelessWhile"),
    "UNIQUE": ("Unique",),
    "IMAG": ("Imag",),
    "REAL": ("Real",),
    # LiteRT's own kernels, written by the converter from patterns, not from one TF op.
    **dict.fromkeys(
        ("LSTM", "RNN", "SVDF", "CALL", "CUSTOM", "DELEGATE", "DENSIFY", "HASHTABLE", "PRELU"),
        (),
    ),
    **dict.fromkeys(("QUANTIZE", "DEQUANTIZE"), ()),
}
# Keras layers the LiteRT converter writes as each builtin.
_KERAS: dict[str, tuple[str, ...]] = {
    "CONV_2D": ("Conv2D", "Conv1D"),
    "CONV_3D": ("Conv3D",),
    "DEPTHWISE_CONV_2D": ("DepthwiseConv2D", "DepthwiseConv1D"),
    "TRANSPOSE_CONV": ("Conv2DTranspose", "Conv1DTranspose"),
    "FULLY_CONNECTED": ("Dense",),
    "AVERAGE_POOL_2D": ("AveragePooling2D", "AveragePooling1D"),
    "MAX_POOL_2D": ("MaxPooling2D", "MaxPooling1D"),
    "MEAN": ("GlobalAveragePooling2D", "GlobalAveragePooling1D", "GlobalAveragePooling3D"),
    "REDUCE_MAX": ("GlobalMaxPooling2D", "GlobalMaxPooling1D", "GlobalMaxPooling3D"),
    "ADD": ("Add", "BatchNormalization"),
    "SUB": ("Subtract",),
    "MUL": ("Multiply", "Rescaling"),
    "MAXIMUM": ("Maximum",),
    "MINIMUM": ("Minimum",),
    "CONCATENATION": ("Concatenate",),
    "RESHAPE": ("Reshape", "Flatten"),
    "TRANSPOSE": ("Permute",),
    "SOFTMAX": ("Softmax",),
    "RELU": ("ReLU", "Activation"),
    "RELU6": ("ReLU",),
    "LEAKY_RELU": ("LeakyReLU",),
    "ELU": ("ELU",),
    "PRELU": ("PReLU",),
    "GATHER": ("Embedding",),
    "PAD": ("ZeroPadding2D", "ZeroPadding1D"),
    "STRIDED_SLICE": ("Cropping2D", "Cropping1D"),
    "RESIZE_NEAREST_NEIGHBOR": ("UpSampling2D",),
    "RESIZE_BILINEAR": ("UpSampling2D",),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": ("LSTM",),
    "BIDIRECTIONAL_SEQUENCE_LSTM": ("Bidirectional",),
    "UNIDIRECTIONAL_SEQUENCE_RNN": ("SimpleRNN",),
    "BATCH_MATMUL": ("MultiHeadAttention", "Dot"),
    "TILE": ("RepeatVector",),
}


def builtins() -> list[str]:
    """Every TFLite builtin but the StableHLO ones, in opcode order."""
    return [n for _, n in sorted(BUILTIN_OPCODE2NAME.items()) if not n.startswith("STABLEHLO")]


def tf_ops(builtin: str) -> tuple[str, ...]:
    """The TF ops the converter writes as ``builtin``: ``_TF``'s, else the same name."""
    if builtin in _TF:
        return _TF[builtin]
    camel = "".join(p.capitalize() for p in builtin.split("_"))
    return (camel,) if camel in TF_ONNX or builtin.isalpha() else ()


@dataclass
class Row:
    builtin: str
    tflite: bool
    tf: list[tuple[str, bool]]
    keras: list[tuple[str, bool]]


def rows() -> list[Row]:
    out = []
    for b in builtins():
        tfl = b in TFLITE_ONNX or b in TFLITE_CONTROL
        tf = [(op, op in TF_ONNX or op in TF_CONTROL) for op in tf_ops(b)]
        keras = [(layer, layer in KERAS_ONNX) for layer in _KERAS.get(b, ())]
        out.append(Row(b, tfl, tf, keras))
    return out


def counts(table: list[Row]) -> dict[str, tuple[int, int]]:
    """Per format: (builtins it runs, builtins it has a counterpart for)."""
    tf_rows = [r for r in table if r.tf]
    keras_rows = [r for r in table if r.keras]
    return {
        "TFLite": (sum(r.tflite for r in table), len(table)),
        "TensorFlow": (sum(any(m for _, m in r.tf) for r in tf_rows), len(tf_rows)),
        "Keras": (sum(any(m for _, m in r.keras) for r in keras_rows), len(keras_rows)),
    }


def _cell(pairs: list[tuple[str, bool]]) -> str:
    return ", ".join(f"{n} {'yes' if m else 'no'}" for n, m in pairs) or "-"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = p.parse_args()
    table = rows()
    if args.markdown:
        print("| builtin | TFLite | TensorFlow ops | Keras layers |\n| --- | --- | --- | --- |")
    for r in table:
        cells = (r.builtin, "yes" if r.tflite else "no", _cell(r.tf), _cell(r.keras))
        print(f"| {' | '.join(cells)} |" if args.markdown else "  ".join(f"{c:<28}" for c in cells))
    for fmt, (runs, of) in counts(table).items():
        print(f"{fmt}: {runs} of {of} builtins run")
    print(f"tables: TFLite {len(TFLITE_ONNX)}, TensorFlow {len(TF_ONNX)}, Keras {len(KERAS_ONNX)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
