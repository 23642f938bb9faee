"""Index-pattern kernels: Trilu (triangular parts of matrices) and ReverseSequence."""

from __future__ import annotations

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["reverse_sequence", "trilu"]


def _scalar_int(value: np.ndarray, op: str, name: str) -> int:
    """A one-element integer tensor input as a Python int."""
    arr = np.asarray(value)
    if arr.size != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"{op}: {name} must be one integer; got {arr.dtype} of shape {arr.shape}")
    return int(arr.reshape(-1)[0])


def _zero(dtype: np.dtype) -> np.ndarray:
    """The dtype's zero as a 0-d array: "" for strings, False for bools."""
    if dtype.kind == "O":
        return np.array("", dtype=object)
    return np.zeros((), dtype=dtype)


@kernel("Trilu", since=14)
def trilu(x: np.ndarray, k: np.ndarray | None = None, *, upper: int = 1) -> np.ndarray:
    """Keep the elements with column - row >= k (upper) or <= k (lower) of the last two axes;
    the rest become zero. ``k`` is an optional int64 scalar, 0 when absent."""
    if x.ndim < 2:
        raise ValueError(f"Trilu: input has rank {x.ndim}; expected 2 or more")
    diagonal = 0 if k is None else _scalar_int(k, "Trilu", "k")
    rows, cols = x.shape[-2:]
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    keep = offset >= diagonal if upper else offset <= diagonal
    return np.where(keep, x, _zero(x.dtype))


@kernel("ReverseSequence", since=10)
def reverse_sequence(
    x: np.ndarray, sequence_lens: np.ndarray, *, batch_axis: int = 1, time_axis: int = 0
) -> np.ndarray:
    """For batch entry b, the first ``sequence_lens[b]`` steps along ``time_axis`` reversed, the
    rest copied: one gather with a per-(time, batch) source index."""
    if x.ndim < 2:
        raise ValueError(f"ReverseSequence: input has rank {x.ndim}; expected 2 or more")
    if {batch_axis, time_axis} != {0, 1}:
        raise ValueError(
            f"ReverseSequence: batch_axis {batch_axis} and time_axis {time_axis}; "
            "expected 0 and 1 in either order"
        )
    steps, batch = x.shape[time_axis], x.shape[batch_axis]
    lens = np.asarray(sequence_lens).reshape(-1).astype(np.int64)
    if lens.shape != (batch,):
        raise ValueError(f"ReverseSequence: {lens.size} sequence_lens for a batch of {batch}")
    if np.any((lens < 0) | (lens > steps)):
        raise ValueError(f"ReverseSequence: sequence_lens {lens.tolist()} must be in 0..{steps}")
    t = np.arange(steps)[:, None]  # (time, batch)
    source = np.where(t < lens[None, :], lens[None, :] - 1 - t, t)
    if time_axis == 1:
        source = source.T
    index = source.reshape(source.shape + (1,) * (x.ndim - 2))
    return np.take_along_axis(x, index, axis=time_axis)
