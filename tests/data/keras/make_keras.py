"""Make the Keras test files: small seeded models saved as ``.keras`` and legacy ``.h5``,
with Keras's own outputs for fixed inputs in ``keras_outputs.npz``.

Run with a Python that has TensorFlow 2.21 / Keras 3 (not a test dependency):
``python tests/data/keras/make_keras.py``. Files are written beside this script.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import keras
import numpy as np

HERE = Path(__file__).resolve().parent


def cnn(K: Any) -> Any:
    """A Functional CNN: convolutions, batch norm, a residual Add, pooling, Dense softmax."""
    x = K.Input((8, 8, 3), name="image")
    y = K.layers.Conv2D(4, 3, padding="same", name="conv1")(x)
    y = K.layers.BatchNormalization(name="bn1")(y)
    y = K.layers.ReLU(name="relu1")(y)
    z = K.layers.Conv2D(4, 3, padding="same", activation="relu", name="conv2")(y)
    z = K.layers.DepthwiseConv2D(3, padding="same", name="dw")(z)
    y = K.layers.Add(name="residual")([y, z])
    y = K.layers.MaxPooling2D(2, name="maxpool")(y)
    y = K.layers.Conv2D(6, 3, strides=1, padding="valid", activation="sigmoid", name="conv3")(y)
    y = K.layers.AveragePooling2D(2, name="avgpool")(y)
    y = K.layers.GlobalAveragePooling2D(name="gap")(y)
    y = K.layers.Dense(5, activation="softmax", name="head")(y)
    return K.Model(x, y, name="cnn")


def mlp(K: Any) -> Any:
    """A Sequential MLP with Flatten, Reshape, Dropout and several activations."""
    return K.Sequential(
        [
            K.Input((2, 5)),
            K.layers.Flatten(name="flat"),
            K.layers.Dense(16, activation="relu", name="d1"),
            K.layers.Dropout(0.3, name="drop"),
            K.layers.Dense(8, activation="gelu", name="d2"),
            K.layers.Reshape((2, 4), name="reshape"),
            K.layers.Activation("tanh", name="act"),
            K.layers.Flatten(name="flat2"),
            K.layers.Dense(3, activation="swish", name="d3"),
        ],
        name="mlp",
    )


def text(K: Any) -> Any:
    """An Embedding + LayerNormalization text head around a nested Functional sub-model
    (Multiply, Concatenate) and a nested Sequential one."""
    inner_in = K.Input((6, 8), name="inner_in")
    a = K.layers.Dense(8, activation="silu", name="proj")(inner_in)
    g = K.layers.Dense(8, activation="sigmoid", name="gate")(inner_in)
    m = K.layers.Multiply(name="gated")([a, g])
    c = K.layers.Concatenate(axis=-1, name="cat")([m, inner_in])
    block = K.Model(inner_in, c, name="block")
    tail = K.Sequential(
        [K.Input((96,)), K.layers.Dense(4, name="logits"), K.layers.Softmax(name="probs")],
        name="tail",
    )
    ids = K.Input((6,), dtype="int32", name="ids")
    e = K.layers.Embedding(20, 8, name="embed")(ids)
    e = K.layers.LayerNormalization(name="ln")(e)
    h = block(e)
    h = K.layers.Flatten(name="flat")(h)
    out = tail(h)
    return K.Model(ids, out, name="text")


def pair(K: Any) -> Any:
    """Two inputs through one shared (twice-called) Conv1D branch, merged several ways."""
    a = K.Input((10, 3), name="left")
    b = K.Input((10, 3), name="right")
    conv = K.layers.Conv1D(4, 3, padding="same", name="shared_conv")
    pool = K.layers.MaxPooling1D(2, name="pool")
    ya, yb = pool(conv(a)), pool(conv(b))
    diff = K.layers.Subtract(name="diff")([ya, yb])
    most = K.layers.Maximum(name="most")([ya, yb])
    mean = K.layers.Average(name="mean")([ya, yb, diff])
    y = K.layers.Concatenate(axis=1, name="join")([diff, most, mean])
    y = K.layers.LeakyReLU(0.1, name="leaky")(y)
    y = K.layers.Permute((2, 1), name="swap")(y)
    y = K.layers.Rescaling(0.5, offset=0.25, name="rescale")(y)
    y = K.layers.GlobalMaxPooling1D(name="gmp")(y)
    return K.Model([a, b], [y, diff], name="pair")


def _stir(model: Any, rng: np.random.Generator) -> None:
    """Give batch and layer norm statistics and scales values far from their defaults."""
    for layer in _all_layers(model):
        if type(layer).__name__ in ("BatchNormalization", "LayerNormalization"):
            values = [rng.uniform(0.5, 1.5, w.shape).astype("float32") for w in layer.weights]
            layer.set_weights(values)


def _all_layers(model: Any) -> list[Any]:
    found = []
    for layer in model.layers:
        found.append(layer)
        if hasattr(layer, "layers"):
            found.extend(_all_layers(layer))
    return found


def _save(K: Any, tag: str, suffixes: tuple[str, ...], outputs: dict[str, np.ndarray]) -> None:
    """Each model saved with each suffix, its seeded inputs and Keras's outputs recorded."""
    K.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    feeds = {
        "cnn": [rng.standard_normal((2, 8, 8, 3)).astype("float32")],
        "mlp": [rng.standard_normal((2, 2, 5)).astype("float32")],
        "text": [rng.integers(0, 20, (2, 6)).astype("int32")],
        "pair": [rng.standard_normal((2, 10, 3)).astype("float32") for _ in range(2)],
    }
    for name, make in (("cnn", cnn), ("mlp", mlp), ("text", text), ("pair", pair)):
        model = make(K)
        _stir(model, rng)
        for suffix in suffixes:
            model.save(HERE / f"{name}{suffix}")
        xs = feeds[name]
        got = model(xs if len(xs) > 1 else xs[0], training=False)
        for k, x in enumerate(xs):
            outputs[f"{name}{tag}_input_{k}"] = x
        for k, y in enumerate(got if isinstance(got, list | tuple) else [got]):
            outputs[f"{name}{tag}_output_{k}"] = np.asarray(y)


def main() -> None:
    outputs: dict[str, np.ndarray] = {}
    _save(keras, "", (".keras", ".h5"), outputs)
    try:  # tf.keras 2 (the tf_keras package) writes the older legacy config and weight names
        import tf_keras
    except ImportError:
        print("tf_keras is not installed: no *_tf2.h5 files")
    else:
        _save(tf_keras, "_tf2", ("_tf2.h5",), outputs)
    np.savez(HERE / "keras_outputs.npz", **outputs)


if __name__ == "__main__":
    main()
