"""Class probabilities from one-vs-one pair probabilities: the pairwise coupling of Wu, Lin
and Weng (2004, method 2) that libsvm uses, iterated as onnxruntime does it.

Computed in float32 in onnxruntime's order of operations, every row at once: each row stops
when its own error is under the threshold, so a row must see the same steps as there.
"""

from __future__ import annotations

import numpy as np

__all__ = ["couple"]

_MAX_ROUNDS = 100
_CLIP = np.float32(1e-7)


def _pair_matrix(platt: np.ndarray, classes: int) -> np.ndarray:
    """r[n, i, j]: the probability that i beats j (clipped into (0, 1)); r[n, j, i] its
    complement; a zero diagonal."""
    f = np.float32
    p = np.clip(platt.astype(f), _CLIP, f(1) - _CLIP)
    i, j = np.triu_indices(classes, k=1)
    r = np.zeros((platt.shape[0], classes, classes), dtype=f)
    r[:, i, j] = p
    r[:, j, i] = f(1) - p
    return r


def _q_matrix(r: np.ndarray) -> np.ndarray:
    """Q[i, i] = sum over j != i of r[j, i]^2 (summed in j's order); Q[i, j] = -r[j, i]
    r[i, j]."""
    classes = r.shape[1]
    q = -r.transpose(0, 2, 1) * r
    diagonal = np.zeros(r.shape[:2], dtype=np.float32)
    for j in range(classes):
        diagonal += r[:, j, :] * r[:, j, :]  # r[j, j] is 0: adds nothing
    idx = np.arange(classes)
    q[:, idx, idx] = diagonal
    return q


def _times(q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Q @ p per row, summed in column order as onnxruntime's loop does."""
    out = np.zeros(p.shape, dtype=np.float32)
    for j in range(p.shape[1]):
        out += q[:, :, j] * p[:, j : j + 1]
    return out


def _dot(p: np.ndarray, qp: np.ndarray) -> np.ndarray:
    total = np.zeros(p.shape[0], dtype=np.float32)
    for i in range(p.shape[1]):
        total += p[:, i] * qp[:, i]
    return total


def couple(platt: np.ndarray, classes: int) -> np.ndarray:
    """[N, classes] probabilities from the Platt-scaled pair probabilities [N, pairs] (pairs
    (i, j), i < j, in libsvm's order: the probability that i wins)."""
    f = np.float32
    q = _q_matrix(_pair_matrix(platt, classes))
    rows = platt.shape[0]
    p = np.full((rows, classes), f(1) / f(classes), dtype=f)
    eps = f(0.005) / f(classes)
    active = np.ones(rows, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(_MAX_ROUNDS):
            qp = _times(q[active], p[active])
            pqp = _dot(p[active], qp)
            error = np.abs(qp - pqp[:, None]).max(axis=1, initial=f(0))
            still = error >= eps
            at = np.flatnonzero(active)
            active[at[~still]] = False
            if not active.any():
                break
            p[active] = _sweep(q[active], p[active], qp[still], pqp[still])
    return p.astype(np.float64)


def _sweep(q: np.ndarray, p: np.ndarray, qp: np.ndarray, pqp: np.ndarray) -> np.ndarray:
    """One round of updates, class by class, each renormalising p, Qp and pQp."""
    f = np.float32
    p, qp = p.copy(), qp.copy()
    for i in range(p.shape[1]):
        qii = q[:, i, i]
        diff = (-qp[:, i] + pqp) / qii
        p[:, i] += diff
        scale = f(1) + diff
        pqp = (pqp + diff * (diff * qii + f(2) * qp[:, i])) / scale / scale
        qp = (qp + diff[:, None] * q[:, i, :]) / scale[:, None]
        p = p / scale[:, None]
    return p
