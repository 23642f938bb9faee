"""Small seeded float models and what onnxruntime's quantizers make of them: the test files of
the com.microsoft quantized kernels (each quantization takes well under a second)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
MS = "com.microsoft"


def ort_contrib(
    op: str, inputs: list[np.ndarray | None], attrs: dict | None = None, num_outputs: int = 1
) -> list[np.ndarray]:
    """One com.microsoft node run by onnxruntime (one thread, no graph optimization); a None
    input is left out by an empty name."""
    import onnxruntime as ort

    names = ["" if x is None else f"x{i}" for i, x in enumerate(inputs)]
    outs = [f"y{i}" for i in range(num_outputs)]
    node = helper.make_node(op, names, outs, domain=MS, **(attrs or {}))
    graph = helper.make_graph(
        [node],
        "one",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
            for n, x in zip(names, inputs, strict=True)
            if x is not None
        ],
        [onnx.ValueInfoProto(name=n) for n in outs],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 9
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, ["CPUExecutionProvider"])
    feeds = {n: x for n, x in zip(names, inputs, strict=True) if x is not None}
    return list(session.run(outs, feeds))


def _weights(
    rng: np.random.Generator, shapes: dict[str, tuple[int, ...]]
) -> list[onnx.TensorProto]:
    return [
        numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), name)
        for name, s in shapes.items()
    ]


def _model(graph: onnx.GraphProto, opset: int = 17) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model


CNN_INPUT = (1, 3, 8, 8)


def cnn(seed: int = 0) -> onnx.ModelProto:
    """Conv/Relu/Add/Sigmoid/Mul/LeakyRelu/AveragePool/Concat/Where/GlobalAveragePool/Gemm/
    Softmax: every op the static QOperator quantizer turns into a com.microsoft QLinear op."""
    rng = np.random.default_rng(seed)
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        n("Relu", ["c1"], ["r1"]),
        n("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        n("Add", ["c2", "r1"], ["a1"]),
        n("Sigmoid", ["a1"], ["s1"]),
        n("Mul", ["a1", "s1"], ["m1"]),
        n("LeakyRelu", ["m1"], ["l1"], alpha=0.1),
        n("AveragePool", ["l1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        n("Conv", ["p1", "w3", "b3"], ["c3"]),
        n("Greater", ["c3", "zero"], ["positive"]),
        n("Slice", ["p1", "starts", "ends", "axes"], ["p1_head"]),
        n("Where", ["positive", "c3", "p1_head"], ["wh"]),
        n("Concat", ["p1", "wh"], ["cat"], axis=1),
        n("GlobalAveragePool", ["cat"], ["g"]),
        n("Flatten", ["g"], ["f"]),
        n("Gemm", ["f", "wg", "bg"], ["lg"], transB=1),
        n("Softmax", ["lg"], ["y"], axis=-1),
    ]
    inits = _weights(
        rng,
        {
            "w1": (8, 3, 3, 3),
            "b1": (8,),
            "w2": (8, 8, 3, 3),
            "b2": (8,),
            "w3": (4, 8, 1, 1),
            "b3": (4,),
            "wg": (10, 12),
            "bg": (10,),
        },
    )
    inits += [
        numpy_helper.from_array(np.zeros((), np.float32), "zero"),
        numpy_helper.from_array(np.array([0], np.int64), "starts"),
        numpy_helper.from_array(np.array([4], np.int64), "ends"),
        numpy_helper.from_array(np.array([1], np.int64), "axes"),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", F, list(CNN_INPUT))],
        [helper.make_tensor_value_info("y", F, [1, 10])],
        inits,
    )
    return _model(graph)


MLP_INPUT = (2, 5, 64)


def mlp(seed: int = 1) -> onnx.ModelProto:
    """MatMul/Add/Relu/Gemm/MatMul with K = 64 (two 32-blocks for the 4-bit quantizer). Relu,
    not Tanh, between the layers: onnxruntime's Tanh is an approximation whose last-bit
    differences flip roundings of the next dynamic quantization."""
    rng = np.random.default_rng(seed)
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "w1"], ["h1"]),
        n("Add", ["h1", "b1"], ["a1"]),
        n("Relu", ["a1"], ["r1"]),
        n("MatMul", ["r1", "w2"], ["h2"]),
        n("Reshape", ["h2", "flat"], ["f2"]),
        n("Gemm", ["f2", "w3", "b3"], ["g3"]),
        n("Relu", ["g3"], ["t3"]),
        n("MatMul", ["t3", "w4"], ["y"]),
    ]
    inits = _weights(
        rng,
        {"w1": (64, 96), "b1": (96,), "w2": (96, 64), "w3": (64, 32), "b3": (32,), "w4": (32, 7)},
    )
    inits.append(numpy_helper.from_array(np.array([-1, 64], np.int64), "flat"))
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", F, list(MLP_INPUT))],
        [helper.make_tensor_value_info("y", F, [10, 7])],
        inits,
    )
    return _model(graph)


LSTM_INPUT = (6, 2, 12)  # seq, batch, input


def lstm(seed: int = 2, direction: str = "bidirectional") -> onnx.ModelProto:
    """An LSTM (with bias and initial states) between two MatMuls, as a CRNN head has it."""
    rng = np.random.default_rng(seed)
    hidden, dirs = 16, 2 if direction == "bidirectional" else 1
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "w_in"], ["xi"]),
        n(
            "LSTM",
            ["xi", "W", "R", "B", "", "h0", "c0"],
            ["Y", "Y_h", "Y_c"],
            hidden_size=hidden,
            direction=direction,
        ),
        n("Transpose", ["Y"], ["Yt"], perm=[0, 2, 1, 3]),
        n("Reshape", ["Yt", "shape"], ["Yf"]),
        n("MatMul", ["Yf", "w_out"], ["y"]),
    ]
    inits = _weights(
        rng,
        {
            "w_in": (LSTM_INPUT[2], 20),
            "W": (dirs, 4 * hidden, 20),
            "R": (dirs, 4 * hidden, hidden),
            "B": (dirs, 8 * hidden),
            "h0": (dirs, LSTM_INPUT[1], hidden),
            "c0": (dirs, LSTM_INPUT[1], hidden),
            "w_out": (dirs * hidden, 5),
        },
    )
    inits.append(numpy_helper.from_array(np.array([0, 0, -1], np.int64), "shape"))
    graph = helper.make_graph(
        nodes,
        "lstm",
        [helper.make_tensor_value_info("x", F, list(LSTM_INPUT))],
        [helper.make_tensor_value_info("y", F, [LSTM_INPUT[0], LSTM_INPUT[1], 5])],
        inits,
    )
    return _model(graph)


def save(model: onnx.ModelProto, folder: Path, name: str) -> Path:
    path = folder / name
    onnx.save(model, path)
    return path


class Calibration:
    """Seeded calibration batches for quantize_static (a CalibrationDataReader)."""

    def __init__(self, name: str, shape: tuple[int, ...], batches: int = 4, seed: int = 9) -> None:
        rng = np.random.default_rng(seed)
        data = [{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(batches)]
        self._batches = iter(data)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._batches, None)

    def rewind(self) -> None:  # some quantizer versions ask for it
        pass


BERT_BATCH, BERT_SEQ, BERT_VOCAB, BERT_HIDDEN = 2, 5, 30, 16


def bert_block(seed: int = 3) -> onnx.ModelProto:
    """onnxruntime's fused BERT ops in float (EmbedLayerNormalization, Attention) and a
    MatMul head, as its transformer optimizer leaves a BERT; quantize_dynamic turns them into
    QEmbedLayerNormalization and QAttention."""
    rng = np.random.default_rng(seed)
    h = BERT_HIDDEN
    nodes = [
        helper.make_node(
            "EmbedLayerNormalization",
            ["ids", "segments", "word", "position", "segment", "gamma", "beta", "mask"],
            ["emb", "mask_index"],
            domain=MS,
            epsilon=1e-5,
        ),
        helper.make_node(
            "Attention", ["emb", "qkv", "qkv_bias", "mask_index"], ["att"], domain=MS, num_heads=2
        ),
        helper.make_node("MatMul", ["att", "head"], ["y"]),
    ]
    inits = _weights(
        rng,
        {
            "word": (BERT_VOCAB, h),
            "position": (BERT_SEQ, h),
            "segment": (2, h),
            "qkv": (h, 3 * h),
            "qkv_bias": (3 * h,),
            "head": (h, 4),
        },
    )
    inits += [
        numpy_helper.from_array((1 + 0.1 * rng.standard_normal(h)).astype(np.float32), "gamma"),
        numpy_helper.from_array((0.1 * rng.standard_normal(h)).astype(np.float32), "beta"),
    ]
    ints = [
        helper.make_tensor_value_info(n, TensorProto.INT32, [BERT_BATCH, BERT_SEQ])
        for n in ("ids", "segments", "mask")
    ]
    graph = helper.make_graph(
        nodes,
        "bert",
        ints,
        [helper.make_tensor_value_info("y", F, [BERT_BATCH, BERT_SEQ, 4])],
        inits,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 9
    return model


def bert_feeds(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shape = (BERT_BATCH, BERT_SEQ)
    mask = np.ones(shape, np.int32)
    mask[0, 3:] = 0
    return {
        "ids": rng.integers(0, BERT_VOCAB, shape).astype(np.int32),
        "segments": rng.integers(0, 2, shape).astype(np.int32),
        "mask": mask,
    }
