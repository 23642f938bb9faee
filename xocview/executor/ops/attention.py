"""Attention (scaled dot-product, opsets 23-25) and RotaryEmbedding (opset 23)."""

from __future__ import annotations

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["attention", "attention_23", "attention_24", "rotary_embedding", "safe_softmax"]

Outputs = np.ndarray | tuple[np.ndarray | None, ...]

# softmax_precision: TensorProto number -> numpy dtype (16, bfloat16, has no numpy type)
_PRECISION: dict[int, np.dtype] = {
    1: np.dtype(np.float32),
    10: np.dtype(np.float16),
    11: np.dtype(np.float64),
}


def _heads(x: np.ndarray, heads: int | None, name: str, attr: str) -> np.ndarray:
    """A 3-D (B, S, heads * D) input as the 4-D view (B, heads, S, D); 4-D inputs as they are."""
    if x.ndim == 4:
        return x
    if x.ndim != 3:
        raise ValueError(f"Attention: {name} has rank {x.ndim}; expected 3 or 4")
    if not heads or x.shape[2] % heads:
        raise ValueError(
            f"Attention: 3-D {name} of shape {x.shape} needs {attr} dividing its last dim, "
            f"got {heads}"
        )
    b, s, hidden = x.shape
    return x.reshape(b, s, heads, hidden // heads).transpose(0, 2, 1, 3)


def safe_softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis; a row of -inf (a query that may see no key) gives zeros,
    not NaN. An empty last axis raises numpy's ValueError."""
    peak = x.max(axis=-1, keepdims=True)
    e = np.exp(x - np.where(np.isneginf(peak), x.dtype.type(0), peak))
    total = e.sum(axis=-1, keepdims=True)
    e /= np.where(total == 0, x.dtype.type(1), total)
    return e


def _allowed(
    sq: int,
    skv: int,
    offset: int | np.ndarray,
    is_causal: int,
    left: int,
    right: int,
    nonpad: np.ndarray | None,
) -> np.ndarray | None:
    """Which keys each query may see from is_causal, the window and nonpad_kv_seqlen.

    ``offset`` (a scalar, or (B,) for an external cache) places query i at absolute position
    i + offset. Returns a boolean (Sq, Skv) or (B, 1, Sq, Skv) array, or None when all may.
    """
    allowed: np.ndarray | None = None
    if is_causal or left >= 0 or right >= 0:
        pos = np.arange(sq).reshape(-1, 1) + np.reshape(offset, (-1, 1, 1, 1))  # (B|1,1,Sq,1)
        dist = pos - np.arange(skv)  # query position minus key index
        allowed = np.ones(dist.shape, dtype=bool)
        if is_causal:
            allowed &= dist >= 0
        if left >= 0:
            allowed &= dist <= left
        if right >= 0:
            allowed &= -dist <= right
    if nonpad is not None:
        valid = np.arange(skv) < np.reshape(nonpad, (-1, 1, 1, 1))  # (B, 1, 1, Skv)
        allowed = valid if allowed is None else allowed & valid
    return allowed


def _bias(
    mask: np.ndarray | None, allowed: np.ndarray | None, skv: int, dtype: np.dtype
) -> np.ndarray | None:
    """The additive bias: attn_mask (bool -> 0 / -inf, padded with -inf up to Skv keys) plus
    -inf wherever ``allowed`` is False. None when there is nothing to add."""
    bias: np.ndarray | None = None
    neg_inf, zero = dtype.type(-np.inf), dtype.type(0)
    if mask is not None:
        if mask.ndim == 0:
            mask = mask.reshape(1)
        short = skv - mask.shape[-1]
        if short < 0:
            raise ValueError(f"Attention: attn_mask has {mask.shape[-1]} keys; K has {skv}")
        if mask.dtype == np.bool_:
            bias = np.where(mask, zero, neg_inf)
        else:
            bias = mask.astype(dtype, copy=False)
        if short:
            bias = np.pad(bias, [(0, 0)] * (bias.ndim - 1) + [(0, short)], constant_values=neg_inf)
    if allowed is not None:
        structural = np.where(allowed, zero, neg_inf)
        bias = structural if bias is None else bias + structural
    return bias


def _attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    attn_mask: np.ndarray | None,
    past_key: np.ndarray | None,
    past_value: np.ndarray | None,
    nonpad_kv_seqlen: np.ndarray | None,
    *,
    is_causal: int,
    kv_num_heads: int | None,
    q_num_heads: int | None,
    qk_matmul_output_mode: int,
    scale: float | None,
    softcap: float,
    softmax_precision: int | None,
    left_window_size: int,
    right_window_size: int,
    num_outputs: int,
) -> Outputs:
    """Every Attention version: Y, present_key, present_value, qk_matmul_output.

    Grouped-query heads are never repeated: query heads h*g .. h*g+g-1 share kv head h, so Q is
    viewed as (B, Hkv, g*Sq, D) and each kv head does one matmul for its g query heads.
    """
    if qk_matmul_output_mode not in (0, 1, 2, 3):
        raise ValueError(
            f"Attention: qk_matmul_output_mode {qk_matmul_output_mode} is not supported; "
            "expected 0, 1, 2 or 3"
        )
    if softmax_precision is not None and softmax_precision not in _PRECISION:
        raise ValueError(
            f"Attention: softmax_precision {softmax_precision} is not supported; "
            "expected 1 (float), 10 (half) or 11 (double)"
        )
    if softcap < 0:
        raise ValueError(f"Attention: softcap {softcap} is not supported; expected 0 or more")
    for name, size in (
        ("left_window_size", left_window_size),
        ("right_window_size", right_window_size),
    ):
        if size < -1:
            raise ValueError(f"Attention: {name} {size} is not supported; expected -1 or more")
    if (past_key is None) != (past_value is None):
        raise ValueError("Attention: past_key and past_value must be given together")
    if past_key is not None and nonpad_kv_seqlen is not None:
        raise ValueError("Attention: nonpad_kv_seqlen cannot be used with past_key/past_value")
    if not q.ndim == k.ndim == v.ndim:
        raise ValueError(f"Attention: Q, K and V have ranks {q.ndim}, {k.ndim} and {v.ndim}")
    rank3 = q.ndim == 3
    q4 = _heads(q, q_num_heads, "Q", "q_num_heads")
    k4 = _heads(k, kv_num_heads, "K", "kv_num_heads")
    v4 = _heads(v, kv_num_heads, "V", "kv_num_heads")
    dt = q.dtype
    root = dt.type(np.sqrt(1 / np.sqrt(q4.shape[3]) if scale is None else scale))
    if past_key is not None and past_value is not None:
        k4 = np.concatenate((past_key, k4), axis=2)
        v4 = np.concatenate((past_value, v4), axis=2)
    b, hq, sq, d = q4.shape
    hkv, skv = k4.shape[1], k4.shape[2]
    if hq % hkv:
        raise ValueError(f"Attention: {hq} query heads cannot share {hkv} key/value heads")
    group = hq // hkv

    # (B, Hkv, g*Sq, D) @ (B, Hkv, D, Skv) -> (B, Hq, Sq, Skv)
    qs = (q4 * root).reshape(b, hkv, group * sq, d)
    scores = np.matmul(qs, (k4 * root).transpose(0, 1, 3, 2)).reshape(b, hq, sq, skv)
    raw = scores
    if softcap > 0:
        cap = dt.type(softcap)
        scores = np.tanh(scores / cap) * cap
    capped = scores

    if past_key is not None:
        offset: int | np.ndarray = past_key.shape[2]
    elif nonpad_kv_seqlen is not None:
        offset = nonpad_kv_seqlen.astype(np.int64).reshape(-1) - sq
    else:
        offset = 0
    allowed = _allowed(
        sq, skv, offset, is_causal, left_window_size, right_window_size, nonpad_kv_seqlen
    )
    bias = _bias(attn_mask, allowed, skv, dt)
    if bias is not None:
        scores = scores + bias

    work = scores if softmax_precision is None else scores.astype(_PRECISION[softmax_precision])
    probs = safe_softmax(work)
    if bias is not None:  # a row with no key to attend: zeros, decided on the bias alone
        empty = np.isneginf(bias.max(axis=-1, keepdims=True))
        if empty.any():
            probs = np.where(empty, probs.dtype.type(0), probs)
    probs = probs.astype(dt, copy=False)

    y = np.matmul(probs.reshape(b, hkv, group * sq, skv), v4).reshape(b, hq, sq, v4.shape[3])
    if rank3:
        y = y.transpose(0, 2, 1, 3).reshape(b, sq, -1)
    if num_outputs <= 1:
        return y
    present_key = k4 if past_key is not None else k4.copy()
    present_value = v4 if past_value is not None else v4.copy()
    if num_outputs <= 3:
        return (y, present_key, present_value)[:num_outputs]
    qk = (raw, capped, scores, probs)[qk_matmul_output_mode]
    qk = np.broadcast_to(qk, (b, hq, sq, skv)).astype(dt)
    return y, present_key, present_value, qk


@kernel("Attention", since=23)
def attention_23(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    attn_mask: np.ndarray | None = None,
    past_key: np.ndarray | None = None,
    past_value: np.ndarray | None = None,
    *,
    is_causal: int = 0,
    kv_num_heads: int | None = None,
    q_num_heads: int | None = None,
    qk_matmul_output_mode: int = 0,
    scale: float | None = None,
    softcap: float = 0.0,
    softmax_precision: int | None = None,
    num_outputs: int = 1,
) -> Outputs:
    """Attention-23: softmax(Q K^T * scale (softcapped) + mask) V, with a KV cache.

    Causal masking is bottom-right aligned (query i sees key j <= i + past length); fully
    masked query rows give zeros.
    """
    return _attention(
        q,
        k,
        v,
        attn_mask,
        past_key,
        past_value,
        None,
        is_causal=is_causal,
        kv_num_heads=kv_num_heads,
        q_num_heads=q_num_heads,
        qk_matmul_output_mode=qk_matmul_output_mode,
        scale=scale,
        softcap=softcap,
        softmax_precision=softmax_precision,
        left_window_size=-1,
        right_window_size=-1,
        num_outputs=num_outputs,
    )


@kernel("Attention", since=24)
def attention_24(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    attn_mask: np.ndarray | None = None,
    past_key: np.ndarray | None = None,
    past_value: np.ndarray | None = None,
    nonpad_kv_seqlen: np.ndarray | None = None,
    *,
    is_causal: int = 0,
    kv_num_heads: int | None = None,
    q_num_heads: int | None = None,
    qk_matmul_output_mode: int = 0,
    scale: float | None = None,
    softcap: float = 0.0,
    softmax_precision: int | None = None,
    num_outputs: int = 1,
) -> Outputs:
    """Attention-24 adds nonpad_kv_seqlen (B,): keys at and past it are padding, and the
    causal frontier of batch b is offset by nonpad_kv_seqlen[b] - Sq."""
    return _attention(
        q,
        k,
        v,
        attn_mask,
        past_key,
        past_value,
        nonpad_kv_seqlen,
        is_causal=is_causal,
        kv_num_heads=kv_num_heads,
        q_num_heads=q_num_heads,
        qk_matmul_output_mode=qk_matmul_output_mode,
        scale=scale,
        softcap=softcap,
        softmax_precision=softmax_precision,
        left_window_size=-1,
        right_window_size=-1,
        num_outputs=num_outputs,
    )


@kernel("Attention", since=25)
def attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    attn_mask: np.ndarray | None = None,
    past_key: np.ndarray | None = None,
    past_value: np.ndarray | None = None,
    nonpad_kv_seqlen: np.ndarray | None = None,
    *,
    is_causal: int = 0,
    kv_num_heads: int | None = None,
    q_num_heads: int | None = None,
    qk_matmul_output_mode: int = 0,
    scale: float | None = None,
    softcap: float = 0.0,
    softmax_precision: int | None = None,
    left_window_size: int = -1,
    right_window_size: int = -1,
    num_outputs: int = 1,
) -> Outputs:
    """Attention-25 adds a sliding window: query at absolute position p sees keys
    p - left_window_size .. p + right_window_size (-1: unbounded on that side)."""
    if q.ndim == 4 and (q_num_heads is not None or kv_num_heads is not None):
        raise ValueError("Attention: q_num_heads and kv_num_heads are for 3-D inputs only")
    return _attention(
        q,
        k,
        v,
        attn_mask,
        past_key,
        past_value,
        nonpad_kv_seqlen,
        is_causal=is_causal,
        kv_num_heads=kv_num_heads,
        q_num_heads=q_num_heads,
        qk_matmul_output_mode=qk_matmul_output_mode,
        scale=scale,
        softcap=softcap,
        softmax_precision=softmax_precision,
        left_window_size=left_window_size,
        right_window_size=right_window_size,
        num_outputs=num_outputs,
    )


@kernel("RotaryEmbedding", since=23)
def rotary_embedding(
    x: np.ndarray,
    cos_cache: np.ndarray,
    sin_cache: np.ndarray,
    position_ids: np.ndarray | None = None,
    *,
    interleaved: int = 0,
    num_heads: int = 0,
    rotary_embedding_dim: int = 0,
) -> np.ndarray:
    """Rotate the first rotary_embedding_dim (0: all) features of each head by the angles in
    the caches: halves (x1, x2) or, interleaved, even/odd pairs become
    (x1 cos - x2 sin, x1 sin + x2 cos).

    X is (B, H, S, D), or (B, S, H*D) with num_heads. The caches are (max_position, R/2)
    gathered by position_ids (B, S), or (B, S, R/2) without them.
    """
    if x.ndim == 4:
        b, _, s, d = x.shape
        view = x
    elif x.ndim == 3:
        b, s, hidden = x.shape
        if num_heads <= 0 or hidden % num_heads:
            raise ValueError(
                f"RotaryEmbedding: 3-D input {x.shape} needs num_heads dividing {hidden}, "
                f"got {num_heads}"
            )
        d = hidden // num_heads
        view = x.reshape(b, s, num_heads, d)
    else:
        raise ValueError(f"RotaryEmbedding: input has rank {x.ndim}; expected 3 or 4")
    rot = rotary_embedding_dim or d
    if rot % 2 or rot > d or rot < 0:
        raise ValueError(
            f"RotaryEmbedding: rotary_embedding_dim {rotary_embedding_dim} is not supported "
            f"for head size {d}; expected an even number up to it"
        )
    if position_ids is not None:
        ids = position_ids.astype(np.intp, copy=False)
        n = cos_cache.shape[0]
        if ids.size and (ids.min() < 0 or ids.max() >= n):
            raise ValueError(f"RotaryEmbedding: position_ids must be in 0..{n - 1}")
        cos, sin = cos_cache[ids], sin_cache[ids]
    else:
        cos, sin = cos_cache, sin_cache
    half = rot // 2
    if cos.shape[-1] != half or sin.shape[-1] != half:
        raise ValueError(
            f"RotaryEmbedding: caches have {cos.shape[-1]} and {sin.shape[-1]} angles; "
            f"rotating {rot} features needs {half}"
        )
    # (B, S, R/2) -> broadcast over heads: (B, 1, S, R/2) for 4-D, (B, S, 1, R/2) for 3-D
    axis = 1 if x.ndim == 4 else 2
    cos = np.expand_dims(cos.astype(x.dtype, copy=False), axis)
    sin = np.expand_dims(sin.astype(x.dtype, copy=False), axis)
    out = view.copy()
    if interleaved:
        x1, x2 = view[..., 0:rot:2], view[..., 1:rot:2]
        out[..., 0:rot:2] = cos * x1 - sin * x2
        out[..., 1:rot:2] = sin * x1 + cos * x2
    else:
        x1, x2 = view[..., :half], view[..., half:rot]
        out[..., :half] = cos * x1 - sin * x2
        out[..., half:rot] = sin * x1 + cos * x2
    return out.reshape(x.shape)
