"""Comparing the values of two matched things: dicts key by key, tensors field by field.

Metadata that says where a thing sits or how long it ran rather than what it is takes no part:
``parent_id``/``children_ids`` (the hierarchy, compared through the node map), ``performance``
(measured times, compared as times), a ``name`` or ``scope`` that only repeats the node's id,
and a tensor's ``external_data`` (where its bytes were stored) and ``subgraph_of`` (an id).
"""

from __future__ import annotations

import json
from typing import Any

from xocview.model.analyses.diff.result import ABSENT, Change
from xocview.model.dotted import flatten_dotted
from xocview.model.graph import Node, Tensor

__all__ = [
    "dict_changes",
    "node_metadata",
    "same_value",
    "tensor_changes",
    "tensor_metadata",
    "tensors_alike",
]

_NODE_SKIP = frozenset({"parent_id", "children_ids", "performance"})
_ID_ECHOES = ("name", "scope")
_TENSOR_SKIP = frozenset({"external_data", "subgraph_of"})


def same_value(x: Any, y: Any) -> bool:
    """Equal as JSON values (NaN equals NaN; a value that cannot be compared is unequal)."""
    try:
        if bool(x == y):
            return True
    except (ValueError, TypeError):  # an array: == gives an array
        pass
    try:
        return json.dumps(x, sort_keys=True, default=repr) == json.dumps(
            y, sort_keys=True, default=repr
        )
    except (ValueError, TypeError):
        return False


def dict_changes(what: str, old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """A change per key removed, changed or added (in that order, keys in their own order)."""
    out = []
    for key, value in old.items():
        if key not in new:
            out.append(Change(what, key, value, ABSENT))
        elif not same_value(value, new[key]):
            out.append(Change(what, key, value, new[key]))
    out.extend(Change(what, key, ABSENT, value) for key, value in new.items() if key not in old)
    return out


def node_metadata(node: Node) -> dict[str, Any]:
    """The node's metadata that is compared, flattened to dotted keys."""
    meta = node.metadata
    kept = {
        k: v
        for k, v in meta.items()
        if k not in _NODE_SKIP and not (k in _ID_ECHOES and v == node.id)
    }
    return flatten_dotted(kept)


def tensor_metadata(tensor: Tensor) -> dict[str, Any]:
    return flatten_dotted({k: v for k, v in tensor.metadata.items() if k not in _TENSOR_SKIP})


def tensor_changes(old: Tensor, new: Tensor, where: str = "") -> list[Change]:
    """Shape, dtype and metadata changes of a matched tensor pair; ``where`` is the slot of a
    node's tensor (the changes then name the tensor), empty for a graph input or output."""
    tid = new.id if where else None
    out = []
    if list(old.shape) != list(new.shape):
        out.append(Change("shape", "", list(old.shape), list(new.shape), where, tid))
    if old.dtype != new.dtype:
        out.append(Change("dtype", "", old.dtype, new.dtype, where, tid))
    if old.metadata != new.metadata:
        for c in dict_changes("metadata", tensor_metadata(old), tensor_metadata(new)):
            out.append(Change(c.what, c.key, c.old, c.new, where, tid))
    return out


def tensors_alike(old: Tensor, new: Tensor) -> bool:
    """No change that ``tensor_changes`` would report (the cheap test first)."""
    if list(old.shape) != list(new.shape) or old.dtype != new.dtype:
        return False
    return old.metadata == new.metadata or tensor_metadata(old) == tensor_metadata(new)
