"""FlexAttention (ai.onnx.preview, version 1): scaled dot-product attention whose scores and
probabilities a modifier may rewrite.

The modifiers are the op's ``score_mod`` and ``prob_mod`` graph attributes. The kernel takes
them as plain callables, array in and array out, so that whatever runs subgraphs can hand one
over: ``flex_attention(q, k, v, score_mod=fn)``. A graph attribute that reaches the kernel as
anything but a callable is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from xocview.executor.ops.attention import safe_softmax
from xocview.executor.registry import kernel

__all__ = ["Modifier", "flex_attention"]

# (B, Hq, L, S) scores or probabilities in the softmax precision -> the same shape and dtype
Modifier = Callable[[np.ndarray], np.ndarray]

# softmax_precision: TensorProto number -> numpy dtype name (16: bfloat16, through ml_dtypes)
_PRECISION = {1: "float32", 10: "float16", 11: "float64", 16: "bfloat16"}


def _softmax_dtype(dtype: np.dtype, softmax_precision: int | None) -> np.dtype:
    """The softmax's working dtype: the attribute's, else float64 for float64 inputs and
    float32 for the rest."""
    if softmax_precision is None:
        return np.dtype(np.float64 if dtype == np.float64 else np.float32)
    name = _PRECISION.get(int(softmax_precision))
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    if name is None:
        raise ValueError(
            f"FlexAttention: softmax_precision {softmax_precision} is not supported; "
            "expected 1 (float), 10 (float16), 11 (double) or 16 (bfloat16)"
        )
    return np.dtype(name)


def _check(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
    """Raises ValueError for inputs that are not rank 4 or whose shapes disagree."""
    if not q.ndim == k.ndim == v.ndim == 4:
        raise ValueError(
            f"FlexAttention: Q, K and V have shapes {q.shape}, {k.shape} and {v.shape}; "
            "expected rank 4 (B, H, S, D)"
        )
    if k.shape[:3] != v.shape[:3] or q.shape[0] != k.shape[0] or q.shape[3] != k.shape[3]:
        raise ValueError(
            f"FlexAttention: Q {q.shape}, K {k.shape} and V {v.shape} disagree on batch, "
            "heads, key length or head size"
        )
    if k.shape[1] == 0 or q.shape[1] % k.shape[1]:
        raise ValueError(
            f"FlexAttention: {q.shape[1]} query heads cannot share {k.shape[1]} key/value heads"
        )


def _modified(fn: Modifier | None, x: np.ndarray, name: str) -> np.ndarray:
    """``fn(x)`` checked to keep x's shape, in x's dtype; x itself without a modifier."""
    if fn is None:
        return x
    out = np.asarray(fn(x))
    if out.shape != x.shape:
        raise ValueError(f"FlexAttention: {name} gave shape {out.shape}; expected {x.shape}")
    return out.astype(x.dtype, copy=False)


def _softmax(x: np.ndarray) -> np.ndarray:
    """attention's safe_softmax (a row a score_mod masked whole gives zeros, as PyTorch's
    flex_attention does, not NaN), which also takes a query with no keys (S = 0)."""
    return x.copy() if x.shape[-1] == 0 else safe_softmax(x)


def _single(out: Any, name: str) -> Any:
    if isinstance(out, list | tuple):
        if len(out) != 1:
            raise ValueError(f"FlexAttention: {name} gives {len(out)} outputs; expected 1")
        return out[0]
    return out


def _hook(value: Any, name: str) -> Modifier | None:
    """A modifier given to the kernel: None or a callable (a bound subgraph returns the list of
    its outputs: it must have one); a graph it cannot run is refused."""
    if value is None:
        return None
    if callable(value):
        return lambda x: _single(value(x), name)
    raise ValueError(
        f"FlexAttention: graph attribute {name} is not supported without a subgraph runner; "
        "the kernel takes it as a callable"
    )


@kernel("FlexAttention", since=1)
def flex_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    scale: float | None = None,
    softmax_precision: int | None = None,
    score_mod: Modifier | None = None,
    prob_mod: Modifier | None = None,
) -> np.ndarray:
    """FlexAttention-1 of ai.onnx.preview: Y = prob_mod(softmax(score_mod(Q K^T * scale))) V,
    the modifiers being optional. ``score_mod``/``prob_mod`` are the hooks for the modifier
    subgraphs: callables taking and returning a (B, Hq, L, S) array.

    Q and K are each scaled by sqrt(scale) in the input dtype before their product, as the
    reference does (float16 keeps its range); scores, softmax and the product with V run in
    the softmax precision. Grouped-query heads are never repeated: query heads h*g .. h*g+g-1
    share kv head h, so Q is viewed as (B, Hkv, g*L, E) for one matmul per kv head. The
    modifiers see the full (B, Hq, L, S) tensor.
    """
    if q.dtype.kind != "f" and q.dtype.name != "bfloat16":
        raise ValueError(f"FlexAttention: input dtype {q.dtype} is not supported")
    score_hook, prob_hook = _hook(score_mod, "score_mod"), _hook(prob_mod, "prob_mod")
    _check(q, k, v)
    b, hq, length, e = q.shape
    hkv, s = k.shape[1], k.shape[2]
    group = hq // hkv
    work = _softmax_dtype(q.dtype, softmax_precision)
    factor = 1 / np.sqrt(e) if scale is None else float(scale)
    root = np.asarray(np.sqrt(np.float32(factor))).astype(q.dtype)
    qs = (q * root).reshape(b, hkv, group * length, e)
    scores = np.matmul(qs, np.swapaxes(k * root, -1, -2)).astype(work)
    scores = _modified(score_hook, scores.reshape(b, hq, length, s), "score_mod")
    probs = _modified(prob_hook, _softmax(scores), "prob_mod")
    y = np.matmul(probs.reshape(b, hkv, group * length, s), v.astype(work))
    return y.reshape(b, hq, length, v.shape[3]).astype(v.dtype)
