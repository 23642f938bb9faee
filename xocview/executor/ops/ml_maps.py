"""ai.onnx.ml's map ops: ZipMap (class scores to a sequence of maps), DictVectorizer and
CastMap (a map to a tensor), and CategoryMapper (strings to integers and back).

A map is a Python dict, a sequence of maps a list of them (executor/maps.py), as onnxruntime
gives and takes them. Where the spec leaves a result open they do what onnxruntime does:
CastMap pads strings with "0.f" and writes floats as C's "%f".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xocview.executor.maps import map_items, value_dtype
from xocview.executor.ops.ml_common import is_text
from xocview.executor.ops.ml_encoders import label_encoder_v4
from xocview.executor.ops.ml_tree_attributes import check_enum
from xocview.executor.ops.strings import as_text
from xocview.executor.registry import kernel

__all__ = ["cast_map", "category_mapper", "dict_vectorizer", "zip_map"]


def _keys(op: str, ints: list[int] | None, strings: list[str] | None, what: str) -> list[Any]:
    """The one key list set: ``{what}_int64s``-like integers or strings."""
    if bool(ints) == bool(strings):
        raise ValueError(f"{op}: exactly one of the integer and string {what} must be set")
    return [int(k) for k in ints] if ints else [str(k) for k in strings or []]


@kernel("ZipMap", since=1)
def zip_map(
    x: np.ndarray,
    *,
    classlabels_int64s: list[int] | None = None,
    classlabels_strings: list[str] | None = None,
) -> list[dict[Any, float]]:
    """One map per row of x: class label -> that column's score (a vector is one row)."""
    op = "ZipMap"
    labels = _keys(op, classlabels_int64s, classlabels_strings, "classlabels")
    if x.dtype.kind != "f" or x.ndim not in (1, 2):
        raise ValueError(
            f"{op}: input {x.dtype}{list(x.shape)} is not supported; expected float [C] or [N, C]"
        )
    rows = x.reshape(1, -1) if x.ndim == 1 else x
    if rows.shape[1] != len(labels):
        raise ValueError(f"{op}: input has {rows.shape[1]} columns for {len(labels)} class labels")
    return [dict(zip(labels, row, strict=True)) for row in rows.astype(np.float32).tolist()]


@kernel("DictVectorizer", since=1)
def dict_vectorizer(
    x: Any,
    *,
    int64_vocabulary: list[int] | None = None,
    string_vocabulary: list[str] | None = None,
) -> np.ndarray:
    """[1, V]: the map's value at each vocabulary key, 0 where it has none (a sequence of
    maps gives one row each, as onnx's reference does); keys outside the vocabulary are
    dropped. The dtype follows the values (see value_dtype)."""
    op = "DictVectorizer"
    vocabulary = _keys(op, int64_vocabulary, string_vocabulary, "vocabularies")
    maps = x if isinstance(x, list) else [x]
    rows = [map_items(m, op) for m in maps]
    dtype = value_dtype([v for row in rows for v in row.values()])
    want_text = isinstance(vocabulary[0], str) if vocabulary else False
    for row in rows:
        wrong = next((k for k in row if isinstance(k, str) != want_text), None)
        if wrong is not None:
            kind = "strings" if want_text else "integers"
            raise ValueError(f"{op}: map key {wrong!r} is not of the vocabulary's type ({kind})")
    zero = "" if dtype.kind == "O" else 0
    table = [[row.get(k, zero) for k in vocabulary] for row in rows]
    return np.array(table, dtype=dtype).reshape(len(rows), len(vocabulary))


def _cast(values: list[Any], to: str) -> np.ndarray:
    """Map values (strings or floats) cast as onnxruntime casts them: strings parsed as
    numbers, floats truncated to integers or written with six decimals."""
    text = any(isinstance(v, str) for v in values)
    if to == "TO_STRING":
        return np.array([v if text else f"{np.float32(v):f}" for v in values], dtype=object)
    if text:
        try:
            numbers = np.array([float(v) for v in values], dtype=np.float64)
        except ValueError as e:
            raise ValueError(f"CastMap: a map value is not a number ({e})") from None
    else:
        numbers = np.asarray(values, dtype=np.float32).astype(np.float64)
    if to == "TO_INT64":
        return np.trunc(numbers).astype(np.int64)
    return numbers.astype(np.float32)


@kernel("CastMap", since=1)
def cast_map(
    x: Any, *, cast_to: str = "TO_FLOAT", map_form: str = "DENSE", max_map: int = 1
) -> np.ndarray:
    """[1, C]: a map(int64, string|float)'s values in key order (DENSE), or placed at their
    keys 0..max_map-1 with 0 ("0.f" for strings) where a key is absent (SPARSE)."""
    op = "CastMap"
    check_enum(op, "cast_to", cast_to, ("TO_FLOAT", "TO_STRING", "TO_INT64"))
    check_enum(op, "map_form", map_form, ("DENSE", "SPARSE"))
    items = map_items(x, op)
    text_key = next((k for k in items if isinstance(k, str)), None)
    if text_key is not None:
        raise ValueError(f"{op}: map key {text_key!r} is not supported; expected int64 keys")
    keys = sorted(int(k) for k in items)
    values = _cast([items[k] for k in keys], cast_to)
    if map_form == "DENSE":
        return values.reshape(1, -1)
    if max_map < 1:
        raise ValueError(f"{op}: max_map is {max_map}; SPARSE needs 1 or more")
    if keys and keys[0] < 0:
        raise ValueError(f"{op}: map key {keys[0]} is negative; SPARSE places values at keys")
    pad: Any = "0.f" if cast_to == "TO_STRING" else 0
    out = np.full(max_map, pad, dtype=values.dtype)
    at = np.asarray(keys, dtype=np.int64)
    inside = at < max_map
    out[at[inside]] = values[inside]
    return out.reshape(1, -1)


@kernel("CategoryMapper", since=1)
def category_mapper(
    x: np.ndarray,
    *,
    cats_int64s: list[int] | None = None,
    cats_strings: list[str] | None = None,
    default_int64: int = -1,
    default_string: str = "_Unused",
) -> np.ndarray:
    """Strings to the integer of their category (``default_int64`` for others), or
    integers to their string (``default_string``); the last of a repeated category wins."""
    op = "CategoryMapper"
    ints, strings = list(cats_int64s or []), list(cats_strings or [])
    if len(ints) != len(strings):
        raise ValueError(f"{op}: {len(strings)} cats_strings and {len(ints)} cats_int64s")
    if is_text(x) and not ints:
        return np.full(x.shape, default_int64, dtype=np.int64)
    if is_text(x):
        return label_encoder_v4(
            as_text(x, op), keys_strings=strings, values_int64s=ints, default_int64=default_int64
        )
    if x.dtype.kind not in "iu":
        raise ValueError(f"{op}: input dtype {x.dtype} is not supported; expected string or int64")
    if not ints:
        return np.full(x.shape, default_string, dtype=object)
    return label_encoder_v4(
        x.astype(np.int64), keys_int64s=ints, values_strings=strings, default_string=default_string
    )
