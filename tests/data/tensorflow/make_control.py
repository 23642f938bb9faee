"""Make the TensorFlow graphs with functional control flow (While, If) the tests read.

Run with a Python that has tensorflow: ``python tests/data/tensorflow/make_control.py``.
- ``while_frozen.pb``: a tf.function with two tf.while_loops (a counter with an accumulator,
  and a loop over the rows of a tensor), frozen with ``lower_control_flow=False`` so the
  loops stay functional ``While``/``StatelessWhile`` ops calling library functions;
- ``cond_frozen.pb``: a tf.function with a tf.cond on an input, frozen the same way (``If``);
- ``keras_lstm/``: a SavedModel of a small Keras model with an LSTM layer (its serving
  function runs the recurrence as a While).
``<name>_io.npz`` holds the inputs fed and TensorFlow's outputs, keyed ``in:<name>`` and
``out:<name>``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import (
    convert_variables_to_constants_v2,
)

HERE = Path(__file__).resolve().parent


def loops(x: tf.Tensor, n: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """A counter and an accumulator run ``n`` times; a loop over the rows of ``x``."""
    w = tf.constant(np.random.default_rng(3).standard_normal((4, 4)).astype("float32"))

    def body(i: tf.Tensor, acc: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return i + 1, tf.tanh(tf.matmul(acc, w) + tf.cast(i, tf.float32))

    _, acc = tf.while_loop(lambda i, a: i < n, body, [tf.constant(0), x[:1]])

    def rows(k: tf.Tensor, total: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return k + 1, total * 0.5 + tf.gather(x, k)

    _, total = tf.while_loop(lambda k, t: k < tf.shape(x)[0], rows, [0, tf.zeros([4])])
    return tf.identity(acc, name="acc"), tf.identity(total, name="total")


def cond(x: tf.Tensor, flag: tf.Tensor) -> tf.Tensor:
    out = tf.cond(flag > 0.0, lambda: tf.nn.relu(x) * 2.0, lambda: tf.exp(-x) + x)
    return tf.identity(out, name="y")


def freeze(fn: tf.types.experimental.ConcreteFunction) -> tf.compat.v1.GraphDef:
    return convert_variables_to_constants_v2(fn, lower_control_flow=False).graph.as_graph_def()


def write_frozen(
    name: str, fn: tf.types.experimental.ConcreteFunction, feeds: list[dict[str, np.ndarray]]
) -> None:
    """The frozen graph and, for each feed (numbered), its inputs and TensorFlow's outputs."""
    gd = freeze(fn)
    (HERE / f"{name}.pb").write_bytes(gd.SerializeToString())
    print(name, sorted({n.op for n in gd.node}), [f.signature.name for f in gd.library.function])
    read = {i.lstrip("^").split(":")[0] for n in gd.node for i in n.input}
    outs = [n.name for n in gd.node if n.name not in read and n.op != "NoOp"]
    arrays = {}
    for k, feed in enumerate(feeds):
        with tf.Graph().as_default() as g:
            tf.graph_util.import_graph_def(gd, name="")
            with tf.compat.v1.Session(graph=g) as sess:
                got = sess.run([f"{o}:0" for o in outs], {f"{i}:0": v for i, v in feed.items()})
        arrays.update({f"{k}/in:{i}": v for i, v in feed.items()})
        arrays.update({f"{k}/out:{o}": v for o, v in zip(outs, got, strict=True)})
    np.savez(HERE / f"{name}_io.npz", **arrays)


def keras_lstm(rng: np.random.Generator) -> None:
    keras.utils.set_random_seed(0)
    inp = keras.Input((5, 3), name="seq")
    x = keras.layers.LSTM(4, name="lstm")(inp)
    out = keras.layers.Dense(2, name="head")(x)
    model = keras.Model(inp, out)
    folder = HERE / "keras_lstm"
    shutil.rmtree(folder, ignore_errors=True)
    model.export(str(folder), verbose=False)
    fn = tf.saved_model.load(str(folder)).signatures["serving_default"]
    _, specs = fn.structured_input_signature
    feeds = {k: rng.standard_normal((2, 5, 3)).astype("float32") for k in specs}
    outs = fn(**{k: tf.constant(v) for k, v in feeds.items()})
    arrays = {f"0/in:{k}": v for k, v in feeds.items()}
    arrays.update({f"0/out:{k}": v.numpy() for k, v in sorted(outs.items())})
    np.savez(HERE / "keras_lstm_io.npz", **arrays)


def main() -> None:
    rng = np.random.default_rng(0)
    fn = tf.function(loops).get_concrete_function(
        tf.TensorSpec([3, 4], tf.float32, name="x"), tf.TensorSpec([], tf.int32, name="n")
    )
    x = rng.standard_normal((3, 4)).astype("float32")
    feeds = [{"x": x, "n": np.array(n, np.int32)} for n in (0, 4)]
    write_frozen("while_frozen", fn, feeds)
    fn = tf.function(cond).get_concrete_function(
        tf.TensorSpec([2, 3], tf.float32, name="x"), tf.TensorSpec([], tf.float32, name="flag")
    )
    x = rng.standard_normal((2, 3)).astype("float32")
    write_frozen("cond_frozen", fn, [{"x": x, "flag": np.float32(f)} for f in (1.0, -1.0)])
    keras_lstm(rng)


if __name__ == "__main__":
    main()
