"""Per-op rank-0 and zero-size cases where the schema alone cannot build them (see
scalar_empty_cases): the attributes a generic case needs, whole case lists of ops with their
own shapes, extras beside the generic cases, and the ops left out, each with its reason.

A case is ``(name, inputs, attributes, number of outputs asked for)``; inputs are seeded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from onnx import TensorProto

Spec = tuple[str, list[np.ndarray | None], dict[str, Any], int]

_rng = np.random.default_rng(29)


def F(*shape: int) -> np.ndarray:
    """float32 in (0.1, 0.9)."""
    return _rng.uniform(0.1, 0.9, size=shape).astype(np.float32)


def f(value: float) -> np.ndarray:
    """A rank-0 float32."""
    return np.array(value, np.float32)


def I(*vals: int) -> np.ndarray:  # noqa: E743  (reads as the int64 vector it makes)
    """An int64 vector."""
    return np.array(vals, np.int64)


def i(value: int) -> np.ndarray:
    """A rank-0 int64."""
    return np.array(value, np.int64)


def U8(*shape: int) -> np.ndarray:
    return _rng.integers(0, 255, size=shape).astype(np.uint8)


def u8(value: int) -> np.ndarray:
    return np.array(value, np.uint8)


def zeros(*shape: int, dtype: Any = np.int64) -> np.ndarray:
    return np.zeros(shape, dtype)


def c(name: str, *inputs: np.ndarray | None, outputs: int = 1, **attrs: Any) -> Spec:
    return (name, list(inputs), attrs, outputs)


# Ops whose case makes no sense here, and why.
_SEQUENCE = "takes or makes a sequence: a one-node model has no tensor in or out to compare"
_OPTIONAL = "takes or makes an optional: a one-node model has no tensor in or out to compare"
_BODY = "runs a graph body: its rank-0/empty handling is the body's kernels', each covered here"
EXEMPT: dict[str, str] = {
    "ConcatFromSequence": _SEQUENCE,
    "SequenceAt": _SEQUENCE,
    "SequenceConstruct": _SEQUENCE,
    "SequenceEmpty": _SEQUENCE,
    "SequenceErase": _SEQUENCE,
    "SequenceInsert": _SEQUENCE,
    "SequenceLength": _SEQUENCE,
    "SplitToSequence": _SEQUENCE,
    "SequenceMap": _BODY,
    "If": _BODY,
    "Loop": _BODY,
    "Scan": _BODY,
    "Optional": _OPTIONAL,
    "OptionalGetElement": _OPTIONAL,
    "OptionalHasElement": _OPTIONAL,
    "GroupNormalization": "both refuse every zero-size input: onnxruntime's function body"
    " reshapes to (N, groups, -1), which no empty tensor sizes; the reference likewise",
    "Multinomial": "input is (batch, classes) and sample_size >= 1: onnxruntime refuses a batch"
    " of 0 and onnx's reference has no Multinomial",
    "ImageDecoder": "decodes an encoded image: no byte stream of rank 0 or size 0 is an image",
}

# Required attributes of ops whose generic cases are otherwise right.
GENERIC_ATTRS: dict[str, dict[str, Any]] = {
    "BitCast": {"to": TensorProto.INT32},
    "BitShift": {"direction": "LEFT"},
    "Cast": {"to": TensorProto.INT64},
    "Concat": {"axis": 0},
    "Mod": {"fmod": 1},
    "RegexFullMatch": {"pattern": "a.*"},
}

# Ops whose rank-0 ("scalar...") cases onnxruntime refuses by the schema's own rule while onnx's
# reference answers through numpy's leniency (argmax and cumsum of a 0-d array): xocview must
# refuse them too, with a RunError.
_AXIS = "an axis in [-rank, rank-1] is none for rank 0"
SCALAR_REFUSED: dict[str, str] = {
    "ArgMax": _AXIS,
    "ArgMin": _AXIS,
    "CumProd": "onnxruntime: 'Cannot apply CumProd operator on a scalar'",
    "CumSum": "onnxruntime: 'Cannot apply CumSum operator on a scalar'",
    "Flatten": "axis 1 is outside [-rank, rank] for rank 0",
    "LpNormalization": _AXIS,
    "Softmax": "onnxruntime: 'Input rank must be >= 1 for Softmax'",
}

# Cases onnxruntime 1.32 aborts the process on (a failed check in its C++ kernel): only the
# reference is asked.
ORT_ABORTS = {
    "GRU-empty-batch",
    "GRU-zero-steps",
    "LSTM-empty-batch",
    "Unique-empty-rows-along-axis0",
}

# Cases where onnxruntime's answer departs from the spec and the reference refuses: the spec's
# answer, and why. A mean over no targets is 0 / 0: onnxruntime gives NaN when every target
# is ignored but 0 when there are none (its loop never runs); PyTorch gives NaN.
_NO_TARGETS = "the mean over no targets is 0 / 0 = NaN by the spec (onnxruntime: 0)"
SPEC_ANSWERS: dict[str, tuple[str, list[np.ndarray]]] = {
    "NegativeLogLikelihoodLoss-empty-batch-mean": (_NO_TARGETS, [np.array(np.nan, np.float32)]),
    "SoftmaxCrossEntropyLoss-empty-extent-mean": (_NO_TARGETS, [np.array(np.nan, np.float32)]),
}

# Outputs compared by dtype and shape only: the values are random.
SHAPES_ONLY = {
    "Bernoulli",
    "Multinomial",
    "RandomNormal",
    "RandomNormalLike",
    "RandomUniform",
    "RandomUniformLike",
}


# Cases beside the generic ones.
EXTRA: dict[str, Callable[[], list[Spec]]] = {
    "CastLike": lambda: [c("scalar-to-int", f(0.5), i(1))],
    "Clip": lambda: [
        c("scalar-min-max", f(0.5), f(0.3), f(0.6)),
        c("empty-min-max", F(2, 0, 3), f(0.3), f(0.6)),
    ],
    "Concat": lambda: [c("empty-and-full", F(0, 3), F(2, 3), axis=0)],
    "DequantizeLinear": lambda: [
        c("scalar-zero-point", u8(200), f(0.1), u8(128)),
        c("empty-zero-point", U8(2, 0, 3), f(0.1), u8(128)),
    ],
    "Dropout": lambda: [
        c("empty-mask", F(2, 0, 3), outputs=2),
        c("scalar-mask", f(0.5), outputs=2),
    ],
    "Flatten": lambda: [c("rank0-axis0", f(0.5), axis=0)],
    "QuantizeLinear": lambda: [
        c("scalar-zero-point", f(0.5), f(0.1), u8(128)),
        c("empty-zero-point", F(2, 0, 3), f(0.1), u8(128)),
        c("scalar-int8", f(0.5), f(0.1), np.array(-3, np.int8)),
    ],
    "Shape": lambda: [c("empty-slice", F(2, 0, 3), start=1, end=1)],
    "Squeeze": lambda: [c("to-scalar", F(1), I(0)), c("empty-keep", F(2, 0, 1), I(2))],
}
