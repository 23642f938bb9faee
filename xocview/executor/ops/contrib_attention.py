"""onnxruntime's Attention and MultiHeadAttention (com.microsoft), as its transformer optimizer
writes them for BERT and GPT-2: scaled dot-product attention over heads with onnxruntime's mask
formats, past/present key-value caches and an additive attention bias."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xocview.executor.ops.attention import safe_softmax
from xocview.executor.registry import kernel

__all__ = ["attend", "contrib_attention", "merge_heads", "multi_head_attention", "split_heads"]

MS = "com.microsoft"
Outputs = np.ndarray | tuple[np.ndarray | None, ...]


def split_heads(x: np.ndarray, heads: int, op: str, name: str) -> np.ndarray:
    """(B, S, heads * H) as the view (B, heads, S, H)."""
    if x.ndim != 3 or heads <= 0 or x.shape[2] % heads:
        raise ValueError(f"{op}: {name} of shape {x.shape} cannot be split into {heads} heads")
    b, s, d = x.shape
    return x.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)


def merge_heads(y: np.ndarray) -> np.ndarray:
    """(B, N, S, H) back to (B, S, N * H)."""
    b, n, s, h = y.shape
    return np.ascontiguousarray(y.transpose(0, 2, 1, 3)).reshape(b, s, n * h)


def attend(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    scale: float,
    bias: np.ndarray | None,
    *,
    softcap: float = 0.0,
    sink: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """softmax(scale * Q K^T (softcapped) + bias) V for Q (B, Nq, S, H), K (B, Nkv, T, H),
    V (B, Nkv, T, Hv): (Y (B, Nq, S, Hv), the scores before softmax, the probabilities).

    Query heads g*h .. g*h+g-1 share kv head h without copies: Q is viewed as (B, Nkv, g*S, H).
    ``sink`` (one logit per query head, 0 for a smooth softmax) joins each row's denominator.
    """
    b, nq, s, h = q.shape
    nkv, t = k.shape[1], k.shape[2]
    if nkv == 0 or nq % nkv:
        raise ValueError(f"attention: {nq} query heads cannot share {nkv} key/value heads")
    g = nq // nkv
    dt = q.dtype.type
    scores = np.matmul(q.reshape(b, nkv, g * s, h), k.transpose(0, 1, 3, 2)).reshape(b, nq, s, t)
    scores *= dt(scale)
    if softcap > 0:
        scores = np.tanh(scores / dt(softcap)) * dt(softcap)
    if bias is not None:
        scores = scores + bias.astype(q.dtype, copy=False)
    if sink is None:
        probs = safe_softmax(scores)
    else:
        logit = sink.astype(q.dtype).reshape(1, nq, 1, 1)
        peak = np.maximum(scores.max(axis=-1, keepdims=True, initial=-np.inf), logit)
        probs = np.exp(scores - peak)
        probs /= probs.sum(axis=-1, keepdims=True) + np.exp(logit - peak)
    y = np.matmul(probs.reshape(b, nkv, g * s, t), v).reshape(b, nq, s, v.shape[3])
    return y, scores, probs


def key_mask(mask: np.ndarray, b: int, s: int, t: int, past: int, op: str) -> np.ndarray:
    """Which keys each query may see, from onnxruntime's mask formats: (B) key lengths (right
    padding), (2B) ends then starts (left padding), (B, T) or (B, S, T) raw 0/1 masks, and
    Megatron's (B, 1, M, M) read at rows past..past+S. Returns bool (B, S or 1, T)."""
    j = np.arange(t)
    if mask.ndim == 1 and mask.shape[0] in (b, 2 * b):
        ends = mask[:b].astype(np.int64).reshape(b, 1, 1)
        keep = j < ends
        if mask.shape[0] == 2 * b:
            keep &= j >= mask[b:].astype(np.int64).reshape(b, 1, 1)
        return keep
    if mask.ndim == 2 and mask.shape == (b, t):
        return (mask > 0).reshape(b, 1, t)
    if mask.ndim == 3 and mask.shape == (b, s, t):
        return mask > 0
    rows, columns = (mask.shape[2], mask.shape[3]) if mask.ndim == 4 else (0, 0)
    if mask.ndim == 4 and mask.shape[:2] == (b, 1) and rows >= past + s and columns >= t:
        return mask[:, 0, past : past + s, :t] > 0
    raise ValueError(
        f"{op}: mask of shape {mask.shape} is not one of onnxruntime's formats for batch {b}, "
        f"{s} queries and {t} keys; expected ({b}), ({2 * b}), ({b}, {t}), ({b}, {s}, {t}) "
        f"or ({b}, 1, M, M) with M >= {max(past + s, t)}"
    )


def mask_bias(
    mask: np.ndarray | None,
    causal: bool,
    shape: tuple[int, int, int, int],
    filter_value: float,
    op: str,
) -> np.ndarray | None:
    """The additive (B, 1, S|1, T) bias of a padding mask and causality: ``filter_value``
    where a key is masked, float32's lowest where it lies after the query (past + i), as
    onnxruntime adds them (a query whose keys are all padding still sees the earlier ones,
    uniformly shifted); None when nothing is masked."""
    b, s, t, past = shape
    bias: np.ndarray | None = None
    fill = np.float32(filter_value)
    if mask is not None:
        bias = np.where(key_mask(mask, b, s, t, past, op), np.float32(0), fill)[:, None]
    if causal and s > 1:
        later = np.arange(t) > np.arange(s).reshape(-1, 1) + past
        structural = np.where(later, np.finfo(np.float32).min, np.float32(0))
        bias = structural if bias is None else bias + structural
    return bias


def _scale(scale: float | None, head_size: int) -> float:
    return scale if scale else 1.0 / float(np.sqrt(head_size))


def _projected(
    x: np.ndarray,
    weights: np.ndarray,
    bias: np.ndarray | None,
    qkv_hidden_sizes: Sequence[int] | None,
    heads: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Attention's Q, K, V (B, N, S, H): x @ weights + bias, split at qkv_hidden_sizes
    (equal thirds by default) and into heads."""
    op = "Attention"
    sizes = list(qkv_hidden_sizes or [weights.shape[1] // 3] * 3)
    if len(sizes) != 3 or sum(sizes) != weights.shape[1] or sizes[0] != sizes[1]:
        raise ValueError(
            f"{op}: qkv_hidden_sizes {sizes} do not split weights' {weights.shape[1]} columns "
            "into Q, K (of equal size) and V"
        )
    qkv = np.matmul(x, weights)
    if bias is not None:
        qkv += bias
    d = sizes[0]
    q = split_heads(qkv[..., :d], heads, op, "Q")
    k = split_heads(qkv[..., d : 2 * d], heads, op, "K")
    return q, k, split_heads(qkv[..., 2 * d :], heads, op, "V")


@kernel("Attention", domain=MS)
def contrib_attention(
    x: np.ndarray,
    weights: np.ndarray,
    bias: np.ndarray | None = None,
    mask_index: np.ndarray | None = None,
    past: np.ndarray | None = None,
    attention_bias: np.ndarray | None = None,
    past_sequence_length: np.ndarray | None = None,
    *,
    num_heads: int,
    do_rotary: int = 0,
    mask_filter_value: float = -10000.0,
    past_present_share_buffer: int = 0,
    qkv_hidden_sizes: Sequence[int] | None = None,
    rotary_embedding_dim: int = 0,
    scale: float | None = None,
    unidirectional: int = 0,
    num_outputs: int = 1,
) -> Outputs:
    """Self-attention with the Q, K and V projections merged in ``weights`` (Hin, Dq+Dk+Dv):
    output (B, S, Dv) and present (2, B, N, P+S, H), past's keys and values then the new."""
    op = "Attention"
    if do_rotary or past_present_share_buffer:
        what = "do_rotary" if do_rotary else "past_present_share_buffer"
        raise ValueError(f"{op}: {what} is not supported (onnxruntime's CPU kernel has neither)")
    if x.ndim != 3 or weights.ndim != 2 or x.shape[2] != weights.shape[0]:
        raise ValueError(f"{op}: input {x.shape} and weights {weights.shape} disagree")
    q, k, v = _projected(x, weights, bias, qkv_hidden_sizes, num_heads)
    p = 0
    if past is not None:
        if (
            past.ndim != 5
            or past.shape[0] != 2
            or past.shape[1:3] + past.shape[4:] != k.shape[:2] + k.shape[3:]
        ):
            raise ValueError(f"{op}: past has shape {past.shape}; expected (2, B, N, P, H)")
        p = past.shape[3]
        k = np.concatenate((past[0], k), axis=2)
        v = np.concatenate((past[1], v), axis=2)
    b, _, s, h = q.shape
    t = k.shape[2]
    total = mask_bias(mask_index, bool(unidirectional), (b, s, t, p), mask_filter_value, op)
    if attention_bias is not None:
        total = attention_bias if total is None else total + attention_bias
    y, _, _ = attend(q, k, v, _scale(scale, h), total)
    out = merge_heads(y)
    if num_outputs == 1:
        return out
    if k.shape[3] != v.shape[3]:
        raise ValueError(f"{op}: present needs K and V of one head size, got {h} and {v.shape[3]}")
    return out, np.stack((k, v))


def _project(
    query: np.ndarray,
    key: np.ndarray | None,
    value: np.ndarray | None,
    bias: np.ndarray | None,
    heads: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MultiHeadAttention's Q, K, V as (B, N, S|L, H) from its input layouts: separate
    (B, S, D) tensors, packed QKV (B, S, N, 3, H), packed KV (B, L, N, 2, H), or K and V
    already split into heads (B, N, L, H), which take no bias."""
    op = "MultiHeadAttention"
    if key is None and value is None and query.ndim == 5 and query.shape[3] == 3:
        n, h = query.shape[2], query.shape[4]
        if bias is not None:
            query = query + bias.reshape(3, n, h).transpose(1, 0, 2)
        qkv = query.transpose(3, 0, 2, 1, 4)  # (3, B, N, S, H)
        return qkv[0], qkv[1], qkv[2]
    if query.ndim != 3 or key is None:
        raise ValueError(f"{op}: query {query.shape} needs a key unless it packs Q, K and V")
    d = query.shape[2]
    bq = None if bias is None else bias[:d]
    q = split_heads(query if bq is None else query + bq, heads, op, "query")
    if value is None and key.ndim == 5 and key.shape[3] == 2:
        if bias is not None:
            key = key + bias[d:].reshape(2, heads, -1).transpose(1, 0, 2)
        kv = key.transpose(3, 0, 2, 1, 4)
        return q, kv[0], kv[1]
    if value is None:
        raise ValueError(f"{op}: key {key.shape} needs a value unless it packs K and V")
    if key.ndim == 4 and value.ndim == 4:
        return q, key, value
    bk = None if bias is None else bias[d : 2 * d]
    bv = None if bias is None else bias[2 * d :]
    k = split_heads(key if bk is None else key + bk, heads, op, "key")
    v = split_heads(value if bv is None else value + bv, heads, op, "value")
    return q, k, v


@kernel("MultiHeadAttention", domain=MS)
def multi_head_attention(
    query: np.ndarray,
    key: np.ndarray | None = None,
    value: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    key_padding_mask: np.ndarray | None = None,
    attention_bias: np.ndarray | None = None,
    past_key: np.ndarray | None = None,
    past_value: np.ndarray | None = None,
    past_sequence_length: np.ndarray | None = None,
    cache_indirection: np.ndarray | None = None,
    *,
    num_heads: int,
    mask_filter_value: float = -10000.0,
    scale: float | None = None,
    unidirectional: int = 0,
    num_outputs: int = 1,
) -> Outputs:
    """Self or cross attention on projected Q, K, V (plus their bias): output (B, S, Dv),
    present_key and present_value (B, N, P+L, H), and qk, the scaled scores before softmax."""
    op = "MultiHeadAttention"
    if past_sequence_length is not None or cache_indirection is not None:
        raise ValueError(
            f"{op}: past_sequence_length and cache_indirection (beam search with a "
            "shared buffer) are not supported"
        )
    q, k, v = _project(query, key, value, bias, num_heads)
    if (past_key is None) != (past_value is None):
        raise ValueError(f"{op}: past_key and past_value must be given together")
    p = 0
    if past_key is not None and past_value is not None:
        p = past_key.shape[2]
        k = np.concatenate((past_key, k), axis=2)
        v = np.concatenate((past_value, v), axis=2)
    b, _, s, h = q.shape
    t = k.shape[2]
    total = mask_bias(key_padding_mask, bool(unidirectional), (b, s, t, p), mask_filter_value, op)
    if attention_bias is not None:
        total = attention_bias if total is None else total + attention_bias
    y, scores, _ = attend(q, k, v, _scale(scale, h), total)
    out = merge_heads(y)
    if num_outputs == 1:
        return out
    return (out, k, v, scores)[:num_outputs]
