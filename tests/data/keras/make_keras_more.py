"""Make the second set of Keras test files: layers beyond make_keras.py's (padding, cropping,
up-sampling, transposed and separable convolutions, PReLU, group and unit normalization,
recurrent layers, Bidirectional, MultiHeadAttention, Dot, activations), small seeded models
saved as ``.keras`` (and some as legacy ``.h5``) with Keras's own outputs for fixed inputs in
``keras_more_outputs.npz``.

Run with a Python that has TensorFlow 2.21 / Keras 3 (not a test dependency):
``python tests/data/keras/make_keras_more.py``. Files are written beside this script.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import keras
import numpy as np
from keras.src.saving import saving_lib

K = keras
L = keras.layers
HERE = Path(__file__).resolve().parent
NPZ = ("rnn",)
ACTIVATIONS = (
    "gelu",
    "silu",
    "swish",
    "hard_sigmoid",
    "softplus",
    "softsign",
    "selu",
    "exponential",
    "linear",
    "mish",
    "elu",
    "relu6",
    "celu",
    "hard_silu",
    "hard_swish",
    "hard_tanh",
    "soft_shrink",
    "hard_shrink",
    "tanh_shrink",
    "log_sigmoid",
    "log_softmax",
    "sparse_sigmoid",
    "squareplus",
    "sparse_plus",
    "glu",
    "leaky_relu",
    "softmax",
)


def image() -> Any:
    """2D: padding, cropping, nearest and bilinear up-sampling, transposed (same/valid,
    output_padding) and separable convolutions, PReLU, group and unit normalization."""
    x = K.Input((3, 3, 3), name="image")
    y = L.ZeroPadding2D(((1, 0), (2, 1)), name="pad")(x)
    y = L.Cropping2D(((1, 1), (0, 2)), name="crop")(y)
    y = L.UpSampling2D(2, name="up_nearest")(y)
    y = L.Conv2DTranspose(4, 3, strides=2, padding="same", activation="relu", name="tconv_same")(y)
    a = L.Conv2DTranspose(3, 3, strides=2, padding="valid", output_padding=1, name="tconv_op")(y)
    b = L.Conv2DTranspose(3, 2, strides=3, padding="valid", name="tconv_valid")(y)
    y = L.SeparableConv2D(4, 3, padding="same", depth_multiplier=2, name="sep")(y)
    y = L.PReLU(shared_axes=[1, 2], name="prelu")(y)
    y = L.GroupNormalization(groups=2, name="gn")(y)
    y = L.UpSampling2D((2, 3), interpolation="bilinear", name="up_bilinear")(y)
    y = L.Conv2D(2, 3, strides=2, name="down")(y)
    y = L.UnitNormalization(name="unit")(y)
    return K.Model(x, [y, a, b], name="image")


def line() -> Any:
    """1D and 3D: padding, cropping, up-sampling, transposed and separable convolutions."""
    x = K.Input((7, 3), name="line")
    y = L.ZeroPadding1D((1, 2), name="pad1")(x)
    y = L.Cropping1D((2, 1), name="crop1")(y)
    y = L.UpSampling1D(2, name="up1")(y)
    y = L.Conv1DTranspose(4, 3, strides=2, padding="same", name="tconv1")(y)
    t = L.Conv1DTranspose(2, 4, strides=3, output_padding=2, name="tconv1_op")(y)
    y = L.SeparableConv1D(3, 3, depth_multiplier=2, activation="tanh", name="sep1")(y)
    y = L.PReLU(name="prelu1")(y)
    v = K.Input((2, 3, 2, 2), name="volume")
    z = L.ZeroPadding3D(((1, 0), (0, 1), (1, 1)), name="pad3")(v)
    z = L.Cropping3D(((0, 1), (1, 0), (1, 0)), name="crop3")(z)
    z = L.UpSampling3D((1, 2, 2), name="up3")(z)
    z = L.Conv3DTranspose(2, 2, strides=(1, 2, 1), padding="same", name="tconv3")(z)
    return K.Model([x, v], [y, z, t], name="line")


def acts() -> Any:
    """Activation variants, Identity, RepeatVector and Dot on flat vectors."""
    x = K.Input((6,), name="vec")  # scaled so activations see values beyond their kinks
    w = K.Input((6,), name="other")
    wide = L.Rescaling(2.0, name="wide")(x)
    outs = [L.Activation(a, name=f"act_{a}")(wide) for a in ACTIVATIONS]
    y = L.Concatenate(name="acts")(outs)
    y = L.Identity(name="same")(y)
    r = L.RepeatVector(3, name="repeat")(x)
    d = L.Dot(axes=1, name="dot")([x, w])
    n = L.Dot(axes=-1, normalize=True, name="cosine")([x, w])
    s = L.Dot(axes=(2, 2), name="batch_dot")([r, r])
    return K.Model([x, w], [y, r, d, n, s], name="acts")


def rnn() -> Any:
    """LSTM, GRU (reset_after both ways) and SimpleRNN, forwards and backwards, sequences and
    last states, and Bidirectional around them."""
    x = K.Input((5, 4), name="steps")
    y = L.LSTM(6, return_sequences=True, name="lstm")(x)
    y = L.GRU(5, return_sequences=True, name="gru_after")(y)
    y = L.GRU(4, reset_after=False, return_sequences=True, go_backwards=True, name="gru_before")(y)
    last = L.SimpleRNN(3, go_backwards=True, name="rnn_back")(y)
    seq = L.SimpleRNN(3, return_sequences=True, name="rnn_seq")(y)
    back = L.LSTM(3, go_backwards=True, name="lstm_back")(x)
    bi = L.Bidirectional(L.LSTM(3, return_sequences=True), name="bi_lstm")(x)
    bi2 = L.Bidirectional(L.GRU(2), merge_mode="sum", name="bi_gru")(bi)
    bi3 = L.Bidirectional(L.SimpleRNN(2, return_sequences=True), merge_mode="mul", name="bi_rnn")(x)
    plain = L.GRU(2, use_bias=False, activation="relu", name="gru_plain")(x)
    ave = L.Bidirectional(L.LSTM(2, use_bias=False), merge_mode="ave", name="bi_ave")(x)
    cat = L.Bidirectional(L.SimpleRNN(2), name="bi_last")(x)  # concat of the last states
    return K.Model(x, [last, seq, back, bi2, bi3, y, plain, ave, cat], name="rnn")


def attention() -> Any:
    """MultiHeadAttention with and without biases, cross- and self-attention."""
    q = K.Input((4, 6), name="query")
    v = K.Input((5, 6), name="value")
    a = L.MultiHeadAttention(num_heads=2, key_dim=3, name="mha")(q, v)
    b = L.MultiHeadAttention(2, 2, value_dim=3, use_bias=False, output_shape=5, name="mha_nb")(a, a)
    k = K.Input((5, 6), name="key")
    c = L.MultiHeadAttention(3, 2, name="mha_qkv")(q, v, k)
    d = L.MultiHeadAttention(2, 3, name="mha_kw")(query=q, key=k, value=v)  # by keyword
    e = L.MultiHeadAttention(2, 3, name="mha_causal")(d, d, use_causal_mask=True)
    return K.Model([q, v, k], [b, c, e], name="attention")


def _save(outputs: dict[str, np.ndarray]) -> None:
    K.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    models = {"image": image, "line": line, "acts": acts, "rnn": rnn, "attention": attention}
    legacy = ("rnn",)  # the others' legacy .h5 are tf.keras 2's (below)
    for name, make in models.items():
        model = make()
        for layer in model.layers:  # group norm scales and PReLU slopes far from defaults
            if type(layer).__name__ in ("GroupNormalization", "PReLU"):
                layer.set_weights([rng.uniform(0.3, 1.5, w.shape) for w in layer.weights])
        model.save(HERE / f"more_{name}.keras")
        if name in legacy:
            model.save(HERE / f"more_{name}.h5")
        if name in NPZ:  # model.weights.npz (pickled Variables) instead of model.weights.h5
            saving_lib.save_model(model, HERE / f"more_{name}_npz.keras", weights_format="npz")
        xs = [rng.standard_normal((2, *t.shape[1:])).astype("float32") for t in model.inputs]
        got = model(xs if len(xs) > 1 else xs[0], training=False)
        for k, x in enumerate(xs):
            outputs[f"{name}_input_{k}"] = x
        for k, y in enumerate(got if isinstance(got, list | tuple) else [got]):
            outputs[f"{name}_output_{k}"] = np.asarray(y)


def _save_tf2(outputs: dict[str, np.ndarray]) -> None:
    """The models tf.keras 2 (the tf_keras package) can build, as its legacy .h5: the older
    config (inbound_nodes as lists, no shapes) and weight names (``forward_lstm/...``)."""
    global K, L
    try:
        import tf_keras
    except ImportError:
        print("tf_keras is not installed: no *_tf2.h5 files")
        return
    K, L = tf_keras, tf_keras.layers
    K.utils.set_random_seed(0)
    rng = np.random.default_rng(1)
    for name, make in (("image", image), ("line", line), ("rnn", rnn), ("attention", attention)):
        model = make()
        model.save(HERE / f"more_{name}_tf2.h5")
        xs = [rng.standard_normal((2, *t.shape[1:])).astype("float32") for t in model.inputs]
        got = model(xs if len(xs) > 1 else xs[0], training=False)
        for k, x in enumerate(xs):
            outputs[f"{name}_tf2_input_{k}"] = x
        for k, y in enumerate(got if isinstance(got, list | tuple) else [got]):
            outputs[f"{name}_tf2_output_{k}"] = np.asarray(y)


def main() -> None:
    outputs: dict[str, np.ndarray] = {}
    _save(outputs)
    _save_tf2(outputs)
    np.savez(HERE / "keras_more_outputs.npz", **outputs)


if __name__ == "__main__":
    main()
