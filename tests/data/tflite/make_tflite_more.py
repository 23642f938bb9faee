"""Make the TFLite test files of the less common builtins and the interpreter's outputs (seeded).

Run with a Python that has TensorFlow 2.x (not a dependency of xocview or its tests):
``python tests/data/tflite/make_tflite_more.py``. Writes ``tfl_more_*.tflite`` beside this
script and ``tfl_more_outputs.npz`` holding, per file, the inputs fed (``<name>.in<k>``) and
the TFLite interpreter's outputs (``<name>.out<k>``) in the interpreter's output order. Each
file is checked to hold the builtins it is meant to test.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

keras = tf.keras
HERE = Path(__file__).resolve().parent
F32 = tf.float32


@tf.function(input_signature=[tf.TensorSpec((4, 6), F32), tf.TensorSpec((4, 6), tf.int32)])
def index(x: tf.Tensor, n: tf.Tensor) -> list[tf.Tensor]:
    """ONE_HOT, RANGE, ZEROS_LIKE, REDUCE_ANY/ALL, REVERSE_V2, WHERE, SCATTER_ND, ATAN2, ..."""
    ids = tf.math.floormod(n, 5)
    hot = tf.one_hot(ids[0], 5, on_value=2.0, off_value=-1.0)
    r = tf.range(tf.reduce_max(ids[1]) + 2, delta=1)
    r = tf.cast(r, F32) * 0.5
    z = tf.reverse(x, axis=[1])
    anyp = tf.reduce_any(x > 1.0, axis=1)
    allp = tf.reduce_all(x > -1.5, axis=0)
    where = tf.where(x > 0.5)
    zeros = tf.zeros_like(where) + 1
    sc = tf.scatter_nd([[1], [3]], x[:2], (5, 6))
    at = tf.math.atan2(x, tf.reverse(x, axis=[0]))
    xor = tf.bitwise.bitwise_xor(n, ids)
    shr = tf.bitwise.right_shift(n, tf.constant(1, tf.int32))
    d = tf.linalg.diag(x[:2, :4])
    sd = tf.linalg.set_diag(tf.reshape(x, (2, 3, 4)), x[:2, :3] * 10.0)
    rs = tf.reverse_sequence(x, [1, 3, 6, 2], seq_axis=1, batch_axis=0)
    from tensorflow.compiler.tf2xla.python import xla

    start = tf.stack([n[0, 0] % 3, n[0, 1] % 7 - 2])  # clamped when past the edge
    dus = xla.dynamic_update_slice(x, x[:2, :3] * -3.0, start)
    return [hot, r, z, anyp, allp, where, zeros, sc, at, xor, shr, d, sd, rs, dus]


@tf.function(input_signature=[tf.TensorSpec((6, 3), F32), tf.TensorSpec((8,), tf.int32)])
def segment(x: tf.Tensor, v: tf.Tensor) -> list[tf.Tensor]:
    """SEGMENT_SUM, UNSORTED_SEGMENT_SUM/MAX/MIN/PROD, UNIQUE, BROADCAST_ARGS."""
    s = tf.math.segment_sum(x, [0, 0, 1, 2, 2, 2])
    ids = tf.constant([2, 0, 2, 1, 0, 2])
    us = tf.math.unsorted_segment_sum(x, ids, 4)
    umax = tf.math.unsorted_segment_max(x, ids, 3)
    umin = tf.math.unsorted_segment_min(x, ids, 3)
    up = tf.math.unsorted_segment_prod(x, ids, 3)
    u, k = tf.unique(v)
    b = tf.broadcast_dynamic_shape(tf.shape(x), tf.stack([v[0] * 0 + 1, v[1] * 0 + 3]))
    return [s, us, umax, umin, up, u, k, b]


@tf.function(input_signature=[tf.TensorSpec((2, 8, 8, 3), F32)])
def space(x: tf.Tensor) -> list[tf.Tensor]:
    """SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND (kept apart by ops in between), LRN."""
    s = tf.space_to_batch_nd(x, [2, 2], [[0, 2], [2, 0]])
    s = tf.math.tanh(s) * 2.0
    b = tf.batch_to_space(s, [2, 2], [[0, 2], [2, 0]])
    lrn = tf.nn.local_response_normalization(x, depth_radius=1, bias=1.5, alpha=0.3, beta=0.7)
    return [s, b, lrn]


def conv3d() -> keras.Model:
    x = keras.Input((4, 6, 6, 2), batch_size=1)
    y = keras.layers.Conv3D(4, 3, padding="same", activation="relu")(x)
    y = keras.layers.Conv3D(3, (2, 3, 3), strides=(1, 2, 2), padding="valid")(y)
    y = keras.layers.Conv3DTranspose(2, 3, strides=2, padding="same")(y)
    return keras.Model(x, y)


def recurrent() -> keras.Model:
    """tf_keras (Keras 2): its LSTM is the function the converter fuses; Keras 3's is a WHILE."""
    import tf_keras as k2

    x = k2.Input((5, 4), batch_size=2)
    a = k2.layers.LSTM(6, return_sequences=True)(x)
    b = k2.layers.Bidirectional(k2.layers.LSTM(3, return_sequences=True))(x)
    c = k2.layers.SimpleRNN(5, return_sequences=True)(x)
    d = k2.layers.LSTM(4)(x)
    return k2.Model(x, [a, b, c, d])


class Handmade:
    """A one-subgraph TFLite flatbuffer written field by field, for builtins the converter
    never writes (L2_POOL_2D, EMBEDDING_LOOKUP, RANK, the sequence RNN, bidirectional LSTM)."""

    def __init__(self) -> None:
        import flatbuffers

        self.b = flatbuffers.Builder(4096)
        self.tensors: list[tuple[str, list[int], int, int, bool]] = []
        self.buffers: list[bytes] = [b""]
        self.ops: list[tuple[int, list[int], list[int], int, object]] = []
        self.rng = np.random.default_rng(3)

    def tensor(self, name: str, shape: list[int], code: int = 0, variable: bool = False) -> int:
        self.tensors.append((name, shape, code, 0, variable))
        return len(self.tensors) - 1

    def const(self, name: str, value: np.ndarray) -> int:
        code = {np.float32: 0, np.int32: 2}[value.dtype.type]
        self.buffers.append(value.tobytes())
        self.tensors.append((name, list(value.shape), code, len(self.buffers) - 1, False))
        return len(self.tensors) - 1

    def weight(self, name: str, shape: list[int]) -> int:
        return self.const(name, (self.rng.standard_normal(shape) * 0.5).astype(np.float32))

    def op(self, code: int, ins: list[int], outs: list[int], kind: int = 0, opts: object = None):  # type: ignore[no-untyped-def]
        self.ops.append((code, ins, outs, kind, opts))

    def _ints(self, values: list[int]) -> int:
        return self.b.CreateNumpyVector(np.asarray(values, np.int32))

    def _tables(self, offsets: list[int]) -> int:
        self.b.StartVector(4, len(offsets), 4)
        for o in reversed(offsets):
            self.b.PrependUOffsetTRelative(o)
        return self.b.EndVector()

    def finish(self, inputs: list[int], outputs: list[int]) -> bytes:
        import tflite as T

        b = self.b
        bufs = []
        for data in self.buffers:
            vec = b.CreateNumpyVector(np.frombuffer(data, np.uint8)) if data else None
            T.BufferStart(b)
            if vec is not None:
                T.BufferAddData(b, vec)
            bufs.append(T.BufferEnd(b))
        tens = []
        for name, shape, code, buf, variable in self.tensors:
            n, sh = b.CreateString(name), self._ints(shape)
            T.TensorStart(b)
            T.TensorAddShape(b, sh)
            T.TensorAddType(b, code)
            T.TensorAddBuffer(b, buf)
            T.TensorAddName(b, n)
            T.TensorAddIsVariable(b, variable)
            tens.append(T.TensorEnd(b))
        codes = sorted({op[0] for op in self.ops})
        ops = []
        for code, ins, outs, kind, opts in self.ops:
            o = opts(b) if callable(opts) else None
            i_vec, o_vec = self._ints(ins), self._ints(outs)
            T.OperatorStart(b)
            T.OperatorAddOpcodeIndex(b, codes.index(code))
            T.OperatorAddInputs(b, i_vec)
            T.OperatorAddOutputs(b, o_vec)
            if o is not None:
                T.OperatorAddBuiltinOptionsType(b, kind)
                T.OperatorAddBuiltinOptions(b, o)
            ops.append(T.OperatorEnd(b))
        opcodes = []
        for code in codes:
            T.OperatorCodeStart(b)
            T.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
            T.OperatorCodeAddBuiltinCode(b, code)
            T.OperatorCodeAddVersion(b, 1)
            opcodes.append(T.OperatorCodeEnd(b))
        t_vec, op_vec = self._tables(tens), self._tables(ops)
        in_vec, out_vec, name = self._ints(inputs), self._ints(outputs), b.CreateString("main")
        T.SubGraphStart(b)
        T.SubGraphAddTensors(b, t_vec)
        T.SubGraphAddOperators(b, op_vec)
        T.SubGraphAddInputs(b, in_vec)
        T.SubGraphAddOutputs(b, out_vec)
        T.SubGraphAddName(b, name)
        sg = T.SubGraphEnd(b)
        sg_vec, code_vec, buf_vec = self._tables([sg]), self._tables(opcodes), self._tables(bufs)
        desc = b.CreateString("xocview make_tflite_more.py")
        T.ModelStart(b)
        T.ModelAddVersion(b, 3)
        T.ModelAddOperatorCodes(b, code_vec)
        T.ModelAddSubgraphs(b, sg_vec)
        T.ModelAddDescription(b, desc)
        T.ModelAddBuffers(b, buf_vec)
        b.Finish(T.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def handmade() -> bytes:
    import tflite as T

    ops, kinds = T.BuiltinOperator, T.BuiltinOptions
    h = Handmade()
    x = h.tensor("image", [1, 6, 6, 2])
    ids = h.tensor("ids", [4], code=2)
    seq = h.tensor("sequence", [2, 5, 4])

    def pool(b):  # type: ignore[no-untyped-def]
        T.Pool2DOptionsStart(b)
        T.Pool2DOptionsAddPadding(b, T.Padding.SAME)
        for add, v in ((T.Pool2DOptionsAddStrideH, 2), (T.Pool2DOptionsAddStrideW, 2)):
            add(b, v)
        T.Pool2DOptionsAddFilterHeight(b, 3)
        T.Pool2DOptionsAddFilterWidth(b, 3)
        return T.Pool2DOptionsEnd(b)

    pooled = h.tensor("l2_pool", [1, 3, 3, 2])
    h.op(ops.L2_POOL_2D, [x], [pooled], kinds.Pool2DOptions, pool)
    looked = h.tensor("embedded", [4, 3])
    h.op(ops.EMBEDDING_LOOKUP, [ids, h.weight("table", [5, 3])], [looked])
    rank = h.tensor("rank", [], code=2)
    h.op(ops.RANK, [x], [rank])

    def rnn(b):  # type: ignore[no-untyped-def]
        T.SequenceRNNOptionsStart(b)
        T.SequenceRNNOptionsAddTimeMajor(b, False)
        T.SequenceRNNOptionsAddFusedActivationFunction(b, T.ActivationFunctionType.TANH)
        return T.SequenceRNNOptionsEnd(b)

    rnn_ins = [seq, h.weight("rnn_w", [3, 4]), h.weight("rnn_r", [3, 3]), h.weight("rnn_b", [3])]
    rnn_out = h.tensor("rnn", [2, 5, 3])
    rnn_state = h.tensor("rnn_state", [2, 3], variable=True)
    h.op(
        ops.UNIDIRECTIONAL_SEQUENCE_RNN,
        [*rnn_ins, rnn_state],
        [rnn_out],
        kinds.SequenceRNNOptions,
        rnn,
    )

    def lstm(b):  # type: ignore[no-untyped-def]
        T.BidirectionalSequenceLSTMOptionsStart(b)
        T.BidirectionalSequenceLSTMOptionsAddFusedActivationFunction(
            b, T.ActivationFunctionType.TANH
        )
        T.BidirectionalSequenceLSTMOptionsAddMergeOutputs(b, True)
        T.BidirectionalSequenceLSTMOptionsAddTimeMajor(b, True)
        return T.BidirectionalSequenceLSTMOptionsEnd(b)

    slots = [seq]
    for d in ("fw", "bw"):
        slots += [h.weight(f"{d}_w{g}", [3, 4]) for g in "ifco"]
        slots += [h.weight(f"{d}_r{g}", [3, 3]) for g in "ifco"]
        slots += [-1, -1, -1]
        slots += [h.weight(f"{d}_b{g}", [3]) for g in "ifco"]
        slots += [-1, -1]
    # time-major: the same input read as 2 steps of a batch of 5 (states per batch row)
    slots += [
        h.tensor(f"lstm_{s}", [5, 3], variable=True) for s in ("fw_h", "fw_c", "bw_h", "bw_c")
    ]
    slots += [-1] * 9
    both = h.tensor("bilstm", [2, 5, 6])
    h.op(
        ops.BIDIRECTIONAL_SEQUENCE_LSTM, slots, [both], kinds.BidirectionalSequenceLSTMOptions, lstm
    )
    return h.finish([x, ids, seq], [pooled, looked, rank, rnn_out, both])


WANTED: dict[str, set[str]] = {
    "index": {
        "ONE_HOT",
        "RANGE",
        "ZEROS_LIKE",
        "REDUCE_ANY",
        "REVERSE_V2",
        "WHERE",
        "SCATTER_ND",
        "ATAN2",
        "BITWISE_XOR",
        "RIGHT_SHIFT",
        "MATRIX_DIAG",
        "MATRIX_SET_DIAG",
        "REVERSE_SEQUENCE",
        "DYNAMIC_UPDATE_SLICE",
    },
    "segment": {"SEGMENT_SUM", "UNSORTED_SEGMENT_SUM", "UNSORTED_SEGMENT_MAX", "UNIQUE"},
    "space": {"SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND", "LOCAL_RESPONSE_NORMALIZATION"},
    "conv3d": {"CONV_3D", "CONV_3D_TRANSPOSE"},
    "recurrent": {"UNIDIRECTIONAL_SEQUENCE_LSTM", "WHILE"},
    "handmade": {
        "L2_POOL_2D",
        "EMBEDDING_LOOKUP",
        "RANK",
        "UNIDIRECTIONAL_SEQUENCE_RNN",
        "BIDIRECTIONAL_SEQUENCE_LSTM",
    },
}


def convert(made: object) -> bytes:
    if isinstance(made, bytes):
        return made
    if hasattr(made, "layers"):
        conv = tf.lite.TFLiteConverter.from_keras_model(made)
    else:
        conv = tf.lite.TFLiteConverter.from_concrete_functions(
            [made.get_concrete_function()],  # type: ignore[attr-defined]
            made,
        )
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    return conv.convert()


def outputs(blob: bytes, name: str, found: dict[str, np.ndarray]) -> set[str]:
    plain = tf.lite.experimental.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    interp = tf.lite.Interpreter(model_content=blob, experimental_op_resolver_type=plain)
    interp.allocate_tensors()
    rng = np.random.default_rng(7)
    for k, d in enumerate(interp.get_input_details()):
        if d["dtype"] == np.int32:
            top = 5 if d["name"] == "ids" else 40
            value = rng.integers(0, top, d["shape"]).astype(np.int32)
        else:
            value = rng.standard_normal(d["shape"]).astype(d["dtype"])
        interp.set_tensor(d["index"], value)
        found[f"{name}.in{k}"] = value
    interp.invoke()
    for k, d in enumerate(interp.get_output_details()):
        found[f"{name}.out{k}"] = interp.get_tensor(d["index"])
    return {op["op_name"] for op in interp._get_ops_details()}


def main() -> None:
    tf.random.set_seed(0)
    keras.utils.set_random_seed(0)
    found: dict[str, np.ndarray] = {}
    made = {
        "index": index,
        "segment": segment,
        "space": space,
        "conv3d": conv3d(),
        "recurrent": recurrent(),
        "handmade": handmade(),
    }
    for name, model in made.items():
        blob = convert(model)
        (HERE / f"tfl_more_{name}.tflite").write_bytes(blob)
        ops = outputs(blob, name, found)
        print(name, len(blob), "bytes", sorted(ops))
        if WANTED[name] - ops:
            print("  MISSING", sorted(WANTED[name] - ops))
    np.savez_compressed(HERE / "tfl_more_outputs.npz", **found)


if __name__ == "__main__":
    main()
