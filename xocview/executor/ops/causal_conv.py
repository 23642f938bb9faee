"""CausalConvWithState (opset 27): the stateful depthwise causal Conv1d of Mamba and Gated
DeltaNet, with its carry state for incremental decoding."""

from __future__ import annotations

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["causal_conv_with_state"]

_ACTIVATIONS = ("none", "silu", "swish")


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _check(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, past: np.ndarray | None) -> None:
    """Raises ValueError for inputs whose ranks or shapes disagree."""
    if x.ndim != 3:
        raise ValueError(f"CausalConvWithState: input has shape {x.shape}; expected (B, C, L)")
    b, c, _ = x.shape
    if w.ndim != 3 or w.shape[:2] != (c, 1) or w.shape[2] < 1:
        raise ValueError(
            f"CausalConvWithState: weight has shape {w.shape}; expected ({c}, 1, k) with k >= 1"
        )
    if bias is not None and bias.shape != (c,):
        raise ValueError(f"CausalConvWithState: bias has shape {bias.shape}; expected ({c},)")
    want = (b, c, w.shape[2] - 1)
    if past is not None and past.shape != want:
        raise ValueError(f"CausalConvWithState: past_state has shape {past.shape}; expected {want}")


def _silu(y: np.ndarray) -> np.ndarray:
    """y * sigmoid(y) in at least float32 (exp(-|y|) cannot overflow), rounded to y's dtype."""
    z = y.astype(np.promote_types(y.dtype, np.float32))
    e = np.exp(-np.abs(z))
    sig = np.where(z < 0, e, 1) / (1 + e)
    return np.asarray(z * sig).astype(y.dtype)


@kernel("CausalConvWithState", since=27)
def causal_conv_with_state(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None = None,
    past_state: np.ndarray | None = None,
    *,
    activation: str | bytes = "none",
) -> tuple[np.ndarray, np.ndarray]:
    """output[b, c, t] = sum_j weight[c, 0, j] * padded[b, c, t + j] (+ bias, then SiLU),
    where padded is past_state (zeros when omitted) followed by the input; present_state is
    padded's last k - 1 steps.

    One multiply-add per kernel tap over whole (B, C, L) planes, accumulated in at least
    float32 and rounded once, then the bias added in the input dtype: the reference's matmul
    accumulates float16 in float32 the same way.
    """
    act = _text(activation)
    if act not in _ACTIVATIONS:
        raise ValueError(
            f"CausalConvWithState: activation {act!r} is not supported; "
            "expected 'none', 'silu' or 'swish'"
        )
    if x.dtype.kind != "f" and x.dtype.name != "bfloat16":
        raise ValueError(f"CausalConvWithState: input dtype {x.dtype} is not supported")
    _check(x, weight, bias, past_state)
    b, c, length = x.shape
    k = weight.shape[2]
    pad = np.zeros((b, c, k - 1), dtype=x.dtype) if past_state is None else past_state
    padded = np.concatenate([pad.astype(x.dtype, copy=False), x], axis=2)
    work = np.promote_types(x.dtype, np.float32)
    taps = weight[:, 0, :].astype(work)
    acc = np.zeros((b, c, length), dtype=work)
    for j in range(k):
        acc += taps[:, j, None] * padded[:, :, j : j + length]
    y = acc.astype(x.dtype)
    if bias is not None:
        y += bias.astype(x.dtype, copy=False)[:, None]
    if act != "none":
        y = _silu(y)
    present = padded[:, :, padded.shape[2] - (k - 1) :].copy()
    return y, present
