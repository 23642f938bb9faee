"""Write more_ops.pb and more_ops_io.npz: a frozen graph of the TF ops TFLite's builtins share
(space/batch blocks of dilated convolutions, 3-D convolutions and pooling, Unique, bicubic
resizing) and what TensorFlow computes for seeded inputs.

Run with TensorFlow installed (not a dependency of xocview):
``python tests/data/tensorflow/make_more_ops.py``. Each result goes through an Identity
``out<k>``; the npz holds ``in:<placeholder>`` and ``out:<sink>``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import (
    convert_variables_to_constants_v2,
)

HERE = Path(__file__).resolve().parent


def _ops(x: tf.Tensor, v: tf.Tensor, g: tf.Tensor, k: tf.Tensor) -> list[tf.Tensor]:
    """x: NHWC 1x9x9x3, v: NDHWC 1x5x6x7x3, g: NDHWC 1x3x3x4x4, k: int32 [12]."""
    consts = np.random.default_rng(5)

    def c(*shape: int) -> tf.Tensor:
        return tf.constant(consts.standard_normal(shape).astype("float32"))

    act = tf.nn.relu(x)  # (an activation: its shape is not in the frozen graph)
    blocks = tf.space_to_batch_nd(act, [2, 3], [[1, 2], [0, 3]])
    raw = tf.raw_ops
    return [
        tf.nn.atrous_conv2d(x, c(3, 3, 3, 4), rate=2, padding="SAME"),
        tf.nn.atrous_conv2d(act, c(2, 2, 3, 2), rate=3, padding="VALID"),
        blocks,
        tf.batch_to_space(tf.nn.relu(blocks), [2, 3], [[1, 0], [2, 1]]),
        tf.nn.conv3d(v, c(3, 3, 3, 3, 4), [1, 1, 2, 2, 1], "SAME"),
        tf.nn.conv3d(tf.nn.relu(v), c(2, 3, 2, 3, 2), [1, 2, 1, 1, 1], "VALID"),
        tf.nn.conv3d_transpose(
            tf.nn.relu(g), c(3, 3, 3, 2, 4), [1, 5, 6, 7, 2], [1, 2, 2, 2, 1], "SAME"
        ),
        tf.nn.conv3d_transpose(g, c(2, 2, 3, 3, 4), [1, 7, 6, 13, 3], [1, 2, 2, 3, 1], "VALID"),
        *tf.unique(k),
        *tf.unique(k * 2, out_idx=tf.int64),
        tf.nn.max_pool3d(v, [2, 2, 3], [2, 2, 2], "SAME"),
        tf.nn.avg_pool3d(tf.nn.relu(v), [2, 3, 2], [1, 2, 2], "SAME"),
        tf.nn.max_pool3d(v, 2, 1, "VALID"),
        tf.image.resize(x, [13, 11], method="bicubic"),
        raw.ResizeBicubic(images=act, size=[5, 14], align_corners=False),
        raw.ResizeBicubic(images=x, size=[12, 7], align_corners=True),
    ]


def main() -> None:
    rng = np.random.default_rng(32)

    def fn(x: tf.Tensor, v: tf.Tensor, g: tf.Tensor, k: tf.Tensor) -> list[tf.Tensor]:
        return [tf.identity(o, name=f"out{j}") for j, o in enumerate(_ops(x, v, g, k))]

    concrete = tf.function(fn).get_concrete_function(
        tf.TensorSpec([1, 9, 9, 3], tf.float32, name="x"),
        tf.TensorSpec([1, 5, 6, 7, 3], tf.float32, name="v"),
        tf.TensorSpec([1, 3, 3, 4, 4], tf.float32, name="g"),
        tf.TensorSpec([12], tf.int32, name="k"),
    )
    gd = convert_variables_to_constants_v2(concrete).graph.as_graph_def()
    (HERE / "more_ops.pb").write_bytes(gd.SerializeToString())
    feeds = {
        "x": rng.standard_normal((1, 9, 9, 3)).astype("float32"),
        "v": rng.standard_normal((1, 5, 6, 7, 3)).astype("float32"),
        "g": rng.standard_normal((1, 3, 3, 4, 4)).astype("float32"),
        "k": rng.integers(-4, 5, 12).astype("int32"),
    }
    read = {i.lstrip("^").split(":")[0] for n in gd.node for i in n.input}
    sinks = [n.name for n in gd.node if n.name not in read and n.op != "NoOp"]
    with tf.Graph().as_default() as graph:
        tf.graph_util.import_graph_def(gd, name="")
        with tf.compat.v1.Session(graph=graph) as sess:
            outs = sess.run([f"{s}:0" for s in sinks], {f"{k}:0": v for k, v in feeds.items()})
    arrays = {f"in:{k}": v for k, v in feeds.items()}
    arrays.update({f"out:{s}": o for s, o in zip(sinks, outs, strict=True)})
    np.savez(HERE / "more_ops_io.npz", **arrays)
    print(sorted({n.op for n in gd.node}))


if __name__ == "__main__":
    main()
