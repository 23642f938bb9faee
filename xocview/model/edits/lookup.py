"""What the edit planners share: finding ids with helpful refusals, JSON values, metadata paths."""

from __future__ import annotations

import difflib
import math
from typing import TYPE_CHECKING, Any

from xocview.errors import EditError
from xocview.model.dotted import MAX_METADATA_DEPTH, DottedKeyConflict, expand_dotted, nesting

if TYPE_CHECKING:
    from xocview.model.graph import Graph, Node

__all__ = [
    "check_json",
    "check_new_id",
    "children_of",
    "deleted_path",
    "has_tensor",
    "key_parts",
    "node_pos",
    "parent_of",
    "set_path",
    "tensor_pos",
    "unique_id",
    "with_key",
    "without_key",
]

HIERARCHY_KEYS = ("parent_id", "children_ids")


def has_tensor(graph: Graph, tensor_id: str) -> bool:
    """True when some tensor has this id."""
    try:
        graph.index.tensor_position(tensor_id)
    except KeyError:
        return False
    return True


def _taken(graph: Graph, what: str) -> Any:
    return graph.index.has_node if what == "node" else (lambda i: has_tensor(graph, i))


def _suggest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def node_pos(graph: Graph, node_id: str) -> int:
    """Position of the node with this id; EditError naming it and close matches when absent."""
    index = graph.index
    if isinstance(node_id, str) and index.has_node(node_id):
        return index.node_position(node_id)
    hint = _suggest(str(node_id), [n.id for n in graph.nodes])
    raise EditError(f"no node with id '{node_id}'{hint}; give the id of an existing node")


def tensor_pos(graph: Graph, tensor_id: str) -> int:
    """Position of the tensor with this id; EditError naming it and close matches when absent."""
    if isinstance(tensor_id, str) and has_tensor(graph, tensor_id):
        return graph.index.tensor_position(tensor_id)
    hint = _suggest(str(tensor_id), [t.id for t in graph.tensors])
    raise EditError(f"no tensor with id '{tensor_id}'{hint}; give the id of an existing tensor")


def check_new_id(graph: Graph, what: str, new_id: Any) -> str:
    """``new_id`` when it is a non-empty string no other node (or tensor) has."""
    if not isinstance(new_id, str) or not new_id.strip():
        raise EditError(f"{what} id {new_id!r} is empty; give a non-empty string")
    taken = _taken(graph, what)
    if taken(new_id):
        raise EditError(f"a {what} with id '{new_id}' already exists; choose an unused id")
    return new_id


def unique_id(graph: Graph, what: str, base: str) -> str:
    """``base``, or ``base_2``, ``base_3`` ... : the first that no node (or tensor) has."""
    taken = _taken(graph, what)
    if not taken(base):
        return base
    k = 2
    while taken(f"{base}_{k}"):
        k += 1
    return f"{base}_{k}"


def check_json(value: Any, place: str) -> None:
    """Refuse a value XOC JSON cannot hold (sets, objects, NaN, non-string keys) or that nests
    deeper than metadata may (``MAX_METADATA_DEPTH``); walked without recursion."""
    stack: list[tuple[Any, str, int]] = [(value, place, 0)]
    while stack:
        value, place, depth = stack.pop()
        if value is None or isinstance(value, (bool, int, str)):
            continue
        if isinstance(value, float):
            if not math.isfinite(value):
                raise EditError(f"{place}: {value} has no JSON form; give a finite number")
            continue
        if isinstance(value, (list, dict)) and depth >= MAX_METADATA_DEPTH:
            raise EditError(
                f"{place}: nested more than {MAX_METADATA_DEPTH} levels deep; give a value "
                "nested less deeply"
            )
        if isinstance(value, list):
            items = [(v, f"{place}[{k}]", depth + 1) for k, v in enumerate(value)]
        elif isinstance(value, dict):
            for k in value:
                if not isinstance(k, str):
                    raise EditError(f"{place}: key {k!r} is not a string; JSON keys are strings")
            items = [(v, f"{place}.{k}", depth + 1) for k, v in value.items()]
        else:
            raise EditError(
                f"{place}: a {type(value).__name__} has no JSON form; give a number, string, "
                "boolean, null, list or object"
            )
        stack.extend(reversed(items))


def key_parts(key: str) -> list[str]:
    """A dotted key's levels, split as the XOC reader expands them (``a..b`` stays whole)."""
    if not isinstance(key, str) or not key:
        raise EditError(f"metadata key {key!r} is empty; give a key such as 'perf.time.cpu'")
    parts = key.split(".")
    if any(not p for p in parts):
        return [key]
    if len(parts) >= MAX_METADATA_DEPTH:
        raise EditError(
            f"metadata key '{'.'.join(parts[:5])}…' has {len(parts):,} dotted parts; metadata "
            f"nests at most {MAX_METADATA_DEPTH} levels deep"
        )
    return parts


def set_path(meta: dict[str, Any], parts: list[str], value: Any, place: str) -> dict[str, Any]:
    """A copy of ``meta`` with ``value`` at the nested path (tables made as needed).

    Only the dicts on the path are copied; the rest is shared (it is never changed in place).
    A dict value has its own dotted keys expanded. Raises EditError when a level on the path
    holds a value that is not a table.
    """
    if isinstance(value, dict):
        try:
            value = expand_dotted(value)
        except DottedKeyConflict as e:
            raise EditError(f"{place}: {e}; give each key once") from e
    depth = len(parts) + nesting(value)
    if depth > MAX_METADATA_DEPTH:
        raise EditError(
            f"{place}: the value would nest {depth:,} levels deep under '{parts[0]}'; metadata "
            f"nests at most {MAX_METADATA_DEPTH} levels deep"
        )
    return _set_path(meta, parts, value, place)


def _set_path(meta: dict[str, Any], parts: list[str], value: Any, place: str) -> dict[str, Any]:
    head, rest = parts[0], parts[1:]
    out = dict(meta)
    if not rest:
        out[head] = value
        return out
    child = meta.get(head, {})
    if not isinstance(child, dict):
        raise EditError(
            f"{place}: '{head}' holds {child!r}, not a table; delete '{head}' first or "
            "choose another key"
        )
    out[head] = _set_path(child, rest, value, place)
    return out


def deleted_path(meta: dict[str, Any], parts: list[str], place: str) -> dict[str, Any]:
    """A copy of ``meta`` without the key at the path; tables it leaves empty go too."""
    head, rest = parts[0], parts[1:]
    if head not in meta or (rest and not isinstance(meta[head], dict)):
        known = ", ".join(repr(k) for k in meta) or "none"
        raise EditError(f"{place}: no key '{head}' (keys there: {known}); give an existing key")
    out = dict(meta)
    if not rest:
        del out[head]
        return out
    child = deleted_path(meta[head], rest, place)
    if child:
        out[head] = child
    else:
        del out[head]
    return out


def with_key(meta: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of ``meta`` with ``key`` set (kept in its place when it exists)."""
    out = dict(meta)
    out[key] = value
    return out


def without_key(meta: dict[str, Any], key: str) -> dict[str, Any]:
    """A copy of ``meta`` without ``key``."""
    return {k: v for k, v in meta.items() if k != key}


def parent_of(graph: Graph, node: Node) -> int | None:
    """Position of the node's parent group: its ``parent_id``, else a group listing it."""
    index = graph.index
    pid = node.metadata.get("parent_id")
    if isinstance(pid, str) and index.has_node(pid) and pid != node.id:
        return index.node_position(pid)
    for i, other in enumerate(graph.nodes):
        kids = other.metadata.get("children_ids")
        if isinstance(kids, list) and node.id in kids and other is not node:
            return i
    return None


def children_of(graph: Graph, group: Node) -> list[int]:
    """Positions of the group's children: those in ``children_ids``, then those naming it."""
    index = graph.index
    out: list[int] = []
    kids = group.metadata.get("children_ids")
    if isinstance(kids, list):
        out = [index.node_position(k) for k in kids if isinstance(k, str) and index.has_node(k)]
    seen = set(out)
    for i, node in enumerate(graph.nodes):
        if node.metadata.get("parent_id") == group.id and i not in seen and node is not group:
            out.append(i)
            seen.add(i)
    return out
