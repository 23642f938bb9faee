"""onnxruntime's GroupQueryAttention and RotaryEmbedding (com.microsoft), as generative-model
builders write them: grouped heads over a (B, Nkv, cache, H) key/value cache whose valid
length per batch entry is seqlens_k + 1, causal, optionally windowed, softcapped, rotated."""

from __future__ import annotations

import numpy as np

from xocview.executor.ops.attention import rotary_embedding
from xocview.executor.ops.contrib_attention import attend, merge_heads, split_heads
from xocview.executor.registry import kernel

__all__ = ["contrib_rotary_embedding", "group_query_attention"]

MS = "com.microsoft"
Outputs = np.ndarray | tuple[np.ndarray | None, ...]


def _rotate(
    x: np.ndarray,
    cos_cache: np.ndarray,
    sin_cache: np.ndarray,
    positions: np.ndarray,
    interleaved: int,
    op: str,
) -> np.ndarray:
    """x (B, N, S, H) with its first 2 * cos_cache.shape[1] features rotated by the angles at
    ``positions`` (B, S)."""
    n = cos_cache.shape[0]
    if positions.size and (positions.min() < 0 or positions.max() >= n):
        raise ValueError(f"{op}: positions must be in 0..{n - 1} (the caches' rows)")
    ids = positions.astype(np.intp, copy=False)
    return rotary_embedding(
        x,
        cos_cache[ids],
        sin_cache[ids],
        interleaved=interleaved,
        rotary_embedding_dim=2 * cos_cache.shape[1],
    )


@kernel("RotaryEmbedding", domain=MS)
def contrib_rotary_embedding(
    x: np.ndarray,
    position_ids: np.ndarray,
    cos_cache: np.ndarray,
    sin_cache: np.ndarray,
    *,
    interleaved: int = 0,
    is_packed_batching: int = 0,
    num_heads: int = 0,
    rotary_embedding_dim: int = 0,
    scale: float = 1.0,
) -> np.ndarray:
    """RoPE on (B, S, N*H) or (B, N, S, H): position_ids (B, S), or one offset (1) that
    starts every sequence; the head size is num_heads' share of the hidden size, or twice
    the caches' width when num_heads is 0 (then the whole head rotates)."""
    op = "RotaryEmbedding"
    if is_packed_batching:
        raise ValueError(f"{op}: is_packed_batching (ragged batches) is not supported")
    if x.ndim not in (3, 4):
        raise ValueError(f"{op}: input has rank {x.ndim}; expected 3 or 4")
    b, s = (x.shape[0], x.shape[1]) if x.ndim == 3 else (x.shape[0], x.shape[2])
    if position_ids.size == 1 and position_ids.ndim <= 1:
        positions = np.broadcast_to(np.arange(s) + int(position_ids.reshape(-1)[0]), (b, s))
    elif position_ids.shape == (b, s):
        positions = position_ids
    else:
        raise ValueError(
            f"{op}: position_ids has shape {position_ids.shape}; expected (1) or ({b}, {s})"
        )
    rot = rotary_embedding_dim or 2 * cos_cache.shape[1]
    if rot != 2 * cos_cache.shape[1]:
        raise ValueError(f"{op}: rotary_embedding_dim {rot} needs caches {rot // 2} wide")
    if x.ndim == 4:
        return _rotate(x, cos_cache, sin_cache, positions, interleaved, op)
    heads = num_heads or x.shape[2] // rot
    view = split_heads(x, heads, op, "input")
    return merge_heads(_rotate(view, cos_cache, sin_cache, positions, interleaved, op))


def _cache(past: np.ndarray | None, new: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """The present cache (B, Nkv, length, H): past's first starts[b] rows of entry b, then
    the new rows; zeros after."""
    b, n, s, h = new.shape
    out = np.zeros((b, n, length, h), new.dtype)
    rows = np.arange(length)
    if past is not None:
        keep = rows[: past.shape[2]] < starts.reshape(-1, 1)  # (B, P)
        out[:, :, : past.shape[2]] = np.where(keep[:, None, :, None], past, 0)
    where = starts.reshape(-1, 1) + np.arange(s)  # (B, S)
    if where.size and where.max() >= length:
        raise ValueError(
            f"GroupQueryAttention: the cache holds {length} positions; "
            f"an entry needs {where.max() + 1}"
        )
    out[np.arange(b)[:, None], :, where] = new.transpose(0, 2, 1, 3)
    return out


def _resident(t: np.ndarray, capacity: int, window: int) -> np.ndarray:
    """How many of T positions a window-sized cache of ``capacity`` rows holds (onnxruntime's
    L(T)): all while they fit, then it evicts G = capacity - window + 1 positions at a time."""
    g = capacity - window + 1
    over = np.maximum(t - capacity, 0)
    return t - g * (-(-over // g))


def _windowed(
    past: np.ndarray | None,
    new: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    window: int,
) -> tuple[np.ndarray, np.ndarray]:
    """sliding_window_cache: past (B, Nkv, C, H) holds each entry's newest L(starts) positions
    at rows [0, L). Returns the keys by absolute position (B, Nkv, max T, H; positions already
    evicted are zeros, outside every window) and the present buffer (B, Nkv, C, H), whose rows
    [0, L(T)) hold the newest L(T) of the T = seqlens_k + 1 positions, zeros after."""
    op = "GroupQueryAttention"
    if past is None or window <= 0:
        raise ValueError(f"{op}: sliding_window_cache needs past_key, past_value and a window")
    b, n, s, h = new.shape
    capacity = past.shape[2]
    if capacity < window:
        raise ValueError(
            f"{op}: the window cache holds {capacity} positions; expected at least "
            f"local_window_size {window}"
        )
    full = np.zeros((b, n, int((starts + s).max(initial=0)), h), new.dtype)
    rows = np.arange(capacity)
    kept = _resident(starts, capacity, window)
    bi, ri = np.nonzero(rows < kept.reshape(-1, 1))
    full[bi, :, (starts - kept)[bi] + ri] = past[bi, :, ri]
    full[np.arange(b)[:, None], :, starts.reshape(-1, 1) + np.arange(s)] = new.transpose(0, 2, 1, 3)
    present = np.zeros((b, n, capacity, h), new.dtype)
    kept = _resident(lengths, capacity, window)
    bi, ri = np.nonzero(rows < kept.reshape(-1, 1))
    present[bi, :, ri] = full[bi, :, (lengths - kept)[bi] + ri]
    return full, present


def _visible(starts: np.ndarray, s: int, t: int, window: int) -> np.ndarray:
    """(B, 1, S, T): query i of entry b (at position starts[b] + i) sees keys up to its own
    position and, when ``window`` is positive, only the last ``window`` of them (itself
    included), as onnxruntime 1.32 counts local_window_size."""
    pos = starts.reshape(-1, 1, 1, 1) + np.arange(s).reshape(-1, 1)
    dist = pos - np.arange(t)
    seen = dist >= 0
    if window > 0:
        seen &= dist < window
    return seen


def _heads(
    query: np.ndarray,
    key: np.ndarray | None,
    value: np.ndarray | None,
    num_heads: int,
    kv_num_heads: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q (B, N, S, H), K and V (B, Nkv, S, H) from separate inputs or one packed query
    (B, S, (N + 2 Nkv) * H)."""
    op = "GroupQueryAttention"
    if key is None and value is None:
        h = query.shape[2] // (num_heads + 2 * kv_num_heads)
        q_end, k_end = num_heads * h, (num_heads + kv_num_heads) * h
        query, key, value = query[..., :q_end], query[..., q_end:k_end], query[..., k_end:]
    if key is None or value is None:
        raise ValueError(f"{op}: key and value go together, or both are packed in query")
    q = split_heads(query, num_heads, op, "query")
    return (
        q,
        split_heads(key, kv_num_heads, op, "key"),
        split_heads(value, kv_num_heads, op, "value"),
    )


def _starts(seqlens_k: np.ndarray, b: int, s: int, total: int) -> np.ndarray:
    """Where each entry's new tokens go in its cache: seqlens_k + 1 - S, or 0 on the first
    prompt (S == total_sequence_length), whose entries may be right-padded."""
    op = "GroupQueryAttention"
    lengths = seqlens_k.astype(np.int64).reshape(-1) + 1
    if lengths.shape != (b,):
        raise ValueError(f"{op}: seqlens_k has shape {seqlens_k.shape}; expected ({b},)")
    starts = np.zeros(b, np.int64) if s == total else lengths - s
    if (starts < 0).any():
        raise ValueError(f"{op}: seqlens_k + 1 must be at least the {s} new tokens")
    return starts


@kernel("GroupQueryAttention", domain=MS)
def group_query_attention(
    query: np.ndarray,
    key: np.ndarray | None = None,
    value: np.ndarray | None = None,
    past_key: np.ndarray | None = None,
    past_value: np.ndarray | None = None,
    seqlens_k: np.ndarray | None = None,
    total_sequence_length: np.ndarray | None = None,
    cos_cache: np.ndarray | None = None,
    sin_cache: np.ndarray | None = None,
    position_ids: np.ndarray | None = None,
    attention_bias: np.ndarray | None = None,
    head_sink: np.ndarray | None = None,
    k_scale: np.ndarray | None = None,
    v_scale: np.ndarray | None = None,
    q_norm_weight: np.ndarray | None = None,
    k_norm_weight: np.ndarray | None = None,
    query_seqlens: np.ndarray | None = None,
    *,
    num_heads: int,
    kv_num_heads: int,
    causal: int = 1,
    do_rotary: int = 0,
    k_norm_epsilon: float | None = None,
    k_quant_type: str = "NONE",
    kv_cache_bit_width: int = 0,
    local_window_size: int = -1,
    q_norm_epsilon: float | None = None,
    qk_norm_epsilon: float = 1e-6,
    qk_output: int = 0,
    rotary_interleaved: int = 0,
    scale: float | None = None,
    sliding_window_cache: int = 0,
    smooth_softmax: int = -1,
    softcap: float = 0.0,
    v_quant_type: str = "NONE",
    num_outputs: int = 1,
) -> Outputs:
    """Causal grouped-query attention with a KV cache: entry b holds seqlens_k[b] + 1 tokens
    after this step, the new S of them at positions from there minus S (from 0 on the first
    prompt, whose entries may be right-padded). Outputs: output (B, S, N*H), present_key and
    present_value (B, Nkv, max(cache, total_sequence_length), H), output_qk. With
    sliding_window_cache the caches are window-sized instead (see _windowed)."""
    op = "GroupQueryAttention"
    unsupported = {
        "quantized caches": any(x is not None for x in (k_scale, v_scale))
        or str(k_quant_type) not in ("NONE", "b'NONE'")
        or str(v_quant_type) not in ("NONE", "b'NONE'"),
        "q/k norm weights": q_norm_weight is not None or k_norm_weight is not None,
        "query_seqlens": query_seqlens is not None,
        "causal=0": not causal,
    }
    refused = [name for name, on in unsupported.items() if on]
    if refused:
        raise ValueError(f"{op}: {', '.join(refused)} not supported")
    if seqlens_k is None or total_sequence_length is None:
        raise ValueError(f"{op} needs seqlens_k and total_sequence_length (inputs 5 and 6)")
    q, k, v = _heads(query, key, value, num_heads, kv_num_heads)
    b, _, s, h = q.shape
    total = int(np.asarray(total_sequence_length).reshape(-1)[0])
    cached = 0 if past_key is None else past_key.shape[2]
    starts = _starts(seqlens_k, b, s, total)
    if do_rotary:
        if cos_cache is None or sin_cache is None:
            raise ValueError(f"{op}: do_rotary needs cos_cache and sin_cache")
        pos = starts.reshape(-1, 1) + np.arange(s) if position_ids is None else position_ids
        q = _rotate(q, cos_cache, sin_cache, pos, rotary_interleaved, op)
        k = _rotate(k, cos_cache, sin_cache, pos, rotary_interleaved, op)
    if sliding_window_cache:
        lengths = seqlens_k.astype(np.int64).reshape(-1) + 1
        keys, present_k = _windowed(past_key, k, starts, lengths, local_window_size)
        values, present_v = _windowed(past_value, v, starts, lengths, local_window_size)
    else:
        length = max(cached, total)
        keys = present_k = _cache(past_key, k, starts, length)
        values = present_v = _cache(past_value, v, starts, length)
    seen = _visible(starts, s, keys.shape[2], local_window_size)
    bias = np.where(seen, np.float32(0), np.float32(-np.inf))
    if attention_bias is not None:
        bias = bias + attention_bias[..., : keys.shape[2]]
    sink = (
        head_sink
        if head_sink is not None
        else (np.zeros(num_heads) if smooth_softmax == 1 else None)
    )
    scale_ = scale if scale else 1.0 / float(np.sqrt(h))
    y, scores, probs = attend(q, keys, values, scale_, bias, softcap=softcap, sink=sink)
    out = merge_heads(y)
    if num_outputs == 1:
        return out
    qk = np.where(seen, scores, 0) if qk_output == 1 else probs
    return (out, present_k, present_v, qk.astype(q.dtype))[:num_outputs]
