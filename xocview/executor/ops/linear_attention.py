"""LinearAttention (opset 27): the recurrent-state attention of linear transformers, Gated
Linear Attention, DeltaNet and Gated DeltaNet, computed chunk-parallel.

Within a chunk of C steps starting from state S0, with G the cumulative log-decay since the
chunk's start and pair(X, Y)[t, s] = sum_d X_t[d] Y_s[d] exp(G_t[d] - G_s[d]) (s <= t), the
sequential recurrence unrolls to

    U = V                                         (linear, gated)
    (I + beta * pair_strict(K, K)) U = beta V - beta (exp(G) K) S0    (delta rules)
    O = scale * (exp(G) Q S0 + pair(Q, K) U)
    S = exp(G_C) S0 + (exp(G_C - G) K)^T U

so a chunk costs a few matmuls and one small triangular solve instead of C state updates.
Every exponent is a decay over steps already taken, so nothing overflows that the sequential
form would not.
"""

from __future__ import annotations

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["linear_attention"]

_RULES = ("linear", "gated", "delta", "gated_delta")
# Elements of the (.., C, C, d_k) decay tensor a per-key-dim decay needs, at most per chunk.
_PAIR_ELEMENTS = 1 << 24
# Largest spread of a chunk's cumulative log-decay that exp(+-spread/2) factors carry without
# overflow in float32 (itemsize 4) and float64 (8), with room for the values they scale.
_SPREAD = {4: 60.0, 8: 600.0}


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _unpack(x: np.ndarray, heads: int, name: str, work: np.dtype) -> np.ndarray:
    """(B, T, H*D) -> (B, H, 1, T, D) in the working dtype (axis 2: the query group)."""
    if x.ndim != 3 or x.shape[2] % heads:
        raise ValueError(
            f"LinearAttention: {name} has shape {x.shape}; expected (B, T, H*D) with {heads} heads"
        )
    b, t, hd = x.shape
    return x.reshape(b, t, heads, hd // heads).transpose(0, 2, 1, 3)[:, :, None].astype(work)


def _log_decay(decay: np.ndarray, q: np.ndarray, hkv: int, work: np.dtype) -> np.ndarray:
    """decay (B, T, Hkv) per head or (B, T, Hkv*d_k) per key dim -> (B, Hkv, 1, T, 1|d_k)."""
    b, t, dk = q.shape[0], q.shape[3], q.shape[4]
    if decay.ndim != 3 or decay.shape[:2] != (b, t) or decay.shape[2] not in (hkv, hkv * dk):
        raise ValueError(
            f"LinearAttention: decay has shape {decay.shape}; expected ({b}, {t}, {hkv}) or "
            f"({b}, {t}, {hkv * dk})"
        )
    per = decay.shape[2] // hkv
    return decay.reshape(b, t, hkv, per).transpose(0, 2, 1, 3)[:, :, None].astype(work)


def _beta(beta: np.ndarray, q: np.ndarray, hkv: int, work: np.dtype) -> np.ndarray:
    """beta (B, T, Hkv) or (B, T, 1) -> (B, Hkv|1, 1, T, 1)."""
    b, t = q.shape[0], q.shape[3]
    if beta.ndim != 3 or beta.shape[:2] != (b, t) or beta.shape[2] not in (hkv, 1):
        raise ValueError(
            f"LinearAttention: beta has shape {beta.shape}; expected ({b}, {t}, {hkv}) or "
            f"({b}, {t}, 1)"
        )
    return beta.transpose(0, 2, 1)[:, :, None, :, None].astype(work)


def _pair(x: np.ndarray, y: np.ndarray, g: np.ndarray | None, strict: bool) -> np.ndarray:
    """pair(x, y)[t, s] = sum_d x_t[d] y_s[d] exp(g_t[d] - g_s[d]) for s <= t (s < t when
    ``strict``), else 0; x (.., C, D), y and g (.., C, D|1)."""
    steps = x.shape[-2]
    lower = np.tri(steps, k=-1 if strict else 0, dtype=bool)
    if g is None:
        return np.matmul(x, np.swapaxes(y, -1, -2)) * lower
    if g.shape[-1] == 1:
        diff = g[..., :, 0][..., :, None] - g[..., :, 0][..., None, :]
        return np.matmul(x, np.swapaxes(y, -1, -2)) * np.exp(np.where(lower, diff, -np.inf))
    # Per key dim: exp(g_t - g_s) = exp(g_t - mid) exp(mid - g_s) makes it one matmul, when
    # each factor stays far from overflow; else the explicit (.., C, C, D) weights.
    top, bottom = g.max(axis=-2, keepdims=True), g.min(axis=-2, keepdims=True)
    if float(np.max(top - bottom, initial=0)) <= _SPREAD[x.dtype.itemsize]:
        shifted = g - (top + bottom) / 2
        xs, ys = x * np.exp(shifted), y * np.exp(-shifted)
        return np.matmul(xs, np.swapaxes(ys, -1, -2)) * lower
    diff = g[..., :, None, :] - g[..., None, :, :]
    weights = np.exp(np.where(lower[..., None], diff, -np.inf))
    return np.einsum("...td,...sd,...tsd->...ts", x, y, weights)


def _chunk(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    g: np.ndarray | None,
    beta: np.ndarray | None,
    state: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """One chunk: unscaled outputs (B, Hkv, group, C, d_v) and the state after it.

    ``g`` is the cumulative log-decay within the chunk; ``beta`` None for the rules without
    the delta correction.
    """
    decayed_k = k if g is None else k * np.exp(g)
    if beta is None:
        u = v
    else:
        a = beta * _pair(k, k, g, strict=True)
        a += np.eye(a.shape[-1], dtype=a.dtype)
        dv = v.shape[-1]
        solved = np.linalg.solve(a, np.concatenate([v, decayed_k], axis=-1) * beta)
        u = solved[..., :dv] - np.matmul(solved[..., dv:], state)
    decayed_q = q if g is None else q * np.exp(g)
    out = np.matmul(decayed_q, state) + np.matmul(_pair(q, k, g, strict=False), u)
    if g is not None:
        last = g[..., -1:, :]
        state = np.exp(np.swapaxes(last, -1, -2)) * state
        k = k * np.exp(last - g)
    state = state + np.matmul(np.swapaxes(k, -1, -2), u)
    return out, state


def _chunk_length(chunk_size: int, steps: int, per_dim: bool, batch: int) -> int:
    """The chunk_size hint clamped to the sequence, and small enough with a per-key-dim decay
    that its (B, H, group, C, C, d_k) pair terms stay under _PAIR_ELEMENTS."""
    length = max(1, min(int(chunk_size), steps))
    while per_dim and length > 8 and batch * length * length > _PAIR_ELEMENTS:
        length //= 2
    return length


def _validate(
    rule: str,
    q_num_heads: int,
    kv_num_heads: int,
    decay: np.ndarray | None,
    beta: np.ndarray | None,
) -> None:
    """Raises ValueError for an unknown rule, bad head counts, or decay/beta that the rule
    needs and lacks (or forbids and has)."""
    if rule not in _RULES:
        raise ValueError(
            f"LinearAttention: update_rule {rule!r} is not supported; expected 'linear', "
            "'gated', 'delta' or 'gated_delta'"
        )
    if q_num_heads <= 0 or kv_num_heads <= 0 or q_num_heads % kv_num_heads:
        raise ValueError(
            f"LinearAttention: q_num_heads {q_num_heads} must be a positive multiple of "
            f"kv_num_heads {kv_num_heads}"
        )
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    if gated != (decay is not None):
        raise ValueError(
            f"LinearAttention: update_rule {rule!r} {'needs' if gated else 'forbids'} decay"
        )
    if delta != (beta is not None):
        raise ValueError(
            f"LinearAttention: update_rule {rule!r} {'needs' if delta else 'forbids'} beta"
        )


@kernel("LinearAttention", since=27)
def linear_attention(
    query: np.ndarray,
    key: np.ndarray,
    value: np.ndarray,
    past_state: np.ndarray | None = None,
    decay: np.ndarray | None = None,
    beta: np.ndarray | None = None,
    *,
    q_num_heads: int,
    kv_num_heads: int,
    chunk_size: int = 64,
    scale: float = 0.0,
    update_rule: str | bytes = "gated_delta",
) -> tuple[np.ndarray, np.ndarray]:
    """output (B, T, Hq*d_v) and present_state (B, Hkv, d_k, d_v) of the recurrence that
    update_rule names, from past_state (zeros when omitted); scale 0 means 1/sqrt(d_k).

    Query heads h*g .. h*g+g-1 read kv head h's state. Computed in at least float32; the
    output comes back in the query's dtype, the state in past_state's (else the query's).
    """
    rule = _text(update_rule)
    _validate(rule, q_num_heads, kv_num_heads, decay, beta)
    for name, x in (("query", query), ("key", key), ("value", value)):
        if x.dtype.kind != "f" and x.dtype.name != "bfloat16":
            raise ValueError(f"LinearAttention: {name} dtype {x.dtype} is not supported")
    work = np.promote_types(query.dtype, np.float32)
    hq, hkv = int(q_num_heads), int(kv_num_heads)
    q = _unpack(query, hq, "query", work)
    b, _, _, steps, dk = q.shape
    q = q.reshape(b, hkv, hq // hkv, steps, dk)
    k = _unpack(key, hkv, "key", work)
    v = _unpack(value, hkv, "value", work)
    if k.shape[0] != b or k.shape[3:] != (steps, dk) or v.shape[0] != b or v.shape[3] != steps:
        raise ValueError(
            f"LinearAttention: query {query.shape}, key {key.shape} and value {value.shape} "
            f"disagree for {hq} query and {hkv} key/value heads"
        )
    dv = v.shape[4]
    g = None if decay is None else _log_decay(decay, q, hkv, work)
    rate = None if beta is None else _beta(beta, q, hkv, work)
    if past_state is None:
        state = np.zeros((b, hkv, 1, dk, dv), dtype=work)
    elif past_state.shape != (b, hkv, dk, dv):
        raise ValueError(
            f"LinearAttention: past_state has shape {past_state.shape}; expected {(b, hkv, dk, dv)}"
        )
    else:
        state = past_state.astype(work)[:, :, None]
    per_dim = g is not None and g.shape[-1] > 1
    length = _chunk_length(chunk_size, steps, per_dim, b * hq * dk)
    out = np.empty((b, hkv, hq // hkv, steps, dv), dtype=work)
    for t0 in range(0, steps, length):
        part = slice(t0, t0 + length)
        # the cumulative decay since the chunk's start, summed per chunk to keep it small
        gc = None if g is None else np.cumsum(g[:, :, :, part], axis=3)
        out[:, :, :, part], state = _chunk(
            q[:, :, :, part],
            k[:, :, :, part],
            v[:, :, :, part],
            gc,
            None if rate is None else rate[:, :, :, part],
            state,
        )
    factor = 1 / np.sqrt(dk) if not scale else float(scale)
    out *= work.type(factor)
    output = out.reshape(b, hq, steps, dv).transpose(0, 2, 1, 3).reshape(b, steps, hq * dv)
    state_dtype = query.dtype if past_state is None else past_state.dtype
    return output.astype(query.dtype), state[:, :, 0].astype(state_dtype)
