"""Make the Keras test files: small seeded models saved as ``.keras`` and legacy ``.h5``,
with Keras's own outputs for fixed inputs in ``keras_outputs.npz``.

Run with a Python that has TensorFlow 2.21 / Keras 3 (not a test dependency):
``python tests/data/keras/make_keras.py``. Files are written beside this script.
"""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np
from keras import layers

HERE = Path(__file__).resolve().parent


def cnn() -> keras.Model:
    """A Functional CNN: convolutions, batch norm, a residual Add, pooling, Dense softmax."""
    x = keras.Input((8, 8, 3), name="image")
    y = layers.Conv2D(4, 3, padding="same", name="conv1")(x)
    y = layers.BatchNormalization(name="bn1")(y)
    y = layers.ReLU(name="relu1")(y)
    z = layers.Conv2D(4, 3, padding="same", activation="relu", name="conv2")(y)
    z = layers.DepthwiseConv2D(3, padding="same", name="dw")(z)
    y = layers.Add(name="residual")([y, z])
    y = layers.MaxPooling2D(2, name="maxpool")(y)
    y = layers.Conv2D(6, 3, strides=1, padding="valid", activation="sigmoid", name="conv3")(y)
    y = layers.AveragePooling2D(2, name="avgpool")(y)
    y = layers.GlobalAveragePooling2D(name="gap")(y)
    y = layers.Dense(5, activation="softmax", name="head")(y)
    return keras.Model(x, y, name="cnn")


def mlp() -> keras.Model:
    """A Sequential MLP with Flatten, Reshape, Dropout and several activations."""
    return keras.Sequential(
        [
            keras.Input((2, 5)),
            layers.Flatten(name="flat"),
            layers.Dense(16, activation="relu", name="d1"),
            layers.Dropout(0.3, name="drop"),
            layers.Dense(8, activation="gelu", name="d2"),
            layers.Reshape((2, 4), name="reshape"),
            layers.Activation("tanh", name="act"),
            layers.Flatten(name="flat2"),
            layers.Dense(3, activation="swish", name="d3"),
        ],
        name="mlp",
    )


def text() -> keras.Model:
    """An Embedding + LayerNormalization text head around a nested Functional sub-model
    (Multiply, Concatenate) and a nested Sequential one."""
    inner_in = keras.Input((6, 8), name="inner_in")
    a = layers.Dense(8, activation="silu", name="proj")(inner_in)
    g = layers.Dense(8, activation="sigmoid", name="gate")(inner_in)
    m = layers.Multiply(name="gated")([a, g])
    c = layers.Concatenate(axis=-1, name="cat")([m, inner_in])
    block = keras.Model(inner_in, c, name="block")
    tail = keras.Sequential(
        [keras.Input((96,)), layers.Dense(4, name="logits"), layers.Softmax(name="probs")],
        name="tail",
    )
    ids = keras.Input((6,), dtype="int32", name="ids")
    e = layers.Embedding(20, 8, name="embed")(ids)
    e = layers.LayerNormalization(name="ln")(e)
    h = block(e)
    h = layers.Flatten(name="flat")(h)
    out = tail(h)
    return keras.Model(ids, out, name="text")


def _stir(model: keras.Model, rng: np.random.Generator) -> None:
    """Give batch and layer norm statistics and scales values far from their defaults."""
    for layer in _all_layers(model):
        if isinstance(layer, (layers.BatchNormalization, layers.LayerNormalization)):
            values = [rng.uniform(0.5, 1.5, w.shape).astype("float32") for w in layer.weights]
            layer.set_weights(values)


def _all_layers(model: keras.Model) -> list[keras.layers.Layer]:
    found = []
    for layer in model.layers:
        found.append(layer)
        if isinstance(layer, keras.Model):
            found.extend(_all_layers(layer))
    return found


def main() -> None:
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    feeds = {
        "cnn": rng.standard_normal((2, 8, 8, 3)).astype("float32"),
        "mlp": rng.standard_normal((2, 2, 5)).astype("float32"),
        "text": rng.integers(0, 20, (2, 6)).astype("int32"),
    }
    outputs = {}
    for name, make in (("cnn", cnn), ("mlp", mlp), ("text", text)):
        model = make()
        _stir(model, rng)
        model.save(HERE / f"{name}.keras")
        model.save(HERE / f"{name}.h5")
        outputs[f"{name}_input"] = feeds[name]
        outputs[f"{name}_output"] = np.asarray(model(feeds[name], training=False))
    np.savez(HERE / "keras_outputs.npz", **outputs)


if __name__ == "__main__":
    main()
