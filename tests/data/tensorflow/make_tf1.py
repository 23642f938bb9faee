"""Make a TF1-style SavedModel (graph mode, VariableV2 variables, no functions) and its outputs.

Run with a Python that has tensorflow: ``python tests/data/tensorflow/make_tf1.py``. Writes
``tf1_mlp/`` (``tf.compat.v1.saved_model.simple_save`` of a seeded two-layer network) and
``tf1_mlp_io.npz`` (``x`` and TensorFlow's ``y``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf

HERE = Path(__file__).resolve().parent
v1 = tf.compat.v1


def main() -> None:
    folder = HERE / "tf1_mlp"
    shutil.rmtree(folder, ignore_errors=True)
    rng = np.random.default_rng(11)
    x_value = rng.standard_normal((3, 6)).astype(np.float32)
    with tf.Graph().as_default(), v1.Session() as sess:
        x = v1.placeholder(tf.float32, [None, 6], name="x")
        with v1.variable_scope("hidden"):
            w1 = v1.get_variable("kernel", initializer=rng.standard_normal((6, 8)).astype("f"))
            b1 = v1.get_variable("bias", initializer=rng.standard_normal(8).astype("f"))
            h = tf.nn.relu(tf.matmul(x, w1) + b1)
        with v1.variable_scope("out"):
            w2 = v1.get_variable("kernel", initializer=rng.standard_normal((8, 3)).astype("f"))
            y = tf.nn.softmax(tf.matmul(h, w2), name="y")
        sess.run(v1.global_variables_initializer())
        y_value = sess.run(y, {x: x_value})
        v1.saved_model.simple_save(sess, str(folder), {"x": x}, {"y": y})
    np.savez(HERE / "tf1_mlp_io.npz", x=x_value, y=y_value)


if __name__ == "__main__":
    v1.disable_eager_execution()
    main()
