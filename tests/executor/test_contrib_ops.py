"""onnxruntime's com.microsoft transformer ops, one node per model, against onnxruntime: the
attribute, input-layout and mask variants its documentation lists. Where onnxruntime's CPU
kernel lacks a documented variant (Attention's 4-D mask, MultiHeadAttention's packed inputs,
BiasAdd), ours is held to an equivalent form onnxruntime runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from tests.executor.contrib_reference import TensorProto, check_node, int32, node_model, our_outputs
from xocview.errors import RunError

RNG = np.random.default_rng(29)


def r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# --- activations and products ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "inputs", "attrs"),
    [
        ("Gelu", [r(2, 3, 4)], {}),
        ("FastGelu", [r(2, 3, 4), r(4)], {}),
        ("FastGelu", [r(2, 3, 4)], {}),
        ("BiasGelu", [r(2, 3, 4), r(4)], {}),
        ("QuickGelu", [r(2, 3, 4)], {}),
        ("QuickGelu", [r(2, 3, 4)], {"alpha": 1.3}),
    ],
)
def test_activations(
    tmp_path: Path, op: str, inputs: list[np.ndarray], attrs: dict[str, Any]
) -> None:
    check_node(tmp_path, op, inputs, attrs)


def test_bias_add_is_x_plus_bias_plus_skip(tmp_path: Path) -> None:
    """onnxruntime has BiasAdd on CUDA only: the documented sum is the yardstick."""
    x, bias, skip = r(2, 3, 4), r(4), r(2, 3, 4)
    model, feeds, _ = node_model("BiasAdd", [x, bias, skip])
    onnx.save(model, tmp_path / "m.onnx")
    got = our_outputs(tmp_path / "m.onnx", feeds)["y0"]
    np.testing.assert_allclose(got, x + bias + skip, rtol=1e-6)


@pytest.mark.parametrize(
    ("a", "b", "attrs"),
    [
        ((2, 3, 4), (2, 4, 5), {"alpha": 0.5}),
        ((2, 4, 3), (2, 5, 4), {"transA": 1, "transB": 1}),
        ((3, 2, 4), (2, 4, 5), {"transBatchA": 1}),
        ((4, 2, 3), (2, 4, 5), {"transBatchA": 1, "transA": 1}),
        ((2, 3, 4), (4, 2, 5), {"transBatchB": 1}),
        ((2, 3, 4), (5, 2, 4), {"transBatchB": 1, "transB": 1, "alpha": 2.0}),
        ((3, 2, 6, 4), (2, 6, 4, 5), {"transBatchA": 1}),
        ((3, 4), (4, 5), {}),
    ],
)
def test_fused_matmul(
    tmp_path: Path, a: tuple[int, ...], b: tuple[int, ...], attrs: dict[str, Any]
) -> None:
    check_node(tmp_path, "FusedMatMul", [r(*a), r(*b)], attrs)


@pytest.mark.parametrize(
    ("activation", "params"),
    [
        ("Relu", None),
        ("Tanh", None),
        ("Sigmoid", None),
        ("LeakyRelu", [0.2]),
        ("Clip", [-0.5, 0.7]),
        ("HardSigmoid", [0.3, 0.4]),
    ],
)
@pytest.mark.parametrize("with_sum", [False, True])
def test_fused_conv(
    tmp_path: Path, activation: str, params: list[float] | None, with_sum: bool
) -> None:
    attrs: dict[str, Any] = {"activation": activation, "pads": [1, 1, 1, 1], "strides": [1, 1]}
    if params:
        attrs["activation_params"] = params
    inputs = [r(1, 3, 5, 5), r(4, 3, 3, 3), r(4)] + ([r(1, 4, 5, 5)] if with_sum else [])
    check_node(tmp_path, "FusedConv", inputs, attrs)


# --- normalisations -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "outputs"),
    [
        ([r(2, 3, 8), r(2, 3, 8), r(8), r(8), r(8)], 4),
        ([r(2, 3, 8), r(3, 8), r(8)], 1),
        ([r(2, 3, 8), r(1, 3, 8), r(8), r(8)], ["y0", "", "", "y3"]),
        ([r(6, 8), r(6, 8), r(8), None, r(8)], 4),
    ],
)
def test_skip_layer_normalization(
    tmp_path: Path, inputs: list[np.ndarray | None], outputs: Any
) -> None:
    check_node(tmp_path, "SkipLayerNormalization", inputs, {"epsilon": 1e-5}, outputs=outputs)


@pytest.mark.parametrize("inputs", [[r(2, 3, 8), r(2, 3, 8), r(8), r(8)], [r(6, 8), r(6, 8), r(8)]])
def test_skip_simplified_layer_normalization(tmp_path: Path, inputs: list[np.ndarray]) -> None:
    check_node(tmp_path, "SkipSimplifiedLayerNormalization", inputs, outputs=["y0", "", "y2", "y3"])


@pytest.mark.parametrize(("scale", "attrs"), [((8,), {"epsilon": 1e-6}), ((3, 8), {"axis": 1})])
def test_simplified_layer_normalization(
    tmp_path: Path, scale: tuple[int, ...], attrs: dict[str, Any]
) -> None:
    """onnxruntime defines it in ONNX's own domain, where its optimizer writes it."""
    check_node(
        tmp_path,
        "SimplifiedLayerNormalization",
        [r(2, 3, 8), r(*scale)],
        attrs,
        outputs=2,
        domain="",
    )


def test_layer_normalization_before_opset_17(tmp_path: Path) -> None:
    check_node(
        tmp_path, "LayerNormalization", [r(2, 3, 8), r(8), r(8)], outputs=3, domain="", opset=12
    )


IDS = RNG.integers(0, 10, (2, 5)).astype(np.int32)
SEGMENTS = RNG.integers(0, 2, (2, 5)).astype(np.int32)
MASK = int32([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])


@pytest.mark.parametrize(
    ("inputs", "outputs"),
    [
        ([IDS, SEGMENTS, r(10, 8), r(6, 8), r(2, 8), r(8), r(8), MASK], 3),
        ([IDS, None, r(10, 8), r(6, 8), None, r(8), r(8)], 2),
        (
            [IDS, SEGMENTS, r(10, 8), r(6, 8), r(2, 8), r(8), r(8), MASK, int32([[4, 3, 2, 1, 0]])],
            3,
        ),
    ],
)
def test_embed_layer_normalization(
    tmp_path: Path, inputs: list[np.ndarray | None], outputs: int
) -> None:
    check_node(tmp_path, "EmbedLayerNormalization", inputs, outputs=outputs)


def test_embed_layer_normalization_refuses_ids_outside_the_table(tmp_path: Path) -> None:
    model, feeds, _ = node_model(
        "EmbedLayerNormalization", [IDS + 20, SEGMENTS, r(10, 8), r(6, 8), r(2, 8), r(8), r(8)]
    )
    onnx.save(model, tmp_path / "m.onnx")
    with pytest.raises(RunError, match=r"input_ids must be in 0\.\.9"):
        our_outputs(tmp_path / "m.onnx", feeds)


# --- Attention ------------------------------------------------------------------------------------

B, S, HIN, N, H = 2, 4, 8, 2, 4
X, W, BIAS = r(B, S, HIN), r(HIN, 3 * N * H), r(3 * N * H)
MASK3 = (RNG.random((B, S, S)) > 0.3).astype(np.int32)
MASK3[..., 0] = 1


@pytest.mark.parametrize(
    ("extra", "attrs", "outputs"),
    [
        ([], {}, 1),
        ([], {"unidirectional": 1}, 2),
        ([int32([3, 4])], {}, 1),  # right padding: key lengths
        ([int32([3, 4, 1, 0])], {}, 1),  # left padding: ends then starts
        ([int32([[1, 1, 0, 1], [1, 1, 1, 1]])], {}, 1),
        ([MASK3], {}, 1),
        ([int32([[0, 1, 1, 1], [1, 1, 1, 1]])], {"unidirectional": 1}, 1),  # a row with no key
        ([int32([[1, 1, 0, 1], [1, 1, 1, 1]])], {"scale": 0.3, "mask_filter_value": -50.0}, 1),
        ([None, r(2, B, N, 3, H)], {"unidirectional": 1}, 2),
        (
            [int32(np.ones((B, 7)) * [1, 1, 0, 1, 1, 1, 1]), r(2, B, N, 3, H)],
            {"unidirectional": 1},
            2,
        ),
        ([None, None, r(1, N, S, S)], {}, 1),
    ],
)
def test_attention(
    tmp_path: Path, extra: list[np.ndarray | None], attrs: dict[str, Any], outputs: int
) -> None:
    check_node(
        tmp_path, "Attention", [X, W, BIAS, *extra], {"num_heads": N, **attrs}, outputs=outputs
    )


def test_attention_qkv_hidden_sizes(tmp_path: Path) -> None:
    attrs = {"num_heads": N, "qkv_hidden_sizes": [8, 8, 12]}
    check_node(tmp_path, "Attention", [X, r(HIN, 28), r(28)], attrs)


def test_attention_4d_mask_reads_the_rows_of_the_queries(tmp_path: Path) -> None:
    """Megatron's (B, 1, M, M) mask (onnxruntime's CPU kernel refuses it) is its 3-D mask at
    rows past..past+S, columns 0..T."""
    past = r(2, B, N, 3, H)
    big = (RNG.random((B, 1, 9, 9)) > 0.3).astype(np.int32)
    big[..., 0] = 1
    attrs = {"num_heads": N}
    model, feeds, _ = node_model("Attention", [X, W, BIAS, big, past], attrs, outputs=2)
    onnx.save(model, tmp_path / "m4.onnx")
    got = our_outputs(tmp_path / "m4.onnx", feeds)["y0"]
    rows = np.ascontiguousarray(big[:, 0, 3:7, :7])
    want = check_node(tmp_path, "Attention", [X, W, BIAS, rows, past], attrs, outputs=2)
    np.testing.assert_allclose(got, want["y0"], rtol=1e-6)


def test_attention_refuses_rotary_by_name(tmp_path: Path) -> None:
    model, feeds, _ = node_model("Attention", [X, W, BIAS], {"num_heads": N, "do_rotary": 1})
    onnx.save(model, tmp_path / "m.onnx")
    with pytest.raises(RunError, match="do_rotary is not supported"):
        our_outputs(tmp_path / "m.onnx", feeds)


# --- MultiHeadAttention ---------------------------------------------------------------------------

D, L = N * H, 5
Q, K, V = r(B, S, D), r(B, L, D), r(B, L, D)


@pytest.mark.parametrize(
    ("extra", "attrs"),
    [
        ([], {}),
        ([r(3 * D)], {}),
        ([None, int32([3, 5])], {}),
        ([None, int32([[1, 1, 0, 1, 1], [1, 1, 1, 1, 0]])], {}),
        ([None, (RNG.random((B, S, L)) > 0.2).astype(np.int32)], {}),
        ([None, None, r(B, 1, S, L)], {}),
        ([], {"scale": 0.2}),
    ],
)
def test_multi_head_attention(
    tmp_path: Path, extra: list[np.ndarray | None], attrs: dict[str, Any]
) -> None:
    check_node(tmp_path, "MultiHeadAttention", [Q, K, V, *extra], {"num_heads": N, **attrs})


@pytest.mark.parametrize("bias", [None, r(3 * D)])
def test_multi_head_attention_keys_split_into_heads(
    tmp_path: Path, bias: np.ndarray | None
) -> None:
    """Cross attention on a (B, N, L, H) key and value: no bias is added to them."""
    check_node(
        tmp_path, "MultiHeadAttention", [Q, r(B, N, L, H), r(B, N, L, H), bias], {"num_heads": N}
    )


@pytest.mark.parametrize("outputs", [1, 3])
def test_multi_head_attention_unidirectional(tmp_path: Path, outputs: int) -> None:
    q, k, v = r(B, S, D), r(B, S, D), r(B, S, D)
    check_node(
        tmp_path,
        "MultiHeadAttention",
        [q, k, v],
        {"num_heads": N, "unidirectional": 1},
        outputs=outputs,
    )


def test_multi_head_attention_past_and_qk(tmp_path: Path) -> None:
    inputs = [Q, r(B, S, D), r(B, S, D), None, None, None, r(B, N, 3, H), r(B, N, 3, H)]
    attrs = {"num_heads": N, "unidirectional": 1}
    check_node(
        tmp_path, "MultiHeadAttention", inputs, attrs, outputs=4, typed={"y3": TensorProto.FLOAT}
    )


def test_multi_head_attention_packed_layouts(tmp_path: Path) -> None:
    """Packed QKV (B, S, N, 3, H) and packed KV (B, L, N, 2, H), which onnxruntime runs on CUDA
    only, equal the same heads given apart."""
    qkv, kv, bias = r(B, S, N, 3, H), r(B, L, N, 2, H), r(3 * D)
    split = [np.ascontiguousarray(qkv[:, :, :, i]).reshape(B, S, D) for i in range(3)]
    kv_split = [np.ascontiguousarray(kv[:, :, :, i]).reshape(B, L, D) for i in range(2)]
    cases = [([qkv, None, None, bias], [*split, bias]), ([Q, kv, None, bias], [Q, *kv_split, bias])]
    for packed, apart in cases:
        model, feeds, _ = node_model("MultiHeadAttention", packed, {"num_heads": N})
        onnx.save(model, tmp_path / "p.onnx")
        got = our_outputs(tmp_path / "p.onnx", feeds)["y0"]
        want = check_node(tmp_path, "MultiHeadAttention", apart, {"num_heads": N})["y0"]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
