"""Maps in a run: ai.onnx.ml's ZipMap makes them, DictVectorizer and CastMap read them.

A map is a Python dict from integer or string keys to numbers or strings, a sequence of
maps a list of dicts: what onnxruntime gives and takes, so that both engines' outputs
compare as they are (executor/optional.py lists the other kinds of value).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["describe_maps", "is_map_sequence", "map_items", "preview_maps", "value_dtype"]

_PREVIEW_ENTRIES = 8


def _key(key: Any, op: str) -> int | str:
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        return key.decode("utf-8", "replace")
    if isinstance(key, int | np.integer) and not isinstance(key, bool):
        return int(key)
    raise ValueError(f"{op}: map key {key!r} is not supported; expected int64 or string keys")


def map_items(value: Any, op: str) -> dict[int | str, Any]:
    """``value`` as a map with int or str keys; ValueError naming ``op`` for anything else."""
    if not isinstance(value, dict):
        kind = "sequence" if isinstance(value, list) else "tensor"
        raise ValueError(f"{op}: expected a map input, got a {kind}")
    for v in value.values():
        if not isinstance(v, str | int | float | np.number) or isinstance(v, bool):
            raise ValueError(f"{op}: map value {v!r} is not supported; expected numbers or strings")
    return {_key(k, op): v for k, v in value.items()}


def value_dtype(values: list[Any]) -> np.dtype[Any]:
    """The tensor dtype of map values: strings (object), integers (int64), float64 when
    some value is a numpy float64, else float32 (Python floats: ONNX's map(..., float))."""
    if values and all(isinstance(v, str) for v in values):
        return np.dtype(object)
    if values and all(isinstance(v, int | np.integer) for v in values):
        return np.dtype(np.int64)
    if any(isinstance(v, np.float64) for v in values):
        return np.dtype(np.float64)
    return np.dtype(np.float32)


def is_map_sequence(value: Any) -> bool:
    """Whether ``value`` is a non-empty sequence of maps (ZipMap's output)."""
    return isinstance(value, list) and bool(value) and all(isinstance(m, dict) for m in value)


def _types(maps: list[dict[Any, Any]]) -> str:
    keys = {"string" if isinstance(k, str) else "int64" for m in maps for k in m}
    values = {"string" if isinstance(v, str) else "float" for m in maps for v in m.values()}
    if len(keys) != 1 or len(values) != 1:
        return ""
    return f" ({keys.pop()} -> {values.pop()})"


def describe_maps(value: Any) -> str | None:
    """ "map of 3 (int64 -> float)" or "sequence of 7 maps (string -> float)"; None when
    ``value`` is neither a map nor a sequence of maps."""
    if isinstance(value, dict):
        return f"map of {len(value)}{_types([value])}"
    if is_map_sequence(value):
        maps = "map" if len(value) == 1 else "maps"
        return f"sequence of {len(value)} {maps}{_types(value)}"
    return None


def _entry(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float | np.floating) else repr(value)


def preview_maps(value: Any, limit: int = 3) -> list[str]:
    """The first ``limit`` maps as ``{key: value, ...}`` lines (floats to 6 digits, at most
    8 entries each), then how many more there are."""
    maps = [value] if isinstance(value, dict) else list(value)
    lines = []
    for m in maps[:limit]:
        shown = [f"{_entry(k)}: {_entry(v)}" for k, v in list(m.items())[:_PREVIEW_ENTRIES]]
        more = len(m) - len(shown)
        lines.append("{" + ", ".join(shown) + (f", ... {more} more" if more > 0 else "") + "}")
    if len(maps) > limit:
        lines.append(f"... {len(maps) - limit} more")
    return lines
