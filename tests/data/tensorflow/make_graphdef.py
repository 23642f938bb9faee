"""Make the frozen TensorFlow graphs the tests read, with TensorFlow (not a test dependency).

Run with a Python that has tensorflow: ``python tests/data/tensorflow/make_graphdef.py``.
Each graph is a seeded tf.function frozen by convert_variables_to_constants_v2 and written as
binary ``.pb`` (and the CNN also as ``.pbtxt``); ``<name>_io.npz`` holds the inputs fed and
the outputs TensorFlow computed, keyed ``in:<placeholder>`` and ``out:<k>``.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import (
    convert_variables_to_constants_v2,
)

HERE = Path(__file__).parent


def cnn() -> keras.Model:
    keras.utils.set_random_seed(0)
    inp = keras.Input((16, 16, 3), name="image")
    x = keras.layers.Conv2D(8, 3, strides=2, padding="same")(inp)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.ReLU(6.0)(x)
    x = keras.layers.DepthwiseConv2D(3, padding="same", activation="relu")(x)
    x = keras.layers.MaxPooling2D(2)(x)
    x = keras.layers.Conv2D(12, 1, activation="sigmoid")(x)
    x = keras.layers.AveragePooling2D(2)(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(10)(x)
    out = keras.layers.Softmax()(x)
    model = keras.Model(inp, out)
    for w in model.weights:  # batch norm statistics other than 0/1, so they matter
        if "moving" in w.path:
            w.assign(np.random.default_rng(1).uniform(0.5, 1.5, w.shape).astype("float32"))
    return model


def ops_fn(x: tf.Tensor, y: tf.Tensor) -> tuple[tf.Tensor, ...]:
    """Shape, slicing, reduction and elementwise ops users' graphs are made of."""
    a = tf.reshape(x, [2, 3, 4])
    b = tf.transpose(a, [0, 2, 1])
    c = tf.concat([b, b * 2.0], axis=2)
    d = tf.reduce_mean(c, axis=1, keepdims=True) + tf.reduce_sum(c, axis=[1], keepdims=True)
    e = tf.math.rsqrt(tf.square(d) + 1.0) - tf.sqrt(tf.abs(d)) * tf.exp(-tf.abs(d))
    f = tf.stack([tf.tanh(e), tf.sigmoid(e)], axis=0)
    g = tf.squeeze(f[:, :, :, 1:4], axis=2)
    h = tf.matmul(tf.reshape(g, [2, 6]), tf.reshape(y, [6, 5]))
    i = tf.nn.softmax(tf.maximum(h, 0.1) + tf.minimum(h, 0.5))
    j = tf.gather(i, [1, 0, 1], axis=0)
    k = tf.cast(tf.argmax(j, axis=1), tf.float32)
    m = tf.pad(j, [[1, 0], [0, 2]]) / 3.0
    n = tf.tile(tf.expand_dims(k, 1), [1, 2])
    o = tf.where(m > 0.05, m, tf.zeros_like(m))
    p = tf.reduce_max(o, axis=-1) - tf.reduce_min(o, axis=-1)
    q = tf.nn.relu(tf.math.squared_difference(p, 0.25)) + tf.math.log(p + 1.0)
    r = tf.slice(tf.reshape(x, [4, 6]), [1, 2], [2, 3])
    s = tf.nn.leaky_relu(r - 0.5, 0.2) * tf.nn.elu(r) + tf.pow(tf.abs(r), 1.5)
    return h, n, q, s


def freeze(fn: tf.types.experimental.ConcreteFunction) -> tf.compat.v1.GraphDef:
    return convert_variables_to_constants_v2(fn).graph.as_graph_def()


def write(name: str, gd: tf.compat.v1.GraphDef, feeds: dict[str, np.ndarray], text: bool) -> None:
    (HERE / f"{name}.pb").write_bytes(gd.SerializeToString())
    if text:
        (HERE / f"{name}.pbtxt").write_text(str(gd))
    with tf.Graph().as_default() as g:
        tf.graph_util.import_graph_def(gd, name="")
        sinks = _sinks(gd)
        with tf.compat.v1.Session(graph=g) as sess:
            outs = sess.run([f"{s}:0" for s in sinks], {f"{k}:0": v for k, v in feeds.items()})
    arrays = {f"in:{k}": v for k, v in feeds.items()}
    arrays.update({f"out:{s}": o for s, o in zip(sinks, outs, strict=True)})
    np.savez(HERE / f"{name}_io.npz", **arrays)


def _sinks(gd: tf.compat.v1.GraphDef) -> list[str]:
    read = {i.lstrip("^").split(":")[0] for n in gd.node for i in n.input}
    return [n.name for n in gd.node if n.name not in read and n.op != "NoOp"]


def main() -> None:
    model = cnn()
    fn = tf.function(lambda image: model(image, training=False)).get_concrete_function(
        tf.TensorSpec([1, 16, 16, 3], tf.float32, name="image")
    )
    rng = np.random.default_rng(2)
    write("cnn_frozen", freeze(fn), {"image": rng.standard_normal((1, 16, 16, 3), "float32")}, True)
    ops = tf.function(ops_fn).get_concrete_function(
        tf.TensorSpec([24], tf.float32, name="x"), tf.TensorSpec([30], tf.float32, name="y")
    )
    feeds = {
        "x": rng.standard_normal(24).astype("float32"),
        "y": rng.standard_normal(30).astype("float32"),
    }
    write("ops_frozen", freeze(ops), feeds, False)


if __name__ == "__main__":
    main()
