"""Graph-level NNVM ``attrs``: TVM's per-entry type lists checked and split from the rest.

TVM graph JSON stores each value's shape, element type and memory slot as ``[type_tag, list]``
pairs indexed by entry id (``node_row_ptr[node] + output index``); MXNet stores scalars such as
``"mxnet_version": ["int", 10400]``. Per-entry lists fill the tensors, the rest becomes graph
metadata with the tag dropped.
"""

from __future__ import annotations

from typing import Any

from xocview.errors import FormatError
from xocview.model.dtypes import canonical_dtype

__all__ = ["TYPE_FLAGS", "EntryAttrs", "entry_attrs"]

# mshadow/NNVM type flags: MXNet's ``__dtype__`` and TVM's ``dtype`` list use them.
TYPE_FLAGS = {
    0: "float32",
    1: "double",
    2: "float16",
    3: "uint8",
    4: "int32",
    5: "int8",
    6: "int64",
    7: "bool",
    8: "int16",
    9: "uint16",
    10: "uint32",
    11: "uint64",
    12: "bfloat16",
}

# Per-entry keys and the tag TVM writes for each; storage_id/device_index go to tensor metadata.
_PER_ENTRY = {
    "shape": "list_shape",
    "dltype": "list_str",
    "dtype": "list_int",
    "storage_id": "list_int",
    "device_index": "list_int",
}
_TO_METADATA = ("storage_id", "device_index")


class EntryAttrs:
    """What the graph says of each entry; ``graph`` holds the other graph attributes."""

    def __init__(self, lists: dict[str, list[Any]], graph: dict[str, Any]) -> None:
        self.lists = lists
        self.graph = graph

    def shape(self, entry: int) -> list[int] | None:
        shapes = self.lists.get("shape")
        return None if shapes is None else list(shapes[entry])

    def dtype(self, entry: int) -> tuple[str | None, dict[str, Any]]:
        """The canonical dtype (None if untold) and metadata keeping a name we do not know."""
        dltypes = self.lists.get("dltype")
        if dltypes is not None:
            name = canonical_dtype(dltypes[entry])
            return (name, {}) if name else ("undefined", {"dltype": dltypes[entry]})
        flags = self.lists.get("dtype")
        if flags is not None:
            name = TYPE_FLAGS.get(flags[entry])
            return (name, {}) if name else ("undefined", {"dtype_flag": flags[entry]})
        return None, {}

    def metadata(self, entry: int) -> dict[str, Any]:
        return {k: self.lists[k][entry] for k in _TO_METADATA if k in self.lists}


def entry_attrs(attrs: dict[str, Any], n_entries: int, file: str) -> EntryAttrs:
    """Checks the per-entry lists (tag, length, item types); FormatError names the place."""
    lists: dict[str, list[Any]] = {}
    graph: dict[str, Any] = {}
    for key, value in attrs.items():
        tag = _PER_ENTRY.get(key)
        if tag is None:
            pair = isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)
            graph[key] = value[1] if pair else value
            continue
        place = f"attrs.{key}"
        if not (isinstance(value, list) and len(value) == 2 and value[0] == tag):
            raise FormatError(file, place, f"is {_brief(value)}", f'["{tag}", [...]]')
        items = value[1]
        if not isinstance(items, list) or len(items) != n_entries:
            got = f"{len(items)} items" if isinstance(items, list) else _brief(items)
            raise FormatError(
                file, f"{place}[1]", f"has {got}", f"one item per entry ({n_entries} entries)"
            )
        _check_items(items, tag, place, file)
        lists[key] = items
    return EntryAttrs(lists, graph)


def _check_items(items: list[Any], tag: str, place: str, file: str) -> None:
    for k, item in enumerate(items):
        if tag == "list_str":
            ok = isinstance(item, str)
            expected = 'a type name such as "float32"'
        elif tag == "list_int":
            ok = type(item) is int
            expected = "an integer"
        else:
            ok = isinstance(item, list) and all(type(d) is int and d >= -1 for d in item)
            expected = "a shape: an array of integers >= -1"
        if not ok:
            raise FormatError(file, f"{place}[1][{k}]", f"is {_brief(item)}", expected)


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
