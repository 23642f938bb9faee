"""Write what TensorFlow computes, for the run tests of the TF -> ONNX op mapping.

Run with TensorFlow installed (not a dependency of xocview):
``python tests/data/tensorflow/make_runs.py``. For each SavedModel folder it writes
``<name>_run.npz`` holding ``in:<signature input>`` (seeded values, batch 2) and
``out:<signature output>`` (what the ``serving_default`` signature returns for them). It also
writes ``mapped_ops.pb``, a frozen graph of the mapped ops the other files do not use (each
result through an Identity), and ``mapped_ops_io.npz`` with its inputs and TensorFlow's outputs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import (
    convert_variables_to_constants_v2,
)

HERE = Path(__file__).resolve().parent
NAMES = ("keras_cnn", "module_vars")


def write(name: str, rng: np.random.Generator) -> None:
    fn = tf.saved_model.load(str(HERE / name)).signatures["serving_default"]
    _, specs = fn.structured_input_signature
    feeds = {}
    for key, spec in sorted(specs.items()):
        shape = [2 if d is None else d for d in spec.shape.as_list()]
        feeds[key] = rng.standard_normal(shape).astype(spec.dtype.as_numpy_dtype)
    outs = fn(**{k: tf.constant(v) for k, v in feeds.items()})
    arrays = {f"in:{k}": v for k, v in feeds.items()}
    arrays.update({f"out:{k}": v.numpy() for k, v in sorted(outs.items())})
    np.savez(HERE / f"{name}_run.npz", **arrays)


def _image_ops(x: tf.Tensor, rng: np.random.Generator) -> list[tf.Tensor]:
    """Layout ops on an NHWC image ``x`` of 1x8x8x4."""
    raw = tf.raw_ops

    def c(*shape: int) -> tf.Tensor:
        return tf.constant(rng.standard_normal(shape).astype("float32"))

    up = c(3, 3, 2, 4)
    return [
        raw.Conv2DBackpropInput(
            input_sizes=[1, 16, 16, 2],
            filter=up,
            out_backprop=x,
            strides=[1, 2, 2, 1],
            padding="SAME",
        ),
        raw.Conv2DBackpropInput(
            input_sizes=[1, 17, 17, 2],
            filter=up,
            out_backprop=x,
            strides=[1, 2, 2, 1],
            padding="VALID",
        ),
        raw.DepthwiseConv2dNative(
            input=x,
            filter=c(3, 3, 4, 2),
            strides=[1, 2, 2, 1],
            padding="SAME",
        ),
        raw.Conv2D(
            input=x,
            filter=c(2, 3, 4, 3),
            strides=[1, 2, 1, 1],
            padding="EXPLICIT",
            explicit_paddings=[0, 0, 1, 2, 2, 1, 0, 0],
        ),
        raw.FusedBatchNormV3(
            x=x,
            scale=c(4),
            offset=c(4),
            mean=c(4),
            variance=tf.abs(c(4)) + 0.5,
            epsilon=1e-3,
            is_training=False,
        )[0],
        raw.MaxPool(input=x, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="VALID"),
        raw.AvgPool(value=x, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME"),
        raw.ResizeBilinear(images=x, size=[11, 5], half_pixel_centers=True),
        raw.ResizeBilinear(images=x, size=[11, 5], align_corners=True),
        raw.ResizeNearestNeighbor(images=x, size=[13, 6], half_pixel_centers=True),
        raw.ResizeNearestNeighbor(images=x, size=[13, 6], align_corners=True),
        raw.ResizeNearestNeighbor(images=x, size=[13, 6]),
        raw.DepthToSpace(input=raw.SpaceToDepth(input=x, block_size=2) * 2.0, block_size=2),
        raw.SpaceToDepth(input=x, block_size=2),
        raw.MirrorPad(input=x, paddings=[[0, 0], [1, 2], [2, 1], [0, 0]], mode="REFLECT"),
        raw.PadV2(input=x, paddings=[[0, 0], [1, 0], [0, 2], [1, 1]], constant_values=-2.0),
        x[..., 1:3],
        x[:, tf.newaxis, 2],
        x[0, ::-1, 1],
        x[0, ..., ::2],
        x[:, -1, 3:0:-2, tf.newaxis],
    ]


def _math_ops(v: tf.Tensor, k: tf.Tensor, rng: np.random.Generator) -> list[tf.Tensor]:
    """Elementwise, reduction and shape ops on ``v`` (2x3x5 float) and ``k`` (6 int32)."""
    raw = tf.raw_ops
    w = tf.constant(rng.standard_normal((5, 4)).astype("float32"))
    flat = tf.reshape(v, [6, 5])
    parts = raw.Unpack(value=v, num=3, axis=1)
    return [
        raw.BatchMatMulV2(x=v, y=v, adj_x=True),
        raw.BatchMatMulV2(x=v, y=v, adj_y=True),
        raw.MatMul(a=w, b=flat, transpose_a=True, transpose_b=True),
        raw.FloorDiv(x=v * 4.0, y=tf.constant(-1.5)),
        raw.FloorMod(x=v * 4.0, y=tf.constant(-1.5)),
        raw.FloorDiv(x=k, y=tf.constant(-4)),
        raw.FloorMod(x=k, y=tf.constant(-4)),
        tf.cast(raw.NotEqual(x=raw.Round(x=v), y=tf.zeros_like(v)), tf.float32),
        tf.cast(raw.LogicalOr(x=v > 0.5, y=raw.LogicalAnd(x=v < -0.5, y=v > -1.0)), tf.int32),
        raw.Select(condition=v > 0, x=raw.Softplus(features=v), y=raw.Selu(features=v)),
        raw.LogSoftmax(logits=v) + raw.Erf(x=v) + raw.Relu6(features=v * 8.0),
        raw.Sign(x=v) + raw.Ceil(x=v) + raw.Floor(x=v) + raw.Reciprocal(x=v + 3.0),
        raw.Prod(input=v, axis=[0, 2], keep_dims=True),
        raw.Sum(input=v, axis=-1, keep_dims=False),
        raw.ArgMin(input=v, dimension=1, output_type=tf.int32),
        raw.TopKV2(input=flat, k=3)[0],
        raw.TopKV2(input=flat, k=3)[1],
        raw.AddN(inputs=[v, v, v * 2.0]),
        raw.Einsum(inputs=[v, w], equation="bij,jk->bik"),
        raw.Fill(dims=raw.Shape(input=v), value=2.5) + raw.OnesLike(x=v) - raw.ZerosLike(x=v),
        raw.Range(start=1, limit=raw.Size(input=k), delta=2),
        raw.Pack(values=list(parts), axis=-1),
        raw.SplitV(value=v, size_splits=[1, -1], axis=2, num_split=2)[1],
        raw.Split(axis=1, value=v, num_split=3)[2],
        raw.Concat(concat_dim=0, values=[v, v]),
        raw.Tile(input=v, multiples=[1, 2, 1]),
        raw.Transpose(x=v, perm=[2, 0, 1]),
        raw.PlaceholderWithDefault(input=v, shape=[2, 3, 5]) * 3.0,
        raw.Log1p(x=tf.abs(v)) + raw.Expm1(x=v),
    ]


def _extra_ops(x: tf.Tensor, v: tf.Tensor, k: tf.Tensor, rng: np.random.Generator) -> list:
    """The ops mapped after the first set: gathers, scatters, logical reductions, LRN..."""
    raw = tf.raw_ops

    def c(*shape: int) -> tf.Tensor:
        return tf.constant(rng.standard_normal(shape).astype("float32"))

    return [
        raw.ReverseV2(tensor=v, axis=[0, 2]),
        raw.GatherNd(params=v, indices=[[0, 1], [1, 2]]),
        raw.ScatterNd(indices=[[1], [3], [1]], updates=c(3, 4), shape=[5, 4]),
        raw.BroadcastTo(input=c(3, 1), shape=[2, 3, 4]),
        raw.OneHot(indices=k % 5 - 1, depth=4, on_value=2.0, off_value=-1.0, axis=-1),
        raw.Where(condition=v > 0),
        raw.ClipByValue(t=v, clip_value_min=-0.5, clip_value_max=0.7),
        raw.Rank(input=v),
        raw.All(input=v > -1.0, axis=[1], keep_dims=False),
        raw.Any(input=v > 1.0, axis=[0, 2], keep_dims=True),
        raw.Cumsum(x=v, axis=1, exclusive=True, reverse=True),
        raw.IsFinite(x=raw.Log(x=v)),
        raw.IsInf(x=raw.Reciprocal(x=raw.Round(x=v))),
        raw.EuclideanNorm(input=v, axis=[2], keep_dims=True),
        raw.MaxPoolV2(input=x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME"),
        raw.LRN(input=x, depth_radius=1, bias=1.0, alpha=0.5, beta=0.75),
        raw.BiasAddV1(value=x, bias=c(4)),
    ]


def mapped_ops(rng: np.random.Generator) -> None:
    consts = np.random.default_rng(7)

    def fn(x: tf.Tensor, v: tf.Tensor, k: tf.Tensor) -> list[tf.Tensor]:
        outs = _image_ops(x, consts) + _math_ops(v, k, consts) + _extra_ops(x, v, k, consts)
        return [tf.identity(o, name=f"out{j}") for j, o in enumerate(outs)]

    concrete = tf.function(fn).get_concrete_function(
        tf.TensorSpec([1, 8, 8, 4], tf.float32, name="x"),
        tf.TensorSpec([2, 3, 5], tf.float32, name="v"),
        tf.TensorSpec([6], tf.int32, name="k"),
    )
    gd = convert_variables_to_constants_v2(concrete).graph.as_graph_def()
    (HERE / "mapped_ops.pb").write_bytes(gd.SerializeToString())
    feeds = {
        "x": rng.standard_normal((1, 8, 8, 4)).astype("float32"),
        "v": rng.standard_normal((2, 3, 5)).astype("float32"),
        "k": rng.integers(-20, 20, 6).astype("int32"),
    }
    read = {i.lstrip("^").split(":")[0] for n in gd.node for i in n.input}
    sinks = [n.name for n in gd.node if n.name not in read and n.op != "NoOp"]
    with tf.Graph().as_default() as g:
        tf.graph_util.import_graph_def(gd, name="")
        with tf.compat.v1.Session(graph=g) as sess:
            outs = sess.run([f"{s}:0" for s in sinks], {f"{k}:0": v for k, v in feeds.items()})
    arrays = {f"in:{k}": v for k, v in feeds.items()}
    arrays.update({f"out:{s}": o for s, o in zip(sinks, outs, strict=True)})
    np.savez(HERE / "mapped_ops_io.npz", **arrays)


def main() -> None:
    rng = np.random.default_rng(32)
    for name in NAMES:
        write(name, rng)
    mapped_ops(rng)


if __name__ == "__main__":
    main()
