"""Values for a run: given arrays or ``.npy`` files, else seeded random data of the declared type.

Weights read from XOC, NNVM or LightNet files have shapes but no values, and graph inputs have
no values at all; filling them with seeded random data lets every graph with known shapes be
profiled. The distributions keep deep networks finite: multi-dimensional float weights are
scaled by their fan-in, vectors (biases, scales, variances) lie in [0.5, 1.5), integer inputs
are small non-negative numbers (safe as indices), integer weights are zero except where an op
reads them as a shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from xocview.errors import RunError, XocviewError
from xocview.executor.failures import kernel_problem
from xocview.executor.maps import map_items
from xocview.executor.optional import EMPTY
from xocview.model import Tensor
from xocview.model.dtypes import numpy_type

__all__ = [
    "numpy_dtype",
    "random_value",
    "read_feed",
    "resolved_shape",
    "seeded_rng",
    "shape_known",
    "starts_empty",
    "stored_value",
]


def seeded_rng(seed: int, tensor: int) -> np.random.Generator:
    """The generator of tensor position ``tensor``'s random values: one per seed and tensor,
    so that a value does not depend on which others were made (nor on which engine runs)."""
    return np.random.default_rng([seed, tensor])


def numpy_dtype(tensor: Tensor) -> np.dtype:
    """The numpy dtype of a tensor (ml_dtypes' for bfloat16, float8, int4...); undefined
    (unknown) types run as float32."""
    return numpy_type(tensor.dtype) or np.dtype(np.float32)


def shape_known(tensor: Tensor) -> bool:
    """Whether the tensor's rank is known (a -1 dimension is a symbol the user sizes)."""
    return not tensor.metadata.get("rank_unknown")


def resolved_shape(tensor: Tensor, dims: Mapping[str, int], default: int) -> tuple[int, ...]:
    """The declared shape with each symbolic (-1) dimension given its chosen size.

    Raises RunError for any other negative (or non-integer) dimension: a damaged file.
    """
    symbols = tensor.metadata.get("shape_symbols")
    out = []
    for k, d in enumerate(tensor.shape):
        if isinstance(d, int) and d >= 0:
            out.append(d)
            continue
        if not isinstance(d, int) or d < -1:
            raise RunError(
                f"{tensor.kind} {tensor.id!r}: dimension {k} of shape {list(tensor.shape)} is "
                f"{d!r}; expected a size >= 0, or -1 for a symbolic dimension"
            )
        name = symbols[k] if isinstance(symbols, list) and k < len(symbols) else None
        out.append(int(dims.get(str(name), _symbol_default(name, default))))
    return tuple(out)


def starts_empty(name: object) -> bool:
    """Whether a symbolic dimension is a KV cache's past length (``past_sequence_length``,
    ``past_seq_len``...), which starts at 0: the first run of an exported LLM is its prompt,
    with nothing cached before it."""
    return isinstance(name, str) and name.lower().startswith("past")


def _symbol_default(name: object, default: int) -> int:
    return 0 if starts_empty(name) else default


def random_value(
    tensor: Tensor, shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator
) -> np.ndarray:
    """Seeded data of the given shape and dtype, distributed for the tensor's role."""
    if dtype.kind == "f" or dtype.kind == "c":
        if tensor.kind == "weight" and len(shape) >= 2:
            fan_in = max(1, int(np.prod(shape[1:])))
            values = rng.standard_normal(shape, dtype=np.float32) * np.float32(fan_in**-0.5)
        elif tensor.kind == "weight":
            values = rng.random(shape, dtype=np.float32) + np.float32(0.5)
        else:
            values = rng.random(shape, dtype=np.float32)
        return values.astype(dtype, copy=False)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        if tensor.kind == "weight":
            return np.zeros(shape, dtype=dtype)
        return rng.integers(0, 2, size=shape).astype(dtype)
    if dtype.kind == "O":
        return np.full(shape, "", dtype=object)
    if dtype.kind == "V":  # ml_dtypes' narrow types: made as their wide twins, then narrowed
        wide = np.dtype(np.float32 if "float" in dtype.name else np.int8)
        return random_value(tensor, shape, wide, rng).astype(dtype)
    raise RunError(f"tensor {tensor.id!r}: cannot make random values of dtype {dtype}")


def read_feed(tensor: Tensor, value: Any) -> Any:
    """A user's value for an input: an array, a number or list, or the path of a ``.npy`` file;
    for a sequence input a list of arrays (or of maps), for an optional one None (empty) or
    its value, for a map input a dict (executor/maps.py).

    A tensor takes its declared dtype; a rank that differs from the declared one is refused with
    both shapes named.
    """
    kind = tensor.metadata.get("type")
    if kind == "optional":
        if value is None:
            return EMPTY
        if isinstance(value, list):
            return _read_sequence(tensor, value)
        return np.asarray(value)
    if kind == "sequence":
        return _read_sequence(tensor, value)
    if kind == "map":
        return _read_map(tensor, value)
    if isinstance(value, (str, Path)):
        path = Path(value)
        if path.exists() and not path.is_file():  # a FIFO or a device would block or not end
            raise RunError(f"{path}: input {tensor.id!r} must be a regular .npy file")
        try:
            array = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise RunError(f"{path}: cannot read input {tensor.id!r} as .npy ({e})") from e
    else:
        try:
            array = np.asarray(value)
        except (TypeError, ValueError) as e:  # ragged lists
            raise RunError(f"input {tensor.id!r}: the value given is not an array ({e})") from e
    if tensor.dtype not in ("undefined", "") and array.dtype != numpy_dtype(tensor):
        try:
            array = array.astype(numpy_dtype(tensor))
        except (TypeError, ValueError) as e:
            raise RunError(
                f"input {tensor.id!r}: given values of type {array.dtype} do not convert to "
                f"{tensor.dtype} ({e})"
            ) from e
    declared = tensor.shape
    if shape_known(tensor) and declared and len(declared) != array.ndim:
        raise RunError(
            f"input {tensor.id!r}: given shape {list(array.shape)}, declared {list(declared)}; "
            "expected the same rank"
        )
    for k, (d, g) in enumerate(zip(declared, array.shape, strict=False)):
        if isinstance(d, int) and d >= 0 and d != g:
            raise RunError(
                f"input {tensor.id!r}: given shape {list(array.shape)}, declared "
                f"{list(declared)}; dimension {k} should be {d}"
            )
    return array


def _read_sequence(tensor: Tensor, value: Any) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise RunError(
            f"input {tensor.id!r} is a sequence; expected a list of arrays, got "
            f"{type(value).__name__}"
        )
    try:
        return [_read_map(tensor, v) if isinstance(v, dict) else np.asarray(v) for v in value]
    except (TypeError, ValueError) as e:
        raise RunError(
            f"input {tensor.id!r}: an element of the sequence is not an array ({e})"
        ) from e


def _read_map(tensor: Tensor, value: Any) -> dict[int | str, Any]:
    try:
        return map_items(value, f"input {tensor.id!r}")
    except ValueError as e:
        raise RunError(str(e)) from None


def stored_value(tensor: Tensor) -> np.ndarray:
    """A weight's stored values, which must have its declared shape.

    Raises RunError when they cannot be read or their shape is not the declared one (a damaged
    file: the kernels would otherwise fail far from the cause).
    """
    try:
        value = np.asarray(tensor.data)
    except XocviewError:
        raise
    except (ValueError, TypeError, OSError, MemoryError) as e:
        raise RunError(f"weight {tensor.id!r}: cannot read its values ({kernel_problem(e)})") from e
    declared = tensor.shape
    if shape_known(tensor) and (
        len(declared) != value.ndim
        or any(d >= 0 and d != g for d, g in zip(declared, value.shape, strict=True))
    ):
        raise RunError(
            f"weight {tensor.id!r}: its values have shape {list(value.shape)}, declared "
            f"{list(declared)}; expected values of the declared shape"
        )
    return value
