"""One seeded Keras model written four ways by the real tools, and TensorFlow's outputs.

Run with a Python that has tensorflow, keras and tf2onnx (none is a test dependency):
``python tests/data/same_model/make_same_model.py``. Writes beside this script:

- ``saved_model/``: ``model.export`` (a SavedModel with its variables);
- ``model.tflite``: the LiteRT converter's float model, from that SavedModel;
- ``model.onnx``: tf2onnx's conversion of the SavedModel's serving signature (opset 17);
- ``model.keras``: ``model.save``;
- ``io.npz``: ``image`` (a seeded input, batch 2) and ``output`` (Keras's own output).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import tensorflow as tf
import tf2onnx

HERE = Path(__file__).resolve().parent


def model() -> keras.Model:
    keras.utils.set_random_seed(7)
    x = keras.Input((12, 12, 3), name="image")
    y = keras.layers.Conv2D(8, 3, strides=2, padding="same", name="stem")(x)
    y = keras.layers.BatchNormalization(name="bn")(y)
    y = keras.layers.ReLU(6.0, name="relu6")(y)
    y = keras.layers.DepthwiseConv2D(3, padding="same", activation="relu", name="dw")(y)
    y = keras.layers.Conv2D(12, 1, activation="sigmoid", name="project")(y)
    y = keras.layers.MaxPooling2D(2, name="pool")(y)
    y = keras.layers.GlobalAveragePooling2D(name="gap")(y)
    y = keras.layers.Dense(16, activation="tanh", name="fc")(y)
    y = keras.layers.Dense(5, activation="softmax", name="head")(y)
    m = keras.Model(x, y, name="same")
    rng = np.random.default_rng(7)
    bn = m.get_layer("bn")
    bn.moving_mean.assign(rng.normal(size=8).astype(np.float32))
    bn.moving_variance.assign(rng.uniform(0.5, 2.0, size=8).astype(np.float32))
    return m


def main() -> None:
    m = model()
    folder = HERE / "saved_model"
    shutil.rmtree(folder, ignore_errors=True)
    m.export(str(folder))
    shutil.rmtree(folder / "assets", ignore_errors=True)
    (folder / "fingerprint.pb").unlink(missing_ok=True)
    m.save(HERE / "model.keras")
    converter = tf.lite.TFLiteConverter.from_saved_model(str(folder))
    (HERE / "model.tflite").write_bytes(converter.convert())
    loaded = tf.saved_model.load(str(folder))  # kept: the signature refers to its variables
    serving = loaded.signatures["serving_default"]
    spec = [tf.TensorSpec([None, 12, 12, 3], tf.float32, name="image")]
    proto, _ = tf2onnx.convert.from_function(
        tf.function(lambda image: serving(image=image)), input_signature=spec, opset=17
    )
    (HERE / "model.onnx").write_bytes(proto.SerializeToString())
    image = np.random.default_rng(8).standard_normal((2, 12, 12, 3)).astype(np.float32)
    np.savez(HERE / "io.npz", image=image, output=m(image, training=False).numpy())


if __name__ == "__main__":
    main()
