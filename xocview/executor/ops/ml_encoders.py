"""ai.onnx.ml's encoders and feature ops: LabelEncoder, OneHotEncoder, Binarizer, Scaler,
Normalizer, Imputer, FeatureVectorizer and ArrayFeatureExtractor, the small ops sklearn-onnx
exports around a model. LabelEncoder 2 follows the spec for NaN keys (onnxruntime departs)."""

from __future__ import annotations

from typing import Any

import numpy as np

from xocview.executor.ops.ml_common import is_text, numeric, register_older_version
from xocview.executor.ops.strings import as_text
from xocview.executor.registry import kernel

__all__ = [
    "array_feature_extractor",
    "binarizer",
    "feature_vectorizer",
    "imputer",
    "label_encoder_v1",
    "label_encoder_v2",
    "label_encoder_v4",
    "normalizer",
    "one_hot_encoder",
    "scaler",
]


# ---------------------------------------------------------------------------- LabelEncoder


def _lookup(x: np.ndarray, keys: np.ndarray, values: np.ndarray, default: Any) -> np.ndarray:
    """``values[i]`` where ``x == keys[i]`` (the last i of a repeated key), ``default``
    elsewhere; a NaN key matches NaN inputs. Sorted keys and one searchsorted, no dict."""
    out = np.full(x.shape, default, dtype=values.dtype)
    if keys.size == 0 or x.size == 0:
        return out
    nan_keys = np.zeros(keys.shape, dtype=bool) if is_text(keys) else np.isnan(keys)
    if keys.dtype.kind == "f" and nan_keys.any():
        out[np.isnan(x)] = values[np.flatnonzero(nan_keys)[-1]]
    keys, values = keys[~nan_keys], values[~nan_keys]
    distinct, last = np.unique(keys[::-1], return_index=True)
    if distinct.size == 0:
        return out
    chosen = values[::-1][last]
    pos = np.clip(np.searchsorted(distinct, x), 0, distinct.size - 1)
    hit = np.asarray(distinct[pos] == x, dtype=bool)
    out[hit] = chosen[pos[hit]]
    return out


def _one_of(op: str, kind: str, options: dict[str, Any]) -> tuple[str, np.ndarray] | None:
    """The one ``keys_*``/``values_*`` attribute set (an empty list counts as unset)."""
    given = {k: v for k, v in options.items() if v is not None and np.size(v) > 0}
    if len(given) > 1:
        raise ValueError(f"{op}: {' and '.join(sorted(given))} are all set; one {kind}_* may be")
    if not given:
        return None
    name, value = next(iter(given.items()))
    return name, np.asarray(value).reshape(-1)


def _check_key_kind(x: np.ndarray, keys: np.ndarray) -> None:
    if is_text(x) != is_text(keys):
        raise ValueError(
            f"LabelEncoder: input dtype {x.dtype} with keys of dtype {keys.dtype} is not "
            "supported; the input must have the keys' type"
        )


def _encode(
    x: np.ndarray,
    keys: dict[str, Any],
    values: dict[str, Any],
    defaults: dict[str, Any],
    default_tensor: np.ndarray | None = None,
) -> np.ndarray:
    """LabelEncoder 2 and 4: map by the one keys_* and values_* set."""
    key = _one_of("LabelEncoder", "keys", keys)
    value = _one_of("LabelEncoder", "values", values)
    if key is None or value is None:
        raise ValueError("LabelEncoder: one keys_* and one values_* attribute must be set")
    (key_name, key_arr), (value_name, value_arr) = key, value
    if key_arr.size != value_arr.size:
        raise ValueError(
            f"LabelEncoder: {key_name} has {key_arr.size} entries, {value_name} {value_arr.size}"
        )
    typed = {"keys_strings": object, "keys_int64s": np.int64, "keys_floats": np.float32}
    key_arr = key_arr.astype(typed.get(key_name, key_arr.dtype))
    value_arr = value_arr.astype(
        {"values_strings": object, "values_int64s": np.int64, "values_floats": np.float32}.get(
            value_name, value_arr.dtype
        )
    )
    data = as_text(x, "LabelEncoder") if is_text(x) else x
    _check_key_kind(data, key_arr)
    if default_tensor is not None and np.size(default_tensor):
        default = np.asarray(default_tensor).reshape(-1)[0]
    elif value_arr.dtype.kind == "O":
        default = defaults["string"]
    elif value_arr.dtype.kind == "f":
        default = defaults["float"]
    else:
        default = defaults["int64"]
    return _lookup(data, key_arr, value_arr, default)


@kernel("LabelEncoder", since=1)
def label_encoder_v1(
    x: np.ndarray,
    *,
    classes_strings: list[str] | None = None,
    default_int64: int = -1,
    default_string: str = "_Unused",
) -> np.ndarray:
    """Strings to their index in ``classes_strings`` (``default_int64`` when absent), or
    integers to the string at that index (``default_string`` out of range)."""
    classes = np.array(classes_strings or [], dtype=object)
    if is_text(x):
        index = np.arange(classes.size, dtype=np.int64)
        return _lookup(as_text(x, "LabelEncoder"), classes, index, default_int64)
    if x.dtype.kind not in "iu":
        raise ValueError(
            f"LabelEncoder: input dtype {x.dtype} is not supported; expected string or int64"
        )
    out = np.full(x.shape, default_string, dtype=object)
    inside = (x >= 0) & (x < classes.size)
    out[inside] = classes[x[inside]]
    return out


@kernel("LabelEncoder", since=4)
def label_encoder_v4(
    x: np.ndarray,
    *,
    keys_floats: list[float] | None = None,
    keys_int64s: list[int] | None = None,
    keys_strings: list[str] | None = None,
    keys_tensor: np.ndarray | None = None,
    values_floats: list[float] | None = None,
    values_int64s: list[int] | None = None,
    values_strings: list[str] | None = None,
    values_tensor: np.ndarray | None = None,
    default_float: float = -0.0,
    default_int64: int = -1,
    default_string: str = "_Unused",
    default_tensor: np.ndarray | None = None,
) -> np.ndarray:
    """Each element mapped through the parallel keys_* and values_* lists; the default of
    the values' type where it is not a key. Version 4 adds keys, values and default as
    tensors of any of its types (int16, int32, double...): the output takes the values' dtype.
    """
    return _encode(
        x,
        {
            "keys_floats": keys_floats,
            "keys_int64s": keys_int64s,
            "keys_strings": keys_strings,
            "keys_tensor": keys_tensor,
        },
        {
            "values_floats": values_floats,
            "values_int64s": values_int64s,
            "values_strings": values_strings,
            "values_tensor": values_tensor,
        },
        {"float": default_float, "int64": default_int64, "string": default_string},
        default_tensor,
    )


label_encoder_v2 = register_older_version(
    label_encoder_v4, "LabelEncoder", 2, lacking="_tensor", name="label_encoder_v2"
)


# ------------------------------------------------------------------- small feature kernels


@kernel("Binarizer", since=1)
def binarizer(x: np.ndarray, *, threshold: float = 0.0) -> np.ndarray:
    """1 where x > threshold, else 0, in x's dtype (NaN gives 0)."""
    numeric(x, "Binarizer")
    limit = np.float32(threshold) if x.dtype != np.float64 else np.float64(threshold)
    return (x > limit).astype(x.dtype)


@kernel("ArrayFeatureExtractor", since=1)
def array_feature_extractor(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The elements of x's last axis at the indices Y (all of them, flattened); a vector x
    gives one row, as onnxruntime does."""
    if x.ndim == 0:
        raise ValueError("ArrayFeatureExtractor: input shape [] is not supported; expected rank 1+")
    if y.dtype.kind not in "iu":
        raise ValueError(
            f"ArrayFeatureExtractor: indices dtype {y.dtype} is not supported; expected int64"
        )
    index = y.reshape(-1).astype(np.int64)
    size = x.shape[-1]
    if index.size and (index.min() < 0 or index.max() >= size):
        bad = index[(index < 0) | (index >= size)][0]
        raise ValueError(f"ArrayFeatureExtractor: index {bad} is out of range for {size} columns")
    out = np.take(x, index, axis=-1)
    return out.reshape(1, -1) if x.ndim == 1 else out


def _rows(x: np.ndarray, op: str) -> np.ndarray:
    """[C] as [1, C]; [N, C] as is; other ranks refused."""
    if x.ndim == 1:
        return x.reshape(1, -1)
    if x.ndim != 2:
        raise ValueError(
            f"{op}: input shape {list(x.shape)} is not supported; expected [C] or [N, C]"
        )
    return x


@kernel("Normalizer", since=1)
def normalizer(x: np.ndarray, *, norm: str = "MAX") -> np.ndarray:
    """Each row divided by its max, sum of |x| (L1) or Euclidean norm (L2); a row whose
    divisor is 0 is copied. float32 out."""
    data = _rows(numeric(x, "Normalizer"), "Normalizer").astype(np.float64)
    if norm == "MAX":
        div = data.max(axis=1, keepdims=True, initial=-np.inf)
    elif norm == "L1":
        div = np.abs(data).sum(axis=1, keepdims=True)
    elif norm == "L2":
        div = np.sqrt(np.square(data).sum(axis=1, keepdims=True))
    else:
        raise ValueError(f"Normalizer: norm {norm!r} is not supported; expected MAX, L1 or L2")
    safe = np.where(div == 0, 1.0, div)
    return (data / safe).astype(np.float32).reshape(x.shape)


@kernel("Scaler", since=1)
def scaler(
    x: np.ndarray, *, offset: list[float] | None = None, scale: list[float] | None = None
) -> np.ndarray:
    """(x - offset) * scale along the last axis (one value or one per column); float32 out."""
    data = numeric(x, "Scaler").astype(np.float32)
    columns = data.shape[-1] if data.ndim else 1
    parts = []
    for name, values, neutral in (("offset", offset, 0.0), ("scale", scale, 1.0)):
        arr = np.asarray(values if values else [neutral], dtype=np.float32)
        if arr.size not in (1, columns):
            raise ValueError(f"Scaler: {name} has {arr.size} values for {columns} columns")
        parts.append(arr)
    return ((data - parts[0]) * parts[1]).astype(np.float32)


@kernel("OneHotEncoder", since=1)
def one_hot_encoder(
    x: np.ndarray,
    *,
    cats_int64s: list[int] | None = None,
    cats_strings: list[str] | None = None,
    zeros: int = 1,
) -> np.ndarray:
    """A new last axis with a 1 at the input's position in the categories (numbers are
    truncated to int64 first). With ``zeros`` 0 an input outside them is an error."""
    if is_text(x):
        if not cats_strings:
            raise ValueError("OneHotEncoder: string input needs cats_strings")
        cats: np.ndarray = np.array(cats_strings, dtype=object)
        data = as_text(x, "OneHotEncoder")
    else:
        if not cats_int64s:
            raise ValueError("OneHotEncoder: numeric input needs cats_int64s")
        cats = np.asarray(cats_int64s, dtype=np.int64)
        data = numeric(x, "OneHotEncoder").astype(np.int64)
    index = _lookup(data, cats, np.arange(cats.size, dtype=np.int64), -1)
    if not zeros and (index < 0).any():
        raise ValueError(
            f"OneHotEncoder: input value {data[index < 0].flat[0]!r} is not a category "
            "and zeros is 0"
        )
    out = np.zeros((*data.shape, cats.size), dtype=np.float32)
    hit = index >= 0
    out[hit, index[hit]] = 1.0
    return out


@kernel("FeatureVectorizer", since=1)
def feature_vectorizer(*xs: np.ndarray, inputdimensions: list[int] | None = None) -> np.ndarray:
    """The inputs side by side as float32 columns: input i gives ``inputdimensions[i]``
    columns, cut or zero-padded; a vector is one row."""
    dims = list(inputdimensions or [])
    if len(dims) != len(xs):
        raise ValueError(
            f"FeatureVectorizer: {len(xs)} inputs and {len(dims)} inputdimensions; expected one "
            "dimension per input"
        )
    if not xs:
        raise ValueError("FeatureVectorizer: no inputs")
    blocks = []
    rows = None
    for x, width in zip(xs, dims, strict=True):
        data = numeric(np.asarray(x), "FeatureVectorizer")
        flat = data.reshape(1, -1) if data.ndim <= 1 else data.reshape(data.shape[0], -1)
        if rows is not None and flat.shape[0] != rows:
            raise ValueError(f"FeatureVectorizer: inputs have {rows} and {flat.shape[0]} rows")
        rows = flat.shape[0]
        block = np.zeros((rows, width), dtype=np.float32)
        keep = min(width, flat.shape[1])
        block[:, :keep] = flat[:, :keep]
        blocks.append(block)
    return np.concatenate(blocks, axis=1)


@kernel("Imputer", since=1)
def imputer(
    x: np.ndarray,
    *,
    imputed_value_floats: list[float] | None = None,
    imputed_value_int64s: list[int] | None = None,
    replaced_value_float: float = 0.0,
    replaced_value_int64: int = 0,
) -> np.ndarray:
    """Elements equal to the replaced value (NaN matches NaN) become the imputed value of
    their column (one value, or one per column of the last axis)."""
    data = numeric(x, "Imputer")
    values: list[float] | list[int] | None = imputed_value_floats
    replaced: float = float(replaced_value_float)
    if data.dtype.kind != "f":
        values, replaced = imputed_value_int64s, replaced_value_int64
    if not values:
        kind = "imputed_value_floats" if data.dtype.kind == "f" else "imputed_value_int64s"
        raise ValueError(f"Imputer: {kind} must be set for input dtype {data.dtype}")
    fill = np.asarray(values).astype(data.dtype)
    columns = data.shape[-1] if data.ndim else 1
    if fill.size not in (1, columns):
        raise ValueError(f"Imputer: {fill.size} imputed values for {columns} columns")
    hit = np.isnan(data) if data.dtype.kind == "f" and np.isnan(replaced) else data == replaced
    return np.where(hit, np.broadcast_to(fill, data.shape), data)
