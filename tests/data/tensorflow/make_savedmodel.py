"""Make the TensorFlow SavedModel test folders and the values TensorFlow reads from them.

Run with a Python that has TensorFlow 2.21 / Keras 3 (not a test dependency):
``python tests/data/tensorflow/make_savedmodel.py``. Folders are written beside this script:

- ``keras_cnn/``: a tiny Keras Functional model (Conv2D, BatchNormalization, Dense) exported
  with ``model.export`` (the order of its ``_all_variables`` keys changes from run to run, the
  values do not);
- ``module_vars/``: a ``tf.Module`` with variables of several dtypes (float32, float16, int64,
  bool, string) and enough of them that the index block has several restart points, saved
  with ``tf.saved_model.save``;
- ``module_shards/``: the same module saved in several shards (a shard size policy larger than
  any one numeric variable, so none is cut into slices), so that
  ``variables.data-0000K-of-0000N`` has N > 1.

``<name>_values.npz`` holds every checkpoint key's value as ``tf.train.load_checkpoint`` reads
it. A string tensor is stored as two arrays, ``<key>#lengths`` (int64, one per element, in the
tensor's shape) and ``<key>#bytes`` (uint8, the elements concatenated), so that bytes with
trailing NULs survive.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

HERE = Path(__file__).resolve().parent


def keras_cnn() -> Any:
    """A Functional model: Conv2D, BatchNormalization, ReLU, pooling, Dense."""
    keras.utils.set_random_seed(32)
    x = keras.Input((6, 6, 3), name="image")
    y = keras.layers.Conv2D(4, 3, padding="same", name="conv")(x)
    y = keras.layers.BatchNormalization(name="bn")(y)
    y = keras.layers.ReLU(name="relu")(y)
    y = keras.layers.GlobalAveragePooling2D(name="gap")(y)
    y = keras.layers.Dense(3, name="head")(y)
    model = keras.Model(x, y, name="cnn")
    bn = model.get_layer("bn")
    rng = np.random.default_rng(32)
    # Non-trivial moving statistics, so that they differ from their initial 0 and 1.
    bn.moving_mean.assign(rng.normal(size=4).astype(np.float32))
    bn.moving_variance.assign(rng.uniform(0.5, 2.0, size=4).astype(np.float32))
    return model


class Vars(tf.Module):
    """Variables of several dtypes and a function that uses them."""

    def __init__(self) -> None:
        super().__init__()
        rng = np.random.default_rng(32)
        self.w32 = tf.Variable(rng.normal(size=(3, 5)).astype(np.float32), name="w32")
        self.w16 = tf.Variable(rng.normal(size=(4,)).astype(np.float16), name="w16")
        self.count = tf.Variable(np.array([1, -2, 2**40], dtype=np.int64), name="count")
        self.flags = tf.Variable(np.array([[True, False], [False, True]]), name="flags")
        self.scalar = tf.Variable(np.float32(2.5), name="scalar")
        self.words = tf.Variable(
            tf.constant([b"hello", b"", b"w\x00rld\x00", "\u00e9t\u00e9".encode()]),
            name="words",
        )
        self.empty = tf.Variable(np.zeros((0, 3), dtype=np.float32), name="empty")
        # Enough keys for several restart points (TensorFlow restarts every 16 keys).
        self.many = [
            tf.Variable(rng.integers(-9, 9, size=(i % 3 + 1,)).astype(np.int32), name=f"m{i}")
            for i in range(40)
        ]

    @tf.function(input_signature=[tf.TensorSpec((None, 3), tf.float32)])
    def __call__(self, x: Any) -> Any:
        return tf.matmul(x, self.w32) * self.scalar


def save_values(folder: Path, out: Path) -> None:
    """Every checkpoint key's value as TensorFlow reads it, into ``out``."""
    reader = tf.train.load_checkpoint(str(folder / "variables" / "variables"))
    arrays: dict[str, np.ndarray] = {}
    for key in sorted(reader.get_variable_to_shape_map()):
        got = reader.get_tensor(key)
        # np.asarray(b"...") would be an "S" array, which drops trailing NULs.
        value = np.array(got, dtype=object) if isinstance(got, bytes) else np.asarray(got)
        if value.dtype == object:
            items = [bytes(v) for v in value.reshape(-1)]
            lengths = np.array([len(v) for v in items], dtype=np.int64).reshape(value.shape)
            arrays[key + "#lengths"] = lengths
            arrays[key + "#bytes"] = np.frombuffer(b"".join(items), dtype=np.uint8)
        else:
            arrays[key] = value
    np.savez(out, **arrays)


def fresh(name: str) -> Path:
    folder = HERE / name
    if folder.exists():
        shutil.rmtree(folder)
    return folder


def main() -> None:
    tf.random.set_seed(32)
    folder = fresh("keras_cnn")
    keras_cnn().export(str(folder), verbose=False)
    save_values(folder, HERE / "keras_cnn_values.npz")

    folder = fresh("module_vars")
    tf.saved_model.save(Vars(), str(folder))
    save_values(folder, HERE / "module_vars_values.npz")

    folder = fresh("module_shards")
    policy = tf.train.experimental.MaxShardSizePolicy(max_shard_size=256)
    options = tf.saved_model.SaveOptions(experimental_sharding_callback=policy)
    tf.saved_model.save(Vars(), str(folder), options=options)
    save_values(folder, HERE / "module_shards_values.npz")


if __name__ == "__main__":
    main()
