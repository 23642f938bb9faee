"""Make the small TFLite test files and TensorFlow's outputs for them (seeded).

Run with a Python that has TensorFlow 2.x (not a dependency of xocview or its tests):
``python tests/data/tflite/make_tflite.py``. Writes ``tfl_*.tflite`` beside this script and
``tfl_outputs.npz`` holding, per file, the input fed (``<name>.in<k>``) and the TFLite
interpreter's outputs (``<name>.out<k>``) in the interpreter's output order.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

keras = tf.keras
HERE = Path(__file__).resolve().parent


def cnn() -> keras.Model:
    x = keras.Input((16, 16, 3), batch_size=1)
    y = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(x)
    y = keras.layers.DepthwiseConv2D(3, padding="same")(y)
    y = keras.layers.ReLU(6.0)(y)
    y = keras.layers.MaxPooling2D(2)(y)
    y = keras.layers.Conv2D(12, 3, strides=2, padding="valid", activation="hard_swish")(y)
    y = keras.layers.AveragePooling2D(2, padding="same")(y)
    a = keras.layers.GlobalAveragePooling2D()(y)
    b = keras.layers.Flatten()(y)
    y = keras.layers.Concatenate()([a, b])
    y = keras.layers.Dense(10, activation="softmax")(y)
    return keras.Model(x, y)


def mlp() -> keras.Model:
    x = keras.Input((20,), batch_size=2)
    y = keras.layers.Dense(32, activation="tanh")(x)
    y = keras.layers.Dense(16, activation="sigmoid")(y)
    y = keras.layers.Dense(4)(y)
    return keras.Model(x, y)


def block() -> keras.Model:
    """A tiny attention block: BATCH_MATMUL, SOFTMAX, LayerNorm (as it converts)."""
    x = keras.Input((8, 16), batch_size=1)
    q = keras.layers.Dense(16)(x)
    k = keras.layers.Dense(16)(x)
    v = keras.layers.Dense(16)(x)
    s = keras.ops.matmul(q, keras.ops.transpose(k, (0, 2, 1))) * 0.25
    p = keras.layers.Softmax()(s)
    a = keras.ops.matmul(p, v)
    y = keras.layers.LayerNormalization()(keras.layers.Add()([x, a]))
    y = keras.layers.Dense(32, activation="relu")(y)
    y = keras.layers.Dense(16)(y)
    return keras.Model(x, keras.layers.Add()([y, x]))


@tf.function(input_signature=[tf.TensorSpec((2, 6, 8), tf.float32)])
def shapes(x: tf.Tensor) -> tf.Tensor:
    """PAD, TRANSPOSE, GATHER, STRIDED_SLICE, SQUEEZE, EXPAND_DIMS, RESHAPE, SUB, DIV, MUL."""
    y = tf.pad(x, [[0, 0], [1, 2], [0, 0]])  # (2, 9, 8)
    y = tf.transpose(y, (0, 2, 1))  # (2, 8, 9)
    g = tf.gather(y, [3, 0, 5], axis=2)  # (2, 8, 3)
    s = y[:, 1:7:2, 2:]  # (2, 3, 7)
    s = tf.reshape(s, (2, 21))
    e = tf.expand_dims(s, 1)  # (2, 1, 21)
    e = tf.squeeze(e, axis=1)
    h = tf.nn.relu6(g * 2.0 - 1.0) / 3.0
    h = tf.reshape(h, (2, 24))
    return tf.concat([e, h, tf.math.tanh(h)], axis=1)


@tf.function(input_signature=[tf.TensorSpec((1, 6, 6, 4), tf.float32)])
def more(x: tf.Tensor) -> list[tf.Tensor]:
    """SPLIT, PACK, UNPACK, TILE, RESIZE_*, TRANSPOSE_CONV, ARG_MAX, GELU, L2_NORMALIZATION,
    SELECT_V2, SPACE_TO_DEPTH, DEPTH_TO_SPACE, LEAKY_RELU, CUMSUM, SHAPE, TOPK_V2, ..."""
    a, b = tf.split(x, 2, axis=3)
    s = tf.stack([a, b], axis=1)  # (1, 2, 6, 6, 2)
    u0, u1 = tf.unstack(s, axis=1)
    t = tf.tile(u0 - u1, [1, 1, 2, 1])  # (1, 6, 12, 2)
    bil = tf.compat.v1.image.resize_bilinear(x, (9, 11), half_pixel_centers=True)
    near = tf.compat.v1.image.resize_nearest_neighbor(x, (12, 12))
    w = tf.constant(np.random.default_rng(5).standard_normal((3, 3, 5, 4)), tf.float32)
    dc = tf.nn.conv2d_transpose(x, w, (1, 12, 12, 5), 2, padding="SAME")
    sd = tf.nn.space_to_depth(x, 2)
    ds = tf.nn.depth_to_space(sd, 2)
    g = tf.nn.gelu(x, approximate=False)
    la = tf.nn.leaky_relu(x, 0.1)
    l2 = tf.math.l2_normalize(x, axis=-1)
    sel = tf.where(x > 0.0, x, x * x)
    cs = tf.math.cumsum(x, axis=2)
    am = tf.cast(tf.argmax(x, axis=3), tf.float32)
    top, _ = tf.math.top_k(tf.reshape(x, (1, 144)), k=5)
    sq = tf.reduce_sum(tf.square(x - 0.5), axis=[1, 2])
    fd = tf.math.floordiv(x, 0.3)
    sh = tf.cast(tf.shape(tf.reshape(x, (-1, 8))), tf.float32)
    return [t, bil, near, dc, ds, g + la + l2 + sel + cs + fd, am, top, sq, sh]


@tf.function(input_signature=[tf.TensorSpec((4,), tf.float32), tf.TensorSpec((), tf.int32)])
def loop(x: tf.Tensor, n: tf.Tensor) -> tf.Tensor:
    """A WHILE whose condition and body are subgraphs 1 and 2."""
    _, y = tf.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * 0.5 + 1.0), [0, x])
    return y


@tf.function(input_signature=[tf.TensorSpec((3,), tf.float32), tf.TensorSpec((), tf.bool)])
def branch(x: tf.Tensor, flag: tf.Tensor) -> tf.Tensor:
    """An IF whose branches are subgraphs 1 and 2."""
    return tf.cond(flag, lambda: x * 2.0 + 1.0, lambda: tf.math.tanh(x) - x)


def convert(model: keras.Model, int8: bool = False) -> bytes:
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if int8:
        shape = [d or 1 for d in model.inputs[0].shape]
        rng = np.random.default_rng(1)

        def data():  # type: ignore[no-untyped-def]
            for _ in range(32):
                yield [rng.standard_normal(shape).astype(np.float32)]

        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = data
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    return conv.convert()


def outputs(blob: bytes, name: str, found: dict[str, np.ndarray]) -> None:
    interp = tf.lite.Interpreter(model_content=blob)
    interp.allocate_tensors()
    rng = np.random.default_rng(7)
    for k, d in enumerate(interp.get_input_details()):
        value = rng.standard_normal(d["shape"]).astype(d["dtype"])
        if d["dtype"] == np.int32:
            value = np.asarray(3, np.int32).reshape(d["shape"])
        interp.set_tensor(d["index"], value)
        found[f"{name}.in{k}"] = value
    interp.invoke()
    for k, d in enumerate(interp.get_output_details()):
        found[f"{name}.out{k}"] = interp.get_tensor(d["index"])


def main() -> None:
    tf.random.set_seed(0)
    keras.utils.set_random_seed(0)
    found: dict[str, np.ndarray] = {}
    blobs = {
        "cnn": convert(cnn()),
        "mlp": convert(mlp()),
        "block": convert(block()),
        "cnn_int8": convert(cnn(), int8=True),
    }
    conv = tf.lite.TFLiteConverter.from_concrete_functions([shapes.get_concrete_function()], shapes)
    blobs["shapes"] = conv.convert()
    conv = tf.lite.TFLiteConverter.from_concrete_functions([more.get_concrete_function()], more)
    blobs["more"] = conv.convert()
    conv = tf.lite.TFLiteConverter.from_concrete_functions([loop.get_concrete_function()], loop)
    blobs["loop"] = conv.convert()
    conv = tf.lite.TFLiteConverter.from_concrete_functions([branch.get_concrete_function()], branch)
    blobs["branch"] = conv.convert()
    for name, blob in blobs.items():
        (HERE / f"tfl_{name}.tflite").write_bytes(blob)
        outputs(blob, name, found)
        print(name, len(blob), "bytes")
    np.savez_compressed(HERE / "tfl_outputs.npz", **found)


if __name__ == "__main__":
    main()
