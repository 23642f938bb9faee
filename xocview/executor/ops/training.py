"""Optimizer steps of domain ai.onnx.preview.training: Adagrad, Adam and Momentum.

Each takes the learning rate R and the update count T, then every optimised tensor X, then
their gradients G, then each kind of state (H, V) for every tensor, and gives the new X of every
tensor followed by each new state. Updates run in float64 and are cast back to the dtypes of X
and the states, as onnx's reference casts them.
"""

from __future__ import annotations

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["adagrad", "adam", "momentum"]


def _scalar(value: np.ndarray, op: str, name: str) -> float:
    """A one-element tensor input as a Python float."""
    arr = np.asarray(value)
    if arr.size != 1 or arr.dtype.kind not in "iuf":
        raise ValueError(f"{op}: {name} must be one number; got {arr.dtype} of shape {arr.shape}")
    return float(arr.reshape(-1)[0])


def _groups(op: str, tensors: tuple[np.ndarray, ...], kinds: str) -> list[list[np.ndarray]]:
    """The variadic inputs split into one list per kind (X, G, then the states).

    Raises ValueError when the count does not divide or a tensor's shape differs from its X's.
    """
    per = len(kinds)
    if not tensors or len(tensors) % per:
        raise ValueError(
            f"{op}: {len(tensors)} tensors after R and T; expected a multiple of {per} "
            f"({', '.join(kinds)} for each optimised tensor)"
        )
    n = len(tensors) // per
    groups = [list(tensors[i * n : (i + 1) * n]) for i in range(per)]
    for j, x in enumerate(groups[0]):
        for kind, group in zip(kinds[1:], groups[1:], strict=True):
            if group[j].shape != x.shape:
                raise ValueError(
                    f"{op}: {kind} of tensor {j} has shape {group[j].shape}; X has {x.shape}"
                )
    for kind, group in zip(kinds, groups, strict=True):
        for t in group:
            if t.dtype.kind != "f":
                raise ValueError(f"{op}: {kind} dtype {t.dtype} is not supported; floats are")
    return groups


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64, copy=False)


@kernel("Adagrad", since=1)
def adagrad(
    r: np.ndarray,
    t: np.ndarray,
    *tensors: np.ndarray,
    decay_factor: float = 0.0,
    epsilon: float = 1e-6,
    norm_coefficient: float = 0.0,
) -> tuple[np.ndarray, ...]:
    """Inputs R, T, X..., G..., H...; outputs X_new..., H_new...: an ADAGRAD step whose rate
    decays as R / (1 + T * decay_factor)."""
    xs, gs, hs = _groups("Adagrad", tensors, "XGH")
    rate = _scalar(r, "Adagrad", "R") / (1 + _scalar(t, "Adagrad", "T") * decay_factor)
    new_x, new_h = [], []
    for x, g, h in zip(xs, gs, hs, strict=True):
        grad = norm_coefficient * _wide(x) + g
        h_new = h + grad * grad
        new_x.append((x - rate * grad / (np.sqrt(h_new) + epsilon)).astype(x.dtype))
        new_h.append(h_new.astype(h.dtype))
    return (*new_x, *new_h)


@kernel("Adam", since=1)
def adam(
    r: np.ndarray,
    t: np.ndarray,
    *tensors: np.ndarray,
    alpha: float = 0.9,
    beta: float = 0.999,
    epsilon: float = 1e-6,
    norm_coefficient: float = 0.0,
    norm_coefficient_post: float = 0.0,
) -> tuple[np.ndarray, ...]:
    """Inputs R, T, X..., G..., V..., H...; outputs X_new..., V_new..., H_new...: an Adam step
    with bias correction once T > 0 and an optional post-update decay of X."""
    xs, gs, vs, hs = _groups("Adam", tensors, "XGVH")
    rate, step = _scalar(r, "Adam", "R"), _scalar(t, "Adam", "T")
    if step > 0:
        rate = rate * np.sqrt(1 - beta**step) / (1 - alpha**step)
    new_x, new_v, new_h = [], [], []
    for x, g, v, h in zip(xs, gs, vs, hs, strict=True):
        grad = norm_coefficient * _wide(x) + g
        v_new = alpha * _wide(v) + (1 - alpha) * grad
        h_new = beta * _wide(h) + (1 - beta) * grad * grad
        x_new = x - rate * v_new / (np.sqrt(h_new) + epsilon)
        new_x.append(((1 - norm_coefficient_post) * x_new).astype(x.dtype))
        new_v.append(v_new.astype(v.dtype))
        new_h.append(h_new.astype(h.dtype))
    return (*new_x, *new_v, *new_h)


@kernel("Momentum", since=1)
def momentum(
    r: np.ndarray,
    t: np.ndarray,
    *tensors: np.ndarray,
    alpha: float,
    beta: float,
    mode: str,
    norm_coefficient: float,
) -> tuple[np.ndarray, ...]:
    """Inputs R, T, X..., G..., V...; outputs X_new..., V_new...: SGD with standard or Nesterov
    momentum; the gradient's coefficient beta is 1 on the first step (T = 0)."""
    if mode not in ("standard", "nesterov"):
        raise ValueError(f"Momentum: mode {mode!r} is not supported; standard or nesterov are")
    xs, gs, vs = _groups("Momentum", tensors, "XGV")
    rate = _scalar(r, "Momentum", "R")
    coefficient = beta if _scalar(t, "Momentum", "T") > 0 else 1.0
    new_x, new_v = [], []
    for x, g, v in zip(xs, gs, vs, strict=True):
        grad = norm_coefficient * _wide(x) + g
        v_new = alpha * _wide(v) + coefficient * grad
        direction = grad + alpha * v_new if mode == "nesterov" else v_new
        new_x.append((x - rate * direction).astype(x.dtype))
        new_v.append(v_new.astype(v.dtype))
    return (*new_x, *new_v)
