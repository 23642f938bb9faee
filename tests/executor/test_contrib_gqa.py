"""onnxruntime's GroupQueryAttention and RotaryEmbedding (com.microsoft), one node per model,
against onnxruntime: prompts (right-padded too), decoding steps over a ragged cache, chunks,
windows, softcap, sinks, rotary embeddings, packed QKV, qk outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from tests.executor.contrib_reference import (
    TensorProto,
    check_node,
    int32,
    node_model,
    ort_outputs,
    our_outputs,
)

RNG = np.random.default_rng(41)


def r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


B, S, N, H = 2, 4, 2, 4
COS, SIN = r(16, H // 2), r(16, H // 2)


@pytest.mark.parametrize(
    ("x", "positions", "attrs"),
    [
        (r(B, S, N * H), np.array([3], np.int64), {}),
        (r(B, S, N * H), RNG.integers(0, 16, (B, S)).astype(np.int64), {}),
        (r(B, S, N * H), np.array([2], np.int64), {"interleaved": 1}),
        (r(B, N, S, H), np.array([1], np.int64), {}),
        (r(B, N, S, H), RNG.integers(0, 16, (B, S)).astype(np.int64), {"interleaved": 1}),
        (r(B, S, N * H), np.array([0], np.int64), {"scale": 0.5}),
    ],
)
def test_rotary_embedding(
    tmp_path: Path, x: np.ndarray, positions: np.ndarray, attrs: dict[str, Any]
) -> None:
    check_node(tmp_path, "RotaryEmbedding", [x, positions, COS, SIN], attrs)


def test_rotary_embedding_of_part_of_each_head(tmp_path: Path) -> None:
    attrs = {"num_heads": N, "rotary_embedding_dim": 2}
    check_node(
        tmp_path,
        "RotaryEmbedding",
        [r(B, S, N * H), np.array([0], np.int64), r(16, 1), r(16, 1)],
        attrs,
    )


NQ, NKV, HG, P = 4, 2, 8, 3  # onnxruntime wants head sizes in multiples of 8 (16 with rotary)
HEADS = {"num_heads": NQ, "kv_num_heads": NKV}


def qkv(s: int, h: int = HG, b: int = B) -> list[np.ndarray]:
    return [r(b, s, NQ * h), r(b, s, NKV * h), r(b, s, NKV * h)]


def cache(h: int = HG, b: int = B) -> list[np.ndarray]:
    return [r(b, NKV, P, h), r(b, NKV, P, h)]


PROMPT_LENGTHS = [int32([S - 1, S - 1]), int32(S)]
STEP_LENGTHS = [int32([P, P]), int32(P + 1)]


@pytest.mark.parametrize(
    ("inputs", "attrs"),
    [
        ([*qkv(S), None, None, *PROMPT_LENGTHS], {}),
        ([*qkv(S), *(np.zeros((B, NKV, 6, HG), np.float32),) * 2, *PROMPT_LENGTHS], {}),  # a buffer
        ([*qkv(1), *cache(), *STEP_LENGTHS], {}),
        ([*qkv(1), *cache(), int32([1, P]), int32(P + 1)], {}),  # ragged: entry 0 holds 1 token
        ([*qkv(1), *cache(), *STEP_LENGTHS], {"local_window_size": 2}),
        ([*qkv(1), *cache(), *STEP_LENGTHS], {"softcap": 1.5, "scale": 0.7}),
        ([*qkv(S), None, None, *PROMPT_LENGTHS], {"smooth_softmax": 1}),
        ([*qkv(S), None, None, *PROMPT_LENGTHS, None, None, None, None, r(NQ)], {}),  # head_sink
        ([*qkv(S), None, None, *PROMPT_LENGTHS, None, None, None, r(1, 1, S, S)], {}),
        ([*qkv(2, b=1), *cache(b=1), int32([P + 1]), int32(P + 2)], {}),  # a chunk of 2 after 3
        ([r(B, S, (NQ + 2 * NKV) * HG), None, None, None, None, *PROMPT_LENGTHS], {}),  # packed
    ],
)
def test_group_query_attention(
    tmp_path: Path, inputs: list[np.ndarray | None], attrs: dict[str, Any]
) -> None:
    check_node(tmp_path, "GroupQueryAttention", inputs, {**HEADS, **attrs}, outputs=3)


@pytest.mark.parametrize("qk_output", [1, 2])
def test_group_query_attention_qk_output(tmp_path: Path, qk_output: int) -> None:
    inputs = [*qkv(1), *cache(), *STEP_LENGTHS]
    attrs = {**HEADS, "qk_output": qk_output}
    check_node(
        tmp_path, "GroupQueryAttention", inputs, attrs, outputs=4, typed={"y3": TensorProto.FLOAT}
    )


def test_group_query_attention_right_padded_prompt(tmp_path: Path) -> None:
    """Entry 0 holds 2 tokens of 4: its valid rows and cache rows agree (the rest is
    unspecified)."""
    inputs = [*qkv(S), None, None, int32([1, S - 1]), int32(S)]
    model, feeds, _ = node_model("GroupQueryAttention", inputs, HEADS, outputs=3)
    onnx.save(model, tmp_path / "m.onnx")
    got, want = our_outputs(tmp_path / "m.onnx", feeds), ort_outputs(model, feeds)
    np.testing.assert_allclose(got["y0"][0, :2], want["y0"][0, :2], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["y0"][1], want["y0"][1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["y1"][:, :, :2], want["y1"][:, :, :2], rtol=1e-6)


HR = 16
COS_G, SIN_G = r(16, HR // 2), r(16, HR // 2)


@pytest.mark.parametrize(
    ("inputs", "attrs"),
    [
        ([*qkv(S, HR), None, None, *PROMPT_LENGTHS, COS_G, SIN_G], {}),
        (
            [*qkv(1, HR), *cache(HR), int32([P, 2]), int32(P + 1), COS_G, SIN_G],
            {"rotary_interleaved": 1},
        ),
        (
            [*qkv(1, HR), *cache(HR), *STEP_LENGTHS, COS_G, SIN_G, np.array([[7], [2]], np.int64)],
            {},
        ),
    ],
)
def test_group_query_attention_rotary(
    tmp_path: Path, inputs: list[np.ndarray | None], attrs: dict[str, Any]
) -> None:
    check_node(
        tmp_path, "GroupQueryAttention", inputs, {**HEADS, "do_rotary": 1, **attrs}, outputs=3
    )
