"""TensorScatter (opset 24): the functional KV-cache update of LLM decoders."""

from __future__ import annotations

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["tensor_scatter"]

_MODES = ("linear", "circular")


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _check_shapes(past: np.ndarray, update: np.ndarray, axis: int) -> None:
    """The update must match the cache everywhere but the sequence axis, and be no longer."""
    if update.ndim != past.ndim:
        raise ValueError(f"TensorScatter: update has rank {update.ndim}; the cache {past.ndim}")
    for i, (c, u) in enumerate(zip(past.shape, update.shape, strict=True)):
        if (i == axis and u > c) or (i != axis and u != c):
            raise ValueError(
                f"TensorScatter: update of shape {update.shape} does not fit the cache of "
                f"shape {past.shape} along axis {axis}"
            )


def _write_indices(indices: np.ndarray | None, batch: int) -> np.ndarray:
    """The (B,) int64 start positions; zeros when the input is omitted."""
    if indices is None:
        return np.zeros(batch, dtype=np.int64)
    if indices.dtype.kind not in "iu" or indices.shape != (batch,):
        raise ValueError(
            f"TensorScatter: write_indices is {indices.dtype} of shape {indices.shape}; "
            f"expected int64 of shape ({batch},)"
        )
    return indices.astype(np.int64)


@kernel("TensorScatter", since=24)
def tensor_scatter(
    past_cache: np.ndarray,
    update: np.ndarray,
    write_indices: np.ndarray | None = None,
    *,
    mode: str | bytes = "linear",
    axis: int = -2,
) -> np.ndarray:
    """A copy of the cache with batch b's update written along ``axis`` from
    write_indices[b] on; circular mode wraps the positions modulo the cache length.

    One put_along_axis with a (B, 1, .., S, .., 1) position index broadcast to the update;
    the update is no longer than the cache, so no position is written twice.
    """
    how = _text(mode)
    if how not in _MODES:
        raise ValueError(
            f"TensorScatter: mode {how!r} is not supported; expected 'linear' or 'circular'"
        )
    rank = past_cache.ndim
    if not -rank <= axis < rank or axis % rank == 0:
        raise ValueError(
            f"TensorScatter: axis {axis} is not supported for rank {rank}; expected 1..{rank - 1} "
            "(axis 0 is the batch)"
        )
    axis %= rank
    _check_shapes(past_cache, update, axis)
    batch, length, steps = past_cache.shape[0], past_cache.shape[axis], update.shape[axis]
    start = _write_indices(write_indices, batch)
    out = past_cache.copy()
    if steps == 0 or update.size == 0:
        return out
    if how == "circular":
        positions = (start[:, None] + np.arange(steps)) % length
    else:
        if np.any(start < 0) or np.any(start + steps > length):
            raise ValueError(
                f"TensorScatter: linear writes of {steps} steps at {start.tolist()} do not fit "
                f"a cache of length {length}"
            )
        positions = start[:, None] + np.arange(steps)
    shape = [1] * rank
    shape[0], shape[axis] = batch, steps
    index = np.broadcast_to(positions.reshape(shape), update.shape)
    np.put_along_axis(out, index, update.astype(out.dtype, copy=False), axis=axis)
    return out
