"""A checkpoint's object as named weights and metadata.

``torch.save`` writes whatever the user passed: a bare state dict, ``{"state_dict": ...,
"epoch": 3, "optimizer_states": [...]}`` (Lightning), ``{"model": ..., "optimizer": ...}``.
Tensors are named by their dotted path; the model's own state dict, when it is one entry of
such a dict, loses its key, so its weights carry the names ``model.state_dict()`` gives and
everything else (optimizer state, EMA copies) forms top-level groups of its own. Numbers and
strings go to metadata, shortened and escaped. The walk is bounded: a pickle can make a
structure that refers to itself or repeats one list a billion times over.
"""

from __future__ import annotations

import math
from typing import Any

from xocview.errors import FormatError, shorten, terminal_safe
from xocview.formats.pytorch.lazy_tensor import TensorRecord
from xocview.formats.weight_tree import Weight

__all__ = ["MAX_DEPTH", "MAX_OBJECTS", "flatten"]

MAX_OBJECTS = 5_000_000  # containers and values visited; a 7B model's optimizer state: ~1k
MAX_DEPTH = 64  # containers inside containers; Lightning's checkpoints nest about 6 deep
_MAX_META = 2_000  # metadata values kept; the rest are counted
_MAX_LIST = 16  # a list of plain values longer than this is summarised
_TEXT = 200  # characters kept of a string
# The entries of a checkpoint dict that hold the model's state dict, most telling first.
_MODEL_KEYS = ("state_dict", "model_state_dict", "model", "module", "net", "network")


def flatten(obj: Any, file: str) -> tuple[list[Weight], dict[str, Any], str | None]:
    """The tensors of ``obj`` as weights, its other values as nested metadata, and the key
    of the entry taken as the model's state dict (None when ``obj`` is one)."""
    walker = _Walker(file)
    model_key = _model_key(obj)
    if model_key is None:
        walker.walk(obj, "")
    else:
        walker.walk(obj[model_key], "")
        walker.walk({k: v for k, v in obj.items() if k != model_key}, "")
    return walker.weights, walker.metadata, model_key


def _model_key(obj: Any) -> str | None:
    if not isinstance(obj, dict) or any(isinstance(v, TensorRecord) for v in obj.values()):
        return None
    for key in _MODEL_KEYS:
        value = obj.get(key)
        if isinstance(value, dict) and any(isinstance(v, TensorRecord) for v in value.values()):
            return key
    return None


class _Walker:
    def __init__(self, file: str) -> None:
        self.file = file
        self.weights: list[Weight] = []
        self.metadata: dict[str, Any] = {}
        self.names: set[str] = set()
        self.seen: set[int] = set()
        self.visited = 0
        self.meta_count = 0

    def walk(self, root: Any, prefix: str) -> None:
        """Depth first, without recursion (a pickle may nest a million lists deep)."""
        stack: list[tuple[Any, str, int]] = [(root, prefix, 0)]
        while stack:
            value, path, depth = stack.pop()
            self.visited += 1
            if self.visited > MAX_OBJECTS:
                raise FormatError(
                    self.file,
                    shorten(path) or "(top level)",
                    f"the pickle holds more than {MAX_OBJECTS:,} objects",
                    "a checkpoint of tensors and a few values",
                )
            if isinstance(value, TensorRecord):
                self._tensor(value, path)
            elif isinstance(value, (dict, list, tuple)):
                if _plain_list(value):
                    self._meta(path, [_plain(v) for v in value[:_MAX_LIST]], len(value))
                    continue
                if id(value) in self.seen:  # shared or cyclic: shown once
                    continue
                self.seen.add(id(value))
                if depth >= MAX_DEPTH:
                    raise FormatError(
                        self.file,
                        shorten(path),
                        f"containers nested more than {MAX_DEPTH} deep",
                        "a checkpoint of tensors in a few levels of dicts and lists",
                    )
                items = value.items() if isinstance(value, dict) else enumerate(value)
                children = [(v, _join(path, _key(k)), depth + 1) for k, v in items]
                stack.extend(reversed(children))
            else:
                self._meta(path, _plain(value))

    def _tensor(self, record: TensorRecord, path: str) -> None:
        name = path or "tensor"
        if name in self.names:  # "a.b" as one key and as a nested dict
            count = 2
            while f"{name}#{count}" in self.names:
                count += 1
            name = f"{name}#{count}"
        self.names.add(name)
        record.check()
        meta: dict[str, Any] = {}
        if record.storage is not None and not _contiguous(record):
            meta = {"stride": list(record.stride), "storage_offset": record.offset}
        values = record.values if record.storage is not None else None
        self.weights.append(Weight(name, record.shape, record.dtype, values, meta))

    def _meta(self, path: str, value: Any, length: int | None = None) -> None:
        self.meta_count += 1
        if self.meta_count > _MAX_META:
            self.metadata["values_not_shown"] = self.meta_count - _MAX_META
            return
        if length is not None and length > _MAX_LIST:
            value = f"{length:,} values: {', '.join(map(str, value))}, ..."
        parts = path.split(".") if path else ["value"]
        node = self.metadata
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1]] = value


def _contiguous(record: TensorRecord) -> bool:
    expected = 1
    for n, s in zip(reversed(record.shape), reversed(record.stride), strict=True):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def _plain_list(value: Any) -> bool:
    """A list or tuple of numbers and strings only (``betas``, ``params``): one value."""
    return isinstance(value, (list, tuple)) and all(
        v is None or isinstance(v, (bool, int, float, str)) for v in value
    )


def _plain(value: Any) -> Any:
    """A metadata value: small, JSON-safe, escaped."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if abs(value) < 1 << 63 else shorten(str(value), 40)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return terminal_safe(shorten(value, _TEXT))
    if isinstance(value, (bytes, bytearray)):
        return f"{len(value):,} bytes"
    if isinstance(value, complex):
        return str(value)
    if isinstance(value, (set, frozenset)):
        return f"a set of {len(value):,} values"
    return terminal_safe(shorten(type(value).__name__, 40))


def _key(key: Any) -> str:
    # a tuple key may nest deeper than repr can go: its type names it
    text = str(key) if isinstance(key, (str, int, float)) else f"<{type(key).__name__}>"
    return terminal_safe(shorten(text, _TEXT))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
