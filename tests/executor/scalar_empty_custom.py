"""Whole case lists of the ops that need their own shapes or attributes for a rank-0 or
zero-size case (convolutions, pools, gathers, reshapes, reductions...); see
scalar_empty_table for the helpers and the other tables."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tests.executor.scalar_empty_table import U8, F, I, Spec, c, f, i, u8, zeros


def _pools() -> list[Spec]:
    return [
        c("empty-batch", F(0, 1, 4, 4), kernel_shape=[2, 2]),
        c("empty-channels", F(2, 0, 4, 4), kernel_shape=[2, 2]),
    ]


def _global_pools() -> list[Spec]:
    return [c("empty-batch", F(0, 2, 3, 3)), c("empty-spatial", F(1, 2, 0, 3))]


def _reduce(ints: bool) -> Callable[[], list[Spec]]:
    """The Reduce family's cases; in int64 too for those whose schema takes integers (the
    empty max and min have no identity to start from)."""

    def cases() -> list[Spec]:
        x = F(2, 0, 3)
        found = [
            c("scalar", f(0.4)),
            c("scalar-keepdims0", f(0.4), keepdims=0),
            c("empty-reduced-axis", x, I(1)),
            c("empty-other-axis", x, I(0)),
            c("empty-all", x, keepdims=0),
            c("empty-noop", x, zeros(0), noop_with_empty_axes=1),
        ]
        if ints:
            n = zeros(2, 0, 3)
            found += [
                c("scalar-int64", i(3)),
                c("empty-reduced-axis-int64", n, I(1)),
                c("empty-all-int64", n, keepdims=0),
            ]
        return found

    return cases


def _windows() -> list[Spec]:
    return [c("scalar-size", i(4)), c("zero-size", i(0))]


def _recurrent(gates: int) -> Callable[[], list[Spec]]:
    def cases() -> list[Spec]:
        w, r = F(1, gates * 2, 3), F(1, gates * 2, 2)
        return [
            c("empty-batch", F(2, 0, 3), w, r, hidden_size=2, outputs=2),
            c("zero-steps", F(0, 1, 3), w, r, hidden_size=2, outputs=2),
        ]

    return cases


def _scatter() -> list[Spec]:
    return [
        c("empty-updates", F(2, 3), zeros(0, 3), F(0, 3)),
        c("empty-data", F(2, 0), zeros(2, 0), F(2, 0), axis=1),
    ]


def _norm_rows(op_attrs: dict[str, Any]) -> Callable[[], list[Spec]]:
    def cases() -> list[Spec]:
        return [
            c("empty-rows", F(0, 3), F(3), **op_attrs),
            c("empty-features", F(2, 0), F(0), **op_attrs),
        ]

    return cases


def _q(*x: np.ndarray) -> list[np.ndarray]:
    """x with a scale of 0.1 and a zero point of 128 (QLinear* inputs)."""
    return [*x, f(0.1), u8(128)]


CUSTOM: dict[str, Callable[[], list[Spec]]] = {
    "AffineGrid": lambda: [
        c("empty-batch", F(0, 2, 3), I(0, 1, 2, 3)),
        c("empty-height", F(1, 2, 3), I(1, 1, 0, 3)),
    ],
    "ArgMax": lambda: [
        c("scalar", f(0.3)),
        c("empty-kept-axis", F(2, 0, 3)),
        c("empty-keepdims0", F(2, 0, 3), axis=2, keepdims=0),
        c("empty-reduced-axis", F(2, 0, 3), axis=1),
    ],
    "Attention": lambda: [
        c("empty-query", F(1, 2, 0, 4), F(1, 2, 3, 4), F(1, 2, 3, 4)),
        c("empty-batch", F(0, 2, 2, 4), F(0, 2, 3, 4), F(0, 2, 3, 4)),
        c("empty-keys", F(1, 2, 2, 4), F(1, 2, 0, 4), F(1, 2, 0, 4)),
    ],
    "AveragePool": _pools,
    "LpPool": _pools,
    "MaxPool": lambda: [
        *_pools(),
        c("empty-indices", F(0, 1, 4, 4), kernel_shape=[2, 2], outputs=2),
    ],
    "BatchNormalization": lambda: [
        c("empty-batch", F(0, 3, 2, 2), F(3), F(3), F(3), F(3)),
        c("empty-spatial", F(2, 3, 0, 2), F(3), F(3), F(3), F(3)),
        c("empty-channels", F(2, 0, 2), F(0), F(0), F(0), F(0)),
    ],
    "BlackmanWindow": _windows,
    "HammingWindow": _windows,
    "HannWindow": _windows,
    "CausalConvWithState": lambda: [
        c("empty-length", F(1, 2, 0), F(2, 1, 3), outputs=2),
        c("empty-batch", F(0, 2, 4), F(2, 1, 3), outputs=2),
    ],
    "CenterCropPad": lambda: [
        c("crop-to-empty", F(2, 3), I(0, 3)),
        c("pad-empty", F(0, 3), I(2, 3)),
    ],
    "Col2Im": lambda: [c("empty-batch", F(0, 4, 4), I(3, 3), I(2, 2))],
    "Compress": lambda: [
        c("empty-input", F(0, 3), zeros(0, dtype=bool), axis=0),
        c("empty-condition", F(2, 3), zeros(0, dtype=bool)),
        c("all-false", F(2, 3), np.array([False, False]), axis=0),
    ],
    "Constant": lambda: [
        c("scalar-value", value=f(1.5)),
        c("empty-value", value=F(0, 3)),
        c("value-float", value_float=2.5),
    ],
    "ConstantOfShape": lambda: [
        c("scalar-output", zeros(0)),
        c("empty-output", I(2, 0), value=np.array([3.0], np.float32)),
    ],
    "Conv": lambda: [
        c("empty-batch", F(0, 1, 4, 4), F(2, 1, 3, 3)),
        c("empty-batch-bias", F(0, 1, 4, 4), F(2, 1, 3, 3), F(2)),
        c("empty-out-channels", F(1, 1, 4, 4), F(0, 1, 3, 3)),
    ],
    "ConvInteger": lambda: [c("empty-batch", U8(0, 1, 4, 4), U8(2, 1, 3, 3))],
    "ConvTranspose": lambda: [c("empty-batch", F(0, 1, 3, 3), F(1, 2, 3, 3))],
    "CumSum": lambda: [
        c("scalar", f(0.5), i(0)),
        c("empty-along", F(2, 0, 3), i(1)),
        c("empty-across", F(2, 0, 3), i(0)),
    ],
    "DFT": lambda: [
        c("empty-batch", F(0, 4, 1)),
        c("empty-batch-onesided", F(0, 4, 1), onesided=1),
    ],
    "DeformConv": lambda: [c("empty-batch", F(0, 1, 4, 4), F(2, 1, 3, 3), F(0, 18, 2, 2))],
    "DepthToSpace": lambda: [c("empty-batch", F(0, 4, 2, 2), blocksize=2)],
    "SpaceToDepth": lambda: [c("empty-batch", F(0, 1, 4, 4), blocksize=2)],
    "Det": lambda: [c("empty-batch", F(0, 2, 2)), c("zero-matrix", F(2, 0, 0))],
    "Einsum": lambda: [
        c("scalar", f(0.5), f(0.25), equation=",->"),
        c("empty-rows", F(0, 3), F(3, 2), equation="ij,jk->ik"),
        c("empty-inner", F(2, 0), F(0, 3), equation="ij,jk->ik"),
        c("sum-empty", F(0), equation="i->"),
    ],
    "Expand": lambda: [
        c("scalar-input", f(0.5), I(2, 3)),
        c("to-scalar", f(0.5), zeros(0)),
        c("to-empty", F(2, 1), I(2, 0)),
        c("empty-input", F(0, 3), I(1, 3)),
    ],
    "EyeLike": lambda: [c("empty-rows", F(0, 3)), c("empty-cols", F(3, 0))],
    "Gather": lambda: [
        c("scalar-index", F(3, 2), i(1)),
        c("empty-index", F(3, 2), zeros(0)),
        c("empty-data", F(0, 3), I(1, 2), axis=1),
        c("scalar-index-vector", F(3), i(2)),
    ],
    "GatherElements": lambda: [
        c("empty-index", F(2, 3), zeros(2, 0), axis=1),
        c("empty-data", F(0, 3), zeros(0, 3)),
    ],
    "GatherND": lambda: [
        c("empty-indices", F(3, 2), zeros(0, 1)),
        c("scalar-result", F(3, 2), I(1, 0)),
    ],
    "Gemm": lambda: [
        c("empty-rows", F(0, 3), F(3, 2), F(2)),
        c("empty-inner", F(2, 0), F(0, 3), F(3)),
        c("scalar-bias", F(2, 3), F(3, 2), f(0.5)),
    ],
    "GlobalAveragePool": _global_pools,
    "GlobalLpPool": _global_pools,
    "GlobalMaxPool": _global_pools,
    "GridSample": lambda: [
        c("empty-batch", F(0, 1, 3, 3), F(0, 2, 2, 2)),
        c("empty-grid", F(1, 1, 3, 3), F(1, 0, 2, 2)),
    ],
    "InstanceNormalization": lambda: [
        c("empty-batch", F(0, 2, 3), F(2), F(2)),
        c("empty-spatial", F(1, 2, 0), F(2), F(2)),
    ],
    "LRN": lambda: [c("empty-batch", F(0, 2, 3, 3), size=3)],
    "LSTM": _recurrent(4),
    "GRU": _recurrent(3),
    "RNN": _recurrent(1),
    "LayerNormalization": lambda: [
        c("empty-rows", F(0, 3), F(3), F(3)),
        c("empty-features", F(2, 0), F(0), F(0)),
    ],
    "RMSNormalization": _norm_rows({}),
    "SimplifiedLayerNormalization": _norm_rows({}),
    "LinearAttention": lambda: [
        c(name, F(*s), F(*s), F(*s), q_num_heads=1, kv_num_heads=1, update_rule="linear")
        for name, s in (("empty-batch", (0, 2, 4)), ("empty-steps", (1, 0, 4)))
    ],
    "MatMul": lambda: [
        c("empty-rows", F(0, 3), F(3, 2)),
        c("empty-inner", F(2, 0), F(0, 3)),
        c("empty-cols", F(2, 3), F(3, 0)),
        c("empty-batch", F(0, 2, 3), F(3, 2)),
        c("vectors-to-scalar", F(3), F(3)),
        c("empty-vectors-to-scalar", F(0), F(0)),
    ],
    "MatMulInteger": lambda: [
        c("empty-rows", U8(0, 3), U8(3, 2)),
        c("vectors-to-scalar", U8(3), U8(3)),
    ],
    "MaxUnpool": lambda: [
        c("empty-batch", F(0, 1, 2, 2), zeros(0, 1, 2, 2), kernel_shape=[2, 2], strides=[2, 2])
    ],
    "MeanVarianceNormalization": lambda: [c("empty-batch", F(0, 2, 3, 3))],
    "MelWeightMatrix": lambda: [
        c("scalar-args", i(4), i(8), i(16000), f(0.0), f(8000.0)),
        c("zero-bins", i(0), i(8), i(16000), f(0.0), f(8000.0)),
    ],
    "NegativeLogLikelihoodLoss": lambda: [
        c("empty-batch-none", F(0, 3), zeros(0), reduction="none"),
        c("empty-batch-sum", F(0, 3), zeros(0), reduction="sum"),
        c("empty-batch-mean", F(0, 3), zeros(0)),
    ],
    "NonMaxSuppression": lambda: [
        c("no-boxes", F(1, 0, 4), F(1, 1, 0)),
        c("no-classes", F(1, 3, 4), F(1, 0, 3), i(2)),
        c("scalar-limits", F(1, 2, 4), F(1, 1, 2), i(2), f(0.5), f(0.0)),
    ],
    "OneHot": lambda: [
        c("scalar-index", i(1), i(3), np.array([0.0, 1.0], np.float32)),
        c("empty-indices", zeros(0), i(3), np.array([0.0, 1.0], np.float32)),
        c("zero-depth", I(0, 1), i(0), np.array([0.0, 1.0], np.float32)),
    ],
    "Pad": lambda: [
        c("empty-data", F(2, 0, 3), I(0, 1, 0, 0, 1, 0)),
        c("zero-pads", F(2, 3), I(0, 0, 0, 0)),
        c("scalar-data", f(0.5), zeros(0)),
        c("empty-data-edge", F(2, 0, 3), I(1, 0, 0, 1, 0, 0), mode="edge"),
    ],
    "QLinearConv": lambda: [
        c("empty-batch", *_q(U8(0, 1, 4, 4)), *_q(U8(2, 1, 3, 3)), *_q()),
    ],
    "QLinearMatMul": lambda: [
        c("empty-rows", *_q(U8(0, 3)), *_q(U8(3, 2)), *_q()),
        c("vectors-to-scalar", *_q(U8(3)), *_q(U8(3)), *_q()),
    ],
    "RandomNormal": lambda: [c("scalar", shape=[]), c("empty", shape=[0, 3])],
    "RandomUniform": lambda: [c("scalar", shape=[]), c("empty", shape=[0, 3])],
    "Range": lambda: [
        c("scalar-args", f(1.0), f(3.0), f(0.5)),
        c("empty-range", i(3), i(1), i(1)),
    ],
    "Reshape": lambda: [
        c("to-scalar", F(1), zeros(0)),
        c("from-scalar", f(0.5), I(1, 1)),
        c("empty-copy-zero", F(2, 0, 3), I(4, 0)),
        c("empty-allowzero", F(2, 0, 3), I(0, 3), allowzero=1),
    ],
    "Resize": lambda: [
        c("empty-batch", F(0, 1, 2, 2), None, np.array([1, 1, 2, 2], np.float32)),
        c("empty-batch-sizes", F(0, 1, 2, 2), None, None, I(0, 1, 4, 4)),
    ],
    "Upsample": lambda: [c("empty-batch", F(0, 1, 2, 2), np.array([1, 1, 2, 2], np.float32))],
    "ReverseSequence": lambda: [c("empty-batch", F(3, 0, 2), zeros(0))],
    "RoiAlign": lambda: [
        c("no-rois", F(1, 1, 4, 4), F(0, 4), zeros(0), output_height=2, output_width=2)
    ],
    "RotaryEmbedding": lambda: [
        c("empty-sequence", F(1, 2, 0, 4), F(1, 0, 2), F(1, 0, 2)),
        c("empty-batch", F(0, 2, 3, 4), F(0, 3, 2), F(0, 3, 2)),
    ],
    "STFT": lambda: [c("empty-batch", F(0, 8, 1), i(4), F(4))],
    "Scatter": _scatter,
    "ScatterElements": _scatter,
    "ScatterND": lambda: [
        c("empty-indices", F(3, 2), zeros(0, 1), F(0, 2)),
        c("empty-data", F(0, 3), zeros(0, 1), F(0, 3)),
    ],
    "Slice": lambda: [
        c("empty-data", F(2, 0, 3), I(0), I(1), I(0)),
        c("to-empty", F(3), I(2), I(1)),
        c("no-axes", F(2, 3), zeros(0), zeros(0)),
    ],
    "SoftmaxCrossEntropyLoss": lambda: [
        c("empty-batch-none", F(0, 3), zeros(0), reduction="none"),
        c("empty-batch-sum", F(0, 3), zeros(0), reduction="sum"),
        c("empty-batch-mean", F(0, 3), zeros(0)),
        c("empty-extent-none", F(2, 3, 0), zeros(2, 0), reduction="none"),
        c("empty-extent-mean", F(2, 3, 0), zeros(2, 0)),
    ],
    "Split": lambda: [
        c("empty-even", F(0, 4), axis=1, num_outputs=2, outputs=2),
        c("empty-along", F(2, 0, 3), axis=1, num_outputs=2, outputs=2),
        c("zero-part", F(2, 3), I(0, 2), outputs=2),
    ],
    "Tile": lambda: [
        c("empty-input", F(2, 0, 3), I(2, 1, 1)),
        c("zero-repeats", F(2, 3), I(0, 1)),
        c("scalar", f(0.5), zeros(0)),
    ],
    "TopK": lambda: [
        c("empty-rows", F(0, 3), I(2), outputs=2),
        c("k-zero", F(3), I(0), outputs=2),
    ],
    "Unique": lambda: [
        c("empty", F(0), outputs=4),
        c("empty-axis", F(0, 3), axis=0, outputs=4),
        c("empty-rows-along-axis0", F(2, 0), axis=0, outputs=4),
        c("empty-rows-along-axis1", F(2, 0), axis=1, outputs=4),
        c("scalar", f(0.5), outputs=4),
    ],
    "Unsqueeze": lambda: [c("scalar", f(0.5), I(0)), c("empty", F(2, 0), I(0))],
    "TensorScatter": lambda: [
        c("empty-update", F(1, 4, 2), F(1, 0, 2)),
        c("empty-batch", F(0, 4, 2), F(0, 1, 2)),
    ],
    "TfIdfVectorizer": lambda: [
        c("empty-batch", zeros(0, 3), **_TFIDF),
        c("empty-rows", zeros(2, 0), **_TFIDF),
    ],
    "StringNormalizer": lambda: [
        c("empty", zeros(0, dtype=object)),
        c("empty-2d", zeros(1, 0, dtype=object)),
    ],
}
CUSTOM["ArgMin"] = CUSTOM["ArgMax"]
CUSTOM["CumProd"] = CUSTOM["CumSum"]
for _op in ["ReduceL1", "ReduceL2", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd"]:
    CUSTOM[_op] = _reduce(ints=True)
CUSTOM["ReduceSum"] = CUSTOM["ReduceSumSquare"] = _reduce(ints=True)
for _op in ["ReduceLogSum", "ReduceLogSumExp"]:
    CUSTOM[_op] = _reduce(ints=False)

_TFIDF: dict[str, Any] = {
    "mode": "TF",
    "min_gram_length": 1,
    "max_gram_length": 1,
    "max_skip_count": 0,
    "ngram_counts": [0],
    "ngram_indexes": [0],
    "pool_int64s": [1],
}
