"""Sequence and Optional ops: values that are lists of tensors, or may hold nothing.

A sequence is a Python list of arrays; an optional is its value, or ``EMPTY`` when it holds
none (see executor/optional.py). SequenceMap's body arrives as a callable, like Loop's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from xocview.executor.ops.constants import onnx_numpy_dtype
from xocview.executor.optional import EMPTY, Empty
from xocview.executor.registry import kernel

__all__ = [
    "concat_from_sequence",
    "optional",
    "optional_get_element",
    "optional_has_element",
    "sequence_at",
    "sequence_construct",
    "sequence_empty",
    "sequence_erase",
    "sequence_insert",
    "sequence_length",
    "sequence_map",
    "split_to_sequence",
]


def _sequence(value: Any, op: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{op}: expected a sequence input, got {type(value).__name__}")
    return value


def _position(position: np.ndarray | None, size: int, op: str, *, end_ok: bool) -> int:
    """A position in ``[-size, size)`` (``size`` included for an insertion) as an index."""
    if position is None:
        return size if end_ok else size - 1
    arr = np.asarray(position)
    if arr.size != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"{op}: position must be one integer; got {arr.dtype}{list(arr.shape)}")
    p = int(arr.reshape(-1)[0])
    top = size if end_ok else size - 1
    if not -size <= p <= top:
        raise ValueError(f"{op}: position {p} is out of range for a sequence of {size}")
    return p + size if p < 0 else p


@kernel("SequenceConstruct", since=11)
def sequence_construct(*inputs: np.ndarray) -> list[np.ndarray]:
    dtypes = {x.dtype for x in inputs}
    if len(dtypes) > 1:
        raise ValueError(f"SequenceConstruct: tensors of types {sorted(map(str, dtypes))} mixed")
    return list(inputs)


@kernel("SequenceEmpty", since=11)
def sequence_empty(*, dtype: int = 1) -> list[np.ndarray]:
    onnx_numpy_dtype(dtype, "SequenceEmpty")  # an unknown type is refused even for no element
    return []


@kernel("SequenceAt", since=11)
def sequence_at(input_sequence: list[Any], position: np.ndarray) -> np.ndarray:
    seq = _sequence(input_sequence, "SequenceAt")
    return seq[_position(position, len(seq), "SequenceAt", end_ok=False)]


@kernel("SequenceInsert", since=11)
def sequence_insert(
    input_sequence: list[Any], tensor: np.ndarray, position: np.ndarray | None = None
) -> list[Any]:
    seq = _sequence(input_sequence, "SequenceInsert")
    at = _position(position, len(seq), "SequenceInsert", end_ok=True)
    return [*seq[:at], tensor, *seq[at:]]


@kernel("SequenceErase", since=11)
def sequence_erase(input_sequence: list[Any], position: np.ndarray | None = None) -> list[Any]:
    seq = _sequence(input_sequence, "SequenceErase")
    if not seq:
        raise ValueError("SequenceErase: the sequence is empty")
    at = _position(position, len(seq), "SequenceErase", end_ok=False)
    return [*seq[:at], *seq[at + 1 :]]


@kernel("SequenceLength", since=11)
def sequence_length(input_sequence: list[Any]) -> np.ndarray:
    return np.array(len(_sequence(input_sequence, "SequenceLength")), dtype=np.int64)


@kernel("SplitToSequence", since=11)
def split_to_sequence(
    input: np.ndarray, split: np.ndarray | None = None, *, axis: int = 0, keepdims: int = 1
) -> list[np.ndarray]:
    """Pieces along ``axis``: one per index (squeezed unless ``keepdims``) without ``split``,
    of ``split`` elements each for a scalar (the last shorter), else of the listed lengths."""
    if not -input.ndim <= axis < input.ndim:
        raise ValueError(f"SplitToSequence: axis {axis} is out of range for rank {input.ndim}")
    axis %= input.ndim
    n = input.shape[axis]
    if split is None:
        pieces = np.split(input, n, axis=axis) if n else []
        return pieces if keepdims else [np.squeeze(p, axis=axis) for p in pieces]
    s = np.asarray(split).astype(np.int64)
    if s.ndim == 0:
        size = int(s)
        if size <= 0:
            raise ValueError(f"SplitToSequence: split {size} must be positive")
        cuts = list(range(size, n, size))
    else:
        if np.any(s < 0) or int(s.sum()) != n:
            raise ValueError(f"SplitToSequence: split {s.tolist()} does not add up to {n}")
        cuts = np.cumsum(s)[:-1].tolist()
    return np.split(input, cuts, axis=axis)


@kernel("ConcatFromSequence", since=11)
def concat_from_sequence(input_sequence: list[Any], *, axis: int, new_axis: int = 0) -> np.ndarray:
    seq = _sequence(input_sequence, "ConcatFromSequence")
    if not seq:
        raise ValueError("ConcatFromSequence: the sequence is empty")
    rank = seq[0].ndim + (1 if new_axis else 0)
    if not -rank <= axis < rank:
        raise ValueError(f"ConcatFromSequence: axis {axis} is out of range for rank {rank}")
    if new_axis:
        return np.stack(seq, axis=axis % rank)
    return np.concatenate(seq, axis=axis % rank)


@kernel("SequenceMap", since=17)
def sequence_map(
    input_sequence: list[Any], *additional_inputs: Any, body: Callable[..., list[Any]]
) -> tuple[list[Any], ...]:
    """``body`` on the i-th element of every sequence input (tensor inputs as they are); each
    body output becomes a sequence."""
    seq = _sequence(input_sequence, "SequenceMap")
    for extra in additional_inputs:
        if isinstance(extra, list) and len(extra) != len(seq):
            raise ValueError(
                f"SequenceMap: sequences of {len(seq)} and {len(extra)} elements; they must agree"
            )
    results: list[list[Any]] = []
    for i, element in enumerate(seq):
        args = [x[i] if isinstance(x, list) else x for x in additional_inputs]
        out = body(element, *args)
        if not results:
            results = [[] for _ in out]
        for bucket, value in zip(results, out, strict=True):
            bucket.append(value)
    if not results:
        results = [[] for _ in range(getattr(body, "num_outputs", 1))]
    return tuple(results)


@kernel("Optional", since=15)
def optional(input: Any = None, *, type: Any = None) -> Any:
    """The input as an optional; without one, an empty optional (of ``type``)."""
    return EMPTY if input is None else input


@kernel("OptionalHasElement", since=15)
def optional_has_element(input: Any = None) -> np.ndarray:
    return np.array(input is not None and not isinstance(input, Empty))


@kernel("OptionalGetElement", since=15)
def optional_get_element(input: Any) -> Any:
    """The value an optional holds (opset 18 also takes a plain tensor or sequence: itself)."""
    if isinstance(input, Empty):
        raise ValueError("OptionalGetElement: the optional is empty")
    return input
