"""onnxruntime's QAttention and QEmbedLayerNormalization (com.microsoft): the 8-bit forms of its
Attention and EmbedLayerNormalization, as quantize_dynamic writes them for a fused BERT.

Both dequantize their 8-bit operands, (q - zero_point) * scale, and hand them to the float
kernels of contrib_attention and contrib_norm.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from xocview.executor.ops.contrib_attention import contrib_attention
from xocview.executor.ops.contrib_norm import embed_layer_normalization
from xocview.executor.ops.contrib_qlinear import MS, per_tensor_scale, per_tensor_zero
from xocview.executor.ops.quantize import EIGHT_BIT, check_dtype, check_float
from xocview.executor.registry import kernel

__all__ = ["qattention", "qembed_layer_normalization"]

F32 = np.float32
Outputs = np.ndarray | tuple[np.ndarray, ...]


def _dequantized(
    op: str, name: str, q: np.ndarray | None, scale: np.ndarray | None, zero: np.ndarray | None
) -> np.ndarray:
    """(q - zero) * scale in float32; scale and zero one value, or one per last-axis entry."""
    if q is None:
        raise ValueError(f"{op}: input {name} is required, but the node leaves it out")
    check_dtype(op, name, q, EIGHT_BIT)
    if scale is None:
        raise ValueError(f"{op}: {name}'s scale is required, but the node leaves it out")
    check_float(op, f"{name}'s scale", scale)
    cols = q.shape[-1] if q.ndim else 1
    for what, p in (("scale", scale), ("zero point", zero)):
        if p is not None and p.size not in (1, cols):
            raise ValueError(
                f"{op}: {name}'s {what} has shape {list(p.shape)}; expected a scalar or [{cols}]"
            )
    centre = 0.0 if zero is None else zero.astype(F32).reshape(-1)
    if zero is not None:
        check_dtype(op, f"{name}'s zero point", zero, (q.dtype,))
    return (q.astype(F32) - centre) * scale.astype(F32).reshape(-1)


@kernel("QAttention", domain=MS)
def qattention(
    input: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray,
    input_scale: np.ndarray,
    weight_scale: np.ndarray,
    mask_index: np.ndarray | None = None,
    input_zero_point: np.ndarray | None = None,
    weight_zero_point: np.ndarray | None = None,
    past: np.ndarray | None = None,
    *,
    num_heads: int,
    do_rotary: int = 0,
    mask_filter_value: float = -10000.0,
    past_present_share_buffer: int = 0,
    scale: float | None = None,
    unidirectional: int = 0,
    num_outputs: int = 1,
) -> Outputs:
    """Attention of the dequantized input (per tensor) and weight (per tensor or per column of
    its 3 * hidden); output and present as Attention's."""
    op = "QAttention"
    per_tensor_scale(op, "input_scale", input_scale)  # one value, as the zero point
    per_tensor_zero(op, "input_zero_point", input_zero_point, input.dtype)
    x = _dequantized(op, "input", input, input_scale, input_zero_point)
    w = _dequantized(op, "weight", weight, weight_scale, weight_zero_point)
    return cast(
        Outputs,
        contrib_attention(
            x,
            w,
            bias.astype(F32),
            mask_index,
            None if past is None else past.astype(F32),
            num_heads=num_heads,
            do_rotary=do_rotary,
            mask_filter_value=mask_filter_value,
            past_present_share_buffer=past_present_share_buffer,
            scale=scale,
            unidirectional=unidirectional,
            num_outputs=num_outputs,
        ),
    )


@kernel("QEmbedLayerNormalization", domain=MS)
def qembed_layer_normalization(
    input_ids: np.ndarray,
    segment_ids: np.ndarray | None = None,
    word_embedding_quant: np.ndarray | None = None,
    position_embedding_quant: np.ndarray | None = None,
    segment_embedding: np.ndarray | None = None,
    gamma_quant: np.ndarray | None = None,
    beta_quant: np.ndarray | None = None,
    mask: np.ndarray | None = None,
    word_embedding_scale: np.ndarray | None = None,
    position_embedding_scale: np.ndarray | None = None,
    segment_embedding_scale: np.ndarray | None = None,
    gamma_scale: np.ndarray | None = None,
    beta_scale: np.ndarray | None = None,
    word_embedding_zero_point: np.ndarray | None = None,
    position_embedding_zero_point: np.ndarray | None = None,
    segment_embedding_zero_point: np.ndarray | None = None,
    gamma_zero_point: np.ndarray | None = None,
    beta_zero_point: np.ndarray | None = None,
    *,
    epsilon: float = 1e-12,
    num_outputs: int = 2,
) -> Outputs:
    """EmbedLayerNormalization of the dequantized (per tensor) embeddings, gamma and beta:
    the normalized sum and the mask index. The segment group is all given or all left out.
    (Inputs after segment_ids take defaults only so that the optional ones may be left out.)"""
    op = "QEmbedLayerNormalization"

    def deq(
        name: str, q: np.ndarray | None, s: np.ndarray | None, z: np.ndarray | None
    ) -> np.ndarray:
        if s is not None and s.size != 1:
            raise ValueError(f"{op}: {name}'s scale has shape {list(s.shape)}; expected a scalar")
        return _dequantized(op, name, q, s, z)

    segment = None
    if segment_embedding is not None:
        segment = deq(
            "segment_embedding",
            segment_embedding,
            segment_embedding_scale,
            segment_embedding_zero_point,
        )
    return cast(
        Outputs,
        embed_layer_normalization(
            input_ids,
            segment_ids,
            deq(
                "word_embedding",
                word_embedding_quant,
                word_embedding_scale,
                word_embedding_zero_point,
            ),
            deq(
                "position_embedding",
                position_embedding_quant,
                position_embedding_scale,
                position_embedding_zero_point,
            ),
            segment,
            deq("gamma", gamma_quant, gamma_scale, gamma_zero_point),
            deq("beta", beta_quant, beta_scale, beta_zero_point),
            mask,
            epsilon=epsilon,
            num_outputs=max(1, min(num_outputs, 2)),
        ),
    )
